r"""The particle energy :math:`E_h` and its bound.

For particles :math:`z_i = (x_i, \xi_i)` the energy of the USA-AV model (chapter 3 of the book)
is

.. math::

    E_h = \frac{1}{2 n^2} \sum_{i,j} b_{ij}\, \varphi(\langle y_i, y_j \rangle),
    \qquad y_i = G(\xi_i)\, x_i.

It reuses the pair sums of the right-hand side: with
:math:`w_{ij} = b_{ij} \varphi'(s_{ij})`, :math:`s_{ij} = \langle y_i, y_j \rangle`,

* attention profile (:math:`\beta \ne 0`): :math:`\varphi = \varphi' / \beta`, so
  :math:`E_h = \sum_{ij} w_{ij} / (2 \beta n^2)`;
* linear profile (or :math:`\beta = 0`): :math:`\varphi(s) = s`, :math:`w_{ij} = b_{ij}`, so
  :math:`E_h = \sum_i \langle y_i, \sum_j w_{ij} y_j \rangle / (2 n^2)`.

For large beta the attention sum overflows although :math:`E_h` does not (a collapsed state at
:math:`\beta = 700` has :math:`E_h = e^{700} / 1400 = 7.2 \cdot 10^{300}` while the sum of its
:math:`n^2` weights exceeds the double range for :math:`n > 133`); then :math:`E_h` is
recomputed with :math:`e^\beta` factored out (:func:`energy_scaled`).
"""

import math

import numpy as np

from .rhs import pair_sums

BLOCK_ENTRIES = 1 << 18
"""Entries of one row block of the pair matrix in :func:`energy_scaled` (2 MB)."""


def energy_gauge(yt, params):
    r"""The particle energy :math:`E_h` of the gauge coordinates ``yt`` (a ``(d, n)`` array).

    From the kernel's pair sums (:func:`.rhs.pair_sums`) :math:`A_i = \sum_j w_{ij} y_j` and
    :math:`Z_i = \sum_j w_{ij}`, :math:`w_{ij} = b_{ij} \varphi'(\langle y_i, y_j \rangle)`:

    .. math::

        E_h = \frac{1}{2 n^2} \sum_{i,j} b_{ij}\, \varphi(\langle y_i, y_j \rangle),

        E_h = \begin{cases}
              \sum_i Z_i / (2 \beta n^2) & \text{attention, } \varphi(s) = e^{\beta s} / \beta,
              \\
              \sum_i \langle y_i, A_i \rangle / (2 n^2) & \text{linear, } \varphi(s) = s.
              \end{cases}

    Parameters
    ----------
    yt : ndarray
        ``(d, n)`` gauge coordinates.
    params : KernelParams
        The kernel's parameters (:class:`usaav_edu.dynamics.rhs.KernelParams`).

    Returns
    -------
    float
        Computed from the kernel's pair sums; if their total overflows, by
        :func:`energy_scaled`.

    Raises
    ------
    OverflowError
        If E itself exceeds the double range.

    References
    ----------
    Definition 1.2 (ch1-def-energy), Definition 3.1 (ch3-def-av) and Definition 7.1
    (ch7-def-bias) of the book.
    """
    n = yt.shape[1]
    bias, has_bias, beta, linear = params.bias, params.has_bias, params.beta, params.linear
    acc, z = pair_sums(yt, bias, has_bias, beta, linear)
    if linear:
        return float(np.sum(yt * acc)) / (2.0 * n * n)
    with np.errstate(over="ignore"):
        e = float(np.sum(z)) / (2.0 * beta * n * n)
    if math.isfinite(e):
        return e
    return energy_scaled(yt, bias if has_bias else None, beta)


