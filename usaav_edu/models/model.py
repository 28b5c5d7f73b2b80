r"""Models of USA-AV: one kernel family, composed of a gauge, a bias and a profile.

The book introduces tokens with auxiliary variables in chapter 3 and each gauge
and bias in chapters 4 to 7 (arXiv:2605.30229).

A model is the interaction kernel

.. math::

    h((x, \xi), (y, \zeta)) = b(\xi, \zeta)\, \varphi(\langle G(\xi) x, G(\zeta) y \rangle)

(Definition 3.1 (ch3-def-av) of the book) built from three parts, each validating itself when it
is built:

* a gauge ``G: A -> O(d)`` (:mod:`usaav_edu.models.gauges`): :class:`IdentityGauge`,
  :class:`RopeGauge`, :class:`FrameGauge`, or any object with a method
  ``matrices(xi) -> (n, d, d)`` orthogonal matrices;
* a bias ``b`` (:mod:`usaav_edu.models.biases`): :class:`NoBias`, :class:`DistanceBias`,
  :class:`CosineBias`, or any object with a method ``matrix(xi) -> (n, n)``
  symmetric;
* a profile ``phi`` (:mod:`usaav_edu.models.profiles`): :class:`ExpProfile` or
  :class:`LinearProfile`;

and a normalization: USA (divide by n) or SA (divide by the row sum of weights); and the
placement of layer normalization, ``layer_norm``: ``"post"`` (the tokens stay on the sphere,
the book's model) or ``"pre"`` (the residual stream grows; :mod:`usaav_edu.dynamics.prenorm`).
``Model(gauge=..., bias=..., profile=..., normalization="usa")`` takes them by
keyword; the constructors below (:func:`usa`, :func:`rope`, ...) build the
book's models.  A model holds no particle state: :meth:`Model.kernel` turns an
initial state and labels into the gauge coordinates and the kernel's
parameters, once per run.

Every constructor takes ``beta``, the inverse temperature (0 or ``1e-300 <= |beta| <= 700``),
first and its other arguments by keyword, returns a :class:`Model`, and raises TypeError or
ValueError, naming the argument, when an argument is bad.
"""

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import NamedTuple

import numpy as np

from .. import _validate as v
from ..dynamics.fastsum.kernel import fast_applies
from ..dynamics.parts import NO_BIAS, BiasFacts, is_separable
from ..dynamics.rhs import KernelParams, kernel_params
from .biases import (
    CausalBias,
    CosineBias,
    DistanceBias,
    NoBias,
    bias_from_params,
    check_bias,
    is_symmetric,
    matrix_bound_factor,
    matrix_facts,
    user_matrix,
)
from .biases import is_built_in as _builtin_bias
from .gauges import (
    FrameGauge,
    IdentityGauge,
    RopeGauge,
    check_gauge,
    gauge_from_params,
    omegas_tuple,
    user_matrices,
)
from .gauges import check_dimension as _check_gauge_dimension
from .gauges import is_built_in as _builtin_gauge
from .profiles import (
    BETA_MAX,
    ExpProfile,
    LinearProfile,
    check_beta,
    check_profile,
    profile_from_params,
)
from .projections import Projections, check_projections, projections_from_params
from .user_profile import UserProfile

__all__ = [
    "Model", "KernelInput", "IdentityGauge", "RopeGauge", "FrameGauge", "NoBias", "DistanceBias",
    "CosineBias", "CausalBias", "ExpProfile", "LinearProfile", "UserProfile", "Projections",
    "KernelParams",
    "BiasFacts", "AttentionInput", "usa", "sa", "attention", "causal", "rope", "standard_rope", "rope_frequencies", "prefix_gauge", "frames_from_targets",
    "prefix_gauge_from_targets", "distance_bias", "cosine_bias", "require_model",
]

NORMALIZATIONS = ("usa", "sa")
LAYER_NORMS = ("post", "pre")
"""The placements of layer normalization (``Model.layer_norm``)."""
PARAMS_VERSION = 2
"""The layout of :meth:`Model.params`: 2 nests the parts; 1 (flat) is still read."""


