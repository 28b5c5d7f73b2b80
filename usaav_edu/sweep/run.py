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
  keywords, ``simulate`` with the same settings, :func:`usaav_edu.analysis.diagnostics.summary`), so the
  Dataset holds the numbers a serial loop gives.  The kernels sum in one fixed order below
  ``usaav_edu.dynamics.rhs.PARALLEL_MIN`` (300) tokens; above it the order depends on Numba's
  thread count, so there a sweep equals a serial loop run with the workers' thread count (one).
* **The cluster.**  With no ``client`` the sweep starts a local cluster sized to the machine
  (``dask.system.CPU_COUNT`` worker processes, which respects a cgroup CPU quota, at most one
  per point), one thread each, with ``NUMBA_NUM_THREADS=1`` in the workers so that two kernels
  never compete for one core, and closes it at the end.  Its scheduler runs in this process and
  each worker is a new interpreter running a ``distributed.Nanny``, not a ``multiprocessing``
  child of this process: such a child imports the caller's main module again, so that a script
  with a sweep at its top level (no ``if __name__ == "__main__":``) would run again in every
  worker.  The workers get this process's ``sys.path``.  A
  ``distributed.Client`` or a scheduler address (``"tcp://host:8786"``) runs the same tasks on
  that cluster unchanged; start its workers with ``--nthreads 1`` and ``NUMBA_NUM_THREADS=1``.
* **Compilation.**  The workers load the compiled kernels from Numba's disk cache
  (``NUMBA_CACHE_DIR``, inherited by the local workers).  A worker on a machine whose cache is
  cold compiles them once (README, Performance); afterwards a new worker process only loads
  them.  The sweep does not warm the cache itself.
