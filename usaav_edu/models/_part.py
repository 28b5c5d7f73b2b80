"""What the modules of the three parts share: refusing an object that is no part, checking the
output of a part of one's own, and reading a built-in part back from its ``params()``.

The messages name the part (``"gauge"``, ``"bias"``, ``"profile"``), so that each module's
errors read as its own.
"""

import numpy as np

from .. import _validate as v
from ..dynamics.parts import missing


def check_part(part, name, built_in, protocol, method):
    """``part`` itself if it is one of ``built_in`` or gives what ``protocol`` asks.

    Parameters
    ----------
    part : object
        The argument ``name`` (``"gauge"`` or ``"bias"``).
    name : str
        The part's name, also that of its module ``usaav_edu.models.<name>s``.
    built_in : tuple of type
        The part's classes in its module.
    protocol : type
        The least a part of one's own must give (:mod:`usaav_edu.dynamics.parts`).
    method : str
        That method and what it returns, for the message.

    Returns
    -------
    object
        ``part``.

    Raises
    ------
    TypeError
        Naming the object and what it lacks.
    """
    if isinstance(part, built_in):
        return part
    lacks = missing(part, protocol)
    if lacks:
        raise TypeError(f"{name} must be a {name} of usaav_edu.models.{name}s or an object with a "
                        f"method {method}, got {v.shown(part)}, which lacks {', '.join(lacks)}")
    return part


def user_output(part, name, method, xi, shape, tokens):
    """The output of ``part.<method>(xi)`` as float64, refused unless of ``shape`` and finite.

    Parameters
    ----------
    part : object
        A part of one's own.
    name : str
        The part's name in the messages.
    method : str
        The method called with the labels.
    xi : ndarray
        ``(n,)`` labels.
    shape : tuple of int
        The shape the output must have.
    tokens : str
        What the shape is for, in the message (``"3 tokens"``).

    The ValueError it raises names the part.
    """
    try:
        out = np.asarray(getattr(part, method)(xi), dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} {part!r}: {method}(xi) did not give an array of numbers: "
                         f"{exc}") from None
    if out.shape != shape:
        raise ValueError(f"{name} {part!r}: {method}(xi) must have shape "
                         f"({', '.join(map(str, shape))}) for {tokens}, got {out.shape}")
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{name} {part!r}: {method}(xi) must be finite")
    return out


def params_kind(p, name, keys):
    """The kind of the part described by the dict ``p``, whose keys must be those of its kind.

    Parameters
    ----------
    p : dict
        ``{"kind": ..., its parameters}``, the output of a built-in part's ``params()``.
    name : str
        The part's name in ``params[name]``.
    keys : dict
        The parameter names of each kind, ``{kind: set of str}``.

    Returns
    -------
    str

    Raises
    ------
    TypeError, ValueError
        If ``p`` is not a dict, the kind is unknown or a key is missing or extra.
    """
    if not isinstance(p, dict):
        raise TypeError(f"the {name} parameters must be a dict with a 'kind', got "
                        f"{type(p).__name__} {v.shown(p)}")
    kind = p.get("kind")
    if kind not in keys:
        raise ValueError(f"params['{name}']['kind'] must be one of {sorted(keys)}, got {kind!r}")
    rest = set(p) - {"kind"}
    if rest != keys[kind]:
        raise ValueError(f"params['{name}'] of kind {kind!r} must have the keys "
                         f"{sorted(keys[kind])}, got {sorted(rest)}")
    return kind
