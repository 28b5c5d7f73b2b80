r"""The right-hand side of USA-AV in gauge coordinates (Numba).

In gauge coordinates :math:`y_i = G(\xi_i)\, x_i` every model of the package has the same
velocity field (the USA-AV model of chapter 3 of the book, using
:math:`G P_x G^T = P_{G x}`):

.. math::

    \frac{dy_i}{dt} = P_{y_i}(v_i), \qquad v_i = \frac{1}{N_i} \sum_j w_{ij}\, y_j,
    \qquad w_{ij} = b(\xi_i, \xi_j)\, \varphi'(\langle y_i, y_j \rangle),

with :math:`\varphi'(s) = e^{\beta s}` (attention profile) or :math:`\varphi'(s) = 1` (linear
profile), :math:`N_i = n` (USA) or :math:`N_i = \sum_j w_{ij}` (SA), and
:math:`P_y v = v - \langle y, v \rangle y`.  Frozen tokens contribute to every sum but do not
move (their velocity is zero).

The pair sums :math:`A_i = \sum_j w_{ij} y_j` (the column ``A[:, i]``) and
:math:`Z_i = \sum_j w_{ij}` cost :math:`n^2` pair interactions.  How they are computed:

* Symmetry.  ``w`` is symmetric, so each unordered pair ``i < j`` is computed
  once and added to both tokens: ``A[:, i] += w_ij y_j`` is a vector
  reduction over ``j`` and ``A[:, j] += w_ij y_i`` a vector update.  The
  diagonal ``w_ii y_i`` is added at the end.
* SIMD loops.  For a row ``i`` the single-row loop over ``j`` computes
  ``t = <beta log2(e) y_i, y_j>`` (the constants are folded into ``y_i``
  once per row), the weight ``w = 2**t = exp(beta <y_i, y_j>)`` with the
  inlined, branch-free :func:`.fastexp.fexp2_in_range`, and both updates, all in
  registers; LLVM vectorizes it to AVX2 (4 pairs per instruction).  The
  loops run over array slices indexed from 0, so Numba emits no
  negative-index wraparound and LLVM sees plain counted loops.
* Local buffers.  Each chunk of work copies ``y`` into the first rows of its
  own ``(2d + 3, n)`` buffer, whose next rows are the chunk's accumulators
  (``A``, then ``Z``, then two scratch rows).  All inner loops read and
  write contiguous rows of that one array, with no strided access.
* Column tiles.  Rows are swept against one column tile of ``BLOCK`` tokens
  at a time, so the tile's rows of the buffer stay in the L1 cache.
* ``d = 3`` is specialized (the dot product and the three updates unrolled).
  The rows of a chunk are taken two at a time (:func:`row3_pair`): the
  weights of both rows go first into two scratch rows of the buffer (two
  short loops, each a dot product and an exponential per pair), then one
  loop adds both rows' sums, so each column accumulator is loaded and
  stored once for two rows.  The part of the triangle that only the first
  row of the two has uses the single-row loop :func:`row3`.  Other ``d`` use
  the same layout with the dot product, the weights and the updates as
  separate vectorized loops over scratch rows (:func:`row_general`).
* Each loop kernel (:func:`row3`, :func:`row3_pair`, :func:`row_general`)
  vectorizes when compiled on its own.  Numba compiles every called
  function also as a library of its own, and in the process that compiles
  them (before the disk cache exists) a caller can bind to that copy; a
  kernel that vectorized only once inlined into its caller would run as
  scalar code, about three times slower, in that first process.
  ``tests/test_kernel.py`` checks this in a fresh process.  (This is also
  why :func:`row3_pair` repeats the set-up lines of :func:`row3` instead of
  calling helpers: split into separate functions it ran about 9% slower.)
* Range.  :func:`.fastexp.fexp2_in_range` is the saturating
  :func:`.fastexp.fexp2` without its two selects, which would cost about 9%
  of the throughput; it is correct for ``-1022 <= t < 1024``.  Once per call
  :func:`fast_range` checks ``|beta| log2(e) max_i |y_i|^2 <= T_FAST``,
  which bounds every ``|t|``; on the sphere this holds for ``|beta| <= 707``
  (the models allow ``beta <= 700``).  Otherwise (or for a ``nan``) the pair
  sums are computed by plain loops with the saturating exponential
  (:func:`saturated_chunk_sums`), so that a weight beyond the double range is
  ``inf`` or ``0``, never garbage.
* Bias.  The no-bias case passes ``None`` as the bias row, so Numba compiles
  it without the multiplication (a branch on the type, not in the loop).
* Parallelism.  Rows are dealt to one chunk per thread, of equal work (chunk
  ``c`` gets rows ``i`` with ``i mod 2 nchunks`` equal to ``c`` or
  ``2 nchunks - 1 - c``, pairing long and short rows of the triangle); the
  chunks run in parallel and their buffers are summed.  Beside a process
  that keeps one of two cores busy, the thread sharing that core sets the
  pace, and an evaluation takes about as long as with one thread.  Smaller
  chunks claimed in turn (an atomic counter) would let the thread on the
  free core do more of them, but with four chunks per thread an idle
  machine lost throughput (README, "Performance"), so the chunks stay one
  per thread.
* Threads on a busy machine.  Numba's threading layer is the first of TBB,
  OpenMP and its own workqueue that loads; with the pip wheels on Linux
  (no TBB) it is OpenMP (GNU libgomp).  By default libgomp's idle workers
  spin for a while after each parallel region, waiting for the next one.
  The kernel starts a region per evaluation, every few hundred
  microseconds, so its workers never sleep: on a machine whose cores are
  busy with other work they use up their share of the CPU spinning, and a
  worker that the scheduler has set aside holds up the others at the end
  of the region: several times slower than one thread under the same load
  (``benchmarks/contention.py``; README, "Performance").  The package therefore sets, when it is
  imported and before the threading layer starts,
  ``OMP_WAIT_POLICY=passive`` (idle workers sleep at once; a woken thread
  is scheduled promptly, a spinning one is not favoured), unless the user's
  environment sets it (then theirs wins; and if a parallel Numba function
  ran before the package was imported, the layer has started with its
  own setting).  Under TBB, whose workers go to
  sleep on their own, it has no effect.  The workqueue layer, which also
  sleeps, is not chosen: a second Python thread calling a parallel function
  at the same time aborts the process.  The number of threads is Numba's
  default, the CPUs this process may run on (``os.sched_getaffinity``),
  lowered to a cgroup CPU quota (``cpu.max``) if there is one
  (``usaav_edu/__init__.py``; a ``NUMBA_NUM_THREADS`` set by the user
  wins).  ``benchmarks/contention.py`` measures the effect.
* Serial below ``PARALLEL_MIN`` tokens.  Waking sleeping workers costs tens
  of microseconds, and at 256 tokens (d = 3) two threads are no faster than
  one even on an idle machine (README, "Performance"); a serial evaluation
  also cannot be held up by a descheduled worker.
"""

