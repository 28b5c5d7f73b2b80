"""The ``usaav-edu`` command.

    usaav-edu simulate --model rope --n 64 --d 3 --beta 1 --tau 20 --seed 0 --out run.npz
    usaav-edu bench

``simulate`` builds a standard experiment (``usaav_edu.experiments.setup``),
integrates it, writes the Trajectory to ``--out`` and prints a summary;
``bench`` prints the right-hand-side throughput (pair interactions per second).
"""

import argparse
import sys

from . import diagnostics, experiments
from .solver import IntegrationError, simulate


def _parser():
    p = argparse.ArgumentParser(prog="usaav-edu", description="Mean-field self-attention on the sphere.")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("simulate", help="simulate a standard experiment and save the trajectory")
    s.add_argument("--model", choices=experiments.NAMES, default="usa")
    s.add_argument("--n", type=int, default=64, help="number of tokens")
    s.add_argument("--d", type=int, default=3, help="ambient dimension (tokens on S^{d-1})")
    s.add_argument("--beta", type=float, default=1.0, help="inverse temperature")
    s.add_argument("--omega", type=float, default=1.0, help="rotation / cosine frequency")
    s.add_argument("--prompts", type=int, default=4, help="number of prompts (prefix_gauge)")
    s.add_argument("--lam", type=float, default=1.0, help="decay of the distance bias")
    s.add_argument("--tau", type=float, default=20.0, help="final time")
    s.add_argument("--dt", type=float, default=None, help="RK4 step (default: from beta)")
    s.add_argument("--method", choices=("rk4", "dopri5"), default="rk4")
    s.add_argument("--frames", type=int, default=101, help="number of stored frames")
    s.add_argument("--seed", type=int, default=0, help="seed of the uniform initial state")
    s.add_argument("--tol", type=float, default=1e-3, help="cluster tolerance for the summary")
    s.add_argument("--out", default=None, help="output .npz file")
    b = sub.add_parser("bench", help="print right-hand-side throughput (pair interactions per second)")
    b.add_argument("--n", type=int, nargs="+", default=[256, 1024])
    b.add_argument("--repeats", type=int, default=9)
    return p


def _simulate(a):
    model, x0, xi = experiments.setup(a.model, n=a.n, d=a.d, beta=a.beta, omega=a.omega,
                                      n_prompts=a.prompts, lam=a.lam, seed=a.seed)
    traj = simulate(model, x0, xi, t_max=a.tau, dt=a.dt, method=a.method, n_frames=a.frames,
                    seed=a.seed, progress=True)
    s = diagnostics.summary(traj, tol=a.tol)
    print(f"model {a.model}  n {traj.n}  d {traj.d}  beta {a.beta}  tau {a.tau}  seed {a.seed}  "
          f"method {traj.method}  rhs evaluations {traj.n_rhs}")
    print(f"final energy   {s['energy']:.10g}")
    print(f"energy bound   {s['energy_bound']:.10g}")
    print(f"spread         {s['spread']:.3e}")
    print(f"dirac distance {s['dirac_distance']:.3e}")
    print(f"clusters       {s['clusters']} (tol {a.tol:g})")
    if a.out:
        traj.save(a.out)
        print(f"wrote {a.out}")


def _bench(a):
    from .bench import report

    print(report(a.n, repeats=a.repeats))


def main(argv=None):
    a = _parser().parse_args(argv)
    try:
        if a.command == "simulate":
            _simulate(a)
        else:
            _bench(a)
    except (ValueError, TypeError, IntegrationError) as exc:
        print(f"usaav-edu: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
