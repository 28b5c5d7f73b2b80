"""The compiled sums of fast summation: features chunk by chunk, moments, sums, the scans.

The loop kernels of :class:`.kernel.FastKernel` (its docstring says how the sums are computed:
chunks, two passes, vectorization, one compiled task, threads).  Every inner loop is a counted
loop over contiguous slices, compiled with the fast-math flags of ``expansions.FLAGS``.
"""

import os
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numba
import numpy as np
from numba import njit

from ..rhs import project_normalize
from . import expansions as ex

# ---------------------------------------------------------------------- compiled sums
# Tokens are processed in chunks of ``CH`` columns: the chunk's coordinates are copied into a
# contiguous buffer, its features computed into a ``(p, CH)`` buffer (:mod:`.expansions`), and
# the moments and the evaluation are loops over the tokens of the chunk (vectorized).  Memory:
# per thread ``O(p CH)``, never an ``n x p`` matrix.
CHUNK_BYTES = 1 << 25
"""The largest feature buffer of one thread (32 MB, reached only by large monomial maps)."""
PARALLEL_MIN_FAST = 2048
"""Below this many tokens the sums run on one thread."""


def chunk_size(p):
    """Tokens per chunk: 256 for up to 256 features, else 128, fewer where ``8 p CH`` would
    exceed ``CHUNK_BYTES`` (at least 16).

    Longer loops over the tokens outweigh a buffer beyond the L2 cache (the measurement is in
    the README's "Performance": measurements behind the kernels' choices).

    Parameters
    ----------
    p : int
        Number of features.

    Returns
    -------
    int
    """
    ch = 256 if p <= 256 else 128
    while ch > 16 and p * ch * 8 > CHUNK_BYTES:
        ch //= 2
    return ch


@njit(cache=True, fastmath=ex.FLAGS)
def load_chunk(yt, j0, m, ybuf):
    """Copy the columns ``j0 .. j0 + m - 1`` of ``yt`` into ``ybuf[:, :m]`` (contiguous rows).

    Parameters
    ----------
    yt : ndarray
        ``(d, n)``.
    j0, m : int
        First column and count.
    ybuf : ndarray
        ``(d, >= m)``, overwritten.

    Returns
    -------
    None
    """
    for k in range(yt.shape[0]):
        src = yt[k, j0:j0 + m]
        dst = ybuf[k, :m]
        for j in range(m):
            dst[j] = src[j]


@njit(cache=True, fastmath=ex.FLAGS)
def moment_rows(f, p, g, nq, m, mom):
    """Add a chunk's moments: ``mom[a, q] += sum_j f[a, j] g[q, j]`` (``j < m``).

    One dot product per entry, over the tokens of the chunk (rows in the L1 cache).  Fusing the
    value rows into one loop (several accumulators) measured slower.

    Parameters
    ----------
    f : ndarray
        ``(>= p, >= m)`` features.
    p : int
        Number of features.
    g : ndarray
        ``(>= nq, >= m)`` the weighted values ``[w y, w]`` of the tokens.
    nq : int
        Number of value rows.
    m : int
        Tokens in the chunk.
    mom : ndarray
        ``(p, nq)``, updated.

    Returns
    -------
    None
    """
    for a in range(p):
        fa = f[a, :m]
        for q in range(nq):
            gq = g[q, :m]
            s = 0.0
            for j in range(m):
                s += fa[j] * gq[j]
            mom[a, q] += s


