"""usaav_edu: mean-field self-attention on the sphere, collapse, and auxiliary variables.

The data path is model -> simulate -> Trajectory -> diagnostics / maximizers -> views::

    import usaav_edu as ue
    m = ue.models.rope(beta=1.0, omegas=(1.0,), d=3)
    x0 = ue.sphere.uniform(64, 3, seed=0)
    traj = ue.simulate(m, x0, xi, t_max=20.0)

``simulate`` sums the velocity directly (``n^2`` pairs) or, for large n, by a truncated
expansion whose cost grows linearly in n and whose relative error is at most ``tol``
(``summation="auto" | "direct" | "fast"``, :mod:`usaav_edu.dynamics.fastsum`); the
Trajectory records which.

A model is composed of a gauge, a bias and a profile (``ue.Model(gauge=..., bias=...,
profile=...)``; :mod:`usaav_edu.models.gauges`, :mod:`usaav_edu.models.biases`, :mod:`usaav_edu.models.profiles`).
A gauge of one's own is any object with a method ``matrices(xi)`` returning orthogonal
matrices, a bias any object with a method ``matrix(xi)`` returning a symmetric matrix.

The package and ``simulate`` need numpy, numba, llvmlite and tqdm only; the widgets, figures and
quizzes need the extra ``usaav-edu[widgets]``, ``sweep`` the extra ``usaav-edu[sweep]`` (each
imported where it is used, and a clear ``ModuleNotFoundError`` naming the extra if it is missing).
"""

import atexit
import importlib
import importlib.abc
import importlib.machinery
import os
import shutil
import sys
import tempfile
import warnings