* **The store.**  ``store`` is a Zarr directory (Zarr format 2, which specifies the string
  variables; consolidated metadata).  It is created whole (every variable, filled with NaN and
  ``""``) in a temporary folder beside it and renamed into place, so a store either exists
  complete or not at all.  Each variable is chunked one grid point per chunk and every chunk is
  written to a temporary file and renamed (Zarr's local store), so a kill at any moment leaves
  each chunk old or new, never torn.  A finished point writes its diagnostics first, then
  their SHA-256 (``checksum``, :func:`point_checksum`), its ``session`` number last; only
  points with a session are finished, so a point killed half-written runs again.  The
  store's attributes hold the sweep's arguments (JSON) and their SHA-256, the fingerprint; a
  store with another fingerprint is refused with a ``ValueError`` naming what differs.  Points that are finished are read back, the others run.
* **Verification.**  Opening a store checks its layout: every variable present with the shape,
  chunks and kind the grid gives, the coordinates equal to the grid (in the per-array and in
  the consolidated metadata); otherwise a ``ValueError`` names the store and the variable.
  Reading it back verifies every finished point against its checksum: a point whose chunk is
  missing (it reads as NaN), altered (a flipped bit) or cannot be decoded (truncated) is
  damaged; a resumed sweep runs it again, with a ``RuntimeWarning`` naming it, and never
  counts it as finished; :func:`stored_points` does not count it, :func:`read_store` (the
  store as a Dataset, verified) names it in a ``ValueError``.  A store of format 1 (no
  checksums) is refused: its points cannot be verified.
* **Failures.**  An exception inside a run (an ``IntegrationError``, a refused work estimate,
  a bad value in the grid) is that point's result: NaN diagnostics and its message in
  ``error``; the point is finished and is not run again.  A task lost with its worker (the
  scheduler gives up after repeated worker deaths) is not stored as finished: the returned
  Dataset holds its message, and a warning says to run the sweep again with the store.
* **Ctrl-C.**  Pending tasks are cancelled, the local cluster is closed, and
  ``KeyboardInterrupt`` propagates; every finished point is already in the store.
* **Progress.**  A ``tqdm`` bar of points (a widget in a notebook, text on stderr elsewhere).
"""

import contextlib
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

from .. import _validate as v
from .._version import __version__
from ..analysis import diagnostics, spectral
from ..errors import SchedulerUnreachable
from ..particles import experiments
from ..particles.solver import DEFAULT_MAX_STEPS, METHODS, SUMMATIONS, simulate
from ..progress import DELAY, INTERVAL

FORMAT = 2
"""The version of the store layout (part of the fingerprint); 2 adds the per-point checksum."""
FINAL = ("energy", "energy_bound", "spread", "dirac_distance", "clusters", "orbit_residual")
"""The final diagnostics of every point (:func:`usaav_edu.analysis.diagnostics.summary`)."""
SERIES = ("energy", "spread", "dirac_distance", "clusters")
"""The diagnostics recorded over time with ``time_series=True`` (variables ``<name>_series``)."""
TEXT = ("phase", "error")
"""The text variables: the phase class (``""`` in d = 2) and the error message (``""`` if fine)."""
DESCRIPTIONS = {
    "energy": "interaction energy of the final frame",
    "energy_bound": "upper bound of the energy for these labels",
    "spread": "spread sqrt(1 - |mean|^2) of the final frame",
    "dirac_distance": "distance of the final frame to the nearest Dirac mass",
    "clusters": "number of clusters of the final frame (single linkage, tolerance cluster_tol)",
    "orbit_residual": "distance of the final frame to the nearest gauge orbit",
    "phase": "collapse, great circle or other (spectral.classify), empty in d = 2",
    "error": "the failure of this point, empty if it ran",
    "session": "the run of the sweep that finished this point (0: not finished)",
    "checksum": "SHA-256 of the point's stored values (verified when the store is read)",
}
RUN_KEYWORDS = ("noise",)
"""Keywords of a point that go to :func:`usaav_edu.simulate`, not to the set-up (``noise``,
with ``method="heun"``; the Brownian motions are seeded by the point's ``seed``, 0 without)."""
MAX_POINTS = 100_000
"""The most points a sweep runs (a store keeps a dozen files per point); split larger ones."""
_RESERVED = (set(FINAL) | set(TEXT) | {f"{s}_series" for s in SERIES}
             | {"time", "session", "checksum"})
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
        if hasattr(values, "__len__") and len(values) > MAX_POINTS:
            raise ValueError(f"grid[{key!r}] holds {len(values)} values, more than a sweep's "
                             f"{MAX_POINTS} points; split it into several sweeps")
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
    points = int(np.prod([len(vals) for _, vals in pairs], dtype=np.float64))
    if points > MAX_POINTS:
        raise ValueError(f"grid: {points} points, more than a sweep's {MAX_POINTS}; split it "
                         f"into several sweeps")
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
    pairs = [(k, vals) for k, vals in pairs if k not in RUN_KEYWORDS]
    fixed = {k: x for k, x in fixed.items() if k not in RUN_KEYWORDS}
    keys = [k for k, _ in pairs]
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


def _settings(t_max, n, d, fixed, solver, cluster_tol, time_series, extra):
    """The fixed keywords, the extras and the settings of every run, checked.

    ``solver`` holds ``simulate``'s keywords method, dt, n_frames, rtol, atol, max_steps,
    summation and summation_tol.
    """
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
         "method": v.choice("method", solver["method"], METHODS),
         "dt": None if solver["dt"] is None else v.real_scalar("dt", solver["dt"], minimum=0.0,
                                                                strict=True),
         "n_frames": v.integer("n_frames", solver["n_frames"], minimum=2),
         "rtol": v.real_scalar("rtol", solver["rtol"], minimum=0.0, strict=True),
         "atol": v.real_scalar("atol", solver["atol"], minimum=0.0, strict=True),
         "max_steps": None if solver["max_steps"] is None
         else v.integer("max_steps", solver["max_steps"], minimum=1),
         "summation": v.choice("summation", solver["summation"], SUMMATIONS),
         "summation_tol": v.real_scalar("summation_tol", solver["summation_tol"], minimum=0.0,
                                        strict=True),
         "cluster_tol": v.real_scalar("cluster_tol", cluster_tol, minimum=0.0, strict=True),
         "time_series": time_series}
    if not s["summation_tol"] < 1.0:
        raise ValueError(f"summation_tol must be below 1 (a relative error bound), got "
                         f"{s['summation_tol']:g}")
    return fixed, dict(extra), s


def _check_noise(pairs, fixed, method):
    """Refuse a noise that is not a real number >= 0, or noise > 0 without ``method="heun"``."""
    values = list(dict(pairs).get("noise", [])) + ([fixed["noise"]] if "noise" in fixed else [])
    for x in values:
        if isinstance(x, (bool, str)):
            raise TypeError(f"noise must be real numbers >= 0, got {x!r}")
        v.real_scalar("noise", x, minimum=0.0)
    if any(x > 0 for x in values) and method != "heun":
        raise ValueError(f"noise > 0 needs method='heun' (the stochastic Heun scheme), got "
                         f"method={method!r}")


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
        run = {k: keywords[k] for k in RUN_KEYWORDS if k in keywords}
        built = {k: x for k, x in keywords.items() if k not in RUN_KEYWORDS}
        if isinstance(task["experiment"], str):
            model, x0, xi = experiments.setup(task["experiment"], **built)
        else:
            model, x0, xi = task["experiment"](**built)
        t_max = s["t_max"] if task["t_max"] is None else task["t_max"](**keywords)
        if run.get("noise", 0.0) > 0.0:
            run["seed"] = int(keywords.get("seed") or 0)
        traj = simulate(model, x0, xi, t_max=t_max, dt=s["dt"], method=s["method"],
                        n_frames=s["n_frames"], rtol=s["rtol"], atol=s["atol"],
                        max_steps=s["max_steps"], summation=s["summation"],
                        summation_tol=s["summation_tol"], **run)
        out = {k: float(x) for k, x in
               diagnostics.summary(traj, cluster_tol=s["cluster_tol"]).items()}
        out["phase"] = spectral.classify(traj.final) if traj.d >= 3 else ""
        for name, fn in task["extra"].items():
            out[name] = float(fn(traj))
        if s["time_series"]:
            out["energy_series"] = np.asarray(traj.energy, dtype=np.float64)
            for name in ("spread", "dirac_distance"):
                out[f"{name}_series"] = diagnostics.series(traj, getattr(diagnostics, name))
            out["clusters_series"] = np.array(
                [diagnostics.cluster_count(x, s["cluster_tol"]) for x in traj.x],
                dtype=np.float64)
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

    def label(self, index):
        """The point ``index`` as ``(beta=1.0, seed=3)``."""
        return "(" + ", ".join(f"{k}={vals[i]!r}" if isinstance(vals[i], str) else f"{k}={vals[i]}"
                               for k, vals, i in zip(self.keys, self.values, index, strict=True)) + ")"

    def stored(self):
        """The variables of a store, with the shape of each: the result's, session, checksum."""
        shapes = {name: self.shape for name in [*self.numbers, *TEXT, "session", "checksum"]}
        shapes.update({name: self.shape + (self.frames,) for name in self.series})
        return shapes

    def keywords(self, fixed, index):
        return {**fixed, **{k: vals[i] for k, vals, i in zip(self.keys, self.values, index, strict=True)}}

    def dims(self, name):
        return tuple(self.keys) + (("time",) if name in self.series else ())

    def coords(self):
        coords = {k: np.asarray(vals, dtype=object if isinstance(vals[0], str) else None)
                  for k, vals in zip(self.keys, self.values, strict=True)}
        if self.series:
            coords["time"] = self.times
        return coords

    def fill(self, arrays, index, result):
        for name in self.numbers + self.series:
            if name in result:
                arrays[name][index] = result[name]
        for name in TEXT:
            arrays[name][index] = result.get(name, "")


def _dataset(layout, arrays, attrs, bookkeeping=None):
    import xarray as xr

    data = {name: (layout.dims(name), arrays[name]) for name in arrays}
    for name, values in (bookkeeping or {}).items():  # session and checksum, in a store
        data[name] = (layout.dims(name), values)
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


def point_checksum(index, values):
    """SHA-256 of one point's stored values: what a store keeps to verify the point.

    The hash runs over the point's index and, in the order of the names, each variable's name
    and value: a float (or a series) as its little-endian float64 bytes (every NaN as one
    NaN), an integer as int64, a string as UTF-8, each with its length.  A chunk deleted
    (read back as the fill value), a flipped bit or a chunk copied from another point changes
    it.

    Parameters
    ----------
    index : tuple of int
        The point's index in the grid.
    values : dict
        Variable name -> the point's value (float, int, str or a 1-d array of floats).

    Returns
    -------
    str
        64 hexadecimal digits.
    """
    h = hashlib.sha256(f"usaav-edu sweep point {FORMAT} {tuple(int(i) for i in index)}".encode())
    for name in sorted(values):
        value = values[name]
        if isinstance(value, str):
            data = b"s" + value.encode("utf-8")
        elif isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, bool):
            data = b"i" + np.int64(value).tobytes()
        else:
            x = np.array(value, dtype="<f8").ravel()
            x[np.isnan(x)] = np.nan
            data = b"f" + x.tobytes()
        for part in (name.encode(), data):
            h.update(len(part).to_bytes(8, "little") + part)
    return h.hexdigest()


