"""Fast summation against direct summation: time, crossover, accuracy, memory.

    python benchmarks/fast_summation.py            (everything, a few minutes)
    python benchmarks/fast_summation.py --quick    (fewer sizes, a shorter accuracy table)

Prints, for d = 3, beta = 1, tol = 1e-10 (the figures of the fast kernel's targets):

1. the time of one velocity evaluation, direct (``rhs.velocity``) and fast
   (``fastsum.FastKernel``), n = 1e3 .. 1e5; the direct kernel is timed only while one
   evaluation takes under about 2 s, beyond that its time is extrapolated as ``n^2`` from the
   largest measured size and marked so; the fast kernel also with the distance and cosine biases;
2. the crossover n measured (the first size of a doubling grid where fast is faster) and the
   one of the cost model (``fastsum.cost.crossover_n``), with the constants fitted from the timings;
3. the peak memory (resident set) of a process that evaluates the fast kernel at n = 1e5;
4. the accuracy: ``err = max_i |v^_i - v_i| / max_i m_i`` (the fast kernel's error norm) against
   the direct kernel at n = 8192 for beta in {0.5, 1, 2, 4, 8}, for the models usa, rope (d = 3),
   prefix_gauge (d = 4, random frames), distance_bias and cosine_bias (exp profile), in gauge
   coordinates (``model.kernel(x0, xi).y0``), beside the bound the fast kernel guarantees;
5. (not with --quick) a rope run to tau = 20 with RK4 at the default step, n = 1e5.

Times are the best of several evaluations (the machine may be shared: the best is the least
disturbed); the fast kernel's CPU time (all threads) is printed beside its wall-clock time,
since on a shared machine it is the steadier figure (on two free cores the wall-clock time is
about half of it).
"""

import argparse
import math
import os
import resource
import subprocess
import sys
import time

import numpy as np
from machine import cpu_name  # benchmarks/machine.py, beside this script

import usaav_edu as ue
from usaav_edu.dynamics import rhs
from usaav_edu.dynamics.fastsum import cost
from usaav_edu.dynamics.fastsum import kernel as fs

D, BETA, TOL = 3, 1.0, 1e-10
DIRECT_LIMIT = 2.0
"""Seconds: the direct kernel is timed only while one evaluation is predicted below this."""


def unit_columns(d, n, seed=0):
    y = np.random.default_rng(seed).standard_normal((d, n))
    return np.ascontiguousarray(y / np.linalg.norm(y, axis=0))


def best_time(fn, budget=1.0, least=3, most=15, cpu=False):
    """The best of repeated calls of ``fn()`` (at least ``least``, within ``budget`` seconds).

    With ``cpu``: also the least CPU time of the process (all threads) over the calls, which a
    shared machine disturbs less than the wall-clock time.
    """
    fn()
    times, cpus = [], []
    start = time.perf_counter()
    while len(times) < least or (len(times) < most and time.perf_counter() - start < budget):
        t, c = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return (min(times), min(cpus)) if cpu else min(times)


def direct_call(yt, bias=None):
    params = rhs.kernel_params(bias, BETA, False, False)
    out = np.empty_like(yt)
    return lambda: rhs.velocity(yt, params, out)


def fast_call(yt, bias="none", xi=None, **kw):
    fk = fs.FastKernel(yt.shape[0], BETA, False, False, tol=TOL, bias=bias, xi=xi, **kw)
    out = np.empty_like(yt)
    return fk, (lambda: fk(yt, out))


