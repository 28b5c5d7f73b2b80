"""Biases ``b(xi, zeta)``: the second part of a kernel (the book's chapter 7).

A bias weighs the interaction of two tokens by their labels (Definition 7.1 (ch7-def-bias) of the
book).  Built in:

* :class:`NoBias`: ``b = 1``;
* :class:`DistanceBias`: the non-negative ``b = exp(-lam |xi - zeta|)``;
* :class:`CosineBias`: the sign-changing ``b = cos(omega (xi - zeta))``.

Any object with a method ``matrix(xi) -> (n, n)`` array is a bias too: the model checks its
output once per run (shape, finite) and the kernel consumes the matrix, at the cost of a
built-in bias.  A symmetric matrix (within ``SYM_TOL``) is the book's model, a gradient flow; one
that is not (row ``i`` the weights of token ``i``'s query) is summed over every pair by
:mod:`usaav_edu.dynamics.general`, and its energy is not checked.

:class:`CausalBias` (the causal mask with an ALiBi decay) is built in and not symmetric either.

Each bias also gives the factor of the energy bound (the book's chapter 7;
arXiv:2605.30229): ``mean(B)`` when ``B >= 0`` entrywise (attained by the gauge
maximizers), else ``lambda_max(B) / n``.  The built-in biases satisfy
:class:`usaav_edu.dynamics.parts.SeparableBias`: they give their sign, size, energy factor and
the structure fast summation reads from their formulas, without the ``n x n`` matrix.

Each bias says in one line what its methods compute; ``xi`` is always the ``(n,)``
positions.  ``matrix(xi)`` gives an ``(n, n)`` ndarray, ``bound_factor(xi)`` a float,
``facts(xi)`` the :class:`~usaav_edu.dynamics.parts.BiasFacts`, ``separable()`` the tuple
``(kind, parameters)`` that fast summation reads; ``check_labels(xi)`` raises ValueError,
naming the argument, where the labels make the bias overflow.
"""

from dataclasses import dataclass

import numpy as np

from .. import _validate as v
from ..dynamics.parts import NO_BIAS, Bias, BiasFacts
from ._part import check_part, params_kind, user_output

SYM_TOL = 1e-10
"""How far a user bias matrix may be from symmetric, relative to its largest entry."""


def _span(xi):
    """``max(xi) - min(xi)``, refusing an overflow."""
    with np.errstate(over="ignore", invalid="ignore"):
        span = np.max(xi) - np.min(xi)
    if not np.isfinite(span):
        raise ValueError(f"xi: the differences xi_i - xi_j overflow "
                         f"(xi spans [{np.min(xi):g}, {np.max(xi):g}])")
    return span


def matrix_bound_factor(b):
    """``mean(B)`` if ``B >= 0`` entrywise, else ``lambda_max(B) / n``, for a dense matrix ``B``.

    Parameters
    ----------
    b : ndarray
        ``(n, n)`` symmetric.

    Returns
    -------
    float
    """
    n = b.shape[0]
    if np.all(b >= 0.0):
        return float(np.sum(b)) / (n * n)
    return float(np.linalg.eigvalsh(b)[-1]) / n


def matrix_facts(b):
    """The :class:`~usaav_edu.dynamics.parts.BiasFacts` read from a dense matrix ``B``.

    Parameters
    ----------
    b : ndarray
        ``(n, n)``, ``n >= 1``.

    Returns
    -------
    BiasFacts
    """
    return BiasFacts(True, max(float(np.max(np.abs(b))), 1e-300), bool(np.any(b < 0.0)))


class _BiasBase:
    """``params`` as the biases share it (their methods are described in the module)."""

    def params(self):
        """The JSON description read back by :func:`~usaav_edu.models.biases.bias_from_params`.

        Returns
        -------
        dict
            ``{"kind": ..., its parameters}`` (those of :meth:`separable`), JSON-serializable.
        """
        kind, parameters = self.separable()
        return {"kind": kind, **parameters}


