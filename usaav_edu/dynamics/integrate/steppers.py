"""Time stepping (Numba kernels on the state): one stepper contract for particles and densities.

A stepper is registered by name in :data:`METHODS` and has one method,
``advance(y, t, t_end, h, field, control, controller=None, work=None) -> Advance``:

* ``"rk4"`` (:class:`FixedStepper` with :data:`~.tableaus.RK4`): classical Runge-Kutta 4
  with the fixed step ``h``.
* ``"dopri5"`` (:class:`AdaptiveStepper` with :data:`~.tableaus.DOPRI5`): Dormand-Prince
  5(4), the embedded pair of ``ode45`` and ``solve_ivp(method="RK45")``, with the error norm
  ``sqrt(mean((e / (atol + rtol max(|y|, |y_new|)))^2))`` and the step chosen by the
  :class:`~.controller.Controller` (exponent ``-1/5``).  A trial step whose stages or result are
  not finite is rejected (as one whose error estimate is too large) and retried with a fifth
  of the step; only a non-finite accepted state is fatal.
* ``"heun"`` (:class:`StochasticHeun`): the stochastic Heun method for the Stratonovich
  equation ``dy_i = v_i dt + sigma P_{y_i} o dW_i`` with a fixed step, then the retraction;
  without noise (``control.noise`` None or ``sigma = 0``) the explicit trapezoidal rule
  (Heun's method, order 2).

**The field and its state.**  The state ``y`` is a 2-d array (real or complex) and the field a
callable ``field(y, out)`` writing ``dy/dt`` into ``out``.  After every accepted step the
stepper applies the field's **retraction** ``field.retract(y) -> bool`` (in place; False if
the state is not finite), and it measures a trial step with ``field.error_norm(y, y_new, h, e,
ks, rtol, atol) -> (err, finite)``, the scaled norm of the error estimate ``h sum_m e_m k_m``.
A field without these methods is a set of tokens on spheres: ``y`` is ``(d, n)``, one column
per token, and the defaults are

* the retraction ``y_i <- y_i / |y_i|`` for every mobile token (``field.mobile``,
  ``field.has_frozen``), which keeps ``|y_i| = 1`` to rounding and does not lower the order of
  the method (the update differs from the exact flow, which stays on the sphere, by
  ``O(h^{p+1})``);
* the error norm on the entries of ``y`` (above).

A field whose retraction is the identity (a density's Fourier coefficients) says so with
``field.reuse_last_stage = True``: the velocity at an accepted state is then the last stage
of its step ("first same as last") and is not evaluated again.  ``field.stage_speed = None``
turns off the speed integral of :class:`Advance` (defined for real states).

Each call ends with an :class:`Outcome`, whose ``message`` says what it means; the frame loop
of :mod:`.loop` calls ``advance`` from frame time to frame time.

References
----------
J. R. Dormand and P. J. Prince, "A family of embedded Runge-Kutta formulae",
J. Comput. Appl. Math. 6 (1980) 19-26.
E. Hairer, S. P. Norsett, G. Wanner, *Solving Ordinary Differential Equations I*,
2nd ed., Springer (1993), section II.4 (step size control).
P.-A. Absil, R. Mahony, R. Sepulchre, *Optimization Algorithms on Matrix Manifolds*,
Princeton University Press (2008), section 4.1 (retractions).
"""

from enum import Enum
from typing import NamedTuple

import numpy as np
from numba import njit

from ..rhs import KernelParams
from ..rhs import velocity as rhs_velocity
from .controller import EPS, Controller  # noqa: F401  (EPS re-exported)
from .tableaus import DOPRI5, RK4, ButcherTableau

# ButcherTableau, RK4, DOPRI5 (.tableaus), Controller and EPS (.controller) stay importable here
__all__ = ["Outcome", "Advance", "Control", "Workspace", "GaugeField", "velocity", "FixedStepper",
           "AdaptiveStepper", "BrownianIncrements", "StochasticHeun", "HEUN", "METHODS"]