@njit(cache=True, fastmath=ex.FLAGS)
def evaluate_rows(f, p, cm, nq, m, r):
    """A chunk's sums: ``r[q, j] = sum_a cm[a, q] f[a, j]`` (``j < m``).

    Four features at a time into up to four value rows per loop over the tokens, so that each
    output row is loaded and stored once per four features.  ``f, p, nq, m`` are as in
    :func:`moment_rows`; ``cm`` is ``(p, nq)``, the coefficients times the moments, and ``r``
    ``(>= nq, >= m)`` is overwritten in its columns ``0 .. m-1``.
    """
    for q in range(nq):
        rq = r[q, :m]
        for j in range(m):
            rq[j] = 0.0
    c = np.zeros((4, 4))
    for q0 in range(0, nq, 4):
        nr = min(4, nq - q0)
        for a0 in range(0, p, 4):
            na = min(4, p - a0)
            for u in range(4):
                for w in range(4):
                    c[u, w] = cm[a0 + u, q0 + w] if (u < na and w < nr) else 0.0
            evaluate_quad(f[a0, :m], f[a0 + min(1, na - 1), :m], f[a0 + min(2, na - 1), :m],
                          f[a0 + min(3, na - 1), :m], c, r, q0, nr, m)


@njit(cache=True, fastmath=ex.FLAGS)
def evaluate_quad(f0, f1, f2, f3, c, r, q0, nr, m):
    """``r[q0 + w, j] += sum_u c[u, w] f_u[j]`` for ``w < nr`` (four feature rows).

    Parameters
    ----------
    f0, f1, f2, f3 : ndarray
        ``(m,)`` feature rows (a repeated row has zero coefficients).
    c : ndarray
        ``(4, 4)`` coefficients (zero where unused).
    r : ndarray
        Output rows, updated.
    q0, nr : int
        First output row and count (``<= 4``).
    m : int
        Tokens.

    Returns
    -------
    None
    """
    for w in range(nr):
        rw = r[q0 + w, :m]
        c0 = c[0, w]
        c1 = c[1, w]
        c2 = c[2, w]
        c3 = c[3, w]
        for j in range(m):
            rw[j] += c0 * f0[j] + c1 * f1[j] + c2 * f2[j] + c3 * f3[j]


@njit(cache=True, fastmath=ex.FLAGS)
def value_rows(ybuf, m, w, weighted, j0, nq, g):
    """The value rows of a chunk for one weight set: ``g = [w y_1, ..., w y_d, (w)]``.

    Parameters
    ----------
    ybuf : ndarray
        ``(d, >= m)`` the chunk's coordinates.
    m : int
        Tokens in the chunk.
    w : ndarray
        ``(n,)`` weights (read at ``j0 + j``) if ``weighted``.
    weighted : bool
        False: ``w = 1``.
    j0 : int
        The chunk's first token.
    nq : int
        ``d`` or ``d + 1`` (with the row of weights).
    g : ndarray
        ``(>= nq, >= m)`` rows, overwritten.

    Returns
    -------
    None
    """
    d = ybuf.shape[0]
    for k in range(nq):
        gk = g[k, :m]
        if k < d:
            yk = ybuf[k, :m]
            if weighted:
                wk = w[j0:j0 + m]
                for j in range(m):
                    gk[j] = wk[j] * yk[j]
            else:
                for j in range(m):
                    gk[j] = yk[j]
        elif weighted:
            wk = w[j0:j0 + m]
            for j in range(m):
                gk[j] = wk[j]
        else:
            for j in range(m):
                gk[j] = 1.0


@njit(cache=True, fastmath=ex.FLAGS)
def transpose_rows(f, p, m, ft):
    """``ft[j, a] = f[a, j]`` for ``a < p``, ``j < m``.

    Parameters
    ----------
    f : ndarray
        ``(>= p, >= m)``.
    p, m : int
        Sizes.
    ft : ndarray
        ``(>= m, >= p)``, overwritten.

    Returns
    -------
    None
    """
    for a in range(p):
        fa = f[a]
        for j in range(m):
            ft[j, a] = fa[j]