import os
from typing import NamedTuple

import numba
import numpy as np
from numba import njit, prange

# ``numba.get_num_threads()`` compiles to a ctypes pointer, which makes the
# caller uncacheable; this intrinsic calls the same runtime symbol directly.
from numba.np.ufunc.parallel import _iget_num_threads as num_threads

from .fastexp import LOG2E, T_LO, fexp2, fexp2_in_range

# Start the threading layer now: it registers the runtime symbols (thread
# count, scheduler) that compiled code calls.  A parallel function reloaded
# from the cache does this itself, but a cached caller of one (``velocity``
# below, or other compiled code calling ``pair_sums``) does not.
numba.get_num_threads()

BLOCK = 256
PARALLEL_MIN = 300


class KernelParams(NamedTuple):
    """The parameters of the velocity field, by name (a NamedTuple, so compiled code takes it).

    Attributes
    ----------
    bias : ndarray
        The symmetric ``(n, n)`` bias matrix ``b(xi_i, xi_j)`` when ``has_bias``, else any
        2-D array (``np.ones((1, 1))``).
    has_bias : bool
        False for ``b = 1``: the loops are compiled without the multiplication.
    beta : float
        The inverse temperature of the attention profile ``phi'(s) = e^{beta s}``.
    linear : bool
        True when ``phi'`` is constant (linear profile, or ``beta = 0``).
    sa : bool
        True for the SA normalization ``N_i = sum_j w_ij``, False for USA (``N_i = n``).
    mobile : ndarray of bool
        ``(n,)``: which tokens move, read only when ``has_frozen``.
    has_frozen : bool
        True when some token is frozen (it attends but does not move).
    """

    bias: np.ndarray
    has_bias: bool
    beta: float
    linear: bool
    sa: bool
    mobile: np.ndarray
    has_frozen: bool


def kernel_params(bias=None, beta=1.0, linear=False, sa=False, mobile=None):
    r"""A :class:`KernelParams` with the conventions of the kernel filled in.

    The parameters select the weights and the normalization of the field:

    .. math::

        w_{ij} = b_{ij}\, \varphi'(\langle y_i, y_j \rangle), \qquad
        \varphi'(s) = e^{\beta s} \text{ or } 1 \text{ (linear)},

        N_i = n \text{ (USA) or } \sum_j w_{ij} \text{ (SA)},

    with :math:`b_{ij} = 1` when ``bias`` is None and every token mobile when ``mobile`` is
    None.

    Parameters
    ----------
    bias : ndarray or None
        The ``(n, n)`` bias matrix, or None for ``b = 1``.
    beta : float
        The inverse temperature.
    linear : bool
        Constant ``phi'``.
    sa : bool
        SA normalization.
    mobile : ndarray of bool or None
        ``(n,)`` mask of the tokens that move; None: all move.

    Returns
    -------
    KernelParams
        Contiguous float64 bias, Python scalars, a boolean mask.

    References
    ----------
    Definition 1.1 (ch1-def-sa-usa) of the book: SA and USA.
    Definition 7.1 (ch7-def-bias) of the book: the weights ``w_ij = b_ij phi'(<y_i, y_j>)``.
    """
    has_bias = bias is not None
    b = np.ascontiguousarray(bias, dtype=np.float64) if has_bias else np.ones((1, 1))
    has_frozen = mobile is not None and not bool(np.all(mobile))
    m = np.ascontiguousarray(mobile, dtype=np.bool_) if has_frozen else np.ones(1, dtype=np.bool_)
    return KernelParams(b, has_bias, float(beta), bool(linear), bool(sa), m, has_frozen)
