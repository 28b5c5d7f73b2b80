"""usaav_edu: mean-field self-attention on the sphere, collapse, and auxiliary variables.

The data path is model -> simulate -> Trajectory -> diagnostics / maximizers -> views::

    import usaav_edu as ue
    m = ue.models.rope(beta=1.0, omegas=(1.0,), d=3)
    x0 = ue.sphere.uniform(64, 3, seed=0)
    traj = ue.simulate(m, x0, xi, t_max=20.0)
"""

__version__ = "0.1.0"

from . import diagnostics, dynamics, experiments, laws, maximizers, models, reductions, spectral, sphere
from .models import Model
from .solver import IntegrationError, energy, energy_bound, simulate
from .trajectory import Trajectory



def __getattr__(name):
    # the widgets need pythreejs and ipywidgets: import them on first use only
    if name == "widgets":
        import importlib

        return importlib.import_module(".widgets", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "diagnostics", "dynamics", "experiments", "laws", "maximizers", "models", "reductions", "spectral", "sphere",
    "Model",
    "IntegrationError", "energy", "energy_bound", "simulate", "Trajectory", "__version__",
]
