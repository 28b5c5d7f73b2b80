"""A vectorizable exponential for the interaction kernel.

``math.exp`` inside a Numba loop is a call into libm and blocks SIMD
vectorization (there is no SVML here).  The kernel therefore evaluates
``exp`` with plain, branch-free arithmetic that LLVM inlines into the
caller's loop and vectorizes (four doubles per AVX2 register)::

    exp(x) = 2**k * p(r),   k = round(x / ln 2),   r = x - k ln 2,

with ``|r| <= ln(2)/2`` and ``p`` the degree-10 minimax polynomial of
``exp`` on ``[-ln(2)/2, ln(2)/2]`` for the relative error (Remez exchange in
extended precision; truncation error ``2.1e-16``, as small as the degree-12
Taylor polynomial's with two multiply-adds fewer).

* Rounding: ``t = x log2(e) + 1.5 * 2**52`` rounds ``x log2(e)`` to the
  nearest integer ``k`` (doubles in ``[2**52, 2**53)`` are the integers), so
  ``k = t - 1.5 * 2**52`` exactly, without a ``floor`` or a float-to-int
  conversion.
* Reduction (Cody and Waite): ``ln 2`` is split into a high part with
  trailing zero bits (``k * LN2_HI`` is exact for ``|k| < 2**20``) and a low
  part, so ``r = (x - k LN2_HI) - k LN2_LO`` is computed without
  cancellation.
* Polynomial: a mix of Estrin's and Horner's schemes (depth 4 instead of
  Horner's 10 dependent multiply-adds), because the kernel's loop is limited
  by how many iterations fit in the out-of-order window, i.e. by latency.
* Scaling: the low bits of ``t``'s IEEE representation hold ``k`` (the
  mantissa of ``1.5 * 2**52`` has 51 trailing zero bits), so adding
  ``bits(t) << 52`` to the bits of ``p(r)`` adds ``k`` to its exponent: an
  integer addition, no multiplication.  Two tiny Numba intrinsics
  reinterpret the bits (no memory round trip).

:func:`fexp` returns ``exp(x)`` to a relative error of a few ``1e-16``
against ``numpy.exp`` wherever the result is a normal double, i.e. for
``X_LO <= x <= X_HI`` (``X_LO = -708.396...``, the smallest ``x`` with
``exp(x) >= 2**-1022``; ``X_HI = 709.782...``, the largest ``x`` with
``exp(x)`` finite); ``tests/test_fastexp.py`` asserts ``< 1e-13`` and
``benchmarks/rhs_throughput.py`` prints the measured maximum.  Outside that
range it saturates, as ``exp`` in floating point does, except that it
flushes subnormal results to zero:

* ``x > X_HI`` (and ``+inf``) gives ``inf``,
* ``x < X_LO`` (and ``-inf``) gives ``0``: the true ``exp(x)`` is below
  ``2**-1022`` and would be a subnormal number, with fewer significant bits;
  it is flushed to zero (the largest absolute error this makes is
  ``2.2e-308``),
* ``nan`` gives ``nan``.

Inside the range the exponent addition is exact: ``2**k p(r)`` is a normal
double exactly when ``exp(x)`` is (at the top ``k = 1024`` comes with
``r < 0``, ``p(r) < 1``; at the bottom ``k = -1022`` with ``r >= 0``).  Outside
it the bits are garbage and two selects replace them (:func:`saturate`):
``r if x <= X_HI else x + inf`` (so ``nan``, for which every comparison is
false, stays ``nan``), then ``0 if x < X_LO else r``.  Selects, not
branches, so that loops calling these functions still vectorize.  They cost
a few vector instructions per value, about 9% of the interaction kernel's
throughput, whose loops are limited by arithmetic; the kernel therefore
calls :func:`fexp2_in_range`, the same formula without the selects, after
checking once per call that all its arguments lie in the range (see
:mod:`.rhs`).

:func:`fexp2` is the base-2 variant ``2**t`` for callers that can fold
``log2(e)`` into their own arithmetic (the kernel folds it into
``beta y_i``): no Cody-Waite step, ``f = t - k`` is exact and the polynomial
is ``p(f ln 2)`` with ``ln(2)**j`` folded into its coefficients.  Its range
is ``T_LO = -1022 <= t <= T_HI`` (``T_HI`` the largest double below 1024),
with the same saturation outside.  The rounding error of ``t`` itself is the
caller's (``3 eps |t|`` absolute for a dot product, the same order as that
of ``beta <y_i, y_j>``).

All functions are compiled with fast-math flags *without* ``reassoc``: the
rounding trick and the Cody-Waite reduction must be evaluated in the written
order (reassociation would fold ``t - SHIFTER`` to ``x log2(e)`` and the
reduction to ``x - k ln 2``).  :func:`saturate` and the functions that call
it are compiled without ``nnan`` and ``ninf`` as well, under which the
compiler could assume a finite ``x`` and drop the saturation.  Every
function here names its flags: when these functions are inlined into a
kernel compiled with full fast math, their instructions keep their own
flags (a Numba function compiled without flags of its own would take those
of the caller that compiles it).

References
----------
IEEE Std 754-2019, *IEEE Standard for Floating-Point Arithmetic*: the binary64 format whose
bits ``bits_to_float64``, ``float64_to_bits`` and :func:`scale_pow2` handle, and the
comparisons with NaN of :func:`saturate`.

W. J. Cody and W. Waite, *Software Manual for the Elementary Functions*, Prentice-Hall (1980):
the reduction with ``ln 2`` split in two parts (:func:`fexp_in_range`).

G. Estrin, "Organization of computer systems: the fixed plus variable structure computer",
Proc. Western Joint Computer Conference (1960) 33-40: the evaluation of :func:`poly10`.

J.-M. Muller, *Elementary Functions: Algorithms and Implementation*, 3rd ed., Birkhäuser
(2016): range reduction, minimax polynomials and their evaluation.
"""

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453
LN2_HI = 6.93147180369123816490e-01
LN2_LO = 1.90821492927058770002e-10
SHIFTER = 6755399441055744.0  # 1.5 * 2**52
X_HI = 709.782712893384  # largest double x with exp(x) finite (1024 ln 2 - 2.4e-14)
X_LO = -708.3964185322641  # smallest double x with exp(x) >= 2**-1022 (-1022 ln 2 + 2.7e-14)
T_HI = 1024.0 - 2.0**-43  # largest double below 1024
T_LO = -1022.0
X_MAX = 700.0  # a round bound inside [X_LO, X_HI], for accuracy grids