# The fast loops' exponents t = beta log2(e) <y_i, y_j> must lie in the range of
# fexp2_in_range, [-1022, 1024); the margin covers the rounding of the dot product.
T_FAST = -T_LO - 2.0
# Fast-math flags that keep inf and nan: a function compiled without flags of its
# own takes those of the (fast-math) caller that compiles it, and the range check
# and the saturating loops must not assume finite values.
IEEE = {"contract"}


@njit(cache=True, fastmath=True)
def pair_weight(t, bb, j, linear):
    r"""The weight ``w = b * phi'(s)`` of one pair from ``t = beta log2(e) s``; ``b = bb[j]``.

    With the exponential as a power of two (:func:`.fastexp.fexp2_in_range`):

    .. math::

        w = b\, 2^t = b\, e^{\beta s} \text{ (attention)}, \qquad w = b \text{ (linear)}.

    ``bb`` is None (then ``b = 1``) or an array by type, so Numba compiles the no-bias case
    without the branch.  ``|t| <= T_FAST`` (checked by :func:`fast_range`).

    Parameters
    ----------
    t : float
        ``beta log2(e) <y_i, y_j>``.
    bb : ndarray or None
        A row of the bias matrix, or None.
    j : int
        The index into ``bb``.
    linear : bool
        Constant ``phi'``.

    Returns
    -------
    float
        ``w``.

    References
    ----------
    Definition 7.1 (ch7-def-bias) of the book: the weights ``w_ij = b_ij phi'(<y_i, y_j>)``.
    """
    w = 1.0 if linear else fexp2_in_range(t)
    if bb is not None:
        w *= bb[j]
    return w


@njit(cache=True, fastmath=True)
def chunk_rows(n, c, nchunks):
    r"""The rows ``i`` of chunk ``c``, pairing long and short rows of the triangle ``i < j``.

    With :math:`C` = ``nchunks`` chunks:

    .. math::

        \operatorname{rows}(c) = \{\, 0 \le i < n : i \bmod 2C \in \{c, 2C - 1 - c\} \,\}.

    Parameters
    ----------
    n : int
        Number of tokens.
    c : int
        The chunk, ``0 <= c < nchunks``.
    nchunks : int
        Number of chunks.

    Returns
    -------
    ndarray
        The rows of the chunk, increasing (int64).
    """
    period = 2 * nchunks
    rows = np.empty(n, dtype=np.int64)
    m = 0
    for i in range(n):
        r = i % period
        if r == c or r == period - 1 - c:
            rows[m] = i
            m += 1
    return rows[:m]


@njit(cache=True, fastmath=True)
def load_buffer(yt, buf):
    """Copy ``yt`` into rows ``0 .. d-1`` of ``buf`` and zero the rest.

    Rows of the chunk buffer ``buf`` (``2d + 3`` of them, one column per token): ``0 .. d-1``
    the coordinates ``y``, ``d .. 2d-1`` the accumulator ``A``, ``2d`` the accumulator ``Z``,
    ``2d + 1`` and ``2d + 2`` scratch.::

        buf[k, j] = yt[k, j]   (k < d),      buf[k, j] = 0   (k >= d)

    Parameters
    ----------
    yt : ndarray
        ``(d, n)`` gauge coordinates, one column per token.
    buf : ndarray
        ``(2d + 3, n)`` chunk buffer, overwritten.

    Returns
    -------
    None
        The result is in ``buf``.
    """
    d, n = yt.shape
    for k in range(d):
        for j in range(n):
            buf[k, j] = yt[k, j]
    for k in range(d, buf.shape[0]):
        for j in range(n):
            buf[k, j] = 0.0


@njit(cache=True, fastmath=True)
def row3(buf, bb, coef, linear, i, j0, j1):
    r"""Pairs ``(i, j)``, ``j0 <= j < j1``, ``d = 3``: add to rows 3 .. 6 of ``buf``.

    For every ``j`` in ``[j0, j1)`` the weight and both updates (the pair is added to both
    tokens), with ``coef`` :math:`= \beta \log_2 e`:

    .. math::

        w_{ij} = b_{ij}\, 2^{\mathrm{coef} \langle y_i, y_j \rangle},

        A_i \mathrel{+}= w_{ij} y_j, \quad Z_i \mathrel{+}= w_{ij}, \quad
        A_j \mathrel{+}= w_{ij} y_i, \quad Z_j \mathrel{+}= w_{ij}.

    The loop runs over slices indexed from 0, so that Numba emits no negative-index
    wraparound and LLVM vectorizes it.

    Parameters
    ----------
    buf : ndarray
        ``(9, n)`` chunk buffer (rows ``y``, ``A``, ``Z``, scratch), updated.
    bb : ndarray or None
        ``bias[i, j0:j1]``, or None for ``b = 1``.
    coef : float
        ``beta log2(e)``.
    linear : bool
        Constant ``phi'``.
    i : int
        The row.
    j0, j1 : int
        The columns.

    Returns
    -------
    None
        The sums are added to ``buf``.

    References
    ----------
    Definition 7.1 (ch7-def-bias) of the book: the weights ``w_ij = b_ij phi'(<y_i, y_j>)``.
    """
    u0 = buf[0, i]
    u1 = buf[1, i]
    u2 = buf[2, i]
    c0 = coef * u0
    c1 = coef * u1
    c2 = coef * u2
    y0 = buf[0, j0:j1]
    y1 = buf[1, j0:j1]
    y2 = buf[2, j0:j1]
    a0 = buf[3, j0:j1]
    a1 = buf[4, j0:j1]
    a2 = buf[5, j0:j1]
    zz = buf[6, j0:j1]
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    sz = 0.0
    for j in range(j1 - j0):
        w = pair_weight(c0 * y0[j] + c1 * y1[j] + c2 * y2[j], bb, j, linear)
        s0 += w * y0[j]
        s1 += w * y1[j]
        s2 += w * y2[j]
        sz += w
        a0[j] += w * u0
        a1[j] += w * u1
        a2[j] += w * u2
        zz[j] += w
    buf[3, i] += s0
    buf[4, i] += s1
    buf[5, i] += s2
    buf[6, i] += sz