@dataclass(frozen=True, eq=False, kw_only=True)
class Model:
    r"""An interaction kernel of USA-AV, composed of parts (module docstring).

    Parameters
    ----------
    gauge : gauge
        Default ``IdentityGauge()``.
    bias : bias
        Default ``NoBias()``.
    profile : ExpProfile or LinearProfile
        Default ``ExpProfile(1.0)``.
    normalization : {"usa", "sa"}
        Divide by ``n`` (USA) or by the row sums of the weights (SA; needs ``b >= 0``).
    rotate_values : bool
        False: the variant that rotates queries and keys but not values (not a gradient
        flow; see :mod:`usaav_edu.dynamics.unrotated`).
    projections : Projections or None
        Query, key and value matrices (:mod:`usaav_edu.models.projections`); None for the
        identity (the tokens themselves).
    layer_norm : {"post", "pre"}
        Where layer normalization sits (Karagodin, Ge, Polyanskiy and Rigollet,
        arXiv:2510.22026).  ``"post"`` (default, the book's model): the tokens move on the
        sphere, :math:`\dot x_i = P_{x_i} A_i(x)`.  ``"pre"``: the unnormalized tokens
        :math:`z_i` (from :math:`z_i(0) = x_i(0)`, radius 1) move by the attention of their
        directions, :math:`\dot z_i = A_i(z / |z|)`, so the directions turn at the speed
        :math:`1 / |z_i|` (:mod:`usaav_edu.dynamics.prenorm`).  :math:`A_i` is the attention
        before the projection (the sum in :func:`usa`, :func:`sa`, ...).
    name : str or None
        A label for messages and plots; None derives one from the parts.

    Raises
    ------
    TypeError
        If a part is not a gauge, bias or profile, or a flag has the wrong type.
    ValueError
        If the normalization is unknown, or SA is combined with the sign-changing cosine bias.

    References
    ----------
    The book's chapter 3 (the model) and chapters 4 to 7 (its gauges and biases);
    arXiv:2605.30229.
    """

    gauge: object = field(default_factory=IdentityGauge)
    bias: object = field(default_factory=NoBias)
    profile: object = field(default_factory=ExpProfile)
    normalization: str = "usa"
    rotate_values: bool = True
    layer_norm: str = "post"
    name: str | None = None
    projections: object = None

    def __post_init__(self):
        put = object.__setattr__
        check_gauge(self.gauge)
        check_bias(self.bias)
        check_profile(self.profile)
        check_projections(self.projections)
        v.choice("normalization", self.normalization, NORMALIZATIONS)
        if self.normalization == "sa" and is_separable(self.bias) and not self.bias.nonnegative:
            raise ValueError(f"normalization 'sa' needs a non-negative bias (the row sums divide), "
                             f"got bias {self.bias.kind!r}")
        if (self.normalization == "sa" and getattr(self.profile, "kind", None) == "user"
                and not self.profile.positive):
            raise ValueError(f"normalization 'sa' needs a profile with phi' > 0 on [-1, 1] (the "
                             f"row sums divide); {self.profile!r} is not positive there")
        if not isinstance(self.rotate_values, bool):
            raise TypeError(f"rotate_values must be True or False, got {v.shown(self.rotate_values)}")
        v.choice("layer_norm", self.layer_norm, LAYER_NORMS)
        if self.layer_norm == "pre" and self.general:
            raise ValueError(f"layer_norm 'pre' is available for the models of the book (symmetric "
                             f"bias, built-in profile, no projections); this model has "
                             f"{self._general_part()}")
        if self.name is None:
            put(self, "name", self._default_name())
        elif not isinstance(self.name, str) or not self.name:
            raise TypeError(f"name must be a non-empty string or None, got {v.shown(self.name)}")

    def _default_name(self):
        g = getattr(self.gauge, "kind", type(self.gauge).__name__)
        b = getattr(self.bias, "kind", type(self.bias).__name__)
        parts = [self.normalization]
        parts += [] if g == "identity" else [g]
        parts += [] if b == "none" else [b]
        parts += [] if self.projections is None or self.projections.identity else ["qkv"]
        parts += [] if self.layer_norm == "post" else ["pre_ln"]
        return "-".join(parts)

    # ------------------------------------------------------------------ read-only summaries
    @property
    def beta(self):
        """The inverse temperature of the profile (0 for the linear profile)."""
        return self.profile.beta

    @property
    def linear(self):
        """True when ``phi'`` is constant (linear profile, or attention at beta = 0)."""
        return self.profile.linear

    @property
    def labels(self):
        """What ``xi`` means: ``"none"``, ``"position"`` or ``"prompt"``."""
        kind = getattr(self.gauge, "labels", "position")
        if kind == "none" and not getattr(self.bias, "constant", False):
            return "position"
        return kind

    @property
    def is_gradient_ascent(self):
        """True when the dynamics is gradient ascent of E_h on the spheres (USA, values
        transported by the gauge, post-LN).

        With projections it is when :attr:`Projections.gradient` holds, the bias is symmetric and
        the gauge is the identity (:mod:`usaav_edu.models.projections`).
        """
        return (self.normalization == "usa" and self.rotate_values and self.layer_norm == "post"
                and self._gradient_structure)

    @property
    def general(self):
        """True when the direct kernel of :mod:`usaav_edu.dynamics.general` sums the run.

        That is for projections other than the identity and for a bias that is not symmetric
        (:class:`CausalBias`); a user-defined bias whose matrix is not symmetric is found out
        per run (:meth:`kernel`).
        """
        projected = self.projections is not None and not self.projections.identity
        return (projected or not getattr(self.bias, "symmetric", True)
                or getattr(self.profile, "kind", None) == "user")

    @cached_property
    def fast_model(self):
        """The model whose pair sums fast summation computes for this one, or None.

        Itself for the book's models; for projections with :math:`Q^T K = c I`
        (:attr:`Projections.fast_scale`, ``c != 0``), the identity gauge, a symmetric built-in
        bias and a built-in profile, the same model without projections at ``beta c`` (``V``
        then multiplies the sums, :class:`usaav_edu.particles.plan.FastField`); None where the
        general kernel sums every pair.
        """
        if not self.general:
            return self
        p, c = self.projections, None
        if (p is not None and not p.identity and getattr(self.bias, "symmetric", True)
                and getattr(self.profile, "kind", None) != "user"
                and getattr(self.gauge, "kind", None) == "identity"):
            c = p.fast_scale
        if not c:
            return None
        if self.linear:
            profile = self.profile
        elif abs(self.beta * c) > BETA_MAX:
            return None
        else:
            profile = ExpProfile(self.beta * c)
        return Model(gauge=self.gauge, bias=self.bias, profile=profile,
                     normalization=self.normalization, name=self.name)

    def _general_part(self):
        """What makes the model need the general kernel, for messages."""
        if getattr(self.profile, "kind", None) == "user":
            return f"the profile of one's own {self.profile!r}"
        if not getattr(self.bias, "symmetric", True):
            return "a causal bias, which is not symmetric"
        return "query, key and value matrices"

    @property
    def _gradient_structure(self):
        """Whether the weights and values have the structure of a gradient (module of projections)."""
        if not getattr(self.bias, "symmetric", True):
            return False
        p = self.projections
        if p is None or p.identity:
            return True
        return p.gradient and getattr(self.gauge, "kind", None) == "identity"

    @cached_property
    def fast_reason(self):
        """Why fast summation does not apply to the model, or None (asked once per model).

        :func:`usaav_edu.dynamics.fastsum.kernel.fast_applies`; the model is immutable, so
        the answer is kept.  Projections and biases that are not symmetric are summed directly.
        """
        fast = self.fast_model
        if fast is not None:
            return fast_applies(fast)
        if self.general:
            what = self._general_part()
            return (f"model {self.name!r} has {what}: it is summed directly, every pair "
                    f"(usaav_edu.dynamics.general)")
        return fast_applies(self)

    @property
    def user_parts(self):
        """The names of the parts that are not built in (``"gauge"``, ``"bias"``)."""
        parts = (("gauge", _builtin_gauge(self.gauge)), ("bias", _builtin_bias(self.bias)),
                 ("profile", getattr(self.profile, "kind", None) != "user"))
        return tuple(name for name, built_in in parts if not built_in)

    def phi(self, s):
        """The profile ``phi(s)``.

        Parameters
        ----------
        s : array_like
            Inner products.

        Returns
        -------
        ndarray
        """
        return self.profile.phi(s)

    def dphi(self, s):
        """The derivative ``phi'(s)``, taking and giving arrays as :meth:`phi` does."""
        return self.profile.dphi(s)

    # ------------------------------------------------------------------ checks
    def check_dimension(self, d, name="x0"):
        """Raise ValueError if the model cannot act on S^{d-1}, the sphere of the argument ``name``.

        Parameters
        ----------
        d : int
            The ambient dimension.
        name : str
            The argument named in the message.

        Raises
        ------
        ValueError
            If the gauge's dimension differs from ``d``.
        """
        if _builtin_gauge(self.gauge):
            self.gauge.check_dimension(d, name, self.name)
        else:
            _check_gauge_dimension(getattr(self.gauge, "d", None), d, name, self.name)
        if self.projections is not None and self.projections.d != d:
            raise ValueError(f"{name} must be points on S^{self.projections.d - 1} (d = "
                             f"{self.projections.d}) for model {self.name!r}, whose projections "
                             f"are {self.projections.d} x {self.projections.d}; got d = {d}")

    def check_labels(self, xi, n):
        """Return ``xi`` validated for ``n`` tokens (a copy as float or int array).

        Parameters
        ----------
        xi : array_like or None
            ``(n,)`` positions (float) or prompt ids (int); None for a model without labels.
        n : int
            The number of tokens.

        Returns
        -------
        ndarray
            ``zeros(n)`` for None; int64 prompt ids; float64 positions.

        Raises
        ------
        TypeError, ValueError
            If ``xi`` is missing, of the wrong kind or shape, out of range, or makes a rotation
            angle or a bias argument overflow.
        """
        if xi is None:
            if self.labels != "none":
                raise ValueError(f"xi must be given for model {self.name!r} ({self.labels} labels)")
            return np.zeros(n)
        if self.labels == "prompt":
            arr = np.asarray(xi)
            if not np.issubdtype(arr.dtype, np.integer) or arr.dtype == bool:
                raise TypeError(f"xi must be integer prompt ids for model {self.name!r}, got dtype "
                                f"{arr.dtype}")
            if arr.shape != (n,):
                raise ValueError(f"xi must have shape ({n},) (one label per token), got {arr.shape}")
            k = self.gauge.frames.shape[0]
            if arr.size and (arr.min() < 0 or arr.max() >= k):
                raise ValueError(f"xi must be prompt ids in 0..{k - 1}, got values in "
                                 f"[{arr.min()}, {arr.max()}]")
            return arr.astype(np.int64)
        arr = v.float_array("xi", xi, ndim=1)
        if arr.shape != (n,):
            raise ValueError(f"xi must have shape ({n},) (one label per token), got {arr.shape}")
        for part in (self.gauge, self.bias):
            check = getattr(part, "check_labels", None)
            if check is not None and (_builtin_gauge(part) or _builtin_bias(part)):
                check(arr)
        return arr

    # ------------------------------------------------------------------ gauge
    def gauge_matrices(self, xi, d):
        """``G(xi_i)`` as an ``(n, d, d)`` array for tokens on S^{d-1}.

        Parameters
        ----------
        xi : ndarray
            Checked labels (:meth:`check_labels`).
        d : int
            The dimension.

        Returns
        -------
        ndarray

        Raises
        ------
        ValueError
            If a user gauge's matrices have the wrong shape, are not finite or not orthogonal.
        """
        if _builtin_gauge(self.gauge):
            return self.gauge.matrices(xi, d)
        return user_matrices(self.gauge, np.asarray(xi), d)

    def to_gauge(self, x, xi):
        """Gauge coordinates ``y_i = G(xi_i) x_i``.

        Parameters
        ----------
        x : array_like
            ``(..., n, d)`` contents.
        xi : array_like
            ``(n,)`` checked labels.

        Returns
        -------
        ndarray
            ``(..., n, d)`` gauge coordinates.

        References
        ----------
        Theorem 4.1 (ch4-thm-conjugacy) of the book: in these coordinates every model of the
        family is plain USA with weights ``b``.
        """
        return self._apply(x, xi, inverse=False)

    def from_gauge(self, y, xi):
        """Content coordinates ``x_i = G(xi_i)^T y_i``: the inverse of :meth:`to_gauge`.

        Parameters
        ----------
        y : array_like
            ``(..., n, d)`` gauge coordinates.
        xi : array_like
            As in :meth:`to_gauge`.

        Returns
        -------
        ndarray
            ``(..., n, d)`` contents.
        """
        return self._apply(y, xi, inverse=True)

    def _apply(self, x, xi, inverse):
        x = np.asarray(x, dtype=np.float64)
        if _builtin_gauge(self.gauge):
            return self.gauge.apply(x, xi, inverse)
        return apply_matrices(self.gauge_matrices(xi, x.shape[-1]), x, inverse)

    # ------------------------------------------------------------------ bias
    def bias_matrix(self, xi):
        """The ``(n, n)`` matrix ``b(xi_i, xi_j)``, or None for ``b = 1``.

        Parameters
        ----------
        xi : array_like
            ``(n,)`` checked labels.

        Returns
        -------
        ndarray or None

        Raises
        ------
        ValueError
            If a user bias's matrix has the wrong shape, is not finite or not symmetric.
        """
        if getattr(self.bias, "constant", False):
            return None
        if _builtin_bias(self.bias):
            return self.bias.matrix(xi)
        b = user_matrix(self.bias, np.asarray(xi, dtype=np.float64), symmetric=False)
        return 0.5 * (b + b.T) if is_symmetric(b) else b

    def bound_factor(self, xi):
        """``mean(B)`` if ``B >= 0``, else ``lambda_max(B) / n`` (the energy bound's bias factor).

        A bias known by its formula (:class:`usaav_edu.dynamics.parts.SeparableBias`, every
        built-in bias) gives it without an ``n x n`` matrix (its ``bound_factor``: for the
        cosine bias ``O(n log n)``); any other bias from its matrix.

        Parameters
        ----------
        xi : array_like
            As in :meth:`bias_matrix`.

        Returns
        -------
        float
        """
        if is_separable(self.bias):
            return self.bias.bound_factor(xi)
        return matrix_bound_factor(self.bias_matrix(xi))

    def bias_facts(self, xi, matrix=None):
        """What the solver needs to know of the bias (:class:`BiasFacts`), without ``n x n``.

        From ``matrix`` when it is given (``max |b_ij|`` and the sign test read its entries);
        otherwise from the bias's formula (its ``facts``, in ``O(n log n)`` time and ``O(n)``
        memory for the built-in biases: every one is 1 on the diagonal and at most 1 in
        absolute value elsewhere, and the cosine bias tests its signs by the arc its angles
        lie in, :meth:`usaav_edu.models.biases.CosineBias.has_negative`).

        A bias that is not a :class:`usaav_edu.dynamics.parts.SeparableBias` needs its matrix
        (built when ``matrix`` is None).

        Parameters
        ----------
        xi : ndarray
            ``(n,)`` checked labels (:meth:`check_labels`), ``n >= 1``.
        matrix : ndarray or None
            The ``(n, n)`` bias matrix when it is at hand (None for ``b = 1`` is not meant
            here: pass nothing instead).

        Returns
        -------
        BiasFacts
        """
        if matrix is not None:
            return matrix_facts(matrix)
        if is_separable(self.bias):
            return self.bias.facts(xi)
        return self.bias_facts(xi, self.bias_matrix(xi))

    # ------------------------------------------------------------------ the one consultation
    def kernel(self, x0, xi=None, frozen=None, *, dense_bias=True):
        """Everything a run needs, computed once: labels, gauge coordinates, kernel parameters.

        Parameters
        ----------
        x0 : array_like
            ``(n, d)`` unit vectors (not renormalized).
        xi : array_like or None
            ``(n,)`` labels (see :meth:`check_labels`).
        frozen : array_like of bool or None
            ``(n,)``: tokens that attend but never move.
        dense_bias : bool
            True (the default): build the ``(n, n)`` bias matrix and the direct kernel's
            :class:`KernelParams`.  False: build neither (the run sums by expansion,
            :mod:`usaav_edu.dynamics.fastsum`, and 100,000 tokens would need 80 GB for the
            matrix); ``params`` is then None and the bias is described by
            :meth:`bias_facts` only.  Only a bias known by its formula allows False
            (:class:`usaav_edu.dynamics.parts.SeparableBias`, every built-in bias).

        Returns
        -------
        KernelInput

        Raises
        ------
        TypeError, ValueError
            For bad input (naming the argument or the part), or ``dense_bias=False`` with a
            user-defined bias.
        """
        if not isinstance(dense_bias, (bool, np.bool_)):
            raise TypeError(f"dense_bias must be True or False, got {dense_bias!r}")
        if not dense_bias and not is_separable(self.bias):
            raise ValueError(f"dense_bias=False needs a built-in bias; model {self.name!r} has "
                             f"the user-defined bias {self.bias!r}, given by its matrix")
        x = v.points_on_sphere("x0", x0)
        n, d = x.shape
        self.check_dimension(d)
        xi = self.check_labels(xi, n)
        frozen_mask = None
        if frozen is not None:
            fz = np.asarray(frozen)
            if fz.dtype != bool or fz.shape != (n,):
                raise ValueError(f"frozen must be a boolean array of shape ({n},), got dtype "
                                 f"{fz.dtype}, shape {fz.shape}")
            if fz.any():
                frozen_mask = fz.copy()
        general, user_bias = self._general_input(xi, frozen_mask)
        if general is not None:
            params, facts, dense_bias = general.params, general.facts, True
        elif dense_bias:
            params, facts = self._dense_params(xi, frozen_mask, user_bias)
        else:
            params, facts = None, self.bias_facts(xi)
        g = None if _builtin_gauge(self.gauge) else self.gauge_matrices(xi, d)
        y = self.to_gauge(x, xi) if g is None else apply_matrices(g, x, False)
        return KernelInput(model=self, x0=x, xi=xi, y0=np.ascontiguousarray(y.T), params=params,
                           frozen=frozen_mask, matrices=g, facts=facts, dense_bias=bool(dense_bias),
                           attention=general)

    def _general_input(self, xi, frozen_mask):
        """``(AttentionInput or None, the user bias's matrix or None)`` of a run.

        A user-defined bias is asked for its matrix here, once: one that is not symmetric
        takes the general kernel (and the run's energy is not checked); a symmetric one is
        symmetrized to rounding and handed on to the symmetric kernel.
        """
        user_bias = None
        if not self.general:
            if is_separable(self.bias) or getattr(self.bias, "constant", False):
                return None, None
            user_bias = user_matrix(self.bias, np.asarray(xi, dtype=np.float64),
                                    symmetric=False)
            if is_symmetric(user_bias):
                return None, 0.5 * (user_bias + user_bias.T)
            if self.layer_norm == "pre":
                raise ValueError(f"layer_norm 'pre' needs a symmetric bias; the matrix of bias "
                                 f"{self.bias!r} is not symmetric")
        mobile = None if frozen_mask is None else ~frozen_mask
        if self.normalization == "sa" and user_bias is not None and np.any(user_bias < 0.0):
            raise ValueError(f"normalization 'sa' needs a non-negative bias (the row sums divide); "
                             f"bias {self.bias!r} has negative entries")
        params = kernel_params(None, self.beta, self.linear, self.normalization == "sa", mobile)
        if user_bias is not None:
            facts, causal = matrix_facts(user_bias), False
        elif getattr(self.bias, "constant", False):
            facts, causal = NO_BIAS, False
        else:
            facts, causal = self.bias_facts(xi), self.bias.kind == "causal"
        return AttentionInput(params=params, facts=facts, bias=user_bias, causal=causal,
                              lam=float(self.bias.lam) if causal else 0.0,
                              gradient=self._gradient_structure and user_bias is None), None

    def _dense_params(self, xi, frozen_mask, bias=None):
        """The direct kernel's :class:`KernelParams` (with the dense bias) and the bias facts.

        ``bias``: the user bias's checked matrix when it is at hand (else built here).
        """
        bias = self.bias_matrix(xi) if bias is None else bias
        if bias is not None and self.normalization == "sa" and np.any(bias < 0.0):
            raise ValueError(f"normalization 'sa' needs a non-negative bias (the row sums divide); "
                             f"bias {self.bias!r} has negative entries")
        mobile = None if frozen_mask is None else ~frozen_mask
        params = kernel_params(bias, self.beta, self.linear, self.normalization == "sa", mobile)
        facts = NO_BIAS if bias is None else self.bias_facts(xi, bias)
        return params, facts

    # ------------------------------------------------------------------ provenance
    def params(self):
        """A JSON-serializable description from which :meth:`from_params` rebuilds the model.

        Returns
        -------
        dict
            ``{"version": 2, "name", "gauge": {...}, "bias": {...}, "profile": {...},
            "normalization", "rotate_values"}``, each part as ``{"kind": ..., its parameters}``,
            and ``"layer_norm": "pre"`` for a pre-LN model (absent: post-LN, as in every file
            written before the placement was recorded).

        Raises
        ------
        TypeError
            Naming the part, if the model has a user-defined gauge or bias (it has no
            description that a file could hold).
        """
        for part in self.user_parts:
            raise TypeError(f"model {self.name!r} has a user-defined {part} "
                            f"({getattr(self, part)!r}), which cannot be saved: only the built-in "
                            f"parts of usaav_edu.models.gauges and usaav_edu.models.biases have parameters")
        out = {"version": PARAMS_VERSION, "name": self.name, "gauge": self.gauge.params(),
               "bias": self.bias.params(), "profile": self.profile.params(),
               "normalization": self.normalization, "rotate_values": self.rotate_values}
        if self.projections is not None:
            out["projections"] = self.projections.params()
        return out if self.layer_norm == "post" else out | {"layer_norm": self.layer_norm}

    @classmethod
    def from_params(cls, params):
        """Inverse of :meth:`params` (also accepts its JSON text and the flat layout of version 1).

        Parameters
        ----------
        params : dict or str
            The output of :meth:`params`, or of the flat ``params`` of earlier versions.

        Returns
        -------
        Model
            Rebuilt through the parts' own checks (frames orthogonal, frequencies finite,
            ``lam >= 0``, the rules on ``beta``).

        Raises
        ------
        TypeError, ValueError
            If a key is missing or unknown (a parameter this version does not know could
            change the dynamics) or a value is refused by a part.
        """
        if isinstance(params, str):
            try:
                params = json.loads(params)
            except json.JSONDecodeError as exc:
                raise ValueError(f"params is not valid JSON: {exc}") from None
        if not isinstance(params, Mapping):
            raise TypeError(f"params must be a mapping (the output of Model.params()), got "
                            f"{type(params).__name__}")
        p = dict(params)
        if "version" not in p:
            return _from_flat_params(p)
        _keys(p, PARAM_KEYS, "params", optional=("projections", "layer_norm"))
        if p["version"] != PARAMS_VERSION:
            raise ValueError(f"params['version'] must be {PARAMS_VERSION}, got {p['version']!r}")
        parts = {}
        for key, build in (("gauge", gauge_from_params), ("bias", bias_from_params),
                           ("profile", profile_from_params)):
            if not isinstance(p[key], Mapping):
                raise TypeError(f"params['{key}'] must be a mapping, got {type(p[key]).__name__}")
            parts[key] = build(dict(p[key]))
        projections = p.get("projections")
        if projections is not None:
            projections = projections_from_params(projections)
        return cls(name=p["name"], normalization=p["normalization"],
                   rotate_values=p["rotate_values"], projections=projections,
                   layer_norm=p.get("layer_norm", "post"), **parts)


