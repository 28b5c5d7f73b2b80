"""Time stepping on the product of spheres (Numba).

Both integrators work on the gauge coordinates ``yt`` (a ``(d, n)`` array, one
column per token) and use the same retraction: after every accepted step each
column is divided by its norm, ``y_i <- y_i / |y_i|``.  The retraction keeps
``|y_i| = 1`` to rounding and does not lower the order of the method (the
update differs from the exact flow, which stays on the sphere, by O(h^{p+1})).

* ``rk4_advance``: classical Runge-Kutta 4 with a fixed step.
* ``dopri5_advance``: Dormand-Prince 5(4), the embedded pair of ``ode45`` and
  ``solve_ivp(method="RK45")``, with the error norm
  ``sqrt(mean((e / (atol + rtol max(|y|, |y_new|)))^2))`` and the step factor
  ``min(5, max(0.2, 0.9 err^(-1/5)))``.

Both return a :class:`Status`.  Dormand-Prince rejects a trial step whose
stages or result are not finite (as it rejects one whose error estimate is too
large) and retries with a fifth of the step; only a non-finite accepted state
is fatal.
"""

from enum import IntEnum

import numpy as np
from numba import njit

from .rhs import velocity as rhs_velocity

EPS = np.finfo(np.float64).eps


class Status(IntEnum):
    """How an integrator call ended; ``status.message`` says what it means."""

    OK = 0
    NONFINITE = 1
    UNDERFLOW = 2
    NONFINITE_TRIALS = 3
    MAX_STEPS = 4

    @property
    def message(self):
        return _MESSAGES[self]


_MESSAGES = {
    Status.OK: "the integration reached the end time",
    Status.NONFINITE: "an accepted state was not finite",
    Status.UNDERFLOW: ("the error estimate stayed above the tolerance while the step shrank below "
                       "the smallest meaningful step"),
    Status.NONFINITE_TRIALS: ("every trial step gave a non-finite state or velocity while the step "
                              "shrank below the smallest meaningful step"),
    Status.MAX_STEPS: "the step budget ran out before the end time",
}

# The integrator loops are plain Python around a few Numba calls per stage, so
# that any vector field (the Numba gauge field, or the NumPy field of the
# unrotated-values variant) plugs in; the per-stage overhead, a few
# microseconds, is small next to a pair sum (about 55 us at n = 256).


def velocity(yt, args, out):
    """``out = dy/dt`` at ``yt``; ``args = (bias, has_bias, beta, linear, sa, mobile, has_frozen)``.

    One call of the compiled :func:`usaav_edu.dynamics.rhs.velocity`.
    """
    rhs_velocity(yt, *args, out)
    return out


class GaugeField:
    """The velocity field of :func:`velocity` as a callable ``field(yt, out)``."""

    def __init__(self, args):
        self.args = args
        self.mobile, self.has_frozen = args[5], args[6]

    def __call__(self, yt, out):
        return velocity(yt, self.args, out)


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
def _combine(out, y, h, c, ks):
    """``out = y + h * sum_m c[m] ks[m]``."""
    d, n = y.shape
    for i in range(n):
        for k in range(d):
            acc = 0.0
            for m in range(c.shape[0]):
                acc += c[m] * ks[m, k, i]
            out[k, i] = y[k, i] + h * acc


def rk4_advance(yt, dt, n_steps, field, report=None):
    """Advance ``yt`` in place by ``n_steps`` RK4 steps of size ``dt``; return a :class:`Status`.

    ``field(yt, out)`` writes the velocity; ``field.mobile`` and
    ``field.has_frozen`` say which tokens move (see :class:`GaugeField`).
    ``report``, if given, is called as ``report(k)`` after the k-th step
    (it should return quickly: it runs once per step).
    """
    mobile, has_frozen = field.mobile, field.has_frozen
    ks = np.empty((4,) + yt.shape)
    tmp = np.empty_like(yt)
    half = np.array([0.5])
    one = np.array([1.0])
    weights = np.array([1.0, 2.0, 2.0, 1.0]) / 6.0
    for k in range(n_steps):
        field(yt, ks[0])
        _combine(tmp, yt, dt, half, ks[0:1])
        field(tmp, ks[1])
        _combine(tmp, yt, dt, half, ks[1:2])
        field(tmp, ks[2])
        _combine(tmp, yt, dt, one, ks[2:3])
        field(tmp, ks[3])
        _combine(yt, yt, dt, weights, ks)
        if not _retract(yt, mobile, has_frozen):
            return Status.NONFINITE
        if report is not None:
            report(k + 1)
    return Status.OK


