"""The one entry point: ``simulate(model, x0, xi, t_max, ...) -> Trajectory``.

The data path is straight: the model is consulted once (:meth:`usaav_edu.models.model.Model.kernel`)
for the gauge coordinates ``y0 = G(xi) x0`` and the kernel's parameters; a stepper of
:data:`usaav_edu.dynamics.integrate.steppers.METHODS` integrates ``y`` (the dynamics in gauge
coordinates does not depend on the gauge, Theorem 4.1 (ch4-thm-conjugacy) of the book); the
frames of ``y`` are stored and mapped back to contents once, into the Trajectory.

The velocity field is summed in one of two ways (``summation``), chosen once per run by the run's
:class:`~usaav_edu.particles.plan.SummationPlan`, which also gives the field, the energy and the
estimated cost of an evaluation; the stepper never knows which:

* ``"direct"``: the pair sums of :mod:`usaav_edu.dynamics.rhs`, ``n^2`` pairs per evaluation,
  exact to rounding, with the dense ``n x n`` bias;
* ``"fast"``: the truncated expansion of :mod:`usaav_edu.dynamics.fastsum`, linear in ``n``,
  whose relative error is bounded by ``summation_tol``; no ``n x n`` matrix is built anywhere in
  the run;
* ``"auto"`` (the default): direct where fast summation does not apply or is estimated no
  faster (:func:`usaav_edu.dynamics.fastsum.cost.estimated_seconds`, a cost model calibrated by
  ``benchmarks/fast_summation.py``), fast otherwise.
"""

import math
import os
import warnings
from typing import NamedTuple

import numpy as np

from .. import _validate as v
from .._version import __version__
from ..dynamics import energy_bound as _energy_bound
from ..dynamics.integrate import run_frames
from ..dynamics.integrate import steppers as integrators
from ..dynamics.parts import NO_BIAS
from ..dynamics.prenorm import directions
from ..errors import IntegrationError, StepTooLargeError, WorkEstimateError
from ..models.model import require_model
from ..progress import Progress
from .plan import SUMMATIONS as SUMMATIONS  # the values of summation, read here as before
from .plan import SummationPlan, summation_args, summation_plan
from .trajectory import Status, Trajectory

METHODS = tuple(integrators.METHODS)


def energy(model, x, xi=None, *, summation="auto", summation_tol=None, tol=None):
    r"""The particle energy of the tokens ``x`` with labels ``xi``.

    .. math::

        E_h = \frac{1}{2 n^2} \sum_{ij} b_{ij}\, \varphi(\langle G_i x_i, G_j x_j \rangle)

    Parameters
    ----------
    model : Model
        The model.
    x : array_like
        ``(n, d)`` unit vectors.
    xi : array_like or None
        ``(n,)`` labels (None for a model without labels).
    summation : {"auto", "direct", "fast"}
        How the pair sum is evaluated, as in :func:`simulate`: ``"direct"`` sums the ``n^2``
        pairs; ``"fast"`` uses the truncated expansion
        (:meth:`usaav_edu.dynamics.fastsum.kernel.FastKernel.energy`, relative error at most its
        ``energy_bound``) and builds no ``n x n`` matrix; ``"auto"`` takes the one
        estimated faster where fast summation applies.
    summation_tol : float or None
        The error bound asked of fast summation, in ``(0, 1)`` (None: 1e-10).
    tol : float or None
        Deprecated name of ``summation_tol`` (a DeprecationWarning; both given: TypeError).

    Returns
    -------
    float
        ``E_h``, to the relative error ``energy_bound`` of the expansion for fast summation.

    Raises
    ------
    TypeError, ValueError
        For bad input, naming the argument, or ``summation="fast"`` for a model where fast
        summation does not apply (the reason given).

    References
    ----------
    The book's chapter 3 (the energy of USA-AV); arXiv:2605.30229.

    Examples
    --------
    >>> import numpy as np
    >>> import usaav_edu as ue
    >>> m = ue.models.usa(beta=1.0)
    >>> round(ue.energy(m, ue.sphere.uniform(32, 3, seed=0)), 4)
    0.6279

    All tokens at one point (collapse) give the largest energy, :math:`e^\beta / (2 \beta)`:

    >>> pole = np.tile([0.0, 0.0, 1.0], (32, 1))
    >>> round(ue.energy(m, pole), 4), round(np.e / 2, 4)
    (1.3591, 1.3591)
    """
    model = require_model(model)
    summation_tol = _summation_tol(summation_tol, tol, "energy")
    summation, tol, reason = summation_args(model, summation, summation_tol)
    kernel = model.kernel(x, xi, dense_bias=reason is not None)
    plan = summation_plan(kernel, summation, reason, tol)
    return plan.gauge_energy(plan.kernel.y0)


def energy_bound(model, xi, n=None):
    """An upper bound of E_h for ``n`` tokens with labels ``xi``.

    Parameters
    ----------
    model : Model
        The model.
    xi : array_like or None
        A 1-D array with one label per token (then ``n``, if given, must be its length), or
        None for models without labels (then ``n`` is required).
    n : int or None
        The number of tokens.

    Returns
    -------
    float
        See :func:`usaav_edu.dynamics.energy.energy_bound`; for a non-negative bias the
        bound is attained by the gauge maximizers.

    Raises
    ------
    TypeError, ValueError
        For bad input, naming the argument.
    """
    require_model(model)
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


class _Rates(NamedTuple):
    """What the step size, the work estimate and the energy check read of a run.

    ``bmax = max |b_ij|`` and ``negative`` (some ``b_ij < 0``) come from
    :class:`usaav_edu.models.model.BiasFacts`: read from the dense bias for direct summation, from
    the built-in bias's formula (no ``n x n`` matrix) for fast summation.
    """

    beta: float
    linear: bool
    sa: bool
    bmax: float
    negative: bool
    vscale: float = 1.0


def _rates(model, facts):
    """The :class:`_Rates` of ``model`` with the bias facts ``facts``.

    With projections (:mod:`usaav_edu.models.projections`) the estimates read
    ``beta ||Q^T K||_2`` for beta (it bounds every exponent) and ``||V||_2`` as a factor of the
    values (``vscale``, folded into ``bmax`` for USA).
    """
    proj = model.projections
    scale = getattr(model.profile, "scale", 1.0)  # a profile of one's own: its bound M_0 e^-beta
    if proj is None or proj.identity:
        return _Rates(float(model.beta), bool(model.linear), model.normalization == "sa",
                      float(facts.max_abs) * scale, bool(facts.negative))
    vscale = proj.v_norm
    return _Rates(float(model.beta) * proj.qk_norm, bool(model.linear),
                  model.normalization == "sa", float(facts.max_abs) * vscale * scale,
                  bool(facts.negative), vscale)


_NO_BIAS = NO_BIAS


def _max_abs_bias(p):
    return p.bmax


def _lipschitz(p):
    """The Lipschitz estimate ``L`` of the velocity field of ``p`` (see :func:`default_dt`)."""
    bmax, b = _max_abs_bias(p), abs(p.beta)
    if p.sa:
        return (1.0 + b) * p.vscale
    if p.linear:
        return bmax
    return (1.0 + b) * math.exp(b) * bmax


