"""How a run's pair sum is computed: the summation plan, chosen once per run.

A :class:`SummationPlan` answers every question about the pair sum of one run of
:func:`usaav_edu.simulate` or :func:`usaav_edu.energy`: direct or fast
summation, why fast summation does not apply (``reason``), the fast kernel with its degree,
rank and error bounds, the estimated seconds of one evaluation (the cost model
:func:`usaav_edu.dynamics.fastsum.cost.estimated_seconds`), the velocity field the stepper
calls and the energy.  :func:`summation_args` checks the arguments and asks
:func:`~usaav_edu.dynamics.fastsum.kernel.fast_applies` once; :func:`summation_plan` chooses:

* ``"direct"``: the pair sums of :mod:`usaav_edu.dynamics.rhs` with the dense bias;
* ``"fast"``: the expansion of :mod:`usaav_edu.dynamics.fastsum`, no ``n x n`` matrix;
* ``"auto"``: direct where fast summation does not apply, where the cost model says it is no
  slower, or where the expansion cannot reach ``tol``; fast otherwise.
"""

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .. import _validate as v
from ..dynamics import energy_gauge, fastsum
from ..dynamics.fastsum.compiled import finish_velocity
from ..dynamics.general import GeneralField
from ..dynamics.integrate import steppers as integrators
from ..dynamics.parts import is_separable
from ..dynamics.prenorm import PreNormField, directions
from ..dynamics.unrotated import UnrotatedValuesField
from ..errors import FastSummationRefused

SUMMATIONS = ("auto", "direct", "fast")
"""The values of ``summation``."""
DEFAULT_TOL = 1e-10
"""The default error bound of fast summation (``tol`` of ``simulate`` and ``energy``)."""


def summation_args(model, summation, tol):
    """``summation`` and ``tol`` checked, and why fast summation does not apply (or None).

    Parameters
    ----------
    model : Model
        The model.
    summation : {"auto", "direct", "fast"}
        The summation asked for.
    tol : float
        The error bound of fast summation, in ``(0, 1)``.

    Returns
    -------
    tuple
        ``(summation, tol, reason)``, ``reason`` the sentence of
        :func:`~usaav_edu.dynamics.fastsum.kernel.fast_applies` (None where it applies),
        asked once per model (:attr:`usaav_edu.models.model.Model.fast_reason`).

    Raises
    ------
    TypeError, ValueError
        Naming the argument; :class:`~usaav_edu.errors.FastSummationRefused` (a ValueError) for
        ``summation="fast"`` where it does not apply, before any work.
    """
    summation = v.choice("summation", summation, SUMMATIONS)
    tol = v.real_scalar("tol", tol, minimum=0.0, strict=True)
    if not tol < 1.0:
        raise ValueError(f"tol must be below 1 (a relative error bound), got {tol:g}")
    reason = model.fast_reason
    if summation == "fast" and reason is not None:
        raise FastSummationRefused(reason)
    return summation, tol, reason


class FastField:
    r"""A :class:`usaav_edu.dynamics.fastsum.kernel.FastKernel` as a stepper's field.

    The steppers call ``field(yt, out)`` and read ``field.mobile`` and ``field.has_frozen``
    (the contract of :class:`usaav_edu.dynamics.integrate.steppers.GaugeField`) to retract only
    the tokens that move.  With a value matrix ``V`` (projections with :math:`Q^T K = c I`,
    :attr:`usaav_edu.models.model.Model.fast_model`) the sums are multiplied by it before the
    projection: :math:`v_i = P_{x_i}(V A_i / N_i)`, :math:`A_i = \sum_j b_{ij}
    \varphi'(c \langle x_i, x_j \rangle) x_j`.
    """

    def __init__(self, fast, mobile, values=None):
        self.fast = fast
        self.values = None if values is None else np.ascontiguousarray(values)
        self.has_frozen = mobile is not None and not bool(np.all(mobile))
        self.mobile = (np.ascontiguousarray(mobile, dtype=np.bool_) if self.has_frozen
                       else np.ones(1, dtype=np.bool_))

    def __call__(self, yt, out):
        if self.values is None:
            return self.fast(yt, out)
        fast, d, n = self.fast, yt.shape[0], yt.shape[1]
        r = fast.sums(yt, need_z=fast.sa)
        r[:d] = self.values @ r[:d]
        if n:
            finish_velocity(yt, r, fast.sa, fast.scale / n, fast.mobile, fast.has_frozen, out)
        return out


def direct_field(kernel):
    """The direct field of a run: the Numba kernel on ``y``; on ``x`` the general kernel
    (projections, masks) or the unrotated variant.

    Pre-LN (``model.layer_norm == "pre"``): :class:`usaav_edu.dynamics.prenorm.PreNormField` on
    the unnormalized tokens (gauge coordinates, or contents for the unrotated variant).
    """
    if kernel.model.layer_norm == "pre":
        return PreNormField(kernel)
    if kernel.attention is not None:
        return GeneralField(kernel)
    if kernel.model.rotate_values:
        return integrators.GaugeField(kernel.params)
    return UnrotatedValuesField(kernel)


def _bias_kind(model):
    """The bias's name in the cost model (``"none"`` for a bias fast summation cannot sum)."""
    structure = model.bias.separable() if is_separable(model.bias) else None
    return structure[0] if structure is not None and structure[0] in fastsum.BIASES else "none"