# Minimax coefficients of exp(r) on [-ln2/2, ln2/2], degree 10 (relative error).
EXP_COEFFS = (
    1.0,
    1.0000000000000064,
    0.49999999999997286,
    0.16666666666557745,
    0.04166666666842609,
    0.008333333384664677,
    0.001388888849911803,
    0.00019841171385657567,
    2.48019177126773e-05,
    2.763976766378528e-06,
    2.748843303756175e-07,
)
# The same polynomial in f = r / ln 2: coefficient j times ln(2)**j.
EXP2_COEFFS = tuple(c * LN2**j for j, c in enumerate(EXP_COEFFS))


# Fast-math without reassociation (see the module docstring); the saturation also
# without ``nnan`` and ``ninf``, so that it may not assume finite arguments.
_FLAGS = {"nnan", "ninf", "nsz", "arcp", "contract"}
_SAT_FLAGS = {"nsz", "arcp", "contract"}


@intrinsic
def bits_to_float64(typingctx, bits):
    """Reinterpret the bits of an int64 as a float64 (a register bitcast).

    The result is the IEEE 754 double whose 64-bit pattern is ``bits``::

        float64_to_bits(bits_to_float64(b)) == b    for every int64 b

    A Numba intrinsic: it can be called only from compiled code.

    Parameters
    ----------
    bits : int
        A Numba integer, cast to int64 first.

    Returns
    -------
    float
        The double whose bits are ``bits``.
    """
    return _bitcast(bits, types.Integer, types.int64, types.float64, ir.DoubleType())