def _spectral_bound(p):
    """``Lambda``: an a-priori bound of every eigenvalue of the velocity field's linearization.

    ``Lambda = 2 L`` with ``L`` the Lipschitz estimate of :func:`_lipschitz`:
    ``2 (1 + |beta|) e^|beta| max|b|`` for USA, ``2 (1 + |beta|)`` for SA, ``2 max|b|`` for the
    linear profile (for ``beta >= 0`` the absolute values change nothing).  With
    ``w_ij = b_ij phi'(s_ij)``, ``s_ij = <y_i, y_j> = cos theta_ij``,
    ``A_i = sum_j w_ij y_j`` and tangent perturbations ``delta_j`` (``<delta_j, y_j> = 0``),
    the blocks of the Jacobian of USA's ``v_i = P_{y_i} A_i / n`` are bounded by::

        |dv_i/dy_j| <= (1/n) |b_ij| e^{beta s_ij} (1 + |beta| sin theta_ij)     (j != i)
        |dv_i/dy_i| <= (1/n) sum_j |b_ij| e^{beta s_ij} (1 + |beta| sin^2 theta_ij)

    (the ``1`` of the first from ``w_ij delta_j``, its ``beta`` term from
    ``phi'' = beta phi'`` times ``|P_{y_i} y_j| = sin theta_ij``; the second from
    ``-<y_i, A_i> delta_i`` and the same ``beta`` term, with ``|<y_j, delta_i>| <= sin theta_ij``;
    the self-pair cancels).  The largest block row sum, an operator norm for
    ``max_i |delta_i|``, bounds the spectral radius: with ``e^{beta s} <= e^|beta|`` on
    ``[-1, 1]`` (attained at ``s = 1`` for ``beta >= 0``, at ``s = -1`` for ``beta < 0``),
    ``rho <= max|b| e^|beta| (2 + 2 |beta|) = 2 L``.  The same bound holds in every gauge: in
    gauge coordinates the field does not depend on the gauge, and for the variant with
    unrotated values (``<G_i x_i, G_j x_j>`` in the weights, ``x_j`` as the values) the
    factors ``sin theta`` are replaced by 1, which the bound already allows.  SA
    (``b >= 0``, ``v_i = P_{y_i} sum_j a_ij y_j`` with weights ``a_ij = w_ij / Z_i``
    summing to one): the ``y_j`` block is ``a_ij (delta_j + beta <y_i, delta_j>
    (y_j - ybar_i))`` with ``ybar_i = sum_j a_ij y_j``, and
    ``sum_j a_ij |y_j - ybar_i| <= (sum_j a_ij |y_j - ybar_i|^2)^(1/2) <= 1``, so the
    off-diagonal row sum is at most ``1 + |beta|``; the diagonal block
    ``-<y_i, ybar_i> delta_i + beta Cov_a(<y, delta_i>, y)`` is at most ``1 + |beta|`` too:
    ``rho <= 2 (1 + |beta|)``.  The linear profile is ``beta = 0`` with ``phi' = 1``.

    USA and SA are gradient ascents, so at an equilibrium (a cluster) the linearization is
    self-adjoint and its eigenvalues are real, in ``[-Lambda, Lambda]``: an explicit method
    is stable there when ``h Lambda`` is within its interval on the negative real axis
    (``RK4_STABILITY`` = 2.785 for RK4).  ``Lambda`` is a bound, not the rate: clusters
    contract at the smaller :func:`_stiffness`, so a step up to about ``RK4_STABILITY /
    _stiffness`` may still be stable; a step beyond ``RK4_STABILITY / Lambda`` is not
    guaranteed to be, and is refused.
    """
    return 2.0 * _lipschitz(p)


def _stiffness(p):
    """The contraction rate of a collapsed cluster, which bounds every explicit step.

    Linearizing the velocity at ``x_i = u`` (all tokens at one point) gives the
    rate ``e^beta mean_j b_ij <= e^beta max|b|`` for USA (``max|b|`` for the
    linear profile): perturbations decay like ``e^(-rate t)``, and an explicit
    method is stable only for steps below a constant over the rate.  For
    ``beta < 0`` collapse is the least stiff state: the weights ``e^{beta s}`` are
    largest, ``e^|beta|``, between antipodal tokens (two antipodal clusters are an
    equilibrium), so the rate used is ``e^|beta| max|b|``, which is ``e^beta max|b|``
    for ``beta >= 0``.  For SA the weights sum to one and the rate is 1 at collapse;
    the Lipschitz estimate ``1 + |beta|`` is used instead, because away from
    collapse SA's step is set by accuracy at about that rate.
    """
    if p.sa:
        return (1.0 + abs(p.beta)) * p.vscale
    bmax = _max_abs_bias(p)
    return bmax if p.linear else math.exp(abs(p.beta)) * bmax


def _default_step(p):
    return min(0.05, 0.25 / _lipschitz(p))


def default_dt(model, xi):
    r"""The RK4 step used when ``dt=None``: :math:`\min(0.05,\ 0.25 / L)`.

    Parameters
    ----------
    model : Model
        The model.
    xi : array_like or None
        Its labels, one per token (checked); None for a model without labels.

    Returns
    -------
    float
        :math:`L` estimates the Lipschitz constant of the velocity:
        :math:`(1 + |\beta|)\, e^{|\beta|} \max|b|` for USA, :math:`1 + |\beta|` for SA
        (weights sum to one), :math:`\max|b|` for the linear profile.  :math:`\max|b| = 1` for every
        built-in bias, read without building the ``n x n`` matrix
        (:meth:`usaav_edu.models.model.Model.bias_facts`); a user-defined bias gives its matrix.

    Raises
    ------
    TypeError, ValueError
        For a bad model or labels.
    """
    require_model(model)
    if xi is None:
        model.check_labels(None, 0)  # refused for a model with labels
        bias = _NO_BIAS
    else:
        if isinstance(xi, (str, bytes)) or np.ndim(xi) != 1:
            raise TypeError(f"xi must be a 1-D array with one label per token or None, got "
                            f"{type(xi).__name__}")
        checked = model.check_labels(xi, len(xi))
        # max |b| without the n x n matrix for a built-in bias (a user bias gives its matrix)
        bias = model.bias_facts(checked) if len(checked) else _NO_BIAS
    return _default_step(_rates(model, bias))


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

HEUN_STABILITY = 2.0
"""Heun's method is stable for ``h * rate`` up to 2 on the negative real axis."""

FIXED_STABILITY = {"rk4": RK4_STABILITY, "heun": HEUN_STABILITY}
"""The stability interval of each fixed-step method on the negative real axis."""

ENERGY_RTOL = 1e-10
"""The relative fall of the energy between two frames that :func:`~usaav_edu.simulate` tolerates.

See ``_energy_tolerance``."""


def _rk4_steps(t_max, n_frames, step):
    """``(steps per frame, total steps)`` as floats for RK4 with steps of at most ``step``."""
    per_frame = float(max(1, math.ceil(min((t_max / (n_frames - 1)) / step * (1 - 1e-12), 1e300))))
    return per_frame, per_frame * (n_frames - 1)


def _dopri5_steps(p, t_max, n_frames, dt_max=None):
    """Estimated Dormand-Prince steps: one per frame, plus ``t_max`` times the stiffness over 3.3.

    Once the tokens cluster, the step is bounded by stability, ``h <= 3.3 / rate``
    with the rate of :func:`_stiffness`; for USA the measured cost is close to
    this bound (between 0.6 and 1 times it for beta >= 5).  Early, non-stiff
    stretches are limited by accuracy instead and cost more per unit time,
    but they are short.  With steps of at most ``dt_max`` the run takes at least
    ``ceil((t_max / (n_frames - 1)) / dt_max)`` steps per frame, and the estimate is the
    larger of the two.
    """
    estimate = (n_frames - 1) + t_max * _stiffness(p) / DOPRI5_STABILITY
    if dt_max is None:
        return estimate
    return max(estimate, _rk4_steps(t_max, n_frames, dt_max)[1])


