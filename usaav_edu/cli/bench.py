"""Throughput of the right-hand side, counted in pair interactions (n^2 per evaluation).

Used by ``usaav-edu bench`` and ``benchmarks/rhs_throughput.py``.  For each n
(d = 3, beta = 1, exponential profile, no bias, random unit vectors) it times

* the package's velocity as the solver calls it
  (:class:`usaav_edu.dynamics.integrate.steppers.GaugeField`: Numba pair sums, then the
  projection), and
* the dense NumPy reference in content coordinates:
  ``S = Y Y^T; W = exp(beta S); V = W Y / n; f = V - <V, Y> Y``.

Both sides are warmed up, then timed with ``time.perf_counter`` in batches
long enough to be measurable (at least ``min_time`` seconds), each after a
sleep of ``pause`` seconds so that the other side's idle threads (OpenBLAS and
OpenMP workers spin for a while after a call) have gone to sleep.  The batches
of the two sides alternate, so that a change of machine load affects both: each
throughput is the median over ``repeats`` batches, and the ratio is the median
over the ``repeats`` pairs of adjacent batches of (NumPy time / Numba time),
with its interquartile range, which shows how noisy the machine was.

:func:`contention` measures the same velocity on a machine that is busy with
other work: quiet, then beside one and two processes that spin on a core,
each time with the package's thread count against one thread under the same
load (:func:`contention_report` prints it; ``benchmarks/contention.py``).

:func:`fast_measure` compares one velocity evaluation by direct summation (the pair sums
above) with fast summation (:mod:`usaav_edu.dynamics.fastsum`, the truncated expansion whose
cost grows linearly in n) at a few n, and :func:`fast_report` prints it with the crossover n
of the cost model (:func:`usaav_edu.dynamics.fastsum.cost.crossover_n`) that ``summation="auto"``
reads.  Direct summation is timed only where the cost model expects at most ``direct_limit``
seconds per evaluation; beyond, its time is the model's estimate, marked as such.

The parameters the functions below share mean the same in each: ``n_values`` the numbers of
tokens, ``n`` one of them, ``y`` ``(n, d)`` unit vectors, ``d`` the dimension, ``beta`` the
inverse temperature, ``tol`` the fast kernel's error bound, ``repeats`` the batches per side,
``min_time`` the least seconds per batch, ``pause`` the sleep before each, ``seed`` the seed
of the tokens and ``fn`` a callable called without arguments.
"""

import functools
import multiprocessing
import signal
import time

import numba
import numpy as np

from ..dynamics import fastsum
from ..dynamics.fastexp import X_MAX, exp_array
from ..dynamics.integrate.steppers import GaugeField
from ..dynamics.rhs import kernel_params, pair_sums
from ..models.model import usa
from ..sphere import uniform


def numpy_velocity(y, beta):
    """The dense NumPy reference: ``P_{y_i}((1/n) sum_j exp(beta <y_i, y_j>) y_j)``.

    Returns
    -------
    ndarray
        ``(n, d)``.
    """
    w = np.exp(beta * (y @ y.T))
    v = w @ y / y.shape[0]
    return v - np.sum(v * y, axis=1, keepdims=True) * y


def numba_velocity_call(y, beta):
    """A zero-argument closure evaluating the package velocity at ``y`` (USA, exp profile).

    Returns
    -------
    callable
        Returns the ``(n, d)`` velocity.
    """
    yt = np.ascontiguousarray(y.T)
    out = np.empty_like(yt)
    field = usa_field(beta)

    def call():
        field(yt, out)
        return out.T

    return call


def seconds_of(fn, calls):
    """Seconds that ``calls`` calls of ``fn`` (without arguments) last, by ``time.perf_counter``."""
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return time.perf_counter() - t0


def usa_field(beta):
    """The package velocity of USA with the exponential profile and no bias, as the solver calls it."""
    return GaugeField(kernel_params(bias=None, beta=beta, linear=False, sa=False))