@dataclass(frozen=True)
class NoBias(_BiasBase):
    """The bias ``b = 1`` (every pair weighs the same)."""

    kind = "none"
    nonnegative = True
    constant = True

    def matrix(self, xi):
        """An ``(n, n)`` matrix of ones."""
        n = np.shape(xi)[0]
        return np.ones((n, n))

    def check_labels(self, xi):
        """Nothing to check: the labels do not enter."""

    def bound_factor(self, xi):
        """1, the mean of a matrix of ones."""
        return 1.0

    def facts(self, xi):
        """``b = 1``: no bias, ``max |b| = 1``, no negative entry."""
        return NO_BIAS

    def separable(self):
        """``("none", {})``: the moments of fast summation are the same for every token."""
        return self.kind, {}



@dataclass(frozen=True)
class DistanceBias(_BiasBase):
    """The non-negative bias ``b(xi, zeta) = exp(-lam |xi - zeta|)``.

    Parameters
    ----------
    lam : float
        The decay rate, ``>= 0``.

    Raises
    ------
    TypeError, ValueError
        If ``lam`` is not a finite real number ``>= 0``.
    """

    lam: float = 1.0
    kind = "distance"
    nonnegative = True
    constant = False

    def __post_init__(self):
        object.__setattr__(self, "lam", v.real_scalar("lam", self.lam, minimum=0.0))

    def matrix(self, xi):
        """The ``(n, n)`` matrix ``exp(-lam |xi_i - xi_j|)``."""
        xi = np.asarray(xi, dtype=np.float64)
        return np.exp(-self.lam * np.abs(xi[:, None] - xi[None, :]))

    def check_labels(self, xi):
        """Raise ValueError if the differences of the positions overflow.

        Raises
        ------
        ValueError
            Naming ``xi``.
        """
        if xi.size:
            _span(xi)

    def bound_factor(self, xi):
        """``mean(B)`` in time ``O(n log n)``, without forming ``B``.

        With the positions sorted, ``sum_ij B_ij = n + 2 sum_j A_j`` with
        ``A_j = sum_{i<j} e^{-lam (xi_j - xi_i)} = e^{-lam (xi_j - xi_{j-1})} (A_{j-1} + 1)``.
        """
        xi = np.asarray(xi, dtype=np.float64)
        n = xi.shape[0]
        step = np.exp(-self.lam * np.diff(np.sort(xi)))
        a, total = 0.0, 0.0
        for f in step.tolist():
            a = f * (a + 1.0)
            total += a
        return (n + 2.0 * total) / (n * n)

    def facts(self, xi):
        """``0 < b <= 1``, and ``b = 1`` on the diagonal: ``max |b| = 1``, no negative entry."""
        return BiasFacts(True, 1.0, False)

    def separable(self):
        """``("distance", {"lam": lam})``: fast summation scans the sorted positions."""
        return self.kind, {"lam": self.lam}



