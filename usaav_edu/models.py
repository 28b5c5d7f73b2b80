"""Models of USA-AV: one kernel family, gauge x bias x profile.

The book introduces tokens with auxiliary variables in chapter 3 and each gauge
and bias in chapters 4 to 7.

A model is the interaction kernel ::

    h((x, xi), (y, zeta)) = b(xi, zeta) * phi(<G(xi) x, G(zeta) y>)

with

* a gauge ``G: A -> O(d)``: identity, a RoPE rotation ``exp(xi Omega)``
  (``Omega = blockdiag(omega_k J)`` on the planes (e1,e2), (e3,e4), ...), or one
  orthogonal frame per prompt id (prefix gauge);
* a bias ``b``: none (``b = 1``), the non-negative distance bias
  ``b = exp(-lam |xi - zeta|)``, or the sign-changing cosine bias
  ``b = cos(omega (xi - zeta))``;
* a profile ``phi``: attention ``phi(s) = exp(beta s) / beta`` (``phi(s) = s``
  at ``beta = 0``, its limit up to a constant) or linear ``phi(s) = s``;
* a normalization: USA (divide by n) or SA (divide by the row sum of weights).

A model turns labels ``xi`` into gauge coordinates and a bias matrix; it holds
no particle state.  Every constructor validates its arguments.
"""

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from . import _validate as v

BETA_MAX = 700.0  # e^beta overflows a double near beta = 709.8
BETA_MIN = 1e-300  # a positive beta below this makes phi = e^{beta s} / beta overflow
GAUGES = ("identity", "rope", "frames")
BIASES = ("none", "distance", "cosine")
PROFILES = ("exp", "linear")
NORMALIZATIONS = ("usa", "sa")


