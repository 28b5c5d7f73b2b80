"""Time stepping on the product of spheres (Numba): one stepper contract.

Every stepper works on the gauge coordinates ``yt`` (a ``(d, n)`` array, one
column per token) and uses the same retraction: after every accepted step each
column is divided by its norm, ``y_i <- y_i / |y_i|``.  The retraction keeps
``|y_i| = 1`` to rounding and does not lower the order of the method (the
update differs from the exact flow, which stays on the sphere, by O(h^{p+1})).

An explicit Runge-Kutta method is a :class:`ButcherTableau`; a stepper is
registered by name in :data:`METHODS` and has one method,
``advance(yt, t, t_end, h, field, control) -> Advance``:

* ``"rk4"`` (:class:`FixedStepper` with :data:`RK4`): classical Runge-Kutta 4
  with the fixed step ``h``.
* ``"dopri5"`` (:class:`AdaptiveStepper` with :data:`DOPRI5`): Dormand-Prince
  5(4), the embedded pair of ``ode45`` and ``solve_ivp(method="RK45")``, with
  the error norm ``sqrt(mean((e / (atol + rtol max(|y|, |y_new|)))^2))`` and the
  step factor ``min(5, max(0.2, 0.9 err^(-1/5)))``.  A trial step whose stages
  or result are not finite is rejected (as one whose error estimate is too
  large) and retried with a fifth of the step; only a non-finite accepted
  state is fatal.

Each call ends with an :class:`Outcome`, whose ``message`` says what it means.

References
----------
J. R. Dormand and P. J. Prince, "A family of embedded Runge-Kutta formulae",
J. Comput. Appl. Math. 6 (1980) 19-26.
E. Hairer, S. P. Norsett, G. Wanner, *Solving Ordinary Differential Equations I*,
2nd ed., Springer (1993), section II.4 (step size control).
"""

from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

import numpy as np
from numba import njit

from ..rhs import KernelParams
from ..rhs import velocity as rhs_velocity

EPS = np.finfo(np.float64).eps


class Outcome(Enum):
    """How a stepper call ended; ``outcome.message`` says what it means."""

    OK = "the integration reached the end time"
    NONFINITE = "an accepted state was not finite"
    UNDERFLOW = ("the error estimate stayed above the tolerance while the step shrank below "
                 "the smallest meaningful step")
    NONFINITE_TRIALS = ("every trial step gave a non-finite state or velocity while the step "
                        "shrank below the smallest meaningful step")
    MAX_STEPS = "the step budget ran out before the end time"

    @property
    def message(self):
        """The meaning of the outcome, one sentence."""
        return self.value


class Advance(NamedTuple):
    """The result of one ``advance`` call.

    Attributes
    ----------
    outcome : Outcome
        How the call ended.
    h : float
        The step to try next (the fixed step for a fixed-step method).
    accepted, rejected : int
        Steps accepted and rejected in this call.
    n_rhs : int
        Right-hand-side evaluations in this call.
    t : float
        The time reached (``t_end`` when ``outcome`` is ``Outcome.OK``).
    speed_integral : float
        ``int sum_i |v_i|^2 dt`` over the accepted steps, by the method's own quadrature on
        its stages: ``sum_steps h sum_s b_s |k_s|^2`` (``|k_s|^2`` summed over every token and
        coordinate).  This is the method applied to ``dq/dt = sum_i |v_i|^2`` alongside the
        state, so it is as accurate as the state; for a gradient ascent of ``E`` with
        ``v_i = n grad_i E`` it gives ``E(t_end) - E(t)`` times ``n`` (the energy identity that
        :func:`usaav_edu.simulate` checks).
    """

    outcome: Outcome
    h: float
    accepted: int
    rejected: int
    n_rhs: int
    t: float
    speed_integral: float = 0.0


class Control(NamedTuple):
    """What an adaptive stepper needs besides the state (ignored by fixed-step methods).

    Attributes
    ----------
    rtol, atol : float
        Relative and absolute tolerances of the local error.
    h_min : float
        The smallest meaningful step; a rejection asking for less ends the call.
    max_steps : int or None
        The most trial steps this call may take (None: no limit).
    report : callable or None
        Called as ``report(t)`` after every accepted step (it should return quickly).
    """

    rtol: float = 1e-8
    atol: float = 1e-10
    h_min: float = 0.0
    max_steps: int = None
    report: object = None


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
    e: tuple = None

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
)
"""Dormand-Prince 5(4); the error weights are those of order 5 minus those of order 4."""


