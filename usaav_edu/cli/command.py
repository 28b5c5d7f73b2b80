"""The ``usaav-edu`` command::

    usaav-edu simulate --model rope --n 64 --d 3 --beta 1 --t-max 20 \\
        --seed 0 --out run.npz
    usaav-edu simulate --model rope --n 100000 --summation fast \\
        --summation-tol 1e-10
    usaav-edu bench

``simulate`` checks every flag, builds a standard experiment
(``usaav_edu.particles.experiments.setup``), integrates it, writes the Trajectory to
exactly the path ``--out`` and only then prints a summary; ``bench`` prints the
right-hand-side throughput (pair interactions per second), then the time of one
velocity evaluation by direct and by fast summation and the estimated crossover n.

The flags are the keywords of ``simulate`` and ``sweep``: ``--t-max``, ``--n-frames``,
``--method``, ``--rtol``, ``--atol``, ``--summation`` (how the velocity is summed:
``auto``, ``direct`` or ``fast``) and ``--summation-tol`` (the error bound of fast
summation); ``--cluster-tol`` is ``cluster_tol``, the cluster tolerance of the summary.
``--summation fast`` for an experiment where fast summation does not apply is refused
before the run, with the reason.  The old spellings ``--tau``, ``--frames`` and ``--tol``
still work for one release: each prints a deprecation line on stderr.

A flag that the chosen experiment does not read (``--omega`` for ``usa``, a
``--d`` other than 4 for ``generalized_rope``, ``--rtol`` with RK4, ...) is an
error, not silently ignored.  Every failure is one line on stderr, never a
traceback (a malformed or unknown flag too: ``usaav-edu: error: ...``): exit
status 2 for bad input, 1 for a failed run (integration error, out of memory, a
file that cannot be written), 130 for Ctrl-C.  Integer flags accept exact
integers in either notation (``--n 100000`` or ``--n 1e5``).

Before anything is allocated, ``simulate`` estimates the memory the run holds
(its frames, the solver's working arrays, the prompt frames) and the time to draw
the prompt frames, and ``bench`` the memory and time of each of its measurements;
beyond ``MEMORY_CAP`` (half the machine's memory) or ``SECONDS_CAP`` (an hour)
the command stops with one line naming the flags and the estimate.  ``--out`` is
checked before the run as ``Trajectory.save`` checks it
(``usaav_edu.particles.trajectory.check_target``: a regular file or a new name, not
read-only, a name its folder accepts, room on the disk for the file).

``sweep`` runs a standard experiment at every point of a grid on Dask
(``usaav_edu.sweep``) and prints a summary table::

    usaav-edu sweep --experiment rope --grid beta=0.5,1,2,4 --grid seed=0:32 \\
        --t-max 20 --store sweep.zarr [--scheduler tcp://HOST:8786]

With ``--store`` an interrupted sweep (Ctrl-C: one line, exit status 130) is resumed by the
same command, which runs only the points that are not in the store, and again those whose
stored values fail their checksum (one warning line naming them); a store whose layout was
edited is refused in one line.
"""

import argparse
import decimal
import math
import os
import sys

from .. import _validate as v
from ..analysis import diagnostics
from ..errors import FastSummationRefused, WorkEstimateError
from ..particles import experiments
from ..particles.plan import DEFAULT_TOL, summation_args
from ..particles.solver import IntegrationError, simulate
from ..particles.trajectory import _size, check_target, saved_bytes

DEFAULTS = {"d": 3, "beta": 1.0, "omega": 1.0, "prompts": 4, "lam": 1.0}
SUMMATIONS = ("auto", "direct", "fast")
FAST_N = (1000, 10000, 100000)
"""The default token counts of ``bench``'s table of direct against fast summation."""
# the setup keyword behind each experiment flag
SETUP_KEYWORD = {"d": "d", "beta": "beta", "omega": "omega", "prompts": "n_prompts", "lam": "lam"}