@dataclass(frozen=True)
class CosineBias(_BiasBase):
    """The sign-changing bias ``b(xi, zeta) = cos(omega (xi - zeta))``.

    Parameters
    ----------
    omega : float
        The frequency (finite).

    Raises
    ------
    TypeError, ValueError
        If ``omega`` is not a finite real number.
    """

    omega: float = 1.0
    kind = "cosine"
    nonnegative = False
    constant = False

    def __post_init__(self):
        object.__setattr__(self, "omega", v.real_scalar("omega", self.omega))

    def matrix(self, xi):
        """The ``(n, n)`` matrix ``cos(omega (xi_i - xi_j))``."""
        xi = np.asarray(xi, dtype=np.float64)
        return np.cos(self.omega * (xi[:, None] - xi[None, :]))

    def check_labels(self, xi):
        """Raise ValueError if ``omega (xi_i - xi_j)`` overflows.

        Raises
        ------
        ValueError
            Naming ``omega`` or ``xi``.
        """
        if xi.size == 0:
            return
        span = _span(xi)
        with np.errstate(over="ignore", invalid="ignore"):
            if not np.isfinite(self.omega * span):
                raise ValueError(f"omega * (xi_i - xi_j) must be finite: omega = {self.omega:g} "
                                 f"and xi spanning {span:g} overflow")

    def has_negative(self, xi):
        """Whether ``cos(omega (xi_i - xi_j)) < 0`` for some pair, in ``O(n log n)``.

        Some entry is negative exactly when the angles ``theta_i = omega xi_i mod 2 pi`` do not
        lie in one arc of length ``pi / 2`` (if they all lie within ``pi / 2`` of ``theta_1``,
        they lie in an arc of length ``pi``, so the shortest arc holding them, ``2 pi`` minus
        the largest gap between neighbouring sorted angles, the gap across ``2 pi`` included,
        is at most the largest circular distance of two of them).  A margin for the rounding
        of ``theta`` counts borderline cases as negative.
        """
        xi = np.asarray(xi, dtype=np.float64)
        if xi.size < 2:
            return False
        with np.errstate(over="ignore", invalid="ignore"):
            angles = self.omega * xi
        theta = np.sort(np.mod(angles, 2.0 * np.pi))
        gaps = np.diff(theta)
        largest = max(float(gaps.max()) if gaps.size else 0.0,
                      2.0 * np.pi - (theta[-1] - theta[0]))
        margin = 1e-9 + 8.0 * np.finfo(np.float64).eps * float(np.max(np.abs(angles)))
        return bool(2.0 * np.pi - largest > np.pi / 2.0 - margin)

    def fourier(self, xi):
        """``(c, s) = (cos(omega x), sin(omega x))``, ``x = xi - median(xi)``.

        Then ``B = c c^T + s s^T``.

        Taking the positions from their median leaves ``B`` unchanged and keeps the angles
        small.
        """
        xi = np.asarray(xi, dtype=np.float64)
        x0 = xi - np.median(xi) if xi.size else xi
        return np.cos(self.omega * x0), np.sin(self.omega * x0)

    def bound_factor(self, xi):
        """``mean(B)`` if ``B >= 0``, else ``lambda_max(B) / n``, in ``O(n log n)``.

        With ``(c, s)`` of :meth:`fourier`: the sign test :meth:`has_negative`, then
        ``mean(B) = ((sum c)^2 + (sum s)^2) / n^2`` or ``lambda_max(B)``, the largest
        eigenvalue of the 2 x 2 Gram matrix of ``c`` and ``s`` (at 100,000 positions in a
        quarter period a test of the entries would evaluate all ``10^10``).  A borderline
        sign test counts as negative; then ``lambda_max(B) / n >= mean(B)`` is still a bound.

        References
        ----------
        The book's chapter 7, Theorem 7.1 (ch7-thm-nonneg) and Theorem 7.2 (ch7-thm-fourier).
        """
        xi = np.asarray(xi, dtype=np.float64)
        n = xi.shape[0]
        if n == 0:
            return 1.0
        c, s = self.fourier(xi)
        if not self.has_negative(xi - np.median(xi)):
            return float(np.sum(c) ** 2 + np.sum(s) ** 2) / (n * n)
        gram = np.array([[c @ c, c @ s], [c @ s, s @ s]])
        return float(np.linalg.eigvalsh(gram)[-1]) / n

    def facts(self, xi):
        """``max |b| = 1`` (``b = 1`` on the diagonal), and :meth:`has_negative`."""
        return BiasFacts(True, 1.0, self.has_negative(xi))

    def separable(self):
        """``("cosine", {"omega": omega})``: two moment sets, weighted by ``c`` and ``s``."""
        return self.kind, {"omega": self.omega}