@dataclass(frozen=True, eq=False)
class Model:
    """An interaction kernel of USA-AV (module docstring).  Build it with the constructors below."""

    name: str
    beta: float = 1.0
    profile: str = "exp"
    normalization: str = "usa"
    gauge: str = "identity"
    omegas: tuple = ()
    frames: np.ndarray = field(default=None, repr=False)
    bias: str = "none"
    lam: float = 0.0
    omega: float = 0.0
    rotate_values: bool = True

    def __post_init__(self):
        # Every way of building a Model (the constructors, ``from_params``, a direct call)
        # passes through these checks; the fields are stored in their checked form.
        def put(key, value):
            object.__setattr__(self, key, value)

        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"name must be a non-empty string, got {self.name!r}")
        put("beta", _beta(self.beta))
        v.choice("profile", self.profile, PROFILES)
        v.choice("normalization", self.normalization, NORMALIZATIONS)
        v.choice("gauge", self.gauge, GAUGES)
        v.choice("bias", self.bias, BIASES)
        if self.normalization == "sa" and self.bias == "cosine":
            raise ValueError("normalization 'sa' needs a non-negative bias (the row sums divide), got bias 'cosine'")
        put("omegas", _omegas(self.omegas))
        if self.gauge == "rope" and len(self.omegas) < 1:
            raise ValueError("omegas must hold one frequency per rotation plane for the rope gauge")
        if self.gauge != "rope" and self.omegas:
            raise ValueError(f"omegas must be empty unless gauge is 'rope' (gauge {self.gauge!r}), got {self.omegas}")
        if self.gauge == "frames":
            if self.frames is None:
                raise ValueError("frames must be given for the frames gauge")
            put("frames", v.orthogonal_frames("frames", self.frames))
        elif self.frames is not None:
            raise ValueError(f"frames must be None unless gauge is 'frames' (gauge {self.gauge!r})")
        put("lam", v.real_scalar("lam", self.lam, minimum=0.0))
        if self.bias != "distance" and self.lam != 0.0:
            raise ValueError(f"lam must be 0 unless bias is 'distance' (bias {self.bias!r}), got {self.lam}")
        put("omega", v.real_scalar("omega", self.omega))
        if self.bias != "cosine" and self.omega != 0.0:
            raise ValueError(f"omega must be 0 unless bias is 'cosine' (bias {self.bias!r}), got {self.omega}")
        if not isinstance(self.rotate_values, bool):
            raise TypeError(f"rotate_values must be True or False, got {self.rotate_values!r}")

    # ------------------------------------------------------------------ labels
    @property
    def labels(self):
        """What ``xi`` means (``"none"``, ``"position"`` or ``"prompt"``)."""
        if self.gauge == "frames":
            return "prompt"
        if self.gauge == "rope" or self.bias != "none":
            return "position"
        return "none"

    @property
    def is_gradient_ascent(self):
        """True when the dynamics is gradient ascent of E_h (USA, values transported by the gauge)."""
        return self.normalization == "usa" and self.rotate_values

    def check_dimension(self, d, name="x0"):
        """Raise ValueError if the model cannot act on S^{d-1}, the sphere of the argument ``name``."""
        if self.gauge == "rope" and len(self.omegas) != d // 2:
            raise ValueError(
                f"{name} has dimension d = {d}, with {d // 2} rotation planes, but model {self.name!r} has "
                f"{len(self.omegas)} omegas: omegas must give one frequency per rotation plane"
            )
        if self.gauge == "frames" and self.frames.shape[1] != d:
            raise ValueError(f"{name} must have dimension d = {self.frames.shape[1]} to match the frames of "
                             f"model {self.name!r}; {name} has dimension d = {d}")

    def check_labels(self, xi, n):
        """Return ``xi`` validated for ``n`` tokens (a copy as float or int array)."""
        if xi is None:
            if self.labels != "none":
                raise ValueError(f"xi must be given for model {self.name!r} ({self.labels} labels)")
            return np.zeros(n)
        if self.gauge == "frames":
            arr = np.asarray(xi)
            if not np.issubdtype(arr.dtype, np.integer) or arr.dtype == bool:
                raise TypeError(f"xi must be integer prompt ids for model {self.name!r}, got dtype {arr.dtype}")
            if arr.shape != (n,):
                raise ValueError(f"xi must have shape ({n},) (one label per token), got {arr.shape}")
            k = self.frames.shape[0]
            if arr.size and (arr.min() < 0 or arr.max() >= k):
                raise ValueError(f"xi must be prompt ids in 0..{k - 1}, got values in [{arr.min()}, {arr.max()}]")
            return arr.astype(np.int64)
        arr = v.float_array("xi", xi, ndim=1)
        if arr.shape != (n,):
            raise ValueError(f"xi must have shape ({n},) (one label per token), got {arr.shape}")
        self._check_angles(arr)
        return arr

    def _check_angles(self, xi):
        """Raise ValueError if the rotation angles ``omega_k xi_i`` or the bias arguments overflow."""
        if xi.size == 0:
            return
        with np.errstate(over="ignore", invalid="ignore"):
            if self.gauge == "rope":
                angles = np.multiply.outer(np.asarray(self.omegas), xi)
                if not np.all(np.isfinite(angles)):
                    raise ValueError(
                        f"omegas * xi must be finite (the rotation angles omega_k xi_i): |omegas| up to "
                        f"{np.max(np.abs(self.omegas)):g} and |xi| up to {np.max(np.abs(xi)):g} overflow"
                    )
            if self.bias != "none":
                span = np.max(xi) - np.min(xi)
                if not np.isfinite(span):
                    raise ValueError(f"xi: the differences xi_i - xi_j overflow "
                                     f"(xi spans [{np.min(xi):g}, {np.max(xi):g}])")
                if self.bias == "cosine" and not np.isfinite(self.omega * span):
                    raise ValueError(
                        f"omega * (xi_i - xi_j) must be finite: omega = {self.omega:g} and xi spanning "
                        f"{span:g} overflow"
                    )

    # ------------------------------------------------------------------ gauge
    def gauge_matrices(self, xi, d):
        """``G(xi_i)`` as an ``(n, d, d)`` array for tokens on S^{d-1}."""
        xi = np.asarray(xi)
        n = xi.shape[0]
        if self.gauge == "identity":
            return np.broadcast_to(np.eye(d), (n, d, d)).copy()
        if self.gauge == "frames":
            return self.frames[xi].copy()
        g = np.broadcast_to(np.eye(d), (n, d, d)).copy()
        for k, om in enumerate(self.omegas):
            c, s = np.cos(om * xi), np.sin(om * xi)
            a, b = 2 * k, 2 * k + 1
            g[:, a, a], g[:, a, b] = c, -s
            g[:, b, a], g[:, b, b] = s, c
        return g

    def to_gauge(self, x, xi):
        """Gauge coordinates ``y_i = G(xi_i) x_i``; x has shape (..., n, d)."""
        return self._apply(x, xi, inverse=False)

    def from_gauge(self, y, xi):
        """Content coordinates ``x_i = G(xi_i)^T y_i``; y has shape (..., n, d)."""
        return self._apply(y, xi, inverse=True)

    def _apply(self, x, xi, inverse):
        x = np.asarray(x, dtype=np.float64)
        if self.gauge == "identity":
            return x.copy()
        if self.gauge == "frames":
            f = self.frames[np.asarray(xi)]
            sub = "nji,...nj->...ni" if inverse else "nij,...nj->...ni"
            return np.einsum(sub, f, x)
        out = x.copy()
        sign = -1.0 if inverse else 1.0
        for k, om in enumerate(self.omegas):
            c, s = np.cos(om * xi), sign * np.sin(om * xi)
            a, b = 2 * k, 2 * k + 1
            out[..., a] = c * x[..., a] - s * x[..., b]
            out[..., b] = s * x[..., a] + c * x[..., b]
        return out

    # ------------------------------------------------------------------ bias and profile
    def bias_matrix(self, xi):
        """The ``(n, n)`` matrix ``b(xi_i, xi_j)``, or None for ``b = 1``."""
        if self.bias == "none":
            return None
        diff = np.asarray(xi, dtype=np.float64)[:, None] - np.asarray(xi, dtype=np.float64)[None, :]
        if self.bias == "distance":
            return np.exp(-self.lam * np.abs(diff))
        return np.cos(self.omega * diff)

    @property
    def linear(self):
        """True when ``phi'`` is constant (linear profile, or attention at beta = 0)."""
        return self.profile == "linear" or self.beta == 0.0

    def phi(self, s):
        """The profile ``phi(s)``."""
        s = np.asarray(s, dtype=np.float64)
        if self.linear:
            return s.copy()
        return np.exp(self.beta * s) / self.beta

    def dphi(self, s):
        """The derivative ``phi'(s)``."""
        s = np.asarray(s, dtype=np.float64)
        if self.linear:
            return np.ones_like(s)
        return np.exp(self.beta * s)

    # ------------------------------------------------------------------ provenance
    def params(self):
        """A JSON-serializable description from which ``from_params`` rebuilds the model."""
        p = {
            "name": self.name, "beta": self.beta, "profile": self.profile,
            "normalization": self.normalization, "gauge": self.gauge,
            "omegas": list(self.omegas), "bias": self.bias, "lam": self.lam, "omega": self.omega,
            "rotate_values": self.rotate_values,
        }
        if self.frames is not None:
            p["frames"] = self.frames.tolist()
        return p

    @classmethod
    def from_params(cls, params):
        """Inverse of ``params`` (also accepts its JSON text).

        The model is rebuilt through the same checks as the constructors (frames
        orthogonal, frequencies finite, ``lam >= 0``, the rules on ``beta``).  Every
        key that ``params`` writes is required; an unknown key is an error, since a
        parameter this version does not know could change the dynamics.
        """
        if isinstance(params, str):
            try:
                params = json.loads(params)
            except json.JSONDecodeError as exc:
                raise ValueError(f"params is not valid JSON: {exc}") from None
        if not isinstance(params, Mapping):
            raise TypeError(f"params must be a mapping (the output of Model.params()), got {type(params).__name__}")
        p = dict(params)
        missing = sorted(PARAM_KEYS - set(p))
        unknown = sorted(repr(k) for k in set(p) - PARAM_KEYS - {"frames"})
        if missing:
            raise ValueError(f"params lacks the keys {missing}")
        if unknown:
            raise ValueError(f"params has unknown keys {', '.join(unknown)} (written by a newer version?)")
        if not isinstance(p["omegas"], (list, tuple)):
            raise TypeError(f"params['omegas'] must be a list of frequencies, got {type(p['omegas']).__name__}")
        if p.get("frames") is not None:
            p["frames"] = v.float_array("frames", p["frames"], ndim=3)
        return cls(**p)


