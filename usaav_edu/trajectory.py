"""The result of a simulation: a small frozen record of arrays."""

import json
from dataclasses import dataclass, field

import numpy as np

from .models import Model


@dataclass(frozen=True, eq=False)
class Trajectory:
    """Frames of a run of USA-AV.

    Attributes
    ----------
    t : (F,) frame times, from 0 to t_max.
    x : (F, n, d) token contents x_i(t) on the sphere.
    xi : (n,) the frozen labels (positions or prompt ids).
    energy : (F,) the energy E_h at each frame.
    model : the Model that was simulated.
    method : "rk4" or "dopri5".
    dt : the RK4 step used (None for dopri5).
    rtol, atol : dopri5 tolerances (None for rk4).
    frozen : (n,) bool, tokens that attend but never move.
    seed : the seed recorded by the caller for the initial state (or None).
    n_rhs : number of right-hand-side evaluations.
    version : the usaav_edu version that produced it.
    """

    t: np.ndarray
    x: np.ndarray
    xi: np.ndarray
    energy: np.ndarray
    model: Model
    method: str
    dt: float = None
    rtol: float = None
    atol: float = None
    frozen: np.ndarray = field(default=None, repr=False)
    seed: object = None
    n_rhs: int = 0
    version: str = ""

    @property
    def n(self):
        """Number of tokens."""
        return self.x.shape[1]

    @property
    def d(self):
        """Ambient dimension (tokens live on S^{d-1})."""
        return self.x.shape[2]

    @property
    def y(self):
        """Gauge coordinates ``y_i = G(xi_i) x_i`` at every frame, (F, n, d)."""
        return self.model.to_gauge(self.x, self.xi)

    @property
    def final(self):
        """The last frame of x, (n, d)."""
        return self.x[-1]

    def metadata(self):
        """The provenance record stored with the arrays."""
        return {
            "model": self.model.params(), "method": self.method, "dt": self.dt,
            "rtol": self.rtol, "atol": self.atol, "seed": self.seed,
            "n_rhs": self.n_rhs, "version": self.version,
        }

    def save(self, path):
        """Write the arrays and the metadata (model parameters, seed, version) to an .npz file."""
        frozen = np.zeros(self.n, dtype=bool) if self.frozen is None else self.frozen
        np.savez(path, t=self.t, x=self.x, xi=self.xi, energy=self.energy, frozen=frozen,
                 metadata=np.array(json.dumps(self.metadata())))

    @classmethod
    def load(cls, path):
        """Read a Trajectory written by ``save``."""
        with np.load(path, allow_pickle=False) as f:
            meta = json.loads(str(f["metadata"]))
            frozen = f["frozen"]
            return cls(
                t=f["t"], x=f["x"], xi=f["xi"], energy=f["energy"],
                model=Model.from_params(meta["model"]), method=meta["method"], dt=meta["dt"],
                rtol=meta["rtol"], atol=meta["atol"], frozen=frozen if frozen.any() else None,
                seed=meta["seed"], n_rhs=meta["n_rhs"], version=meta["version"],
            )
