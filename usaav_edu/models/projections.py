r"""Query, key and value matrices: attention as transformers compute it.

The models of the book compare the tokens themselves: the weight of the pair ``(i, j)`` is
:math:`\varphi'(\langle y_i, y_j \rangle)` and the value is the token.  A transformer's head
compares projections and moves by a third one:

.. math::

    w_{ij} = b_{ij}\, \varphi'(\langle Q x_i, K x_j \rangle), \qquad
    v_i = P_{x_i}\Big( \frac{1}{N_i} \sum_j w_{ij}\, V x_j \Big)

(the self-attention dynamics of Geshkovski, Letrouit, Polyanskiy and Rigollet, "A mathematical
perspective on transformers", arXiv:2312.10794, with :math:`N_i = n` for USA and
:math:`N_i = \sum_j w_{ij}` for SA).  With a gauge the rotation acts after the projections, as
RoPE does in practice: :math:`\langle G_i Q x_i, G_j K x_j \rangle`, and the value
:math:`G_i^T G_j V x_j` (values transported, the default) or :math:`V x_j`
(``rotate_values=False``).

The dynamics is the gradient ascent of
:math:`E = \frac{1}{2 n^2} \sum_{ij} b_{ij} \varphi(\langle x_i, A x_j \rangle)` when
:math:`A = Q^T K` is symmetric, :math:`V = A`, the bias is symmetric and the gauge is the
identity (then :math:`\langle Q x_i, K x_j \rangle = \langle x_i, A x_j \rangle` and
:math:`\nabla_{x_i} E = \frac{1}{n^2} \sum_j b_{ij} \varphi'(\cdot) A x_j`); otherwise it is not
a gradient flow, and :func:`usaav_edu.simulate` does not check its energy.
"""

from dataclasses import dataclass

import numpy as np

from .. import _validate as v

__all__ = ["Projections", "check_projections", "projections_from_params"]


def _matrix(name, m, d):
    """``m`` as a finite ``(d, d)`` float64 array (None stays None)."""
    if m is None:
        return None
    arr = v.float_array(name, m, ndim=2)
    if arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} must be a square (d, d) matrix, got shape {arr.shape}")
    if d is not None and arr.shape[0] != d:
        raise ValueError(f"{name} must have shape ({d}, {d}) (d = {d}), got {arr.shape}")
    arr = arr.copy()
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class Projections:
    r"""The query, key and value matrices ``Q``, ``K``, ``V`` (module docstring).

    Parameters
    ----------
    Q, K, V : array_like or None
        ``(d, d)`` finite matrices; None means the identity.
    d : int or None
        The dimension, required when all three are None (it then only fixes the sphere);
        otherwise read from the matrices, which must agree.

    Raises
    ------
    TypeError, ValueError
        Naming the matrix, if it is not a finite square matrix of the dimension.
    """

    Q: object = None
    K: object = None
    V: object = None
    d: int | None = None

    def __post_init__(self):
        d = None if self.d is None else v.integer("d", self.d, minimum=2)
        for name in ("Q", "K", "V"):
            m = _matrix(name, getattr(self, name), d)
            object.__setattr__(self, name, m)
            if m is not None:
                d = m.shape[0]
        if d is None:
            raise ValueError("d must be given when Q, K and V are all None (the identity)")
        object.__setattr__(self, "d", int(d))

    kind = "qkv"

    @property
    def identity(self):
        """True when ``Q``, ``K`` and ``V`` are all the identity (None)."""
        return self.Q is None and self.K is None and self.V is None

    def matrix(self, name):
        """``Q``, ``K`` or ``V`` as an array (the identity for None)."""
        m = getattr(self, name)
        return np.eye(self.d) if m is None else m

    @property
    def qk(self):
        """:math:`A = Q^T K`, the bilinear form of the weights."""
        return self.matrix("Q").T @ self.matrix("K")

    @property
    def gradient(self):
        """True when :math:`Q^T K` is symmetric and equals ``V`` (exactly, as stored)."""
        a = self.qk
        return bool(np.array_equal(a, a.T) and np.array_equal(a, self.matrix("V")))

    @property
    def fast_scale(self):
        r"""``c`` when :math:`Q^T K = c I` (to 1e-13 relative), else None.

        Then :math:`\langle Q x, K y \rangle = c \langle x, y \rangle`: the weights are the
        book's at ``beta c`` and ``V`` acts after the sum, so fast summation applies.
        """
        a = self.qk
        c = float(np.trace(a)) / self.d
        scale = max(1.0, abs(c))
        return c if float(np.max(np.abs(a - c * np.eye(self.d)))) <= 1e-13 * scale else None

    @property
    def qk_norm(self):
        """:math:`\\|Q^T K\\|_2`, which bounds :math:`|\\langle Q x, K y \\rangle|` on the sphere."""
        return float(np.linalg.norm(self.qk, 2))

    @property
    def v_norm(self):
        """:math:`\\|V\\|_2`, which bounds :math:`|V x|` on the sphere."""
        return float(np.linalg.norm(self.matrix("V"), 2))

    def params(self):
        """``{"kind": "qkv", "d", "Q", "K", "V"}`` with nested lists (None for the identity)."""
        return {"kind": self.kind, "d": self.d,
                **{k: None if getattr(self, k) is None else getattr(self, k).tolist()
                   for k in ("Q", "K", "V")}}

    def __repr__(self):
        given = [k for k in ("Q", "K", "V") if getattr(self, k) is not None]
        return f"Projections(d={self.d}, given={given})"


def check_projections(p):
    """``p`` itself if it is :class:`Projections` or None; else TypeError."""
    if p is not None and not isinstance(p, Projections):
        raise TypeError(f"projections must be Projections(Q=..., K=..., V=...) or None, got "
                        f"{v.shown(p)}")
    return p


def projections_from_params(p):
    """The :class:`Projections` described by ``p`` (the output of its ``params()``)."""
    if not isinstance(p, dict) or p.get("kind") != "qkv":
        raise ValueError(f"projections must be described as {{'kind': 'qkv', ...}}, got {p!r}")
    unknown = sorted(set(p) - {"kind", "d", "Q", "K", "V"})
    if unknown:
        raise ValueError(f"projections has unknown keys {unknown}")
    return Projections(Q=p.get("Q"), K=p.get("K"), V=p.get("V"), d=p.get("d"))
