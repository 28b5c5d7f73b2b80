"""Fast summation: the pair sums by a truncated expansion, in time linear in n.

* :mod:`.expansions` the expansions of ``phi'`` (Fourier modes, spherical harmonics, monomials),
* :mod:`.kernel` the kernel that forms the moments and evaluates the field and the energy,
* :mod:`.cost` the cost model that ``simulate(summation="auto")`` and the work estimate read.
"""

from . import cost, expansions, kernel
from .cost import crossover_n, estimated_seconds, rank_for
from .kernel import (
    BIASES,
    TOL_FLOOR,
    FastKernel,
    TaskParams,
    build_fast_kernel,
    fast_applies,
    fast_kernel,
)

__all__ = ["cost", "expansions", "kernel", "BIASES", "TOL_FLOOR", "FastKernel", "TaskParams",
           "build_fast_kernel", "crossover_n", "estimated_seconds", "fast_applies", "fast_kernel",
           "rank_for"]
