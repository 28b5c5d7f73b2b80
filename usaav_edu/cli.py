"""The ``usaav-edu`` command::

    usaav-edu simulate --model rope --n 64 --d 3 --beta 1 --tau 20 \\
        --seed 0 --out run.npz
    usaav-edu simulate --model rope --n 100000 --summation fast --summation-tol 1e-10
    usaav-edu bench

``simulate`` checks every flag, builds a standard experiment
(``usaav_edu.experiments.setup``), integrates it, writes the Trajectory to
exactly the path ``--out`` and only then prints a summary; ``bench`` prints the
right-hand-side throughput (pair interactions per second), then the time of one
velocity evaluation by direct and by fast summation and the estimated crossover n.

``--summation`` picks how the velocity is summed (``simulate``'s ``summation``:
``auto``, ``direct`` or ``fast``) and ``--summation-tol`` the error bound of fast
summation (``simulate``'s ``tol``; ``--tol`` is the cluster tolerance of the
summary).  ``--summation fast`` for an experiment where fast summation does not
apply is refused before the run, with the reason.

A flag that the chosen experiment does not read (``--omega`` for ``usa``, a
``--d`` other than 4 for ``generalized_rope``, ``--rtol`` with RK4, ...) is an
error, not silently ignored.  Every failure is one line on stderr, never a
traceback: exit status 2 for bad input, 1 for a failed run (integration error,
out of memory, a file that cannot be written), 130 for Ctrl-C.
"""

import argparse
import sys

from . import _validate as v
from . import diagnostics, experiments
from .dynamics.fastsum import fast_applies
from .solver import IntegrationError, simulate

DEFAULTS = {"d": 3, "beta": 1.0, "omega": 1.0, "prompts": 4, "lam": 1.0}
SUMMATIONS = ("auto", "direct", "fast")
FAST_N = (1000, 10000, 100000)
"""The default token counts of ``bench``'s table of direct against fast summation."""
# the setup keyword behind each experiment flag
SETUP_KEYWORD = {"d": "d", "beta": "beta", "omega": "omega", "prompts": "n_prompts", "lam": "lam"}


def _parser():
    p = argparse.ArgumentParser(prog="usaav-edu", description="Mean-field self-attention on the sphere.")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("simulate", help="simulate a standard experiment and save the trajectory")
    s.add_argument("--model", choices=experiments.NAMES, default="usa", metavar="MODEL",
                   help="one of " + ", ".join(experiments.NAMES))
    s.add_argument("--n", type=int, default=64, help="number of tokens, >= 1")
    s.add_argument("--d", type=int, default=None,
                   help="ambient dimension (tokens on S^{d-1}), >= 2 (default 3; generalized_rope: 4 only)")
    s.add_argument("--beta", type=float, default=None, help="inverse temperature, >= 0 (default 1)")
    s.add_argument("--omega", type=float, default=None, help="rotation / cosine frequency (default 1)")
    s.add_argument("--prompts", type=int, default=None, help="number of prompts, >= 1 (prefix_gauge; default 4)")
    s.add_argument("--lam", type=float, default=None, help="decay of the distance bias, >= 0 (default 1)")
    s.add_argument("--tau", type=float, default=20.0, help="final time, > 0")
    s.add_argument("--dt", type=float, default=None, help="RK4 step, > 0 (default: from beta)")
    s.add_argument("--method", choices=("rk4", "dopri5"), default="rk4")
    s.add_argument("--rtol", type=float, default=None, help="dopri5 relative tolerance, > 0 (default 1e-8)")
    s.add_argument("--atol", type=float, default=None, help="dopri5 absolute tolerance, > 0 (default 1e-10)")
    s.add_argument("--frames", type=int, default=101, help="number of stored frames, >= 2")
    s.add_argument("--max-steps", type=int, default=None,
                   help="refuse runs estimated to take more steps than this, >= 1 (default: simulate's cap)")
    s.add_argument("--seed", type=int, default=0, help="seed of the uniform initial state, >= 0")
    s.add_argument("--summation", choices=SUMMATIONS, default="auto",
                   help="how the velocity is summed: direct (n^2 pairs), fast (expansion, linear in "
                        "n) or auto (the one estimated faster; default)")
    s.add_argument("--summation-tol", type=float, default=None,
                   help="relative error bound of fast summation, in (0, 1) (default 1e-10)")
    s.add_argument("--tol", type=float, default=1e-3, help="cluster tolerance for the summary, > 0")
    s.add_argument("--out", default=None, help="output file, written to exactly this path (an .npz archive)")
    b = sub.add_parser("bench", help="print right-hand-side throughput (pair interactions per second)")
    b.add_argument("--n", type=int, nargs="+", default=[256, 1024])
    b.add_argument("--repeats", type=int, default=9)
    b.add_argument("--fast-n", type=int, nargs="+", default=list(FAST_N),
                   help="token counts of the direct against fast summation table")
    b.add_argument("--no-fast", action="store_true", help="leave out the fast summation table")
    return p


