"""Sweeps: one run per point of a parameter grid, on Dask, into an xarray Dataset and a Zarr store.

A statement about collapse, metastability or the spectral dichotomy is a statement about many
runs: over seeds, over ``beta``, ``omega``, ``lam``, the number of prompts, ``n``.
``sweep`` runs a standard experiment (or a set-up of one's own) at every point of a grid,
keeps the final diagnostics of each run (and, on request, the diagnostics over time) and returns
them as an ``xarray.Dataset`` with one dimension per grid key::

    grid = {"beta": [0.5, 1, 2, 4], "seed": range(32)}
    ds = ue.sweep("rope", grid, t_max=20.0, store="rope.zarr")
    ds.spread.mean("seed")                       # one value per beta

Design
------
* **Tasks.**  Each Dask task runs one grid point: it builds the model and the initial state
  (``experiments.setup`` or the callable), calls :func:`usaav_edu.simulate` and returns a small
  dict of numbers.  Trajectories never leave the worker.  One point per task, not batches: a
  point costs tens of milliseconds or more, the scheduler's overhead per task about a
  millisecond, and single points keep the store's unit of work equal to the unit of resumption.
* **Bit for bit.**  A task runs exactly what a serial loop runs (``setup`` with the same
  keywords, ``simulate`` with the same settings, :func:`usaav_edu.diagnostics.summary`), so the
  Dataset holds the numbers a serial loop gives.  The kernels sum in one fixed order below
  ``usaav_edu.dynamics.rhs.PARALLEL_MIN`` (300) tokens; above it the order depends on Numba's
  thread count, so there a sweep equals a serial loop run with the workers' thread count (one).
* **The cluster.**  With no ``client`` the sweep starts a ``dask.distributed.LocalCluster``
  sized to the machine (``dask.system.CPU_COUNT`` worker processes, which respects a cgroup CPU
  quota, at most one per point), one thread each, with ``NUMBA_NUM_THREADS=1`` in the workers so
  that two kernels never compete for one core, and closes it at the end.  A
  ``distributed.Client`` or a scheduler address (``"tcp://host:8786"``) runs the same tasks on
  that cluster unchanged; start its workers with ``--nthreads 1`` and ``NUMBA_NUM_THREADS=1``.
* **Compilation.**  The workers load the compiled kernels from Numba's disk cache
  (``NUMBA_CACHE_DIR``, inherited by the local workers).  A worker on a machine whose cache is
  cold compiles them once, about 25 s on the machine the benchmarks run on; afterwards a new
  worker process is ready in about a second.  The sweep does not warm the cache itself.
* **The store.**  ``store`` is a Zarr directory (Zarr format 2, which specifies the string
  variables; consolidated metadata).  It is created whole (every variable, filled with NaN and
  ``""``) in a temporary folder beside it and renamed into place, so a store either exists
  complete or not at all.  Each variable is chunked one grid point per chunk and every chunk is
  written to a temporary file and renamed (Zarr's local store), so a kill at any moment leaves
  each chunk old or new, never torn.  A finished point writes its diagnostics first and its
  ``session`` number last; only points with a session are finished, so a point killed
  half-written runs again.  The store's attributes hold the sweep's arguments (JSON) and their
  SHA-256, the fingerprint; a store with another fingerprint is refused with a ``ValueError``
  naming what differs.  Points that are finished are read back, the others run.
* **Failures.**  An exception inside a run (an ``IntegrationError``, a refused work estimate,
  a bad value in the grid) is that point's result: NaN diagnostics and its message in
  ``error``; the point is finished and is not run again.  A task lost with its worker (the
  scheduler gives up after repeated worker deaths) is not stored as finished: the returned
  Dataset holds its message, and a warning says to run the sweep again with the store.
* **Ctrl-C.**  Pending tasks are cancelled, the local cluster is closed, and
  ``KeyboardInterrupt`` propagates; every finished point is already in the store.
* **Progress.**  A ``tqdm`` bar of points (a widget in a notebook, text on stderr elsewhere).
"""

