"""The mean-field limit: the density of infinitely many tokens (:mod:`.solver`, on the circle)."""

from ..errors import UnresolvedError
from . import solver
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
__all__ += ["sample_sphere", "sphere_distance"]