def _too_long(p, method, t_max, n_frames, step, dt_given, estimate, max_steps, dt_max=None):
    """The message of the ValueError that refuses a run beyond ``max_steps``."""
    rate = _stiffness(p)
    beta = p.beta
    if method != "dopri5":
        how = (f"{_NAMES[method]} with steps of {step:.3g} over t_max = {t_max:g}" +
               ("" if dt_given else f" (the default step 0.25 / L, L = {_lipschitz(p):.3g} "
                                    f"the Lipschitz estimate at beta = {beta:g})"))
    else:
        how = (f"Dormand-Prince over t_max = {t_max:g}, whose stable step is about 3.3 / rate = "
               f"{DOPRI5_STABILITY / rate:.3g} (clusters contract at the rate {rate:.3g})" +
               ("" if dt_max is None else f", with steps of at most dt_max = {dt_max:.3g}"))
    advice = ["a smaller t_max"]
    if dt_max is not None:
        advice.insert(0, "a larger dt_max")
    if not p.linear:
        advice.append("a smaller beta" if p.beta >= 0.0 else "a beta closer to 0")
    if method == "rk4":
        dp = _dopri5_steps(p, t_max, n_frames)
        if dp < estimate:
            advice.append(f"method='dopri5' (about {dp:.2g} steps here)")
    if not p.sa and not p.linear:
        advice.append("the SA normalization (models.sa, whose clock has no factor e^beta)")
    if max_steps is not None:
        advice.append("a larger max_steps (max_steps=None: no cap)")
    cap = f"max_steps = {max_steps}" if max_steps is not None else f"any run can take ({NEVER:.2g})"
    return (f"simulate would take about {estimate:.2g} {_NAMES[method]} steps, "
            f"more than {cap}: {how}. Choose " + ", ".join(advice[:-1]) + f" or {advice[-1]}.")


def _energy_tolerance(p, e_prev, e_now, rtol=0.0):
    """How far the computed energy may fall between two frames of a gradient-ascent run.

    ``(ENERGY_RTOL + rtol) * S`` with ``S`` a bound of
    ``(1/(2 n^2)) sum_ij |b_ij phi(s_ij)|``, the scale of the rounding error:
    ``|E|`` itself for the attention profile with ``b >= 0`` (every term is
    positive, or every one negative for ``beta < 0``), otherwise at most
    ``max|b| phi_max / 2`` with ``phi_max = max(1, e^|beta| / |beta|)`` (``max |phi|``
    on ``[-1, 1]``).

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
    if p.linear or p.negative:
        phi1 = 1.0 if p.linear else max(1.0, math.exp(abs(p.beta)) / abs(p.beta))
        scale = max(scale, _max_abs_bias(p) * phi1 / 2.0)
    return (ENERGY_RTOL + rtol) * scale


def _frame_times(t_max, n_frames):
    """The frame times ``t_k = k t_max / (n_frames - 1)``, refused unless strictly increasing.

    A ``t_max`` so small (``5e-324``) that the frames coincide in floating point, or that
    their spacing is subnormal (below ``2.2e-308``, where a step loses its digits), describes
    no run: it is refused with a ValueError naming ``t_max`` and ``n_frames``.
    """
    times = np.linspace(0.0, t_max, n_frames)
    spacing = t_max / (n_frames - 1)
    if not (np.all(np.diff(times) > 0.0) and spacing >= np.finfo(np.float64).tiny):
        raise ValueError(f"t_max = {t_max:g} is too small for n_frames = {n_frames}: the frame "
                         f"times k t_max / (n_frames - 1) must be strictly increasing normal "
                         f"floating-point numbers (their spacing {spacing:g} is below "
                         f"{np.finfo(np.float64).tiny:.3g} or rounds to repeated times). Choose "
                         f"a larger t_max or fewer frames")
    return times


def _check_rk4_step(p, h, dt, t_max, n_frames, kernel, method="rk4"):
    """Refuse an RK4 step ``h`` beyond ``RK4_STABILITY / Lambda`` (:func:`_spectral_bound`);
    for Heun's method (``method="heun"``) beyond ``HEUN_STABILITY / Lambda``.

    Raises :class:`StepTooLargeError` naming ``dt``, the bound and the default step, before
    any work: such a step may return a wrong state whose energy still rises (then the energy
    check cannot see it).  Smaller steps cost time only, which the step cap estimates.
    """
    stability = FIXED_STABILITY[method]
    bound = stability / _spectral_bound(p)
    if h <= bound:
        return
    given = "the default step" if dt is None else f"dt = {dt:g}"
    raise StepTooLargeError(
        f"{given} is beyond {_NAMES[method]}'s stability bound for {_where(kernel)}: the step "
        f"used, {h:.3g} (frames {t_max / (n_frames - 1):.3g} apart), exceeds {stability} / Lambda "
        f"= {bound:.3g}, with Lambda = {_spectral_bound(p):.3g} the bound of the velocity "
        f"field's rates (2 (1 + |beta|) e^|beta| max|b| for USA, 2 (1 + |beta|) for SA, "
        f"2 max|b| for the linear profile). Such a step can return a wrong state whose energy "
        f"still rises. Use dt <= {bound:.3g} (dt=None gives {_default_step(p):.3g})"
        + (" or method='dopri5'." if method == "rk4" else "."))


DEFAULT_MAX_SECONDS = 3600.0
"""The default cap on the estimated time of one :func:`~usaav_edu.simulate` call (an hour).

The estimate is velocity evaluations (steps times stages, plus one energy per frame) times the
cost of one evaluation, :func:`usaav_edu.dynamics.fastsum.cost.estimated_seconds` (a cost model
calibrated by ``benchmarks/fast_summation.py``).  Every run of the book takes seconds; direct
summation of 100,000 tokens takes seconds per evaluation, hours per run."""

EVALUATIONS_PER_STEP = {"rk4": 4, "dopri5": 7, "heun": 2}
"""Velocity evaluations per step (RK4, Heun) or trial step (Dormand-Prince)."""


def _physical_memory():
    """The machine's physical memory in bytes, or None where the system does not say."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def _has_dense_bias(model):
    """Whether direct summation builds an ``n x n`` bias matrix for ``model``."""
    return not getattr(model.bias, "constant", False)


def _run_bytes(n, d, n_frames, method, dense):
    """Memory of a run: frames ``8 F n d``, stage buffers ``8 (S + 3) n d``, bias ``8 n^2``."""
    stages = EVALUATIONS_PER_STEP[method]
    return 8.0 * n * d * (n_frames + stages + 3) + (8.0 * n * n if dense else 0.0)


def _check_memory(estimate, n, summation, n_frames):
    """Refuse a run whose memory ``estimate`` exceeds the physical memory (WorkEstimateError)."""
    total = _physical_memory()
    if total is None or estimate <= total:
        return
    advice = ["fewer frames (n_frames)", "fewer tokens"]
    if summation == "direct":
        advice.insert(0, "summation='fast' where it applies (no n x n matrix)")
    raise WorkEstimateError(f"simulate would need about {estimate / 1e9:.3g} GB for n = {n} tokens "
                            f"and n_frames = {n_frames} with {summation} summation, more than this "
                            f"machine's {total / 1e9:.3g} GB of memory. Choose "
                            + ", ".join(advice[:-1]) + f" or {advice[-1]}.", nbytes=estimate)


def _preflight_memory(model, x0, reason, n_frames, method):
    """Refuse, before the bias matrix is built, a direct run that cannot fit in memory."""
    shape = np.shape(x0)
    if reason is None or len(shape) != 2:
        return  # checked once the run's summation is known (or x0 refused as it is read)
    n, d = int(shape[0]), int(shape[1])
    _check_memory(_run_bytes(n, d, n_frames, method, _has_dense_bias(model)), n, "direct",
                  n_frames)