@njit(cache=True, fastmath=ex.FLAGS)
def scan_forward_token(state, fk, coef, dec, gk, nq, out):
    """One token of the forward recursion: ``S <- dec S + f_k g_k``, then the token's sums.

    ``out[q] = sum_a c_a f_a S[q, a]`` with the updated state.

    Parameters
    ----------
    state : ndarray
        ``(nq, p)`` the state ``S`` (row ``q``: value ``q`` of the moments), updated.
    fk : ndarray
        ``(p,)`` the token's features.
    coef : ndarray
        ``(p,)`` coefficients.
    dec : float
        ``exp(-lam (xi_k - xi_{k-1}))`` (0 for the first token).
    gk : ndarray
        ``(nq,)`` the token's values ``[y_k, 1]``.
    nq : int
        Value rows.
    out : ndarray
        ``(nq,)``, overwritten.

    Returns
    -------
    None
    """
    p = fk.shape[0]
    for q in range(nq):
        sq = state[q]
        g = gk[q]
        s = 0.0
        for a in range(p):
            x = dec * sq[a] + fk[a] * g
            sq[a] = x
            s += coef[a] * fk[a] * x
        out[q] = s


@njit(cache=True, fastmath=ex.FLAGS)
def scan_backward_token(state, fk, coef, dec, gk, nq, out):
    """One token of the backward recursion: the token's sums, then ``S <- dec (S + f_k g_k)``.

    ``out[q] = sum_a c_a f_a S[q, a]`` with the state before the update.  The parameters are
    those of :func:`scan_forward_token`, the state ``S`` holding the tokens after this one.
    """
    p = fk.shape[0]
    for q in range(nq):
        sq = state[q]
        g = gk[q]
        s = 0.0
        for a in range(p):
            s += coef[a] * fk[a] * sq[a]
            sq[a] = dec * (sq[a] + fk[a] * g)
        out[q] = s


MOMENTS, SUMS, FORWARD, BACKWARD = 0, 1, 2, 3
"""The tasks of :func:`block_task`."""


class TaskParams(NamedTuple):
    """What every task of one evaluation shares (:func:`block_task`), a record Numba accepts.

    Attributes
    ----------
    ws : ndarray
        ``(S, n)`` weight sets, ``S = 0`` for none.
    nq : int
        Value rows per set.
    code : int
        The feature map (``expansions.BASIS_CODE``).
    degree : int
        Its degree.
    tree : tuple
        ``(parent, var, factor)`` of the Taylor map.
    coef : ndarray
        ``(p,)`` scaled coefficients.
    ch : int
        Tokens per chunk.
    dec : ndarray
        ``(n,)`` decays of the scans (any array otherwise).
    """

    ws: np.ndarray
    nq: int
    code: int
    degree: int
    tree: tuple
    coef: np.ndarray
    ch: int
    dec: np.ndarray


