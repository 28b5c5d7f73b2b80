"""The particle energy E_h and its bound.

For particles ``z_i = (x_i, xi_i)`` the energy of MATH.md section 2 is

    E_h = (1 / (2 n^2)) sum_{i,j} b_ij phi(<y_i, y_j>),    y_i = G(xi_i) x_i.

It reuses the pair sums of the right-hand side: with ``w_ij = b_ij phi'(s_ij)``,

* attention profile (beta > 0): ``phi = phi' / beta``, so ``E = sum_ij w_ij / (2 beta n^2)``;
* linear profile (or beta = 0): ``phi(s) = s``, ``w_ij = b_ij``, so
  ``E = sum_i <y_i, sum_j w_ij y_j> / (2 n^2)``.
"""

import numpy as np
from .rhs import pair_sums


def energy_gauge(yt, bias, has_bias, beta, linear):
    """E_h of the gauge coordinates ``yt`` (a ``(d, n)`` array)."""
    n = yt.shape[1]
    acc, z = pair_sums(yt, bias, has_bias, beta, linear)
    if linear:
        return float(np.sum(yt * acc)) / (2.0 * n * n)
    return float(np.sum(z)) / (2.0 * beta * n * n)


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