def _check_work(plan, n_frames, method, steps, max_seconds):
    """Estimate the run's time and memory before it starts; refuse beyond the caps.

    Seconds: ``(EVALUATIONS_PER_STEP * steps + n_frames) * T_eval`` with ``T_eval`` the plan's
    estimate of one evaluation (:attr:`usaav_edu.particles.plan.SummationPlan.seconds`, the cost
    model :func:`usaav_edu.dynamics.fastsum.cost.estimated_seconds` of the summation chosen,
    the same rule for direct and fast summation); refused beyond ``max_seconds`` (None: no
    cap).  Memory (:func:`_run_bytes`): refused beyond the physical memory.  The messages give
    the estimate and what to change.
    """
    n, d, summation = plan.source.n, plan.source.d, plan.summation
    _check_memory(_run_bytes(n, d, n_frames, method, plan.dense), n, summation, n_frames)
    if max_seconds is None:
        return
    per_eval = plan.seconds
    evaluations = EVALUATIONS_PER_STEP[method] * steps + n_frames
    seconds = evaluations * per_eval
    if seconds <= max_seconds:
        return
    advice = ["a smaller t_max", "fewer tokens"]
    if summation == "direct" and plan.fast_seconds is not None:
        advice.insert(0, f"summation='fast' (about {evaluations * plan.fast_seconds:.2g} s here)")
    if method == "rk4":
        advice.append("method='dopri5' or a larger dt within the stability bound")
    advice.append("a larger max_seconds (max_seconds=None: no cap)")
    raise WorkEstimateError(f"simulate would take about {seconds:.2g} s, more than max_seconds = "
                            f"{max_seconds:g}: about {evaluations:.3g} velocity evaluations of "
                            f"{per_eval:.2g} s each ({summation} summation of n = {n} tokens, the "
                            f"cost model fastsum.estimated_seconds). Choose "
                            + ", ".join(advice[:-1]) + f" or {advice[-1]}.", seconds=seconds)


def _speed_slack(p, bound):
    """How far fast summation's ``(1/n) sum_i |v_i|^2`` may be off, per unit time.

    ``|v^_i - v_i| <= delta = bound * M`` with ``M = max_i m_i <= max|b| max phi'`` the row
    mass (``e^|beta| max|b|`` for USA, ``max|b|`` for the linear profile); ``|v_i| <= m_i <= M``, so
    ``| |v^_i|^2 - |v_i|^2 | <= (2 |v_i| + delta) delta <= 3 bound M^2``.
    """
    mass = p.bmax * (1.0 if p.linear else math.exp(abs(p.beta)))
    return 3.0 * bound * mass * mass


IDENTITY_FACTOR = {"rk4": 1.0, "dopri5": 30.0, "heun": 1.0}
"""The factors of the energy identity's relative tolerance (see ``_identity_tolerance``)."""

IDENTITY_CAP = 0.5
"""The energy identity's relative tolerance never exceeds this (see ``_identity_tolerance``)."""


def _identity_tolerance(p, method, h, rtol):
    """The relative tolerance of the energy identity over one frame.

    The stepper integrates ``q' = (1/n) sum_i |v_i|^2`` with its own quadrature on the stages
    (``Advance.speed_integral`` of :mod:`usaav_edu.dynamics.integrate.steppers`), so ``q`` and ``E``
    of the computed state are both as accurate as the method: their difference over a frame is the
    method's error in the direction of the gradient, of the step's order relative to the gain.

    * RK4 (order 4): ``(h rate)^4`` with ``rate`` the contraction rate of :func:`_stiffness`;
      measured ``5e-3 (h rate)^4`` at the default step (USA, beta = 1 and 6) and
      ``3e-2 (h rate)^4`` at ``h rate = 1.4``: a margin of 30 or more.  Near the stability
      bound (``h rate`` up to 1.39 for the linear profile) that is no limit at all, so the
      tolerance is capped at ``IDENTITY_CAP = 0.5``: a frame whose energy gain and speed
      integral differ by half is wrong whatever the step (a step beyond the bound gives
      ``1``: ``E`` rose by 6.8 where the speeds integrate to 6e4).  Within the stability
      bound a correct-looking run can still fail it: the linear profile at ``h rate = 1.38``
      (stable, but its frames off by 0.56) is reported; at ``h rate = 1.1`` it is off by 0.24
      and passes.
    * Heun's method without noise (order 2): ``(h rate)^2``, capped likewise; measured
      ``3e-2 (h rate)^2`` at the default step (USA, beta = 1; ``1e-2`` at beta = 6, frames
      that gain more than 1e-6).  With noise the identity is not checked.
    * Dormand-Prince: ``30 rtol`` (the local errors are kept below ``rtol`` times the state;
      measured ``3 rtol`` at beta = 6 for ``rtol`` from 1e-6 to 1e-3), and ``rtol`` times the
      energy scale besides (``_check_identity``): at ``rtol = 1e-8`` a frame near collapse
      gains little and the errors of its many steps add up to ``1e-9`` of the energy.
    """
    if method != "dopri5":  # RK4 (order 4) or Heun's method without noise (order 2)
        order = 4 if method == "rk4" else 2
        return min(IDENTITY_FACTOR[method] * (h * _stiffness(p)) ** order, IDENTITY_CAP)
    return min(IDENTITY_FACTOR["dopri5"] * rtol, IDENTITY_CAP)


def _check_identity(kernel, p, energies, times, f, method, h, rtol, atol, gain_q, slack,
                    speed_slack):
    """Raise IntegrationError unless ``E(t1) - E(t0) = int (1/n) sum_i |v_i|^2 dt`` on frame ``f``.

    USA is the gradient ascent ``v_i = n grad_{y_i} E`` (in gauge coordinates), so
    ``dE/dt = sum_i <grad_i E, v_i> = (1/n) sum_i |v_i|^2``.  A state off the flow whose energy
    still rises (a step beyond the stability bound, or a stepper that errs) passes the
    monotonicity check of ``_check_energy``; it does not pass this one.  The two sides may
    differ by ``_identity_tolerance`` times the gain, plus the round-off of two energies
    (``2 _energy_tolerance``, widened for Dormand-Prince by ``rtol``, the accuracy asked of the
    state, as in the energy check), plus, with fast summation, the energies' and the speeds'
    error bounds (``slack`` relative to the energy scale and ``speed_slack`` per unit time).
    """
    e_prev, e_now = energies[f - 1], energies[f]
    gain_e = e_now - e_prev
    span = times[f] - times[f - 1]
    accuracy = slack + (rtol if method == "dopri5" else 0.0)
    allowed = (_identity_tolerance(p, method, h, rtol) * max(abs(gain_e), abs(gain_q))
               + 2.0 * _energy_tolerance(p, e_prev, e_now, accuracy) + speed_slack * span)
    gap = abs(gain_e - gain_q)
    if not gap > allowed:  # NaN passes here: a non-finite energy is reported by _check_energy
        return
    what = (f"the energy identity E(t1) - E(t0) = int (1/n) sum_i |v_i|^2 dt fails between "
            f"t = {times[f - 1]:g} and t = {times[f]:g} ({_where(kernel)}): the energy rose by "
            f"{gain_e:.10g}, the speeds integrate to {gain_q:.10g} (off by {gap:.3g}, allowed "
            f"{allowed:.3g}), so the computed state left the flow: the integration is wrong. ")
    if method != "dopri5":
        raise IntegrationError(what + _rk4_advice(p, h, method))
    raise IntegrationError(what + f"Dormand-Prince with rtol = {rtol:g}, atol = {atol:g} is "
                                  f"not accurate enough here; tighten rtol and atol.")



