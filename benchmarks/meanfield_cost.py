"""The cost of the density solver per unit of simulated time.

    python benchmarks/meanfield_cost.py

``usaav_edu.meanfield.solver.solve`` for USA at beta = 1 (no labels) from the smooth density
``(1 + 0.5 cos theta + 0.2 sin 2 theta) / (2 pi)`` on grids of m = 256 and 1024 points, up to
t_max = 1.5 (before the density sharpens beyond either grid), with the default tolerances and
11 frames.  For each m it prints the best wall time of five runs divided by t_max, the
Dormand-Prince steps per unit time and the time per right-hand-side evaluation.  The step is
bounded by stability, about 0.95 / ((m/2 - 1) max|w|), so the steps per unit time grow like m
and the cost per unit time like m^2 log m.  A second line runs RoPE (omega = 1) with 8 labels
``xi_l = 2 pi l / 8`` whose conditional densities start as that density shifted,
``f_l(0, theta) = f0(theta + xi_l)``, so that they move together (8 times the work of one
density, at the same steps).
"""

import time

import numpy as np

import usaav_edu as ue
from usaav_edu.meanfield import solver as mf

T_MAX = 1.5


def initial(m, shift=0.0):
    th = mf.grid(m) + shift
    return (1 + 0.5 * np.cos(th) + 0.2 * np.sin(2 * th)) / (2 * np.pi)


def measure(model, f0, xi=None, repeat=5):
    best, run = np.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        run = mf.solve(model, f0, T_MAX, xi=xi, n_frames=11)
        best = min(best, time.perf_counter() - start)
    assert run.completed, run.message
    return best, run


def main():
    usa = ue.models.usa(1.0)
    rope = ue.models.rope(1.0, (1.0,), d=2)
    xi = 2 * np.pi * np.arange(8) / 8
    print(f"density solver, USA beta = 1, t_max = {T_MAX}, default rtol/atol, best of 5")
    print(f"{'model':>10} {'m':>6} {'s per unit time':>16} {'steps per unit time':>20} "
          f"{'us per rhs':>11}")
    for m in (256, 1024):
        for name, model, x in (("usa", usa, None), ("rope, L=8", rope, xi)):
            f0 = initial(m) if x is None else np.array([initial(m, s) for s in x])
            best, run = measure(model, f0, x)
            print(f"{name:>10} {m:>6} {best / T_MAX:>16.3g} "
                  f"{(run.steps_accepted + run.steps_rejected) / T_MAX:>20.0f} "
                  f"{1e6 * best / run.n_rhs:>11.1f}")


if __name__ == "__main__":
    main()
