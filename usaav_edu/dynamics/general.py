r"""Pair sums of attention with general projections and masks (Numba, direct summation).

The models of the book have symmetric weights, which the kernel of :mod:`.rhs` exploits (each
pair once).  Attention as transformers compute it has queries, keys and values
:math:`q_i = Q x_i`, :math:`k_j = K x_j`, :math:`u_j = V x_j` and, with a causal mask, weights
that are not symmetric.  This module sums

.. math::

    A_i = \sum_{j < m_i} w_{ij}\, u_j, \qquad Z_i = \sum_{j < m_i} w_{ij},

    w_{ij} = b_{ij}\, 2^{\,\sigma \langle q_i, k_j \rangle + c_j - c_i}
           = b_{ij}\, e^{\beta \langle q_i, k_j \rangle}\, e^{-\lambda (\xi_i - \xi_j)},

with :math:`\sigma = \beta \log_2 e`, the optional decay :math:`c_j = \lambda \log_2 e\, \xi_j`
(the ALiBi weight of a causal mask), the optional dense bias :math:`b_{ij}` (any matrix, not
necessarily symmetric) and :math:`m_i` the number of keys row :math:`i` attends to (:math:`n`,
or for a causal mask the tokens sorted by position, :math:`m_i` the count of
:math:`\xi_j \le \xi_i`).  With the linear profile the factor :math:`e^{\beta \langle q_i, k_j
\rangle}` is 1.  Every pair is computed (no symmetry), in one fused loop per row for
:math:`d = 3` and in vectorized passes over a scratch row otherwise.  From
``PARALLEL_PAIRS`` pairs on, rows run in parallel, dealt round-robin to one chunk per thread
(so a causal mask's short and long rows mix); below, on one thread.

The exponent is evaluated by :func:`.fastexp.fexp2_in_range` when :func:`exponent_bound`
shows that every exponent is within its range, and by the saturating :func:`.fastexp.fexp2`
otherwise (a weight beyond the double range is then ``inf`` or ``0``, never garbage).
:func:`user_sums` does the same with a Numba-compiled :math:`\varphi'` of one's own in place of
the exponential.
"""

import math

import numpy as np
from numba import njit, prange

from .fastexp import LOG2E, fexp2, fexp2_in_range
from .rhs import IEEE, T_FAST, num_threads

__all__ = ["pair_sums", "exponent_bound", "GeneralField", "user_sums", "user_energy_sum"]


def exponent_bound(qt, kt, scale, decay):
    r"""A bound of every exponent :math:`|\sigma \langle q_i, k_j \rangle + c_j - c_i|`.

    By Cauchy-Schwarz :math:`|\langle q_i, k_j \rangle| \le \max_i |q_i| \max_j |k_j|`, and
    :math:`|c_j - c_i| \le \max c - \min c`.

    Parameters
    ----------
    qt, kt : ndarray
        ``(d, n)`` queries and keys.
    scale : float
        :math:`\sigma = \beta \log_2 e`.
    decay : ndarray or None
        ``(n,)`` the decay exponents :math:`c_j`.

    Returns
    -------
    float
        The bound (``inf`` or ``nan`` for a state that is not finite).
    """
    return _bound(qt, kt, float(scale), decay)


@njit(cache=True, fastmath=IEEE)
def _max_norm2(a):
    d, n = a.shape
    m = 0.0
    for j in range(n):
        s = 0.0
        for c in range(d):
            s += a[c, j] * a[c, j]
        m = s if not s <= m else m  # nan propagates
    return m


@njit(cache=True, fastmath=IEEE)
def _bound(qt, kt, scale, decay):
    bound = abs(scale) * np.sqrt(_max_norm2(qt)) * np.sqrt(_max_norm2(kt))
    if decay is not None and decay.size:
        bound += np.max(decay) - np.min(decay)
    return bound


@njit(cache=True, fastmath=True)
def _weights(tb, qt, kt, i, m, scale, linear, bias, decay, safe):
    """Write the ``m`` weights of row ``i`` into ``tb[:m]`` (general ``d``); return their sum."""
    d = qt.shape[0]
    if linear and decay is None:
        for j in range(m):
            tb[j] = 1.0
    else:
        for j in range(m):
            tb[j] = 0.0
        if not linear:
            for c in range(d):
                qc = scale * qt[c, i]
                row = kt[c]
                for j in range(m):
                    tb[j] += qc * row[j]
        if decay is not None:
            ci = decay[i]
            for j in range(m):
                tb[j] += decay[j] - ci
        if safe:
            for j in range(m):
                tb[j] = fexp2_in_range(tb[j])
        else:
            for j in range(m):
                tb[j] = fexp2(tb[j])
    if bias is not None:
        brow = bias[i]
        for j in range(m):
            tb[j] *= brow[j]
    z = 0.0
    for j in range(m):
        z += tb[j]
    return z