def simulate(model, x0, xi=None, t_max=20.0, dt=None, method="rk4", *, n_frames=101,
             rtol=1e-8, atol=1e-10, dt_max=None, frozen=None, seed=None, progress=False,
             max_steps=DEFAULT_MAX_STEPS, summation="auto", summation_tol=None,
             max_seconds=DEFAULT_MAX_SECONDS, on_failure="raise", tol=None, noise=0.0):
    r"""Integrate USA-AV from ``x0`` and return a :class:`Trajectory`.

    Without noise the tokens follow ``dx_i / dt = v_i``; with ``noise`` :math:`\sigma > 0`
    they follow the Stratonovich equation

    .. math::

        dx_i = v_i\, dt + \sigma P_{x_i} \circ dW_i,
        \qquad P_x v = v - \langle x, v \rangle x,

    with independent standard Brownian motions :math:`W_i` in :math:`\mathbb{R}^d`: without
    interaction each token is a Brownian motion on the sphere with generator
    :math:`(\sigma^2 / 2) \Delta`, so :math:`E \langle x(t), x(0) \rangle
    = e^{-\sigma^2 (d - 1) t / 2}`.  On the circle (``d = 2``) this is
    :math:`d\theta_i = \dots\, dt + \sigma\, dB_i`, driven by one scalar Brownian motion
    per token (the tangent part of :math:`W_i`, the same process in law).  The noise is
    applied in gauge coordinates :math:`y_i = G(\xi_i) x_i`: :math:`G` is orthogonal and
    fixed per token, :math:`G P_x dW = P_y (G\, dW)`, and :math:`G\, dW` is again a standard
    Brownian motion (the variant with unrotated values integrates the contents, and the noise
    is applied to them).  Frozen tokens get no noise.

    Parameters
    ----------
    model : Model
        A model of :mod:`usaav_edu.models` (built-in or user-defined parts).
    x0 : array_like
        ``(n, d)`` unit vectors (not renormalized: a non-unit row is an error).
    xi : array_like or None
        ``(n,)`` labels: positions (float) or prompt ids (int); None for models without labels.
    t_max : float
        Final time, > 0.
    dt : float or None
        RK4 step bound (default :func:`~usaav_edu.particles.solver.default_dt`).  The step used is
        ``t_max / (steps)``, the largest step <= dt that lands on every frame;
        it is recorded in ``Trajectory.dt``.  It must be within RK4's stability bound
        ``2.785 / Lambda`` (``Lambda = 2 (1 + |beta|) e^|beta| max|b|`` for USA,
        ``2 (1 + |beta|)`` for SA, ``2 max|b|`` for the linear profile: ``_spectral_bound``);
        a larger step is refused before the run (:class:`usaav_edu.errors.StepTooLargeError`).
        For dopri5 ``dt`` is the first trial step (at most ``dt_max``).  For heun the same
        rule holds with the bound ``2 / Lambda``.
    method : {"rk4", "dopri5", "heun"}
        A stepper of :data:`usaav_edu.dynamics.integrate.steppers.METHODS`: fixed-step RK4,
        adaptive Dormand-Prince 5(4) (whose accuracy floor near ``rtol`` is under ``rtol``),
        or the stochastic Heun scheme
        (:class:`usaav_edu.dynamics.integrate.steppers.StochasticHeun`: a predictor-corrector
        for the Stratonovich noise, each stage retracted to the spheres; strong order 1/2
        for ``d >= 3``, 1 on the circle, weak order 1; without noise Heun's method of order
        2).  The default stays ``"rk4"``; ``noise > 0`` needs ``method="heun"`` (rk4 and
        dopri5 are refused with a ValueError).
    n_frames : int
        Number of stored frames, equally spaced on [0, t_max], >= 2; their times must be
        strictly increasing normal floating-point numbers (a ``t_max`` of ``5e-324`` is
        refused).
    rtol, atol : float
        dopri5 tolerances.  They bound the local error relative to the state, whose entries
        are of order 1 on the sphere, not to the spread of a cluster: once the tokens
        collapse, the step grows to the stability limit (``h * rate`` about 3.3, the rate of
        ``max_steps`` below), where the controller accepts errors of about ``rtol`` that are
        not contracted away, so a cluster's diameter stops shrinking near ``rtol`` (measured
        2e-9 at ``rtol = 1e-9``, USA with beta = 1; RK4 reaches 1e-15).  ``dt_max`` below
        ``3.3 / rate`` keeps every step inside the stability region, where the local error
        is proportional to the diameter, which then falls to round-off.
    dt_max : float or None
        dopri5 only (with RK4 refused: its step is ``dt``): the largest step, > 0 (None: no
        cap).  ``dt_max = 2 / rate`` takes a collapsed cluster to round-off in a few more
        steps (USA, beta = 1, ``rtol = 1e-9``, ``t_max = 80``: 267 instead of 230).  The
        step estimate of ``max_steps`` counts at least ``t_max / dt_max`` steps.
    frozen : array_like of bool or None
        ``(n,)``: tokens that attend (enter every sum) but never move.
    seed : int or None
        The seed that generated x0, stored in the Trajectory.  With ``noise > 0`` it also
        seeds the Brownian motions, from ``SeedSequence(seed, spawn_key=(1,))`` (a stream
        independent of ``default_rng(seed)``, which may have drawn x0): the same seed
        repeats the run bit for bit.  With ``noise > 0`` and ``seed=None`` a fresh seed is
        drawn from the system's entropy and recorded in ``Trajectory.seed``.
    progress : bool
        Show a progress bar of the simulated time (:mod:`usaav_edu.progress`), updated
        during frames, for runs longer than a second.
    max_steps : int or None
        The most steps the run may take (default ``DEFAULT_MAX_STEPS`` = 10^6; None: no
        cap).  The work is estimated before integrating: RK4 takes exactly
        ``(n_frames - 1) * steps per frame`` steps; for dopri5 the estimate is
        ``n_frames - 1 + t_max * rate / 3.3`` with the rate at which a cluster contracts
        (``e^|beta| max|b|`` for USA, ``1 + |beta|`` for SA): the stable step of a stiff run.
        A run estimated beyond the cap is refused with a ValueError saying what to change;
        a dopri5 run that needs more steps than the cap stops with IntegrationError.
    summation : {"auto", "direct", "fast"}
        How the velocity and the energies are summed.  ``"direct"``: the ``n^2`` pair sums
        with the dense bias.  ``"fast"``: the truncated expansion
        (:class:`usaav_edu.dynamics.fastsum.kernel.FastKernel`), linear in ``n``, with the degree
        chosen so that the velocity's relative error ``max_i |v_hat_i - v_i| / max_i m_i``
        (``m_i`` the row mass ``(1/N_i) sum_j |b_ij| phi'(<y_i, y_j>)``) is at most
        ``summation_tol``;
        no ``n x n`` matrix is built (100,000 tokens run in well under 2 GB).  It applies to
        the built-in biases and profiles with values rotated by the gauge
        (:func:`usaav_edu.dynamics.fastsum.kernel.fast_applies`); elsewhere it is refused with the
        reason.  ``"auto"`` (default): direct where fast does not apply or is estimated no
        faster (:func:`usaav_edu.dynamics.fastsum.cost.estimated_seconds`), fast otherwise; so
        small runs sum directly, exactly as before.
    summation_tol : float or None
        The relative error bound of fast summation, in ``(0, 1)`` (None: 1e-10); checked
        with any ``summation``, read only when the run sums fast.  Fast summation refuses a
        ``summation_tol`` below its rounding floor :data:`usaav_edu.dynamics.fastsum.kernel.TOL_FLOOR`
        (``1e-13``; ``"auto"`` then sums directly), and the recorded ``error_bound`` is at
        least that floor.
    max_seconds : float or None
        The longest the run may be estimated to take (default ``DEFAULT_MAX_SECONDS`` = 3600;
        None: no cap).  The estimate, on every path: velocity evaluations (steps times 4 for
        RK4, 7 for dopri5, plus one per frame) times the cost of one evaluation by the
        summation chosen (:func:`usaav_edu.dynamics.fastsum.cost.estimated_seconds`).  The memory
        (frames ``8 n_frames n d`` bytes, plus ``8 n^2`` for a dense bias with direct
        summation) is estimated too and refused beyond the machine's physical memory, before
        the bias matrix is built.  Each refusal is a ValueError with the estimate and what to
        change.
    on_failure : {"raise", "return"}
        What a run that fails while it runs does (a state that is not finite, a step size
        that underflows, ``max_steps`` used up, an energy that falls): ``"raise"`` (default)
        raises IntegrationError; ``"return"`` returns the frames computed before the failing
        one, with ``status`` ``Status.MAX_STEPS`` or ``Status.FAILED`` and the error's text as
        ``message``.  Refusals before the run (bad input, the work estimate, an RK4 step beyond
        the stability bound) are raised either way.
    tol : float or None
        Deprecated name of ``summation_tol``, accepted for one release with a
        DeprecationWarning; both given: TypeError.
    noise : float
        The noise amplitude :math:`\sigma \ge 0`, finite (default 0: no noise), recorded in
        ``Trajectory.noise``.  Any summation works with it (the field is the plan's).  With
        noise the energy checks below are off: the noisy dynamics is not a gradient ascent,
        and the energy may fall.  The work estimate counts two velocity evaluations per Heun
        step.

    Returns
    -------
    Trajectory
        The frames, energies and step statistics (``steps_accepted``, ``steps_rejected``,
        ``n_rhs``; also ``traj.stats``), the summation used (``summation``; for fast summation
        the expansion's ``degree`` and the velocity's ``error_bound``; also
        ``traj.provenance``), and how the run ended (``status``, ``message``).

    Raises
    ------
    TypeError, ValueError
        For bad input, a run estimated beyond ``max_steps``, ``max_seconds`` or the memory,
        frame times that coincide, or ``summation="fast"`` for a model where fast summation
        does not apply.
    usaav_edu.errors.StepTooLargeError
        Before the run, for an RK4 step beyond the stability bound (both a ValueError and an
        IntegrationError).
    IntegrationError
        When the state becomes non-finite, the adaptive step underflows or exceeds
        ``max_steps``, or the energy falls (with ``on_failure="raise"``).  For every model but the
        ``rotate_values=False`` variant the dynamics raises the energy (USA is its gradient
        ascent, SA a gradient ascent in another metric), so after every frame the energy is
        compared with the previous frame's: a fall beyond round-off
        (``_energy_tolerance``), plus twice the fast energy's error bound with fast
        summation, means the step was unstable.  For USA (every bias and gauge) the
        energy identity ``E(t1) - E(t0) = int (1/n) sum_i |v_i|^2 dt`` is checked too, with
        the speeds integrated by the stepper's own quadrature on its stages
        (``_check_identity``): it sees a wrong state whose energy still rises.  The variant
        is not a gradient flow and is not checked.  Pre-LN (``model.layer_norm == "pre"``)
        integrates the unnormalized tokens ``z`` (dense NumPy, direct summation only;
        ``Trajectory.x`` holds ``z / |z|``, ``Trajectory.radius`` ``|z|``): its energy must
        not fall (a gradient ascent in the metric weighted by the radii), and the identity,
        which does not hold for it, is not checked (:mod:`usaav_edu.dynamics.prenorm`).  A run
        with noise is not checked either, nor are the runs of the general kernel that are not
        gradient flows (projections, causal masks: :mod:`usaav_edu.dynamics.general`).

    References
    ----------
    The book's chapter 3 (the model) and chapter 8 (reproducing the experiments);
    arXiv:2605.30229.

    Examples
    --------
    >>> import usaav_edu as ue
    >>> x0 = ue.sphere.uniform(32, 3, seed=0)
    >>> model = ue.models.usa(beta=1.0)
    >>> traj = ue.simulate(model, x0, t_max=5.0, n_frames=6)
    >>> traj.x.shape, traj.t.tolist()
    ((6, 32, 3), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    >>> traj.status.name, traj.summation
    ('COMPLETED', 'direct')
    >>> traj.energy.round(3).tolist()
    [0.628, 0.722, 1.045, 1.338, 1.359, 1.359]

    The energy rises to its maximum ``e / 2``: the tokens have collapsed to one point.
    With noise (the seed recorded, so that the run can be repeated bit for bit):

    >>> noisy = ue.simulate(model, x0, t_max=1.0, n_frames=2,
    ...                     method="heun", noise=0.5, seed=1)
    >>> noisy.method, noisy.noise, noisy.seed
    ('heun', 0.5, 1)
    """
    model = require_model(model)
    summation_tol = _summation_tol(summation_tol, tol, "simulate")
    summation, tol, reason = summation_args(model, summation, summation_tol)
    s = _settings(t_max, dt, method, n_frames, rtol, atol, seed, progress, max_steps, max_seconds,
                  on_failure, dt_max, noise)
    if s.noise > 0.0 and model.layer_norm == "pre":
        raise ValueError("noise > 0 with layer_norm='pre' is not available: the noise scheme "
                         "moves tokens on the spheres, and pre-LN's tokens leave them")
    _preflight_memory(model, x0, reason, s.n_frames, s.method)
    kernel = model.kernel(x0, xi, frozen, dense_bias=reason is not None)
    p = _rates(model, kernel.facts)
    budget = _budget(p, s, kernel)
    plan = _plan(kernel, p, s, budget, summation, reason, tol)
    run = _frames(plan.sums.kernel, p, s, budget, plan)
    return _result(plan.sums.kernel, s, budget.times, plan, run)


