"""Input checks shared by the public functions.

Every check raises ``TypeError`` (wrong kind of object) or ``ValueError``
(right kind, wrong value) with a message that names the argument and says
what was expected.  Nothing is repaired: a non-unit vector, a NaN or a
prompt id out of range is an error.
"""

import functools
import importlib.util
import inspect
import numbers
import reprlib
import warnings

import numpy as np

UNIT_TOL = 1e-10

_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxlist, _SHORT.maxtuple, _SHORT.maxdict = 3, 6, 6, 4
_SHORT.maxstring, _SHORT.maxother = 80, 80


def shown(value):
    """``repr(value)`` cut short for a message: three levels of nesting, a few items, 80 characters.

    A message must not fail on the argument it names: the full repr of a list nested 10,000
    deep raises RecursionError, that of a large array fills the screen.
    """
    try:
        return _SHORT.repr(value)
    except Exception:  # an object whose repr fails
        return f"<{type(value).__name__} object>"


def require_extra(extra, *modules, what):
    """Check that ``modules`` are installed, else raise ``ModuleNotFoundError`` naming the extra.

    The core installation (numpy, numba, llvmlite, tqdm) imports the package and runs
    ``simulate``; the widgets, figures and quizzes need ``usaav-edu[widgets]``, the sweeps
    ``usaav-edu[sweep]`` (``pyproject.toml``).  ``what`` names the feature asked for.  Only looks
    the modules up; nothing is imported.
    """
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise ModuleNotFoundError(
            f"{what} needs {', '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} not "
            f'installed: pip install "usaav-edu[{extra}]"', name=missing[0])


