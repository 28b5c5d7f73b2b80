"""The one entry point: ``simulate(model, x0, xi, t_max, ...) -> Trajectory``."""

import math
import sys
import time

import numpy as np

from . import _validate as v
from .dynamics import energy_bound as _energy_bound
from .dynamics import energy_gauge, integrators
from .dynamics.unrotated import UnrotatedValuesField
from .models import Model
from .trajectory import Trajectory

METHODS = ("rk4", "dopri5")


class IntegrationError(RuntimeError):
    """The integration failed: a non-finite state or a step size underflow."""


class _Prepared:
    """Validated input in the form the Numba kernels take."""

    def __init__(self, model, x, xi, frozen=None):
        if not isinstance(model, Model):
            raise TypeError(f"model must be a usaav_edu Model (see usaav_edu.models), got {type(model).__name__}")
        x = v.points_on_sphere("x0", x)
        self.x0 = x
        n, d = x.shape
        model.check_dimension(d)
        self.model = model
        self.n, self.d = n, d
        self.xi = model.check_labels(xi, n)
        bias = model.bias_matrix(self.xi)
        self.has_bias = bias is not None
        self.bias = np.ascontiguousarray(bias) if self.has_bias else np.ones((1, 1))
        if frozen is None:
            self.has_frozen = False
            self.mobile = np.ones(1, dtype=np.bool_)
            self.frozen = None
        else:
            fz = np.asarray(frozen)
            if fz.dtype != bool or fz.shape != (n,):
                raise ValueError(f"frozen must be a boolean array of shape ({n},), got dtype {fz.dtype}, shape {fz.shape}")
            self.has_frozen = bool(fz.any())
            self.frozen = fz.copy() if self.has_frozen else None
            self.mobile = ~fz if self.has_frozen else np.ones(1, dtype=np.bool_)
        args = (self.bias, self.has_bias, float(model.beta), model.linear,
                model.normalization == "sa", self.mobile, self.has_frozen)
        if model.rotate_values:
            # integrate the gauge coordinates y_i = G(xi_i) x_i
            self.state = np.ascontiguousarray(model.to_gauge(x, self.xi).T)
            self.field = integrators.GaugeField(args)
        else:
            # the variant integrates the contents x_i themselves
            self.state = np.ascontiguousarray(x.T)
            self.field = UnrotatedValuesField(model, self.xi, bias, self.mobile, self.has_frozen)

    def contents(self):
        """The current contents x, (n, d)."""
        st = self.state.T
        return self.model.from_gauge(st, self.xi) if self.model.rotate_values else st.copy()

    def energy(self):
        """E_h of the current state."""
        st = self.state if self.model.rotate_values else np.ascontiguousarray(self.model.to_gauge(self.state.T, self.xi).T)
        return float(energy_gauge(st, self.bias, self.has_bias, float(self.model.beta), self.model.linear))


def energy(model, x, xi=None):
    """The particle energy ``E_h = (1/(2 n^2)) sum_ij b_ij phi(<G_i x_i, G_j x_j>)``."""
    return _Prepared(model, x, xi).energy()


def energy_bound(model, xi, n=None):
    """An upper bound of E_h for ``n`` tokens with labels ``xi``.

    See :func:`usaav_edu.dynamics.energy.energy_bound` for the bound.

    ``xi`` is a 1-D array with one label per token (then ``n``, if given, must
    be its length), or None for models without labels (then ``n`` is required).
    For a non-negative bias the bound is attained by the gauge maximizers.
    """
    if not isinstance(model, Model):
        raise TypeError(f"model must be a usaav_edu Model, got {type(model).__name__}")
    if xi is None:
        n = v.integer("n", n, minimum=1)
    else:
        if isinstance(xi, (str, bytes)) or np.ndim(xi) != 1:
            raise TypeError(f"xi must be a 1-D array with one label per token, got {type(xi).__name__} "
                            f"of shape {np.shape(xi)}")
        if n is not None and v.integer("n", n, minimum=1) != len(xi):
            raise ValueError(f"n must equal the number of labels in xi ({len(xi)}), got {n}")
        n = len(xi)
    xi = model.check_labels(xi, n)
    return _energy_bound(model, xi, n)


def _max_abs_bias(bias):
    return 1.0 if bias is None else max(float(np.max(np.abs(bias))), 1e-300)


def _lipschitz(model, bias):
    """The Lipschitz estimate ``L`` of the velocity field (see :func:`default_dt`)."""
    bmax = _max_abs_bias(bias)
    if model.normalization == "sa":
        return 1.0 + model.beta
    if model.linear:
        return bmax
    return (1.0 + model.beta) * math.exp(model.beta) * bmax