ON_FAILURE = ("raise", "return")
"""The values of ``on_failure``: raise IntegrationError, or return the frames computed so far."""

DEFAULT_SUMMATION_TOL = 1e-10
"""The relative error bound asked of fast summation when ``summation_tol`` is None."""


def _summation_tol(summation_tol, tol, caller):
    """``summation_tol`` checked, in ``(0, 1)``; ``tol`` is its deprecated name (one release).

    Given both, a TypeError names both; given ``tol`` alone, a DeprecationWarning says to use
    ``summation_tol`` (the value is the same) and the messages name ``tol``.
    """
    name, value = "summation_tol", summation_tol
    if tol is not None:
        if summation_tol is not None:
            raise TypeError(f"{caller}() got both summation_tol and tol, its deprecated name; "
                            f"pass summation_tol only")
        warnings.warn(f"{caller}(..., tol=...) is deprecated: the summation tolerance is called "
                      f"summation_tol (tol will be removed in the next release)",
                      DeprecationWarning, stacklevel=3)
        name, value = "tol", tol
    if value is None:
        return DEFAULT_SUMMATION_TOL
    value = v.real_scalar(name, value, minimum=0.0, strict=True)
    if not value < 1.0:
        raise ValueError(f"{name} must be below 1 (a relative error bound), got {value:g}")
    return value


class _Settings(NamedTuple):
    """The checked arguments of :func:`simulate` that say how to integrate."""

    t_max: float
    dt: float
    method: str
    n_frames: int
    rtol: float
    atol: float
    dt_max: float | None
    seed: object
    progress: bool
    max_steps: int
    max_seconds: float
    on_failure: str
    noise: float = 0.0


NOISE_STREAM = 1
"""The spawn key of the Brownian motions' stream, ``SeedSequence(seed, spawn_key=(1,))``, a
stream independent of ``default_rng(seed)``, which may have drawn ``x0``."""


