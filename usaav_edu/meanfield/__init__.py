"""The mean-field limit: the density of infinitely many tokens (:mod:`.solver`, on the circle)."""

from ..errors import UnresolvedError
from . import solver
from .solver import *  # noqa: F403  (the names listed in solver.__all__)
from .solver import __all__