@dataclass(frozen=True, eq=False)
class SummationPlan:
    """How the pair sum of one run is computed (module docstring).

    Attributes
    ----------
    summation : {"direct", "fast"}
        The summation chosen.
    reason : str or None
        Why fast summation does not apply to the model (None where it applies).
    tol : float
        The error bound asked of fast summation.
    fast : FastKernel or None
        The fast kernel (None for direct summation).
    seconds : float
        The estimated seconds of one evaluation by the summation chosen (the cost model).
    fast_seconds : float or None
        The estimated seconds of one fast evaluation where fast summation applies, else None.
    source : KernelInput
        The run as the model gave it (without the dense bias when fast summation was possible).
    """

    summation: str
    reason: object
    tol: float
    fast: object
    seconds: float
    fast_seconds: object
    source: object

    @property
    def is_fast(self):
        """Whether the run sums fast."""
        return self.fast is not None

    @property
    def dense(self):
        """Whether the run builds an ``n x n`` matrix (direct summation with a bias, or the
        dense weights of pre-LN's NumPy field)."""
        model = self.source.model
        return not self.is_fast and (not getattr(model.bias, "constant", False)
                                     or model.layer_norm == "pre")

    @property
    def degree(self):
        """The expansion's degree ``L`` (None for direct summation)."""
        return None if self.fast is None else int(self.fast.degree)

    @property
    def rank(self):
        """The expansion's number of features ``p`` (None for direct summation)."""
        return None if self.fast is None else int(self.fast.rank)

    @property
    def error_bound(self):
        """The relative error bound of the velocity, never below the rounding floor (None for direct summation)."""
        return None if self.fast is None else max(float(self.fast.bound), fastsum.TOL_FLOOR)

    @property
    def energy_slack(self):
        """How far two energies may differ by summation alone, relative (0 for direct).

        Each is off by at most the fast energy's bound times the energy scale.
        """
        return 0.0 if self.fast is None else 2.0 * max(float(self.fast.energy_bound),
                                                       fastsum.TOL_FLOOR)

    @cached_property
    def kernel(self):
        """The run's :class:`~usaav_edu.models.model.KernelInput`, with the dense bias if direct.

        Built on first use, so that the work estimate is checked before the ``n x n`` matrix.
        """
        return self.source if self.is_fast else self.source.with_dense_bias()

    @cached_property
    def field(self):
        """The velocity field the stepper calls, ``field(state, out)``."""
        if self.is_fast:
            proj = self.source.model.projections
            values = None if proj is None or proj.identity else proj.matrix("V")
            return FastField(self.fast, self.source.mobile, values)
        return direct_field(self.kernel)

    def gauge_energy(self, yt):
        r"""``E_h``, a float, of the ``(d, n)`` gauge coordinates ``yt``.

        With projections summed fast (:math:`Q^T K = c I`): ``c`` times the energy of the model
        at ``beta c``, since :math:`\varphi_\beta(c s) = c\, \varphi_{\beta c}(s)`.
        """
        if self.is_fast:
            proj = self.source.model.projections
            factor = 1.0 if proj is None or proj.identity else proj.fast_scale
            return float(self.fast.energy(yt)) * factor
        if self.kernel.attention is not None:
            return self.field.energy(np.ascontiguousarray(self.kernel.contents(yt.T).T))
        return float(energy_gauge(yt, self.kernel.params))

    def energy(self, state):
        """``E_h``, a float, of the stepper's ``(d, n)`` state (``y``, or ``x`` unrotated or general).

        For Pre-LN the state holds the unnormalized tokens: ``E_h`` of their directions.
        """
        if self.kernel.attention is not None and not self.is_fast:
            return self.field.energy(state)
        if self.source.model.layer_norm == "pre":
            state = directions(state)[0]
        if not self.source.model.rotate_values:
            state = np.ascontiguousarray(self.kernel.to_gauge(state.T).T)
        return self.gauge_energy(state)


def summation_plan(kernel, summation, reason, tol):
    """The :class:`SummationPlan` of a run (checked arguments from :func:`summation_args`).

    ``"auto"`` takes direct summation when fast summation does not apply (``reason``), when
    the cost model says it is no slower (``estimated_seconds("direct") <=
    estimated_seconds("fast")``) or when the expansion cannot reach ``tol`` for this model
    (the kernel refuses it); under ``"fast"`` that refusal is raised.

    Parameters
    ----------
    kernel : KernelInput
        The run (:meth:`usaav_edu.models.model.Model.kernel`).
    summation : {"auto", "direct", "fast"}
    reason : str or None
    tol : float

    Returns
    -------
    SummationPlan

    Raises
    ------
    ValueError
        From the fast kernel under ``summation="fast"`` (``tol`` out of reach).
    """
    model = kernel.model if reason is not None else kernel.model.fast_model
    n, d = kernel.n, kernel.d
    kind = _bias_kind(model)
    floor = max(tol, fastsum.TOL_FLOOR)
    beta = 0.0 if model.linear else float(model.beta)
    direct = fastsum.estimated_seconds("direct", n, d, beta, floor)
    fast_seconds = None if reason is not None else \
        fastsum.estimated_seconds("fast", n, d, beta, floor, bias=kind)
    fast = None
    wanted = summation == "fast" or (summation == "auto" and reason is None
                                     and fastsum.estimated_seconds("direct", n, d, model.beta, tol)
                                     > fastsum.estimated_seconds("fast", n, d, model.beta, tol,
                                                                 bias=kind))
    if wanted:
        try:
            fast = fastsum.build_fast_kernel(model, kernel.xi, d, tol, kernel.mobile)
        except ValueError:
            if summation != "auto":
                raise
    if fast is None:
        return SummationPlan("direct", reason, tol, None, direct, fast_seconds, kernel)
    seconds = fastsum.estimated_seconds("fast", n, d, beta, floor, bias=kind, rank=fast.rank)
    return SummationPlan("fast", reason, tol, fast, seconds, fast_seconds, kernel)