def _kind(dtype):
    """The kind of a stored variable: "f" (float64), "i" (integer) or "s" (string)."""
    if dtype.kind in "iu":
        return "i"
    if dtype.kind == "f":
        return "f"
    return "s"


class _Damaged(ValueError):
    """A store whose layout is not the one its sweep writes (not one point: the store)."""


def _check_layout(path, group, shapes, coords):
    """Check that ``group`` holds every variable with its shape and chunks, and the grid's
    coordinates; raise :class:`_Damaged` naming the store and the variable otherwise."""
    names = set(group.array_keys())
    for name, shape in shapes.items():
        if name not in names:
            raise _Damaged(f"store {path} is damaged: the variable {name} is missing; run the "
                           f"sweep into a new store")
        a = group[name]
        chunks = (1,) * len(coords) + tuple(shape[len(coords):])
        want = "i" if name == "session" else "s" if name in TEXT or name == "checksum" else "f"
        if tuple(a.shape) != shape or tuple(a.chunks) != chunks or _kind(a.dtype) != want:
            raise _Damaged(f"store {path} is damaged: the variable {name} has shape "
                           f"{tuple(a.shape)}, chunks {tuple(a.chunks)} and dtype {a.dtype}, "
                           f"the sweep writes {shape}, {chunks} and "
                           f"{ {'f': 'float64', 'i': 'int32', 's': 'str'}[want]}; run the sweep "
                           f"into a new store")
    for key, values in coords.items():
        try:
            stored = [x.item() if hasattr(x, "item") else x for x in group[key][...]]
        except Exception as exc:
            raise _Damaged(f"store {path} is damaged: its coordinate {key} cannot be read "
                           f"({_message(exc)}); run the sweep into a new store") from None
        if stored != list(values):
            raise _Damaged(f"store {path} is damaged: its coordinate {key} holds {stored}, the "
                           f"grid {list(values)}; run the sweep into a new store")