def _cpu_quota():
    """Whole CPUs granted by the cgroup CPU quota, or None if there is no quota.

    ``quota / period`` from ``cpu.max`` (cgroup v2) or ``cpu.cfs_quota_us`` and
    ``cpu.cfs_period_us`` (v1), rounded down, at least 1: a thread more than the
    quota allows is throttled for the rest of every period.
    """
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split(":", 2)
        if len(fields) != 3:
            continue
        controllers, path = fields[1], fields[2].lstrip("/")
        if controllers == "":
            candidates = [("/sys/fs/cgroup", path, "cpu.max", None)]
        elif "cpu" in controllers.split(","):
            candidates = [(f"/sys/fs/cgroup/{controllers}", path, "cpu.cfs_quota_us", "cpu.cfs_period_us"),
                          ("/sys/fs/cgroup/cpu", path, "cpu.cfs_quota_us", "cpu.cfs_period_us")]
        else:
            continue
        for root, sub, quota_file, period_file in candidates:
            for folder in (os.path.join(root, sub), root):
                try:
                    with open(os.path.join(folder, quota_file)) as f:
                        values = f.read().split()
                    if period_file is not None:
                        with open(os.path.join(folder, period_file)) as f:
                            values.append(f.read().strip())
                    quota, period = values[0], float(values[1])
                except (OSError, IndexError, ValueError):
                    continue
                if quota in ("max", "-1") or float(quota) <= 0 or period <= 0:
                    return None
                return max(1, int(float(quota) // period))
    return None


def _thread_policy():
    """Idle worker threads sleep, and no more threads than the CPUs this process may use.

    Runs before Numba's threading layer starts; a setting the user made in
    the environment is kept.  The thread count can only be set before Numba
    is imported (it reads ``NUMBA_NUM_THREADS`` then).  See
    :mod:`usaav_edu.dynamics.rhs` (Parallelism).
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    if "NUMBA_NUM_THREADS" in os.environ or "numba" in sys.modules:
        return
    quota = _cpu_quota()
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:
        available = os.cpu_count() or 1
    if quota is not None and quota < available:
        os.environ["NUMBA_NUM_THREADS"] = str(quota)


def _cache_folder():
    """Make sure Numba can cache this package's compiled functions; else use a temporary folder.

    Numba looks for a writable folder in turn: ``NUMBA_CACHE_DIR``, the
    ``__pycache__`` next to the source, the user's cache folder (under
    ``HOME``).  If none is writable (a read-only installation on a shared
    server), every ``cache=True`` function would fail at import with "no
    locator available"; instead the cache goes to a new private temporary
    folder (``NUMBA_CACHE_DIR`` is set, so child processes share it), with a
    warning naming it, removed when the process exits.  Returns that folder,
    or None if none was needed.
    """
    import numba
    try:
        from numba.core.caching import FunctionCache
    except ImportError:  # a Numba without this class: let it decide on its own
        return None
    here = os.path.dirname(os.path.abspath(__file__))
    for folder, _, files in os.walk(here):
        if "__init__.py" not in files:
            continue
        probe = compile("def probe():\n    pass\n", os.path.join(folder, "__init__.py"), "exec")
        namespace = {}
        exec(probe, namespace)
        try:
            FunctionCache(namespace["probe"])  # finds a cache folder as a cache=True function does
        except RuntimeError:
            break
    else:
        return None
    fallback = tempfile.mkdtemp(prefix="usaav_edu-numba-cache-")
    atexit.register(shutil.rmtree, fallback, ignore_errors=True)
    os.environ["NUMBA_CACHE_DIR"] = fallback
    numba.config.CACHE_DIR = fallback
    warnings.warn(f"usaav_edu: no writable Numba cache folder (NUMBA_CACHE_DIR, the package's __pycache__ "
                  f"and the user cache folder are not writable); compiled code is cached in {fallback} "
                  f"for this session", RuntimeWarning, stacklevel=2)
    return fallback


#: the one line said before the kernels compile on a cold cache (the first run of an installation)
COMPILING = "usaav_edu: compiling the package's kernels (about 30 s, once per installation)..."


def _cold_cache():
    """True if Numba has no compiled code cached for the solver's kernels yet.

    Cheap: the folder Numba caches ``usaav_edu/dynamics/rhs.py`` in (found as a ``cache=True``
    function finds it) holds no index file (``rhs.<function>-<line>.py<version>.nbi``) for
    this Python.  False when that cannot be told.
    """
    try:
        from numba.core.caching import FunctionCache
    except ImportError:
        return False
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dynamics", "rhs.py")
    namespace = {}
    exec(compile("def probe():\n    pass\n", source, "exec"), namespace)
    try:
        folder = FunctionCache(namespace["probe"])._cache_path
    except (RuntimeError, AttributeError):
        return False
    suffix = f".py{sys.version_info.major}{sys.version_info.minor}.nbi"
    try:
        names = os.listdir(folder)
    except OSError:
        return True  # not made yet: nothing compiled
    return not any(n.startswith("rhs.") and n.endswith(suffix) for n in names)


def _say_compiling():
    """Say once, before a first run compiles, that it will take a while (a cold Numba cache).

    In a notebook the line goes to the cell's output (stdout), elsewhere to stderr (a program's
    stdout stays its own).  Not in the pages the book executes (``USAAV_EDU_STATIC_PAGE``): they
    show results, not the state of the machine that built them.
    """
    if os.environ.get("USAAV_EDU_STATIC_PAGE") or not _cold_cache():
        return False
    stream = sys.stdout if "ipykernel" in sys.modules else sys.stderr
    print(COMPILING, file=stream, flush=True)
    return True


_thread_policy()
_cache_folder()
_say_compiling()

# These imports follow the calls above on purpose: the thread policy must be set before Numba is
# first imported, and the cache folder before the modules below load their compiled functions.
from . import (  # noqa: E402
    checks,
    dynamics,
    errors,
    exercises,
    meanfield,
    models,
    particles,
    progress,
    quizzes,
    sphere,
)
from ._version import __version__  # noqa: E402
from .analysis import density, diagnostics, laws, maximizers, reductions, spectral  # noqa: E402
from .models import Model, biases, gauges, profiles  # noqa: E402
from .particles import IntegrationError, Trajectory, energy, energy_bound, experiments, simulate  # noqa: E402
from .sweep import sweep  # noqa: E402

#: modules that now live in the package's folders and keep their short name:
#: ``ue.diagnostics`` is :mod:`usaav_edu.analysis.diagnostics`, and ``from usaav_edu.analysis.diagnostics
#: import summary`` works
SHORT_NAMES = {
    "gauges": "models.gauges", "biases": "models.biases", "profiles": "models.profiles",
    "experiments": "particles.experiments", "diagnostics": "analysis.diagnostics",
    "spectral": "analysis.spectral", "reductions": "analysis.reductions",
    "maximizers": "analysis.maximizers", "laws": "analysis.laws", "density": "analysis.density",
}
#: modules of version 2 whose names go: ``import usaav_edu.particles.solver`` still works for one release,
#: with a DeprecationWarning naming the new place
MOVED = {
    "solver": "particles.solver", "trajectory": "particles.trajectory", "bench": "cli.bench",
    "dynamics.integrators": "dynamics.integrate.steppers",
    "dynamics.expansions": "dynamics.fastsum.expansions",
}
for _short, _full in SHORT_NAMES.items():
    sys.modules[f"{__name__}.{_short}"] = sys.modules[f"{__name__}.{_full}"]


def _moved(old):
    """The module that ``usaav_edu.<old>`` names now, with a DeprecationWarning."""
    new = f"{__name__}.{MOVED[old]}"
    warnings.warn(f"{__name__}.{old} moved to {new}; the old name goes in the next release",
                  DeprecationWarning, stacklevel=3)
    return importlib.import_module(new)


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``usaav_edu.<old name>`` for a module that moved, warns, and gives the new module."""

    def find_spec(self, fullname, path=None, target=None):
        prefix = __name__ + "."
        if fullname.startswith(prefix) and fullname[len(prefix):] in MOVED:
            return importlib.machinery.ModuleSpec(fullname, self)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        # the import system returns what sys.modules holds under the name after this call
        sys.modules[module.__name__] = _moved(module.__name__[len(__name__) + 1:])


sys.meta_path.append(_MovedModules())


def __getattr__(name):
    # the widgets need pythreejs and ipywidgets: import them on first use only
    if name == "widgets":
        return importlib.import_module(".widgets", __name__)
    if name in MOVED:
        return _moved(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "biases", "diagnostics", "dynamics", "experiments", "gauges", "laws", "maximizers", "models",
    "errors", "particles", "profiles", "progress", "quizzes", "checks", "exercises", "reductions", "spectral",
    "sphere", "density", "meanfield",
    "Model",
    "IntegrationError", "energy", "energy_bound", "simulate", "sweep", "Trajectory", "__version__",
]