def batch_size(fn, min_time):
    """Smallest power of two of calls of ``fn`` that last at least ``min_time`` seconds.

    Parameters
    ----------
    min_time : float
        Seconds.

    Returns
    -------
    int
    """
    calls = 1
    while seconds_of(fn, calls) < min_time:
        calls *= 2
    return calls


def batch_times(fns, repeats, min_time, pause=0.0):
    """Seconds per call of each of ``fns`` in ``repeats`` alternating batches: a ``(repeats, len(fns))`` array.

    ``pause`` seconds of sleep precede each batch.

    Parameters
    ----------
    fns : sequence of callable
        The sides.

    Returns
    -------
    ndarray
    """
    for fn in fns:
        fn()  # warm-up (compilation, caches)
    sizes = [batch_size(fn, min_time) for fn in fns]
    times = np.empty((repeats, len(fns)))
    for r in range(repeats):
        for c, (fn, calls) in enumerate(zip(fns, sizes, strict=True)):
            time.sleep(pause)
            times[r, c] = seconds_of(fn, calls) / calls
    return times


def exp_max_rel_error(num=2_000_001):
    """Largest relative error of the vectorized exp against ``numpy.exp`` over ``|x| <= 700``.

    Parameters
    ----------
    num : int
        Grid points.

    Returns
    -------
    float
    """
    x = np.linspace(-X_MAX, X_MAX, num)
    return float(np.max(np.abs(exp_array(x) / np.exp(x) - 1.0)))


def measure(n_values=(256, 1024), repeats=21, d=3, beta=1.0, min_time=0.05, pause=0.25, seed=0):
    """Pair interactions per second of the Numba and NumPy velocities, and their ratio.

    Returns one dict per ``n`` with keys ``n``, ``numba`` and ``numpy`` (pair
    interactions per second, medians over the batches), ``ratio`` (the median
    over adjacent batch pairs of NumPy time / Numba time), ``ratio_q1`` and
    ``ratio_q3`` (its quartiles) and ``max_abs_diff`` (largest absolute
    difference of the two velocities).
    """
    rows = []
    for n in n_values:
        y = uniform(n, d, seed=seed)
        fast = numba_velocity_call(y, beta)
        ref = functools.partial(numpy_velocity, y, beta)
        times = batch_times([fast, ref], repeats, min_time, pause)
        t_numba, t_numpy = np.median(times, axis=0)
        q1, ratio, q3 = np.percentile(times[:, 1] / times[:, 0], [25, 50, 75])
        diff = float(np.max(np.abs(fast() - ref())))
        rows.append({"n": n, "numba": n * n / t_numba, "numpy": n * n / t_numpy, "ratio": float(ratio),
                     "ratio_q1": float(q1), "ratio_q3": float(q3), "max_abs_diff": diff})
    return rows


def report(n_values=(256, 1024), repeats=21):
    """The benchmark as printed text.

    Returns
    -------
    str
    """
    lines = [f"{'n':>6} {'Numba pairs/s':>14} {'NumPy pairs/s':>14} {'ratio':>7} {'(IQR)':>13} {'max |dv|':>10}"]
    for r in measure(n_values, repeats=repeats):
        iqr = f"({r['ratio_q1']:.1f}-{r['ratio_q3']:.1f})"
        lines.append(f"{r['n']:>6} {r['numba']:>14.3e} {r['numpy']:>14.3e} {r['ratio']:>7.1f} {iqr:>13} "
                     f"{r['max_abs_diff']:>10.1e}")
    lines.append(f"fast exp: max relative error over |x| <= {X_MAX:g}: {exp_max_rel_error():.2e}")
    return "\n".join(lines)