def _memory_cap():
    """Half the machine's physical memory (8 GiB where the system does not tell)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = -1
    return total // 2 if total > 0 else 8 * 2 ** 30


MEMORY_CAP = _memory_cap()
"""Half the machine's physical memory in bytes, the most memory a command may plan to hold."""
SECONDS_CAP = 3600.0
"""The most time (seconds) a command may plan for the work outside the integration itself
(drawing the prompt frames of ``simulate``, the measurements of ``bench``); the integration's own
length is capped by ``--max-steps``."""
RUN_ARRAYS = 24
"""Arrays of shape ``(n, d)`` a run holds besides its frames: the initial state, the stages of the
integrator, the gauge coordinates, the summary's work (measured 19 at n = 1e6, F = 3)."""
FRAME_BYTES = 48
"""Bytes per entry of the prompt frames ``(K, d, d)`` at the peak of drawing and checking them
(measured 32: the frames and the copies of their orthogonality check)."""
FRAME_SECONDS = 2e-5
"""Seconds to draw one prompt frame (``sphere.random_frames``, measured 1.2e-5 at d = 3)."""
QR_SECONDS = 1e-10
"""Seconds per ``d^3`` of one frame's QR factorization (about ``4/3 d^3`` operations at some
10^10 per second), which dominates :data:`FRAME_SECONDS` from d of about 50."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line, ``usaav-edu: error: ...``, exit status 2."""

    def error(self, message):
        sub = self.prog.partition(" ")[2]
        hint = f"usaav-edu {sub} --help" if sub else "usaav-edu --help"
        self.exit(2, f"usaav-edu: error: {' '.join(message.split())} ({hint} lists the flags)\n")


def _count(text):
    """An argparse type: an exact integer, written ``100000`` or ``1e5`` (not ``1.5``, ``nan``)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = decimal.Decimal(text.strip())
    except decimal.InvalidOperation:
        value = None
    if value is None or not value.is_finite() or value != value.to_integral_value():
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer")
    if value.adjusted() > 100:
        raise argparse.ArgumentTypeError(f"{text!r} has more than 100 digits")
    return int(value)


def _parser():
    p = _Parser(prog="usaav-edu", description="Mean-field self-attention on the sphere.")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("simulate", help="simulate a standard experiment and save the trajectory")
    s.add_argument("--model", choices=experiments.NAMES, default="usa", metavar="MODEL",
                   help="one of " + ", ".join(experiments.NAMES))
    s.add_argument("--n", type=_count, default=64, help="number of tokens, >= 1")
    s.add_argument("--d", type=_count, default=None,
                   help="ambient dimension (tokens on S^{d-1}), >= 2 (default 3; generalized_rope: 4 only)")
    s.add_argument("--beta", type=float, default=None, help="inverse temperature, 0 or |beta| in [1e-300, 700] "
                   "(default 1)")
    s.add_argument("--omega", type=float, default=None, help="rotation / cosine frequency (default 1)")
    s.add_argument("--prompts", type=_count, default=None,
                   help="number of prompts, >= 1 (prefix_gauge; default 4)")
    s.add_argument("--lam", type=float, default=None, help="decay of the distance bias, >= 0 (default 1)")
    s.add_argument("--seed", type=_count, default=0, help="seed of the uniform initial state, >= 0")
    _run_flags(s)
    s.add_argument("--out", default=None, help="output file, written to exactly this path (an .npz archive)")
    b = sub.add_parser("bench", help="print right-hand-side throughput (pair interactions per second)")
    b.add_argument("--n", type=_count, nargs="+", default=[256, 1024])
    b.add_argument("--repeats", type=_count, default=9)
    b.add_argument("--fast-n", type=_count, nargs="+", default=list(FAST_N),
                   help="token counts of the direct against fast summation table")
    b.add_argument("--no-fast", action="store_true", help="leave out the fast summation table")
    _sweep_parser(sub)
    return p


def _run_flags(parser, every=""):
    """The flags of a run that ``simulate`` and ``sweep`` share: time, stepper, tolerances,
    frames, the step cap, the summation and the cluster tolerance (and the old spellings)."""
    parser.add_argument("--t-max", type=float, default=None,
                        help=f"final time{every}, > 0 (default 20)")
    parser.add_argument("--method", choices=("rk4", "dopri5", "heun"), default="rk4",
                        help="rk4 (default), dopri5 (adaptive) or heun (with --noise)")
    parser.add_argument("--noise", type=float, default=None,
                        help=f"noise amplitude{every}, >= 0, with --method heun (default 0; the "
                             f"Brownian motions are seeded by --seed)")
    parser.add_argument("--dt", type=float, default=None, help="RK4 step, > 0 (default: from beta)")
    parser.add_argument("--rtol", type=float, default=None,
                        help="dopri5 relative tolerance, > 0 (default 1e-8)")
    parser.add_argument("--atol", type=float, default=None,
                        help="dopri5 absolute tolerance, > 0 (default 1e-10)")
    parser.add_argument("--n-frames", type=_count, default=None,
                        help=f"number of stored frames{every}, >= 2 (default 101)")
    parser.add_argument("--max-steps", type=_count, default=None,
                        help="refuse runs estimated to take more steps than this, >= 1 "
                             "(default: simulate's cap)")
    parser.add_argument("--summation", choices=SUMMATIONS, default="auto",
                        help="how the velocity is summed: direct (n^2 pairs), fast (expansion, "
                             "linear in n) or auto (the one estimated faster; default)")
    parser.add_argument("--summation-tol", type=float, default=None,
                        help="relative error bound of fast summation, in (0, 1) (default 1e-10)")
    parser.add_argument("--cluster-tol", type=float, default=None,
                        help="cluster tolerance of the summary, > 0 (default 1e-3)")
    _deprecated_flags(parser)


def _run_options(a):
    """The keywords of :func:`usaav_edu.simulate` (and ``cluster_tol``) from the flags that
    :func:`_run_flags` adds, each checked; the old spellings resolved first."""
    resolve_deprecated_flags(a)
    options = {"t_max": v.real_scalar("--t-max", a.t_max, minimum=0.0, strict=True),
               "n_frames": v.integer("--n-frames", a.n_frames, minimum=2), "method": a.method}
    if a.max_steps is not None:
        options["max_steps"] = v.integer("--max-steps", a.max_steps, minimum=1)
    if a.dt is not None:
        options["dt"] = v.real_scalar("--dt", a.dt, minimum=0.0, strict=True)
    for flag in ("rtol", "atol"):
        value = getattr(a, flag)
        if value is None:
            continue
        if a.method != "dopri5":
            raise ValueError(f"--{flag} applies to --method dopri5 only (the method is {a.method})")
        options[flag] = v.real_scalar(f"--{flag}", value, minimum=0.0, strict=True)
    if a.noise is not None:
        options["noise"] = v.real_scalar("--noise", a.noise, minimum=0.0)
        if options["noise"] > 0.0 and a.method != "heun":
            raise ValueError(f"--noise needs --method heun (the method is {a.method})")
    options["summation"] = v.choice("--summation", a.summation, SUMMATIONS)
    if a.summation_tol is not None:
        options["summation_tol"] = _summation_tol(a)
    options["cluster_tol"] = v.real_scalar("--cluster-tol", a.cluster_tol, minimum=0.0,
                                           strict=True)
    return options


DEPRECATED_FLAGS = {"--tau": "--t-max", "--frames": "--n-frames", "--tol": "--cluster-tol"}
"""The new spelling of each old flag, which is kept for one release and prints a deprecation line."""
FLAG_DEFAULTS = {"t_max": 20.0, "n_frames": 101, "cluster_tol": 1e-3}
"""The defaults of the flags that have an old spelling (None in the parser, to see both)."""


def _dest(flag):
    return flag.lstrip("-").replace("-", "_")


def _deprecated_flags(parser):
    """Add the old spellings of :data:`DEPRECATED_FLAGS` to a subcommand's parser."""
    for old, new in DEPRECATED_FLAGS.items():
        kind = next(act.type for act in parser._actions if new in act.option_strings)
        parser.add_argument(old, type=kind, default=None, dest=f"deprecated_{_dest(old)}",
                            metavar=_dest(new).upper(),
                            help=f"deprecated spelling of {new} (goes in the next release)")