def _stiffness(model, bias):
    """The contraction rate of a collapsed cluster, which bounds every explicit step.

    Linearizing the velocity at ``x_i = u`` (all tokens at one point) gives the
    rate ``e^beta mean_j b_ij <= e^beta max|b|`` for USA (``max|b|`` for the
    linear profile): perturbations decay like ``e^(-rate t)``, and an explicit
    method is stable only for steps below a constant over the rate.  For SA
    the weights sum to one and the rate is 1 at collapse; the Lipschitz
    estimate ``1 + beta`` is used instead, because away from collapse SA's
    step is set by accuracy at about that rate.
    """
    if model.normalization == "sa":
        return 1.0 + model.beta
    bmax = _max_abs_bias(bias)
    return bmax if model.linear else math.exp(model.beta) * bmax


def default_dt(model, xi):
    """The RK4 step used when ``dt=None``: ``min(0.05, 0.25 / L)``.

    ``L`` estimates the Lipschitz constant of the velocity: ``(1 + beta) e^beta max|b|``
    for USA, ``1 + beta`` for SA (weights sum to one), ``max|b|`` for the linear profile.
    """
    return min(0.05, 0.25 / _lipschitz(model, model.bias_matrix(xi)))


DEFAULT_MAX_STEPS = 10 ** 6
"""The default cap on the steps of one :func:`~usaav_edu.simulate` call.

A step is one RK4 step (4 velocity evaluations) or one Dormand-Prince trial
step (7 evaluations).  10^6 RK4 steps take about half a minute at n = 32 and
several minutes at n = 256 on one core; every run of the book and the tests
needs at most a few ten thousand.
"""

NEVER = 2.0 ** 63
"""Runs estimated beyond this many steps are refused even with ``max_steps=None``
(they cannot end)."""

DOPRI5_STABILITY = 3.3
"""Dormand-Prince 5(4) is stable for ``h * rate`` up to about 3.3 on the negative real axis."""

RK4_STABILITY = 2.785
"""RK4 is stable for ``h * rate`` up to about 2.785 on the negative real axis."""

ENERGY_RTOL = 1e-10
"""The relative fall of the energy between two frames that :func:`~usaav_edu.simulate` tolerates.

See ``_energy_tolerance``."""


def _rk4_steps(t_max, n_frames, step):
    """``(steps per frame, total steps)`` as floats for RK4 with steps of at most ``step``."""
    per_frame = float(max(1, math.ceil(min((t_max / (n_frames - 1)) / step * (1 - 1e-12), 1e300))))
    return per_frame, per_frame * (n_frames - 1)


def _dopri5_steps(model, bias, t_max, n_frames):
    """Estimated Dormand-Prince steps: one per frame, plus ``t_max`` times the stiffness over 3.3.

    Once the tokens cluster, the step is bounded by stability, ``h <= 3.3 / rate``
    with the rate of :func:`_stiffness`; for USA the measured cost is close to
    this bound (between 0.6 and 1 times it for beta >= 5).  Early, non-stiff
    stretches are limited by accuracy instead and cost more per unit time,
    but they are short.
    """
    return (n_frames - 1) + t_max * _stiffness(model, bias) / DOPRI5_STABILITY


def _too_long(model, bias, method, t_max, n_frames, step, dt_given, estimate, max_steps):
    """The message of the ValueError that refuses a run beyond ``max_steps``."""
    rate = _stiffness(model, bias)
    beta = model.beta
    if method == "rk4":
        how = (f"RK4 with steps of {step:.3g} over t_max = {t_max:g}" +
               ("" if dt_given else f" (the default step 0.25 / L, L = {_lipschitz(model, bias):.3g} "
                                    f"the Lipschitz estimate at beta = {beta:g})"))
    else:
        how = (f"Dormand-Prince over t_max = {t_max:g}, whose stable step is about 3.3 / rate = "
               f"{DOPRI5_STABILITY / rate:.3g} (clusters contract at the rate {rate:.3g})")
    advice = ["a smaller t_max"]
    if not model.linear:
        advice.append("a smaller beta")
    if method == "rk4":
        dp = _dopri5_steps(model, bias, t_max, n_frames)
        if dp < estimate:
            advice.append(f"method='dopri5' (about {dp:.2g} steps here)")
    if model.normalization == "usa" and not model.linear:
        advice.append("the SA normalization (models.sa, whose clock has no factor e^beta)")
    if max_steps is not None:
        advice.append("a larger max_steps (max_steps=None: no cap)")
    cap = f"max_steps = {max_steps}" if max_steps is not None else f"any run can take ({NEVER:.2g})"
    return (f"simulate would take about {estimate:.2g} {'RK4' if method == 'rk4' else 'Dormand-Prince'} steps, "
            f"more than {cap}: {how}. Choose " + ", ".join(advice[:-1]) + f" or {advice[-1]}.")


