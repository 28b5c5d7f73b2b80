"""Checks for the book's "complete the function" exercises.

An exercise is a code cell (tagged ``exercise-stub``) that defines a function whose body is
``raise NotImplementedError("...what to write...")``, followed by a check cell (tagged
``exercise-check``) that calls :func:`check` on it.  The check runs the learner's function on
cases whose answers the package computes, and prints one line:

* ``not done yet: ...`` while the function still raises ``NotImplementedError`` (as shipped),
* ``correct: ...`` when every case agrees,
* ``wrong: f(...) should be ..., got ...`` (plus the case's hint) at the first case that
  does not, or when the function raises another error.

It returns the :class:`Outcome`.  A wrong answer is always reported, never passed; the check
itself never raises for what the learner wrote, so "Run All" goes on.
"""
from __future__ import annotations

import enum
import reprlib
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

_repr = reprlib.Repr()
_repr.maxstring = 60
_repr.maxother = 60


class Outcome(enum.Enum):
    NOT_DONE = "not done yet"
    CORRECT = "correct"
    WRONG = "wrong"


@dataclass(frozen=True)
class Case:
    """One call ``func(*args, **kwargs)`` and the answer it must give."""

    args: tuple
    expected: Any
    kwargs: dict | None = None
    hint: str = ""


def _shown(value) -> str:
    if isinstance(value, np.ndarray):
        with np.printoptions(precision=6, threshold=8, edgeitems=2, linewidth=200):
            return " ".join(np.array2string(value).split())
    if isinstance(value, float):
        return f"{value:.10g}"
    return _repr.repr(value)


def agrees(got, expected, *, rtol: float = 1e-8, atol: float = 1e-10) -> bool:
    """``got`` equals ``expected``: numbers and arrays to ``|got - expected| <= atol + rtol
    |expected|`` with the same shape, sequences element by element, anything else by ``==``."""
    if isinstance(expected, (bool, np.bool_, str, type(None))):
        return type(got) is type(expected) and got == expected if isinstance(expected, str) \
            else got == expected
    if isinstance(expected, (int, float, complex, np.number, np.ndarray)):
        try:
            g = np.asarray(got, dtype=np.result_type(np.asarray(expected), float))
        except (TypeError, ValueError):
            return False
        e = np.asarray(expected)
        return g.shape == e.shape and bool(np.all(np.isfinite(g) == np.isfinite(e))) and \
            bool(np.allclose(g, e, rtol=rtol, atol=atol, equal_nan=True))
    if isinstance(expected, (list, tuple)):
        return isinstance(got, (list, tuple, np.ndarray)) and len(got) == len(expected) and \
            all(agrees(g, e, rtol=rtol, atol=atol) for g, e in zip(got, expected, strict=True))
    if isinstance(expected, dict):
        return isinstance(got, dict) and got.keys() == expected.keys() and \
            all(agrees(got[k], expected[k], rtol=rtol, atol=atol) for k in expected)
    return bool(got == expected)


#: the most characters in a line of a check's report (the book's text column, in code type)
WIDTH = 76


def _say(text: str) -> None:
    """Print ``text`` in lines of at most ``WIDTH`` characters, the later ones indented (a word
    longer than a line, a long number say, stays whole)."""
    print(textwrap.fill(text, WIDTH, subsequent_indent="  ", break_long_words=False,
                        break_on_hyphens=False))


def check(func: Callable, cases, *, rtol: float = 1e-8, atol: float = 1e-10,
          compare: Callable[[Any, Any], bool] | None = None) -> Outcome:
    """Run ``func`` on ``cases`` (each a :class:`Case` or a pair ``(args, expected)``), print
    one line and return the outcome.  ``compare(got, expected)`` replaces :func:`agrees`."""
    if not callable(func):
        raise TypeError(f"func must be the function to check, not {type(func).__name__}")
    cases = [c if isinstance(c, Case) else Case(tuple(c[0]), c[1]) for c in cases]
    if not cases:
        raise ValueError("cases must hold at least one case")
    name = getattr(func, "__name__", "the function")
    for c in cases:
        shown_args = ", ".join([_shown(a) for a in c.args]
                               + [f"{k}={_shown(a)}" for k, a in (c.kwargs or {}).items()])
        try:
            got = func(*c.args, **(c.kwargs or {}))
        except NotImplementedError as err:
            what = f" ({err})" if str(err) else ""
            _say(f"not done yet: {name} still raises NotImplementedError{what}")
            return Outcome.NOT_DONE
        except Exception as err:  # the learner's code failed: say how, do not stop the chapter
            _say(f"wrong: {name}({shown_args}) raised {type(err).__name__}: {err}"
                 + (f"; hint: {c.hint}" if c.hint else ""))
            return Outcome.WRONG
        same = compare(got, c.expected) if compare is not None else \
            agrees(got, c.expected, rtol=rtol, atol=atol)
        if not same:
            _say(f"wrong: {name}({shown_args}) should be {_shown(c.expected)}, got {_shown(got)}"
                 + (f"; hint: {c.hint}" if c.hint else ""))
            return Outcome.WRONG
    _say(f"correct: {name} agrees with the package on all {len(cases)} cases")
    return Outcome.CORRECT