def resolve_deprecated_flags(a, stream=None):
    """Read the old spellings of flags into the new ones, with a deprecation line each.

    Fills the defaults of :data:`FLAG_DEFAULTS` where neither spelling is given.

    Parameters
    ----------
    a : argparse.Namespace
        The parsed flags; changed in place.
    stream : file or None
        Where the deprecation lines go (default ``sys.stderr``).

    Raises
    ------
    ValueError
        If a flag is given in both spellings.
    """
    stream = sys.stderr if stream is None else stream
    for old, new in DEPRECATED_FLAGS.items():
        value = getattr(a, f"deprecated_{_dest(old)}", None)
        if value is None:
            continue
        if getattr(a, _dest(new)) is not None:
            raise ValueError(f"{old} is the deprecated spelling of {new}; give {new} only")
        stream.write(f"usaav-edu: deprecated: {old} is now {new} ({old} goes in the next "
                     f"release)\n")
        setattr(a, _dest(new), value)
        setattr(a, f"deprecated_{_dest(old)}", None)
    for key, default in FLAG_DEFAULTS.items():
        if getattr(a, key, None) is None:
            setattr(a, key, default)


def _summation_tol(a):
    """``--summation-tol`` checked: in (0, 1), and only where fast summation may run."""
    if a.summation == "direct":
        raise ValueError("--summation-tol applies to --summation fast or auto only (the "
                         "summation is direct)")
    tol = v.real_scalar("--summation-tol", a.summation_tol, minimum=0.0, strict=True)
    if not tol < 1.0:
        raise ValueError(f"--summation-tol must be below 1 (a relative error bound), got {tol:g}")
    return tol


