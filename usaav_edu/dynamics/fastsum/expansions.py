r"""Separable expansions of the attention weight ``e^{beta <x, y>}`` on the sphere.

A feature map :math:`f = (f_1, \dots, f_p)` of the sphere :math:`S^{d-1}` and signed
coefficients :math:`c_a` give the rank-:math:`p` approximation

.. math::

    e^{\beta \langle x, y \rangle} \approx K_L(x, y) = \sum_a c_a f_a(x) f_a(y),

truncated at a degree :math:`L`.  It turns a pair sum over :math:`n^2` pairs into two sums
over :math:`n` tokens (:mod:`.fastsum`).  Three maps, each with a bound :math:`\tau_L` of the
truncation error :math:`\sup_{|s| \le 1} |e^{\beta s} - K_L|` from the tail of its
coefficients:

* ``"fourier"`` (d = 2).  With ``x = (cos t, sin t)``, ``y = (cos u, sin u)``, the generating
  function of the modified Bessel functions ``I_k`` gives
  ``e^{beta cos(t - u)} = I_0(beta) + 2 sum_{k >= 1} I_k(beta) cos(k (t - u))`` and
  ``cos(k (t - u)) = cos kt cos ku + sin kt sin ku``.  Features ``1, cos kt, sin kt``
  (``k <= L``), rank ``2L + 1``, ``tau_L = sum_{k > L} 2 |I_k(beta)|``.
* ``"harmonic"`` (d = 3).  The Funk-Hecke formula expands the zonal function in Legendre
  polynomials, ``e^{beta s} = sum_l (2l + 1) i_l(beta) P_l(s)`` (``i_l`` the modified
  spherical Bessel functions), and the addition theorem splits each term,
  ``P_l(<x, y>) = 4 pi / (2l + 1) sum_{m=-l}^{l} Y_lm(x) Y_lm(y)`` with the real orthonormal
  spherical harmonics ``Y_lm``.  Coefficients ``c_lm = 4 pi i_l(beta)``, rank ``(L + 1)^2``,
  ``tau_L = sum_{l > L} (2l + 1) |i_l(beta)|`` (``|P_l| <= 1`` on ``[-1, 1]``).
* ``"taylor"`` (any d; monomial features).  A polynomial ``P(s) = sum_{l <= L} a_l s^l`` and
  the multinomial theorem, ``<x, y>^l = sum_{|alpha| = l} (l! / alpha!) x^alpha y^alpha``:
  features ``sqrt(l! / alpha!) x^alpha`` with coefficients ``a_{|alpha|}``, rank
  ``C(L + d, d)``.  The Taylor polynomial (``a_l = beta^l / l!``, tail
  ``sum_{l > L} |beta|^l / l!``) is not the best choice of ``P``: the kernel uses the
  truncated Chebyshev series of ``e^{beta s}`` on ``[-1, 1]`` (the same generating function
  as the Fourier map, ``e^{beta s} = I_0(beta) + 2 sum_k I_k(beta) T_k(s)``), rewritten in
  powers of ``s`` (:func:`economized`), with ``tau_L = sum_{k > L} 2 |I_k(beta)|``
  (``|T_k| <= 1``).  Its degree is lower for the same ``tol`` (beta = 1, tol = 1e-10: 10
  instead of 13), so in d = 4 the rank is 1001 instead of 2380.  Its power coefficients are
  positive for ``beta > 0`` and sum to about ``e^{|beta|}``, like the Taylor ones: the
  rewriting adds no cancellation.

The linear profile ``phi' = 1`` is the rank-one map ``f = 1`` (``"linear"``, exact).

Scaling.  The coefficients are stored times ``e^{-|beta|}``, so that they stay finite up to
``beta = 700``; the sums carry the factor ``e^{|beta|}`` separately.  The scaled Bessel functions
come from their three-term recurrences run backwards in ratios (Miller's algorithm), normalized
by the expansions themselves at ``s = 1`` (:func:`scaled_bessel_i`,
:func:`scaled_spherical_bessel_i`).  For ``beta < 0``, ``I_k(-b) = (-1)^k I_k(b)`` and
``i_l(-b) = (-1)^l i_l(b)``: the coefficients keep their signs.

The tails.  Each bound is the sum of the terms ``w_l`` (``2 |I_k|`` or ``(2l + 1) |i_l|``)
beyond ``L``.  The terms are summed explicitly up to ``M = L + 1 + 2 ceil(|beta|) + 64``; beyond
``2 |beta|`` every ratio ``w_{l+1} / w_l`` is below 1/2 (``I_{nu+1}(x) / I_nu(x) <
x / (2 nu + 1)``), so the rest is at most ``w_M`` and is added as such.
"""