def _energy_tolerance(model, bias, e_prev, e_now, rtol=0.0):
    """How far the computed energy may fall between two frames of a gradient-ascent run.

    ``(ENERGY_RTOL + rtol) * S`` with ``S`` a bound of
    ``(1/(2 n^2)) sum_ij |b_ij phi(s_ij)|``, the scale of the rounding error:
    ``|E|`` itself for the attention profile with ``b >= 0`` (every term is
    positive), otherwise at most ``max|b| phi(1) / 2`` with
    ``phi(1) = max(1, e^beta / beta)``.

    * Round-off: the computed ``E`` sums ``n^2`` terms, each with a relative
      error of a few ``eps (1 + beta)`` (the exponential of a rounded
      ``beta <y_i, y_j>``), in sums of ``n`` terms twice, so its error is
      below about ``(2 n + 5 beta + 2) eps S``: ``2e-14 S`` at n = 32,
      ``2e-12 S`` at n = 4096.  ``ENERGY_RTOL = 1e-10`` leaves a margin of 100
      up to n = 10^5.  A stable RK4 step of a gradient ascent does not lower
      ``E`` by more: the exact flow raises it and a stable step damps every
      mode.  An unstable one lowers it by a sizable fraction within a frame.
    * Dormand-Prince (``rtol`` its relative tolerance): the state is only as
      accurate as ``rtol`` asks, and near a maximum of ``E`` a loose ``rtol``
      lets accepted steps at the edge of stability lower ``E`` slightly (by
      ``7e-9 E`` with ``rtol = 1e-3`` at beta = 3); a fall below ``rtol * S``
      is within the accuracy asked for.
    """
    scale = max(abs(e_prev), abs(e_now))
    if model.linear or (bias is not None and np.any(bias < 0.0)):
        phi1 = 1.0 if model.linear else max(1.0, math.exp(model.beta) / model.beta)
        scale = max(scale, _max_abs_bias(bias) * phi1 / 2.0)
    return (ENERGY_RTOL + rtol) * scale


class _Progress:
    """A text progress bar of the simulated time on stderr.

    Shown once a run has lasted a second, then redrawn at most every half
    second; ``update(t)`` is called after every step, so it only reads the
    clock unless it draws.
    """

    DELAY, INTERVAL = 1.0, 0.5

    def __init__(self, enabled, t_max):
        self.enabled, self.t_max, self.drawn = enabled, t_max, None
        self.start = time.perf_counter()
        self.next = self.start + self.DELAY

    def update(self, t):
        if not self.enabled:
            return
        now = time.perf_counter()
        if now < self.next:
            return
        self.next = now + self.INTERVAL
        self._draw(t, now)

    def close(self, t):
        """Draw the final state (if the bar is shown) and end its line."""
        if self.drawn is not None:
            if t != self.drawn:
                self._draw(t, time.perf_counter())
            sys.stderr.write("\n")
            sys.stderr.flush()

    def _draw(self, t, now):
        self.drawn = t
        frac = min(max(t / self.t_max, 0.0), 1.0)
        bar = "#" * int(30 * frac)
        sys.stderr.write(f"\r[{bar:<30}] {100 * frac:5.1f}%  t = {t:<10.4g} {now - self.start:6.1f}s")
        sys.stderr.flush()