class GaugeField:
    """The velocity field of the kernel as a callable ``field(yt, out)``.

    Parameters
    ----------
    params : KernelParams
        The kernel's parameters (:class:`usaav_edu.dynamics.rhs.KernelParams`).

    Raises
    ------
    TypeError
        If ``params`` is not a KernelParams.
    """

    def __init__(self, params):
        if not isinstance(params, KernelParams):
            raise TypeError(f"params must be a KernelParams, got {type(params).__name__}")
        self.params = params
        self.mobile, self.has_frozen = params.mobile, params.has_frozen
        self._entry = None

    def __call__(self, yt, out):
        # The first call dispatches (compiling or loading the specialization) and keeps its
        # compiled entry point: typing a NamedTuple argument costs about a microsecond per call,
        # which the steppers' many calls on C-contiguous float64 arrays need not pay again.
        entry = self._entry
        if (entry is not None and yt.ndim == out.ndim == 2 and yt.dtype == out.dtype == np.float64
                and yt.flags.c_contiguous and out.flags.c_contiguous and out.flags.writeable):
            entry(yt, self.params, out)
            return out
        rhs_velocity(yt, self.params, out)
        if entry is None:
            self._entry = _entry_point(rhs_velocity, yt, self.params, out)
        return out


def _entry_point(dispatcher, *args):
    """The compiled entry point of ``dispatcher`` for C-contiguous ``args``, or None (then the
    caller keeps dispatching)."""
    try:
        sig = tuple(dispatcher.typeof_pyval(a) for a in args)
        cres = dispatcher.overloads.get(sig)
        return None if cres is None else cres.entry_point
    except AttributeError:  # a Numba without these attributes
        return None


def velocity(yt, params, out):
    """``out = dy/dt`` at ``yt``: one call of the compiled :func:`usaav_edu.dynamics.rhs.velocity`.

    For every token ``i``, with ``P_y v = v - <y, v> y``::

        dy_i/dt = P_{y_i}( (1/N_i) sum_j w_ij y_j ),   dy_i/dt = 0 if frozen
        w_ij = b_ij phi'(<y_i, y_j>),   N_i = n (USA)  or  sum_j w_ij (SA)

    Parameters
    ----------
    yt : ndarray
        ``(d, n)`` gauge coordinates.
    params : KernelParams
        The kernel's parameters.
    out : ndarray
        ``(d, n)``, overwritten.

    Returns
    -------
    ndarray
        ``out``.

    References
    ----------
    Definition 1.1 (ch1-def-sa-usa) and Definition 7.1 (ch7-def-bias) of the book; Theorem 4.1
    (ch4-thm-conjugacy): the model in gauge coordinates.
    """
    rhs_velocity(yt, params, out)
    return out


@njit(cache=True)
def _retract(yt, mobile, has_frozen):
    """``y_i <- y_i / |y_i|`` for every mobile token; False if the state is not finite."""
    d, n = yt.shape
    finite = True
    for i in range(n):
        if has_frozen and not mobile[i]:
            continue
        s = 0.0
        for k in range(d):
            s += yt[k, i] * yt[k, i]
        if not np.isfinite(s) or s == 0.0:
            finite = False
            continue
        r = 1.0 / np.sqrt(s)
        for k in range(d):
            yt[k, i] *= r
    return finite


@njit(cache=True)
def _all_finite(a):
    """True if every entry of the contiguous array ``a`` is finite."""
    for v in a.ravel():
        if not np.isfinite(v):
            return False
    return True


@njit(cache=True)
def _weighted_squares(ks, w):
    """``sum_s w[s] sum_{k, i} ks[s, k, i]^2`` over the first ``len(w)`` stages."""
    total = 0.0
    for s in range(w.shape[0]):
        acc = 0.0
        for v in ks[s].ravel():
            acc += v * v
        total += w[s] * acc
    return total