import math

import numpy as np
from numba import njit

BASES = ("fourier", "harmonic", "taylor", "linear")
SAFETY = 1e-11
"""Relative margin of the tail bounds over the rounding of the computed terms (about 1e-13)."""
MAX_DEGREE = 400
"""The largest degree the selection considers (beyond it, the tolerance is out of reach)."""
MAX_RANK = 250_000
"""The largest number of features (a Taylor map in d >= 4 grows as ``L^d / d!``)."""


def basis_for(d, linear):
    """The feature map used for dimension ``d``.

    Parameters
    ----------
    d : int
        The ambient dimension (tokens on S^{d-1}).
    linear : bool
        Constant ``phi'``: the rank-one map.

    Returns
    -------
    str
        ``"linear"``, ``"fourier"`` (d = 2), ``"harmonic"`` (d = 3) or ``"taylor"``.
    """
    if linear:
        return "linear"
    return {2: "fourier", 3: "harmonic"}.get(d, "taylor")


def rank(basis, d, degree):
    """The number of features ``p`` of a map truncated at ``degree``.

    ``1`` (linear), ``2L + 1`` (Fourier), ``(L + 1)^2`` (harmonic), ``C(L + d, d)`` (Taylor).

    Parameters
    ----------
    basis : str
        One of ``BASES``.
    d : int
        The dimension.
    degree : int
        ``L >= 0``.

    Returns
    -------
    int
    """
    if basis == "linear":
        return 1
    if basis == "fourier":
        return 2 * degree + 1
    if basis == "harmonic":
        return (degree + 1) ** 2
    return math.comb(degree + d, d)


def degree_terms(basis, beta, count):
    """The scaled terms ``w_l e^{-|beta|}`` of the tail bound, ``l = 0 .. count - 1``.

    ``w_l = 2 |I_l(beta)|`` (``w_0 = I_0``; Fourier, and the Chebyshev series of the monomial
    map ``"taylor"``), ``(2l + 1) |i_l(beta)|`` (harmonic); each is ``sup_{|s| <= 1}`` of the
    degree-``l`` part of the expansion.

    Parameters
    ----------
    basis : str
        ``"fourier"``, ``"harmonic"`` or ``"taylor"``.
    beta : float
        The inverse temperature.
    count : int
        How many terms.

    Returns
    -------
    ndarray
        ``(count,)`` non-negative.
    """
    b = abs(float(beta))
    ls = np.arange(count, dtype=np.float64)
    if basis == "harmonic":
        return (2.0 * ls + 1.0) * scaled_spherical_bessel_i(count, b)
    w = 2.0 * scaled_bessel_i(count, b)
    w[0] *= 0.5
    return w


def economized(degree, beta):
    """The power coefficients ``a_l e^{-|beta|}`` of the degree-``L`` Chebyshev truncation.

    ``P_L(s) = I_0(beta) + 2 sum_{k=1}^{L} I_k(beta) T_k(s) = sum_{l <= L} a_l s^l``, rewritten
    in powers by ``numpy.polynomial.chebyshev.cheb2poly``; ``|e^{beta s} - P_L(s)| <=
    sum_{k > L} 2 |I_k(beta)|`` on ``[-1, 1]``.

    Parameters
    ----------
    degree : int
        ``L``.
    beta : float
        The inverse temperature (any sign: ``I_k(-b) = (-1)^k I_k(b)``).

    Returns
    -------
    ndarray
        ``(L + 1,)`` scaled by ``e^{-|beta|}``.
    """
    b = abs(float(beta))
    c = 2.0 * scaled_bessel_i(degree + 1, b) * (-1.0 if beta < 0 else 1.0) ** np.arange(degree + 1)
    c[0] *= 0.5
    out = np.zeros(degree + 1)
    a = np.polynomial.chebyshev.cheb2poly(c)
    out[:a.shape[0]] = a
    return out


