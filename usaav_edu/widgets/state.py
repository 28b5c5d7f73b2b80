"""Size of the widget state a page embeds for a widget, and whether a kernel is behind it."""
from __future__ import annotations

import json
import os

from . import _checks as c

#: environment variable that marks an execution whose widget state is saved into a static page
STATIC_ENV = "USAAV_EDU_STATIC_PAGE"


def live_kernel(live: bool | None = None) -> bool:
    """Whether controls that need Python should be enabled.

    ``live`` True or False is returned as is; ``None`` reads the environment variable
    ``USAAV_EDU_STATIC_PAGE``: unset, empty or ``"0"`` means a live kernel, ``"1"`` a static page
    (any other value is refused).

    Parameters
    ----------
    live : bool or None
        The choice, or None to read the environment.

    Returns
    -------
    bool

    Raises
    ------
    TypeError, ValueError
        For a ``live`` that is not a bool or None, or an unknown value of the variable.
    """
    if live is not None:
        if not isinstance(live, bool):
            raise TypeError(f"live must be True, False or None, got {type(live).__name__}")
        return live
    value = os.environ.get(STATIC_ENV, "")
    if value not in ("", "0", "1"):
        raise ValueError(f"environment variable {STATIC_ENV} must be unset, '0' or '1', got {c.shown(value)}")
    return value != "1"



def embedded_state_bytes(widget) -> int:
    """Bytes of JSON the static page embeds for ``widget`` and every widget it refers to.

    Counts full states (defaults included, as a saved notebook stores them) with binary
    buffers base64-encoded, which is what the page carries.

    Parameters
    ----------
    widget : ipywidgets.Widget
        The root widget.

    Returns
    -------
    int
    """
    import ipywidgets
    from ipywidgets.embed import dependency_state

    if not isinstance(widget, ipywidgets.Widget):
        raise TypeError(f"widget must be an ipywidgets Widget, got {type(widget).__name__}")

    return len(json.dumps(dependency_state(widget, drop_defaults=False)))
