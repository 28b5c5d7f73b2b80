"""The mean-field limit: the density of infinitely many tokens.

:func:`~usaav_edu.meanfield.solver.solve` integrates the density equation on the circle
(:mod:`.solver`) or, given ``grid=sphere_grid(lmax)``, on the sphere S^2 (:mod:`.sphere`,
transforms in :mod:`.harmonics`); :mod:`.exact` holds its closed forms on S^2, and
:mod:`.sphere_samples` draws tokens from a density on S^2 and measures how far a point cloud is
from one.
"""

from ..errors import UnresolvedError
from . import exact, harmonics, solver, sphere, sphere_samples
from .harmonics import SphereGrid, sphere_grid
from .solver import *  # noqa: F403  (the names listed in solver.__all__)
from .solver import (
                     DEFAULT_MAX_STEPS,
                     ENERGY_RTOL,
                     HOW,
                     INPUT_NEGATIVE_TOL,
                     M_MIN,
                     MASS_TOL,
                     METHODS,
                     METRICS,
                     NEGATIVE_TOL,
                     ON_FAILURE,
                     STABILITY,
                     TAIL_TOL,
)
from .sphere_samples import sample_sphere, sphere_distance

__all__ = ["solver", "UnresolvedError", "DEFAULT_MAX_STEPS", "ENERGY_RTOL", "HOW", "INPUT_NEGATIVE_TOL",
           "M_MIN", "MASS_TOL", "METHODS", "METRICS", "NEGATIVE_TOL", "ON_FAILURE", "STABILITY",
           "TAIL_TOL"]
__all__ += solver.__all__
__all__ += ["exact", "harmonics", "sphere", "sphere_samples", "SphereGrid", "sphere_grid", "sample_sphere",
            "sphere_distance"]