def real_scalar(name, value, *, minimum=None, strict=False, maximum=None):
    """Return ``value`` as a finite float, checking an optional lower/upper bound."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    try:
        value = float(value)
    except OverflowError:
        raise ValueError(f"{name} must be finite, got an integer of {len(str(abs(int(value))))} "
                         f"digits, beyond the floating-point range") from None
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if minimum is not None:
        if strict and value <= minimum:
            raise ValueError(f"{name} must be > {minimum}, got {value}")
        if not strict and value < minimum:
            raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    return value


def integer(name, value, *, minimum=None):
    """Return ``value`` as an int, checking an optional lower bound."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def choice(name, value, options):
    """Check that ``value`` is one of ``options`` (strings)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, one of {sorted(options)}, got {type(value).__name__}")
    if value not in options:
        raise ValueError(f"{name} must be one of {sorted(options)}, got {shown(value)}")
    return value


def as_array(name, value, expected):
    """``np.asarray(value)`` for an argument that must be ``expected`` (an array of some kind):
    None, a string and a ragged nested list are refused with a TypeError naming ``name``."""
    if value is None or isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be {expected}, got {type(value).__name__}")
    try:
        return np.asarray(value)
    except ValueError:  # ragged nested lists
        raise TypeError(f"{name} must be {expected}, got a ragged {type(value).__name__}") from None


def float_array(name, value, *, ndim=None):
    """Return ``value`` as a finite float64 array with ``ndim`` dimensions."""
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{name} must be an array of numbers, got {type(value).__name__}")
    try:
        arr = np.asarray(value)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{name} must be an array of numbers: {exc}") from None
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return arr


def points_on_sphere(name, value):
    """Return an ``(n, d)`` array of unit vectors, n >= 1, d >= 2; never renormalizes."""
    x = float_array(name, value, ndim=2)
    n, d = x.shape
    if n < 1:
        raise ValueError(f"{name} must hold at least one point, got shape {x.shape}")
    if d < 2:
        raise ValueError(f"{name} must have dimension d >= 2 (shape (n, d)), got d = {d}")
    err = np.max(np.abs(np.linalg.norm(x, axis=1) - 1.0))
    if err > UNIT_TOL:
        raise ValueError(
            f"{name} must hold unit vectors (|x_i| = 1 within {UNIT_TOL:g}); the largest deviation is "
            f"{err:.3g}. Normalize it yourself if that is what you mean."
        )
    return np.ascontiguousarray(x)


def orthogonal_frames(name, value, d=None):
    """Return a ``(K, d, d)`` array of orthogonal matrices."""
    f = float_array(name, value, ndim=3)
    k, d1, d2 = f.shape
    if k < 1 or d1 != d2 or d1 < 2:
        raise ValueError(f"{name} must have shape (K, d, d) with K >= 1 and d >= 2, got {f.shape}")
    if d is not None and d1 != d:
        raise ValueError(f"{name} must have d = {d}, got shape {f.shape}")
    err = np.max(np.abs(np.einsum("kji,kjl->kil", f, f) - np.eye(d1)))
    if err > 1e-9:
        raise ValueError(f"{name} must be orthogonal matrices (F^T F = I within 1e-9); the error is {err:.3g}")
    return f


def output_path(name, path):
    """Return ``path`` (a str or ``os.PathLike``) as a str naming a file that can be written.

    The path is used exactly as given: no suffix is added.  Refused, with the
    reason: an empty path, a path holding a NUL character, a path ending in a
    separator or naming an existing directory, and a path whose folder does not
    exist, is not a folder or is not writable.
    """
    import os

    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{name} must be a file path (str or os.PathLike), got {type(path).__name__}")
    path = os.fspath(path)
    if not isinstance(path, str):
        raise TypeError(f"{name} must be a file path (str or os.PathLike), got a path of {type(path).__name__}")
    if path == "":
        raise ValueError(f"{name} must name a file, got an empty path")
    if "\0" in path:
        raise ValueError(f"{name} must not contain a NUL character, got {shown(path)}")
    seps = tuple(s for s in (os.sep, os.altsep) if s)
    if path.endswith(seps) or os.path.isdir(path):
        raise ValueError(f"{name} must name a file, got the directory {path!r}")
    folder = os.path.dirname(path) or os.curdir
    if not os.path.isdir(folder):
        what = "is not a folder" if os.path.exists(folder) else "does not exist"
        raise ValueError(f"{name}: the folder {folder!r} of {path!r} {what}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{name}: the folder {folder!r} of {path!r} is not writable")
    return path


# ------------------------------------------------------------------ deprecated spellings
def renamed_keywords(**renames):
    """Decorator: the keyword ``old`` of ``old="new"`` still works, for one release, as ``new``.

    A call with the old keyword gives a ``DeprecationWarning`` naming the new one and runs as if
    the new one had been given; a call with both is a ``TypeError``.  The signature shown
    (``inspect.signature``, ``help``) is the new one.
    """
    def decorate(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            for old, new in renames.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{f.__name__}() got both {new}= and its deprecated "
                                        f"spelling {old}=; give {new}= only")
                    warnings.warn(f"{f.__name__}({old}=...) is deprecated and will be removed in "
                                  f"the next release; write {f.__name__}({new}=...)",
                                  DeprecationWarning, stacklevel=2)
                    kwargs[new] = kwargs.pop(old)
            return f(*args, **kwargs)
        return wrapper
    return decorate


def old_positional_order(*old):
    """Decorator: calls in the positional order ``old`` keep their old meaning for one release.

    The decorated function has the new signature.  A call is read in the old order, with a
    ``DeprecationWarning`` that shows the call with keywords, when it gives more positional
    arguments than the new signature takes, or when a positional argument's old name differs
    from its new name and none of the old names is also given by keyword (which would make the
    call one in the new order).  Otherwise it is passed on unchanged.  So with
    ``f(beta=1.0, *, omega=1.0)`` and old order ``("omega", "beta")``: ``f(2.0, 1.0)`` and
    ``f(2.0)`` warn and mean ``omega=2.0``; ``f(2.0, omega=1.0)`` and ``f(beta=2.0)`` are
    calls in the new order.
    """
    def decorate(f):
        new = [p.name for p in inspect.signature(f).parameters.values()
               if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]

        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            if len(args) > len(old):
                raise TypeError(f"{f.__name__}() takes at most {len(new)} positional "
                                f"argument{'s' * (len(new) != 1)}, got {len(args)}")
            names = old[:len(args)]
            new_order = len(args) <= len(new) and (
                list(names) == new[:len(args)] or any(k in kwargs for k in names))
            if new_order:
                return f(*args, **kwargs)
            both = [k for k in names if k in kwargs]
            if both:
                raise TypeError(f"{f.__name__}() got {both[0]} both by position and by keyword")
            spelled = ", ".join(f"{k}=..." for k in names)
            warnings.warn(f"{f.__name__}({', '.join(names)}) by position is deprecated: the "
                          f"order is now {f.__name__}{inspect.signature(f)} and the old one goes "
                          f"in the next release; write {f.__name__}({spelled})",
                          DeprecationWarning, stacklevel=2)
            return f(**dict(zip(names, args, strict=True)), **kwargs)
        return wrapper
    return decorate