@njit(cache=True, nogil=True, fastmath=ex.FLAGS)
def block_task(mode, yt, j0, j1, tp, mom, cm, res):
    """One task over the tokens ``j0 .. j1 - 1``, chunk by chunk (features computed once each).

    With ``f_a`` the features, ``w_s`` the weight sets (``ws`` with no rows: one set ``w = 1``)
    and ``g_s = [w_s y, w_s]`` (``nq = d`` or ``d + 1`` rows)::

        MOMENTS   mom[a, s nq + q] += sum_j f_a(y_j) g_s[q, j]
        SUMS      res[q, j] = sum_s w_s[j] sum_a cm[a, s nq + q] f_a(y_j)
        FORWARD   res[q, k] = sum_a c_a f_a(y_k) S_k[a, q],
                  S_k = dec[k] S_{k-1} + f(y_k) g_k
        BACKWARD  res[q, k] = sum_a c_a f_a(y_k) T_k[a, q],
                  T_{k-1} = dec[k] (T_k + f(y_k) g_k)

    (the scans over tokens sorted by position, ``T_{n-1} = 0``).  One function for the four
    tasks, so that the feature maps are compiled into one caller only.

    Parameters
    ----------
    mode : int
        :data:`MOMENTS`, :data:`SUMS`, :data:`FORWARD` or :data:`BACKWARD`.
    yt : ndarray
        ``(d, n)`` coordinates (sorted by position for the scans).
    j0, j1 : int
        The tokens of the task (all of them for a scan).
    tp : TaskParams
        The weight sets ``ws``, value rows ``nq``, feature map, coefficients, chunk size and
        decays.
    mom : ndarray
        ``(p, max(S, 1) nq)`` moments, updated by MOMENTS.
    cm : ndarray
        ``(p, max(S, 1) nq)`` coefficients times moments, read by SUMS.
    res : ndarray
        ``(nq, n)`` output of SUMS and the scans (its columns ``j0 .. j1 - 1``).

    Returns
    -------
    None
    """
    ws, nq, code, degree, tree, coef, ch, dec = tp
    d = yt.shape[0]
    p = coef.shape[0]
    weighted = ws.shape[0] > 0
    nsets = ws.shape[0] if weighted else 1
    ybuf = np.empty((d, ch))
    f = np.empty((p, ch))
    scratch = np.empty((7, ch))
    g = np.empty((nq, ch))
    r = np.empty((nsets * nq, ch))
    part = np.empty((p, nq))
    scan = mode == FORWARD or mode == BACKWARD
    if scan:
        ft = np.empty((ch, p))
        state = np.zeros((nq, p))
    else:
        ft = np.empty((1, 1))
        state = np.empty((1, 1))
    gk = np.ones(nq)
    out = np.empty(nq)
    unit = np.ones(1)
    nchunks = (j1 - j0 + ch - 1) // ch
    for cc in range(nchunks):
        c = nchunks - 1 - cc if mode == BACKWARD else cc
        c0 = j0 + c * ch
        m = min(ch, j1 - c0)
        load_chunk(yt, c0, m, ybuf)
        ex.chunk_features(code, ybuf[:, :m], degree, tree[0], tree[1], tree[2], f, scratch)
        if mode == MOMENTS:
            for s in range(nsets):
                value_rows(ybuf, m, ws[s] if weighted else unit, weighted, c0, nq, g)
                part[:, :] = 0.0
                moment_rows(f, p, g, nq, m, part)
                for a in range(p):
                    for q in range(nq):
                        mom[a, s * nq + q] += part[a, q]
        elif mode == SUMS:
            evaluate_rows(f, p, cm, nsets * nq, m, r)
            for q in range(nq):
                dst = res[q, c0:c0 + m]
                if not weighted:
                    src = r[q, :m]
                    for j in range(m):
                        dst[j] = src[j]
                else:
                    for j in range(m):
                        dst[j] = 0.0
                    for s in range(nsets):
                        src = r[s * nq + q, :m]
                        wk = ws[s, c0:c0 + m]
                        for j in range(m):
                            dst[j] += wk[j] * src[j]
        else:
            transpose_rows(f, p, m, ft)
            for jj in range(m):
                j = m - 1 - jj if mode == BACKWARD else jj
                k = c0 + j
                for q in range(d):
                    gk[q] = ybuf[q, j]
                if mode == BACKWARD:
                    scan_backward_token(state, ft[j], coef, dec[k], gk, nq, out)
                else:
                    scan_forward_token(state, ft[j], coef, dec[k], gk, nq, out)
                for q in range(nq):
                    res[q, k] = out[q]


def run_tasks(modes, bounds, yt, tp, moms, cm, res):
    """Run the tasks ``t`` (:func:`block_task`), one per thread, and wait for them.

    Task ``t`` has the mode ``modes[t]`` and the tokens ``bounds[t][0] .. bounds[t][1] - 1``;
    it adds its moments to ``moms[t]`` and writes its sums to ``res[bounds[t][2]]`` (the scans
    one each, the SUMS tasks their own columns of one).  The first task runs in the calling
    thread, the others in :func:`task_pool`'s threads (the compiled task releases the GIL).

    Parameters
    ----------
    modes : sequence of int
        ``T`` modes.
    bounds : sequence of tuple
        ``T`` triples: first token, end, output slot.
    yt : ndarray
        ``(d, n)`` coordinates.
    tp : TaskParams
        What the tasks share.
    moms : ndarray
        ``(T, p, K)`` moments, updated.
    cm : ndarray
        ``(p, K)`` coefficients times moments.
    res : ndarray
        ``(R, nq, n)`` outputs.

    Returns
    -------
    None
    """
    def task(t):
        j0, j1, slot = bounds[t]
        block_task(modes[t], yt, j0, j1, tp, moms[t], cm, res[slot])

    others = [task_pool().submit(task, t) for t in range(1, len(modes))]
    task(0)
    for fut in others:
        fut.result()


