"""Throughput of the right-hand side on a busy machine.

    python benchmarks/contention.py

Measures, in one run of about a minute, the pair interactions per second of
the package's velocity (d = 3, beta = 1) at n = 256 and n = 1024: on a quiet
machine, beside one process spinning on a core and beside two, each time with
the package's thread count against one thread (``numba.set_num_threads(1)``)
under the same load, in alternating batches (medians).  Prints the table and
the goals: the package never below 0.8 of one thread under the same load, at
least 0.45 of its quiet figure beside one busy process, and quiet figures not
lower than before the thread policy of ``usaav_edu.dynamics.rhs``.  The busy
processes are stopped at the end, also on Ctrl-C.  The measuring code is
``usaav_edu.cli.bench.contention``; a machine that is busy with other work as
well gives noisy figures.
"""

import sys

from usaav_edu.cli.bench import contention_report

if __name__ == "__main__":
    try:
        print(contention_report())
    except KeyboardInterrupt:  # Ctrl-C: one line, no traceback
        print("contention.py: interrupted", file=sys.stderr)
        sys.exit(130)