PARAM_KEYS = frozenset(("version", "name", "gauge", "bias", "profile", "normalization",
                        "rotate_values"))
FLAT_PARAM_KEYS = frozenset(("name", "beta", "profile", "normalization", "gauge", "omegas", "bias",
                             "lam", "omega", "rotate_values"))
"""The keys of the flat layout of version 1 (``frames`` too, for the frames gauge)."""


def _keys(p, keys, what, optional=()):
    missing = sorted(keys - set(p))
    unknown = sorted(repr(k) for k in set(p) - keys - set(optional))
    if missing:
        raise ValueError(f"{what} lacks the keys {missing}")
    if unknown:
        raise ValueError(f"{what} has unknown keys {', '.join(unknown)} (written by a newer "
                         f"version?)")


def _from_flat_params(p):
    """A model from the flat layout of version 1 (``{"gauge": "rope", "omegas": [...], ...}``)."""
    _keys(p, FLAT_PARAM_KEYS, "params", optional=("frames",))
    gauge = v.choice("gauge", p["gauge"], ("identity", "rope", "frames"))
    bias = v.choice("bias", p["bias"], ("none", "distance", "cosine"))
    profile = v.choice("profile", p["profile"], ("exp", "linear"))
    beta = check_beta(p["beta"])
    if not isinstance(p["omegas"], (list, tuple)):
        raise TypeError(f"params['omegas'] must be a list of frequencies, got "
                        f"{type(p['omegas']).__name__}")
    omegas = omegas_tuple(p["omegas"])
    if gauge != "rope" and omegas:
        raise ValueError(f"omegas must be empty unless gauge is 'rope' (gauge {gauge!r}), "
                         f"got {omegas}")
    frames = p.get("frames")
    if gauge != "frames" and frames is not None:
        raise ValueError(f"frames must be None unless gauge is 'frames' (gauge {gauge!r})")
    lam = v.real_scalar("lam", p["lam"], minimum=0.0)
    if bias != "distance" and lam != 0.0:
        raise ValueError(f"lam must be 0 unless bias is 'distance' (bias {bias!r}), got {lam}")
    omega = v.real_scalar("omega", p["omega"])
    if bias != "cosine" and omega != 0.0:
        raise ValueError(f"omega must be 0 unless bias is 'cosine' (bias {bias!r}), got {omega}")
    if gauge == "rope":
        g = RopeGauge(omegas)
    elif gauge == "frames":
        if frames is None:
            raise ValueError("frames must be given for the frames gauge")
        g = FrameGauge(v.float_array("frames", frames, ndim=3))
    else:
        g = IdentityGauge()
    b = {"none": NoBias, "distance": lambda: DistanceBias(lam), "cosine": lambda: CosineBias(omega)}
    prof = ExpProfile(beta) if profile == "exp" else LinearProfile()
    return Model(gauge=g, bias=b[bias](), profile=prof, normalization=p["normalization"],
                 rotate_values=p["rotate_values"], name=p["name"])