def simulate_settings(a):
    """Check every ``simulate`` flag of the parsed ``a`` before anything runs.

    Returns ``(setup keywords, solver keywords, output path or None)``; raises TypeError or
    ValueError naming the flag.
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
        elif flag == "beta":  # the model checks its range (its message names the flag)
            value = v.real_scalar("--beta", value)
        elif flag == "lam":
            value = v.real_scalar(f"--{flag}", value, minimum=0.0)
        else:
            value = v.real_scalar(f"--{flag}", value)
        setup[key] = value
    solver = _run_options(a)
    del solver["cluster_tol"]  # read by the summary, not by simulate
    check_work(setup["n"], setup["d"], solver["n_frames"], setup.get("n_prompts"))
    out = None
    if a.out is not None:
        check_target(a.out, name="--out", nbytes=saved_bytes(solver["n_frames"], setup["n"],
                                                             setup["d"]))
        out = a.out
    return setup, solver, out


def simulate_work(n, d, n_frames, n_prompts=None):
    """The memory (bytes) a ``simulate`` command holds, and the seconds to draw its prompt frames.

    ::

        bytes   = 8 (F + RUN_ARRAYS) n d + 64 n + FRAME_BYTES K d^2
                  + [K > 0] 16 n d^2
        seconds = K (FRAME_SECONDS + QR_SECONDS d^3)

    ``F`` frames of the trajectory, the run's working arrays, the labels and masks, the ``K``
    prompt frames (``K = 0`` for an experiment without prompts) and each token's frame
    ``G(xi_i)`` where the gauge coordinates are formed.

    Parameters
    ----------
    n, d, n_frames : int
        Tokens, dimension, frames.
    n_prompts : int or None
        Prompts of the prefix-gauge experiment.

    Returns
    -------
    tuple
        ``(run bytes, prompt-frame bytes, prompt-frame seconds)``.
    """
    k = n_prompts or 0
    frames = FRAME_BYTES * k * d * d + (16 * n * d * d if k else 0)
    return (8 * (n_frames + RUN_ARRAYS) * n * d + 64 * n, frames,
            k * (FRAME_SECONDS + QR_SECONDS * float(d) ** 3))


def check_work(n, d, n_frames, n_prompts=None):
    """Refuse, naming the flags and the estimate, a ``simulate`` command beyond the caps.

    The arguments are those of :func:`simulate_work`.

    Raises
    ------
    usaav_edu.errors.WorkEstimateError
        When :func:`simulate_work` exceeds ``MEMORY_CAP`` or ``SECONDS_CAP`` (a ``ValueError``).
    """
    run, frames, seconds = simulate_work(n, d, n_frames, n_prompts)
    cap = f"more than the cap of {_size(MEMORY_CAP)} (half of this machine's memory)"
    if n_prompts and frames >= run and run + frames > MEMORY_CAP:
        raise WorkEstimateError(f"--prompts {n_prompts}: the prompt frames ({n_prompts} matrices of "
                                f"{d} x {d}) and the run would take about {_size(run + frames)} of "
                                f"memory, {cap}; use fewer prompts", nbytes=run + frames)
    if run + frames > MEMORY_CAP:
        raise WorkEstimateError(f"--n {n} --d {d} --n-frames {n_frames}: the run would hold about "
                                f"{_size(run + frames)} in memory ({n_frames} frames of {n} x {d} and "
                                f"the solver's work), {cap}; use fewer tokens (--n) or frames (--n-frames)",
                                nbytes=run + frames)
    if seconds > SECONDS_CAP:
        raise WorkEstimateError(f"--prompts {n_prompts}: drawing the prompt frames would take about "
                                f"{seconds:.3g} s, more than the cap of {SECONDS_CAP:g} s; use fewer "
                                f"prompts", seconds=seconds)


FLAG_OF = {"t_max": "--t-max", "max_steps": "--max-steps", "n_frames": "--n-frames", "dt": "--dt",
           "rtol": "--rtol", "atol": "--atol", "summation_tol": "--summation-tol", "summation": "--summation",
           "method='dopri5'": "--method dopri5", "method='heun'": "--method heun",
           "noise": "--noise", "beta": "--beta", "omega": "--omega",
           "lam": "--lam", "n_prompts": "--prompts", "d": "--d", "n": "--n"}
"""The flag behind each keyword of ``experiments.setup`` and ``simulate`` that a message may name."""
_SHORT_NAMES = ("d", "n")  # named only at the start of a message ("d must be ...")


def with_flags(message):
    """``message`` (of ``setup`` or ``simulate``, which name their keywords) with the flags they are.

    ``"beta must be <= 700, got 800"`` becomes ``"beta must be <= 700, got 800 (on the command
    line: beta is --beta)"``; a message naming no keyword is returned unchanged.

    Parameters
    ----------
    message : str

    Returns
    -------
    str
    """
    import re

    named = []
    for key, flag in FLAG_OF.items():
        if key in _SHORT_NAMES:
            found = re.match(rf"{key}\b", message) is not None
        else:
            found = re.search(rf"(?<![\w-]){re.escape(key)}(?![\w])", message) is not None
        if found:
            named.append(f"{key} is {flag}")
    return f"{message} (on the command line: {', '.join(named)})" if named else message


def _simulate(a, record):
    setup, solver, out = simulate_settings(a)
    try:
        model, x0, xi = experiments.setup(a.model, **setup)
    except (TypeError, ValueError) as exc:
        raise type(exc)(with_flags(str(exc))) from None
    try:  # the summation's checks of the run's plan, before the run
        summation_args(model, solver["summation"], solver.get("tol", DEFAULT_TOL))
    except FastSummationRefused as exc:
        raise ValueError(f"--summation fast does not apply to the {a.model} experiment: "
                         f"{exc.reason}; use --summation direct or auto") from None
    try:
        traj = simulate(model, x0, xi, seed=setup["seed"], progress=True, **solver)
    except (TypeError, ValueError) as exc:
        raise type(exc)(with_flags(str(exc))) from None
    if out is not None:
        try:
            traj.save(out)
        except (OSError, ValueError) as exc:  # the target changed during the run
            raise OSError(f"the run finished but could not be written to {out}: {exc}") from None
        record["saved"] = out
        print(f"wrote {out}", flush=True)
    record["finished"] = True
    s = diagnostics.summary(traj, cluster_tol=a.cluster_tol)
    print(f"model {a.model}  n {traj.n}  d {traj.d}  beta {model.beta:g}  t_max {solver['t_max']:g}  "
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
    print(f"clusters       {s['clusters']} (cluster_tol {a.cluster_tol:g})")


def _bench(a):
    from .bench import fast_report, report

    n_values = [v.integer("--n", n, minimum=1) for n in a.n]
    repeats = v.integer("--repeats", a.repeats, minimum=1)
    fast_n = [v.integer("--fast-n", n, minimum=2) for n in a.fast_n]
    check_bench(n_values, repeats, [] if a.no_fast else fast_n)
    print(report(n_values, repeats=repeats), flush=True)
    if not a.no_fast:
        print(fast_report(fast_n, repeats=repeats))


def check_bench(n_values, repeats, fast_n):
    """Refuse, naming the flag and the estimate, a ``bench`` beyond the caps before it allocates.

    Each ``--n`` is a measurement of ``usaav_edu.cli.bench.measure`` (its dense reference forms
    ``n x n`` matrices), each ``--fast-n`` one of ``usaav_edu.cli.bench.fast_measure``; their
    costs are ``usaav_edu.cli.bench.measure_cost`` and ``usaav_edu.cli.bench.fast_measure_cost``.
    The largest memory of one measurement may reach ``MEMORY_CAP``, their total time
    ``SECONDS_CAP``.

    Parameters
    ----------
    n_values, fast_n : list of int
        The token counts of the two tables.
    repeats : int
        Batches per side.

    Raises
    ------
    ValueError
        Naming ``--n`` or ``--fast-n`` (and ``--repeats``) with the estimate.
    """
    from .bench import fast_measure_cost, measure_cost

    costs = [("--n", n, *measure_cost(n, repeats)) for n in n_values]
    costs += [("--fast-n", n, *fast_measure_cost(n, repeats)) for n in fast_n]
    for flag, n, nbytes, _ in costs:
        if nbytes > MEMORY_CAP:
            what = " (the NumPy reference forms n x n matrices)" if flag == "--n" else ""
            raise WorkEstimateError(f"{flag} {n}: the measurement would take about {_size(nbytes)} of "
                                    f"memory{what}, more than the cap of {_size(MEMORY_CAP)} (half of "
                                    f"this machine's memory); use a smaller {flag}", nbytes=nbytes)
    total = sum(c[3] for c in costs)
    if total > SECONDS_CAP:
        flag, n, _, seconds = max(costs, key=lambda c: c[3])
        raise WorkEstimateError(f"{flag} {n} --repeats {repeats}: the bench would take about "
                                f"{total:.3g} s ({seconds:.3g} s at {flag} {n}), more than the cap of "
                                f"{SECONDS_CAP:g} s; use a smaller {flag} or fewer --repeats", seconds=total)


# ---------------------------------------------------------------------------------------- sweep
# the setup keywords a --grid or --set may name, and which of them are integers
SWEEP_KEYS = ("n", "d", "beta", "omega", "n_prompts", "lam", "seed", "qkv_seed", "noise")
SWEEP_INTEGERS = ("n", "d", "n_prompts", "seed", "qkv_seed")
SWEEP_MINIMUM = {"n": 1, "d": 2, "n_prompts": 1, "seed": 0, "qkv_seed": 0}
"""The least value of each integer key of ``--grid`` and ``--set``."""
SCHEDULER_SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")
SUMMARY_ROWS = 40


def _sweep_parser(sub):
    w = sub.add_parser("sweep", help="run a standard experiment over a grid of parameters (Dask)")
    w.add_argument("--experiment", choices=experiments.NAMES, required=True, metavar="EXPERIMENT",
                   help="one of " + ", ".join(experiments.NAMES))
    w.add_argument("--grid", action="append", default=[], metavar="KEY=VALUES",
                   help="a grid dimension: KEY=v1,v2,... or KEY=start:stop[:step] (integers, stop "
                        "excluded); KEY is one of " + ", ".join(SWEEP_KEYS) + "; repeat the flag")
    w.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a keyword held fixed at every point, e.g. --set omega=2")
    w.add_argument("--n", type=int, default=None, help="number of tokens (default 64)")
    w.add_argument("--d", type=int, default=None, help="dimension (default 3)")
    _run_flags(w, every=" of every run")
    w.add_argument("--store", default=None,
                   help="Zarr directory: finished points are kept; run again to resume")
    w.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="a Dask scheduler, e.g. tcp://HOST:8786 (default: a local cluster)")
    w.add_argument("--workers", type=int, default=None,
                   help="workers of the local cluster (default: one per CPU)")
    return w


def _sweep_value(flag, key, text):
    """One value of ``--grid`` or ``--set``: an integer >= its minimum, or a finite number."""
    if key in SWEEP_INTEGERS:
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"{flag} {key}: {text!r} is not an integer") from None
        if value < SWEEP_MINIMUM[key]:
            raise ValueError(f"{flag} {key}: {value} is below {SWEEP_MINIMUM[key]}")
        return value
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{flag} {key}: {text!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"{flag} {key}: {text!r} is not a finite number")
    return value


def _sweep_range(text, key, values):
    """``start:stop[:step]`` of an integer key as a range (stop excluded, step not zero)."""
    from ..sweep.run import MAX_POINTS

    parts = values.split(":")
    if len(parts) > 3 or key not in SWEEP_INTEGERS:
        raise ValueError(f"--grid {text!r}: start:stop[:step] is for the integer keys "
                         f"({', '.join(SWEEP_INTEGERS)})")
    bounds = []
    for name, part in zip(("start", "stop", "step"), parts, strict=False):
        try:
            bounds.append(int(part))
        except ValueError:
            raise ValueError(f"--grid {text!r}: the {name} {part!r} is not an integer") from None
    if len(bounds) == 3 and bounds[2] == 0:
        raise ValueError(f"--grid {text!r}: the step must not be zero")
    r = range(*bounds)
    if len(r) == 0:
        raise ValueError(f"--grid {text!r}: the range is empty")
    if len(r) > MAX_POINTS:
        raise ValueError(f"--grid {text!r}: {len(r)} values, more than a sweep's "
                         f"{MAX_POINTS}; split it into several sweeps")
    for value in (r[0], r[-1]):
        _sweep_value("--grid", key, str(value))
    return list(r)


def sweep_scheduler(text):
    """Check a ``--scheduler`` address, ``SCHEME://HOST:PORT``, and return it."""
    scheme, sep, rest = text.partition("://")
    host, colon, port = rest.rpartition(":")
    if not sep or scheme not in SCHEDULER_SCHEMES or not colon or not host.strip("[]"):
        raise ValueError(f"--scheduler {text!r}: give an address like tcp://HOST:8786 (scheme "
                         f"{', '.join(SCHEDULER_SCHEMES)})")
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"--scheduler {text!r}: the port {port!r} is not a number from 1 to "
                         f"65535")
    return text