import hashlib
import inspect
import json
import logging
import numbers
import os
import shutil
import signal
import sys
import uuid
import warnings

import numba
import numpy as np

from . import _validate as v
from . import diagnostics, experiments, spectral
from ._version import __version__
from .progress import DELAY, INTERVAL
from .solver import DEFAULT_MAX_STEPS, METHODS, simulate

FORMAT = 1
"""The version of the store layout (part of the fingerprint)."""
FINAL = ("energy", "energy_bound", "spread", "dirac_distance", "clusters", "orbit_residual")
"""The final diagnostics of every point (:func:`usaav_edu.diagnostics.summary`)."""
SERIES = ("energy", "spread", "dirac_distance", "clusters")
"""The diagnostics recorded over time with ``time_series=True`` (variables ``<name>_series``)."""
TEXT = ("phase", "error")
"""The text variables: the phase class (``""`` in d = 2) and the error message (``""`` if fine)."""
DESCRIPTIONS = {
    "energy": "interaction energy of the final frame",
    "energy_bound": "upper bound of the energy for these labels",
    "spread": "spread sqrt(1 - |mean|^2) of the final frame",
    "dirac_distance": "distance of the final frame to the nearest Dirac mass",
    "clusters": "number of clusters of the final frame (single linkage, tolerance tol)",
    "orbit_residual": "distance of the final frame to the nearest gauge orbit",
    "phase": "collapse, great circle or other (spectral.classify), empty in d = 2",
    "error": "the failure of this point, empty if it ran",
    "session": "the run of the sweep that finished this point (0: not finished)",
}
_RESERVED = set(FINAL) | set(TEXT) | {f"{s}_series" for s in SERIES} | {"time", "session"}
_MAX_MESSAGE = 2000