def _read_points(array, shape):
    """The values of a stored variable, and the points whose chunk cannot be read.

    Every chunk at once; if that fails (a truncated or garbled chunk), point by point, so that
    one bad chunk names its point and costs only that point.
    """
    kind = _kind(array.dtype)
    try:
        values = np.asarray(array[...])
        return (values.astype(object) if kind == "s" else values), {}
    except Exception:
        pass
    values = np.empty(array.shape, dtype=object if kind == "s" else np.float64 if kind == "f"
                      else np.int64)
    bad = {}
    for index in np.ndindex(*shape):
        try:
            values[index] = array[index]
        except Exception as exc:
            bad[index] = _message(exc)
            values[index] = "" if kind == "s" else 0
    return values, bad


def _verify(path, group, shapes, points):
    """Read a store's variables and verify every finished point against its checksum.

    Returns ``(values, finished, damaged)``: the variables (name -> array), the points that
    are finished and verified (a boolean array), and the damaged points (index -> why): a
    finished point whose values do not match their checksum, or any point with a chunk that
    cannot be read.  A point is finished when its session number (written last) is positive.
    """
    values, unreadable = {}, {}
    for name in shapes:
        values[name], bad = _read_points(group[name], points)
        for index, message in bad.items():
            unreadable.setdefault(index, f"its chunk of {name} cannot be read ({message})")
    session = values["session"]
    finished = np.zeros(points, dtype=bool)
    damaged = {}
    for index in np.ndindex(*points):
        if index in unreadable:  # chunks are renamed into place whole: this is damage
            damaged[index] = unreadable[index]
            continue
        if session[index] <= 0:
            continue  # never finished (or killed before its last write): it runs
        point = {name: _point_value(values[name][index])
                 for name in shapes if name != "checksum"}
        if values["checksum"][index] != point_checksum(index, point):
            damaged[index] = ("its values do not match their checksum" if
                              values["checksum"][index] else "it has no checksum")
            continue
        finished[index] = True
    return values, finished, damaged


def _point_value(x):
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, (str, np.str_)):
        return str(x)
    if isinstance(x, (numbers.Integral, np.integer)):
        return int(x)
    return float(x)


def _damage_message(path, layout, damaged, running=True):
    """One line naming the damaged points of a store (the first three) and why; that they run
    again (``running``) or how to run them again."""
    items = list(damaged.items())
    if len(items) == 1:
        (index, why), = items
        then = "it runs again" if running else "resume the sweep to run it again"
        return f"store {path}: the point {layout.label(index)} failed verification ({why}); {then}"
    named = "; ".join(f"{layout.label(i)}: {why}" for i, why in items[:3])
    more = f"; and {len(items) - 3} more" if len(items) > 3 else ""
    then = "they run again" if running else "resume the sweep to run them again"
    return (f"store {path}: {len(items)} points failed verification ({then}): {named}{more}")