class Outcome(Enum):
    """How a stepper call ended; ``outcome.message`` says what it means."""

    OK = "the integration reached the end time"
    NONFINITE = "an accepted state was not finite"
    UNDERFLOW = ("the error estimate stayed above the tolerance while the step shrank below "
                 "the smallest meaningful step")
    NONFINITE_TRIALS = ("every trial step gave a non-finite state or velocity while the step "
                        "shrank below the smallest meaningful step")
    MAX_STEPS = "the step budget ran out before the end time"
    STOPPED = "a callback asked the integration to stop after an accepted step"

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
        The smallest meaningful step; a rejection asking for less ends the call.  It sets the
        default :class:`~.controller.Controller`; a controller given to ``advance`` has its own.
    max_steps : int or None
        The most trial steps this call may take (None: no limit).
    report : callable or None
        Called as ``report(t)`` after every accepted step (it should return quickly); a
        true return value ends the call with ``Outcome.STOPPED``.
    noise : BrownianIncrements or None
        The noise of a stochastic stepper (:class:`StochasticHeun`): its amplitude ``sigma``
        and its Brownian increments; None (and ignored by the other steppers): no noise.
    """

    rtol: float = 1e-8
    atol: float = 1e-10
    h_min: float = 0.0
    max_steps: int | None = None
    report: object = None
    noise: object = None


DEFAULT_CONTROL = Control()
"""The default tolerances, no smallest step, no budget and no callback."""


class Workspace:
    """The stage buffers of a stepper for one state, reusable from call to call.

    Attributes
    ----------
    ks : ndarray
        ``(S + 1,) + y.shape``: the stage velocities of a step and the velocity at its result.
    tmp, y_new : ndarray
        A stage's argument and a trial step's result.
    fresh : bool
        True when ``ks[0]`` is the velocity at the current state (set by a stepper whose field
        has ``reuse_last_stage``; whoever changes the state between calls sets it to False).
    """

    def __init__(self, tableau, y):
        self.ks = np.empty((tableau.stages + 1,) + y.shape, dtype=y.dtype)
        self.tmp = np.empty_like(y)
        self.y_new = np.empty_like(y)
        self.fresh = False

    def fits(self, tableau, y):
        """True if the buffers have the shape and type of ``y`` and enough stages."""
        return (self.ks.shape[1:] == y.shape and self.ks.dtype == y.dtype
                and self.ks.shape[0] >= tableau.stages + 1)


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

    Its field, parameters and references are those of that function; this one returns ``out``.
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


def _stages(tableau, yt, h, field, ks, tmp, first=True):
    """The stage velocities ``ks[0 .. S-1]`` of one step of size ``h`` from ``yt`` (``ks[0]``
    only if ``first``: otherwise it already holds the velocity at ``yt``)."""
    if first:
        field(yt, ks[0])
    for s, row in enumerate(tableau.rows, start=1):
        _combine(tmp, yt, h, row, ks[:s])
        field(tmp, ks[s])


def _sphere_error_norm(y, y_new, h, e, ks, rtol, atol):
    """The default error norm: on the entries of ``y``, with ``finite`` from the stages and
    the result."""
    if not (_all_finite(ks) and _all_finite(y_new)):
        return np.inf, False
    return _error_norm(y, y_new, h, e, ks, rtol, atol), True


class _Contract:
    """A field's retraction, error norm and speed integral, or the defaults on spheres."""

    __slots__ = ("retract", "error_norm", "stage_speed", "reuse_last_stage")

    def __init__(self, field):
        retract = getattr(field, "retract", None)
        if retract is None:
            mobile, has_frozen = field.mobile, field.has_frozen

            def retract(y):
                return _retract(y, mobile, has_frozen)

        self.retract = retract
        self.error_norm = getattr(field, "error_norm", _sphere_error_norm)
        self.stage_speed = getattr(field, "stage_speed", _weighted_squares)
        self.reuse_last_stage = bool(getattr(field, "reuse_last_stage", False))