# Dormand-Prince 5(4) tableau.
A21 = 1.0 / 5.0
A31, A32 = 3.0 / 40.0, 9.0 / 40.0
A41, A42, A43 = 44.0 / 45.0, -56.0 / 15.0, 32.0 / 9.0
A51, A52, A53, A54 = 19372.0 / 6561.0, -25360.0 / 2187.0, 64448.0 / 6561.0, -212.0 / 729.0
A61, A62, A63, A64, A65 = 9017.0 / 3168.0, -355.0 / 33.0, 46732.0 / 5247.0, 49.0 / 176.0, -5103.0 / 18656.0
B1, B3, B4, B5, B6 = 35.0 / 384.0, 500.0 / 1113.0, 125.0 / 192.0, -2187.0 / 6784.0, 11.0 / 84.0
# Error coefficients: 5th-order weights minus 4th-order weights (the 7th stage
# is f at the 5th-order solution, evaluated explicitly here).
E1, E3, E4, E5, E6, E7 = (71.0 / 57600.0, -71.0 / 16695.0, 71.0 / 1920.0,
                          -17253.0 / 339200.0, 22.0 / 525.0, -1.0 / 40.0)


_A = [np.array(r) for r in ([A21], [A31, A32], [A41, A42, A43], [A51, A52, A53, A54],
                             [A61, A62, A63, A64, A65], [B1, 0.0, B3, B4, B5, B6])]
_E = np.array([E1, 0.0, E3, E4, E5, E6, E7])


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


def dopri5_advance(yt, t, t_end, h, rtol, atol, h_min, field, max_steps=None, report=None):
    """Advance ``yt`` in place from ``t`` to exactly ``t_end`` with adaptive steps.

    Returns ``(status, h_next, n_accepted, n_rejected, t_reached)``; ``h`` is
    the first step to try.  A trial step is rejected when its scaled error
    exceeds 1 or when a stage, the result or the velocity there is not
    finite (then the step is divided by 5).  The run stops with
    ``Status.UNDERFLOW`` (error too large) or ``Status.NONFINITE_TRIALS``
    (non-finite trials) when a rejection asks for a step below
    ``max(h_min, 4 eps |t|)``: below ``4 eps |t|`` the time no longer
    advances, and ``h_min`` is the caller's smallest meaningful step.  It
    stops with ``Status.MAX_STEPS`` after ``max_steps`` trial steps (None: no
    limit).  ``report(t)``, if given, is called after every accepted step.
    ``field`` is as in :func:`rk4_advance`.
    """
    mobile, has_frozen = field.mobile, field.has_frozen
    ks = np.empty((7,) + yt.shape)
    tmp = np.empty_like(yt)
    ynew = np.empty_like(yt)
    n_acc = n_rej = 0
    while t < t_end:
        if max_steps is not None and n_acc + n_rej >= max_steps:
            return Status.MAX_STEPS, h, n_acc, n_rej, t
        last = t + h >= t_end
        h_step = t_end - t if last else h
        field(yt, ks[0])
        for s in range(5):
            _combine(tmp, yt, h_step, _A[s], ks[: s + 1])
            field(tmp, ks[s + 1])
        _combine(ynew, yt, h_step, _A[5], ks[:6])
        field(ynew, ks[6])
        finite = _all_finite(ks) and _all_finite(ynew)
        err = _error_norm(yt, ynew, h_step, _E, ks, rtol, atol) if finite else np.inf
        if err <= 1.0:
            yt[:] = ynew
            if not _retract(yt, mobile, has_frozen):
                return Status.NONFINITE, h, n_acc, n_rej, t
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
                status = Status.UNDERFLOW if finite else Status.NONFINITE_TRIALS
                return status, h, n_acc, n_rej, t
    return Status.OK, h, n_acc, n_rej, t
