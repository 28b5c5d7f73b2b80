"""Throughput of the Numba velocity against the dense NumPy reference.

Run as a script (``python benchmarks/rhs_throughput.py``); it prints, for
n = 256 and n = 1024 (d = 3, beta = 1, exponential profile, no bias, random
unit vectors), the pair interactions per second (``n**2`` per evaluation) of

* the Numba velocity ``usaav_edu.dynamics.rhs.velocity`` (pair sums, then the
  projection), and
* the NumPy reference in x coordinates:
  ``S = Y Y^T; W = exp(beta S); V = W Y / n; f = V - <V, Y> Y``,

their ratio, the maximum absolute difference of the two velocities, and the
maximum relative error of the vectorized ``exp`` over ``|x| <= 700``.

Both sides are warmed up, then timed with ``time.perf_counter`` in batches
long enough to be measurable; the batches of the two sides alternate (so a
change of machine load affects both) and each figure is the median of
``repeats`` batches.  :func:`measure` returns the figures as a list of dicts
for reuse by a command-line front end.
"""

import time

import numpy as np

from usaav_edu.dynamics.fastexp import X_MAX, exp_array
from usaav_edu.dynamics.rhs import velocity


def random_unit_vectors(n, d, seed=0):
    """``n`` independent uniform points of the unit sphere in R^d, as rows."""
    y = np.random.default_rng(seed).standard_normal((n, d))
    return y / np.linalg.norm(y, axis=1, keepdims=True)


def numpy_velocity(y, beta):
    """The dense NumPy reference: ``P_{y_i}((1/n) sum_j exp(beta <y_i, y_j>) y_j)``."""
    s = y @ y.T
    w = np.exp(beta * s)
    v = w @ y / y.shape[0]
    return v - np.sum(v * y, 1)[:, None] * y


def numba_velocity_call(y, beta):
    """A zero-argument closure evaluating the Numba velocity at ``y`` (USA, exp profile)."""
    yt = np.ascontiguousarray(y.T)
    out = np.empty_like(yt)
    bias = np.ones((1, 1))
    mobile = np.ones(y.shape[0], dtype=np.bool_)

    def call():
        velocity(yt, bias, False, beta, False, False, mobile, False, out)
        return out.T

    return call


def batch_size(fn, min_time):
    """Smallest power of two of calls of ``fn`` that last at least ``min_time`` seconds."""
    calls = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        if time.perf_counter() - t0 >= min_time:
            return calls
        calls *= 2


def time_batch(fn, calls):
    """Seconds per call of ``fn`` over one batch of ``calls`` calls."""
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def median_times(fns, repeats, min_time):
    """Median seconds per call of each of ``fns``, batches alternating between them."""
    for fn in fns:
        fn()  # warm-up (compilation, caches)
    sizes = [batch_size(fn, min_time) for fn in fns]
    times = [[] for _ in fns]
    for _ in range(repeats):
        for fn, calls, ts in zip(fns, sizes, times):
            ts.append(time_batch(fn, calls))
    return [float(np.median(ts)) for ts in times]


def exp_max_rel_error(num=2_000_001):
    """Maximum relative error of ``exp_array`` against ``numpy.exp`` on a grid of ``|x| <= 700``."""
    x = np.linspace(-X_MAX, X_MAX, num)
    return float(np.max(np.abs(exp_array(x) / np.exp(x) - 1.0)))


def measure(n_values=(256, 1024), repeats=9, d=3, beta=1.0, min_time=0.02, seed=0):
    """Pair interactions per second of the Numba and NumPy velocities, and their ratio.

    Returns one dict per ``n`` with keys ``n``, ``numba`` and ``numpy`` (pair
    interactions per second), ``ratio`` (NumPy time / Numba time) and
    ``max_abs_diff`` (largest absolute difference of the two velocities).
    """
    rows = []
    for n in n_values:
        y = random_unit_vectors(n, d, seed=seed)
        fast = numba_velocity_call(y, beta)
        ref = lambda: numpy_velocity(y, beta)  # noqa: E731
        t_numba, t_numpy = median_times([fast, ref], repeats, min_time)
        diff = float(np.max(np.abs(fast() - ref())))
        rows.append({"n": n, "numba": n * n / t_numba, "numpy": n * n / t_numpy,
                     "ratio": t_numpy / t_numba, "max_abs_diff": diff})
    return rows


def main():
    rows = measure()
    print(f"{'n':>6} {'Numba pairs/s':>14} {'NumPy pairs/s':>14} {'ratio':>7} {'max |dv|':>10}")
    for r in rows:
        print(f"{r['n']:>6} {r['numba']:>14.3e} {r['numpy']:>14.3e} {r['ratio']:>7.1f} "
              f"{r['max_abs_diff']:>10.1e}")
    print(f"fast exp: max relative error over |x| <= {X_MAX:g}: {exp_max_rel_error():.2e}")


if __name__ == "__main__":
    main()
