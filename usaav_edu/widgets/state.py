"""Size of the widget state a page embeds for a widget."""
from __future__ import annotations

import json


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