@njit(cache=True, fastmath=True)
def _row3(qt, kt, ut, i, m, scale, linear, bias, decay, safe, acc, z):
    """Row ``i`` for ``d = 3``: one fused loop over the keys (dot product, weight, sums)."""
    q0, q1, q2 = scale * qt[0, i], scale * qt[1, i], scale * qt[2, i]
    k0, k1, k2 = kt[0], kt[1], kt[2]
    u0, u1, u2 = ut[0], ut[1], ut[2]
    ci = 0.0 if decay is None else decay[i]
    a0 = a1 = a2 = zs = 0.0
    for j in range(m):
        t = 0.0 if linear else q0 * k0[j] + q1 * k1[j] + q2 * k2[j]
        if decay is not None:
            t += decay[j] - ci
        if linear and decay is None:
            w = 1.0
        elif safe:
            w = fexp2_in_range(t)
        else:
            w = fexp2(t)
        if bias is not None:
            w *= bias[i, j]
        a0 += w * u0[j]
        a1 += w * u1[j]
        a2 += w * u2[j]
        zs += w
    acc[0, i], acc[1, i], acc[2, i] = a0, a1, a2
    z[i] = zs


@njit(cache=True, fastmath=True)
def _chunk(c, nchunks, qt, kt, ut, scale, linear, bias, decay, limit, safe, acc, z):
    """Rows ``c, c + nchunks, ...`` of the pair sums."""
    d, n = qt.shape
    tb = np.empty(n)
    for i in range(c, n, nchunks):
        m = limit[i]
        if d == 3:
            _row3(qt, kt, ut, i, m, scale, linear, bias, decay, safe, acc, z)
        else:
            z[i] = _weights(tb, qt, kt, i, m, scale, linear, bias, decay, safe)
            for cc in range(d):
                row = ut[cc]
                s = 0.0
                for j in range(m):
                    s += tb[j] * row[j]
                acc[cc, i] = s


@njit(cache=True, parallel=True, fastmath=True)
def _sums_parallel(qt, kt, ut, scale, linear, bias, decay, limit, safe, acc, z):
    n = qt.shape[1]
    nchunks = max(1, min(num_threads(), n))
    for c in prange(nchunks):
        _chunk(c, nchunks, qt, kt, ut, scale, linear, bias, decay, limit, safe, acc, z)


@njit(cache=True, fastmath=True)
def _sums_serial(qt, kt, ut, scale, linear, bias, decay, limit, safe, acc, z):
    _chunk(0, 1, qt, kt, ut, scale, linear, bias, decay, limit, safe, acc, z)


PARALLEL_PAIRS = 1 << 19
"""Pair counts from which the rows run in parallel (below, one thread: no start-up cost)."""


def pair_sums(qt, kt, ut, beta, linear, bias=None, decay=None, limit=None, acc=None, z=None):
    r"""The pair sums :math:`A_i` and :math:`Z_i` of the module docstring.

    Parameters
    ----------
    qt, kt, ut : ndarray
        ``(d, n)`` C-contiguous float64 queries, keys and values, one column per token.
    beta : float
        The inverse temperature (any sign; ignored when ``linear``).
    linear : bool
        True for the linear profile (:math:`\varphi' = 1`).
    bias : ndarray or None
        ``(n, n)`` C-contiguous weights :math:`b_{ij}` (row ``i`` the query), or None for 1.
    decay : ndarray or None
        ``(n,)`` :math:`\lambda \xi_j` (natural units; converted to base 2 here), or None.
    limit : ndarray or None
        ``(n,)`` int64 :math:`m_i`, each in ``[0, n]`` (keys ``0 .. m_i - 1``); None for all.
    acc, z : ndarray or None
        ``(d, n)`` and ``(n,)`` outputs, allocated when None.

    Returns
    -------
    tuple of ndarray
        ``(acc, z)``: :math:`A` as ``(d, n)`` columns and :math:`Z` as ``(n,)``.
    """
    d, n = qt.shape
    scale = 0.0 if linear else float(beta) * LOG2E
    dec = None if decay is None else np.ascontiguousarray(decay, dtype=np.float64) * LOG2E
    lim = np.full(n, n, dtype=np.int64) if limit is None else limit
    safe = exponent_bound(qt, kt, scale, dec) <= T_FAST
    acc = np.empty((d, n)) if acc is None else acc
    z = np.empty(n) if z is None else z
    pairs = int(np.sum(lim)) if limit is not None else n * n
    run = _sums_parallel if pairs >= PARALLEL_PAIRS else _sums_serial
    run(qt, kt, ut, scale, bool(linear), bias, dec, lim, bool(safe), acc, z)
    return acc, z