# ---------------------------------------------------------------------------------------- checks
def _grid_value(key, value):
    """A grid value as a plain Python scalar (int, float, str or bool)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        if not np.isfinite(value):
            raise ValueError(f"grid[{key!r}] must hold finite values, got {value}")
        return value
    raise TypeError(f"grid[{key!r}] must hold numbers or strings, got {type(value).__name__}")


def _check_grid(grid):
    """``grid`` as a list of ``(key, values)`` pairs in its order, with plain scalar values."""
    if not hasattr(grid, "items") or isinstance(grid, (str, bytes)):
        raise TypeError(f"grid must be a mapping of parameter names to lists of values, "
                        f"got {type(grid).__name__}")
    pairs = []
    for key, values in grid.items():
        if not isinstance(key, str) or not key.isidentifier():
            raise TypeError(f"grid keys must be parameter names (identifiers), got {key!r}")
        if key in _RESERVED:
            raise ValueError(f"grid key {key!r} is the name of a variable of the result; "
                             f"rename the parameter")
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            raise TypeError(f"grid[{key!r}] must be a list of values, got {type(values).__name__}")
        values = [_grid_value(key, x) for x in values]
        if not values:
            raise ValueError(f"grid[{key!r}] must not be empty")
        kinds = {bool if isinstance(x, bool) else str if isinstance(x, str) else float
                 for x in values}
        if len(kinds) > 1:
            raise TypeError(f"grid[{key!r}] mixes kinds of values: {values!r}")
        if kinds == {float} and any(isinstance(x, float) for x in values):
            values = [float(x) for x in values]  # 0.5, 1, 2 -> 0.5, 1.0, 2.0
        if len(set(values)) != len(values):
            raise ValueError(f"grid[{key!r}] holds a value twice: {values!r}")
        pairs.append((key, values))
    if not pairs:
        raise ValueError("grid must have at least one key")
    return pairs


def _callable_identity(name, fn):
    """What the fingerprint records of a callable: its qualified name and a hash of its code."""
    if not callable(fn):
        raise TypeError(f"{name} must be callable, got {type(fn).__name__}")
    try:
        code = inspect.getsource(fn)
    except (OSError, TypeError):
        code = getattr(getattr(fn, "__code__", None), "co_code", b"").hex()
    qualified = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"
    return {"callable": qualified, "code_sha256": hashlib.sha256(code.encode()).hexdigest()}


def _check_keywords(experiment, pairs, fixed):
    """Check the keywords the experiment receives; return the name of the experiment or None."""
    keys = [k for k, _ in pairs]
    for k in fixed:
        if k in keys:
            raise ValueError(f"{k!r} is both a grid key and a fixed keyword; give it once")
    if isinstance(experiment, str):
        e = experiments.get(experiment)
        reads = {"n", "seed", *e.parameters}
        if e.fixed_dimension is not None and "d" in fixed:
            if fixed["d"] != e.fixed_dimension:
                raise ValueError(f"d = {fixed['d']}: the {e.name} experiment runs in "
                                 f"d = {e.fixed_dimension} only")
            reads.add("d")
        for where, names in (("grid key", keys), ("keyword", list(fixed))):
            for k in names:
                if k not in reads:
                    raise ValueError(f"{where} {k!r} has no effect on the {e.name} experiment "
                                     f"(it reads {', '.join(sorted(reads))})")
        return e.name
    if not callable(experiment):
        raise TypeError(f"experiment must be a name of {experiments.NAMES} or a callable "
                        f"(**params) -> (model, x0, xi), got {type(experiment).__name__}")
    try:
        inspect.signature(experiment).bind(**fixed, **{k: vals[0] for k, vals in pairs})
    except TypeError as exc:
        raise TypeError(f"experiment does not accept the keywords of the sweep "
                        f"({', '.join([*fixed, *keys])}): {exc}") from None
    except ValueError:  # no signature (a builtin): find out when it runs
        pass
    return None


def _plain(name, value):
    """A fixed keyword as a JSON-able plain value."""
    if value is None or isinstance(value, (bool, str)):
        return value
    return _grid_value(name, value)


def _settings(t_max, n, d, fixed, method, dt, n_frames, rtol, atol, max_steps, tol, time_series,
              extra):
    fixed = {} if fixed is None else dict(fixed)
    for k in fixed:
        if not isinstance(k, str) or not k.isidentifier():
            raise TypeError(f"fixed must map parameter names to values, got the key {k!r}")
        fixed[k] = _plain(f"fixed[{k!r}]", fixed[k])
    for name, value in (("n", n), ("d", d)):
        if value is not None:
            if name in fixed:
                raise ValueError(f"{name} is given twice (as {name}= and in fixed)")
            fixed[name] = v.integer(name, value, minimum=1 if name == "n" else 2)
    if extra is None:
        extra = {}
    if not hasattr(extra, "items"):
        raise TypeError(f"extra must map names to callables traj -> float, got "
                        f"{type(extra).__name__}")
    for k, fn in extra.items():
        if not isinstance(k, str) or not k.isidentifier() or k in _RESERVED:
            raise ValueError(f"extra: {k!r} cannot name a variable (an identifier, not one of "
                             f"{sorted(_RESERVED)})")
        _callable_identity(f"extra[{k!r}]", fn)
    if not isinstance(time_series, bool):
        raise TypeError(f"time_series must be True or False, got {type(time_series).__name__}")
    if callable(t_max):
        if time_series:
            raise ValueError("time_series=True needs one t_max for every point (the frames are "
                             "the time coordinate); give a number, or keep what you need over "
                             "time with extra")
        _callable_identity("t_max", t_max)
    s = {"t_max": None if callable(t_max) else v.real_scalar("t_max", t_max, minimum=0.0,
                                                                strict=True),
         "method": v.choice("method", method, METHODS),
         "dt": None if dt is None else v.real_scalar("dt", dt, minimum=0.0, strict=True),
         "n_frames": v.integer("n_frames", n_frames, minimum=2),
         "rtol": v.real_scalar("rtol", rtol, minimum=0.0, strict=True),
         "atol": v.real_scalar("atol", atol, minimum=0.0, strict=True),
         "max_steps": None if max_steps is None else v.integer("max_steps", max_steps, minimum=1),
         "tol": v.real_scalar("tol", tol, minimum=0.0, strict=True),
         "time_series": time_series}
    return fixed, dict(extra), s


# ---------------------------------------------------------------------------------------- a point
def _message(exc):
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= _MAX_MESSAGE else text[:_MAX_MESSAGE - 3] + "..."


def _run_point(task, keywords):
    """Run one grid point and return its diagnostics (a dict); a failure is returned, not raised.

    Parameters
    ----------
    task : dict
        ``experiment`` (a name or a callable), ``settings`` (the solver settings), ``extra``
        and ``t_max`` (a callable of the keywords, or None for ``settings["t_max"]``).
    keywords : dict
        The keywords of the set-up (fixed ones and the point's values).

    Returns
    -------
    dict
        The final diagnostics, the phase, the extra values, the series if asked, ``error``.
    """
    s = task["settings"]
    numba.set_num_threads(1)  # this thread's parallel regions: one chunk, whatever the worker
    try:
        if isinstance(task["experiment"], str):
            model, x0, xi = experiments.setup(task["experiment"], **keywords)
        else:
            model, x0, xi = task["experiment"](**keywords)
        t_max = s["t_max"] if task["t_max"] is None else task["t_max"](**keywords)
        traj = simulate(model, x0, xi, t_max=t_max, dt=s["dt"], method=s["method"],
                        n_frames=s["n_frames"], rtol=s["rtol"], atol=s["atol"],
                        max_steps=s["max_steps"])
        out = {k: float(x) for k, x in diagnostics.summary(traj, tol=s["tol"]).items()}
        out["phase"] = spectral.classify(traj.final) if traj.d >= 3 else ""
        for name, fn in task["extra"].items():
            out[name] = float(fn(traj))
        if s["time_series"]:
            out["energy_series"] = np.asarray(traj.energy, dtype=np.float64)
            for name in ("spread", "dirac_distance"):
                out[f"{name}_series"] = diagnostics.series(traj, getattr(diagnostics, name))
            out["clusters_series"] = np.array(
                [diagnostics.cluster_count(x, s["tol"]) for x in traj.x], dtype=np.float64)
        out["error"] = ""
        return out
    except Exception as exc:  # the point's own failure is its result
        return {"error": _message(exc)}


# ---------------------------------------------------------------------------------------- layout
class _Layout:
    """The shape of the result: dimensions, variables, empty arrays, one point's index."""

    def __init__(self, pairs, settings, extra):
        self.keys = [k for k, _ in pairs]
        self.values = [vals for _, vals in pairs]
        self.shape = tuple(len(vals) for vals in self.values)
        self.numbers = list(FINAL) + list(extra)
        self.series = [f"{s}_series" for s in SERIES] if settings["time_series"] else []
        self.frames = settings["n_frames"]
        self.times = (np.linspace(0.0, settings["t_max"], settings["n_frames"])
                      if settings["time_series"] else None)

    def empty(self):
        arrays = {name: np.full(self.shape, np.nan) for name in self.numbers}
        arrays.update({name: np.full(self.shape + (self.frames,), np.nan)
                       for name in self.series})
        arrays.update({name: np.full(self.shape, "", dtype=object) for name in TEXT})
        return arrays

    def points(self):
        return list(np.ndindex(*self.shape))

    def keywords(self, fixed, index):
        return {**fixed, **{k: vals[i] for k, vals, i in zip(self.keys, self.values, index)}}

    def dims(self, name):
        return tuple(self.keys) + (("time",) if name in self.series else ())

    def coords(self):
        coords = {k: np.asarray(vals, dtype=object if isinstance(vals[0], str) else None)
                  for k, vals in zip(self.keys, self.values)}
        if self.series:
            coords["time"] = self.times
        return coords

    def fill(self, arrays, index, result):
        for name in self.numbers + self.series:
            if name in result:
                arrays[name][index] = result[name]
        for name in TEXT:
            arrays[name][index] = result.get(name, "")


def _dataset(layout, arrays, attrs, extra_session=None):
    import xarray as xr

    data = {name: (layout.dims(name), arrays[name]) for name in arrays}
    if extra_session is not None:
        data["session"] = (layout.dims("session"), extra_session)
    ds = xr.Dataset(data, coords=layout.coords(), attrs=attrs)
    for name in ds.data_vars:
        base = name[:-len("_series")] if name.endswith("_series") else name
        ds[name].attrs["description"] = DESCRIPTIONS.get(base, "an extra diagnostic")
        if name.endswith("_series"):
            ds[name].attrs["description"] += ", at every frame"
    return ds


# ---------------------------------------------------------------------------------------- store
def _differences(stored, now, prefix=""):
    """The entries of two argument dicts that differ, as readable lines."""
    lines = []
    for key in list(dict.fromkeys([*stored, *now])):
        a, b = stored.get(key, "(absent)"), now.get(key, "(absent)")
        if isinstance(a, dict) and isinstance(b, dict):
            lines += _differences(a, b, f"{prefix}{key}.")
        elif a != b:
            lines.append(f"{prefix}{key}: {json.dumps(a)} in the store, {json.dumps(b)} now")
    return lines


class _Store:
    """The Zarr store of a sweep: created whole, checked against the arguments, written per point.
    """

    def __init__(self, path, layout, arguments, fingerprint, attrs):
        import zarr

        self.path = os.path.abspath(os.fspath(path))
        self.layout = layout
        if os.path.exists(self.path):
            self._check(arguments, fingerprint)
        else:
            self._create(attrs)
        self.group = zarr.open_group(self.path, mode="r+", zarr_format=2)
        self.arrays = {name: self.group[name] for name in self.group.array_keys()}

    def _check(self, arguments, fingerprint):
        import zarr

        try:
            group = zarr.open_group(self.path, mode="r", zarr_format=2)
            stored = group.attrs.get("sweep_fingerprint")
            stored_args = json.loads(group.attrs.get("sweep_arguments", "null"))
        except Exception as exc:
            raise ValueError(f"store {self.path} exists and is not the store of a sweep "
                             f"({_message(exc)}); give a new path") from None
        if stored is None or stored_args is None:
            raise ValueError(f"store {self.path} exists and is not the store of a sweep (no "
                             f"fingerprint); give a new path")
        if stored != fingerprint:
            diffs = _differences(stored_args, arguments) or ["the fingerprint"]
            raise ValueError(f"store {self.path} holds a sweep with other arguments: "
                             + "; ".join(diffs)
                             + ". Give the same arguments to resume it, or a new store")

    def _create(self, attrs):
        layout = self.layout
        arrays = layout.empty()
        session = np.zeros(layout.shape, dtype=np.int32)
        ds = _dataset(layout, arrays, attrs, session)
        one = (1,) * len(layout.keys)
        encoding = {name: {"chunks": one + ((layout.frames,) if name in layout.series else ())}
                    for name in ds.data_vars}
        folder = os.path.dirname(self.path)
        if folder and not os.path.isdir(folder):
            raise ValueError(f"store: the folder {folder} does not exist")
        tmp = os.path.join(folder, f".{os.path.basename(self.path)}.{uuid.uuid4().hex}.partial")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ds.to_zarr(tmp, mode="w-", zarr_format=2, consolidated=True, encoding=encoding)
            try:
                os.rename(tmp, self.path)
            except OSError:
                if not os.path.isdir(self.path):  # else another process created it first
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def load(self, arrays):
        """Copy the finished points into ``arrays``; return the session array."""
        session = np.asarray(self.arrays["session"][...])
        done = session > 0
        for name in arrays:
            stored = np.asarray(self.arrays[name][...])
            if name in TEXT:
                stored = np.array([str(x) for x in stored.ravel()],
                                  dtype=object).reshape(stored.shape)
            arrays[name][done] = stored[done]
        return session

    def write(self, index, result, session):
        """Write one finished point: its diagnostics first, its session number last.

        Every variable is written, NaN where the point has no value (it failed), so that
        nothing of an earlier, unfinished write of the same point is left.
        """
        for name in self.layout.numbers:
            self.arrays[name][index] = result.get(name, np.nan)
        for name in self.layout.series:
            self.arrays[name][index] = result.get(name, np.full(self.layout.frames, np.nan))
        for name in TEXT:
            self.arrays[name][index] = result.get(name, "")
        self.arrays["session"][index] = session


def stored_points(store):
    """How many points of a sweep's store are finished, and how many the grid has.

    Parameters
    ----------
    store : str or os.PathLike
        The Zarr directory of a sweep.

    Returns
    -------
    tuple of int
        ``(finished, total)``; ``(0, 0)`` if there is no store at that path yet.

    Raises
    ------
    ValueError
        If the path holds something that is not the store of a sweep.
    """
    import zarr

    if not isinstance(store, (str, os.PathLike)):
        raise TypeError(f"store must be a path (str or os.PathLike), got {type(store).__name__}")
    if not os.path.exists(store):
        return 0, 0
    try:
        session = np.asarray(zarr.open_group(os.fspath(store), mode="r",
                                             zarr_format=2)["session"][...])
    except Exception as exc:
        raise ValueError(f"store {os.fspath(store)} is not the store of a sweep "
                         f"({_message(exc)})") from None
    return int((session > 0).sum()), int(session.size)


# ---------------------------------------------------------------------------------------- Dask
def _local_cluster(workers):
    """A local cluster of ``workers`` processes with one thread each, and its client.

    ``NUMBA_NUM_THREADS=1`` is in this process's environment while the workers are spawned
    (and put back afterwards), so each worker sees it from its first import on: a worker
    that imported Numba under one value and were handed another later would refuse to run.
    Ctrl-C is ignored while they start (a second or two), so that they ignore it too: a Ctrl-C
    in a terminal goes to every process of the foreground group, and only this one should
    answer it, by closing the cluster.
    """
    from dask.distributed import Client, LocalCluster

    before = os.environ.get("NUMBA_NUM_THREADS")
    os.environ["NUMBA_NUM_THREADS"] = "1"
    try:  # the workers ignore Ctrl-C (an ignored signal stays ignored in a child): this process
        handler = signal.signal(signal.SIGINT, signal.SIG_IGN)  # handles it and closes them
    except ValueError:  # not the main thread: leave the signals alone
        handler = None
    try:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address="127.0.0.1:0", silence_logs=logging.CRITICAL)
    finally:
        if handler is not None:
            signal.signal(signal.SIGINT, handler)
        if before is None:
            del os.environ["NUMBA_NUM_THREADS"]
        else:
            os.environ["NUMBA_NUM_THREADS"] = before
    return Client(cluster), cluster


