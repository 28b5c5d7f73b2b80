"""The cost of the density solver on the sphere per unit of simulated time, beside the circle.

    python benchmarks/sphere_density.py             (lmax = 32, 64, 128, best of 5; about 40 s)
    python benchmarks/sphere_density.py --quick     (lmax = 32, 64, best of 3)
    python benchmarks/sphere_density.py --profile   (also cProfile of one run at lmax = 64)

``usaav_edu.meanfield.solve`` with ``grid=sphere_grid(lmax)`` for USA at beta = 1 (no labels)
from the smooth density ``(1 + 0.5 z + 0.3 x y) / (4 pi)`` up to t_max = 0.5, with the default
tolerances and 11 frames, and in the same run the circle solver on m = 2 (lmax + 1) points (the
same number of longitudes as the sphere's grid) from ``(1 + 0.5 cos theta) / (2 pi)``.  For each
lmax it prints the best wall time of the runs divided by t_max, the time per right-hand-side
evaluation (the whole run's time over its evaluations: the stepper and the monitors included)
and the number of evaluations, for both solvers, as a markdown table.

One right-hand side on the sphere is three transforms on the fine grid of ``3 lmax / 2 + 2``
rings by ``3 lmax + 2`` longitudes (a scalar synthesis, the gradient, the adjoint spin-1
synthesis of the flux; SA adds one more synthesis); ``benchmarks/sphere_transforms.py`` times
them alone.  ``--profile`` prints the top 10 functions of one run by cumulative time.
"""

import argparse
import cProfile
import io
import os
import pstats
import sys
import time

import numpy as np
from machine import cpu_name  # benchmarks/machine.py, beside this script

import usaav_edu as ue

T_MAX = 0.5
N_FRAMES = 11


def sphere_initial(grid):
    x, y, z = grid.points.T
    return (1 + 0.5 * z + 0.3 * x * y) / (4 * np.pi)


def circle_initial(m):
    th = ue.meanfield.grid(m)
    return (1 + 0.5 * np.cos(th)) / (2 * np.pi)


def measure(model, f0, grid, repeat):
    best, run = np.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        run = ue.meanfield.solve(model, f0, T_MAX, grid=grid, n_frames=N_FRAMES)
        best = min(best, time.perf_counter() - start)
    assert run.completed, run.message
    return best, run


def profile(model, lmax, top=10):
    grid = ue.meanfield.sphere_grid(lmax)
    f0 = sphere_initial(grid)
    ue.meanfield.solve(model, f0, T_MAX, grid=grid, n_frames=N_FRAMES)  # warm
    prof = cProfile.Profile()
    prof.enable()
    run = ue.meanfield.solve(model, f0, T_MAX, grid=grid, n_frames=N_FRAMES)
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).strip_dirs().sort_stats("cumulative").print_stats(top)
    print(f"\ncProfile of one sphere run, lmax = {lmax} ({run.n_rhs} evaluations), the top {top} "
          f"by cumulative time:")
    print(out.getvalue().strip())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="lmax = 32 and 64, best of 3")
    parser.add_argument("--profile", action="store_true",
                        help="also profile one sphere run at lmax = 64 (cProfile)")
    args = parser.parse_args(argv)
    sizes = (32, 64) if args.quick else (32, 64, 128)
    repeat = 3 if args.quick else 5
    usa = ue.models.usa(beta=1.0)
    print(f"sphere_density.py, {time.strftime('%Y-%m-%d')}, {cpu_name()}, {os.cpu_count()} CPUs")
    print(f"density solver, USA beta = 1, t_max = {T_MAX}, default rtol/atol, {N_FRAMES} frames, "
          f"best of {repeat}; the circle on m = 2 (lmax + 1) points\n")
    # warm up: the circle's compiled kernels and the transform library's first call
    ue.meanfield.solve(usa, circle_initial(64), T_MAX, n_frames=N_FRAMES)
    warm = ue.meanfield.sphere_grid(16)
    ue.meanfield.solve(usa, sphere_initial(warm), T_MAX, grid=warm, n_frames=N_FRAMES)
    print("| lmax | sphere points | sphere s per unit time | sphere ms per rhs | sphere rhs "
          "| m | circle s per unit time | circle ms per rhs | circle rhs | sphere / circle |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for lmax in sizes:
        grid = ue.meanfield.sphere_grid(lmax)
        s_best, s_run = measure(usa, sphere_initial(grid), grid, repeat)
        m = 2 * (lmax + 1)
        c_best, c_run = measure(usa, circle_initial(m), None, repeat)
        print(f"| {lmax} | {grid.size} | {s_best / T_MAX:.3g} | {1e3 * s_best / s_run.n_rhs:.3g} "
              f"| {s_run.n_rhs} | {m} | {c_best / T_MAX:.3g} | {1e3 * c_best / c_run.n_rhs:.3g} "
              f"| {c_run.n_rhs} | {s_best / c_best:.0f} |")
    if args.profile:
        profile(usa, 64)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        print("sphere_density.py: interrupted", file=sys.stderr)
        sys.exit(130)