def _ratios(count, b, step):
    """Backward continued fraction of a three-term recurrence ``u_{k-1} = (a_k / b) u_k + u_{k+1}``.

    ``r_k = u_k / u_{k-1} = 1 / (a_k / b + r_{k+1})`` with ``a_k = 2k`` (``step = 0``: the
    modified Bessel functions ``I_k``) or ``a_k = 2k + 1`` (``step = 1``: the modified spherical
    Bessel functions ``i_k``), started with ``r_K = 0`` far beyond ``b`` and ``count`` (the
    minimal solution of the recurrence is the one sought: Miller's algorithm, in ratios so that
    nothing overflows for any ``b > 0``).  Returns ``r_1 .. r_{count-1}``.
    """
    top = count + int(math.ceil(b)) + 60 + int(math.ceil(8.0 * math.sqrt(b)))
    r = 0.0
    out = np.zeros(count)
    for k in range(top, 0, -1):
        r = 1.0 / ((2.0 * k + step) / b + r)
        if k < count:
            out[k] = r
    return out


def scaled_bessel_i(count, b):
    """``I_k(b) e^{-b}``, ``k = 0 .. count - 1``, for ``b >= 0`` (modified Bessel functions).

    The ratios ``I_k / I_{k-1}`` from ``_ratios``, normalized by the generating function at
    angle 0, ``e^b = I_0(b) + 2 sum_{k >= 1} I_k(b)``.

    Parameters
    ----------
    count : int
        How many orders.
    b : float
        ``>= 0``.

    Returns
    -------
    ndarray
        ``(count,)``.
    """
    return _normalized(count, b, step=0)


def scaled_spherical_bessel_i(count, b):
    """``i_l(b) e^{-b}``, ``l = 0 .. count - 1``, for ``b >= 0`` (modified spherical Bessel).

    The ratios ``i_l / i_{l-1}`` from ``_ratios``, normalized by the Funk-Hecke expansion at
    ``s = 1`` (``P_l(1) = 1``): ``e^b = sum_l (2l + 1) i_l(b)``.  Parameters and result as
    in :func:`scaled_bessel_i`.
    """
    return _normalized(count, b, step=1)


def _normalized(count, b, step):
    out = np.zeros(count)
    if b == 0.0:
        out[0] = 1.0
        return out
    # the normalization sums over every order, not only the first count
    top = count + int(math.ceil(b)) + 60 + int(math.ceil(8.0 * math.sqrt(b)))
    r = _ratios(top, b, step)
    u = np.empty(top)
    u[0] = 1.0
    for k in range(1, top):
        u[k] = u[k - 1] * r[k]
    weights = 2.0 * np.ones(top) if step == 0 else 2.0 * np.arange(top) + 1.0
    if step == 0:
        weights[0] = 1.0
    u /= float(np.sum(weights * u))
    out[:] = u[:count]
    return out


def tail_bounds(basis, beta, count):
    """``tau_L e^{-|beta|}`` for ``L = 0 .. count - 1``: the scaled truncation bounds.

    ``tau_L = sum_{l > L} w_l``, summed explicitly up to ``M = count + 2 ceil(|beta|) + 64``
    plus ``w_M`` for the rest (module docstring), times ``1 + SAFETY`` for the rounding of the
    computed terms.  ``basis`` and ``beta`` are as in :func:`degree_terms`.

    Parameters
    ----------
    count : int
        How many degrees.

    Returns
    -------
    ndarray
        ``(count,)`` non-increasing.
    """
    m = count + 2 * int(math.ceil(abs(beta))) + 64
    w = degree_terms(basis, beta, m + 1)
    rest = np.cumsum(w[::-1])[::-1]  # rest[l] = sum_{k >= l} w_k  (w_M counted twice: the rest)
    rest = (rest + w[m]) * (1.0 + SAFETY)
    return rest[1:count + 1].copy()


