"""Finitely many tokens: the solver, its result and the book's initial conditions.

* :mod:`.solver` :func:`~usaav_edu.simulate` (the particle system integrated in time) and the energy,
* :mod:`.trajectory` the :class:`~usaav_edu.Trajectory` it returns (frames, energy, provenance, files),
* :mod:`.experiments` the named set-ups of the chapters (``setup("rope_orbits")``).
"""

from . import experiments, solver, trajectory
from .solver import IntegrationError, energy, energy_bound, simulate
from .trajectory import Status, Trajectory

__all__ = ["IntegrationError", "Status", "Trajectory", "energy", "energy_bound", "experiments",
           "simulate", "solver", "trajectory"]