def _workspace(work, tableau, y):
    if work is None or not work.fits(tableau, y):
        return Workspace(tableau, y)
    return work


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

    def advance(self, yt, t, t_end, h, field, control=DEFAULT_CONTROL, controller=None, work=None):
        """Advance ``yt`` in place from ``t`` to ``t_end`` in equal steps of about ``h``.

        One step of the tableau ``(A, b, c)`` with ``S`` stages, then the retraction::

            k_s = f(y + h sum_{m<s} a_sm k_m),     s = 1 .. S
            y  <- y + h sum_s b_s k_s
            y  <- R(y)        (on spheres: y_i <- y_i / |y_i|, mobile i)

        Parameters
        ----------
        yt : ndarray
            The state, changed in place.
        t, t_end : float
            Start and end times.
        h : float
            The step; ``round((t_end - t) / h)`` steps (at least one) are taken, each of
            exactly ``h``.
        field : callable
            ``field(yt, out)`` writes the velocity; its retraction as in the module docstring.
        control : Control
            Only ``control.report`` is read: called as ``report(t)`` after every step.
        controller : Controller or None
            Not used (a fixed step has no control).
        work : Workspace or None
            Stage buffers to reuse.

        Returns
        -------
        Advance
            ``Outcome.NONFINITE`` if a step reached a non-finite state, ``Outcome.STOPPED``
            if ``report`` returned True.

        References
        ----------
        E. Hairer, S. P. Norsett, G. Wanner, *Solving Ordinary Differential Equations I*,
        2nd ed., Springer (1993), section II.1 (the classical method of order 4).
        P.-A. Absil, R. Mahony, R. Sepulchre, *Optimization Algorithms on Matrix Manifolds*,
        Princeton University Press (2008), section 4.1 (retractions).
        """
        n_steps = max(1, int(round((t_end - t) / h)))
        tab = self.tableau
        work = _workspace(work, tab, yt)
        work.fresh = False
        ks, tmp = work.ks, work.tmp
        hooks = _Contract(field)
        report = control.report
        speed = 0.0
        for k in range(n_steps):
            _stages(tab, yt, h, field, ks, tmp)
            _combine(yt, yt, h, tab.weights, ks[:tab.stages])
            if not hooks.retract(yt):
                return Advance(Outcome.NONFINITE, h, k, 0, (k + 1) * tab.stages, t + k * h, speed)
            if hooks.stage_speed is not None:
                speed += h * hooks.stage_speed(ks, tab.weights)
            if report is not None and report(t + (k + 1) * h):
                return Advance(Outcome.STOPPED, h, k + 1, 0, (k + 1) * tab.stages,
                               t + (k + 1) * h, speed)
        return Advance(Outcome.OK, h, n_steps, 0, n_steps * tab.stages, t_end, speed)