@njit(cache=True, fastmath=True)
def row3_pair(buf, bb, bc, coef, linear, i, k, j0, j1):
    r"""Pairs ``(i, j)`` and ``(k, j)``, ``j0 <= j < j1``, ``d = 3``: add to rows 3 .. 6 of ``buf``.

    The weights go first to the scratch rows 7 and 8, then one loop adds both rows' terms:

    .. math::

        w_{ij} = b_{ij}\, 2^{\mathrm{coef} \langle y_i, y_j \rangle}, \qquad
        w_{kj} = b_{kj}\, 2^{\mathrm{coef} \langle y_k, y_j \rangle},

        A_i \mathrel{+}= w_{ij} y_j, \quad A_k \mathrel{+}= w_{kj} y_j, \quad
        A_j \mathrel{+}= w_{ij} y_i + w_{kj} y_k,

    and the same for :math:`Z` with :math:`y` replaced by 1.

    Parameters
    ----------
    buf : ndarray
        ``(9, n)`` chunk buffer, updated (rows 7 and 8 used as scratch).
    bb, bc : ndarray or None
        ``bias[i, j0:j1]`` and ``bias[k, j0:j1]``, or None for ``b = 1``.
    coef : float
        ``beta log2(e)``.
    linear : bool
        Constant ``phi'``.
    i, k : int
        The two rows.
    j0, j1 : int
        The columns.

    Returns
    -------
    None
        The sums are added to ``buf``.

    References
    ----------
    Definition 7.1 (ch7-def-bias) of the book: the weights ``w_ij = b_ij phi'(<y_i, y_j>)``.
    """
    u0 = buf[0, i]
    u1 = buf[1, i]
    u2 = buf[2, i]
    v0 = buf[0, k]
    v1 = buf[1, k]
    v2 = buf[2, k]
    c0 = coef * u0
    c1 = coef * u1
    c2 = coef * u2
    e0 = coef * v0
    e1 = coef * v1
    e2 = coef * v2
    m = j1 - j0
    y0 = buf[0, j0:j1]
    y1 = buf[1, j0:j1]
    y2 = buf[2, j0:j1]
    a0 = buf[3, j0:j1]
    a1 = buf[4, j0:j1]
    a2 = buf[5, j0:j1]
    zz = buf[6, j0:j1]
    wi = buf[7, j0:j1]
    wk = buf[8, j0:j1]
    for j in range(m):
        wi[j] = pair_weight(c0 * y0[j] + c1 * y1[j] + c2 * y2[j], bb, j, linear)
    for j in range(m):
        wk[j] = pair_weight(e0 * y0[j] + e1 * y1[j] + e2 * y2[j], bc, j, linear)
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    sz = 0.0
    t0 = 0.0
    t1 = 0.0
    t2 = 0.0
    tz = 0.0
    for j in range(m):
        w = wi[j]
        x = wk[j]
        p0 = y0[j]
        p1 = y1[j]
        p2 = y2[j]
        s0 += w * p0
        s1 += w * p1
        s2 += w * p2
        sz += w
        t0 += x * p0
        t1 += x * p1
        t2 += x * p2
        tz += x
        a0[j] += w * u0 + x * v0
        a1[j] += w * u1 + x * v1
        a2[j] += w * u2 + x * v2
        zz[j] += w + x
    buf[3, i] += s0
    buf[4, i] += s1
    buf[5, i] += s2
    buf[6, i] += sz
    buf[3, k] += t0
    buf[4, k] += t1
    buf[5, k] += t2
    buf[6, k] += tz