def apply_matrices(g, x, inverse):
    """``G_i x_i`` (or ``G_i^T x_i``) for ``(n, d, d)`` matrices and ``x`` of shape ``(..., n, d)``.

    Parameters
    ----------
    g : ndarray
        ``(n, d, d)``.
    x : ndarray
        ``(..., n, d)``.
    inverse : bool
        Apply the transposes.

    Returns
    -------
    ndarray
    """
    sub = "nji,...nj->...ni" if inverse else "nij,...nj->...ni"
    return np.einsum(sub, g, np.asarray(x, dtype=np.float64))


class AttentionInput(NamedTuple):
    """What a run of the general kernel (:mod:`usaav_edu.dynamics.general`) needs besides the model.

    Attributes
    ----------
    params : KernelParams
        Beta, the profile, the normalization and the mobile tokens (no bias matrix).
    facts : BiasFacts
        ``max |b|`` and the sign of the bias.
    bias : ndarray or None
        A user bias's ``(n, n)`` matrix that is not symmetric (row ``i`` the query), or None.
    causal : bool
        Token ``i`` attends to the tokens with ``xi_j <= xi_i`` only.
    lam : float
        The ALiBi decay of the causal mask (0 without).
    gradient : bool
        Whether the run is a gradient flow of its energy (:attr:`Model.is_gradient_ascent`
        for USA; SA likewise).
    """

    params: KernelParams
    facts: BiasFacts
    bias: object
    causal: bool
    lam: float
    gradient: bool