def coefficients(basis, d, beta, degree):
    """The scaled signed coefficients ``c_a e^{-|beta|}`` of the features, in feature order.

    Fourier: ``I_0, 2 I_1, 2 I_1, 2 I_2, 2 I_2, ...`` (features ``1, cos t, sin t, cos 2t,
    sin 2t, ...``).  Harmonic: ``4 pi i_l`` repeated ``2l + 1`` times (features ordered by
    :func:`harmonic_order`).  Monomials: ``a_l`` (:func:`economized`) for each multi-index of
    degree ``l`` (ordered by :func:`monomial_tree`).  Linear: ``[1]``.  ``basis``, ``d`` and
    ``degree`` are as in :func:`rank`.

    Parameters
    ----------
    beta : float
        The inverse temperature.

    Returns
    -------
    ndarray
        ``(p,)`` float64.
    """
    if basis == "linear":
        return np.ones(1)
    sign = -1.0 if beta < 0 else 1.0
    b = abs(float(beta))
    signs = sign ** np.arange(degree + 1)
    if basis == "fourier":
        per = scaled_bessel_i(degree + 1, b) * signs
        out = np.empty(2 * degree + 1)
        out[0] = per[0]
        out[1::2] = 2.0 * per[1:]
        out[2::2] = 2.0 * per[1:]
        return out
    if basis == "harmonic":
        per = 4.0 * math.pi * scaled_spherical_bessel_i(degree + 1, b) * signs
        return np.repeat(per, 2 * np.arange(degree + 1) + 1)
    _, _, _, level = monomial_tree(d, degree)
    return economized(degree, beta)[level]


def harmonic_order(degree):
    """The feature order of the harmonic map: ``(l, m)`` pairs, ``m`` in ``-l .. l``.

    Feature ``l^2 + l + m`` is ``Y_lm`` (``m > 0``: the cosine part, ``m < 0``: the sine part
    of order ``|m|``).

    Parameters
    ----------
    degree : int
        ``L``.

    Returns
    -------
    ndarray
        ``((L + 1)^2, 2)`` int64 rows ``(l, m)``.
    """
    return np.array([(l, m) for l in range(degree + 1) for m in range(-l, l + 1)],
                    dtype=np.int64).reshape(-1, 2)


def monomial_tree(d, degree):
    """The multi-indices ``|alpha| <= L`` as a tree: each feature a parent times a coordinate.

    Feature 0 is ``alpha = 0``.  Every other feature ``a`` has a parent ``parent[a]`` (its
    multi-index minus ``e_k``, ``k = var[a]`` the largest coordinate index in ``alpha``), so that
    with the normalized monomials ``f_alpha = sqrt(l! / alpha!) x^alpha`` ::

        f_a = f_parent[a] * x_var[a] * factor[a],
        factor[a] = sqrt(l / alpha_k)

    Features are ordered by degree (parents first).

    Parameters
    ----------
    d : int
        The dimension.
    degree : int
        ``L``.

    Returns
    -------
    tuple of ndarray
        ``(parent, var, factor, level)``, each ``(C(L + d, d),)``; ``level[a] = |alpha|``.
    """
    alphas = [(0,) * d]
    parent, var, factor, level = [-1], [-1], [1.0], [0]
    start = 0
    for l in range(1, degree + 1):
        stop = len(alphas)
        for a in range(start, stop):
            alpha = alphas[a]
            top = max([k for k in range(d) if alpha[k] > 0], default=0)
            for k in range(top, d):
                new = list(alpha)
                new[k] += 1
                alphas.append(tuple(new))
                parent.append(a)
                var.append(k)
                factor.append(math.sqrt(l / new[k]))
                level.append(l)
        start = stop
    return (np.array(parent, dtype=np.int64), np.array(var, dtype=np.int64),
            np.array(factor), np.array(level, dtype=np.int64))