PARAM_KEYS = frozenset(("name", "beta", "profile", "normalization", "gauge", "omegas", "bias", "lam", "omega",
                        "rotate_values"))


# ---------------------------------------------------------------------- constructors
def _beta(beta):
    beta = v.real_scalar("beta", beta, minimum=0.0, maximum=BETA_MAX)
    if 0.0 < beta < BETA_MIN:
        raise ValueError(f"beta must be 0 (the linear limit) or at least {BETA_MIN:g}, so that "
                         f"phi = e^(beta s) / beta stays finite; got {beta!r}")
    return beta



def require_model(model, name="model"):
    """``model`` itself if it is a :class:`Model`, else a TypeError naming ``name``."""
    if not isinstance(model, Model):
        raise TypeError(f"{name} must be a usaav_edu Model (see usaav_edu.models), got {type(model).__name__}")
    return model

def _omegas(omegas):
    one_d = isinstance(omegas, np.ndarray) and omegas.ndim == 1
    if not one_d and (isinstance(omegas, (str, bytes)) or not isinstance(omegas, Sequence)):
        raise TypeError(f"omegas must be a sequence of frequencies, got {omegas!r}")
    return tuple(v.real_scalar(f"omegas[{k}]", w) for k, w in enumerate(omegas))


def _profile(profile):
    return v.choice("profile", profile, PROFILES)