@dataclass(frozen=True, eq=False)
class KernelInput:
    """What :meth:`Model.kernel` hands to the solver: the run in the kernel's terms.

    Attributes
    ----------
    model : Model
        The model (for messages and the Trajectory).
    x0 : ndarray
        ``(n, d)`` the checked initial contents.
    xi : ndarray
        ``(n,)`` the checked labels.
    y0 : ndarray
        ``(d, n)`` contiguous gauge coordinates ``G(xi_i) x0_i``, the kernel's state.
    params : KernelParams or None
        Bias matrix, beta, flags of the direct velocity field; None when the input was built
        without the dense bias (``dense_bias=False``).
    frozen : ndarray or None
        ``(n,)`` bool, or None when no token is frozen.
    matrices : ndarray or None
        ``(n, d, d)`` gauge matrices of a user gauge (None for the built-in gauges, which
        rotate faster on their own).
    facts : BiasFacts or None
        ``max |b|`` and whether some ``b_ij < 0`` (:meth:`Model.bias_facts`); None only for
        an input built by hand, then read from ``params``.
    dense_bias : bool
        Whether ``params`` holds the dense bias (see :meth:`with_dense_bias`).
    attention : AttentionInput or None
        For a run of the general kernel (:attr:`Model.general`, or a user bias that is not
        symmetric): its bias and mask; None otherwise.
    """

    model: object
    x0: np.ndarray
    xi: np.ndarray
    y0: np.ndarray
    params: KernelParams
    frozen: np.ndarray | None = None
    matrices: np.ndarray | None = None
    facts: "BiasFacts | None" = None
    dense_bias: bool = True
    attention: "AttentionInput | None" = None

    def __post_init__(self):
        if self.facts is None and self.params is not None:
            p = self.params
            facts = matrix_facts(p.bias) if p.has_bias else NO_BIAS
            object.__setattr__(self, "facts", facts)

    @property
    def state_in_gauge(self):
        """Whether the solver's state is the gauge coordinates ``y`` (else the contents ``x``)."""
        return self.attention is None and self.model.rotate_values

    @property
    def energy_rises(self):
        """Whether the run is a gradient ascent whose energy the solver checks after each frame.

        Every model with values transported by the gauge, except the general kernel's runs that
        are not gradient flows (:attr:`AttentionInput.gradient`).
        """
        if self.attention is not None:
            return self.attention.gradient
        return self.model.rotate_values

    @property
    def mobile(self):
        """``(n,)`` bool of the tokens that move, or None when all move."""
        return None if self.frozen is None else ~self.frozen

    def with_dense_bias(self):
        """This input with the dense bias and the direct kernel's parameters.

        Itself if it has them already.

        Returns
        -------
        KernelInput
            ``params`` built from the ``(n, n)`` bias matrix, ``facts`` read from it.

        Raises
        ------
        ValueError
            If the SA normalization meets a bias with negative entries.
        """
        if self.dense_bias:
            return self
        params, facts = self.model._dense_params(self.xi, self.frozen)
        return replace(self, params=params, facts=facts, dense_bias=True)

    @property
    def n(self):
        """Number of tokens."""
        return self.x0.shape[0]

    @property
    def d(self):
        """Ambient dimension."""
        return self.x0.shape[1]

    @property
    def bias(self):
        """The ``(n, n)`` bias matrix, or None for ``b = 1``.

        Raises
        ------
        ValueError
            If the input was built without the dense bias (``dense_bias=False``).
        """
        if self.params is None:
            raise ValueError("this kernel input was built with dense_bias=False: it holds no "
                             "bias matrix (see KernelInput.with_dense_bias)")
        return self.params.bias if self.params.has_bias else None

    def to_gauge(self, x):
        """``G(xi_i) x_i``.

        Parameters
        ----------
        x : ndarray
            ``(..., n, d)`` contents.

        Returns
        -------
        ndarray
            ``(..., n, d)`` gauge coordinates.
        """
        return self._apply(x, inverse=False)

    def contents(self, y):
        """``G(xi_i)^T y_i``: back from gauge coordinates, the inverse of :meth:`to_gauge`.

        Parameters
        ----------
        y : ndarray
            ``(..., n, d)`` gauge coordinates.

        Returns
        -------
        ndarray
            ``(..., n, d)`` contents.
        """
        return self._apply(y, inverse=True)

    def _apply(self, x, inverse):
        if self.matrices is None:
            to_or_from = self.model.from_gauge if inverse else self.model.to_gauge
            return to_or_from(x, self.xi)
        return apply_matrices(self.matrices, x, inverse)


