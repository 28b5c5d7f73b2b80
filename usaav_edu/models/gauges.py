"""Gauges ``G: A -> O(d)``: the first part of a kernel (the book's chapters 4 to 6).

A gauge turns the labels ``xi`` of ``n`` tokens into orthogonal matrices
``G(xi_i)``; the model then works in the gauge coordinates ``y_i = G(xi_i) x_i``
(Theorem 4.1, ch4-thm-conjugacy, of the book; arXiv:2605.30229).  Built in:

* :class:`IdentityGauge`: ``G = I`` (no labels);
* :class:`RopeGauge`: the rotary gauge ``G(xi) = exp(xi Omega)``,
  ``Omega = blockdiag(omega_k J)`` on the planes (e1, e2), (e3, e4), ...;
* :class:`FrameGauge`: one orthogonal frame per prompt id (prefix gauge, the gauge of
  Definition 6.1 (ch6-def-gauge)).

Any object with a method ``matrices(xi) -> (n, d, d)`` array of orthogonal
matrices is a gauge too: the model checks its output once per run (shape,
finite, orthogonal) and the kernel runs on the gauge coordinates, so it costs
the same as a built-in gauge.  Such a gauge takes real positions as labels.
The built-in gauges satisfy :class:`usaav_edu.dynamics.parts.BuiltInGauge`: they rotate on
their own, check their labels and their dimension.

Each built-in gauge says in one line what its methods compute; their parameters are these.

* ``matrices(xi, d=None)``: ``xi`` the ``(n,)`` labels, ``d`` the dimension where the gauge
  does not fix it; an ``(n, d, d)`` ndarray.
* ``apply(x, xi, inverse=False)``: ``x`` the ``(..., n, d)`` vectors, one per token in the
  last two axes, ``xi`` the ``(n,)`` labels, ``inverse`` to apply the transposes
  ``G(xi_i)^T``; an ``(..., n, d)`` ndarray.
* ``check_labels(xi)``: ``xi`` the ``(n,)`` labels; raises ValueError if they make the gauge
  overflow.
* ``circle_frequency(name="model")``: the frequency ``omega`` of the gauge as RoPE on the
  circle, a float; raises ValueError, naming the argument ``name``, where it has none.
* ``params()``: the JSON description read back by
  :func:`~usaav_edu.models.gauges.gauge_from_params`, ``{"kind": ..., its parameters}``.
"""

from dataclasses import dataclass, field

import numpy as np

from .. import _validate as v
from ..dynamics.parts import Gauge
from ._part import check_part, params_kind, user_output

LABELS = ("none", "position", "prompt")
ORTHO_TOL = 1e-10
"""How far ``G^T G`` of a user gauge may be from the identity (largest entry)."""


def check_dimension(gauge_d, d, name, model):
    """Raise ValueError if a gauge of dimension ``gauge_d`` (None: any) cannot act on ``R^d``.

    Parameters
    ----------
    gauge_d : int or None
        The gauge's dimension.
    d : int
        The dimension of the argument ``name``.
    name : str
        The argument named in the message.
    model : str
        The name of the model, for the message.

    Raises
    ------
    ValueError
        If ``gauge_d`` is an integer other than ``d``.
    """
    if isinstance(gauge_d, (int, np.integer)) and gauge_d != d:
        raise ValueError(f"{name} must have dimension d = {gauge_d} to match the gauge of model "
                         f"{model!r}; {name} has dimension d = {d}")


def _circle_refused(name, what):
    return ValueError(f"{name} must act on the circle (d = 2){what}")


def omegas_tuple(omegas):
    """``omegas`` as a tuple of finite floats.

    Parameters
    ----------
    omegas : sequence of float
        Rotation frequencies.

    Returns
    -------
    tuple of float

    Raises
    ------
    TypeError
        If ``omegas`` is not a sequence of real numbers.
    ValueError
        If a frequency is not finite.
    """
    one_d = isinstance(omegas, np.ndarray) and omegas.ndim == 1
    if not one_d and (isinstance(omegas, (str, bytes)) or not isinstance(omegas, (list, tuple))):
        raise TypeError(f"omegas must be a sequence of frequencies, got {omegas!r}")
    return tuple(v.real_scalar(f"omegas[{k}]", w) for k, w in enumerate(omegas))


class _GaugeBase:
    """The dimension check the gauges share (their methods are described in the module)."""

    def check_dimension(self, d, name, model):
        """Raise ValueError if the gauge was built for another dimension than ``d``.

        Parameters
        ----------
        d : int
            The dimension of the argument ``name``.
        name : str
            The argument named in the message.
        model : str
            The model's name, for the message.
        """
        check_dimension(self.d, d, name, model)