def _sweep_pair(flag, text):
    key, sep, values = text.partition("=")
    key = key.strip()
    if not sep or not values.strip():
        raise ValueError(f"{flag} {text!r}: write KEY=VALUES")
    if key not in SWEEP_KEYS:
        raise ValueError(f"{flag} {text!r}: the key must be one of {', '.join(SWEEP_KEYS)}")
    return key, values.strip()


def sweep_grid(items):
    """Parse ``--grid`` flags (``KEY=v1,v2`` or ``KEY=start:stop[:step]``) into a grid dict.

    Parameters
    ----------
    items : list of str
        The flags' values, in order.

    Returns
    -------
    dict
        Key -> list of values (int for ``n``, ``d``, ``n_prompts``, ``seed``; float otherwise).

    Raises
    ------
    ValueError
        Naming the flag, for a malformed item, an unknown or repeated key or value, a value
        out of range, an empty range, a zero step, or more than ``sweep.MAX_POINTS`` points.
    """
    from ..sweep.run import MAX_POINTS

    grid = {}
    for text in items:
        key, values = _sweep_pair("--grid", text)
        if key in grid:
            raise ValueError(f"--grid {key} is given twice")
        if ":" in values:
            grid[key] = _sweep_range(text, key, values)
        else:
            grid[key] = [_sweep_value("--grid", key, p.strip()) for p in values.split(",")]
            twice = sorted({x for x in grid[key] if grid[key].count(x) > 1})
            if twice:
                raise ValueError(f"--grid {text!r}: {twice[0]:g} is given twice")
    if not grid:
        raise ValueError("--grid: give at least one, e.g. --grid seed=0:8")
    points = math.prod(len(values) for values in grid.values())
    if points > MAX_POINTS:
        raise ValueError(f"--grid: {points} points, more than a sweep's {MAX_POINTS}; split it "
                         f"into several sweeps")
    return grid