# ---------------------------------------------------------------------- constructors
def require_model(model, name="model"):
    """``model`` itself if it is a :class:`Model`.

    Parameters
    ----------
    model : object
    name : str
        The argument named in the message.

    Returns
    -------
    Model

    Raises
    ------
    TypeError
        Naming ``name``, otherwise.
    """
    if not isinstance(model, Model):
        raise TypeError(f"{name} must be a usaav_edu Model (see usaav_edu.models), got "
                        f"{type(model).__name__}")
    return model


def _ln_name(name, layer_norm):
    """A constructor's model name, with ``-pre_ln`` for pre-LN (``layer_norm`` checked)."""
    return name if v.choice("layer_norm", layer_norm, LAYER_NORMS) == "post" else name + "-pre_ln"


def _profile(beta, profile):
    v.choice("profile", profile, ("exp", "linear"))
    beta = check_beta(beta)
    return ExpProfile(beta) if profile == "exp" else LinearProfile()


@v.old_positional_order("beta", "profile")
def usa(beta=1.0, *, profile="exp", layer_norm="post"):
    r"""Unnormalized self-attention (USA): the identity gauge, no bias, divided by n.

    With the exponential profile the tokens move by

    .. math::

        \dot x_i = P_{x_i}\Big(\frac{1}{n} \sum_{j=1}^n e^{\beta \langle x_i, x_j \rangle} x_j\Big),
        \qquad P_x = I - x x^\top,

    the gradient ascent of :math:`E_\beta(x) = \frac{1}{2 \beta n^2} \sum_{i,j}
    e^{\beta \langle x_i, x_j \rangle}`; the linear profile replaces :math:`e^{\beta s}` by
    :math:`s`.

    Parameters
    ----------
    beta : float
        Inverse temperature, 0 or ``1e-300 <= |beta| <= 700``.
    profile : {"exp", "linear"}
        The profile (keyword only; by position it is deprecated).
    layer_norm : {"post", "pre"}
        Where layer normalization sits (keyword; ``Model.layer_norm``): ``"pre"`` adds
        ``-pre_ln`` to the name.

    Returns
    -------
    Model

    Examples
    --------
    >>> import usaav_edu as ue
    >>> m = ue.models.usa(beta=2.0)
    >>> m.name, m.beta, m.normalization
    ('usa', 2.0, 'usa')
    >>> m.profile
    ExpProfile(beta=2.0)
    """
    return Model(profile=_profile(beta, profile), layer_norm=layer_norm,
                 name=_ln_name("usa", layer_norm))


def sa(beta=1.0, *, layer_norm="post"):
    r"""Self-attention (SA): the identity gauge, no bias, divided by the row sum of weights.

    .. math::

        \dot x_i = P_{x_i}\Big(\frac{\sum_j e^{\beta \langle x_i, x_j \rangle} x_j}
        {\sum_k e^{\beta \langle x_i, x_k \rangle}}\Big).

    Parameters
    ----------
    beta : float
        Inverse temperature, as in :func:`usa`.
    layer_norm : {"post", "pre"}
        Where layer normalization sits (keyword; ``Model.layer_norm``): ``"pre"`` adds
        ``-pre_ln`` to the name.

    Returns
    -------
    Model
    """
    return Model(profile=ExpProfile(beta), normalization="sa", layer_norm=layer_norm,
                 name=_ln_name("sa", layer_norm))