@dataclass(frozen=True)
class IdentityGauge(_GaugeBase):
    """The identity gauge ``G(xi) = I``.

    Parameters
    ----------
    d : int or None
        The dimension of the sphere's ambient space; None (default): any d.

    Raises
    ------
    TypeError, ValueError
        If ``d`` is not None or an integer >= 2.
    """

    d: int | None = None
    kind = "identity"
    labels = "none"
    identity = True

    def __post_init__(self):
        if self.d is not None:
            object.__setattr__(self, "d", v.integer("d", self.d, minimum=2))

    def matrices(self, xi, d=None):
        """``(n, d, d)`` identity matrices, one per label (``d`` needed if built with ``d=None``)."""
        d = self.d if d is None else d
        if d is None:
            raise ValueError("d must be given: this identity gauge acts in any dimension")
        n = np.shape(xi)[0]
        return np.broadcast_to(np.eye(d), (n, d, d)).copy()

    def apply(self, x, xi, inverse=False):
        """``G(xi_i) x_i`` (or ``G^T``): a copy of ``x``."""
        return np.array(x, dtype=np.float64)

    def check_labels(self, xi):
        """Nothing to check: the labels do not enter."""

    def circle_frequency(self, name="model"):
        """0: on the circle the identity gauge is RoPE with ``omega = 0`` (refused if ``d != 2``)."""
        if self.d not in (None, 2):
            raise _circle_refused(name, f"; its gauge has d = {self.d}")
        return 0.0

    def params(self):
        """``{"kind": "identity", "d": d}``."""
        return {"kind": self.kind, "d": self.d}


@dataclass(frozen=True)
class RopeGauge(_GaugeBase):
    """The rotary gauge ``G(xi) = exp(xi Omega)``, ``Omega = blockdiag(omega_k J)``.

    Parameters
    ----------
    omegas : sequence of float
        One frequency per rotation plane (e1, e2), (e3, e4), ...; at least one.
    d : int or None
        The dimension: ``len(omegas) == d // 2`` (odd d keeps the last axis fixed).  None:
        ``2 len(omegas)`` or ``2 len(omegas) + 1``.

    Raises
    ------
    TypeError
        If ``omegas`` is not a sequence of numbers or ``d`` not an integer.
    ValueError
        If ``omegas`` is empty, not finite, or does not fit ``d``.

    References
    ----------
    J. Su et al., "RoFormer: enhanced transformer with rotary position embedding",
    Neurocomputing 568 (2024) 127063.  The book's chapter 5 (ch05).
    """

    omegas: tuple
    d: int | None = None
    kind = "rope"
    labels = "position"
    identity = False

    def __post_init__(self):
        om = omegas_tuple(self.omegas)
        if len(om) < 1:
            raise ValueError("omegas must hold one frequency per rotation plane (at least one)")
        object.__setattr__(self, "omegas", om)
        if self.d is not None:
            d = v.integer("d", self.d, minimum=2)
            if len(om) != d // 2:
                raise ValueError(f"omegas must give one frequency per rotation plane: d = {d} has "
                                 f"{d // 2}, got {len(om)}")
            object.__setattr__(self, "d", d)

    def fits(self, d):
        """Whether the gauge acts on ``R^d`` (a bool)."""
        return len(self.omegas) == d // 2 and (self.d is None or self.d == d)

    def check_dimension(self, d, name, model):
        """Raise ValueError if the frequencies do not give one per rotation plane of ``R^d``."""
        if not self.fits(d):
            raise ValueError(
                f"{name} has dimension d = {d}, with {d // 2} rotation planes, but model "
                f"{model!r} has {len(self.omegas)} omegas (d = {self.d}): omegas must give one "
                f"frequency per rotation plane")

    def circle_frequency(self, name="model"):
        """``omega``, the one frequency on the circle (refused if more of them, or ``d != 2``)."""
        if len(self.omegas) != 1 or self.d not in (None, 2):
            raise _circle_refused(name, f": a RoPE gauge with one frequency; got omegas = "
                                        f"{self.omegas}, d = {self.d}")
        return self.omegas[0]

    def check_labels(self, xi):
        """Raise ValueError, naming ``omegas * xi``, if some angle ``omega_k xi_i`` overflows."""
        if xi.size == 0:
            return
        with np.errstate(over="ignore", invalid="ignore"):
            angles = np.multiply.outer(np.asarray(self.omegas), xi)
        if not np.all(np.isfinite(angles)):
            raise ValueError(
                f"omegas * xi must be finite (the rotation angles omega_k xi_i): |omegas| up to "
                f"{np.max(np.abs(self.omegas)):g} and |xi| up to {np.max(np.abs(xi)):g} overflow")

    def matrices(self, xi, d=None):
        """``G(xi_i)`` as an ``(n, d, d)`` array (``d`` by default the gauge's, else ``2 len(omegas)``)."""
        xi = np.asarray(xi, dtype=np.float64)
        d = d or self.d or 2 * len(self.omegas)
        g = np.broadcast_to(np.eye(d), (xi.shape[0], d, d)).copy()
        for k, om in enumerate(self.omegas):
            c, s = np.cos(om * xi), np.sin(om * xi)
            a, b = 2 * k, 2 * k + 1
            g[:, a, a], g[:, a, b] = c, -s
            g[:, b, a], g[:, b, b] = s, c
        return g

    def apply(self, x, xi, inverse=False):
        """``G(xi_i) x_i`` (or ``G(xi_i)^T x_i``), plane by plane."""
        x = np.asarray(x, dtype=np.float64)
        xi = np.asarray(xi, dtype=np.float64)
        out = x.copy()
        sign = -1.0 if inverse else 1.0
        for k, om in enumerate(self.omegas):
            c, s = np.cos(om * xi), sign * np.sin(om * xi)
            a, b = 2 * k, 2 * k + 1
            out[..., a] = c * x[..., a] - s * x[..., b]
            out[..., b] = s * x[..., a] + c * x[..., b]
        return out

    def params(self):
        """``{"kind": "rope", "omegas": [...], "d": d}``."""
        return {"kind": self.kind, "omegas": list(self.omegas), "d": self.d}