def usa(beta=1.0, profile="exp"):
    """Unnormalized self-attention: ``dx_i/dt = P_{x_i}((1/n) sum_j e^{beta<x_i,x_j>} x_j)``."""
    return Model("usa", beta=_beta(beta), profile=_profile(profile))


def sa(beta=1.0):
    """Self-attention: ``dx_i/dt = P_{x_i}(sum_j e^{beta<x_i,x_j>} x_j / sum_k e^{beta<x_i,x_k>})``."""
    return Model("sa", beta=_beta(beta), normalization="sa")


def rope_frequencies(d, base=10000.0):
    """Standard RoPE frequencies ``omega_k = base^{-2k/d}``, k = 0 .. d//2 - 1."""
    d = v.integer("d", d, minimum=2)
    base = v.real_scalar("base", base, minimum=0.0, strict=True)
    return tuple(float(base ** (-2.0 * k / d)) for k in range(d // 2))


def rope(beta=1.0, omegas=(1.0,), d=3, profile="exp", rotate_values=True):
    """Rotary gauge ``G(xi) = exp(xi Omega)``, ``Omega = blockdiag(omega_k J)``.

    The planes are (e1, e2), (e3, e4), ...; ``omegas`` gives one frequency per
    plane, so ``len(omegas) == d // 2`` (odd d keeps the last axis fixed).
    ``xi`` are real positions.

    ``rotate_values=False`` gives the variant that rotates queries and keys
    but not values, ``dx_i/dt = P_{x_i}((1/n) sum_j phi'(<R_i x_i, R_j x_j>) x_j)``:
    closer to real transformers, but not a gradient flow of E_h
    (see :mod:`usaav_edu.dynamics.unrotated`).
    """
    if not isinstance(rotate_values, bool):
        raise TypeError(f"rotate_values must be True or False, got {rotate_values!r}")
    d = v.integer("d", d, minimum=2)
    om = _omegas(omegas)
    if len(om) != d // 2:
        raise ValueError(f"omegas must give one frequency per rotation plane: d = {d} has {d // 2}, got {len(om)}")
    name = "rope" if rotate_values else "rope_unrotated_values"
    return Model(name, beta=_beta(beta), profile=_profile(profile), gauge="rope", omegas=om,
                 rotate_values=rotate_values)


def standard_rope(d, beta=1.0, base=10000.0):
    """RoPE with the standard frequencies ``base^{-2k/d}`` (all planes rotate when d is even)."""
    return rope(beta=beta, omegas=rope_frequencies(d, base), d=d)


def prefix_gauge(beta=1.0, frames=None, profile="exp"):
    """One orthogonal frame per prompt: ``G(xi) = frames[xi]``; ``xi`` are prompt ids 0..K-1."""
    if frames is None:
        raise TypeError("frames must be a (K, d, d) array of orthogonal matrices")
    f = v.orthogonal_frames("frames", frames)
    return Model("prefix_gauge", beta=_beta(beta), profile=_profile(profile), gauge="frames", frames=f)


def frames_from_targets(targets, u=None):
    """Orthogonal frames ``G_k`` with ``G_k^T u = T_k`` (a reflection mapping T_k to u).

    This realizes a chosen law (the book's chapter 6, gauge-level
    universality): with prompt ids ``k`` the gauge maximizer puts prompt k's
    tokens at ``targets[k]``.  ``u`` defaults to ``e_1``.  Each frame is the Householder reflection ``I - 2 w w^T / |w|^2``,
    ``w = T_k - u`` (the identity when ``T_k = u``).
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


def prefix_gauge_from_targets(targets, beta=1.0, u=None):
    """A prefix-gauge model whose maximizer puts prompt k's tokens at ``targets[k]``."""
    return prefix_gauge(beta=beta, frames=frames_from_targets(targets, u))


def distance_bias(beta=1.0, lam=1.0):
    """Identity gauge with the non-negative bias ``b(xi, zeta) = exp(-lam |xi - zeta|)``."""
    lam = v.real_scalar("lam", lam, minimum=0.0)
    return Model("distance_bias", beta=_beta(beta), bias="distance", lam=lam)


def cosine_bias(omega=1.0, beta=1.0, profile="linear"):
    """Identity gauge with the sign-changing bias ``b(xi, zeta) = cos(omega (xi - zeta))``."""
    omega = v.real_scalar("omega", omega)
    return Model("cosine_bias", beta=_beta(beta), profile=_profile(profile), bias="cosine", omega=omega)