def energy_scaled(yt, bias, beta):
    r""":math:`E_h` of the attention profile without overflow, for ``|b| <= 1`` and ``beta != 0``.

    With :math:`|s_{ij}| = |\langle y_i, y_j \rangle| \le 1`, so that
    :math:`\beta s_{ij} \le |\beta|`, every term of :math:`m` is at most :math:`|b_{ij}|`:

    .. math::

        E_h = \frac{e^{|\beta|}}{2 \beta}\, m, \qquad
        m = \frac{1}{n^2} \sum_{ij} b_{ij}\, e^{\beta s_{ij} - |\beta|}

    (the exponent is :math:`\beta (s_{ij} - 1)` for :math:`\beta > 0` and
    :math:`\beta (s_{ij} + 1)` for :math:`\beta < 0`).
    :math:`m` is summed over blocks of rows of the pair matrix (at most ``BLOCK_ENTRIES``
    entries each, never the whole ``n x n`` matrix for large n).  For :math:`|\beta| \ge 709`,
    where :math:`e^{|\beta|}` overflows, :math:`E_h = \operatorname{sign}(\beta m)
    \exp(|\beta| - \log(2 |\beta|) + \log|m|)`.

    Parameters
    ----------
    yt : ndarray
        ``(d, n)`` gauge coordinates.
    bias : ndarray or None
        ``(n, n)`` bias matrix, or None for ``b = 1``.
    beta : float
        Inverse temperature, nonzero.

    Returns
    -------
    float
        E_h.

    Raises
    ------
    OverflowError
        If E exceeds the double range.

    References
    ----------
    Definition 1.2 (ch1-def-energy) and Definition 7.1 (ch7-def-bias) of the book.
    """
    d, n = yt.shape
    y = np.ascontiguousarray(yt.T)
    rows = max(1, BLOCK_ENTRIES // n)
    top = 1.0 if beta > 0.0 else -1.0  # the s at which e^{beta s} is largest
    size = abs(beta)
    total = 0.0
    for i0 in range(0, n, rows):
        w = np.exp(beta * (y[i0:i0 + rows] @ yt - top))
        if bias is not None:
            w *= bias[i0:i0 + rows]
        total += float(np.sum(w))
    m = total / (n * n)
    log_e = size - math.log(2.0 * size) + (math.log(abs(m)) if m != 0.0 else 0.0)
    if not math.isfinite(m) or log_e > math.log(np.finfo(np.float64).max):
        raise OverflowError(f"the energy E_h = e^beta / (2 beta) * {m:.6g} (beta = {beta:g}) exceeds the "
                            f"largest double, {np.finfo(np.float64).max:.3g}")
    if size < 709.0:  # e^|beta| is a finite double: the most accurate order of operations
        return math.exp(size) / (2.0 * beta) * m
    return math.copysign(math.exp(log_e), m * top) if m != 0.0 else 0.0


def energy_bound(model, xi, n):
    r"""An upper bound of :math:`E_h` for ``n`` tokens with labels ``xi``, over their states.

    With :math:`B_{ij} = b(\xi_i, \xi_j)`, :math:`\varphi(1) = e^\beta / \beta` (1 for the
    linear profile) and :math:`\operatorname{mean}(B) = \frac{1}{n^2} \sum_{ij} B_{ij}`:

    .. math::

        E_h \le \begin{cases}
                \varphi(1) \operatorname{mean}(B) / 2 & \text{if } B \ge 0
                \text{ entrywise,} \\
                \varphi(1)\, \lambda_{\max}(B) / (2 n) & \text{otherwise.}
                \end{cases}

    * :math:`B \ge 0` (no bias, the distance bias, a cosine bias whose positions all lie within
      a quarter period): :math:`\langle y_i, y_j \rangle \le 1` and :math:`\varphi` increases;
      the bound is attained exactly by the gauge maximizers (all :math:`y_i` equal);
    * otherwise: for the linear profile
      :math:`\sum_{ij} b_{ij} \langle y_i, y_j \rangle = \operatorname{tr}(Y^T B Y)
      \le n \lambda_{\max}(B)`; for the attention profile expand :math:`e^{\beta s}` in powers
      of :math:`s`, each power a Gram matrix of unit vectors.

    For :math:`\beta < 0` the profile :math:`\varphi(s) = e^{\beta s} / \beta` is negative and
    still increasing, so the first case holds as it is (attained by collapse).  The second
    does not: the powers of :math:`s` come with alternating signs.  Since
    :math:`b_{ij} \varphi(s_{ij}) \le 0` where :math:`b_{ij} \ge 0` and
    :math:`|\varphi| \le e^{|\beta|} / |\beta|`, the bound is then
    :math:`\max|b|\, e^{|\beta|} / (2 |\beta|)` (not attained).

    Parameters
    ----------
    model : Model
        The model; its bias gives the factor (``model.bound_factor``, computed without an
        ``n x n`` matrix for the built-in biases).
    xi : ndarray
        Labels already checked (``model.check_labels``).
    n : int
        Number of tokens.

    Returns
    -------
    float
        The bound (``phi(1) / 2`` for ``n = 0``).

    References
    ----------
    Theorem 7.1 (ch7-thm-nonneg) of the book: the bound for a non-negative bias and its
    maximizers; chapter 7 for a bias of either sign.  arXiv:2605.30229.
    """
    phi1 = 1.0 if model.linear else math.exp(model.beta) / model.beta
    if n == 0:
        return phi1 / 2.0
    if not model.linear and model.beta < 0.0 and xi is not None:
        facts = model.bias_facts(xi)
        if facts.negative:
            size = abs(model.beta)
            return float(facts.max_abs) * math.exp(size) / (2.0 * size)
    return phi1 * model.bound_factor(xi) / 2.0