@njit(cache=True)
def _combine(out, y, h, c, ks):
    """``out = y + h * sum_m c[m] ks[m]``."""
    d, n = y.shape
    for i in range(n):
        for k in range(d):
            acc = 0.0
            for m in range(c.shape[0]):
                acc += c[m] * ks[m, k, i]
            out[k, i] = y[k, i] + h * acc


@njit(cache=True)
def _error_norm(yt, ynew, h, e, ks, rtol, atol):
    """``sqrt(mean((h sum_m e_m k_m / (atol + rtol max(|y|, |y_new|)))^2))``."""
    d, n = yt.shape
    err = 0.0
    for i in range(n):
        for k in range(d):
            acc = 0.0
            for m in range(e.shape[0]):
                acc += e[m] * ks[m, k, i]
            sc = atol + rtol * max(abs(yt[k, i]), abs(ynew[k, i]))
            err += (h * acc / sc) ** 2
    return np.sqrt(err / (d * n))


def _stages(tableau, yt, h, field, ks, tmp):
    """The stage velocities ``ks[0 .. S-1]`` of one step of size ``h`` from ``yt``."""
    field(yt, ks[0])
    for s, row in enumerate(tableau.rows, start=1):
        _combine(tmp, yt, h, row, ks[:s])
        field(tmp, ks[s])


class FixedStepper:
    """An explicit Runge-Kutta method with a fixed step, then the retraction.

    Parameters
    ----------
    tableau : ButcherTableau
        The method.
    """

    adaptive = False

    def __init__(self, tableau):
        self.tableau = tableau
        self.name = tableau.name

    def advance(self, yt, t, t_end, h, field, control=Control()):
        """Advance ``yt`` in place from ``t`` to ``t_end`` in equal steps of about ``h``.

        One step of the tableau ``(A, b, c)`` with ``S`` stages, then the retraction::

            k_s = f(y + h sum_{m<s} a_sm k_m),     s = 1 .. S
            y  <- y + h sum_s b_s k_s
            y_i <- y_i / |y_i|                  (every mobile token i)

        Parameters
        ----------
        yt : ndarray
            ``(d, n)`` state, changed in place.
        t, t_end : float
            Start and end times.
        h : float
            The step; ``round((t_end - t) / h)`` steps (at least one) are taken, each of
            exactly ``h``.
        field : callable
            ``field(yt, out)`` writes the velocity; ``field.mobile`` and ``field.has_frozen``
            say which tokens move (see :class:`GaugeField`).
        control : Control
            Only ``control.report`` is read: called as ``report(t)`` after every step.

        Returns
        -------
        Advance
            ``Outcome.NONFINITE`` if a step reached a non-finite state.

        References
        ----------
        E. Hairer, S. P. Norsett, G. Wanner, *Solving Ordinary Differential Equations I*,
        2nd ed., Springer (1993), section II.1 (the classical method of order 4).
        P.-A. Absil, R. Mahony, R. Sepulchre, *Optimization Algorithms on Matrix Manifolds*,
        Princeton University Press (2008), section 4.1 (retractions).
        """
        n_steps = max(1, int(round((t_end - t) / h)))
        tab = self.tableau
        ks = np.empty((tab.stages,) + yt.shape)
        tmp = np.empty_like(yt)
        report = control.report
        speed = 0.0
        for k in range(n_steps):
            _stages(tab, yt, h, field, ks, tmp)
            _combine(yt, yt, h, tab.weights, ks)
            if not _retract(yt, field.mobile, field.has_frozen):
                return Advance(Outcome.NONFINITE, h, k, 0, (k + 1) * tab.stages, t + k * h, speed)
            speed += h * _weighted_squares(ks, tab.weights)
            if report is not None:
                report(t + (k + 1) * h)
        return Advance(Outcome.OK, h, n_steps, 0, n_steps * tab.stages, t_end, speed)


