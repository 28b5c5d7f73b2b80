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
    """An upper bound of E_h for ``n`` tokens with labels ``xi`` (see dynamics.energy.energy_bound).

    For a non-negative bias the bound is attained by the gauge maximizers.
    """
    if not isinstance(model, Model):
        raise TypeError(f"model must be a usaav_edu Model, got {type(model).__name__}")
    if xi is None:
        n = v.integer("n", n, minimum=1)
    else:
        n = len(xi)
    xi = model.check_labels(xi, n)
    return _energy_bound(model, model.bias_matrix(xi), n)


def default_dt(model, xi):
    """The RK4 step used when ``dt=None``: ``min(0.05, 0.25 / L)``.

    ``L`` estimates the Lipschitz constant of the velocity: ``(1 + beta) e^beta max|b|``
    for USA, ``1 + beta`` for SA (weights sum to one), ``max|b|`` for the linear profile.
    """
    b = model.bias_matrix(xi)
    bmax = 1.0 if b is None else max(float(np.max(np.abs(b))), 1e-300)
    if model.normalization == "sa":
        lip = 1.0 + model.beta
    elif model.linear:
        lip = bmax
    else:
        lip = (1.0 + model.beta) * math.exp(model.beta) * bmax
    return min(0.05, 0.25 / lip)


class _Progress:
    """A text progress bar on stderr, shown only once a run has lasted a second."""

    def __init__(self, enabled, total):
        self.enabled, self.total, self.start, self.shown = enabled, total, time.perf_counter(), False

    def update(self, done):
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.start
        if elapsed < 1.0 and not self.shown:
            return
        self.shown = True
        frac = done / self.total
        bar = "#" * int(30 * frac)
        sys.stderr.write(f"\r[{bar:<30}] {100 * frac:5.1f}%  {elapsed:6.1f}s")
        if done == self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def simulate(model, x0, xi=None, t_max=20.0, dt=None, method="rk4", *, n_frames=101,
             rtol=1e-8, atol=1e-10, frozen=None, seed=None, progress=False):
    """Integrate USA-AV from ``x0`` and return a :class:`Trajectory`.

    Parameters
    ----------
    model : a Model from :mod:`usaav_edu.models`.
    x0 : (n, d) unit vectors (not renormalized: a non-unit row is an error).
    xi : (n,) labels: positions (float) or prompt ids (int); None for models without labels.
    t_max : final time, > 0.
    dt : RK4 step bound (default :func:`default_dt`).  The step used is
        ``t_max / (steps)``, the largest step <= dt that lands on every frame;
        it is recorded in ``Trajectory.dt``.  For dopri5 ``dt`` is the first trial step.
    method : "rk4" (fixed step) or "dopri5" (adaptive Dormand-Prince 5(4)).
    n_frames : number of stored frames, equally spaced on [0, t_max], >= 2.
    rtol, atol : dopri5 tolerances.
    frozen : optional (n,) bool: tokens that attend (enter every sum) but never move.
    seed : provenance only: the seed that generated x0, stored in the Trajectory.
    progress : show a progress bar on stderr for runs longer than a second.

    Raises
    ------
    TypeError, ValueError for bad input; IntegrationError when the state becomes
    non-finite or the adaptive step underflows.
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

    times = np.linspace(0.0, t_max, n_frames)
    xs = np.empty((n_frames, p.n, p.d))
    energies = np.empty(n_frames)
    state = p.state
    xs[0] = p.x0  # exactly the input, not a round trip through the gauge
    energies[0] = p.energy()
    bar = _Progress(progress, n_frames - 1)
    n_rhs = 0

    if method == "rk4":
        step = default_dt(model, p.xi) if dt is None else dt
        per_frame = max(1, math.ceil((t_max / (n_frames - 1)) / step * (1 - 1e-12)))
        h = t_max / ((n_frames - 1) * per_frame)
        for f in range(1, n_frames):
            status = integrators.rk4_advance(state, h, per_frame, p.field)
            n_rhs += 4 * per_frame
            _check(status, times[f - 1], model)
            xs[f] = p.contents()
            energies[f] = p.energy()
            bar.update(f)
        used_dt, used_rtol, used_atol = h, None, None
    else:
        h = default_dt(model, p.xi) if dt is None else dt
        h_min = 1e-12 * t_max
        for f in range(1, n_frames):
            status, h, acc, rej = integrators.dopri5_advance(state, times[f - 1], times[f], h, rtol, atol,
                                                             h_min, p.field)
            n_rhs += 7 * (acc + rej)
            _check(status, times[f - 1], model)
            xs[f] = p.contents()
            energies[f] = p.energy()
            bar.update(f)
        used_dt, used_rtol, used_atol = None, rtol, atol

    return Trajectory(t=times, x=xs, xi=p.xi, energy=energies, model=model, method=method, dt=used_dt,
                      rtol=used_rtol, atol=used_atol, frozen=p.frozen,
                      seed=None if seed is None else int(seed), n_rhs=n_rhs, version=__version__)


def _check(status, t, model):
    if status == integrators.NONFINITE:
        raise IntegrationError(f"the state became non-finite after t = {t:g} (model {model.name}, "
                               f"beta = {model.beta}); use a smaller dt or method='dopri5'")
    if status == integrators.UNDERFLOW:
        raise IntegrationError(f"the adaptive step size underflowed after t = {t:g} (model {model.name}, "
                               f"beta = {model.beta}); loosen rtol/atol")