class _Store:
    """The Zarr store of a sweep: created whole, checked against the arguments and its layout,
    written per point, every finished point verified against its checksum when read.
    """

    def __init__(self, path, layout, arguments, fingerprint, attrs):
        import zarr

        self.path = os.path.abspath(os.fspath(path))
        self.layout = layout
        if os.path.exists(self.path):
            self._check(arguments, fingerprint)
        else:
            self._create(attrs)
        try:
            self.group = zarr.open_group(self.path, mode="r+", zarr_format=2,
                                         use_consolidated=False)
            coords = dict(zip(layout.keys, layout.values, strict=True))
            _check_layout(self.path, self.group, layout.stored(), coords)
            consolidated = zarr.open_group(self.path, mode="r", zarr_format=2)
            _check_layout(self.path, consolidated, layout.stored(), coords)
        except _Damaged:
            raise
        except Exception as exc:
            raise _Damaged(f"store {self.path} is damaged: its metadata cannot be read "
                           f"({_message(exc)}); run the sweep into a new store") from None
        self.arrays = {name: self.group[name] for name in layout.stored()}
        self.stale = set()

    def _check(self, arguments, fingerprint):
        import zarr

        try:
            group = zarr.open_group(self.path, mode="r", zarr_format=2)
            stored = group.attrs.get("sweep_fingerprint")
            stored_args = json.loads(group.attrs.get("sweep_arguments", "null"))
        except Exception as exc:
            raise ValueError(f"store {self.path} exists and is not the store of a sweep "
                             f"({_message(exc)}); give a new path") from None
        if stored is None or not isinstance(stored_args, dict):
            raise ValueError(f"store {self.path} exists and is not the store of a sweep (no "
                             f"fingerprint); give a new path")
        if stored_args.get("format") != FORMAT:
            raise ValueError(f"store {self.path} has the layout of format "
                             f"{stored_args.get('format')}, without a checksum per point, so its "
                             f"points cannot be verified; this version writes format {FORMAT}: "
                             f"run the sweep into a new store")
        if stored != fingerprint:
            diffs = _differences(stored_args, arguments) or ["the fingerprint"]
            raise ValueError(f"store {self.path} holds a sweep with other arguments: "
                             + "; ".join(diffs)
                             + ". Give the same arguments to resume it, or a new store")

    def _create(self, attrs):
        layout = self.layout
        arrays = layout.empty()
        bookkeeping = {"session": np.zeros(layout.shape, dtype=np.int32),
                       "checksum": np.full(layout.shape, "", dtype=object)}
        ds = _dataset(layout, arrays, attrs, bookkeeping)
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
        """Copy the finished, verified points into ``arrays``.

        Returns ``(last, finished, damaged)``: the largest session number in the store, the
        verified finished points (a boolean array) and the points that fail verification
        (index -> why), which run again.
        """
        values, finished, damaged = _verify(self.path, self.group, self.layout.stored(),
                                            self.layout.shape)
        self.stale = {index for index in damaged if values["session"][index] != 0}
        for name in arrays:
            arrays[name][finished] = values[name][finished]
        return int(values["session"].max(initial=0)), finished, damaged

    def write(self, index, result, session):
        """Write one finished point: its values, then their checksum, its session number last.

        Every variable is written, NaN where the point has no value (it failed), so that
        nothing of an earlier, unfinished write of the same point is left.  A point killed
        before its session number is written is not finished and runs again.
        """
        point = {}
        for name in self.layout.numbers:
            point[name] = float(result.get(name, np.nan))
        for name in self.layout.series:
            point[name] = np.asarray(result.get(name, np.full(self.layout.frames, np.nan)),
                                     dtype=np.float64)
        for name in TEXT:
            point[name] = str(result.get(name, ""))
        point["session"] = int(session)
        if index in self.stale:  # a damaged point, finished before: unfinished while rewritten
            self.arrays["session"][index] = 0
        for name, value in point.items():
            if name != "session":
                self.arrays[name][index] = value
        self.arrays["checksum"][index] = point_checksum(index, point)
        self.arrays["session"][index] = session


def stored_points(store):
    """How many points of a sweep's store are finished and verified, and how many the grid has.

    Parameters
    ----------
    store : str or os.PathLike
        The Zarr directory of a sweep.

    Returns
    -------
    tuple of int
        ``(finished, total)``, counting only the finished points whose values match their
        checksum; ``(0, 0)`` if there is no store at that path yet.

    Raises
    ------
    ValueError
        If the path holds something that is not the store of a sweep, or a damaged one.
    """
    v.require_extra("sweep", "zarr", what="usaav_edu.sweep.stored_points")
    import zarr

    if not isinstance(store, (str, os.PathLike)):
        raise TypeError(f"store must be a path (str or os.PathLike), got {type(store).__name__}")
    if not os.path.exists(store):
        return 0, 0
    path = os.fspath(store)
    try:
        group = zarr.open_group(path, mode="r", zarr_format=2)
        session = group["session"]
        shape = tuple(session.shape)
        names = [n for n in group.array_keys()
                 if tuple(group[n].attrs.get("_ARRAY_DIMENSIONS", ())) != (n,)]
        shapes = {n: tuple(group[n].shape) for n in names}
    except Exception as exc:
        raise ValueError(f"store {path} is not the store of a sweep "
                         f"({_message(exc)})") from None
    if "checksum" not in shapes:
        raise ValueError(f"store {path} has no checksum per point (the layout of format 1), so "
                         f"its points cannot be verified; run the sweep into a new store")
    for name, s in shapes.items():
        if s[:len(shape)] != shape:
            raise ValueError(f"store {path} is damaged: the variable {name} has shape {s}, the "
                             f"variable session {shape}; run the sweep into a new store")
    _, finished, _ = _verify(path, group, shapes, shape)
    return int(finished.sum()), int(np.prod(shape, dtype=np.int64))


