"""The right-hand side of USA-AV in gauge coordinates (Numba).

In gauge coordinates ``y_i = G(xi_i) x_i`` every model of the package has the
same velocity field (MATH.md section 2, using ``G P_x G^T = P_{G x}``)::

    dy_i/dt = P_{y_i}( v_i ),     v_i = (1/N_i) sum_j w_ij y_j,
    w_ij   = b(xi_i, xi_j) * phi'(<y_i, y_j>),

with ``phi'(s) = exp(beta s)`` (attention profile) or ``phi'(s) = 1``
(linear profile), ``N_i = n`` (USA) or ``N_i = sum_j w_ij`` (SA), and
``P_y v = v - <y, v> y``.  Frozen tokens contribute to every sum but do not
move (their velocity is zero).

The pair sum costs ``n**2`` pair interactions.  ``w`` is symmetric, so each
unordered pair is computed once and added to both tokens; rows are cut into
blocks, block pairs are dealt to chunks of equal work (row block ``c`` with row
block ``nb - 1 - c``), each chunk keeps its own accumulator, and the chunks run
in parallel.  The exponential is the vectorizable one of :mod:`fastexp`.
"""

import numpy as np
from numba import njit, prange

from .fastexp import exp_block

BLOCK = 64


@njit(cache=True, fastmath=True)
def _tile(yt, bias, has_bias, beta, linear, i0, i1, j0, j1, acc, z, buf, bits, scale):
    """Add the pairs (i, j), i in [i0, i1), j in [j0, j1), j > i, to acc and z.

    The column block is copied into ``buf`` (rows 0..d-1: y_j, rows d..2d-1:
    the block's accumulator, row 2d: its z, rows 2d+1, 2d+2: s and w), so the
    inner loops run over contiguous local rows with indices from 0.
    """
    d = yt.shape[0]
    m = j1 - j0
    for k in range(d):
        for jj in range(m):
            buf[k, jj] = yt[k, j0 + jj]
            buf[d + k, jj] = 0.0
    zr = buf[2 * d]
    s = buf[2 * d + 1]
    w = buf[2 * d + 2]
    for jj in range(m):
        zr[jj] = 0.0
    for i in range(i0, i1):
        js = i + 1 - j0 if i + 1 > j0 else 0
        if js >= m:
            continue
        for jj in range(js, m):
            s[jj] = 0.0
        for k in range(d):
            yik = yt[k, i]
            yk = buf[k]
            for jj in range(js, m):
                s[jj] += yik * yk[jj]
        if linear:
            for jj in range(js, m):
                w[jj] = 1.0
        else:
            for jj in range(js, m):
                s[jj] *= beta
            exp_block(s, w, bits, scale, js, m)
        if has_bias:
            for jj in range(js, m):
                w[jj] *= bias[i, j0 + jj]
        zi = 0.0
        for jj in range(js, m):
            zi += w[jj]
            zr[jj] += w[jj]
        z[i] += zi
        for k in range(d):
            yik = yt[k, i]
            yk = buf[k]
            ak = buf[d + k]
            ai = 0.0
            for jj in range(js, m):
                ai += w[jj] * yk[jj]
                ak[jj] += w[jj] * yik
            acc[k, i] += ai
    for k in range(d):
        for jj in range(m):
            acc[k, j0 + jj] += buf[d + k, jj]
    for jj in range(m):
        z[j0 + jj] += zr[jj]


@njit(cache=True, fastmath=True)
def _diagonal(yt, bias, has_bias, beta, linear, acc, z):
    """Add the self-interaction w_ii y_i of every token."""
    d, n = yt.shape
    for i in range(n):
        sii = 0.0
        for k in range(d):
            sii += yt[k, i] * yt[k, i]
        wii = 1.0 if linear else np.exp(beta * sii)
        if has_bias:
            wii *= bias[i, i]
        z[i] += wii
        for k in range(d):
            acc[k, i] += wii * yt[k, i]


@njit(cache=True, parallel=True, fastmath=True)
def pair_sums(yt, bias, has_bias, beta, linear):
    """Return ``(A, Z)`` with ``A[:, i] = sum_j w_ij y_j`` and ``Z[i] = sum_j w_ij``.

    ``yt`` holds the gauge coordinates as a ``(d, n)`` array (one row per
    coordinate).  ``bias`` is the ``(n, n)`` bias matrix when ``has_bias``.
    """
    d, n = yt.shape
    nb = (n + BLOCK - 1) // BLOCK
    nchunks = (nb + 1) // 2
    accs = np.zeros((nchunks, d, n))
    zs = np.zeros((nchunks, n))
    for c in prange(nchunks):
        buf = np.empty((2 * d + 3, BLOCK))
        bits = np.empty(BLOCK, dtype=np.int64)
        scale = bits.view(np.float64)
        for r in range(2):
            ib = c if r == 0 else nb - 1 - c
            if r == 1 and ib == c:
                break
            i0 = ib * BLOCK
            i1 = min(n, i0 + BLOCK)
            for jb in range(ib, nb):
                j0 = jb * BLOCK
                j1 = min(n, j0 + BLOCK)
                _tile(yt, bias, has_bias, beta, linear, i0, i1, j0, j1,
                      accs[c], zs[c], buf, bits, scale)
    acc = np.zeros((d, n))
    z = np.zeros(n)
    for c in range(nchunks):
        acc += accs[c]
        z += zs[c]
    _diagonal(yt, bias, has_bias, beta, linear, acc, z)
    return acc, z


@njit(cache=True, fastmath=True)
def project_velocity(yt, acc, z, sa, mobile, has_frozen, out):
    """``out[:, i] = P_{y_i}(acc[:, i] / N_i)``; zero for frozen tokens."""
    d, n = yt.shape
    for i in range(n):
        if has_frozen and not mobile[i]:
            for k in range(d):
                out[k, i] = 0.0
            continue
        norm = z[i] if sa else n
        dot = 0.0
        for k in range(d):
            dot += yt[k, i] * acc[k, i]
        for k in range(d):
            out[k, i] = (acc[k, i] - dot * yt[k, i]) / norm


@njit(cache=True)
def velocity(yt, bias, has_bias, beta, linear, sa, mobile, has_frozen, out):
    """The velocity field ``dy/dt`` at ``yt`` (both ``(d, n)``), written to ``out``."""
    acc, z = pair_sums(yt, bias, has_bias, beta, linear)
    project_velocity(yt, acc, z, sa, mobile, has_frozen, out)
