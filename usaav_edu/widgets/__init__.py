"""Views of token dynamics on the sphere.

* ``SphereView``: pythreejs scene of one frame (translucent sphere, reference circles, tokens
  coloured by their auxiliary variable, legend, optional trails and overlays, orbit controls).
* ``TrajectoryPlayer``: plays a ``Trajectory`` client-side (keyframe animation), so it also
  moves in the static book.
* ``DensityView``: many tokens (up to 100,000 and more): a point cloud with a kernel, a density
  on the sphere per frame that plays client-side in the static book; it also plays a density
  run of the solver on the sphere (:func:`usaav_edu.meanfield.solver.solve`), from its coefficients.
* ``LiveView``: the particle system re-simulated in the reader's browser (sliders, play, a new
  seed), in the static book with no kernel.
* ``Predict``: a "predict first" question whose reveal works in the static book.
* ``ExperimentDashboard``: sliders and menus that re-simulate a standard experiment and redraw.
* ``plot_sphere``, ``plot_energy``: matplotlib fallbacks for print.
* ``plot_density_image``, ``plot_density_curves``, ``plot_conditionals``: densities on the
  circle (:mod:`usaav_edu.meanfield`) in matplotlib.
* ``sphere_density_map``, ``sphere_density_at``: a density run on the sphere in matplotlib
  (small multiples for print) and its values at any points; ``DensityView`` plays such a run.

Views draw trajectories; they never integrate anything themselves.  They need the widgets
extra: ``pip install "usaav-edu[widgets]"``.
"""
from .._validate import require_extra

try:
    from .colors import PROMPT_PALETTE, legend_entries, project_3d, token_colors
    from .dashboard import ExperimentDashboard
    from .density import DensityView, density_frames_for_budget
    from .density_plots import (
        plot_conditionals,
        plot_density_curves,
        plot_density_image,
        sphere_density_at,
        sphere_density_map,
    )
    from .explorer import Explorer
    from .live import LiveView
    from .mpl import plot_energy, plot_sphere
    from .player import TrajectoryPlayer, frames_for_budget
    from .predict import Predict
    from .scene import SphereView, subsample
    from .state import embedded_state_bytes
    from .twin import TwinView
except ModuleNotFoundError:  # a clear message if it is the widgets extra that is missing
    require_extra("widgets", "ipywidgets", "traitlets", "pythreejs", "matplotlib",
                  what="usaav_edu.widgets")
    raise

__all__ = [
    "SphereView", "TrajectoryPlayer", "ExperimentDashboard", "Explorer", "plot_sphere", "plot_energy", "token_colors",
    "legend_entries", "project_3d", "subsample", "frames_for_budget", "embedded_state_bytes",
    "PROMPT_PALETTE", "TwinView", "DensityView", "density_frames_for_budget",
    "plot_density_image", "plot_density_curves", "plot_conditionals", "Predict",
    "sphere_density_map", "sphere_density_at", "LiveView",
]