@njit(cache=True, fastmath=True)
def row_general(buf, bb, coef, linear, i, j0, j1, d):
    r"""Pairs ``(i, j)``, ``j0 <= j < j1``, any ``d``: add to rows ``d .. 2d`` of ``buf``.

    As :func:`row3`, as separate vectorized loops over the scratch rows ``2d + 1`` (``t``) and
    ``2d + 2`` (``w``):

    .. math::

        t_j = \mathrm{coef} \langle y_i, y_j \rangle, \quad w_j = b_{ij}\, 2^{t_j},

        A_i \mathrel{+}= \sum_j w_j y_j, \quad Z_i \mathrel{+}= \sum_j w_j, \quad
        A_j \mathrel{+}= w_j y_i, \quad Z_j \mathrel{+}= w_j.

    Parameters
    ----------
    buf : ndarray
        ``(2d + 3, n)`` chunk buffer, updated.
    bb : ndarray or None
        ``bias[i, j0:j1]``, or None for ``b = 1``.
    coef : float
        ``beta log2(e)``.
    linear : bool
        Constant ``phi'``.
    i : int
        The row.
    j0, j1 : int
        The columns.
    d : int
        The dimension.

    Returns
    -------
    None
        The sums are added to ``buf``.

    References
    ----------
    Definition 7.1 (ch7-def-bias) of the book: the weights ``w_ij = b_ij phi'(<y_i, y_j>)``.
    """
    m = j1 - j0
    t = buf[2 * d + 1, j0:j1]
    w = buf[2 * d + 2, j0:j1]
    zz = buf[2 * d, j0:j1]
    for j in range(m):
        t[j] = 0.0
    for k in range(d):
        ck = coef * buf[k, i]
        yk = buf[k, j0:j1]
        for j in range(m):
            t[j] += ck * yk[j]
    sz = 0.0
    for j in range(m):
        wj = pair_weight(t[j], bb, j, linear)
        w[j] = wj
        sz += wj
        zz[j] += wj
    buf[2 * d, i] += sz
    for k in range(d):
        uk = buf[k, i]
        yk = buf[k, j0:j1]
        ak = buf[d + k, j0:j1]
        sk = 0.0
        for j in range(m):
            sk += w[j] * yk[j]
            ak[j] += w[j] * uk
        buf[d + k, i] += sk


@njit(cache=True, fastmath=True)
def row_pairs(buf, bb, coef, linear, i, j0, j1, d):
    """Pairs ``(i, j)``, ``j0 <= j < j1``, with the kernel for this ``d``.

    ::

        row_pairs = row3 (d = 3),   row_general (otherwise)

    Parameters
    ----------
    buf : ndarray
        ``(2d + 3, n)`` chunk buffer, updated.
    bb : ndarray or None
        ``bias[i, j0:j1]``, or None for ``b = 1``.
    coef : float
        ``beta log2(e)``.
    linear : bool
        Constant ``phi'``.
    i : int
        The row.
    j0, j1 : int
        The columns.
    d : int
        The dimension.

    Returns
    -------
    None
        The sums are added to ``buf``.
    """
    if d == 3:
        row3(buf, bb, coef, linear, i, j0, j1)
    else:
        row_general(buf, bb, coef, linear, i, j0, j1, d)


@njit(cache=True, fastmath=True)
def chunk_sums(yt, bias, has_bias, beta, linear, rows, buf):
    r"""Sums over the pairs ``i < j`` of the given rows ``i``, into ``buf``.

    Column tiles of ``BLOCK`` tokens, rows two at a time for ``d = 3``: for :math:`i` in
    ``rows`` and :math:`i < j < n`,

    .. math::

        A_i \mathrel{+}= w_{ij} y_j, \quad Z_i \mathrel{+}= w_{ij}, \quad
        A_j \mathrel{+}= w_{ij} y_i, \quad Z_j \mathrel{+}= w_{ij}.

    On return rows ``d .. 2d-1`` of ``buf`` hold this chunk's part of ``A`` and row ``2d`` its
    part of ``Z`` (both without the diagonal).

    Parameters
    ----------
    yt, bias, has_bias, beta, linear
        The tokens and the kernel's parameters, as :func:`pair_sums` takes them.
    rows : ndarray
        The rows of the chunk, increasing (:func:`chunk_rows`).
    buf : ndarray
        ``(2d + 3, n)`` chunk buffer, overwritten.

    Returns
    -------
    None
        The sums are in ``buf``.

    References
    ----------
    Definition 7.1 (ch7-def-bias) of the book: the weights ``w_ij = b_ij phi'(<y_i, y_j>)``.
    """
    d, n = yt.shape
    coef = beta * LOG2E
    load_buffer(yt, buf)
    nr = rows.shape[0]
    for j0 in range(0, n, BLOCK):
        j1 = min(n, j0 + BLOCK)
        r = 0
        while r < nr:
            i = rows[r]
            lo = max(i + 1, j0)
            if d == 3 and r + 1 < nr:
                # rows i < k together from column k + 1 on, row i alone before
                k = rows[r + 1]
                lo2 = max(k + 1, j0)
                mid = min(lo2, j1)
                if lo < mid:
                    if has_bias:
                        row3(buf, bias[i, lo:mid], coef, linear, i, lo, mid)
                    else:
                        row3(buf, None, coef, linear, i, lo, mid)
                if lo2 < j1:
                    if has_bias:
                        row3_pair(buf, bias[i, lo2:j1], bias[k, lo2:j1], coef, linear, i, k, lo2, j1)
                    else:
                        row3_pair(buf, None, None, coef, linear, i, k, lo2, j1)
                r += 2
                continue
            if lo < j1:
                if has_bias:
                    row_pairs(buf, bias[i, lo:j1], coef, linear, i, lo, j1, d)
                else:
                    row_pairs(buf, None, coef, linear, i, lo, j1, d)
            r += 1