def fast_measure(n_values=(1000, 10000, 100000), repeats=5, d=3, beta=1.0, tol=1e-10,
                 min_time=0.05, direct_limit=2.0, seed=0):
    """Seconds per velocity evaluation by direct and by fast summation (USA, no bias).

    For each n, random unit vectors, the fast kernel of :func:`usaav_edu.models.model.usa` at
    ``beta`` with the error bound ``tol``; the direct kernel is timed where
    :func:`usaav_edu.dynamics.fastsum.cost.estimated_seconds` expects at most ``direct_limit``
    seconds, and there the measured relative error
    ``max_i |v_fast_i - v_i| / max_i m_i`` (``m_i = (1/n) sum_j e^{beta <y_i, y_j>}``, the
    row mass the bound refers to) is given too.

    Parameters
    ----------
    n_values : sequence of int
        Numbers of tokens, >= 2.
    repeats : int
        Batches per side (the median is reported).
    direct_limit : float
        Time direct summation only where it is estimated at most this many seconds.

    Returns
    -------
    list of dict
        One per n: ``n``, ``fast`` (seconds), ``direct`` (seconds, measured or estimated),
        ``direct_measured`` (bool), ``speedup`` (direct / fast), ``error`` (measured relative
        error, None where direct was not timed), ``degree``, ``bound``.
    """
    model = usa(beta)
    rows = []
    for n in n_values:
        yt = np.ascontiguousarray(uniform(n, d, seed=seed).T)
        fast = fastsum.fast_kernel(model, np.zeros(n), d, tol)
        out_fast = np.empty_like(yt)
        call = functools.partial(fast, yt, out_fast)
        t_fast = float(np.median(batch_times([call], repeats, min_time)))
        estimate = fastsum.estimated_seconds("direct", n, d, beta, tol)
        measured = estimate <= direct_limit
        error = None
        if measured:
            field = usa_field(beta)
            out = np.empty_like(yt)
            batches = max(1, min(repeats, 3))
            call = functools.partial(field, yt, out)
            t_direct = float(np.median(batch_times([call], batches, min_time)))
            _, z = pair_sums(yt, np.ones((1, 1)), False, beta, False)
            error = float(np.max(np.abs(out_fast - out))) / float(np.max(z) / n)
        else:
            t_direct = estimate
        rows.append({"n": n, "fast": t_fast, "direct": t_direct, "direct_measured": measured,
                     "speedup": t_direct / t_fast, "error": error, "degree": int(fast.degree),
                     "bound": float(fast.bound)})
    return rows


def fast_report(n_values=(1000, 10000, 100000), repeats=5, d=3, beta=1.0, tol=1e-10):
    """Direct against fast summation as printed text, with the crossover n.

    Returns
    -------
    str
        A table (seconds per evaluation, speed-up, measured error) and the line
        ``crossover n (cost model): ...``.
    """
    rows = fast_measure(n_values, repeats=repeats, d=d, beta=beta, tol=tol)
    lines = [f"velocity evaluation, d = {d}, beta = {beta:g}, tol = {tol:g} (USA, no bias): "
             f"direct against fast summation",
             f"{'n':>7} {'direct s':>12} {'fast s':>10} {'speed-up':>9} {'rel. error':>10} "
             f"{'degree':>6} {'bound':>9}"]
    for r in rows:
        direct = f"{r['direct']:.3e}" + (" " if r["direct_measured"] else "*")
        error = "-" if r["error"] is None else f"{r['error']:.1e}"
        lines.append(f"{r['n']:>7} {direct:>12} {r['fast']:>10.3e} {r['speedup']:>9.1f} "
                     f"{error:>10} {r['degree']:>6} {r['bound']:>9.1e}")
    if not all(r["direct_measured"] for r in rows):
        lines.append("* estimated by the cost model (fastsum.estimated_seconds), not timed")
    lines.append(f"crossover n (cost model): {fastsum.crossover_n(d, beta, tol)}: "
                 f"summation='auto' sums fast from there on")
    return "\n".join(lines)


# ---------------------------------------------------------------------- cost before running
NUMPY_RATE = 2e7
"""Pair interactions per second of the dense NumPy reference (``numpy_velocity``; measured
about 1.9e7 at n = 1024 and 4096, d = 3, on the project's 2-core machine)."""
FAST_BASE_BYTES = 1 << 26
"""Memory of the fast kernel that does not grow with n (its per-thread buffers, 64 MB)."""