def features_reference(basis, degree, yt):
    """The features of the tokens by plain NumPy: ``F[a, j] = f_a(y_j)`` (reference code).

    Parameters
    ----------
    basis : str
        One of ``BASES``.
    degree : int
        ``L``.
    yt : ndarray
        ``(d, n)`` unit vectors, one column per token.

    Returns
    -------
    ndarray
        ``(p, n)``.
    """
    d, n = yt.shape
    if basis == "linear":
        return np.ones((1, n))
    if basis == "fourier":
        t = np.arctan2(yt[1], yt[0])
        f = np.empty((2 * degree + 1, n))
        f[0] = 1.0
        for k in range(1, degree + 1):
            f[2 * k - 1] = np.cos(k * t)
            f[2 * k] = np.sin(k * t)
        return f
    if basis == "harmonic":
        return harmonics_reference(degree, yt)
    parent, var, factor, _ = monomial_tree(d, degree)
    f = np.empty((parent.shape[0], n))
    f[0] = 1.0
    for a in range(1, parent.shape[0]):
        f[a] = f[parent[a]] * yt[var[a]] * factor[a]
    return f


def harmonics_reference(degree, yt):
    """Real orthonormal spherical harmonics ``Y_lm(y_j)``, ``l <= L`` (reference code).

    With ``z = y_3`` and ``(y_1 + i y_2)^m = sin^m(theta) e^{i m phi}``, the polynomial part
    ``Q_l^m(z) = Pbar_l^m(z) / sin^m(theta)`` of the normalized associated Legendre function obeys
    (no division by ``sin(theta)``, no ``arctan2``)::

        Q_0^0 = 1 / sqrt(4 pi),   Q_m^m = sqrt((2m + 1) / (2m)) Q_{m-1}^{m-1},
        Q_{m+1}^m = sqrt(2m + 3) z Q_m^m,
        Q_l^m = a_lm (z Q_{l-1}^m - b_lm Q_{l-2}^m),
        a_lm = sqrt((4l^2 - 1) / (l^2 - m^2)),
        b_lm = sqrt(((l-1)^2 - m^2) / (4 (l-1)^2 - 1))

    and ``Y_l0 = Q_l^0``, ``Y_{l,+m} = sqrt(2) Q_l^m Re (y_1 + i y_2)^m``,
    ``Y_{l,-m} = sqrt(2) Q_l^m Im (y_1 + i y_2)^m``.  (The Condon-Shortley sign is left out:
    it cancels in ``Y_lm(x) Y_lm(y)``.)

    Parameters
    ----------
    degree : int
        ``L``.
    yt : ndarray
        ``(3, n)`` unit vectors.

    Returns
    -------
    ndarray
        ``((L + 1)^2, n)`` in the order of :func:`harmonic_order`.
    """
    x, y, z = yt
    n = yt.shape[1]
    f = np.empty(((degree + 1) ** 2, n))
    w = (x + 1j * y)
    power = np.ones(n, dtype=np.complex128)
    qmm = np.full(n, 1.0 / math.sqrt(4.0 * math.pi))
    for m in range(degree + 1):
        if m > 0:
            qmm = qmm * math.sqrt((2.0 * m + 1.0) / (2.0 * m))
            power = power * w
        cos_part = math.sqrt(2.0) * power.real if m > 0 else np.ones(n)
        sin_part = math.sqrt(2.0) * power.imag
        q2, q1 = None, qmm
        for l in range(m, degree + 1):
            if l == m:
                q = qmm
            elif l == m + 1:
                q = math.sqrt(2.0 * m + 3.0) * z * qmm
            else:
                a = math.sqrt((4.0 * l * l - 1.0) / (l * l - m * m))
                b = math.sqrt(((l - 1.0) ** 2 - m * m) / (4.0 * (l - 1.0) ** 2 - 1.0))
                q = a * (z * q1 - b * q2)
            if l > m:
                q2, q1 = q1, q
            f[l * l + l + m] = q * cos_part
            if m > 0:
                f[l * l + l - m] = q * sin_part
    return f


