"""Argument checks shared by the views.

Views draw what they are given, so they refuse what they cannot draw truthfully: a NaN or a
point off the sphere, a frame that does not exist, a non-positive duration.  Every check
raises TypeError (wrong kind) or ValueError (wrong value) naming the argument; nothing is
clamped or repaired.
"""
from __future__ import annotations

import difflib
import inspect
import numbers

import numpy as np

from .. import _validate as v
from ..particles.trajectory import Trajectory

real = v.real_scalar
integer = v.integer
shown = v.shown
FOREIGN = ("ipywidgets", "traitlets", "builtins")
"""Packages whose constructors take any keyword (traitlets only warns about unknown ones)."""


def accepted_keywords(cls) -> tuple[set, set]:
    """The keywords the constructor of the widget class ``cls`` accepts: ``(parameters, traits)``.

    The parameters are those of every ``__init__`` along ``cls``'s method resolution order up to
    ipywidgets' own (each passes what it does not read to the next); the traits are the public
    traits of the widget (``layout``, ``children``, ...), which ipywidgets sets from keywords.
    """
    params = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None or klass.__module__.split(".")[0] in FOREIGN:
            continue
        for p in inspect.signature(init).parameters.values():
            if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                params.add(p.name)
    traits = {t for t in cls.class_trait_names() if not t.startswith("_")}
    return params, traits