class AdaptiveStepper:
    """An embedded Runge-Kutta pair with error control, then the retraction.

    Parameters
    ----------
    tableau : ButcherTableau
        The pair (its ``e`` weights give the error estimate, its ``error_order`` the
        controller's exponent).

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

    def controller(self, **settings):
        """The default :class:`~.controller.Controller` of this pair (``settings`` override)."""
        return Controller.for_tableau(self.tableau, **settings)

    def advance(self, yt, t, t_end, h, field, control=DEFAULT_CONTROL, controller=None, work=None):
        """Advance ``yt`` in place from ``t`` to exactly ``t_end`` with adaptive steps.

        A trial step as in :meth:`FixedStepper.advance` (before the retraction), with one more
        stage ``k_{S+1} = f(y_new)`` for the error estimate; it is accepted when ``err <= 1``::

            sc  = atol + rtol max(|y|, |y_new|)        (entrywise, on spheres)
            err = sqrt(mean((h sum_m e_m k_m / sc)^2))
            h  <- min(h_max, h min(5, max(0.2, 0.9 err^(-1/(q+1)))))

        (:class:`~.controller.Controller`; a fifth of ``h`` after a non-finite trial), then
        the retraction.

        ``yt``, ``t``, ``t_end`` and ``field`` are as in :meth:`FixedStepper.advance`; the
        references are those of the module docstring.

        Parameters
        ----------
        h : float
            The first step to try (at most the controller's ``h_max``).
        control : Control
            Tolerances, step budget and progress callback (and ``h_min`` for the default
            controller).
        controller : Controller or None
            The step-size controller; None: :meth:`controller` with ``h_min = control.h_min``.
        work : Workspace or None
            Stage buffers to reuse; with a field that has ``reuse_last_stage``, ``work.fresh``
            says that ``work.ks[0]`` is already the velocity at ``yt``.

        Returns
        -------
        Advance
            A trial step is rejected when its scaled error exceeds 1 or when a stage, the
            result or the velocity there is not finite (then the step is divided by 5).  The
            call ends with ``Outcome.UNDERFLOW`` (error too large) or
            ``Outcome.NONFINITE_TRIALS`` (non-finite trials) when a rejection asks for a step
            below ``max(h_min, 4 eps |t|)``: below ``4 eps |t|`` the time no longer advances.
            It ends with ``Outcome.MAX_STEPS`` after ``max_steps`` trial steps and with
            ``Outcome.STOPPED`` when ``report`` returns True.
        """
        tab = self.tableau
        rtol, atol, h_min = control.rtol, control.atol, control.h_min
        max_steps, report = control.max_steps, control.report
        ctrl = self.controller(h_min=h_min) if controller is None else controller
        hooks = _Contract(field)
        reuse = hooks.reuse_last_stage
        work = _workspace(work, tab, yt)
        ks, tmp, ynew = work.ks, work.tmp, work.y_new
        stages = tab.stages
        n_acc = n_rej = n_rhs = 0
        speed = 0.0
        h = min(h, ctrl.limit())  # every trial step within h_max, the first one too

        def result(outcome):
            return Advance(outcome, h, n_acc, n_rej, n_rhs, t, speed)

        while t < t_end:
            if max_steps is not None and n_acc + n_rej >= max_steps:
                return result(Outcome.MAX_STEPS)
            last = t + h >= t_end
            h_step = t_end - t if last else h
            first = not (reuse and work.fresh)
            _stages(tab, yt, h_step, field, ks, tmp, first)
            _combine(ynew, yt, h_step, tab.weights, ks[:stages])
            field(ynew, ks[stages])
            n_rhs += stages + 1 if first else stages
            work.fresh = reuse
            err, finite = hooks.error_norm(yt, ynew, h_step, tab.errors, ks, rtol, atol)
            if err <= 1.0:
                yt[:] = ynew
                if not hooks.retract(yt):
                    work.fresh = False
                    return result(Outcome.NONFINITE)
                if hooks.stage_speed is not None:
                    speed += h_step * hooks.stage_speed(ks, tab.weights)
                if reuse:
                    ks[0] = ks[stages]
                t = t_end if last else t + h_step
                n_acc += 1
                h = ctrl.accepted(h, h_step, err, last)
                if report is not None and report(t):
                    return result(Outcome.STOPPED)
            else:
                n_rej += 1
                # a non-finite trial or an overflowing error estimate: shrink hard
                h = ctrl.rejected(h_step, err)
                if ctrl.too_small(h, t):
                    return result(Outcome.UNDERFLOW if finite else Outcome.NONFINITE_TRIALS)
        return result(Outcome.OK)


HEUN = ButcherTableau("heun", a=((1.0,),), b=(0.5, 0.5), c=(0.0, 1.0), order=2)
"""Heun's method, the explicit trapezoidal rule, as the drift of :class:`StochasticHeun`."""


class BrownianIncrements:
    r"""Independent Brownian increments, one per mobile token, drawn step by step.

    Parameters
    ----------
    sigma : float
        The noise amplitude, ``>= 0``.
    rng : numpy.random.Generator
        The source of the normal draws.
    d, n : int
        The dimension of the state (rows) and the number of tokens (columns).
    mobile : ndarray of bool or None
        ``(n,)``: which tokens get noise (None: all); frozen tokens get zero increments.

    Notes
    -----
    ``draw(h)`` returns ``Delta W = sqrt(h) Z`` with ``Z`` standard normal: ``(d, n)`` for
    ``d >= 3``, one row ``(1, n)`` on the circle (``d = 2``), where the noise of
    :class:`StochasticHeun` is the rotation ``sigma J y_i o dB_i`` by one scalar Brownian
    motion per token (``J`` the rotation by a right angle).  On the circle the two are the
    same process in law: the tangent part ``<J y, dW>`` of a planar Brownian motion is a
    standard Brownian motion (Levy's characterization), so both give
    ``d theta_i = ... dt + sigma dB_i``.
    """

    def __init__(self, sigma, rng, d, n, mobile=None):
        self.sigma, self.rng = float(sigma), rng
        self.shape = (1 if d == 2 else d, n)
        self.mask = None if mobile is None or np.all(mobile) else np.asarray(mobile, dtype=float)

    def draw(self, h):
        """The increments ``sqrt(h) Z`` of one step of length ``h`` (zero for frozen tokens)."""
        dw = self.rng.standard_normal(self.shape) * np.sqrt(h)
        if self.mask is not None:
            dw *= self.mask
        return dw


@njit(cache=True)
def _noise_term(y, i, dw, k, circle):
    """Component ``k`` of the noise direction of token ``i``: ``(J y_i)_k dB_i`` on the
    circle, ``(P(y_i) dW_i)_k = dW_ik - <y_i, dW_i> y_ik`` otherwise."""
    if circle:
        return (-y[1, i] if k == 0 else y[0, i]) * dw[0, i]
    dot = 0.0
    for m in range(y.shape[0]):
        dot += y[m, i] * dw[m, i]
    return dw[k, i] - dot * y[k, i]


@njit(cache=True)
def _heun_predict(out, y, h, k0, sigma, dw):
    """``out = y + h k0 + sigma g(y) dW``, the predictor of the stochastic Heun step."""
    d, n = y.shape
    circle = dw.shape[0] == 1
    for i in range(n):
        for k in range(d):
            out[k, i] = y[k, i] + h * k0[k, i] + sigma * _noise_term(y, i, dw, k, circle)


@njit(cache=True)
def _heun_correct(y, yp, h, k0, k1, sigma, dw, g0):
    """``y <- y + (h/2)(k0 + k1) + (sigma/2)(g(y) + g(yp)) dW`` in place (``g0`` a buffer)."""
    d, n = y.shape
    circle = dw.shape[0] == 1
    for i in range(n):
        for k in range(d):
            g0[k] = _noise_term(y, i, dw, k, circle)
        for k in range(d):
            gp = _noise_term(yp, i, dw, k, circle)
            y[k, i] += 0.5 * h * (k0[k, i] + k1[k, i]) + 0.5 * sigma * (g0[k] + gp)


class StochasticHeun:
    r"""The stochastic Heun method for Stratonovich noise on spheres, then the retraction.

    For ``dy_i = f_i(y) dt + sigma g(y_i) o dW_i`` with ``g(y) = P_y = I - y y^T``
    (:math:`P_y v = v - \langle y, v\rangle y`; on the circle ``g(y) = J y`` driven by one
    scalar Brownian motion per token, :class:`BrownianIncrements`), one step of size ``h``
    with the increments ``Delta W`` of the step is

    .. math::

        \tilde y = R\big(y + h f(y) + \sigma g(y) \Delta W\big),

        y \leftarrow R\Big(y + \tfrac{h}{2} (f(y) + f(\tilde y))
              + \tfrac{\sigma}{2} (g(y) + g(\tilde y)) \Delta W\Big),

    with the retraction :math:`R: y_i \mapsto y_i / |y_i|` (mobile ``i``): the
    predictor-corrector whose limit is the Stratonovich integral (the trapezoidal rule in the
    noise).  The predictor is retracted too, so the field is only ever evaluated on the
    spheres, where every summation of it (direct or fast) agrees to its own error; off the
    sphere the predictor would be ``O(sigma^2 h)`` away.  Without noise it is Heun's method for
    ``y' = f(y)`` (order 2).

    **Order.**  Strong order 1/2 in general: for ``d >= 3`` the noise fields
    ``y -> P_y e_k`` do not commute, and no scheme driven by the increments alone does
    better (the iterated integrals of ``W`` enter at order 1).  On the circle the noise is a
    single field ``J y`` per token (commutative; additive in the angle), and the scheme has
    strong order 1.  Weak order 1.  The retraction changes the update by terms of the order
    of the local error (the exact solution stays on the sphere), not the order.

    References
    ----------
    P. E. Kloeden and E. Platen, *Numerical Solution of Stochastic Differential Equations*,
    Springer (1992), sections 10.3 and 15.1 (the Heun scheme for Stratonovich equations);
    K. Burrage, P. M. Burrage, T. Tian, "Numerical methods for strong solutions of stochastic
    differential equations: an overview", Proc. R. Soc. A 460 (2004) 373-402.
    """

    adaptive = False
    tableau = HEUN
    name = "heun"

    def advance(self, yt, t, t_end, h, field, control=DEFAULT_CONTROL, controller=None, work=None):
        """Advance ``yt`` in place from ``t`` to ``t_end`` in equal steps of about ``h``.

        The arguments and the result are those of :meth:`FixedStepper.advance`;
        ``control.noise`` (a :class:`BrownianIncrements` or an object with ``sigma`` and
        ``draw(h)``) gives the noise, one ``draw`` per step.  ``speed_integral`` is the
        trapezoidal quadrature of the drift speeds (meaningful without noise only).
        """
        n_steps = max(1, int(round((t_end - t) / h)))
        work = _workspace(work, HEUN, yt)
        work.fresh = False
        ks, tmp = work.ks, work.tmp
        hooks = _Contract(field)
        noise, report = control.noise, control.report
        sigma = 0.0 if noise is None else float(noise.sigma)
        g0 = np.empty(yt.shape[0])
        speed = 0.0
        for k in range(n_steps):
            field(yt, ks[0])
            if sigma == 0.0:
                _combine(tmp, yt, h, HEUN.rows[0], ks[:1])
            else:
                dw = noise.draw(h)
                _heun_predict(tmp, yt, h, ks[0], sigma, dw)
            finite = hooks.retract(tmp)
            if finite:
                field(tmp, ks[1])
                if sigma == 0.0:
                    _combine(yt, yt, h, HEUN.weights, ks[:2])
                else:
                    _heun_correct(yt, tmp, h, ks[0], ks[1], sigma, dw, g0)
            if not (finite and hooks.retract(yt)):
                return Advance(Outcome.NONFINITE, h, k, 0, (k + 1) * 2, t + k * h, speed)
            if hooks.stage_speed is not None:
                speed += h * hooks.stage_speed(ks, HEUN.weights)
            if report is not None and report(t + (k + 1) * h):
                return Advance(Outcome.STOPPED, h, k + 1, 0, (k + 1) * 2, t + (k + 1) * h, speed)
        return Advance(Outcome.OK, h, n_steps, 0, n_steps * 2, t_end, speed)


METHODS = {"rk4": FixedStepper(RK4), "dopri5": AdaptiveStepper(DOPRI5), "heun": StochasticHeun()}
"""The steppers by name, as ``simulate(method=...)`` takes them."""