class AdaptiveStepper:
    """An embedded Runge-Kutta pair with error control, then the retraction.

    Parameters
    ----------
    tableau : ButcherTableau
        The pair (its ``e`` weights give the error estimate).

    Raises
    ------
    ValueError
        If the tableau has no error weights.
    """

    adaptive = True

    def __init__(self, tableau):
        if tableau.e is None:
            raise ValueError(f"tableau {tableau.name} has no error weights e")
        self.tableau = tableau
        self.name = tableau.name

    def advance(self, yt, t, t_end, h, field, control=Control()):
        """Advance ``yt`` in place from ``t`` to exactly ``t_end`` with adaptive steps.

        A trial step as in :meth:`FixedStepper.advance` (before the retraction), with one more
        stage ``k_{S+1} = f(y_new)`` for the error estimate; it is accepted when ``err <= 1``::

            sc  = atol + rtol max(|y|, |y_new|)        (entrywise)
            err = sqrt(mean((h sum_m e_m k_m / sc)^2))
            h  <- h min(5, max(0.2, 0.9 err^(-1/5)))

        (a fifth of ``h`` after a non-finite trial), then ``y_i <- y_i / |y_i|``.

        Parameters
        ----------
        yt : ndarray
            ``(d, n)`` state, changed in place.
        t, t_end : float
            Start and end times.
        h : float
            The first step to try.
        field : callable
            As for :meth:`FixedStepper.advance`.
        control : Control
            Tolerances, smallest step, step budget and progress callback.

        Returns
        -------
        Advance
            A trial step is rejected when its scaled error exceeds 1 or when a stage, the
            result or the velocity there is not finite (then the step is divided by 5).  The
            call ends with ``Outcome.UNDERFLOW`` (error too large) or
            ``Outcome.NONFINITE_TRIALS`` (non-finite trials) when a rejection asks for a step
            below ``max(h_min, 4 eps |t|)``: below ``4 eps |t|`` the time no longer advances.
            It ends with ``Outcome.MAX_STEPS`` after ``max_steps`` trial steps.

        References
        ----------
        J. R. Dormand and P. J. Prince, "A family of embedded Runge-Kutta formulae",
        J. Comput. Appl. Math. 6 (1980) 19-26.
        E. Hairer, S. P. Norsett, G. Wanner, *Solving Ordinary Differential Equations I*,
        2nd ed., Springer (1993), section II.4 (step size control).
        P.-A. Absil, R. Mahony, R. Sepulchre, *Optimization Algorithms on Matrix Manifolds*,
        Princeton University Press (2008), section 4.1 (retractions).
        """
        tab = self.tableau
        rtol, atol, h_min, max_steps, report = control
        per_step = tab.stages + 1
        ks = np.empty((per_step,) + yt.shape)
        tmp = np.empty_like(yt)
        ynew = np.empty_like(yt)
        n_acc = n_rej = 0
        speed = 0.0

        def result(outcome):
            return Advance(outcome, h, n_acc, n_rej, per_step * (n_acc + n_rej), t, speed)

        while t < t_end:
            if max_steps is not None and n_acc + n_rej >= max_steps:
                return result(Outcome.MAX_STEPS)
            last = t + h >= t_end
            h_step = t_end - t if last else h
            _stages(tab, yt, h_step, field, ks, tmp)
            _combine(ynew, yt, h_step, tab.weights, ks[:tab.stages])
            field(ynew, ks[tab.stages])
            finite = _all_finite(ks) and _all_finite(ynew)
            err = _error_norm(yt, ynew, h_step, tab.errors, ks, rtol, atol) if finite else np.inf
            if err <= 1.0:
                yt[:] = ynew
                if not _retract(yt, field.mobile, field.has_frozen):
                    return result(Outcome.NONFINITE)
                speed += h_step * _weighted_squares(ks, tab.weights)
                t = t_end if last else t + h_step
                n_acc += 1
                fac = 5.0 if err == 0.0 else min(5.0, max(0.2, 0.9 * err ** -0.2))
                if not last:
                    h = h_step * fac
                elif fac > 1.0:
                    h = max(h, h_step * fac)
                if report is not None:
                    report(t)
            else:
                n_rej += 1
                # a non-finite trial or an overflowing error estimate: shrink hard
                h = h_step * (0.2 if not np.isfinite(err) else max(0.2, 0.9 * err ** -0.2))
                if h < max(h_min, 4.0 * EPS * abs(t)):
                    return result(Outcome.UNDERFLOW if finite else Outcome.NONFINITE_TRIALS)
        return result(Outcome.OK)


METHODS = {"rk4": FixedStepper(RK4), "dopri5": AdaptiveStepper(DOPRI5)}
"""The steppers by name, as ``simulate(method=...)`` takes them."""
