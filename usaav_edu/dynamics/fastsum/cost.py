"""The cost model of the two summations: estimated seconds of one evaluation, the crossover.

``simulate(summation="auto")`` takes fast summation where :func:`estimated_seconds` says it is
faster, and the work estimate of every run reads it (:mod:`usaav_edu.particles.plan`).  The
rank of the expansion comes from :func:`.kernel.degree_plan`, without building a kernel.
"""

import functools
import math

from ... import _validate as v
from . import expansions as ex
from .compiled import PARALLEL_MIN_FAST
from .kernel import BIASES, TOL_FLOOR, degree_plan

# The cost model of estimated_seconds (its docstring says where the constants come from).
DIRECT_RATE_D3 = 1.5e9
"""Pair interactions (``n^2`` per evaluation) per second of the direct kernel, d = 3, 2 cores."""
DIRECT_T0 = 2e-5
FAST_T0 = 1e-4
FAST_UNIT = 3.3e-10
"""Seconds per token, feature and value row (``n p (d + 2)``) of the fast kernel, 2 cores."""
BIAS_COST = {"none": 1.0, "cosine": 1.6, "distance": 2.4}


def estimated_seconds(kind, n, d, beta, tol, bias="none", rank=None):
    r"""The estimated time of one velocity evaluation, direct or fast (a cost model).

    .. math::

        T_{\mathrm{direct}} = T_0 + \frac{n^2}{R(d)}, \qquad
        R(d) = \frac{1.5 \cdot 10^9 \cdot 4.2}{d + 1.2} \text{ pairs per second},

        T_{\mathrm{fast}} = T_0' + s\, n\, p\, (d + 2)\, c\, k_{\mathrm{bias}}, \qquad
        c = 3.3 \cdot 10^{-10} \text{ s},

        k_{\mathrm{bias}} = 1 \text{ (none)}, 1.6 \text{ (cosine)}, 2.4 \text{ (distance)},

    with :math:`p` the rank :class:`.kernel.FastKernel` chooses for ``beta`` and ``tol``
    (``rank`` when given, the rank of a kernel at hand; else :func:`rank_for`, USA, ``inf``
    when ``tol`` is out of reach), :math:`T_0 = 2 \cdot 10^{-5}` s and
    :math:`T_0' = 10^{-4}` s (the fixed costs of a call), :math:`s = 2` below
    ``PARALLEL_MIN_FAST`` tokens, where the fast sums run on one thread, else 1.  :math:`R(3)`
    is the direct kernel's throughput at large n, :math:`R(d) / R(3)` its measured dependence
    on d, :math:`c` and :math:`k` the fast kernel's time per token, feature and value row at
    n = 1e5: calibrated by
    ``benchmarks/fast_summation.py`` (the README's "Performance" gives the machine and the
    figures).  They are estimates to choose between the two summations, not promises.

    Parameters
    ----------
    kind : {"direct", "fast"}
        The summation.
    n : int
        Number of tokens, ``>= 0``.
    d : int
        The dimension, ``>= 2``.
    beta : float
        The inverse temperature (0: linear profile).
    tol : float
        The velocity tolerance.
    bias : {"none", "cosine", "distance"}
        The bias.
    rank : int or None
        The rank ``p`` of the fast kernel, if it is built already.

    Returns
    -------
    float
        Seconds.

    Raises
    ------
    TypeError, ValueError
        Naming a bad argument.
    """
    v.choice("kind", kind, ("direct", "fast"))
    n = v.integer("n", n, minimum=0)
    d = v.integer("d", d, minimum=2)
    beta = v.real_scalar("beta", beta)
    tol = v.real_scalar("tol", tol, minimum=0.0, strict=True)
    v.choice("bias", bias, BIASES)
    if kind == "direct":
        return DIRECT_T0 + n * n / (DIRECT_RATE_D3 * 4.2 / (d + 1.2))
    p = rank_for(d, beta, tol, bias) if rank is None else v.integer("rank", rank, minimum=1)
    serial = 2.0 if n < PARALLEL_MIN_FAST else 1.0
    return FAST_T0 + serial * n * p * (d + 2) * FAST_UNIT * BIAS_COST[bias]


@functools.lru_cache(maxsize=256)
def rank_for(d, beta, tol, bias="none"):
    """The rank ``p`` of the USA expansion for ``beta`` and ``tol`` (``inf`` if out of reach).

    The rank of a :class:`.kernel.FastKernel` of the bias at one token (the row-sum ratio 1), from
    :func:`~usaav_edu.dynamics.fastsum.kernel.degree_plan` without building the kernel.

    Parameters
    ----------
    d : int
        The dimension.
    beta : float
        The inverse temperature (0: linear, rank 1).
    tol : float
        The velocity tolerance.
    bias : {"none", "cosine", "distance"}
        The bias (the cosine bias is not positive semi-definite: a larger degree).

    Returns
    -------
    int or float
    """
    if beta == 0.0:
        return 1
    if not TOL_FLOOR <= tol < 1.0 or abs(beta) > 700.0:
        return math.inf
    basis = ex.basis_for(d, False)
    try:
        degree = degree_plan(basis, d, beta, tol, False, bias != "cosine" and beta >= 0.0)[0]
    except ValueError:
        return math.inf
    return ex.rank(basis, d, degree)


def crossover_n(d, beta, tol, bias="none"):
    """The smallest ``n`` where fast summation is estimated faster than direct summation.

    ``d``, ``beta``, ``tol`` and ``bias`` are as in :func:`estimated_seconds`.

    Returns
    -------
    int
        ``n`` with ``estimated_seconds("fast", n) < estimated_seconds("direct", n)`` and not so
        for ``n - 1`` (the costs cross once); ``2**62`` if never below that.
    """
    def faster(n):
        return estimated_seconds("fast", n, d, beta, tol, bias) < \
            estimated_seconds("direct", n, d, beta, tol, bias)

    hi = 1
    while not faster(hi):
        hi *= 2
        if hi > 2 ** 62:
            return 2 ** 62
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if faster(mid):
            hi = mid
        else:
            lo = mid
    return hi