def select_degree(basis, d, beta, tol, factor):
    """The smallest degree ``L`` with ``factor(tau_L e^{-|beta|}) <= tol``, and that bound.

    ``factor`` maps the scaled truncation bound to the bound of the quantity that ``tol`` is
    for (:mod:`.fastsum` derives it), and is non-decreasing.

    Parameters
    ----------
    basis : str
        ``"fourier"``, ``"harmonic"`` or ``"taylor"``.
    d : int
        The dimension.
    beta : float
        The inverse temperature.
    tol : float
        The tolerance, > 0.
    factor : callable
        ``bound = factor(scaled_tau)``, vectorized over an array.

    Returns
    -------
    tuple
        ``(L, bound)``.

    Raises
    ------
    ValueError
        If no degree up to :data:`MAX_DEGREE` (or within :data:`MAX_RANK` features) reaches
        ``tol``.
    """
    taus = tail_bounds(basis, beta, MAX_DEGREE + 1)
    bounds = factor(taus)
    for L in range(MAX_DEGREE + 1):
        if rank(basis, d, L) > MAX_RANK:
            break
        if bounds[L] <= tol:
            return L, float(bounds[L])
    raise ValueError(f"tol = {tol:g} is out of reach of the {basis} expansion at beta = {beta:g} "
                     f"(d = {d}) within {MAX_RANK} features; use summation=\"direct\" or a larger "
                     f"tol")


# ---------------------------------------------------------------------- compiled feature maps
# Each map writes the features of a chunk of tokens into the rows of ``f`` (one row per feature,
# one column per token), so that every inner loop runs over the tokens of the chunk: a counted
# loop over contiguous slices indexed from 0, which LLVM turns into SIMD code.  The fast-math
# flags allow the reassociation that vectorizes the loops but keep ``inf`` and ``nan``.
FLAGS = {"contract", "reassoc", "arcp", "nsz", "afn"}
BASIS_CODE = {"linear": 0, "fourier": 1, "harmonic": 2, "taylor": 3}


@njit(cache=True, fastmath=FLAGS, inline="always")
def constant_feature(f, m):
    """``f[0, j] = 1`` for ``j < m``: the constant feature of the linear, Fourier and Taylor maps."""
    f0 = f[0]
    for j in range(m):
        f0[j] = 1.0


@njit(cache=True, fastmath=FLAGS)
def fourier_chunk(c1, s1, degree, f):
    """Fourier features of a chunk: ``f[0] = 1``, ``f[2k-1] = cos kt``, ``f[2k] = sin kt``.

    With ``(c1, s1) = (cos t, sin t)`` the coordinates of the tokens, by the rotation
    recurrence ``cos kt = cos (k-1)t c1 - sin (k-1)t s1``, ``sin kt = sin (k-1)t c1 +
    cos (k-1)t s1``.

    Parameters
    ----------
    c1, s1 : ndarray
        ``(m,)`` the two coordinates of ``m`` unit vectors of the plane.
    degree : int
        ``L``.
    f : ndarray
        ``(>= 2L + 1, >= m)``, rows ``0 .. 2L`` overwritten in columns ``0 .. m-1``.

    Returns
    -------
    None
    """
    m = c1.shape[0]
    constant_feature(f, m)
    for k in range(1, degree + 1):
        cp = f[2 * k - 3] if k > 1 else c1
        sp = f[2 * k - 2] if k > 1 else s1
        ck = f[2 * k - 1]
        sk = f[2 * k]
        if k == 1:
            for j in range(m):
                ck[j] = c1[j]
                sk[j] = s1[j]
        else:
            for j in range(m):
                ck[j] = cp[j] * c1[j] - sp[j] * s1[j]
                sk[j] = sp[j] * c1[j] + cp[j] * s1[j]


