"""The cost of running a grid on Dask: ``ue.sweep`` on a local cluster against a serial loop.

    python benchmarks/sweep_overhead.py [--workers 2] [--seeds 32]

The grid is 4 x 32 runs of the ``rope`` experiment (``beta`` in 0.5, 1, 1.5, 2 and seeds 0 to
31), n = 256 tokens on S^2, t_max = 20, RK4 with its default step, the diagnostics of
``diagnostics.summary`` for each run.  The serial loop runs ``setup``, ``simulate`` and
``summary`` point after point in this process (after one small run that loads the compiled
kernels).  The sweep starts a local cluster of ``--workers`` processes, runs the same points and
closes the cluster; its wall time includes all of that, and the workers' own loading of the
kernels.  With ``w`` workers on ``w`` free cores the ideal wall time is the serial time divided by
``w``; the overhead printed is

    overhead = wall time of the sweep / (serial time / w) - 1,

in percent, and separately the time to start and to close the cluster.  The load average of the
machine is printed with the figures: on a shared machine they vary with it.
"""

import argparse
import os
import time

import numpy as np

import usaav_edu as ue

BETAS = (0.5, 1.0, 1.5, 2.0)
N, T_MAX = 256, 20.0


def serial(seeds):
    """Wall time of the serial loop, and its results by (beta, seed)."""
    model, x0, xi = ue.experiments.setup("rope", n=8)
    ue.simulate(model, x0, xi, t_max=0.1)  # load the compiled kernels
    results = {}
    t0 = time.perf_counter()
    for beta in BETAS:
        for seed in seeds:
            model, x0, xi = ue.experiments.setup("rope", n=N, beta=beta, seed=seed)
            traj = ue.simulate(model, x0, xi, t_max=T_MAX)
            results[beta, seed] = ue.diagnostics.summary(traj)
    return time.perf_counter() - t0, results


def on_dask(seeds, workers):
    """Wall times of the sweep (start to Dataset) and of the cluster's start and close alone."""
    from usaav_edu.sweep import _local_cluster

    t0 = time.perf_counter()
    client, cluster = _local_cluster(workers)
    started = time.perf_counter() - t0
    t1 = time.perf_counter()
    client.close()
    cluster.close()
    closed = time.perf_counter() - t1
    t0 = time.perf_counter()
    ds = ue.sweep("rope", {"beta": list(BETAS), "seed": list(seeds)}, n=N, t_max=T_MAX,
                  workers=workers, progress=False)
    return time.perf_counter() - t0, started + closed, ds


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seeds", type=int, default=32)
    a = p.parse_args()
    seeds = range(a.seeds)
    load = os.getloadavg()
    wall, cluster, ds = on_dask(seeds, a.workers)
    t_serial, results = serial(seeds)
    same = all(ds["energy"].sel(beta=b, seed=s).item() == r["energy"]
               and ds["spread"].sel(beta=b, seed=s).item() == r["spread"]
               for (b, s), r in results.items())
    ideal = t_serial / a.workers
    print(f"grid: rope, beta in {BETAS} x seeds 0 to {a.seeds - 1}, n = {N}, t_max = {T_MAX:g}, "
          f"RK4 (default step)")
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
          f"(on {os.cpu_count()} CPUs); after: {os.getloadavg()[0]:.2f}")
    print(f"serial loop:         {t_serial:7.2f} s ({1e3 * t_serial / len(results):.0f} ms a run)")
    print(f"sweep, {a.workers} workers:    {wall:7.2f} s (ideal {ideal:.2f} s: overhead "
          f"{100 * (wall / ideal - 1):+.0f}%; speed-up {t_serial / wall:.2f})")
    print(f"  of which starting and closing an empty cluster: {cluster:.2f} s")
    print(f"sweep equals the serial loop bit for bit: {same}")
    return 0 if same and np.isfinite(wall) else 1


if __name__ == "__main__":
    raise SystemExit(main())