def brownian_rng(seed):
    """The generator of the Brownian increments of a run with the seed ``seed`` (an int)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(
        int(seed), spawn_key=(NOISE_STREAM,))))


def _settings(t_max, dt, method, n_frames, rtol, atol, seed, progress, max_steps, max_seconds,
              on_failure, dt_max=None, noise=0.0):
    """The arguments of :func:`simulate` checked (TypeError, ValueError naming the argument);
    with noise and no seed, a fresh seed (63 bits of the system's entropy) is drawn."""
    t_max = v.real_scalar("t_max", t_max, minimum=0.0, strict=True)
    method = v.choice("method", method, METHODS)
    n_frames = v.integer("n_frames", n_frames, minimum=2)
    if dt is not None:
        dt = v.real_scalar("dt", dt, minimum=0.0, strict=True)
    rtol = v.real_scalar("rtol", rtol, minimum=0.0, strict=True)
    atol = v.real_scalar("atol", atol, minimum=0.0, strict=True)
    if dt_max is not None:
        dt_max = v.real_scalar("dt_max", dt_max, minimum=0.0, strict=True)
        if not integrators.METHODS[method].adaptive:
            raise ValueError(f"dt_max caps the adaptive step of method='dopri5'; RK4's fixed "
                             f"step is dt (got dt_max = {dt_max:g} with method={method!r})")
    if seed is not None and not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int or None, got {type(seed).__name__}")
    if max_steps is not None:
        max_steps = v.integer("max_steps", max_steps, minimum=1)
    if max_seconds is not None:
        max_seconds = v.real_scalar("max_seconds", max_seconds, minimum=0.0, strict=True)
    if not isinstance(progress, (bool, np.bool_)):
        raise TypeError(f"progress must be True or False, got {type(progress).__name__}")
    on_failure = v.choice("on_failure", on_failure, ON_FAILURE)
    noise = v.real_scalar("noise", noise, minimum=0.0)
    if noise > 0.0 and method != "heun":
        raise ValueError(f"noise > 0 needs method='heun' (the stochastic Heun scheme for the "
                         f"Stratonovich noise), got method={method!r}: RK4 and Dormand-Prince "
                         f"integrate ordinary differential equations only")
    seed = None if seed is None else int(seed)
    if noise > 0.0 and seed is None:
        seed = int(np.random.SeedSequence().entropy) % 2 ** 63
    return _Settings(t_max, dt, method, n_frames, rtol, atol, dt_max, seed, bool(progress),
                     max_steps, max_seconds, on_failure, noise)


class _Budget(NamedTuple):
    """The frame times, the first step, the smallest and largest steps and the estimated steps."""

    times: np.ndarray
    h: float
    h_min: float
    steps: float
    h_max: float = math.inf


def _budget(p, s, kernel):
    """The run's steps, estimated before it starts; refused beyond ``max_steps`` or stability.

    RK4 takes exactly ``(n_frames - 1) * steps per frame`` steps of the largest size at most
    ``dt`` that lands on every frame (:func:`_check_rk4_step` refuses one beyond the stability
    bound); Dormand-Prince is estimated by :func:`_dopri5_steps` (with at least ``t_max / dt_max``
    steps when ``dt_max`` caps them; the first step is at most ``dt_max``).  An estimate beyond
    ``max_steps`` (or ``NEVER``) is refused with the message of :func:`_too_long`.
    """
    times = _frame_times(s.t_max, s.n_frames)
    adaptive = integrators.METHODS[s.method].adaptive
    step = _default_step(p) if s.dt is None else s.dt
    if adaptive:
        estimate = _dopri5_steps(p, s.t_max, s.n_frames, s.dt_max)
    else:
        per_frame, estimate = _rk4_steps(s.t_max, s.n_frames, step)
    if estimate > (NEVER if s.max_steps is None else s.max_steps):
        raise ValueError(_too_long(p, s.method, s.t_max, s.n_frames, step, s.dt is not None,
                                   estimate, s.max_steps, s.dt_max))
    if adaptive:
        # steps far below the time scale 1 / L are never needed for accuracy: the local error
        # of a step h is about (h L)^5, so below 1e-8 / L the error test fails only on rounding
        h_max = math.inf if s.dt_max is None else s.dt_max
        return _Budget(times, min(step, h_max), 1e-8 / _lipschitz(p), estimate, h_max)
    h = s.t_max / ((s.n_frames - 1) * int(per_frame))
    _check_rk4_step(p, h, s.dt, s.t_max, s.n_frames, kernel, s.method)
    return _Budget(times, h, h, estimate)


class _Plan(NamedTuple):
    """The run's summation plan and how far the energy identity must allow for fast summation."""

    sums: SummationPlan
    speed_slack: float


def _plan(kernel, p, s, budget, summation, reason, tol):
    """The summation of the run, chosen once (:func:`usaav_edu.particles.plan.summation_plan`).

    The time and memory are estimated (:func:`_check_work`) once the summation is known and
    before a dense bias is built (the plan builds it when its kernel is first asked for).
    """
    plan = summation_plan(kernel, summation, reason, tol)
    _check_work(plan, s.n_frames, s.method, budget.steps, s.max_seconds)
    speed_slack = 0.0 if not plan.is_fast else _speed_slack(p, plan.error_bound)
    return _Plan(plan, speed_slack)


class _Run(NamedTuple):
    """The frames a run computed (in gauge coordinates), their energies and the step statistics."""

    frames: np.ndarray
    energies: np.ndarray
    accepted: int
    rejected: int
    n_rhs: int
    h: float
    status: Status
    message: str
    radius: object = None  # (F, n) radii of a pre-LN run, else None


class _Frames:
    """The frames of a run as the frame loop reaches them, each checked (:func:`_check_frame`).

    ``after_frame`` is the loop's ``on_frame``: it stores and checks frame ``f`` and moves the
    progress bar; a frame that fails the checks keeps its IntegrationError in ``error`` (with
    the frame's index in ``failed``) and stops the loop.
    """

    def __init__(self, kernel, p, s, budget, plan, state, bar):
        self.kernel, self.p, self.s, self.budget, self.plan = kernel, p, s, budget, plan
        self.bar = bar
        self.frames = np.empty((s.n_frames, kernel.n, kernel.d))
        self.energies = np.empty(s.n_frames)
        self.frames[0] = state.T
        self.energies[0] = plan.sums.energy(state)
        pre = kernel.model.layer_norm == "pre"  # the state is z: keep theta = z / |z| and |z|
        self.radius = np.ones((s.n_frames, kernel.n)) if pre else None
        self.h = budget.h
        self.error, self.failed = None, None

    def after_frame(self, f, state, res):
        """Check and keep frame ``f`` (``res`` the stepper's result); True (stop) if it fails."""
        try:
            self.h = _check_frame(self.kernel, self.p, self.s, self.budget, self.plan, res, self.h,
                                  state, self.frames, self.energies, f)
        except IntegrationError as exc:
            self.error, self.failed = exc, f
            return True
        if self.radius is not None:
            theta, self.radius[f] = directions(state)
            self.frames[f] = theta.T
        self.bar.update(self.budget.times[f])
        return False


def _frames(kernel, p, s, budget, plan):
    """Advance the state frame by frame (:func:`usaav_edu.dynamics.integrate.run_frames`),
    checking each frame (:func:`_check_frame`).

    A frame that fails raises IntegrationError, or with ``on_failure="return"`` ends the run:
    the frames before it are returned with the status (``Status.MAX_STEPS`` when Dormand-Prince
    used all ``max_steps``, ``Status.FAILED`` otherwise) and the error's message.  The step
    budget ``max_steps`` is shared by the frames of a Dormand-Prince run.
    """
    stepper = integrators.METHODS[s.method]
    state = (kernel.y0 if kernel.state_in_gauge else np.ascontiguousarray(kernel.x0.T)).copy()
    controller = (stepper.controller(h_min=budget.h_min, h_max=budget.h_max) if stepper.adaptive
                  else None)
    with Progress(s.progress, s.t_max) as bar:
        checked = _Frames(kernel, p, s, budget, plan, state, bar)
        noise = None if s.noise == 0.0 else integrators.BrownianIncrements(
            s.noise, brownian_rng(s.seed), kernel.d, kernel.n,
            None if kernel.frozen is None else ~kernel.frozen)
        control = integrators.Control(s.rtol, s.atol, budget.h_min, s.max_steps,
                                      bar.update if s.progress else None, noise)
        run = run_frames(state, budget.times, budget.h, stepper, plan.sums.field, control, controller,
                         checked.after_frame)
        if run.outcome is not integrators.Outcome.OK and checked.error is None:
            # the stepper's own outcome: _check_frame turns it into the run's IntegrationError
            checked.after_frame(run.frames, state, run.last)
    if checked.error is not None:
        if s.on_failure == "raise":
            raise checked.error
        f = checked.failed
        status = (Status.MAX_STEPS if run.last.outcome is integrators.Outcome.MAX_STEPS
                  else Status.FAILED)
        return _Run(checked.frames[:f], checked.energies[:f], run.accepted, run.rejected,
                    run.n_rhs, checked.h, status, str(checked.error),
                    None if checked.radius is None else checked.radius[:f])
    return _Run(checked.frames, checked.energies, run.accepted, run.rejected, run.n_rhs,
                checked.h, Status.COMPLETED, Status.COMPLETED.message, checked.radius)


def _check_frame(kernel, p, s, budget, plan, res, h, state, frames, energies, f):
    """Store frame ``f`` after the stepper's outcome and the energy checks; the next step size.

    Raises IntegrationError for an outcome other than OK (:func:`_failure`), an energy that
    fell (:func:`_check_energy`, every model with values rotated by the gauge) or, for USA, an
    energy identity that fails (:func:`_check_identity`).  With noise neither energy check
    runs: the noisy dynamics is not a gradient ascent.
    """
    times = budget.times
    if res.outcome is not integrators.Outcome.OK:
        raise IntegrationError(_failure(res, kernel, p, s.method, times[f - 1], times[f],
                                        h, s.t_max,
                                        rtol=s.rtol, atol=s.atol, h_min=budget.h_min,
                                        max_steps=s.max_steps))
    h = res.h
    frames[f] = state.T
    energies[f] = plan.sums.energy(state)
    ascent = kernel.energy_rises and s.noise == 0.0
    if ascent:
        _check_energy(kernel, p, energies, times, f, s.method, h, s.rtol, s.atol, plan.sums.energy_slack)
    # the energy identity holds for USA's gradient ascent in gauge coordinates (not for SA,
    # whose metric weighs each token by its partition function, nor the unrotated variant, nor
    # pre-LN, whose metric weighs each token by its radius: usaav_edu.dynamics.prenorm)
    if ascent and not p.sa and kernel.model.layer_norm == "post":
        _check_identity(kernel, p, energies, times, f, s.method, h, s.rtol, s.atol,
                        res.speed_integral / kernel.n, plan.sums.energy_slack, plan.speed_slack)
    return h


def _result(kernel, s, times, plan, run):
    """The :class:`Trajectory` of a run: its frames mapped back to contents, with provenance.

    Back from gauge coordinates once, a frame at a time in place (no second ``(F, n, d)``
    array: 240 MB at 100,000 tokens and 101 frames); the first frame is exactly the input.
    """
    frames = run.frames
    if kernel.state_in_gauge:
        for f in range(1, len(frames)):
            frames[f] = kernel.contents(frames[f])
    frames[0] = kernel.x0
    adaptive = integrators.METHODS[s.method].adaptive
    return Trajectory(t=times[:len(frames)], x=frames, xi=kernel.xi, energy=run.energies,
                      model=kernel.model, method=s.method, dt=None if adaptive else run.h,
                      rtol=s.rtol if adaptive else None, atol=s.atol if adaptive else None,
                      frozen=kernel.frozen, seed=s.seed, n_rhs=run.n_rhs,
                      steps_accepted=run.accepted, steps_rejected=run.rejected,
                      version=__version__, summation=plan.sums.summation,
                      degree=plan.sums.degree, error_bound=plan.sums.error_bound,
                      status=run.status, message=run.message, radius=run.radius,
                      noise=s.noise)


def _where(kernel):
    return f"model {kernel.model.name}, beta = {float(kernel.model.beta):g}"


_NAMES = {"rk4": "RK4", "heun": "Heun", "dopri5": "Dormand-Prince"}


def _rk4_advice(p, h, method="rk4"):
    """Why a step of size ``h`` of a fixed-step method (RK4, Heun) failed, and what to use."""
    rate = _stiffness(p)
    name, stability = _NAMES[method], FIXED_STABILITY[method]
    other = " or method='dopri5'" if method == "rk4" else ""  # Heun: noise needs Heun
    default = f"dt=None gives {_default_step(p):.3g}"
    if h * rate > stability:
        return (f"{name} with the step {h:.3g} is unstable here: clusters contract at the rate {rate:.3g} and "
                f"{name} needs step * rate below {stability:.2f} (here {h * rate:.3g}). Use a smaller dt "
                f"(below {stability / rate:.2g}; {default}){other}.")
    return f"{name} with the step {h:.3g} is unstable here. Use a smaller dt ({default}){other}."


def _check_energy(kernel, p, energies, times, f, method, h, rtol, atol, slack=0.0):
    """Raise IntegrationError if the energy fell from frame ``f - 1`` to ``f`` beyond round-off.

    ``slack`` widens the relative tolerance of ``_energy_tolerance`` by the error of the
    energies themselves: twice the relative energy bound of fast summation (each of the two
    energies is off by at most that bound times the energy scale), 0 for direct summation.
    """
    e_prev, e_now = energies[f - 1], energies[f]
    allowed = (rtol if method == "dopri5" else 0.0) + slack
    if not e_now < e_prev - _energy_tolerance(p, e_prev, e_now, allowed):
        return
    what = (f"the energy fell from {e_prev:.10g} to {e_now:.10g} between t = {times[f - 1]:g} and "
            f"t = {times[f]:g} ({_where(kernel)}), but the dynamics only raises it: the integration "
            f"is wrong. ")
    if method != "dopri5":
        raise IntegrationError(what + _rk4_advice(p, h, method))
    raise IntegrationError(what + f"Dormand-Prince with rtol = {rtol:g}, atol = {atol:g} accepted "
                                  f"steps too large to be stable (the fall exceeds rtol times the "
                                  f"energy scale); tighten rtol and atol.")


def _failure(res, kernel, p, method, t0, t_end, h, t_max, rtol=None, atol=None, h_min=None,
             max_steps=None):
    """The IntegrationError message for a stepper outcome other than OK (``p`` the run's rates)."""
    O = integrators.Outcome
    if method != "dopri5":
        return (f"{_NAMES[method]} reached a non-finite state between t = {t0:g} and "
                f"t = {t_end:g} ({_where(kernel)}). " + _rk4_advice(p, h, method))
    t, h = res.t, res.h
    where = f"at t = {t:.6g} ({_where(kernel)}, rtol = {rtol:g}, atol = {atol:g})"
    if res.outcome is O.MAX_STEPS:
        return (f"Dormand-Prince used all max_steps = {max_steps} steps and stopped {where}, before "
                f"t_max = {t_max:g}: the run is costlier than estimated. Raise max_steps (None: no cap), "
                f"shorten t_max, or loosen rtol/atol.")
    if res.outcome is O.UNDERFLOW:
        return (f"Dormand-Prince could not meet its tolerances {where}: after rejected steps the step "
                f"underflowed to {h:.3g}, below the smallest meaningful step "
                f"{max(h_min, 4 * integrators.EPS * t):.3g} (1e-8 / L for the Lipschitz estimate "
                f"L = {_lipschitz(p):.3g}, or 4 eps t), where the local error of this smooth "
                f"field is far below rounding error. The tolerances ask for more than double precision "
                f"can give: loosen rtol and atol (the defaults are 1e-8 and 1e-10).")
    if res.outcome is O.NONFINITE_TRIALS:
        return (f"Dormand-Prince found no step with a finite result {where}: every trial step down to "
                f"{h:.3g} gave a non-finite stage or velocity, so the velocity field itself is not finite "
                f"near this state (e^(beta s) overflows for large beta and n).")
    return (f"Dormand-Prince accepted a step to a state that is not finite or has a zero vector {where}; "
            f"tighten rtol/atol.")