def measure_cost(n, repeats, d=3, min_time=0.05, pause=0.25):
    """The memory and time :func:`measure` needs at one ``n``, estimated before it runs.

    ::

        bytes   = 8 (2 n^2 + 8 n d)       (the dense reference's n x n matrices, peak two)
        seconds = (repeats + 4) n^2 (1 / R + 1 / R_np) + 2 (repeats + 2) min_time
                  + 2 repeats pause

    with the direct kernel's rate ``R`` (:func:`usaav_edu.dynamics.fastsum.cost.estimated_seconds`)
    and the dense reference's ``R_np = NUMPY_RATE``: every side is called at least once to warm
    up, once to size its batches, once per batch and once to compare the two, and every batch
    (the sizing ones about two) lasts at least ``min_time``.

    Returns
    -------
    tuple
        ``(bytes, seconds)``.
    """
    direct = fastsum.estimated_seconds("direct", n, d, 1.0, 1e-10)
    calls = repeats + 4
    seconds = calls * (direct + n * n / NUMPY_RATE) + 2 * (repeats + 2) * min_time + \
        2 * repeats * pause
    return 8 * (2 * n * n + 8 * n * d), seconds


def fast_measure_cost(n, repeats, d=3, beta=1.0, tol=1e-10, direct_limit=2.0):
    """The memory and time :func:`fast_measure` needs at one ``n``, estimated before it runs.

    ::

        bytes   = 32 n (d + 2) + FAST_BASE_BYTES
        seconds = (repeats + 2) T_fast + [T_direct <= direct_limit] (min(repeats, 3) + 3) T_direct

    with the cost model's times of one evaluation
    (:func:`usaav_edu.dynamics.fastsum.cost.estimated_seconds`); the tokens, their sorted copy, the
    results and the kernel's buffers (measured 3.3 times ``8 n d`` bytes at n = 2e6, d = 3).

    Parameters
    ----------
    beta, tol : float
        The fast kernel's inverse temperature and error bound.
    direct_limit : float
        As in :func:`fast_measure`.

    Returns
    -------
    tuple
        ``(bytes, seconds)``.
    """
    fast = fastsum.estimated_seconds("fast", n, d, beta, tol)
    direct = fastsum.estimated_seconds("direct", n, d, beta, tol)
    seconds = (repeats + 2) * fast
    if direct <= direct_limit:
        seconds += (min(repeats, 3) + 3) * direct
    return 32 * n * (d + 2) + FAST_BASE_BYTES, seconds


# Quiet figures of the package velocity before the thread policy of
# :mod:`usaav_edu.dynamics.rhs` (lowest of several runs, pair interactions per
# second, d = 3, beta = 1, two cores): the quiet goal of :func:`contention_report`.
QUIET_BEFORE = {256: 1.06e9, 1024: 1.27e9}