_POOL: list[ThreadPoolExecutor] = []
# A forked child has the pool object but not its threads: it builds its own at its first use.
os.register_at_fork(after_in_child=_POOL.clear)


def task_pool():
    """The worker threads of :func:`run_tasks` (created at the first use).

    As many workers as Numba's thread count minus one (the caller runs a task too).  Idle
    workers wait on a lock and use no CPU, so they never compete with other work on a busy
    machine (the concern of the direct kernel's ``OMP_WAIT_POLICY``).

    Returns
    -------
    concurrent.futures.ThreadPoolExecutor
    """
    if not _POOL:
        _POOL.append(ThreadPoolExecutor(max_workers=max(1, numba.get_num_threads() - 1),
                                        thread_name_prefix="usaav-fastsum"))
    return _POOL[0]


@njit(cache=True, fastmath=ex.FLAGS)
def gather_sorted(yt, order, ys):
    """``ys[:, k] = yt[:, order[k]]``.

    Parameters
    ----------
    yt : ndarray
        ``(d, n)``.
    order : ndarray
        ``(n,)`` int64 permutation.
    ys : ndarray
        ``(d, n)``, overwritten.

    Returns
    -------
    None
    """
    for k in range(yt.shape[0]):
        src = yt[k]
        dst = ys[k]
        for j in range(order.shape[0]):
            dst[j] = src[order[j]]


@njit(cache=True, fastmath=ex.FLAGS)
def scatter_sum(res_f, res_b, order, res):
    """``res[:, order[k]] = res_f[:, k] + res_b[:, k]``: the inverse of :func:`gather_sorted`.

    ``res_f`` and ``res_b`` are the two scans' ``(nq, n)`` sums in sorted order, ``order`` the
    permutation of :func:`gather_sorted`, ``res`` ``(nq, n)`` is overwritten.
    """
    for q in range(res.shape[0]):
        rq = res[q]
        fq = res_f[q]
        bq = res_b[q]
        for k in range(order.shape[0]):
            rq[order[k]] = fq[k] + bq[k]


@njit(cache=True, fastmath=ex.FLAGS)
def finish_velocity(yt, res, sa, factor, mobile, has_frozen, out):
    """``out_i = P_{y_i}(A_i) / N_i`` from ``res = e^{-|beta|} [A; Z]``; 0 for a frozen token.

    ``USA: out_i = factor (a_i - <y_i, a_i> y_i)`` with ``factor = e^{|beta|} / n``;
    ``SA: out_i = (a_i - <y_i, a_i> y_i) / z_i`` (the scale cancels).

    Parameters
    ----------
    yt : ndarray
        ``(d, n)``.
    res : ndarray
        ``(d + 1, n)`` (SA) or ``(d, n)`` scaled sums.
    sa : bool
        SA normalization.
    factor : float
        ``e^{|beta|} / n`` (USA).
    mobile : ndarray
        ``(n,)`` bool, read if ``has_frozen``.
    has_frozen : bool
        Some token is frozen.
    out : ndarray
        ``(d, n)``, overwritten.

    Returns
    -------
    None
    """
    d, n = yt.shape
    for k in range(d):
        rk = res[k]
        ok = out[k]
        for i in range(n):
            ok[i] = rk[i]
    project_normalize(yt, np.empty(n), sa, res[d if sa else 0], 1.0 / factor, mobile,
                      has_frozen, out)