@njit(cache=True, fastmath=FLAGS)
def harmonic_chunk(x, y, z, degree, f, scratch):
    """Real orthonormal spherical harmonics of a chunk, in the order of :func:`harmonic_order`.

    The recurrences of :func:`harmonics_reference` (``Q_l^m`` up the columns ``l >= m``, the
    powers ``(x + i y)^m`` by complex multiplication), each step a loop over the tokens.

    Parameters
    ----------
    x, y, z : ndarray
        ``(m,)`` the coordinates of ``m`` unit vectors.
    degree : int
        ``L``.
    f : ndarray
        ``(>= (L + 1)^2, >= m)``, the feature rows overwritten in columns ``0 .. m-1``.
    scratch : ndarray
        ``(7, >= m)`` work rows.

    Returns
    -------
    None
    """
    m = x.shape[0]
    pr = scratch[0]
    pi = scratch[1]
    qmm = scratch[2]
    q1 = scratch[5]
    q2 = scratch[6]
    root2 = math.sqrt(2.0)
    q00 = 1.0 / math.sqrt(4.0 * math.pi)
    for j in range(m):
        pr[j] = root2
        pi[j] = 0.0
        qmm[j] = q00
    for mo in range(degree + 1):
        if mo > 0:
            g = math.sqrt((2.0 * mo + 1.0) / (2.0 * mo))
            for j in range(m):
                t = pr[j] * x[j] - pi[j] * y[j]
                pi[j] = pr[j] * y[j] + pi[j] * x[j]
                pr[j] = t
                qmm[j] *= g
        # l = m
        fc = f[mo * mo + 2 * mo]
        if mo == 0:
            for j in range(m):
                fc[j] = qmm[j]
        else:
            fs = f[mo * mo]
            for j in range(m):
                fc[j] = qmm[j] * pr[j]
                fs[j] = qmm[j] * pi[j]
        if mo == degree:
            break
        # l = m + 1
        a = math.sqrt(2.0 * mo + 3.0)
        l = mo + 1
        fc = f[l * l + l + mo]
        fs = f[l * l + l - mo]
        for j in range(m):
            q2[j] = qmm[j]
            q1[j] = a * z[j] * qmm[j]
        if mo == 0:
            for j in range(m):
                fc[j] = q1[j]
        else:
            for j in range(m):
                fc[j] = q1[j] * pr[j]
                fs[j] = q1[j] * pi[j]
        for l in range(mo + 2, degree + 1):
            a = math.sqrt((4.0 * l * l - 1.0) / (l * l - mo * mo))
            b = math.sqrt(((l - 1.0) ** 2 - mo * mo) / (4.0 * (l - 1.0) ** 2 - 1.0))
            ab = a * b
            fc = f[l * l + l + mo]
            fs = f[l * l + l - mo]
            if mo == 0:
                for j in range(m):
                    q = a * z[j] * q1[j] - ab * q2[j]
                    q2[j] = q1[j]
                    q1[j] = q
                    fc[j] = q
            else:
                for j in range(m):
                    q = a * z[j] * q1[j] - ab * q2[j]
                    q2[j] = q1[j]
                    q1[j] = q
                    fc[j] = q * pr[j]
                    fs[j] = q * pi[j]


@njit(cache=True, fastmath=FLAGS)
def taylor_chunk(yc, parent, var, factor, f):
    """Normalized monomials ``sqrt(l! / alpha!) y^alpha`` of a chunk (:func:`monomial_tree`).

    ``f[0] = 1`` and ``f[a] = f[parent[a]] * y[var[a]] * factor[a]``.

    Parameters
    ----------
    yc : ndarray
        ``(d, m)`` the chunk's coordinates (rows may be views).
    parent, var : ndarray
        ``(p,)`` int64, the tree.
    factor : ndarray
        ``(p,)`` float64.
    f : ndarray
        ``(>= p, >= m)``, rows ``0 .. p-1`` overwritten in columns ``0 .. m-1``.

    Returns
    -------
    None
    """
    m = yc.shape[1]
    constant_feature(f, m)
    for a in range(1, parent.shape[0]):
        fa = f[a]
        fp = f[parent[a]]
        yk = yc[var[a]]
        g = factor[a]
        for j in range(m):
            fa[j] = fp[j] * yk[j] * g


@njit(cache=True, fastmath=FLAGS)
def chunk_features(code, yc, degree, parent, var, factor, f, scratch):
    """The features of a chunk of tokens by the map ``code`` (``BASIS_CODE``).

    ``f[a, j] = f_a(y_j)`` for the ``m`` columns ``y_j`` of ``yc``.

    ``code`` is 0 linear, 1 Fourier, 2 harmonic, 3 Taylor; ``yc`` the ``(d, m)`` unit vectors (a
    view of the state); ``parent, var, factor`` the Taylor tree (any arrays for the other maps);
    ``degree``, ``f`` (``p`` rows) and ``scratch`` as in :func:`harmonic_chunk`.
    """
    m = yc.shape[1]
    if code == 0:
        constant_feature(f, m)
    elif code == 1:
        fourier_chunk(yc[0], yc[1], degree, f)
    elif code == 2:
        harmonic_chunk(yc[0], yc[1], yc[2], degree, f, scratch)
    else:
        taylor_chunk(yc, parent, var, factor, f)