@njit(cache=True, fastmath=True)
def diagonal_weights(yt, bias, has_bias, beta, linear, w):
    r"""The self-interaction weights :math:`w_{ii} = b_{ii}\, \varphi'(|y_i|^2)`, into ``w``.

    Vectorized loops: the squared norms, the exponentials, the bias's diagonal.

    Parameters
    ----------
    yt, bias, has_bias, beta, linear
        The tokens and the kernel's parameters, as :func:`pair_sums` takes them.
    w : ndarray
        ``(n,)``, overwritten.

    Returns
    -------
    None
        The weights are in ``w``.

    References
    ----------
    Definition 7.1 (ch7-def-bias) of the book: the weights ``w_ij = b_ij phi'(<y_i, y_j>)``.
    """
    d, n = yt.shape
    coef = beta * LOG2E
    for i in range(n):
        w[i] = 0.0
    for k in range(d):
        for i in range(n):
            w[i] += yt[k, i] * yt[k, i]
    for i in range(n):
        w[i] = 1.0 if linear else fexp2(coef * w[i])
    if has_bias:
        for i in range(n):
            w[i] *= bias[i, i]


@njit(cache=True, fastmath=True)
def add_diagonal(yt, bias, has_bias, beta, linear, acc, z):
    r"""Add the self-interaction of every token to the pair sums.

    With :math:`w_{ii}` of :func:`diagonal_weights`: ``acc[:, i]`` :math:`\mathrel{+}= w_{ii} y_i`
    and ``z[i]`` :math:`\mathrel{+}= w_{ii}`.

    Parameters
    ----------
    yt, bias, has_bias, beta, linear
        The tokens and the kernel's parameters, as :func:`pair_sums` takes them.
    acc : ndarray
        ``(d, n)`` sums ``A``, updated.
    z : ndarray
        ``(n,)`` sums ``Z``, updated.

    Returns
    -------
    None
        The sums are updated in place.
    """
    d, n = yt.shape
    w = np.empty(n)
    diagonal_weights(yt, bias, has_bias, beta, linear, w)
    for i in range(n):
        z[i] += w[i]
    for k in range(d):
        for i in range(n):
            acc[k, i] += w[i] * yt[k, i]


@njit(cache=True, fastmath=True)
def reduce_chunks(bufs, d, acc, z):
    """Add the chunks' parts of ``A`` and ``Z`` to ``acc`` and ``z``.

    ::

        acc[k, j] += sum_c bufs[c, d + k, j],    z[j] += sum_c bufs[c, 2d, j]

    Parameters
    ----------
    bufs : ndarray
        ``(C, 2d + 3, n)`` chunk buffers.
    d : int
        The dimension.
    acc : ndarray
        ``(d, n)``, updated.
    z : ndarray
        ``(n,)``, updated.

    Returns
    -------
    None
        The sums are updated in place.
    """
    n = acc.shape[1]
    for c in range(bufs.shape[0]):
        for k in range(d):
            for j in range(n):
                acc[k, j] += bufs[c, d + k, j]
        for j in range(n):
            z[j] += bufs[c, 2 * d, j]


@njit(cache=True, fastmath=True)
def serial_chunk_sums(yt, bias, has_bias, beta, linear):
    """All pairs ``i < j`` in one chunk (one thread).

    The parameters, the result (here ``C = 1``) and the references are those of
    :func:`chunk_buffers`.
    """
    d, n = yt.shape
    bufs = np.empty((1, 2 * d + 3, n))
    chunk_sums(yt, bias, has_bias, beta, linear, chunk_rows(n, 0, 1), bufs[0])
    return bufs


@njit(cache=True, parallel=True, fastmath=True)
def parallel_chunk_sums(yt, bias, has_bias, beta, linear):
    """All pairs ``i < j`` in one chunk per thread, run in parallel.

    ``C`` is Numba's thread count.  Only the ``prange`` loop is parallel (no array
    expressions that Numba would turn into parallel regions of their own).  The parameters,
    the result and the references are those of :func:`chunk_buffers`.
    """
    d, n = yt.shape
    nchunks = num_threads()
    bufs = np.empty((nchunks, 2 * d + 3, n))
    for c in prange(nchunks):
        chunk_sums(yt, bias, has_bias, beta, linear,
                   chunk_rows(n, c, nchunks), bufs[c])
    return bufs


@njit(cache=True, fastmath=IEEE)
def fast_range(yt, beta, linear):
    r"""Whether every exponent ``t = beta log2(e) <y_i, y_j>`` is within ``T_FAST``.

    By Cauchy-Schwarz, :math:`|\langle y_i, y_j \rangle| \le |y_i| |y_j| \le \max_i |y_i|^2`,
    so the test is (True at once if linear)

    .. math::

        |\beta| \log_2(e) \max_i |y_i|^2 \le T_{\mathrm{FAST}}.

    Parameters
    ----------
    yt : ndarray
        ``(d, n)`` gauge coordinates.
    beta : float
        The inverse temperature.
    linear : bool
        Constant ``phi'``: no exponential, always True.

    Returns
    -------
    bool
        Whether the fast loops may be used; False for a state with a ``nan``.
    """
    if linear:
        return True
    d, n = yt.shape
    m = 0.0
    total = 0.0  # nan if any coordinate is
    for i in range(n):
        s = 0.0
        for k in range(d):
            s += yt[k, i] * yt[k, i]
        m = s if s > m else m
        total += s
    return total == total and abs(beta) * LOG2E * m <= T_FAST


