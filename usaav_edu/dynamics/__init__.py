"""Numerics of USA-AV: the right-hand side, the integrators and the energy.

* :mod:`.rhs` the Numba velocity field in gauge coordinates,
* :mod:`.fastexp` the vectorizable exponential it uses,
* :mod:`.integrate` the steppers (RK4, Dormand-Prince 5(4)) with retraction to the sphere,
* :mod:`.energy` the particle energy E_h and its upper bound,
* :mod:`.reference` a plain NumPy version of the same formulas, for tests,
* :mod:`.unrotated` the "values not rotated" variant of a gauge model (NumPy, content
  coordinates),
* :mod:`.fastsum` the same field and energy by a truncated expansion of ``phi'``
  (:mod:`.expansions`: Fourier modes, spherical harmonics, Taylor monomials), in time linear
  in n with a chosen error bound, and the cost model that ``simulate(summation="auto")``
  reads.

The velocity field of :mod:`.rhs`, in gauge coordinates ``y_i``::

    dy_i/dt = P_{y_i}( (1/N_i) sum_j b_ij phi'(<y_i, y_j>) y_j )

:mod:`.rhs` sums the ``n^2`` pairs (direct summation); :mod:`.fastsum` replaces
``phi'(<y_i, y_j>)`` by ``sum_a c_a f_a(y_i) f_a(y_j)``, a sum of ``p`` products, so that the
sums over ``j`` are moments formed once (fast summation).
"""

from .energy import energy_bound, energy_gauge
from .integrate.steppers import METHODS as METHODS
from .integrate.steppers import AdaptiveStepper, ButcherTableau, FixedStepper, Outcome
from .reference import energy_reference, rk4_reference, velocity_reference
from .rhs import pair_sums, velocity

__all__ = [
    "energy_bound", "energy_gauge", "ButcherTableau", "FixedStepper", "AdaptiveStepper", "Outcome",
    "energy_reference", "rk4_reference", "velocity_reference", "pair_sums", "velocity",
]
