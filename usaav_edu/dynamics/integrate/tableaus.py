"""Explicit Runge-Kutta methods as Butcher tableaus: the classical RK4 and Dormand-Prince 5(4).

A method with ``S`` stages advances ``y' = f(y)`` by one step ``h`` as ::

    k_s = f(y + h sum_{m<s} a_sm k_m),   s = 1 .. S,
    y_new = y + h sum_s b_s k_s;

an embedded pair also gives the error estimate ``h sum_m e_m k_m`` (with ``k_{S+1} = f(y_new)``),
the difference between the solution and a solution of lower order ``q``.

References
----------
J. R. Dormand and P. J. Prince, "A family of embedded Runge-Kutta formulae",
J. Comput. Appl. Math. 6 (1980) 19-26.
E. Hairer, S. P. Norsett, G. Wanner, *Solving Ordinary Differential Equations I*,
2nd ed., Springer (1993), sections II.1 and II.4.
"""

from dataclasses import dataclass

import numpy as np

__all__ = ["ButcherTableau", "RK4", "DOPRI5"]


@dataclass(frozen=True, eq=False)
class ButcherTableau:
    """An explicit Runge-Kutta method ``(A, b, c)`` and, for an embedded pair, its error weights.

    Parameters
    ----------
    name : str
        A short name.
    a : tuple of tuple of float
        The strictly lower triangular rows of ``A``: row ``s`` (``s = 1 .. S-1``) has ``s``
        entries, the weights of the earlier stages in stage ``s``.
    b : tuple of float
        The weights of the solution, one per stage.
    c : tuple of float
        The nodes, one per stage.
    order : int
        The order of the solution.
    e : tuple of float or None
        For an embedded pair: the weights of the error estimate (solution weights minus those
        of the embedded solution), one per stage plus one for the velocity at the new state
        (the "first same as last" stage).  None for a fixed-step method.
    error_order : int or None
        For an embedded pair: the order ``q`` of the embedded solution, so that the error
        estimate is ``O(h^{q+1})`` and a step-size controller scales the step by
        ``err^{-1/(q+1)}`` (:class:`~usaav_edu.dynamics.integrate.controller.Controller`).
        None for a fixed-step method.

    Raises
    ------
    ValueError
        If the rows, weights and nodes do not fit together (shapes, ``c_s = sum_m a_sm``,
        ``sum b = 1``).
    """

    name: str
    a: tuple
    b: tuple
    c: tuple
    order: int
    e: tuple | None = None
    error_order: int | None = None

    def __post_init__(self):
        stages = len(self.b)
        if len(self.c) != stages or len(self.a) != stages - 1:
            raise ValueError(f"tableau {self.name}: b, c and the rows of A must describe "
                             f"{stages} stages")
        for s, row in enumerate(self.a, start=1):
            if len(row) != s:
                raise ValueError(f"tableau {self.name}: row {s} of A must have {s} entries")
            if abs(sum(row) - self.c[s]) > 1e-14:
                raise ValueError(f"tableau {self.name}: c[{s}] must equal the sum of row {s} of A")
        if abs(sum(self.b) - 1.0) > 1e-14:
            raise ValueError(f"tableau {self.name}: the weights b must sum to 1")
        if self.e is not None and len(self.e) != stages + 1:
            raise ValueError(f"tableau {self.name}: e must have {stages + 1} entries")
        if (self.e is None) != (self.error_order is None):
            raise ValueError(f"tableau {self.name}: e and error_order go together (an embedded "
                             f"pair has both, a fixed-step method neither)")
        if self.error_order is not None and not 1 <= self.error_order < self.order:
            raise ValueError(f"tableau {self.name}: error_order must be in [1, order), got "
                             f"{self.error_order}")
        object.__setattr__(self, "rows", tuple(np.array(r, dtype=np.float64) for r in self.a))
        object.__setattr__(self, "weights", np.array(self.b, dtype=np.float64))
        if self.e is not None:
            object.__setattr__(self, "errors", np.array(self.e, dtype=np.float64))

    @property
    def stages(self):
        """The number of stages (velocity evaluations of a step, without the last one)."""
        return len(self.b)


RK4 = ButcherTableau(
    "rk4",
    a=((0.5,), (0.0, 0.5), (0.0, 0.0, 1.0)),
    b=(1.0 / 6.0, 2.0 / 6.0, 2.0 / 6.0, 1.0 / 6.0),
    c=(0.0, 0.5, 0.5, 1.0),
    order=4,
)
"""The classical Runge-Kutta method of order 4."""

DOPRI5 = ButcherTableau(
    "dopri5",
    a=((1.0 / 5.0,),
       (3.0 / 40.0, 9.0 / 40.0),
       (44.0 / 45.0, -56.0 / 15.0, 32.0 / 9.0),
       (19372.0 / 6561.0, -25360.0 / 2187.0, 64448.0 / 6561.0, -212.0 / 729.0),
       (9017.0 / 3168.0, -355.0 / 33.0, 46732.0 / 5247.0, 49.0 / 176.0, -5103.0 / 18656.0)),
    b=(35.0 / 384.0, 0.0, 500.0 / 1113.0, 125.0 / 192.0, -2187.0 / 6784.0, 11.0 / 84.0),
    c=(0.0, 1.0 / 5.0, 3.0 / 10.0, 4.0 / 5.0, 8.0 / 9.0, 1.0),
    order=5,
    e=(71.0 / 57600.0, 0.0, -71.0 / 16695.0, 71.0 / 1920.0, -17253.0 / 339200.0, 22.0 / 525.0,
       -1.0 / 40.0),
    error_order=4,
)
"""Dormand-Prince 5(4); the error weights are those of order 5 minus those of order 4."""