def simulate_settings(a):
    """Check every ``simulate`` flag before anything runs; return the setup and solver keywords and the path.

    Raises ValueError or TypeError naming the flag.

    Parameters
    ----------
    a : argparse.Namespace
        The parsed flags.

    Returns
    -------
    tuple
        ``(setup keywords, solver keywords, output path or None)``.

    Raises
    ------
    TypeError, ValueError
        Naming the flag.
    """
    name = a.model
    experiment = experiments.get(name)
    used = experiment.parameters
    setup = {"n": v.integer("--n", a.n, minimum=1), "seed": v.integer("--seed", a.seed, minimum=0)}
    for flag, key in SETUP_KEYWORD.items():
        value = getattr(a, flag)
        if key == "d" and experiment.fixed_dimension is not None:
            fixed = experiment.fixed_dimension
            if value is not None and value != fixed:
                raise ValueError(f"--d {value}: the {name} experiment runs in d = {fixed} only; "
                                 f"leave --d out or pass --d {fixed}")
            setup[key] = fixed
            continue
        if key not in used:
            if value is not None:
                raise ValueError(f"--{flag} has no effect on the {name} experiment; leave it out")
            continue
        value = DEFAULTS[flag] if value is None else value
        if flag == "d":
            value = v.integer("--d", value, minimum=2)
        elif flag == "prompts":
            value = v.integer("--prompts", value, minimum=1)
        elif flag in ("beta", "lam"):
            value = v.real_scalar(f"--{flag}", value, minimum=0.0)
        else:
            value = v.real_scalar(f"--{flag}", value)
        setup[key] = value
    solver = {"t_max": v.real_scalar("--tau", a.tau, minimum=0.0, strict=True),
              "n_frames": v.integer("--frames", a.frames, minimum=2), "method": a.method}
    if a.max_steps is not None:
        solver["max_steps"] = v.integer("--max-steps", a.max_steps, minimum=1)
    if a.dt is not None:
        solver["dt"] = v.real_scalar("--dt", a.dt, minimum=0.0, strict=True)
    for flag in ("rtol", "atol"):
        value = getattr(a, flag)
        if value is None:
            continue
        if a.method != "dopri5":
            raise ValueError(f"--{flag} applies to --method dopri5 only (the method is {a.method})")
        solver[flag] = v.real_scalar(f"--{flag}", value, minimum=0.0, strict=True)
    solver["summation"] = v.choice("--summation", a.summation, SUMMATIONS)
    if a.summation_tol is not None:
        if a.summation == "direct":
            raise ValueError("--summation-tol applies to --summation fast or auto only (the "
                             "summation is direct)")
        tol = v.real_scalar("--summation-tol", a.summation_tol, minimum=0.0, strict=True)
        if not tol < 1.0:
            raise ValueError(f"--summation-tol must be below 1 (a relative error bound), got {tol:g}")
        solver["tol"] = tol
    v.real_scalar("--tol", a.tol, minimum=0.0, strict=True)
    out = None if a.out is None else v.output_path("--out", a.out)
    return setup, solver, out