@dataclass(frozen=True, eq=False)
class FrameGauge(_GaugeBase):
    """One orthogonal frame per prompt: ``G(k) = frames[k]``; labels are prompt ids ``0..K-1``.

    Parameters
    ----------
    frames : array_like
        ``(K, d, d)`` orthogonal matrices (``F^T F = I`` within 1e-9).

    Raises
    ------
    TypeError, ValueError
        If ``frames`` is not a ``(K, d, d)`` array of orthogonal matrices.

    References
    ----------
    The book's chapter 6 (prefix gauges and gauge-level universality).
    """

    frames: np.ndarray = field(repr=False)
    kind = "frames"
    labels = "prompt"
    identity = False

    def __post_init__(self):
        if self.frames is None:
            raise TypeError("frames must be a (K, d, d) array of orthogonal matrices")
        f = v.orthogonal_frames("frames", self.frames)
        f.flags.writeable = False
        object.__setattr__(self, "frames", f)

    @property
    def d(self):
        """The dimension of the frames."""
        return self.frames.shape[1]

    def matrices(self, xi, d=None):
        """``frames[xi_i]`` as an ``(n, d, d)`` array (``d`` ignored: the frames fix it)."""
        return self.frames[np.asarray(xi)].copy()

    def apply(self, x, xi, inverse=False):
        """``frames[xi_i] x_i`` (or the transpose)."""
        f = self.frames[np.asarray(xi)]
        sub = "nji,...nj->...ni" if inverse else "nij,...nj->...ni"
        return np.einsum(sub, f, np.asarray(x, dtype=np.float64))

    def check_labels(self, xi):
        """Nothing to check here: the model checks prompt ids against the number of frames."""

    def params(self):
        """``{"kind": "frames", "frames": [K nested d x d lists]}``."""
        return {"kind": self.kind, "frames": self.frames.tolist()}


BUILT_IN = {"identity": IdentityGauge, "rope": RopeGauge, "frames": FrameGauge}


def is_built_in(gauge):
    """Whether ``gauge`` is one of the gauges of this module (a bool)."""
    return isinstance(gauge, tuple(BUILT_IN.values()))


def check_gauge(gauge):
    """``gauge`` itself if it is a gauge (built in, or with a ``matrices`` method); else TypeError."""
    return check_part(gauge, "gauge", tuple(BUILT_IN.values()), Gauge,
                      "matrices(xi) -> (n, d, d) orthogonal matrices")


def user_matrices(gauge, xi, d):
    """The output of a user gauge's ``matrices(xi)`` at the ``(n,)`` positions ``xi``, checked once.

    An ``(n, d, d)`` float64 ndarray, ``d`` the dimension of the tokens; a ValueError names the
    gauge if the output has the wrong shape, is not finite, or is not orthogonal within
    ``ORTHO_TOL``.
    """
    n = xi.shape[0]
    g = user_output(gauge, "gauge", "matrices", xi, (n, d, d), f"{n} tokens in d = {d}")
    if n:
        err = float(np.max(np.abs(np.einsum("nji,njl->nil", g, g) - np.eye(d))))
        if err > ORTHO_TOL:
            raise ValueError(f"gauge {gauge!r}: matrices(xi) must be orthogonal (G^T G = I within "
                             f"{ORTHO_TOL:g}); the error is {err:.3g}")
    return g


def gauge_from_params(p):
    """The built-in gauge, IdentityGauge, RopeGauge or FrameGauge, described by ``p`` (the output of its ``params()``).

    ``p = {"kind": "identity" | "rope" | "frames", ...}``; the shared key check refuses an
    unknown kind and a missing or extra key (TypeError, ValueError).
    """
    keys = {"identity": {"d"}, "rope": {"omegas", "d"}, "frames": {"frames"}}
    kind = params_kind(p, "gauge", keys)
    if kind == "identity":
        return IdentityGauge(p["d"])
    if kind == "rope":
        if not isinstance(p["omegas"], (list, tuple)):
            raise TypeError(f"params['omegas'] must be a list of frequencies, got "
                            f"{type(p['omegas']).__name__}")
        return RopeGauge(p["omegas"], p["d"])
    return FrameGauge(v.float_array("frames", p["frames"], ndim=3))
