"""Fast summation: the pair sums by a truncated expansion, in time linear in n.

* :mod:`.expansions` the expansions of ``phi'`` (Fourier modes, spherical harmonics, monomials),
* :mod:`.kernel` the kernel that forms the moments and evaluates the field and the energy, and
  the cost model that ``simulate(summation="auto")`` reads.
"""

from . import expansions, kernel
from .kernel import (
    BIASES,
    TOL_FLOOR,
    FastKernel,
    TaskParams,
    build_fast_kernel,
    crossover_n,
    estimated_seconds,
    fast_applies,
    fast_kernel,
    rank_for,
)

__all__ = ["expansions", "kernel", "BIASES", "TOL_FLOOR", "FastKernel", "TaskParams",
           "build_fast_kernel", "crossover_n", "estimated_seconds", "fast_applies", "fast_kernel",
           "rank_for"]