def simulate(model, x0, xi=None, t_max=20.0, dt=None, method="rk4", *, n_frames=101,
             rtol=1e-8, atol=1e-10, frozen=None, seed=None, progress=False, max_steps=DEFAULT_MAX_STEPS):
    """Integrate USA-AV from ``x0`` and return a :class:`Trajectory`.

    Parameters
    ----------
    model
        A Model from :mod:`usaav_edu.models`.
    x0
        (n, d) unit vectors (not renormalized: a non-unit row is an error).
    xi
        (n,) labels: positions (float) or prompt ids (int); None for models without labels.
    t_max
        Final time, > 0.
    dt
        RK4 step bound (default :func:`~usaav_edu.solver.default_dt`).  The step used is
        ``t_max / (steps)``, the largest step <= dt that lands on every frame;
        it is recorded in ``Trajectory.dt``.  For dopri5 ``dt`` is the first trial step.
    method
        "rk4" (fixed step) or "dopri5" (adaptive Dormand-Prince 5(4)).
    n_frames
        Number of stored frames, equally spaced on [0, t_max], >= 2.
    rtol, atol
        The dopri5 tolerances.
    frozen
        Optional (n,) bool: tokens that attend (enter every sum) but never move.
    seed
        Provenance only: the seed that generated x0, stored in the Trajectory.
    progress
        Show a progress bar of the simulated time on stderr, updated during
        frames, for runs longer than a second.
    max_steps
        The most steps the run may take (default ``DEFAULT_MAX_STEPS`` = 10^6;
        None: no cap).  The work is estimated before integrating: RK4 takes
        exactly ``(n_frames - 1) * steps per frame`` steps; for dopri5 the
        estimate is ``n_frames - 1 + t_max * rate / 3.3`` with the rate at
        which a cluster contracts (``e^beta max|b|`` for USA, ``1 + beta`` for
        SA): the stable step of a stiff run.  A run estimated beyond the cap
        is refused with a ValueError saying what to change; a dopri5 run that
        needs more steps than the cap stops with IntegrationError.

    Raises
    ------
    TypeError, ValueError
        For bad input or a run estimated beyond ``max_steps``.
    IntegrationError
        When the state becomes non-finite, the adaptive step
        underflows or exceeds ``max_steps``, or the energy falls.  For every model
        but the ``rotate_values=False`` variant the dynamics raises the energy
        (USA is its gradient ascent, SA a gradient ascent in another metric), so
        after every frame the energy is compared with the previous frame's: a fall
        beyond round-off (``_energy_tolerance``) means the step was unstable.
        The variant is not a gradient flow and is not checked.
    """
    from . import __version__

    p = _Prepared(model, x0, xi, frozen)
    t_max = v.real_scalar("t_max", t_max, minimum=0.0, strict=True)
    method = v.choice("method", method, METHODS)
    n_frames = v.integer("n_frames", n_frames, minimum=2)
    if dt is not None:
        dt = v.real_scalar("dt", dt, minimum=0.0, strict=True)
    rtol = v.real_scalar("rtol", rtol, minimum=0.0, strict=True)
    atol = v.real_scalar("atol", atol, minimum=0.0, strict=True)
    if seed is not None and not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int or None, got {type(seed).__name__}")
    if max_steps is not None:
        max_steps = v.integer("max_steps", max_steps, minimum=1)
    if not isinstance(progress, (bool, np.bool_)):
        raise TypeError(f"progress must be True or False, got {type(progress).__name__}")

    bias = p.bias if p.has_bias else None
    step = default_dt(model, p.xi) if dt is None else dt
    if method == "rk4":
        per_frame, estimate = _rk4_steps(t_max, n_frames, step)
    else:
        estimate = _dopri5_steps(model, bias, t_max, n_frames)
    if estimate > (NEVER if max_steps is None else max_steps):
        raise ValueError(_too_long(model, bias, method, t_max, n_frames, step, dt is not None, estimate,
                                   max_steps))

    times = np.linspace(0.0, t_max, n_frames)
    xs = np.empty((n_frames, p.n, p.d))
    energies = np.empty(n_frames)
    state = p.state
    xs[0] = p.x0  # exactly the input, not a round trip through the gauge
    energies[0] = p.energy()
    check_energy = model.rotate_values
    bar = _Progress(bool(progress), t_max)
    report = bar.update if progress else None
    n_rhs = 0
    t_now = 0.0
    try:
        if method == "rk4":
            per_frame = int(per_frame)
            h = t_max / ((n_frames - 1) * per_frame)
            for f in range(1, n_frames):
                t0 = times[f - 1]
                status = integrators.rk4_advance(state, h, per_frame, p.field,
                                                 None if report is None else lambda k: report(t0 + k * h))
                n_rhs += 4 * per_frame
                if status != integrators.Status.OK:
                    raise IntegrationError(_failure(status, model, bias, method, t0, times[f], h, p.xi))
                t_now = times[f]
                xs[f] = p.contents()
                energies[f] = p.energy()
                if check_energy:
                    _check_energy(model, bias, energies, times, f, method, h, rtol, atol, p.xi)
                bar.update(t_now)
            used_dt, used_rtol, used_atol = h, None, None
        else:
            h = step
            # steps far below the time scale 1 / L are never needed for accuracy: the local error
            # of a step h is about (h L)^5, so below 1e-8 / L the error test fails only on rounding
            h_min = 1e-8 / _lipschitz(model, bias)
            taken = 0
            for f in range(1, n_frames):
                budget = None if max_steps is None else max_steps - taken
                status, h, acc, rej, t_now = integrators.dopri5_advance(
                    state, times[f - 1], times[f], h, rtol, atol, h_min, p.field, budget, report)
                taken += acc + rej
                n_rhs += 7 * (acc + rej)
                if status != integrators.Status.OK:
                    raise IntegrationError(_failure(status, model, bias, method, t_now, t_max, h, p.xi,
                                                    rtol=rtol, atol=atol, h_min=h_min, max_steps=max_steps))
                xs[f] = p.contents()
                energies[f] = p.energy()
                if check_energy:
                    _check_energy(model, bias, energies, times, f, method, None, rtol, atol, p.xi)
                bar.update(t_now)
            used_dt, used_rtol, used_atol = None, rtol, atol
    finally:
        bar.close(t_now)

    return Trajectory(t=times, x=xs, xi=p.xi, energy=energies, model=model, method=method, dt=used_dt,
                      rtol=used_rtol, atol=used_atol, frozen=p.frozen,
                      seed=None if seed is None else int(seed), n_rhs=n_rhs, version=__version__)