def read_store(store):
    """The Dataset of a sweep's store, every finished point verified against its checksum.

    What ``xarray.open_zarr`` gives, checked: the layout against the sweep's arguments (kept in
    the store's attributes), each finished point against the SHA-256 of its values.  A point
    that is not finished has NaN diagnostics, ``session`` 0 and the ``error`` "not finished".

    ``store`` is the Zarr directory of a sweep (as for :func:`stored_points`).

    Returns
    -------
    xarray.Dataset
        As :func:`usaav_edu.sweep` returns, with the variable ``session``.

    Raises
    ------
    ValueError
        If the path holds no store of a sweep, one of an older format, a damaged layout, or a
        point that fails verification (naming it: resume the sweep to run it again).
    """
    v.require_extra("sweep", "xarray", "zarr", what="usaav_edu.sweep.read_store")
    import zarr

    if not isinstance(store, (str, os.PathLike)):
        raise TypeError(f"store must be a path (str or os.PathLike), got {type(store).__name__}")
    path = os.path.abspath(os.fspath(store))
    try:
        group = zarr.open_group(path, mode="r", zarr_format=2)
        arguments = json.loads(group.attrs["sweep_arguments"])
        attrs = dict(group.attrs)
        pairs = [(k, list(vals)) for k, vals in arguments["grid"]]
        settings = {"time_series": bool(arguments["time_series"]),
                    "n_frames": int(arguments["n_frames"]), "t_max": arguments["t_max"]}
        extra = dict(arguments["extra"])
    except Exception as exc:
        raise ValueError(f"store {path} is not the store of a sweep ({_message(exc)})") from None
    if arguments.get("format") != FORMAT:
        raise ValueError(f"store {path} has the layout of format {arguments.get('format')}, "
                         f"without a checksum per point, so its points cannot be verified")
    layout = _Layout(pairs, settings, extra)
    coords = dict(zip(layout.keys, layout.values, strict=True))
    _check_layout(path, zarr.open_group(path, mode="r", zarr_format=2, use_consolidated=False),
                  layout.stored(), coords)
    _check_layout(path, group, layout.stored(), coords)
    values, finished, damaged = _verify(path, group, layout.stored(), layout.shape)
    if damaged:
        raise ValueError(_damage_message(path, layout, damaged, running=False))
    arrays = layout.empty()
    for name in arrays:
        arrays[name][finished] = values[name][finished]
    arrays["error"][~finished] = "not finished"
    session = np.where(finished, values["session"], 0).astype(np.int32)
    return _dataset(layout, arrays, attrs, {"session": session})


# ---------------------------------------------------------------------------------------- Dask
_WORKER_PROCESS = """\
import asyncio, json, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
address, options = sys.argv[1], json.loads(sys.argv[2])
sys.path[:] = options.pop("sys_path")
from distributed import Nanny

async def serve():
    async with Nanny(address, **options) as nanny:
        await nanny.finished()

asyncio.run(serve())
"""
"""The program of a worker process of the local cluster: a ``distributed.Nanny`` (which starts
and restarts the worker itself), with Ctrl-C ignored and the caller's ``sys.path``."""
WORKER_START_TIMEOUT = 120.0
"""Seconds the local cluster's workers may take to connect before the sweep gives up."""


