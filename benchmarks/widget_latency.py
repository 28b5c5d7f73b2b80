"""Latency of one dashboard slider change, and the page payload of each widget.

One slider change of ``ExperimentDashboard`` runs ``experiments.setup`` + ``simulate`` (n = 256,
t_max = 20 by default), redraws the sphere at the final state and the energy plot (the
"redraw"), and then rebuilds the player's keyframes.  This script times those steps on the
kernel side, with no browser attached (widget messages are built and sent to a comm that has
no frontend), after a warm-up change so that Numba compilation is not counted.  It prints
figures; it asserts nothing.

    python benchmarks/widget_latency.py [--n 256] [--t-max 20] [--repeats 5] [--model rope]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--t-max", type=float, default=20.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--model", default="rope")
    args = parser.parse_args(argv)

    from usaav_edu.widgets import (
        ExperimentDashboard,
        SphereView,
        TrajectoryPlayer,
        embedded_state_bytes,
    )

    t0 = time.perf_counter()
    dash = ExperimentDashboard(args.model, n=args.n, t_max=args.t_max, debounce=0)
    print(f"dashboard built in {time.perf_counter() - t0:.2f} s (includes any Numba compilation)")
    dash.beta.value = 1.1                      # warm-up change
    rows = []
    betas = [1.2 + 0.1 * k for k in range(args.repeats)]
    for beta in betas:
        dash.beta.value = beta
        rows.append(dict(dash.last_timing))

    def med(key):
        return 1000 * statistics.median(r[key] for r in rows)

    print(f"slider change, {args.model}, n = {args.n}, t_max = {args.t_max:g}, "
          f"{dash.trajectory.x.shape[0]} frames, {os.cpu_count()} cpus, median of {len(rows)}:")
    print(f"  simulate                     {med('simulate'):8.1f} ms")
    print(f"  redraw (sphere + energy)     {med('draw'):8.1f} ms")
    print(f"  change -> redrawn (total)    {med('total'):8.1f} ms   (budget 250 ms)")
    print(f"  player keyframes rebuilt     {med('animation'):8.1f} ms   (after the redraw)")

    print("embedded page state per widget:")
    traj = dash.trajectory
    for label, widget in [("SphereView", SphereView(traj)),
                          ("SphereView with trails", SphereView(traj, trails=True)),
                          ("TrajectoryPlayer", TrajectoryPlayer(traj)),
                          ("ExperimentDashboard", dash)]:
        print(f"  {label:28s} {embedded_state_bytes(widget) / 1e6:6.3f} MB  (n = {traj.n})")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:  # Ctrl-C: one line, no traceback
        print("widget_latency.py: interrupted", file=sys.stderr)
        sys.exit(130)