def spin(ready, stop):
    """Release ``ready``, then keep one core busy until the event ``stop`` is set.

    A pure loop; it ignores Ctrl-C (the parent stops it).

    Parameters
    ----------
    ready : multiprocessing.Semaphore
        Released once the process runs.
    stop : multiprocessing.Event
        Set to end the loop.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    ready.release()
    while not stop.is_set():
        for _ in range(200_000):
            pass


class BusyProcesses:
    """Context manager: ``count`` processes spinning on a core each, stopped on exit (also on Ctrl-C).

    Started with the ``spawn`` method: GNU OpenMP is not fork-safe.
    """

    def __init__(self, count, settle=0.2, timeout=60.0):
        self.count = count
        self.settle = settle
        self.timeout = timeout
        self.procs = []

    def __enter__(self):
        if not self.count:
            return self
        ctx = multiprocessing.get_context("spawn")
        self.stop = ctx.Event()
        ready = ctx.Semaphore(0)
        try:
            for _ in range(self.count):
                p = ctx.Process(target=spin, args=(ready, self.stop), daemon=True)
                p.start()
                self.procs.append(p)
            for _ in range(self.count):
                if not ready.acquire(timeout=self.timeout):
                    raise RuntimeError(f"a busy process did not start within {self.timeout} s")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        time.sleep(self.settle)
        return self

    def __exit__(self, *exc):
        if self.procs:
            self.stop.set()
            for p in self.procs:
                p.join(timeout=2.0)
                if p.is_alive():
                    p.terminate()
                    p.join()
        self.procs = []
        return False


def with_threads(fn, threads):
    """``fn`` run with ``numba.set_num_threads(threads)`` (the count restored after each call).

    Parameters
    ----------
    threads : int
        Thread count during the call.

    Returns
    -------
    callable
    """
    def call():
        before = numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            return fn()
        finally:
            numba.set_num_threads(before)
    return call


def contention(n_values=(256, 1024), loads=(0, 1, 2), repeats=9, d=3, beta=1.0, min_time=0.1,
               pause=0.05, seed=0):
    """Pair interactions per second of the package velocity beside ``0, 1, 2`` busy processes.

    For each load (number of spinning processes) and ``n``, batches of the
    velocity with the package's thread count and with one thread alternate
    (``repeats`` each, at least ``min_time`` seconds per batch); returns one
    dict per (load, n) with keys ``load``, ``n``, ``threads`` (the package's
    thread count), ``parallel`` and ``one`` (medians, pair interactions per
    second) and ``ratio`` (median over adjacent batch pairs of one-thread time
    / parallel time).

    Parameters
    ----------
    loads : sequence of int
        Numbers of busy processes.

    Returns
    -------
    list of dict
    """
    threads = numba.get_num_threads()
    calls = {}
    for n in n_values:
        fast = numba_velocity_call(uniform(n, d, seed=seed), beta)
        calls[n] = (fast, with_threads(fast, 1))
    rows = []
    for load in loads:
        with BusyProcesses(load):
            for n in n_values:
                times = batch_times(calls[n], repeats, min_time, pause)
                t_par, t_one = np.median(times, axis=0)
                rows.append({"load": load, "n": n, "threads": threads, "parallel": n * n / t_par,
                             "one": n * n / t_one, "ratio": float(np.median(times[:, 1] / times[:, 0]))})
    return rows


def contention_report(n_values=(256, 1024), repeats=15):
    """The contention benchmark as printed text: a table, then each goal with the measured figure.

    The first lines give the threading set-up and the machine's load average
    before and after the run (other work on the machine makes the "quiet"
    figures lower and every figure noisier).

    Returns
    -------
    str
    """
    import os

    from ..dynamics import rhs

    before = os.getloadavg()[0]
    rows = contention(n_values, repeats=repeats)
    lines = [rhs.thread_policy(),
             f"load average (1 min) before {before:.2f}, after {os.getloadavg()[0]:.2f} "
             f"(with {len(os.sched_getaffinity(0))} CPUs)",
             f"{'busy':>4} {'n':>6} {'package pairs/s':>16} {'one thread':>12} {'package/one':>12}"]
    for r in rows:
        lines.append(f"{r['load']:>4} {r['n']:>6} {r['parallel']:>16.3e} {r['one']:>12.3e} {r['ratio']:>12.2f}")
    by = {(r["load"], r["n"]): r for r in rows}

    def verdict(ok):
        return "met" if ok else "MISSED"

    lines.append("goals:")
    for n in n_values:
        worst = min(by[(load, n)]["ratio"] for load in (0, 1, 2))
        lines.append(f"  n={n}: package/one thread under the same load >= 0.8: "
                     f"lowest {worst:.2f} {verdict(worst >= 0.8)}")
        beside = by[(1, n)]["parallel"] / by[(0, n)]["parallel"]
        lines.append(f"  n={n}: beside one busy process / quiet >= 0.45: {beside:.2f} {verdict(beside >= 0.45)}")
        quiet = by[(0, n)]["parallel"]
        if n in QUIET_BEFORE:
            lines.append(f"  n={n}: quiet >= {QUIET_BEFORE[n]:.2e} (before): {quiet:.2e} "
                         f"{verdict(quiet >= QUIET_BEFORE[n])}")
    return "\n".join(lines)