def timing(sizes):
    print(f"1. One velocity evaluation, d = {D}, beta = {BETA:g}, tol = {TOL:g}, no bias")
    print(f"{'n':>8} {'direct':>12} {'fast':>10} {'direct/fast':>12} {'fast CPU time':>14}")
    rate = None
    rows = []
    for n in sizes:
        yt = unit_columns(D, n, seed=n)
        predicted = None if rate is None else n * n / rate
        if predicted is None or predicted < DIRECT_LIMIT:
            t_direct = best_time(direct_call(yt), budget=3 * (predicted or 0.1), least=2)
            rate = n * n / t_direct
            mark = " "
        else:
            t_direct = predicted
            mark = "*"
        fk, call = fast_call(yt)
        t_fast, c_fast = best_time(call, cpu=True)
        rows.append((n, t_direct, t_fast, fk.rank, mark == "*"))
        print(f"{n:>8} {1e3 * t_direct:>10.2f}{mark} ms {1e3 * t_fast:>7.2f} ms "
              f"{t_direct / t_fast:>11.1f}x {1e3 * c_fast:>11.2f} ms")
    print("  (* extrapolated as n^2 from the largest measured size; rank p = "
          f"{rows[-1][3]}, degree {fk.degree}, bound {fk.bound:.2g})")
    n = sizes[-1]
    xi = np.arange(n, dtype=float)
    yt = unit_columns(D, n, seed=1)
    for bias, kw in (("distance", {"lam": 0.1}), ("cosine", {"omega": 0.01})):
        fk, call = fast_call(yt, bias, xi, **kw)
        t_fast, c_fast = best_time(call, cpu=True)
        print(f"  fast, {bias} bias, n = {n}: {1e3 * t_fast:.2f} ms (CPU time "
              f"{1e3 * c_fast:.2f} ms; rank {fk.rank})")
    return rows


def crossover(rows):
    print("\n2. Crossover (direct against fast, no bias)")
    n, found = 256, None
    while n <= 65536 and found is None:
        yt = unit_columns(D, n, seed=n)
        t_direct = best_time(direct_call(yt), budget=0.5)
        t_fast = best_time(fast_call(yt)[1], budget=0.5)
        if t_fast < t_direct:
            found = n
        print(f"  n = {n:>6}: direct {1e3 * t_direct:8.3f} ms, fast {1e3 * t_fast:8.3f} ms")
        n *= 2
    print(f"  measured: fast is faster from n = {found} on (doubling grid)")
    print(f"  cost model (fastsum.crossover_n): n = {cost.crossover_n(D, BETA, TOL)}")
    big = [r for r in rows if r[0] >= 10000]
    measured_direct = [r for r in rows if not r[4]]
    if big and measured_direct:
        n_d, t_d = measured_direct[-1][:2]
        n_f, t_f, p = big[-1][0], big[-1][2], big[-1][3]
        print(f"  fitted constants: direct rate {n_d * n_d / t_d:.3g} pairs/s (n = {n_d}); fast "
              f"{t_f / (n_f * p * (D + 2)):.3g} s per token-feature-value (n = {n_f}, p = {p})")


def accuracy(betas, n):
    print(f"\n4. Accuracy at n = {n}: err = max|v^ - v| / max m  (tol = {TOL:g})")
    frames4 = ue.sphere.random_frames(4, 4, seed=0)
    positions = np.linspace(0.0, 20.0, n)
    print(f"{'model':>14} {'d':>2} " + " ".join(f"{'b=' + format(b, 'g'):>17}" for b in betas))
    for name in ("usa", "rope", "prefix_gauge", "distance_bias", "cosine_bias"):
        cells = []
        for beta in betas:
            model, d, xi = {
                "usa": (ue.models.usa(beta), 3, None),
                "rope": (ue.models.rope(beta, (1.0,), 3), 3, positions),
                "prefix_gauge": (ue.models.prefix_gauge(beta, frames4), 4, np.arange(n) % 4),
                "distance_bias": (ue.models.distance_bias(beta, lam=0.5), 3, positions),
                "cosine_bias": (ue.models.cosine_bias(beta, omega=0.7, profile="exp"), 3, positions),
            }[name]
            kin = model.kernel(unit_columns(d, n, seed=7).T, xi)
            want = np.empty_like(kin.y0)
            rhs.velocity(kin.y0, kin.params, want)
            fk = fs.fast_kernel(model, kin.xi, d, TOL)
            got = fk(kin.y0, np.empty_like(kin.y0))
            err = np.max(np.abs(got - want)) / max_row_mass(kin.y0, kin.bias, beta)
            cells.append(f"{err:8.1e} ({fk.bound:6.1e})")
            del kin
        print(f"{name:>14} {d:>2} " + " ".join(f"{c:>17}" for c in cells))
    print("  each cell: measured err (the guaranteed bound)")