def _worker_process_class():
    """The ``SpecCluster`` worker that runs :data:`_WORKER_PROCESS` in a new interpreter.

    A new interpreter (``python -c``), not a ``multiprocessing`` child: a child started by
    ``spawn`` or ``forkserver`` imports the caller's main module again, which re-runs a
    script whose sweep sits at its top level (and starts a cluster in every worker); a
    ``fork`` child copies the caller's threads' state (Numba's thread pool, the event loop).
    Each worker process leads a process group of its own (so a Ctrl-C in the terminal does
    not reach it), which closing the cluster kills whole; if this process dies first, the
    workers exit once they lose the scheduler.
    """
    from distributed.deploy.spec import ProcessInterface

    class WorkerProcess(ProcessInterface):
        def __init__(self, scheduler, name=None, **options):
            super().__init__()
            self.scheduler, self.name, self.options = scheduler, name, options
            self.process = None

        async def start(self):
            import asyncio

            options = {**self.options, "name": self.name, "sys_path": list(sys.path)}
            env = {**os.environ, "NUMBA_NUM_THREADS": "1"}
            self.process = await asyncio.create_subprocess_exec(
                sys.executable, "-c", _WORKER_PROCESS, self.scheduler, json.dumps(options),
                stdin=asyncio.subprocess.DEVNULL, env=env, process_group=0)
            await super().start()

        async def close(self):
            # the scheduler has retired the worker: end the process group of the nanny, its
            # worker and their resource tracker at once
            if self.process is not None:
                try:
                    os.killpg(self.process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                await self.process.wait()
            await super().close()

    return WorkerProcess


def _local_cluster(workers):
    """A local cluster of ``workers`` processes with one thread each, and its client.

    The scheduler runs in this process; every worker is a new interpreter (not a
    ``multiprocessing`` child, which would import the caller's script again, see
    :func:`_worker_process_class`) with ``NUMBA_NUM_THREADS=1`` in its environment from the
    start (a worker that imported Numba under one value and were handed another later would
    refuse to run) and this process's ``sys.path``.  The workers ignore Ctrl-C: a Ctrl-C in a
    terminal goes to every process of the foreground group, and only this one should answer
    it, by closing the cluster.  Returns once every worker is connected; a worker that exits
    first is a ``ChildProcessError``, one that does not connect within
    :data:`WORKER_START_TIMEOUT` a ``TimeoutError`` (both ``OSError``).
    """
    import time

    from dask.distributed import Client, Scheduler, SpecCluster
    from distributed.worker_memory import parse_memory_limit

    worker = {"cls": _worker_process_class(),
              "options": {"nthreads": 1, "host": "127.0.0.1", "dashboard": False,
                          "silence_logs": logging.CRITICAL, "death_timeout": 60,
                          "memory_limit": parse_memory_limit("auto", 1, workers,
                                                             logger=logging.getLogger(__name__))}}
    scheduler = {"cls": Scheduler, "options": {"host": "127.0.0.1", "port": 0,
                                                 "dashboard_address": "127.0.0.1:0"}}
    cluster = SpecCluster(workers={i: worker for i in range(workers)}, scheduler=scheduler,
                          silence_logs=logging.CRITICAL, name="sweep")
    client = Client(cluster)
    try:
        deadline = time.monotonic() + WORKER_START_TIMEOUT
        while len(client.nthreads()) < workers:
            codes = [w.process.returncode for w in cluster.workers.values()
                     if w.process is not None and w.process.returncode is not None]
            if codes:
                raise ChildProcessError(f"a worker of the local cluster exited with status "
                                        f"{codes[0]} before it connected (its messages are on "
                                        f"stderr)")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the local cluster's workers did not connect within "
                                   f"{WORKER_START_TIMEOUT:g} s")
            time.sleep(0.05)
    except BaseException:
        client.close()
        cluster.close()
        raise
    return client, cluster


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
            raise SchedulerUnreachable(client, _message(exc)) from None
        except (ValueError, TypeError) as exc:
            raise ValueError(f"client {client!r} is not a scheduler address ({_message(exc)}); "
                             f"give one like 'tcp://127.0.0.1:8786'") from None
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
    quiet = _quiet_distributed() if client_arg is None else contextlib.nullcontext()
    with quiet:
        return _run_on(client_arg, workers, task, todo, on_result, progress)


def _quiet_distributed():
    """Silence ``distributed``'s log handlers for the whole life of a local cluster.

    The cluster's own silence ends before its scheduler and comms are closed, and a comm closed
    then may log "Batched Comm Closed" at INFO: a line of stderr in the caller's notebook.  This
    holds the handlers at ``CRITICAL`` until the client and the cluster are closed, then restores
    their levels.
    """
    from distributed.utils import silence_logging_cmgr

    return silence_logging_cmgr(logging.CRITICAL)


def _run_on(client_arg, workers, task, todo, on_result, progress):
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