def _user_kernels(dphi, phi):
    """The pair sums and the energy sum of a profile of one's own, compiled once per pair."""
    nodes, weights = _gauss_legendre()

    @njit(parallel=True, fastmath=True)
    def sums(qt, kt, ut, bias, decay, limit, acc, z):
        d, n = qt.shape
        nchunks = max(1, min(num_threads(), n))
        for c in prange(nchunks):
            tb = np.empty(n)
            for i in range(c, n, nchunks):
                m = limit[i]
                zs = 0.0
                for j in range(m):
                    s = 0.0
                    for cc in range(d):
                        s += qt[cc, i] * kt[cc, j]
                    w = dphi(s)
                    if decay is not None:
                        w *= math.exp(decay[j] - decay[i])
                    if bias is not None:
                        w *= bias[i, j]
                    tb[j] = w
                    zs += w
                z[i] = zs
                for cc in range(d):
                    row = ut[cc]
                    a = 0.0
                    for j in range(m):
                        a += tb[j] * row[j]
                    acc[cc, i] = a

    @njit(parallel=True, fastmath=True)
    def energy(qt, kt, bias, decay, limit):
        d, n = qt.shape
        out = np.zeros(n)
        for i in prange(n):
            e = 0.0
            for j in range(limit[i]):
                s = 0.0
                for cc in range(d):
                    s += qt[cc, i] * kt[cc, j]
                if phi is None:
                    w = 0.0
                    for k in range(nodes.shape[0]):
                        w += weights[k] * dphi(s * nodes[k])
                    w *= s
                else:
                    w = phi(s)
                if decay is not None:
                    w *= math.exp(decay[j] - decay[i])
                if bias is not None:
                    w *= bias[i, j]
                e += w
            out[i] = e
        return out

    return sums, energy


def _gauss_legendre():
    """The 10-point Gauss-Legendre rule on [0, 1] (nodes, weights)."""
    t, w = np.polynomial.legendre.leggauss(10)
    return 0.5 * (t + 1.0), 0.5 * w


_USER_CACHE: dict = {}


def _user(dphi, phi):
    key = (id(dphi), id(phi))
    hit = _USER_CACHE.get(key)
    if hit is None or hit[0] is not dphi or hit[1] is not phi:
        hit = (dphi, phi, *_user_kernels(dphi, phi))
        _USER_CACHE[key] = hit
    return hit[2], hit[3]


def user_sums(dphi, phi, qt, kt, ut, bias=None, decay=None, limit=None, acc=None, z=None):
    r""":math:`A_i = \sum_{j < m_i} b_{ij} e^{c_j - c_i} \varphi'(\langle q_i, k_j \rangle) u_j`
    and :math:`Z_i`.

    ``dphi`` and ``phi`` (or None) are Numba-compiled scalar functions (``numba.njit``); the
    kernels that call them are compiled on the first call for each pair (kept for the
    process).  ``decay`` holds :math:`c_j = \lambda \xi_j` in natural units; the other
    arguments are those of :func:`pair_sums`.

    Returns
    -------
    tuple of ndarray
        ``(acc, z)``.
    """
    d, n = qt.shape
    lim = np.full(n, n, dtype=np.int64) if limit is None else limit
    acc = np.empty((d, n)) if acc is None else acc
    z = np.empty(n) if z is None else z
    _user(dphi, phi)[0](qt, kt, ut, bias, decay, lim, acc, z)
    return acc, z


def user_energy_sum(dphi, phi, qt, kt, bias=None, decay=None, limit=None):
    r""":math:`\sum_i \sum_{j < m_i} b_{ij} e^{c_j - c_i} \varphi(\langle q_i, k_j \rangle)`.

    With ``phi`` None, :math:`\varphi(s) = s \sum_k w_k \varphi'(s t_k)` (10-point
    Gauss-Legendre on :math:`[0, 1]`, :mod:`usaav_edu.models.user_profile`).  A float.
    """
    n = qt.shape[1]
    lim = np.full(n, n, dtype=np.int64) if limit is None else limit
    return float(math.fsum(_user(dphi, phi)[1](qt, kt, bias, decay, lim)))