@intrinsic
def float64_to_bits(typingctx, x):
    """Reinterpret the bits of a float64 as an int64 (a register bitcast).

    The inverse of :func:`bits_to_float64`, exact for every double (nan included)::

        bits_to_float64(float64_to_bits(x)) has the bits of x

    A Numba intrinsic as well: ``x``, a Numba float cast to float64 first, gives the int64 with
    the same 64 bits.
    """
    return _bitcast(x, types.Float, types.float64, types.int64, ir.IntType(64))


def _bitcast(arg, kind, source, target, target_ir):
    """The typing and code of the two intrinsics: ``arg`` of the Numba type class ``kind`` is
    cast to ``source``, its bits reinterpreted as ``target`` (LLVM type ``target_ir``); None
    (no match) for an argument of another kind."""
    if not isinstance(arg, kind):
        return None

    def codegen(context, builder, signature, args):
        value = context.cast(builder, args[0], signature.args[0], source)
        return builder.bitcast(value, target_ir)

    return target(arg), codegen


@njit(cache=True, fastmath=_FLAGS)
def poly10(r, c):
    """The polynomial ``sum_j c[j] r**j``, ``j = 0..10``, evaluated as a tree of depth 4.

    The polynomial and the order of evaluation (Estrin's scheme, ``q_m = c[2m] + c[2m+1] r``)::

        p(r) = c[0] + c[1] r + ... + c[10] r^10
             = (q0 + q1 r^2) + r^4 ((q2 + q3 r^2) + r^4 (q4 + c[10] r^2))

    Parameters
    ----------
    r : float
        The argument.
    c : tuple of float
        The 11 coefficients, ``c[j]`` that of ``r**j``.

    Returns
    -------
    float
        ``p(r)``.
    """
    r2 = r * r
    r4 = r2 * r2
    q0 = c[0] + c[1] * r
    q1 = c[2] + c[3] * r
    q2 = c[4] + c[5] * r
    q3 = c[6] + c[7] * r
    q4 = c[8] + c[9] * r
    o0 = q0 + q1 * r2
    o1 = q2 + q3 * r2
    o2 = q4 + c[10] * r2
    return o0 + r4 * (o1 + r4 * o2)


@njit(cache=True, fastmath=_FLAGS)
def scale_pow2(p, t):
    """``p * 2**k`` where ``t = k + SHIFTER``: ``k`` is added to the exponent bits of ``p``.

    The low bits of ``t`` hold ``k``; shifted by 52 they land on the exponent field::

        bits(p 2^k) = bits(p) + (bits(t) << 52)

    This is exact when ``p`` and ``p * 2**k`` are normal doubles; otherwise the bits are
    meaningless (the callers replace them, see :func:`saturate`).

    Parameters
    ----------
    p : float
        A normal double.
    t : float
        ``k + SHIFTER`` for an integer ``k`` (``SHIFTER = 1.5 * 2**52``).

    Returns
    -------
    float
        ``p * 2**k``.
    """
    return bits_to_float64(float64_to_bits(p) + (float64_to_bits(t) << 52))


@njit(cache=True, fastmath=_FLAGS)
def fexp_in_range(x):
    """``exp(x)`` for ``X_LO <= x <= X_HI`` only: rounding, Cody-Waite reduction, polynomial.

    With ``p`` the degree-10 minimax polynomial ``EXP_COEFFS`` of ``exp`` on ``|r| <= ln(2)/2``::

        t = x log2(e) + SHIFTER,   k = t - SHIFTER = round(x log2(e))
        r = (x - k LN2_HI) - k LN2_LO      (LN2_HI + LN2_LO = ln 2)
        exp(x) = 2^k p(r)

    Outside ``[X_LO, X_HI]`` the bits of the result are meaningless (:func:`fexp` saturates).

    Parameters
    ----------
    x : float
        The argument, in ``[X_LO, X_HI]``.

    Returns
    -------
    float
        ``exp(x)`` to a relative error of a few ``1e-16``.
    """
    t = x * LOG2E + SHIFTER
    kf = t - SHIFTER
    r = (x - kf * LN2_HI) - kf * LN2_LO
    return scale_pow2(poly10(r, EXP_COEFFS), t)