def _record(name, identity, pairs, fixed, settings, extra, t_max, dt):
    """``(arguments, fingerprint, attrs)`` of a sweep: the arguments that define its results
    (as JSON-ready data), the SHA-256 of their sorted JSON, and the Dataset's attributes."""
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
             "rtol": settings["rtol"], "atol": settings["atol"],
             "summation": settings["summation"], "summation_tol": settings["summation_tol"],
             "cluster_tol": settings["cluster_tol"],
             "sweep_arguments": text, "sweep_fingerprint": fingerprint}
    return arguments, fingerprint, attrs


# ---------------------------------------------------------------------------------------- sweep
@v.renamed_keywords(tol="cluster_tol")
def sweep(experiment, grid, *, t_max, store=None, client=None, n=None, d=None, fixed=None,
          method="rk4", dt=None, n_frames=101, rtol=1e-8, atol=1e-10,
          max_steps=DEFAULT_MAX_STEPS, summation="auto", summation_tol=1e-10, cluster_tol=1e-3,
          time_series=False, extra=None, progress=None, workers=None):
    """Run an experiment at every point of a grid on Dask and return the diagnostics as a Dataset.

    Point ``p`` of the grid runs ``setup(experiment, **fixed, **p)`` (or
    ``experiment(**fixed, **p)``), then ``simulate(model, x0, xi, t_max, dt, method,
    n_frames=..., rtol=..., atol=..., max_steps=..., summation=..., summation_tol=...)``, then
    :func:`usaav_edu.analysis.diagnostics.summary` of the run: the same numbers a serial loop gives, bit
    for bit (see the module's notes for the thread count above 300 tokens).

    Parameters
    ----------
    experiment : str or callable
        A name of :data:`usaav_edu.particles.experiments.EXPERIMENTS`, or a callable
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
        Further keywords held fixed at every point (``{"omega": 2.0}``).  The key ``noise``
        (in the grid or here) goes to :func:`usaav_edu.simulate` instead of the set-up
        (``usaav_edu.sweep.run.RUN_KEYWORDS``): the noise amplitude, with ``method="heun"``; the Brownian
        motions are seeded by the point's ``seed`` (0 when it has none), so a point repeats
        bit for bit.
    method, dt, n_frames, rtol, atol, max_steps, summation, summation_tol
        The settings of :func:`usaav_edu.simulate`, with its names and defaults, the same at
        every point.
    cluster_tol : float
        Cluster tolerance of the diagnostics (``summary``'s ``cluster_tol``), > 0.  The
        keyword ``tol=`` is deprecated.
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
    Examples
    --------
    Two points on a cluster of one worker thread in this process (without ``client`` the sweep
    starts worker processes, which takes longer):

    >>> import usaav_edu as ue
    >>> from distributed import Client
    >>> with Client(processes=False, n_workers=1, threads_per_worker=1,
    ...             dashboard_address=None) as client:
    ...     ds = ue.sweep("usa", {"beta": [0.5, 1.0]}, t_max=10.0,
    ...                   n=16, client=client, progress=False)
    >>> dict(ds.sizes), ds.beta.values.tolist()
    ({'beta': 2}, [0.5, 1.0])
    >>> ds.clusters.values.tolist(), ds.error.values.tolist()
    ([1.0, 1.0], ['', ''])
    """
    v.require_extra("sweep", "dask", "distributed", "xarray", "zarr", what="usaav_edu.sweep")
    pairs = _check_grid(grid)
    solver = {"method": method, "dt": dt, "n_frames": n_frames, "rtol": rtol, "atol": atol,
              "max_steps": max_steps, "summation": summation, "summation_tol": summation_tol}
    fixed, extra, settings = _settings(t_max, n, d, fixed, solver, cluster_tol, time_series,
                                       extra)
    name = _check_keywords(experiment, pairs, fixed)
    _check_noise(pairs, fixed, settings["method"])
    if progress is not None and not isinstance(progress, bool):
        raise TypeError(f"progress must be None, True or False, got {type(progress).__name__}")
    if workers is not None:
        workers = v.integer("workers", workers, minimum=1)
    if store is not None and not isinstance(store, (str, os.PathLike)):
        raise TypeError(f"store must be a path (str or os.PathLike), got {type(store).__name__}")

    identity = name if name is not None else _callable_identity("experiment", experiment)
    arguments, fingerprint, attrs = _record(name, identity, pairs, fixed, settings, extra, t_max,
                                            dt)

    layout = _Layout(pairs, settings, extra)
    arrays = layout.empty()
    target = None if store is None else _Store(store, layout, arguments, fingerprint, attrs)
    points = layout.points()
    if target is not None:
        last, finished, damaged = target.load(arrays)
        this_session = last + 1
        points = [p for p in points if not finished[p]]
        if damaged:
            warnings.warn(_damage_message(target.path, layout, damaged),
                          RuntimeWarning, stacklevel=2)
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