def max_row_mass(yt, bias, beta, rows=512):
    """``max_i (1/n) sum_j |b_ij| e^{beta <y_i, y_j>}`` by blocks of rows (USA)."""
    n = yt.shape[1]
    best = 0.0
    for i0 in range(0, n, rows):
        w = np.exp(beta * (yt[:, i0:i0 + rows].T @ yt))
        if bias is not None:
            w *= np.abs(bias[i0:i0 + rows])
        best = max(best, float(np.max(w.sum(axis=1))) / n)
    return best


MEMORY_CHILD = """
import resource, numpy as np
from usaav_edu.dynamics.fastsum import kernel as fs
n = {n}
y = np.random.default_rng(0).standard_normal((3, n)); y /= np.linalg.norm(y, axis=0)
y = np.ascontiguousarray(y)
for bias, kw in (("none", {{}}), ("distance", {{"lam": 0.1}}), ("cosine", {{"omega": 0.01}})):
    fk = fs.FastKernel(3, 1.0, False, False, tol=1e-10, bias=bias, xi=np.arange(n, dtype=float),
                       **kw)
    out = np.empty_like(y)
    fk(y, out); fk.energy(y)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:  # the high-water mark of this process's own memory (ru_maxrss may keep the parent's)
    with open("/proc/self/status") as fh:
        peak = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM"))
except (OSError, StopIteration):
    pass
print(peak)
"""


def memory(n):
    done = subprocess.run([sys.executable, "-c", MEMORY_CHILD.format(n=n)], capture_output=True,
                          text=True, check=True)
    kib = int(done.stdout.split()[-1])
    print(f"\n3. Peak resident memory of a process evaluating the fast kernel (three biases, "
          f"velocity and energy) at n = {n}: {kib / 1024:.0f} MB")


def rope_run(n):
    from usaav_edu.dynamics.integrate.steppers import METHODS, Control

    model = ue.models.rope(BETA, (1.0,), 3)
    xi = np.arange(n, dtype=float)
    x0 = unit_columns(3, n, seed=3).T
    y0 = np.ascontiguousarray(model.to_gauge(x0, xi).T)
    fk = fs.fast_kernel(model, xi, 3, TOL)
    h = min(0.05, 0.25 / ((1.0 + BETA) * math.exp(BETA)))  # the solver's default RK4 step
    stepper = METHODS["rk4"]
    start = time.perf_counter()
    result = stepper.advance(y0, 0.0, 20.0, h, fk, Control())
    took = time.perf_counter() - start
    print(f"\n5. rope (d = 3, beta = {BETA:g}), n = {n}, RK4 with h = {h:.3g} to tau = 20: "
          f"{took:.1f} s ({result.n_rhs} evaluations, {1e3 * took / result.n_rhs:.1f} ms each, "
          f"{result.outcome.name})")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and models")
    args = parser.parse_args(argv)
    print(f"fast_summation.py, {time.strftime('%Y-%m-%d')}, {cpu_name()}, "
          f"{os.cpu_count()} CPUs; {rhs.thread_policy()}")
    sizes = [1000, 10000, 100000] if args.quick else [1000, 3000, 10000, 30000, 100000]
    rows = timing(sizes)
    crossover(rows)
    memory(100000)
    accuracy([0.5, 8.0] if args.quick else [0.5, 1.0, 2.0, 4.0, 8.0], 2048 if args.quick else 8192)
    if not args.quick:
        rope_run(100000)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\n(this process's peak resident memory, with the dense matrices of the accuracy "
          f"table: {peak:.0f} MB)")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        print("fast_summation.py: interrupted", file=sys.stderr)
        sys.exit(130)