def _connect(client, workers, n_points):
    """The client to use, and what to close at the end (a list)."""
    from dask.distributed import Client

    if client is None:
        import dask.system

        count = workers if workers is not None else max(1, int(dask.system.CPU_COUNT))
        c, cluster = _local_cluster(min(count, n_points))
        return c, [c, cluster]
    if isinstance(client, str):
        try:
            c = Client(client, timeout="20s")
        except OSError as exc:
            raise OSError(f"client: no Dask scheduler answers at {client} ({exc})") from None
        return c, [c]
    if isinstance(client, Client):
        return client, []
    raise TypeError(f"client must be None, a distributed.Client or a scheduler address such as "
                    f"'tcp://127.0.0.1:8786', got {type(client).__name__}")


def _bar(progress, total):
    if progress is False or total == 0:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, delay=0.0 if progress else DELAY, mininterval=INTERVAL,
                file=sys.stderr, unit="point", desc="sweep", leave=True)


def _run(client_arg, workers, task, todo, on_result, progress):
    """Submit the points ``todo`` (list of (index, keywords)), call ``on_result`` as they finish.

    Returns the messages of the points lost outside their own computation (index -> message).
    """
    from dask.distributed import as_completed

    client, owned = _connect(client_arg, workers, len(todo))
    lost = {}
    bar = _bar(progress, len(todo))
    futures = {}
    try:
        for index, keywords in todo:
            f = client.submit(_run_point, task, keywords, pure=False,
                              key=f"sweep-point-{uuid.uuid4().hex}")
            futures[f.key] = (f, index)
        for future in as_completed([f for f, _ in futures.values()]):
            index = futures[future.key][1]
            try:
                result = future.result()
            except Exception as exc:  # the task was lost (its worker died, the cluster went)
                lost[index] = _message(exc)
                result = None
            if result is not None:
                on_result(index, result)
            if bar is not None:
                bar.update(1)
            futures.pop(future.key)
    except BaseException:
        client.cancel([f for f, _ in futures.values()])
        raise
    finally:
        if bar is not None:
            bar.close()
        for thing in owned:
            try:
                thing.close()
            except Exception:
                pass
    return lost