@njit(cache=True, fastmath=_FLAGS)
def fexp2_in_range(t):
    """``2**t`` for ``T_LO <= t <= T_HI`` only: the split ``t = k + f`` is exact, no reduction step.

    With ``p`` as in :func:`fexp_in_range` and its coefficients times ``ln(2)**j``
    (``EXP2_COEFFS``)::

        k = round(t),   f = t - k          (exact, |f| <= 1/2)
        2^t = 2^k p(f ln 2)

    The exponent ``t`` in ``[T_LO, T_HI]`` gives ``2**t`` to a relative error of a few
    ``1e-16``; outside, the bits of the result are meaningless (:func:`fexp2` saturates).
    """
    s = t + SHIFTER
    f = t - (s - SHIFTER)
    return scale_pow2(poly10(f, EXP2_COEFFS), s)


@njit(cache=True, fastmath=_SAT_FLAGS)
def saturate(y, x, lo, hi):
    """``y`` for ``lo <= x <= hi``, ``inf`` above, ``0`` below, ``nan`` for ``nan`` (no branch).

    Two selects, in this order (every comparison with ``nan`` is false)::

        y' = y if x <= hi else x + inf      (inf, or nan for x = nan)
        result = 0 if x < lo else y'

    Parameters
    ----------
    y : float
        The value of the in-range formula at ``x``.
    x : float
        The argument ``y`` was computed from.
    lo, hi : float
        The range in which ``y`` is correct.

    Returns
    -------
    float
        ``y``, ``inf``, ``0`` or ``nan``.
    """
    y = y if x <= hi else x + np.inf
    return 0.0 if x < lo else y


@njit(cache=True, fastmath=_SAT_FLAGS)
def fexp(x):
    """``exp(x)`` for every double ``x``, vectorizable; subnormal results are flushed to zero.

    :func:`fexp_in_range` saturated by :func:`saturate`::

        fexp(x) = 2^k p(r)   for X_LO <= x <= X_HI   (see fexp_in_range)
                = inf        for x > X_HI
                = 0          for x < X_LO
                = nan        for x = nan

    Within a relative error of a few ``1e-16`` of ``numpy.exp`` wherever that is a normal
    double.
    """
    return saturate(fexp_in_range(x), x, X_LO, X_HI)


@njit(cache=True, fastmath=_SAT_FLAGS)
def fexp2(t):
    """``2**t`` for every double ``t``, vectorizable; subnormal results are flushed to zero.

    :func:`fexp2_in_range` saturated by :func:`saturate`::

        fexp2(t) = 2^k p(f ln 2)   for T_LO <= t <= T_HI   (see fexp2_in_range)
                 = inf             for t > T_HI
                 = 0               for t < T_LO
                 = nan             for t = nan

    To a relative error of a few ``1e-16`` wherever ``2**t`` is a normal double, as
    :func:`fexp`.
    """
    return saturate(fexp2_in_range(t), t, T_LO, T_HI)


@njit(cache=True, fastmath=_SAT_FLAGS)
def exp_block(x, out, j0, j1):
    """Write ``exp(x[j])`` into ``out[j]`` for ``j0 <= j < j1`` (one vectorizable loop).

    ::

        out[j] = fexp(x[j]),   j0 <= j < j1

    Parameters
    ----------
    x : ndarray
        1-D float64 arguments.
    out : ndarray
        1-D float64, at least ``j1`` long; entries ``j0 .. j1-1`` are overwritten.
    j0, j1 : int
        The index range.

    Returns
    -------
    None
        The results are in ``out``.
    """
    for j in range(j0, j1):
        out[j] = fexp(x[j])


def exp_array(x):
    """``exp`` of a 1-D float array with the block kernel (for tests and benchmarks).

    Elementwise, with the saturation of :func:`fexp`::

        exp_array(x)[j] = fexp(x[j])

    Parameters
    ----------
    x : array_like
        1-D values, converted to contiguous float64.

    Returns
    -------
    ndarray
        A new float64 array of the shape of ``x``.

    Raises
    ------
    ValueError
        If ``x`` is not 1-D.
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"x must be a 1-D array, got shape {x.shape}")
    out = np.empty_like(x)
    exp_block(x, out, 0, x.shape[0])
    return out