def sweep_settings(a):
    """Check every ``sweep`` flag of the parsed ``a``: the arguments of ``sweep``.

    Returns ``(experiment, grid, keywords)``; raises TypeError or ValueError naming the flag.
    """
    grid = sweep_grid(a.grid)
    fixed = {}
    for text in a.set:
        key, value = _sweep_pair("--set", text)
        if key in fixed or key in grid:
            raise ValueError(f"--set {key}: the key is given twice (or is also a --grid key)")
        fixed[key] = _sweep_value("--set", key, value)
    e = experiments.get(a.experiment)
    reads = {"n", "d", "seed", "noise", *e.parameters}
    for flag, keys in (("--grid", grid), ("--set", fixed)):
        for key in keys:
            if key not in reads:
                raise ValueError(f"{flag} {key}: the {e.name} experiment does not read {key} (it "
                                 f"reads {', '.join(sorted(reads))})")
    keywords = {**_run_options(a), "fixed": fixed}
    if "noise" in keywords:  # a run keyword of every point (usaav_edu.sweep.run.RUN_KEYWORDS)
        if "noise" in grid or "noise" in fixed:
            raise ValueError("--noise and --grid/--set noise both give noise; give it once")
        fixed["noise"] = keywords.pop("noise")
    for flag, key in (("n", "n"), ("d", "d")):
        value = getattr(a, flag)
        if value is not None:
            if key in grid or key in fixed:
                where = "--grid" if key in grid else "--set"
                raise ValueError(f"--{flag} and {where} {key} both give {key}; give it once")
            keywords[key] = v.integer(f"--{flag}", value, minimum=1 if flag == "n" else 2)
    if a.workers is not None:
        if a.scheduler is not None:
            raise ValueError("--workers sizes the local cluster; leave it out with --scheduler")
        keywords["workers"] = v.integer("--workers", a.workers, minimum=1)
    if a.scheduler is not None:
        keywords["client"] = sweep_scheduler(a.scheduler)
    if a.store is not None:
        if not a.store.strip():
            raise ValueError("--store must name a folder, got an empty path")
        if os.path.isfile(a.store):
            raise ValueError(f"--store {a.store}: a file is in the way (a store is a folder)")
        keywords["store"] = a.store
    return a.experiment, grid, keywords