def rope_frequencies(d, base=10000.0):
    """Standard RoPE frequencies ``omega_k = base^{-2k/d}``, k = 0 .. d//2 - 1.

    Parameters
    ----------
    d : int
        Dimension, >= 2.
    base : float
        Base, > 0.

    Returns
    -------
    tuple of float

    Raises
    ------
    TypeError, ValueError
        For a bad ``d`` or ``base``.
    """
    d = v.integer("d", d, minimum=2)
    base = v.real_scalar("base", base, minimum=0.0, strict=True)
    return tuple(float(base ** (-2.0 * k / d)) for k in range(d // 2))


@v.old_positional_order("beta", "omegas", "d", "profile", "rotate_values")
def rope(beta=1.0, omegas=(1.0,), d=3, *, profile="exp", rotate_values=True,
         layer_norm="post"):
    r"""The rotary gauge (RoPE): each token is rotated by an angle proportional to its position.

    .. math::

        G(\xi) = e^{\xi \Omega}, \qquad
        \Omega = \operatorname{blockdiag}(\omega_1 J, \omega_2 J, \dots), \qquad
        J = \begin{pmatrix} 0 & -1 \\ 1 & 0 \end{pmatrix},

    so the plane :math:`(e_{2k-1}, e_{2k})` turns by :math:`\omega_k \xi`; no bias, divided by n.

    Parameters
    ----------
    beta : float
        Inverse temperature.
    omegas : sequence of float
        One frequency per plane (e1, e2), (e3, e4), ...: ``len(omegas) == d // 2``.
    d : int
        Dimension (odd d keeps the last axis fixed).
    profile : {"exp", "linear"}
        The profile (keyword only, as ``rotate_values``: by position both are deprecated).
    rotate_values : bool
        False gives the variant that rotates queries and keys but not values,
        :math:`\dot x_i = P_{x_i}\big(\frac{1}{n} \sum_j \varphi'(\langle R_i x_i, R_j x_j
        \rangle) x_j\big)`: closer to real
        transformers, but not a gradient flow of E_h (see :mod:`usaav_edu.dynamics.unrotated`).
    layer_norm : {"post", "pre"}
        Where layer normalization sits (keyword; ``Model.layer_norm``): ``"pre"`` adds
        ``-pre_ln`` to the name.

    Returns
    -------
    Model
        Labels are real positions.

    References
    ----------
    The book's chapter 5 (ch05); arXiv:2605.30229.

    Examples
    --------
    >>> import numpy as np
    >>> import usaav_edu as ue
    >>> m = ue.models.rope(beta=2.0, omegas=(0.5,), d=3)
    >>> m.name, m.gauge
    ('rope', RopeGauge(omegas=(0.5,), d=3))

    At position pi the plane (e1, e2) has turned by a quarter turn:

    >>> m.gauge_matrices(np.array([np.pi]), 3)[0].round(3) + 0.0
    array([[ 0., -1.,  0.],
           [ 1.,  0.,  0.],
           [ 0.,  0.,  1.]])
    """
    if not isinstance(rotate_values, bool):
        raise TypeError(f"rotate_values must be True or False, got {v.shown(rotate_values)}")
    d = v.integer("d", d, minimum=2)
    name = "rope" if rotate_values else "rope_unrotated_values"
    return Model(gauge=RopeGauge(omegas, d), profile=_profile(beta, profile),
                 rotate_values=rotate_values, layer_norm=layer_norm,
                 name=_ln_name(name, layer_norm))


@v.old_positional_order("d", "beta", "base")
def standard_rope(beta=1.0, *, d, base=10000.0, layer_norm="post"):
    """RoPE with the standard frequencies ``base^{-2k/d}`` (all planes rotate when d is even).

    The old order ``standard_rope(d, beta, base)`` still works, with a ``DeprecationWarning``,
    for one release.

    Parameters
    ----------
    beta : float
        Inverse temperature.
    d : int
        Dimension (keyword).
    base : float
        Base of the frequencies (keyword).
    layer_norm : {"post", "pre"}
        Where layer normalization sits (keyword; ``Model.layer_norm``): ``"pre"`` adds
        ``-pre_ln`` to the name.

    Returns
    -------
    Model
        :func:`rope` with ``omegas = rope_frequencies(d, base)``.
    """
    return rope(beta, rope_frequencies(d, base), d, layer_norm=layer_norm)


@v.old_positional_order("beta", "frames", "profile")
def prefix_gauge(beta=1.0, frames=None, *, profile="exp", layer_norm="post"):
    r"""The prefix gauge: one orthogonal frame per prompt, no bias, divided by n.

    .. math::

        G(\xi) = F_\xi \in O(d), \qquad \xi \in \{0, \dots, K - 1\},

    with :math:`F_k` = ``frames[k]``: the labels are prompt ids.

    Parameters
    ----------
    beta : float
        Inverse temperature.
    frames : array_like
        ``(K, d, d)`` orthogonal matrices.
    profile : {"exp", "linear"}
        The profile (keyword only; by position it is deprecated).
    layer_norm : {"post", "pre"}
        Where layer normalization sits (keyword; ``Model.layer_norm``): ``"pre"`` adds
        ``-pre_ln`` to the name.

    Returns
    -------
    Model

    Raises
    ------
    TypeError, ValueError
        If ``frames`` is missing or not orthogonal, or ``beta`` is bad.

    References
    ----------
    The book's chapter 6 (prefix gauges).

    Examples
    --------
    >>> import numpy as np
    >>> import usaav_edu as ue
    >>> frames = np.stack([np.eye(3), np.diag([1.0, -1.0, -1.0])])
    >>> m = ue.models.prefix_gauge(1.0, frames)
    >>> m.name, m.gauge_matrices(np.array([0, 1, 1]), 3).shape
    ('prefix_gauge', (3, 3, 3))
    """
    if frames is None:
        raise TypeError("frames must be a (K, d, d) array of orthogonal matrices")
    prof = _profile(beta, profile)
    return Model(gauge=FrameGauge(frames), profile=prof, layer_norm=layer_norm,
                 name=_ln_name("prefix_gauge", layer_norm))


def frames_from_targets(targets, u=None):
    """Orthogonal frames ``G_k`` with ``G_k^T u = T_k`` (a reflection mapping T_k to u).

    This realizes a chosen law (the book's chapter 6, gauge-level universality):
    with prompt ids ``k`` the gauge maximizer puts prompt k's tokens at
    ``targets[k]``.  Each frame is the Householder reflection
    ``I - 2 w w^T / |w|^2``, ``w = T_k - u`` (the identity when ``T_k = u``).

    Parameters
    ----------
    targets : array_like
        ``(K, d)`` unit vectors.
    u : array_like or None
        A unit vector of dimension d; default ``e_1``.

    Returns
    -------
    ndarray
        ``(K, d, d)`` orthogonal symmetric matrices.

    Raises
    ------
    ValueError
        If ``targets`` or ``u`` are not unit vectors of one dimension.
    """
    t = v.points_on_sphere("targets", targets)
    k, d = t.shape
    if u is None:
        u = np.eye(d)[0]
    u = v.points_on_sphere("u", np.reshape(np.asarray(u, dtype=np.float64), (1, -1)))[0]
    if u.shape[0] != d:
        raise ValueError(f"u must have dimension {d} to match targets, got {u.shape[0]}")
    frames = np.empty((k, d, d))
    for i in range(k):
        w = t[i] - u
        nw = w @ w
        frames[i] = np.eye(d) if nw < 1e-30 else np.eye(d) - 2.0 * np.outer(w, w) / nw
    return frames


@v.old_positional_order("targets", "beta", "u")
def prefix_gauge_from_targets(beta=1.0, *, targets, u=None, layer_norm="post"):
    """A prefix-gauge model whose maximizer puts prompt k's tokens at ``targets[k]``.

    The old order ``prefix_gauge_from_targets(targets, beta, u)`` still works, with a
    ``DeprecationWarning``, for one release.

    Parameters
    ----------
    beta : float
        Inverse temperature.
    targets : array_like
        ``(K, d)`` unit vectors (keyword).
    u : array_like or None
        See :func:`frames_from_targets` (keyword).
    layer_norm : {"post", "pre"}
        Where layer normalization sits (keyword; ``Model.layer_norm``): ``"pre"`` adds
        ``-pre_ln`` to the name.

    Returns
    -------
    Model
        :func:`prefix_gauge` with the frames of :func:`frames_from_targets`.
    """
    return prefix_gauge(beta, frames_from_targets(targets, u), layer_norm=layer_norm)


@v.old_positional_order("beta", "lam")
def distance_bias(beta=1.0, *, lam=1.0, layer_norm="post"):
    r"""The identity gauge with a non-negative bias that decays with the distance of positions.

    .. math::

        b(\xi, \zeta) = e^{-\lambda |\xi - \zeta|}, \qquad \lambda = \texttt{lam} \ge 0.

    ``distance_bias(beta, lam)`` by position still works, with a ``DeprecationWarning``, for
    one release.

    Parameters
    ----------
    beta : float
        Inverse temperature.
    lam : float
        Decay rate, >= 0 (keyword).
    layer_norm : {"post", "pre"}
        Where layer normalization sits (keyword; ``Model.layer_norm``): ``"pre"`` adds
        ``-pre_ln`` to the name.

    Returns
    -------
    Model

    References
    ----------
    The book's chapter 7 (biases): a non-negative bias, Theorem 7.1 (ch7-thm-nonneg).

    Examples
    --------
    >>> import numpy as np
    >>> import usaav_edu as ue
    >>> m = ue.models.distance_bias(beta=1.0, lam=0.5)
    >>> m.bias
    DistanceBias(lam=0.5)
    >>> m.bias_matrix(np.array([0.0, 1.0, 2.0])).round(3)
    array([[1.   , 0.607, 0.368],
           [0.607, 1.   , 0.607],
           [0.368, 0.607, 1.   ]])
    """
    bias = DistanceBias(lam)
    return Model(bias=bias, profile=ExpProfile(beta), layer_norm=layer_norm,
                 name=_ln_name("distance_bias", layer_norm))


@v.old_positional_order("omega", "beta", "profile")
def cosine_bias(beta=1.0, *, omega=1.0, profile="linear", layer_norm="post"):
    r"""The identity gauge with a sign-changing bias, periodic in the difference of positions.

    .. math::

        b(\xi, \zeta) = \cos(\omega (\xi - \zeta)).

    The old order ``cosine_bias(omega, beta, profile)`` keeps its meaning for one release, with
    a ``DeprecationWarning``: a call with positional arguments and no ``omega=`` is read in it
    (``cosine_bias(2.0)`` is ``omega=2.0``).  Write ``cosine_bias(omega=2.0)`` or
    ``cosine_bias(1.5, omega=2.0, profile="exp")``.

    Parameters
    ----------
    beta : float
        Inverse temperature (no effect with the linear profile).
    omega : float
        Frequency (keyword).
    profile : {"linear", "exp"}
        The profile (keyword).
    layer_norm : {"post", "pre"}
        Where layer normalization sits (keyword; ``Model.layer_norm``): ``"pre"`` adds
        ``-pre_ln`` to the name.

    Returns
    -------
    Model

    References
    ----------
    The book's chapter 7 (biases): its great circles, Theorem 7.3 (ch7-thm-circle).

    Examples
    --------
    >>> import numpy as np
    >>> import usaav_edu as ue
    >>> m = ue.models.cosine_bias(omega=2.0)
    >>> m.bias, m.profile
    (CosineBias(omega=2.0), LinearProfile())
    >>> m.bias_matrix(np.array([0.0, np.pi / 2])).round(3)
    array([[ 1., -1.],
           [-1.,  1.]])
    """
    bias = CosineBias(omega)
    return Model(bias=bias, profile=_profile(beta, profile), layer_norm=layer_norm,
                 name=_ln_name("cosine_bias", layer_norm))


def attention(beta=1.0, *, Q=None, K=None, V=None, d=3, normalization="usa", profile="exp"):
    r"""Attention with query, key and value matrices (:mod:`usaav_edu.models.projections`).

    .. math::

        v_i = P_{x_i}\Big( \frac{1}{N_i} \sum_j e^{\beta \langle Q x_i, K x_j \rangle}
              V x_j \Big),

    with :math:`N_i = n` (USA) or :math:`\sum_j e^{\beta \langle Q x_i, K x_j \rangle}` (SA).
    Compose with a gauge by ``dataclasses.replace(model, gauge=...)``: the rotation then acts
    after the projections, :math:`\langle G_i Q x_i, G_j K x_j \rangle`.  The run is summed
    directly (every pair); :func:`usaav_edu.simulate` checks its energy only where it is a
    gradient flow: :math:`Q^T K` symmetric and equal to ``V``, identity gauge.

    Parameters
    ----------
    beta : float
        Inverse temperature.
    Q, K, V : array_like or None
        ``(d, d)`` matrices (keyword); None is the identity.
    d : int
        The dimension (keyword): the matrices must be ``d x d``.
    normalization : {"usa", "sa"}
        Divide by ``n`` or by the row sums.
    profile : {"exp", "linear"}
        The profile (keyword).

    Returns
    -------
    Model

    References
    ----------
    B. Geshkovski, C. Letrouit, Y. Polyanskiy, P. Rigollet, "A mathematical perspective on
    transformers", arXiv:2312.10794 (the dynamics with general Q, K, V).

    Examples
    --------
    >>> import numpy as np
    >>> import usaav_edu as ue
    >>> m = ue.models.attention(1.0, V=np.diag([1.0, 1.0, 0.5]))
    >>> m.name, m.general, m.is_gradient_ascent
    ('usa-qkv', True, False)
    """
    proj = Projections(Q=Q, K=K, V=V, d=d)
    return Model(profile=_profile(beta, profile), normalization=normalization, projections=proj)


def causal(beta=1.0, *, lam=0.0, d=3, normalization="sa", profile="exp"):
    r"""Causal attention: token ``i`` attends to the tokens at positions ``xi_j <= xi_i``.

    .. math::

        v_i = P_{x_i}\Big( \frac{1}{N_i} \sum_{j:\ \xi_j \le \xi_i}
              e^{-\lambda (\xi_i - \xi_j)}\, e^{\beta \langle x_i, x_j \rangle}\, x_j \Big),

    with the ALiBi decay :math:`\lambda` (``lam = 0``: the plain causal mask) and
    :math:`N_i = \sum_{j: \xi_j \le \xi_i} e^{-\lambda (\xi_i - \xi_j)} e^{\beta \langle x_i,
    x_j \rangle}` (SA, the default: each token averages over what it sees) or ``n`` (USA).
    The first token (the smallest position) attends to itself only and never moves.  The
    weights are not symmetric: the run is summed directly and its energy is not checked.

    Parameters
    ----------
    beta : float
        Inverse temperature.
    lam : float
        The ALiBi decay rate, ``>= 0`` (keyword).
    d : int
        The dimension of the tokens (keyword).
    normalization : {"sa", "usa"}
    profile : {"exp", "linear"}

    Returns
    -------
    Model

    References
    ----------
    N. Karagodin, Y. Polyanskiy, P. Rigollet, "Clustering in causal attention masking",
    arXiv:2411.04990; O. Press, N. A. Smith, M. Lewis, "Train short, test long" (ALiBi),
    arXiv:2108.12409.

    Examples
    --------
    >>> import numpy as np
    >>> import usaav_edu as ue
    >>> m = ue.models.causal(1.0, lam=0.5)
    >>> m.bias_matrix(np.array([0.0, 1.0, 2.0])).round(3)
    array([[1.   , 0.   , 0.   ],
           [0.607, 1.   , 0.   ],
           [0.368, 0.607, 1.   ]])
    """
    return Model(bias=CausalBias(lam), profile=_profile(beta, profile),
                 normalization=normalization, projections=Projections(d=d), name="causal")