def _simulate(a, record):
    setup, solver, out = simulate_settings(a)
    model, x0, xi = experiments.setup(a.model, **setup)
    if solver["summation"] == "fast":
        reason = fast_applies(model)
        if reason is not None:
            raise ValueError(f"--summation fast does not apply to the {a.model} experiment: "
                             f"{reason}; use --summation direct or auto")
    traj = simulate(model, x0, xi, seed=setup["seed"], progress=True, **solver)
    if out is not None:
        try:
            traj.save(out)
        except OSError as exc:
            raise OSError(f"the run finished but could not be written to {out}: {exc}") from None
        record["saved"] = out
        print(f"wrote {out}", flush=True)
    record["finished"] = True
    s = diagnostics.summary(traj, tol=a.tol)
    print(f"model {a.model}  n {traj.n}  d {traj.d}  beta {model.beta:g}  tau {solver['t_max']:g}  "
          f"seed {setup['seed']}  method {traj.method}  rhs evaluations {traj.n_rhs}")
    if traj.summation == "fast":
        print(f"summation      fast (degree {traj.degree}, velocity error bound "
              f"{traj.error_bound:.3g})")
    else:
        print("summation      direct")
    print(f"final energy   {s['energy']:.10g}")
    print(f"energy bound   {s['energy_bound']:.10g}")
    print(f"spread         {s['spread']:.3e}")
    print(f"dirac distance {s['dirac_distance']:.3e}")
    print(f"clusters       {s['clusters']} (tol {a.tol:g})")


def _bench(a):
    from .bench import fast_report, report

    n_values = [v.integer("--n", n, minimum=1) for n in a.n]
    repeats = v.integer("--repeats", a.repeats, minimum=1)
    fast_n = [v.integer("--fast-n", n, minimum=2) for n in a.fast_n]
    print(report(n_values, repeats=repeats), flush=True)
    if not a.no_fast:
        print(fast_report(fast_n, repeats=repeats))


class _LineTracker:
    """Stand-in for stderr that knows whether the last write ended a line (the progress bar does not)."""

    def __init__(self, stream):
        self.stream, self.at_line_start = stream, True

    def write(self, text):
        if text:
            self.at_line_start = text.endswith("\n")
        return self.stream.write(text)

    def __getattr__(self, name):
        return getattr(self.stream, name)


def _describe(exc):
    if isinstance(exc, MemoryError):
        return "out of memory" + (f" ({exc})" if str(exc) else "")
    return str(exc) or type(exc).__name__


def main(argv=None):
    """Run the ``usaav-edu`` command.

    Parameters
    ----------
    argv : list of str or None
        The arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status: 0, 1 for a failed run, 2 for bad input, 130 for Ctrl-C.
    """
    a = _parser().parse_args(argv)
    err = _LineTracker(sys.stderr)
    record = {"saved": None, "finished": False}

    def fail(what, code):
        sys.stdout.flush()
        if not err.at_line_start:
            err.write("\n")
        if record["finished"]:
            saved = (f"it was saved to {record['saved']}" if record["saved"] is not None
                     else "it was not saved (no --out)")
            what = f"{what} in the summary; the run itself finished and {saved}"
        err.write("usaav-edu: " + " ".join(what.split()) + "\n")
        err.flush()
        return code

    sys.stderr = err
    try:
        if a.command == "simulate":
            _simulate(a, record)
        else:
            _bench(a)
    except KeyboardInterrupt:
        return fail("interrupted", 130)
    except (ValueError, TypeError) as exc:
        return fail(f"error: {_describe(exc)}", 1 if record["finished"] else 2)
    except (IntegrationError, MemoryError, OSError) as exc:
        return fail(f"error: {_describe(exc)}", 1)
    except Exception as exc:
        if not record["finished"]:
            raise
        return fail(f"error: {type(exc).__name__}: {_describe(exc)}", 1)
    finally:
        sys.stderr = err.stream
    return 0


if __name__ == "__main__":
    sys.exit(main())