def sweep_table(ds):
    """The summary table of a sweep: one row per grid point, or per point without its seed.

    With a ``seed`` dimension every row is the mean over the seeds (and the standard error of
    the mean, ``std / sqrt(k)``, of the spread), and ``failed`` counts the seeds that failed.

    Parameters
    ----------
    ds : xarray.Dataset
        The result of ``usaav_edu.sweep``.

    Returns
    -------
    str
    """
    keys = [k for k in ds.dims if k != "time"]
    group = [k for k in keys if k != "seed"]
    header = [*group, "runs", "failed", "energy", "energy/bound", "spread", "clusters"]
    rows = []
    stacked = ds.stack(row=group) if group else ds.expand_dims(row=[0])
    for i in range(stacked.sizes["row"]):
        cell = stacked.isel(row=i)
        ok = cell["error"] == ""
        runs = int(ok.size)
        failed = runs - int(ok.sum())
        labels = [f"{cell[k].item():g}" if not isinstance(cell[k].item(), str)
                  else cell[k].item() for k in group]
        if runs - failed == 0:
            rows.append([*labels, str(runs), str(failed), "-", "-", "-", "-"])
            continue
        good = cell.where(ok)
        spread = good["spread"]
        k = int(ok.sum())
        sem = float(spread.std(ddof=1)) / k ** 0.5 if k > 1 else 0.0
        ratio = float((good["energy"] / good["energy_bound"]).mean())
        rows.append([*labels, str(runs), str(failed), f"{float(good['energy'].mean()):.6g}",
                     f"{ratio:.4f}", f"{float(spread.mean()):.3e} +- {sem:.1e}",
                     f"{float(good['clusters'].mean()):.2f}"])
    shown = rows[:SUMMARY_ROWS]
    widths = [max(len(r[j]) for r in [header, *shown]) for j in range(len(header))]
    lines = ["  ".join(c.rjust(wd) for c, wd in zip(r, widths, strict=True)) for r in [header, *shown]]
    if len(rows) > SUMMARY_ROWS:
        lines.append(f"... {len(rows) - SUMMARY_ROWS} more rows")
    return "\n".join(lines)


