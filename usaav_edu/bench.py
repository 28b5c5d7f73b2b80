"""Throughput of the right-hand side, counted in pair interactions (n^2 per evaluation).

Used by ``usaav-edu bench`` and ``benchmarks/rhs_throughput.py``.  The NumPy
side is the dense formula in content coordinates
(``S = X X^T; W = exp(beta S); V = W X / n; V - <V, X> X``), the Numba side the
package's velocity in gauge coordinates; both on the same random unit vectors
(d = 3, beta = 1, no bias), both warmed up, timed as the median of ``repeats``.
"""

import time

import numpy as np

from .dynamics.integrators import velocity
from .sphere import uniform


def numpy_velocity(x, beta):
    """The dense NumPy velocity of USA: ``P_{x_i}((1/n) sum_j e^{beta<x_i,x_j>} x_j)``."""
    w = np.exp(beta * (x @ x.T))
    v = w @ x / x.shape[0]
    return v - np.sum(v * x, axis=1, keepdims=True) * x


def _median_time(fn, min_time=0.2, repeats=7):
    fn()
    calls = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        el = time.perf_counter() - t0
        if el >= min_time / repeats:
            break
        calls *= 2
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) / calls)
    return float(np.median(times))


def measure(n_values=(256, 1024), d=3, beta=1.0, repeats=7, seed=0):
    """Pair interactions per second of the Numba and NumPy velocities, and their ratio.

    Returns a list of dicts with keys n, numba, numpy, ratio, max_abs_diff.
    """
    rows = []
    for n in n_values:
        x = uniform(n, d, seed=seed)
        yt = np.ascontiguousarray(x.T)
        out = np.empty_like(yt)
        args = (np.ones((1, 1)), False, float(beta), False, False, np.ones(1, dtype=np.bool_), False)
        t_numba = _median_time(lambda: velocity(yt, args, out), repeats=repeats)
        t_numpy = _median_time(lambda: numpy_velocity(x, beta), repeats=repeats)
        diff = float(np.max(np.abs(out.T - numpy_velocity(x, beta))))
        rows.append({"n": n, "numba": n * n / t_numba, "numpy": n * n / t_numpy,
                     "ratio": t_numpy / t_numba, "max_abs_diff": diff})
    return rows
