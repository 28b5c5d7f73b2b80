"""The particle energy E_h and its bound.

For particles ``z_i = (x_i, xi_i)`` the energy of the USA-AV model (chapter 3 of the book) is ::

    E_h = (1 / (2 n^2)) sum_{i,j} b_ij phi(<y_i, y_j>),    y_i = G(xi_i) x_i.

It reuses the pair sums of the right-hand side: with ``w_ij = b_ij phi'(s_ij)``,

* attention profile (beta > 0): ``phi = phi' / beta``, so ``E = sum_ij w_ij / (2 beta n^2)``;
* linear profile (or beta = 0): ``phi(s) = s``, ``w_ij = b_ij``, so
  ``E = sum_i <y_i, sum_j w_ij y_j> / (2 n^2)``.

For large beta the attention sum overflows although E does not (a collapsed
state at beta = 700 has ``E = e^700 / 1400 = 7.2e300`` while the sum of its
``n^2`` weights exceeds the double range for n > 133); then E is recomputed
with ``e^beta`` factored out (:func:`energy_scaled`).
"""

import math

import numpy as np
from .rhs import pair_sums

BLOCK_ENTRIES = 1 << 18
"""Entries of one row block of the pair matrix in :func:`energy_scaled` (2 MB)."""


def energy_gauge(yt, bias, has_bias, beta, linear):
    """E_h of the gauge coordinates ``yt`` (a ``(d, n)`` array).

    Computed from the kernel's pair sums; if their total overflows, by :func:`energy_scaled`.
    """
    n = yt.shape[1]
    acc, z = pair_sums(yt, bias, has_bias, beta, linear)
    if linear:
        return float(np.sum(yt * acc)) / (2.0 * n * n)
    with np.errstate(over="ignore"):
        e = float(np.sum(z)) / (2.0 * beta * n * n)
    if math.isfinite(e):
        return e
    return energy_scaled(yt, bias if has_bias else None, beta)


def energy_scaled(yt, bias, beta):
    """E_h of the attention profile without overflow, for ``|b| <= 1`` and ``beta > 0``.

    ``E = (e^beta / (2 beta)) * m``,   ``m = (1/n^2) sum_ij b_ij e^{beta (s_ij - 1)}``,

    with ``s_ij = <y_i, y_j> <= 1``: every term of ``m`` is at most ``|b_ij|``.
    ``m`` is summed over blocks of rows of the pair matrix (at most
    ``BLOCK_ENTRIES`` entries each, never the whole ``n x n`` matrix for large
    n).  ``bias`` is the ``(n, n)`` bias matrix or None (``b = 1``).  Raises
    OverflowError if E itself exceeds the double range.
    """
    d, n = yt.shape
    y = np.ascontiguousarray(yt.T)
    rows = max(1, BLOCK_ENTRIES // n)
    total = 0.0
    for i0 in range(0, n, rows):
        w = np.exp(beta * (y[i0:i0 + rows] @ yt - 1.0))
        if bias is not None:
            w *= bias[i0:i0 + rows]
        total += float(np.sum(w))
    m = total / (n * n)
    log_e = beta - math.log(2.0 * beta) + (math.log(abs(m)) if m != 0.0 else 0.0)
    if not math.isfinite(m) or log_e > math.log(np.finfo(np.float64).max):
        raise OverflowError(f"the energy E_h = e^beta / (2 beta) * {m:.6g} (beta = {beta:g}) exceeds the "
                            f"largest double, {np.finfo(np.float64).max:.3g}")
    if beta < 709.0:  # e^beta is a finite double: the most accurate order of operations
        return math.exp(beta) / (2.0 * beta) * m
    return math.copysign(math.exp(log_e), m) if m != 0.0 else 0.0


BOUND_BLOCK_ENTRIES = 1 << 20
"""Entries of the bias matrix formed at once by :func:`energy_bound`'s sign test (8 MB)."""


def energy_bound(model, xi, n):
    """An upper bound of E_h over all configurations of ``n`` tokens with labels ``xi``.

    ``xi`` must already be checked (``model.check_labels``).  With ``phi(1) = e^beta / beta``
    (1 for the linear profile) and ``B_ij = b(xi_i, xi_j)``:

    * no bias: ``phi(1) / 2``, since ``<y_i, y_j> <= 1`` and ``phi`` increases; attained
      exactly by the gauge maximizers (all ``y_i`` equal);
    * ``B >= 0`` entrywise (distance bias, or a cosine bias whose positions all lie within a
      quarter period): ``phi(1) mean(B) / 2``, attained the same way;
    * otherwise (cosine bias): ``phi(1) lambda_max(B) / (2 n)``.  For the linear profile
      ``sum_ij b_ij <y_i, y_j> = tr(Y^T B Y) <= n lambda_max(B)``; for the attention profile
      expand ``e^{beta s}`` in powers of ``s``, each power a Gram matrix of unit vectors.

    No ``n x n`` matrix is built.  For the distance bias ``b = e^{-lam |dxi|}``, with the
    positions sorted, ``sum_ij B_ij = n + 2 sum_j A_j`` with
    ``A_j = sum_{i<j} e^{-lam (xi_j - xi_i)} = e^{-lam (xi_j - xi_{j-1})} (A_{j-1} + 1)``: time
    ``O(n log n)``.  The cosine bias is ``B = c c^T + s s^T`` with ``c = cos(omega xi)``,
    ``s = sin(omega xi)``, so ``lambda_max(B)`` is the largest eigenvalue of the 2 x 2 Gram
    matrix of ``c`` and ``s``; its sign test runs over blocks of rows and stops at the first
    negative entry.
    """
    phi1 = 1.0 if model.linear else math.exp(model.beta) / model.beta
    if model.bias == "none":
        return phi1 / 2.0
    xi = np.asarray(xi, dtype=np.float64)
    if model.bias == "distance":
        step = np.exp(-model.lam * np.diff(np.sort(xi)))
        a, total = 0.0, 0.0
        for f in step.tolist():
            a = f * (a + 1.0)
            total += a
        return phi1 * ((n + 2.0 * total) / (n * n)) / 2.0
    rows = max(1, BOUND_BLOCK_ENTRIES // max(n, 1))
    total, nonnegative = 0.0, True
    for a in range(0, n, rows):
        block = np.cos(model.omega * (xi[a:a + rows, None] - xi[None, :]))
        if np.any(block < 0.0):
            nonnegative = False
            break
        total += float(block.sum())
    if nonnegative:
        return phi1 * (total / (n * n)) / 2.0
    c, s = np.cos(model.omega * xi), np.sin(model.omega * xi)
    gram = np.array([[c @ c, c @ s], [c @ s, s @ s]])
    return float(np.linalg.eigvalsh(gram)[-1]) * phi1 / (2.0 * n)