def _warning_line(message, category, filename, lineno, file=None, line=None):
    """Show a warning of the sweep as one line on stderr: ``usaav-edu: warning: ...``."""
    stream = sys.stderr
    if not getattr(stream, "at_line_start", True):
        stream.write("\n")
    stream.write("usaav-edu: warning: " + " ".join(str(message).split()) + "\n")
    stream.flush()


def _sweep(a, record):
    import warnings

    from ..sweep.run import SchedulerUnreachable, stored_points, sweep

    experiment, grid, keywords = sweep_settings(a)
    store = keywords.get("store")
    before = 0
    if store is not None:
        before = stored_points(store)[0]
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _warning_line
            ds = sweep(experiment, grid, **keywords)
    except SchedulerUnreachable as exc:
        raise OSError(f"--scheduler {a.scheduler}: no Dask scheduler answers there "
                      f"({exc.reason})") from None
    except KeyboardInterrupt:
        if store is not None:
            done, total = stored_points(store)
            record["interrupted"] = (f"; {done} of {total} points are kept in {store}; run the "
                                     f"same command again to run only the others")
        raise
    total = 1
    for k in grid:
        total *= len(grid[k])
    where = f" (store {store})" if store is not None else ""
    print(f"sweep {experiment}: {total} points, {total - before} run now, {before} from the "
          f"store{where}; t_max {keywords['t_max']:g}, method {keywords['method']}")
    failed = int((ds["error"] != "").sum())
    if failed:
        first = next(m for m in ds["error"].values.ravel() if m)
        print(f"{failed} points failed; the first: {first}")
    print(sweep_table(ds))


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
    if argv is not None and (isinstance(argv, str) or
                             not all(isinstance(arg, str) for arg in argv)):
        raise TypeError(f"argv must be a list of strings (the command line's words), got "
                        f"{v.shown(argv)}")
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
        elif a.command == "sweep":
            _sweep(a, record)
        else:
            _bench(a)
    except KeyboardInterrupt:
        return fail("interrupted" + record.get("interrupted", ""), 130)
    except (ValueError, TypeError) as exc:
        return fail(f"error: {_describe(exc)}", 1 if record["finished"] else 2)
    except (IntegrationError, MemoryError, OSError, ImportError) as exc:
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
