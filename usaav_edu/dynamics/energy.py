"""The particle energy E_h and its bound.

For particles ``z_i = (x_i, xi_i)`` the energy of MATH.md section 2 is

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


def energy_bound(model, bias, n):
    """An upper bound of E_h over all configurations of ``n`` tokens.

    * ``b >= 0`` (no bias, distance bias): ``phi(1) * mean(b) / 2``, since
      ``<y_i, y_j> <= 1`` and ``phi`` increases; attained exactly by the gauge
      maximizers (all ``y_i`` equal).
    * sign-changing ``b``: ``lambda_max(B) / (2 n)`` for the linear profile
      (``sum_ij b_ij <y_i, y_j> = tr(Y^T B Y) <= lambda_max n``) and
      ``lambda_max(B) e^beta / (2 beta n)`` for the attention profile (expand
      ``e^{beta s}`` in powers of ``s``; each power is a Gram matrix of unit vectors).
    """
    phi1 = 1.0 if model.linear else np.exp(model.beta) / model.beta
    if bias is None:
        return phi1 / 2.0
    if np.all(bias >= 0.0):
        return phi1 * float(np.mean(bias)) / 2.0
    lam = float(np.linalg.eigvalsh(bias)[-1])
    return lam * phi1 / (2.0 * n)