@njit(cache=True, fastmath=IEEE)
def saturated_chunk_sums(yt, bias, has_bias, beta, linear):
    """All pairs ``i < j`` with the saturating :func:`.fastexp.fexp2` (plain loops).

    For states outside :func:`fast_range`: weights beyond the double range are ``inf`` or ``0``
    (and ``nan`` stays ``nan``), as the exact exponential's would be.  The parameters, the
    result (here ``C = 1``) and the references are those of :func:`chunk_buffers`.
    """
    d, n = yt.shape
    bufs = np.zeros((1, 2 * d + 3, n))
    coef = beta * LOG2E
    for i in range(n):
        for j in range(i + 1, n):
            s = 0.0
            for k in range(d):
                s += yt[k, i] * yt[k, j]
            w = 1.0 if linear else fexp2(coef * s)
            if has_bias:
                w *= bias[i, j]
            for k in range(d):
                bufs[0, d + k, i] += w * yt[k, j]
                bufs[0, d + k, j] += w * yt[k, i]
            bufs[0, 2 * d, i] += w
            bufs[0, 2 * d, j] += w
    return bufs


@njit(cache=True, fastmath=True)
def chunk_buffers(yt, bias, has_bias, beta, linear):
    r"""The pair sums over ``i < j`` as chunk buffers, by the method that fits the state.

    Serial below ``PARALLEL_MIN`` tokens, else parallel; outside :func:`fast_range` (only for
    ``|beta|`` above about 708, or a state that is not on the sphere) the plain saturating
    loops.  In every case the ``C`` buffers hold the off-diagonal pair sums: with
    :math:`w_{ij} = b_{ij}\, \varphi'(\langle y_i, y_j \rangle)`,

    .. math::

        \sum_c \mathtt{bufs}[c, d{:}2d, i] = \sum_{j \ne i} w_{ij}\, y_j, \qquad
        \sum_c \mathtt{bufs}[c, 2d, i] = \sum_{j \ne i} w_{ij}.

    Parameters
    ----------
    yt, bias, has_bias, beta, linear
        The tokens and the kernel's parameters, as :func:`pair_sums` takes them.

    Returns
    -------
    ndarray
        ``(C, 2d + 3, n)`` chunk buffers: rows ``d .. 2d-1`` of ``bufs[c]`` hold chunk ``c``'s
        part of ``A``, row ``2d`` its part of ``Z`` (without the diagonal).

    References
    ----------
    Definition 7.1 (ch7-def-bias) of the book: the weights :math:`w_{ij}`.
    """
    if not fast_range(yt, beta, linear):
        return saturated_chunk_sums(yt, bias, has_bias, beta, linear)
    if yt.shape[1] < PARALLEL_MIN:
        return serial_chunk_sums(yt, bias, has_bias, beta, linear)
    return parallel_chunk_sums(yt, bias, has_bias, beta, linear)


@njit(cache=True, fastmath=True)
def pair_sums(yt, bias, has_bias, beta, linear):
    r"""The pair sums ``A`` and ``Z`` of the velocity field, diagonal included.

    For every token :math:`i` (the column ``A[:, i]`` and the entry ``Z[i]``):

    .. math::

        A_i = \sum_j w_{ij}\, y_j, \qquad Z_i = \sum_j w_{ij},

        w_{ij} = b_{ij}\, \varphi'(\langle y_i, y_j \rangle), \quad
        \varphi'(s) = e^{\beta s} \text{ or } 1 \text{ (linear)}.

    Weights beyond the double range are ``inf`` or ``0`` (:func:`.fastexp.fexp2`).  Serial below
    ``PARALLEL_MIN`` tokens, parallel above.

    Parameters
    ----------
    yt : ndarray
        ``(d, n)`` gauge coordinates, one column per token.
    bias : ndarray
        The symmetric ``(n, n)`` bias matrix when ``has_bias``, else any 2-D array.
    has_bias : bool
        Whether ``bias`` multiplies the weights.
    beta : float
        The inverse temperature.
    linear : bool
        Constant ``phi'`` (no exponential).

    Returns
    -------
    tuple of ndarray
        ``(A, Z)``, shapes ``(d, n)`` and ``(n,)``.

    References
    ----------
    Definition 7.1 (ch7-def-bias) of the book: the weights ``w_ij = b_ij phi'(<y_i, y_j>)``.
    """
    d, n = yt.shape
    bufs = chunk_buffers(yt, bias, has_bias, beta, linear)
    acc = np.zeros((d, n))
    z = np.zeros(n)
    reduce_chunks(bufs, d, acc, z)
    add_diagonal(yt, bias, has_bias, beta, linear, acc, z)
    return acc, z


