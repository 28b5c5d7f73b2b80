"""Right-hand-side throughput: pair interactions per second, Numba against NumPy.

    python benchmarks/rhs_throughput.py        (or: usaav-edu bench, make bench)

Prints, in one run, for n = 256 and n = 1024 (d = 3, beta = 1): the pair
interactions per second (n^2 per evaluation) of the package's velocity and of
the dense NumPy reference, their ratio, the largest difference of the two
velocities, and the largest relative error of the vectorized exp.  The
measuring code is ``usaav_edu.cli.bench`` (see its docstring for the method).
"""

import sys

from usaav_edu.cli.bench import report

if __name__ == "__main__":
    try:
        print(report())
    except KeyboardInterrupt:  # Ctrl-C: one line, no traceback
        print("rhs_throughput.py: interrupted", file=sys.stderr)
        sys.exit(130)
