"""The book's claims, checked by the cells that compute them.

A chapter states a claim (the energy rises, the tokens have collapsed, the slices are Dirac
masses) and a check cell measures it.  ``claim(holds, message)`` is that check:

* by default (``USAAV_EDU_CHECKS`` unset or ``strict``) a claim that does not hold raises
  :class:`~usaav_edu.errors.ClaimFailed` (an ``AssertionError``), so the book build and nbval stop at it;
* with ``USAAV_EDU_CHECKS=warn`` it prints one line, ``check failed: <message>``, and returns
  ``False``, so a learner who changed a parameter runs the whole chapter and reads every claim
  that no longer holds.

The message names the claim, the measured value and what to change, e.g.
``"collapse to one point: diameter 3.1e-02 at t_max = 20 is not below 1e-6; increase t_max"``.
A chapter checks the physics (has it collapsed, is it spread) before the numerics (round-off,
quadrature), so that the first line a learner reads names the real reason.
"""
from __future__ import annotations

import os

from .errors import ClaimFailed

VARIABLE = "USAAV_EDU_CHECKS"
MODES = ("strict", "warn")




def mode() -> str:
    """``"strict"`` or ``"warn"``, from the environment variable ``USAAV_EDU_CHECKS``."""
    value = os.environ.get(VARIABLE, "").strip().lower() or "strict"
    if value not in MODES:
        raise ValueError(f"{VARIABLE}={os.environ[VARIABLE]!r}: expected one of {', '.join(MODES)}")
    return value


def claim(holds, message: str) -> bool:
    """Check one claim: ``True`` if ``holds``; otherwise raise, or print one line in warn mode.

    ``holds`` is a bool (a NumPy bool too); ``message`` says what was claimed, what was
    measured and what to change.
    """
    warn = mode() == "warn"
    if not isinstance(message, str) or not message:
        raise TypeError("message must be a non-empty string naming the claim")
    try:
        ok = bool(holds)
    except (TypeError, ValueError) as err:  # an array of several truth values, say
        raise TypeError(f"holds must be a single truth value, not {type(holds).__name__}") from err
    if ok:
        return True
    if warn:
        print("check failed: " + " ".join(message.split()))
        return False
    raise ClaimFailed(message)