# ---------------------------------------------------------------------------------------- sweep
def sweep(experiment, grid, *, t_max, store=None, client=None, n=None, d=None, fixed=None,
          method="rk4", dt=None, n_frames=101, rtol=1e-8, atol=1e-10,
          max_steps=DEFAULT_MAX_STEPS, tol=1e-3, time_series=False, extra=None, progress=None,
          workers=None):
    """Run an experiment at every point of a grid on Dask and return the diagnostics as a Dataset.

    Point ``p`` of the grid runs ``setup(experiment, **fixed, **p)`` (or
    ``experiment(**fixed, **p)``), then ``simulate(model, x0, xi, t_max, dt, method,
    n_frames=..., rtol=..., atol=..., max_steps=...)``, then
    :func:`usaav_edu.diagnostics.summary` of the run: the same numbers a serial loop gives, bit
    for bit (see the module's notes for the thread count above 300 tokens).

    Parameters
    ----------
    experiment : str or callable
        A name of :data:`usaav_edu.experiments.EXPERIMENTS`, or a callable
        ``(**params) -> (model, x0, xi)`` that accepts every grid key and fixed keyword.
    grid : mapping
        Parameter name -> list of values (numbers or strings; ``range`` is fine), for example
        ``{"beta": [0.5, 1, 2, 4], "seed": range(32)}``.  One dimension per key, in this order.
    t_max : float or callable
        Final time of every run, > 0; or a callable ``t_max(**keywords) -> float`` of the
        point's keywords, such as ``lambda beta, **_: 20 * np.exp(1.2 * beta)`` for lifetimes
        that grow exponentially with ``beta`` (not with ``time_series``).
    store : str or os.PathLike or None
        A Zarr directory: each finished point is written as it completes, and a sweep started
        again with the same arguments runs only the missing points.
    client : None, distributed.Client or str
        None: a local cluster sized to the machine, closed at the end; a Client, or the address
        of a Dask scheduler, to run on that cluster.
    n, d : int or None
        Number of tokens and dimension (keywords of the set-up; None: the set-up's default).
    fixed : mapping or None
        Further keywords held fixed at every point (``{"omega": 2.0}``).
    method, dt, n_frames, rtol, atol, max_steps
        The settings of :func:`usaav_edu.simulate`, the same at every point.
    tol : float
        Cluster tolerance of the diagnostics, > 0.
    time_series : bool
        Also keep energy, spread, Dirac distance and cluster count at every frame (variables
        ``<name>_series`` over a ``time`` dimension).
    extra : mapping or None
        Name -> callable ``traj -> float``: further diagnostics computed in the task.
    progress : bool or None
        A bar of finished points: None shows it once the sweep has lasted a second, True at
        once, False never.
    workers : int or None
        Number of workers of the local cluster (default: the CPUs this process may use).

    Returns
    -------
    xarray.Dataset
        Coordinates: the grid values (and ``time``).  Variables: ``energy``,
        ``energy_bound``, ``spread``, ``dirac_distance``, ``clusters``, ``orbit_residual``
        (float, NaN where a point failed), ``phase`` (``spectral.classify`` of the final frame
        in d >= 3, else ``""``), ``error`` (``""`` where the point ran), the extras and the
        series.  Attributes: package version, experiment, settings, the fixed keywords, the
        arguments as JSON and their fingerprint.

    Raises
    ------
    TypeError, ValueError
        For a bad argument (naming it), a grid key the experiment does not read, or a store
        made with other arguments (naming what differs).
    OSError
        When the scheduler cannot be reached or the store cannot be written.
    KeyboardInterrupt
        On Ctrl-C, after cancelling the pending points (the store keeps the finished ones).
    """
    pairs = _check_grid(grid)
    fixed, extra, settings = _settings(t_max, n, d, fixed, method, dt, n_frames, rtol, atol,
                                       max_steps, tol, time_series, extra)
    name = _check_keywords(experiment, pairs, fixed)
    if progress is not None and not isinstance(progress, bool):
        raise TypeError(f"progress must be None, True or False, got {type(progress).__name__}")
    if workers is not None:
        workers = v.integer("workers", workers, minimum=1)
    if store is not None and not isinstance(store, (str, os.PathLike)):
        raise TypeError(f"store must be a path (str or os.PathLike), got {type(store).__name__}")

    identity = name if name is not None else _callable_identity("experiment", experiment)
    arguments = {
        "format": FORMAT, "package": "usaav-edu", "version": __version__,
        "experiment": identity, "grid": [[k, vals] for k, vals in pairs], "fixed": fixed,
        **settings,
        "extra": {k: _callable_identity(f"extra[{k!r}]", fn) for k, fn in extra.items()},
        **({"t_max": _callable_identity("t_max", t_max)} if callable(t_max) else {}),
    }
    text = json.dumps(arguments, sort_keys=True)
    fingerprint = hashlib.sha256(text.encode()).hexdigest()
    attrs = {"package": "usaav-edu", "version": __version__,
             "experiment": name if name is not None else identity["callable"],
             "model_parameters": json.dumps(fixed, sort_keys=True),
             "method": settings["method"],
             "t_max": settings["t_max"] if not callable(t_max) else "per point: "
             + arguments["t_max"]["callable"],
             "n_frames": settings["n_frames"], "dt": "default" if dt is None else settings["dt"],
             "rtol": settings["rtol"], "atol": settings["atol"], "tol": settings["tol"],
             "sweep_arguments": text, "sweep_fingerprint": fingerprint}

    layout = _Layout(pairs, settings, extra)
    arrays = layout.empty()
    target = None if store is None else _Store(store, layout, arguments, fingerprint, attrs)
    points = layout.points()
    if target is not None:
        session = target.load(arrays)
        this_session = int(session.max()) + 1
        points = [p for p in points if session[p] == 0]
    task = {"experiment": experiment if name is None else name, "settings": settings,
            "extra": extra, "t_max": t_max if callable(t_max) else None}

    def on_result(index, result):
        layout.fill(arrays, index, result)
        if target is not None:
            target.write(index, result, this_session)

    lost = {}
    if points:
        todo = [(p, layout.keywords(fixed, p)) for p in points]
        lost = _run(client, workers, task, todo, on_result, progress)
    for index, message in lost.items():
        layout.fill(arrays, index, {"error": f"lost, not stored: {message}"})
    if lost:
        warnings.warn(f"{len(lost)} of {len(points)} points were lost with their workers (first: "
                      f"{next(iter(lost.values()))}); run the sweep again"
                      + (" with the same store to run only those" if target else ""),
                      RuntimeWarning, stacklevel=2)
    return _dataset(layout, arrays, attrs)