class GeneralField:
    r"""``field(xt, out)``: the velocity of a run of the general kernel, in content coordinates.

    .. math::

        q_i = G_i Q x_i, \quad k_j = G_j K x_j, \quad
        u_j = G_j V x_j \text{ (values transported) or } V x_j,

        \frac{dx_i}{dt} = P_{x_i}\Big( \frac{1}{N_i}\, R_i \sum_{j < m_i} w_{ij}\, u_j \Big),

    with the weights of :func:`pair_sums`, :math:`R_i = G_i^T` when the values are transported
    (else the identity), :math:`N_i = n` (USA) or :math:`Z_i` (SA), and zero velocity for frozen
    tokens.  A causal mask sorts the tokens by position once (stable, so equal positions keep
    their order) and sums each row over the keys at positions up to its own.

    Parameters
    ----------
    kernel : KernelInput
        A run whose ``attention`` is set (:meth:`usaav_edu.models.model.Model.kernel`).
    """

    def __init__(self, kernel):
        model, a = kernel.model, kernel.attention
        proj = model.projections
        self.n = kernel.n
        self.q, self.k, self.v = (None if proj is None else getattr(proj, name)
                                  for name in ("Q", "K", "V"))
        identity = getattr(model.gauge, "kind", None) == "identity"
        self.g = None if identity else np.ascontiguousarray(model.gauge_matrices(kernel.xi,
                                                                                 kernel.d))
        self.rotate = bool(model.rotate_values)
        p = a.params
        self.beta, self.linear, self.sa = float(p.beta), bool(p.linear), bool(p.sa)
        prof = model.profile
        self.user = ((prof.dphi_function, prof.phi_function)
                     if getattr(prof, "kind", None) == "user" else None)
        self.bias = None if a.bias is None else np.ascontiguousarray(a.bias, dtype=np.float64)
        self.order = self.limit = self.decay = None
        if a.causal:
            order = np.argsort(kernel.xi, kind="stable")
            xs = kernel.xi[order].astype(np.float64)
            self.order = order
            self.limit = np.searchsorted(xs, xs, side="right").astype(np.int64)
            self.decay = None if a.lam == 0.0 else a.lam * (xs - xs[0])
        self.has_frozen = bool(p.has_frozen)
        self.mobile = p.mobile

    def _projected(self, xt):
        """Queries, keys and values ``(d, n)``, in the sorted order of a causal mask."""
        out = []
        for m, rotate in ((self.q, True), (self.k, True), (self.v, self.rotate)):
            c = xt if m is None else m @ xt
            if self.g is not None and rotate:
                c = np.einsum("nij,jn->in", self.g, c)
            if self.order is not None:
                c = c[:, self.order]
            out.append(np.ascontiguousarray(c))
        return out

    def _unsorted(self, a, z):
        if self.order is None:
            return a, z
        a2, z2 = np.empty_like(a), np.empty_like(z)
        a2[:, self.order], z2[self.order] = a, z
        return a2, z2

    def __call__(self, xt, out):
        """Write the velocity at the contents ``xt`` (``(d, n)``) into ``out``; return ``out``."""
        q, k, u = self._projected(xt)
        if self.user is not None:
            sums = user_sums(*self.user, q, k, u, self.bias, self.decay, self.limit)
        else:
            sums = pair_sums(q, k, u, self.beta, self.linear, self.bias, self.decay, self.limit)
        acc, z = self._unsorted(*sums)
        a = acc / z if self.sa else acc / self.n
        if self.g is not None and self.rotate:
            a = np.einsum("nji,jn->in", self.g, a)
        a -= np.sum(a * xt, axis=0) * xt
        if self.has_frozen:
            a[:, ~self.mobile] = 0.0
        out[:] = a
        return out

    def energy(self, xt):
        r""":math:`E = \frac{1}{2 n^2} \sum_{i, j < m_i} b_{ij} \varphi(\langle q_i, k_j \rangle)`.

        With :math:`\varphi(s) = e^{\beta s} / \beta` it is :math:`\sum_i Z_i / (2 \beta n^2)`;
        with the linear profile :math:`\sum_i \langle q_i, \sum_j w_{ij} k_j \rangle / (2 n^2)`.
        It is the energy of a gradient flow only where the model is one
        (:mod:`usaav_edu.models.projections`).
        """
        q, k, u = self._projected(xt)
        n2 = 2.0 * self.n * self.n
        if self.user is not None:
            return user_energy_sum(*self.user, q, k, self.bias, self.decay, self.limit) / n2
        if self.linear or self.beta == 0.0:
            acc, _ = pair_sums(q, k, k, 0.0, True, self.bias, self.decay, self.limit)
            return float(np.sum(q * acc)) / n2
        _, z = pair_sums(q, k, u, self.beta, False, self.bias, self.decay, self.limit)
        return float(math.fsum(z)) / (self.beta * n2)