def _where(model):
    return f"model {model.name}, beta = {model.beta:g}"


def _rk4_advice(model, bias, h, xi):
    """Why an RK4 step of size ``h`` failed, and what to use instead."""
    rate = _stiffness(model, bias)
    default = f"dt=None gives {default_dt(model, xi):.3g}"
    if h * rate > RK4_STABILITY:
        return (f"RK4 with the step {h:.3g} is unstable here: clusters contract at the rate {rate:.3g} and "
                f"RK4 needs step * rate below {RK4_STABILITY:.2f} (here {h * rate:.3g}). Use a smaller dt "
                f"(below {RK4_STABILITY / rate:.2g}; {default}) or method='dopri5'.")
    return f"RK4 with the step {h:.3g} is unstable here. Use a smaller dt ({default}) or method='dopri5'."


def _check_energy(model, bias, energies, times, f, method, h, rtol, atol, xi):
    """Raise IntegrationError if the energy fell from frame ``f - 1`` to frame ``f`` beyond round-off."""
    e_prev, e_now = energies[f - 1], energies[f]
    if not e_now < e_prev - _energy_tolerance(model, bias, e_prev, e_now, 0.0 if method == "rk4" else rtol):
        return
    what = (f"the energy fell from {e_prev:.10g} to {e_now:.10g} between t = {times[f - 1]:g} and "
            f"t = {times[f]:g} ({_where(model)}), but the dynamics only raises it: the integration "
            f"is wrong. ")
    if method == "rk4":
        raise IntegrationError(what + _rk4_advice(model, bias, h, xi))
    raise IntegrationError(what + f"Dormand-Prince with rtol = {rtol:g}, atol = {atol:g} accepted steps "
                                  f"too large to be stable (the fall exceeds rtol times the energy scale); "
                                  f"tighten rtol and atol.")


def _failure(status, model, bias, method, t, t_end, h, xi, rtol=None, atol=None, h_min=None,
             max_steps=None):
    """The IntegrationError message for an integrator status other than OK."""
    S = integrators.Status
    if method == "rk4":
        return (f"RK4 reached a non-finite state between t = {t:g} and t = {t_end:g} ({_where(model)}). "
                + _rk4_advice(model, bias, h, xi))
    where = f"at t = {t:.6g} ({_where(model)}, rtol = {rtol:g}, atol = {atol:g})"
    if status == S.MAX_STEPS:
        return (f"Dormand-Prince used all max_steps = {max_steps} steps and stopped {where}, before "
                f"t_max = {t_end:g}: the run is costlier than estimated. Raise max_steps (None: no cap), "
                f"shorten t_max, or loosen rtol/atol.")
    if status == S.UNDERFLOW:
        return (f"Dormand-Prince could not meet its tolerances {where}: after rejected steps the step "
                f"underflowed to {h:.3g}, below the smallest meaningful step "
                f"{max(h_min, 4 * integrators.EPS * t):.3g} (1e-8 / L for the Lipschitz estimate "
                f"L = {_lipschitz(model, bias):.3g}, or 4 eps t), where the local error of this smooth "
                f"field is far below rounding error. The tolerances ask for more than double precision "
                f"can give: loosen rtol and atol (the defaults are 1e-8 and 1e-10).")
    if status == S.NONFINITE_TRIALS:
        return (f"Dormand-Prince found no step with a finite result {where}: every trial step down to "
                f"{h:.3g} gave a non-finite stage or velocity, so the velocity field itself is not finite "
                f"near this state (e^(beta s) overflows for large beta and n).")
    return (f"Dormand-Prince accepted a step to a state that is not finite or has a zero vector {where}; "
            f"tighten rtol/atol.")