@dataclass(frozen=True)
class CausalBias(_BiasBase):
    r"""The causal mask with an ALiBi decay: ``b(xi, zeta) = exp(-lam (xi - zeta))`` if ``zeta <= xi``, else 0.

    Token ``i`` (the query, ``xi = xi_i``) attends to the tokens at positions
    ``xi_j <= xi_i``, the nearer ones more (Karagodin, Polyanskiy and Rigollet, "Clustering
    in causal attention masking", arXiv:2411.04990; ALiBi, Press, Smith and Lewis,
    arXiv:2108.12409); ``lam = 0`` is the plain causal mask.  The matrix is not symmetric,
    so the dynamics is not a gradient flow: the solver sums it directly (every pair) and does
    not check the energy.

    Parameters
    ----------
    lam : float
        The decay rate, ``>= 0``.

    Raises
    ------
    TypeError, ValueError
        If ``lam`` is not a finite real number ``>= 0``.
    """

    lam: float = 0.0
    kind = "causal"
    nonnegative = True
    constant = False
    symmetric = False

    def __post_init__(self):
        object.__setattr__(self, "lam", v.real_scalar("lam", self.lam, minimum=0.0))

    def matrix(self, xi):
        """The ``(n, n)`` matrix, row ``i`` the query: ``exp(-lam (xi_i - xi_j))`` where ``xi_j <= xi_i``."""
        xi = np.asarray(xi, dtype=np.float64)
        gap = xi[:, None] - xi[None, :]
        with np.errstate(over="ignore"):
            return np.where(gap >= 0.0, np.exp(-self.lam * np.maximum(gap, 0.0)), 0.0)

    def check_labels(self, xi):
        """Raise ValueError, naming ``xi``, if the differences of the positions overflow."""
        if xi.size:
            _span(xi)

    def bound_factor(self, xi):
        """``mean(B)`` (``B >= 0``) in time ``O(n log n)``, without forming ``B``.

        With the positions sorted, ``sum_ij B_ij = n + sum_j A_j + T``: ``A_j = sum_{i<j}
        e^{-lam (xi_j - xi_i)} = e^{-lam (xi_j - xi_{j-1})} (A_{j-1} + 1)`` counts each
        earlier key once, and ``T`` adds the pairs of equal positions once more (each
        attends to the other).
        """
        xi = np.sort(np.asarray(xi, dtype=np.float64))
        n = xi.shape[0]
        if n == 0:
            return 1.0
        step = np.exp(-self.lam * np.diff(xi))
        a, total = 0.0, 0.0
        for f in step.tolist():
            a = f * (a + 1.0)
            total += a
        _, counts = np.unique(xi, return_counts=True)
        ties = float(np.sum(counts * (counts - 1) // 2))
        return (n + total + ties) / (n * n)

    def facts(self, xi):
        """``0 <= b <= 1``, and ``b = 1`` on the diagonal: ``max |b| = 1``, no negative entry."""
        return BiasFacts(True, 1.0, False)

    def separable(self):
        """``("causal", {"lam": lam})``: a formula, which fast summation does not sum."""
        return self.kind, {"lam": self.lam}


BUILT_IN = {"none": NoBias, "distance": DistanceBias, "cosine": CosineBias, "causal": CausalBias}


def is_built_in(bias):
    """Whether ``bias`` is one of the biases of this module (a bool)."""
    return isinstance(bias, tuple(BUILT_IN.values()))


def check_bias(bias):
    """``bias`` itself if it is a bias (built in, or with a ``matrix`` method); else TypeError."""
    return check_part(bias, "bias", tuple(BUILT_IN.values()), Bias,
                      "matrix(xi) -> (n, n) array")


def is_symmetric(b):
    """Whether the square matrix ``b`` is symmetric within ``SYM_TOL`` times its largest entry."""
    if not b.size:
        return True
    scale = max(1.0, float(np.max(np.abs(b))))
    return float(np.max(np.abs(b - b.T))) <= SYM_TOL * scale


def user_matrix(bias, xi, symmetric=True):
    """The output of a user bias's ``matrix(xi)`` at the ``(n,)`` positions ``xi``, checked once.

    An ``(n, n)`` float64 ndarray; a ValueError names the bias if the output has the wrong
    shape or is not finite.  With ``symmetric`` (the default) it must also be symmetric within
    ``SYM_TOL`` times its largest entry, and is returned symmetrized; without, it is returned
    as given (row ``i`` the weights of token ``i``'s queries).
    """
    n = xi.shape[0]
    b = user_output(bias, "bias", "matrix", xi, (n, n), f"{n} tokens")
    if not symmetric:
        return b
    if n:
        scale = max(1.0, float(np.max(np.abs(b))))
        err = float(np.max(np.abs(b - b.T)))
        if err > SYM_TOL * scale:
            raise ValueError(f"bias {bias!r}: matrix(xi) must be symmetric (within {SYM_TOL:g} of "
                             f"its largest entry); |B - B^T| reaches {err:.3g}")
        b = 0.5 * (b + b.T)
    return b


def bias_from_params(p):
    """The built-in bias, NoBias, DistanceBias or CosineBias, described by ``p`` (the output of its ``params()``).

    ``p = {"kind": "none" | "distance" | "cosine", ...}``; the shared key check refuses an
    unknown kind and a missing or extra key (TypeError, ValueError).
    """
    keys = {"none": set(), "distance": {"lam"}, "cosine": {"omega"}, "causal": {"lam"}}
    kind = params_kind(p, "bias", keys)
    return BUILT_IN[kind](**{k: p[k] for k in keys[kind]})
