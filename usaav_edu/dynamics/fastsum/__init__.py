"""Fast summation: the pair sums by a truncated expansion, in time linear in n.

* :mod:`.expansions` the expansions of ``phi'`` (Fourier modes, spherical harmonics, monomials),
* :mod:`.kernel` the kernel that forms the moments and evaluates the field and the energy,
* :mod:`.compiled` its compiled loops (features chunk by chunk, moments, sums, scans),
* :mod:`.cost` the cost model that ``simulate(summation="auto")`` and the work estimate read.
"""

from . import compiled, cost, expansions, kernel
from .compiled import TaskParams
from .cost import crossover_n, estimated_seconds, rank_for
from .kernel import (
    BIASES,
    TOL_FLOOR,
    FastKernel,
    build_fast_kernel,
    fast_applies,
    fast_kernel,
)

__all__ = ["compiled", "cost", "expansions", "kernel", "BIASES", "TOL_FLOOR", "FastKernel",
           "TaskParams", "build_fast_kernel", "crossover_n", "estimated_seconds", "fast_applies",
           "fast_kernel", "rank_for"]