@njit(cache=True, fastmath=True)
def finish_velocity(yt, bufs, params, out):
    r"""The velocity from the chunk buffers: ``out[:, i] = P_{y_i}(A_i / N_i)``, 0 if frozen.

    With :math:`A` the chunks' sums plus the diagonal :math:`w_{ii} y_i` (written straight into
    ``out``):

    .. math::

        \text{out}_i = \frac{A_i - \langle y_i, A_i \rangle y_i}{N_i}, \qquad
        N_i = n \text{ (USA) or } Z_i \text{ (SA)},

    and :math:`\text{out}_i = 0` for a frozen token :math:`i` (:func:`project_normalize`).

    The two scratch rows of the first chunk buffer hold ``w_ii`` and the dot products; its
    ``Z`` row becomes the total ``Z`` for SA.

    Parameters
    ----------
    yt : ndarray
        ``(d, n)`` gauge coordinates.
    bufs : ndarray
        The chunk buffers of :func:`chunk_buffers` (changed: used as scratch).
    params : KernelParams
        The kernel's parameters.
    out : ndarray
        ``(d, n)``, overwritten.

    Returns
    -------
    None
        The velocity is in ``out``.

    References
    ----------
    Definition 1.1 (ch1-def-sa-usa) of the book: the projection and the two normalizations.
    """
    d, n = yt.shape
    bias, has_bias, beta, linear = params.bias, params.has_bias, params.beta, params.linear
    sa, mobile, has_frozen = params.sa, params.mobile, params.has_frozen
    nchunks = bufs.shape[0]
    w = bufs[0, 2 * d + 1]
    dot = bufs[0, 2 * d + 2]
    diagonal_weights(yt, bias, has_bias, beta, linear, w)
    for k in range(d):
        ok = out[k]
        yk = yt[k]
        a0 = bufs[0, d + k]
        for i in range(n):
            ok[i] = a0[i] + w[i] * yk[i]
        for c in range(1, nchunks):
            ac = bufs[c, d + k]
            for i in range(n):
                ok[i] += ac[i]
    z = bufs[0, 2 * d]
    if sa:
        for i in range(n):
            z[i] += w[i]
        for c in range(1, nchunks):
            zc = bufs[c, 2 * d]
            for i in range(n):
                z[i] += zc[i]
    project_normalize(yt, dot, sa, z, n, mobile, has_frozen, out)


@njit(cache=True, fastmath=True, inline="always")
def project_normalize(yt, dot, sa, z, norm, mobile, has_frozen, out):
    r"""``out_i <- P_{y_i}(out_i) / N_i`` with ``N_i = z_i`` (``sa``) or ``norm``; 0 if frozen.

    The last step of :func:`finish_velocity` and of the fast kernel's
    :func:`.fastsum.compiled.finish_velocity`, inlined into each (and compiled with its
    flags): with :math:`a_i` the column ``out[:, i]``, ``dot`` (``(n,)`` scratch) receives
    :math:`\langle y_i, a_i \rangle`, then ``out[:, i]`` becomes
    :math:`(a_i - \langle y_i, a_i \rangle y_i) / N_i`, and the columns of the tokens not
    ``mobile`` are zeroed if ``has_frozen``.
    """
    d, n = yt.shape
    for i in range(n):
        dot[i] = 0.0
    for k in range(d):
        ok = out[k]
        yk = yt[k]
        for i in range(n):
            dot[i] += yk[i] * ok[i]
    for k in range(d):
        ok = out[k]
        yk = yt[k]
        if sa:
            for i in range(n):
                ok[i] = (ok[i] - dot[i] * yk[i]) / z[i]
        else:
            for i in range(n):
                ok[i] = (ok[i] - dot[i] * yk[i]) / norm
    if has_frozen:
        for i in range(n):
            if not mobile[i]:
                for k in range(d):
                    out[k, i] = 0.0


@njit(cache=True)
def velocity(yt, params, out):
    r"""The velocity field ``dy/dt`` at ``yt``, written to ``out``.

    For every token :math:`i`, with :math:`P_y v = v - \langle y, v \rangle y`:

    .. math::

        \frac{dy_i}{dt} = P_{y_i}\Big(\frac{1}{N_i} \sum_j w_{ij}\, y_j\Big)
        \quad (0 \text{ if } i \text{ is frozen}), \qquad
        w_{ij} = b_{ij}\, \varphi'(\langle y_i, y_j \rangle),

    with :math:`N_i = n` (USA) or :math:`N_i = \sum_j w_{ij}` (SA).

    Parameters
    ----------
    yt : ndarray
        ``(d, n)`` gauge coordinates, one column per token.
    params : KernelParams
        Bias matrix, ``beta`` and the flags of the field, by name.
    out : ndarray
        ``(d, n)``, overwritten with the velocity.

    Returns
    -------
    None
        The velocity is in ``out``.

    References
    ----------
    Definition 1.1 (ch1-def-sa-usa), Definition 3.1 (ch3-def-av) and Definition 7.1
    (ch7-def-bias) of the book: the field; Theorem 4.1 (ch4-thm-conjugacy) and Theorem 6.1
    (ch6-thm-gauge): the models in gauge coordinates.  arXiv:2605.30229.
    """
    bufs = chunk_buffers(yt, params.bias, params.has_bias, params.beta, params.linear)
    finish_velocity(yt, bufs, params, out)


def thread_policy():
    """One line describing the threading set-up in effect (printed by the benchmarks).

    The line reads::

        threading layer <layer>, <k> threads, OMP_WAIT_POLICY=<policy>,
        serial below n = <PARALLEL_MIN>

    (on one line; ``<policy>`` is ``(unset)`` when the environment does not set it).

    Returns
    -------
    str
        The line.
    """
    return (f"threading layer {numba.threading_layer()}, {numba.get_num_threads()} threads, "
            f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}, "
            f"serial below n = {PARALLEL_MIN}")
