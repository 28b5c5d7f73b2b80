"""The step-size controller of an embedded Runge-Kutta pair: from the error norm to the next step.

A trial step ``h`` with the scaled error norm ``err`` (accepted when ``err <= 1``) is followed
by the step ::

    h_next = h min(max_factor, max(min_factor, safety err^(-1/(q+1)))),

``q`` the order of the embedded error estimate (the local error is ``O(h^{q+1})``, so this
factor aims at ``err = safety^(q+1)`` on the next step), then bounded by ``h_max``.  A trial
that is not finite shrinks the step by ``min_factor``; a rejection asking for less than
``max(h_min, 4 eps |t|)`` ends the integration (below ``4 eps |t|`` the time no longer advances).
This is the elementary (integral) controller of SciPy's ``RK45`` and of diffrax's
``PIDController`` with ``pcoeff = dcoeff = 0``.

References
----------
E. Hairer, S. P. Norsett, G. Wanner, *Solving Ordinary Differential Equations I*,
2nd ed., Springer (1993), section II.4 (step size control).
"""

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Controller", "EPS"]

EPS = np.finfo(np.float64).eps


@dataclass(frozen=True)
class Controller:
    """The step-size controller (module docstring).

    Parameters
    ----------
    error_order : int
        ``q``, the order of the embedded error estimate (4 for Dormand-Prince 5(4)).
    safety : float
        The safety factor, in ``(0, 1]``.
    min_factor, max_factor : float
        The least and largest factor by which one step may change the next,
        ``0 < min_factor <= 1 <= max_factor``.
    h_min : float
        The smallest meaningful step, >= 0: a rejection asking for less ends the integration.
    h_max : float or callable
        The largest step, or a function ``h_max()`` giving it after every accepted step (a
        bound that changes with the state, such as a stability limit).

    Raises
    ------
    ValueError
        If a parameter is outside its range.
    """

    error_order: int
    safety: float = 0.9
    min_factor: float = 0.2
    max_factor: float = 5.0
    h_min: float = 0.0
    h_max: object = math.inf

    def __post_init__(self):
        if isinstance(self.error_order, bool) or not isinstance(self.error_order, int) \
                or self.error_order < 1:
            raise ValueError(f"error_order must be an int >= 1, got {self.error_order!r}")
        if not 0.0 < self.safety <= 1.0:
            raise ValueError(f"safety must be in (0, 1], got {self.safety!r}")
        if not 0.0 < self.min_factor <= 1.0 <= self.max_factor:
            raise ValueError(f"min_factor and max_factor must satisfy 0 < min_factor <= 1 <= "
                             f"max_factor, got {self.min_factor!r} and {self.max_factor!r}")
        if not self.h_min >= 0.0:
            raise ValueError(f"h_min must be >= 0, got {self.h_min!r}")
        object.__setattr__(self, "exponent", -1.0 / (self.error_order + 1))

    @classmethod
    def for_tableau(cls, tableau, **settings):
        """The controller of an embedded pair, its exponent from ``tableau.error_order``.

        Parameters
        ----------
        tableau : ButcherTableau
            An embedded pair.
        **settings
            ``safety``, ``min_factor``, ``max_factor``, ``h_min``, ``h_max``.

        Raises
        ------
        ValueError
            If the tableau has no error estimate.
        """
        if tableau.error_order is None:
            raise ValueError(f"tableau {tableau.name} has no error estimate (error_order)")
        return cls(tableau.error_order, **settings)

    def factor(self, err):
        """``min(max_factor, max(min_factor, safety err^(-1/(q+1))))``; ``max_factor`` at 0."""
        if err == 0.0:
            return self.max_factor
        return min(self.max_factor, max(self.min_factor, self.safety * err ** self.exponent))

    def limit(self):
        """The current ``h_max``."""
        h_max = self.h_max
        return h_max() if callable(h_max) else h_max

    def accepted(self, h, h_step, err, last):
        """The step after an accepted trial of ``h_step`` (``h`` the step planned before it).

        A step cut short to land on the end time (``last``) does not shrink the planned step:
        it only grows it, ``max(h, h_step factor)`` when the factor exceeds 1.
        """
        fac = self.factor(err)
        if not last:
            h = h_step * fac
        elif fac > 1.0:
            h = max(h, h_step * fac)
        return min(h, self.limit())

    def rejected(self, h_step, err):
        """The step after a rejected trial of ``h_step`` (``err`` inf or NaN if not finite)."""
        if not np.isfinite(err):
            return h_step * self.min_factor
        return h_step * max(self.min_factor, self.safety * err ** self.exponent)

    def too_small(self, h, t):
        """True if ``h`` is below ``max(h_min, 4 eps |t|)``: the integration cannot go on."""
        return h < max(self.h_min, 4.0 * EPS * abs(t))