def keywords(cls, kwargs: dict, where: str | None = None) -> dict:
    """``kwargs`` if the constructor of ``cls`` accepts every one; else TypeError naming the first
    unknown keyword (with the closest accepted one) and listing the accepted ones.

    ipywidgets only warns about a keyword it does not know and drops it, so a misspelt
    ``widht=500`` would draw the default width without a word.
    """
    params, traits = accepted_keywords(cls)
    unknown = [k for k in kwargs if k not in params and k not in traits]
    if not unknown:
        return kwargs
    key = unknown[0]
    close = difflib.get_close_matches(str(key), sorted(params | traits), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    where = f"{cls.__name__}()" if where is None else where
    raise TypeError(f"{where} got an unexpected keyword argument {key!r}{hint}; it accepts "
                    f"{', '.join(sorted(params))} and the widget traits {', '.join(sorted(traits))}")


def flag(name: str, value) -> bool:
    """``value`` if it is True or False (NumPy booleans included)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {shown(value)}")
    return bool(value)


def text(name: str, value, *, optional: bool = False):
    """``value`` if it is a string (or None when ``optional``)."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        kind = "a string or None" if optional else "a string"
        raise TypeError(f"{name} must be {kind}, got {type(value).__name__}")
    return value


def color(name: str, value) -> str:
    """An HTML colour: ``#rgb``, ``#rrggbb``, ``rgb(...)`` or a colour name such as "black"."""
    from ipywidgets.widgets.trait_types import Color
    from traitlets import TraitError

    if not isinstance(value, str):
        raise TypeError(f"{name} must be an HTML colour string, got {type(value).__name__}")
    try:
        return Color().validate(None, value)
    except TraitError:
        raise ValueError(f"{name} must be an HTML colour such as '#1f5fa8' or 'black', "
                         f"got {shown(value)}") from None


def bounded_integer(name: str, value, lo: int, hi: int) -> int:
    """An integer in ``[lo, hi]``."""
    value = integer(name, value)
    if not lo <= value <= hi:
        raise ValueError(f"{name} must lie in [{lo}, {hi}], got {value}")
    return value


def bounded_real(name: str, value, lo: float, hi: float) -> float:
    """A finite real number in ``[lo, hi]``."""
    value = real(name, value)
    if not lo <= value <= hi:
        raise ValueError(f"{name} must lie in [{lo:g}, {hi:g}], got {value:g}")
    return value


def coords(value) -> tuple[int, int, int]:
    """Three distinct non-negative coordinate indices (checked against d by ``project_3d``)."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 3:
        raise TypeError(f"coords must be three coordinate indices, got {shown(value)}")
    if not all(isinstance(c, numbers.Integral) and not isinstance(c, (bool, np.bool_)) for c in value):
        raise TypeError(f"coords must be integers, got {shown(value)}")
    i, j, k = (int(c) for c in value)
    out = (i, j, k)
    if len(set(out)) != 3 or min(out) < 0:
        raise ValueError(f"coords must be three distinct non-negative indices, got {out}")
    return out


def points(name: str, value, *, minimum: int = 1, d: int | None = None) -> np.ndarray:
    """An ``(m, d)`` array of points of the unit sphere, ``m >= minimum`` (never renormalized)."""
    x = v.points_on_sphere(name, value)
    if x.shape[0] < minimum:
        raise ValueError(f"{name} must hold at least {minimum} points, got shape {x.shape}")
    if d is not None and x.shape[1] != d:
        raise ValueError(f"{name} must have dimension d = {d} like the tokens on view, got shape {x.shape}")
    return x


def trajectory(value, name: str = "trajectory") -> Trajectory:
    """A Trajectory whose frames a view can draw: x of shape (F, n, d), finite, unit vectors;
    t of shape (F,), finite; xi of shape (n,)."""
    if not isinstance(value, Trajectory):
        raise TypeError(f"{name} must be a usaav_edu Trajectory, got {type(value).__name__}")
    x = np.asarray(value.x)
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"{name}.x must have shape (F, n, d) with F, n >= 1, got {x.shape}")
    if x.shape[2] < 2:
        raise ValueError(f"{name}.x must have dimension d >= 2, got shape {x.shape}")
    if x.dtype == bool or not np.issubdtype(x.dtype, np.number) or np.iscomplexobj(x):
        raise TypeError(f"{name}.x must hold real numbers, got dtype {x.dtype}")
    bad = np.flatnonzero(~np.isfinite(x).all(axis=(1, 2)))
    if bad.size:
        raise ValueError(f"{name}.x must be finite (no NaN or inf); frames {bad[:5].tolist()} are not")
    err = float(np.max(np.abs(np.linalg.norm(x, axis=2) - 1.0)))
    if err > v.UNIT_TOL:
        raise ValueError(f"{name}.x must hold unit vectors (|x_i| = 1 within {v.UNIT_TOL:g}); "
                         f"the largest deviation is {err:.3g}")
    t = np.asarray(value.t)
    if t.shape != x.shape[:1] or not np.issubdtype(t.dtype, np.number) or not np.all(np.isfinite(t)):
        raise ValueError(f"{name}.t must hold {x.shape[0]} finite frame times, got shape {t.shape}")
    if np.any(np.diff(t) < 0):
        raise ValueError(f"{name}.t must be non-decreasing")
    if np.shape(value.xi) != x.shape[1:2]:
        raise ValueError(f"{name}.xi must have shape ({x.shape[1]},), got {np.shape(value.xi)}")
    return value


def energy_series(value, name: str = "trajectory"):
    """The (t, energy) of a Trajectory, both finite and of one length."""
    trajectory(value, name)
    t = np.asarray(value.t, dtype=float)
    e = np.asarray(value.energy)
    if e.shape != t.shape or not np.issubdtype(e.dtype, np.number) or not np.all(np.isfinite(e)):
        raise ValueError(f"{name}.energy must hold {t.shape[0]} finite values, one per frame, "
                         f"got shape {e.shape}")
    return t, e.astype(float)


def frame(value, n_frames: int) -> int:
    """A frame index in ``[-n_frames, n_frames)`` (negative counts from the end)."""
    value = integer("frame", value)
    if not -n_frames <= value < n_frames:
        raise ValueError(f"frame must lie in [{-n_frames}, {n_frames - 1}] for {n_frames} frames, "
                         f"got {value}")
    return value
