"""Sphinx extension: the scripts of the live views, on the pages that have one.

A live view (``usaav_edu.widgets.LiveView``) is an element of class ``usaav-live``.  On every page
whose body holds one, this extension appends, at the end of the body:

* three.js's classic build, ``<site>/live/three.min.js`` (``make widget-js`` copies it from the
  pinned npm package into ``_static_widgets/live/``), loaded with RequireJS's ``define`` set aside
  for the moment, so that three.js sets the global ``THREE`` instead of registering an anonymous
  AMD module (the widget pages load RequireJS first);
* one inline script made from the two modules of ``_static/live/``: the integrator
  ``usaav_live.mjs`` and the view ``usaav_live_view.mjs``, each in its own function scope with its
  ``export`` keywords taken away, the first handing ``createSimulation``, ``uniformSphere`` and
  ``bookDt`` to the second.  Inline, it runs from ``file://``, where a browser refuses to fetch a
  module script; the modules themselves stay the one source (the integrator is the file node runs
  in ``tests/test_live_module.py``) and are published as they are under ``_static/live/``.

Pages without a live view are left as they were.
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIVE = ROOT / "_static" / "live"
MARKER = 'class="usaav-live"'
THREE = "live/three.min.js"
EXPORT = re.compile(r"^export (?=(?:const|function|class|let) )", re.M)
HANDED = ("createSimulation", "uniformSphere", "bookDt")


def without_exports(source: str) -> str:
    """``source`` with the ``export`` keyword taken off its top-level declarations; a module
    that exports in another form (``export {...}``, ``export default``) is refused."""
    if re.search(r"^export (?!const |function |class |let )", source, re.M):
        raise ValueError("a live-view module may export only declarations "
                         "(export const/function/class/let)")
    if re.search(r"^import |\bimport\(", source, re.M):
        raise ValueError("a live-view module must not import: the page holds it inline")
    return EXPORT.sub("", source)


def inline_script(integrator: str, view: str) -> str:
    """The inline script of a page with live views (module docstring)."""
    handed = ", ".join(HANDED)
    return ("(() => {\n\"use strict\";\nconst live = (() => {\n" + without_exports(integrator)
            + f"\nreturn {{ {handed} }};\n}})();\n(() => {{\n" + without_exports(view)
            + "\nstartLiveViews(live);\n})();\n})();\n")


def scripts(three_url: str, integrator: str, view: str) -> str:
    """The HTML appended to a page with live views."""
    if "</script" in integrator or "</script" in view:
        raise ValueError("a live-view module must not contain '</script'")
    return ('\n<script>window.__usaavDefine = window.define; window.define = undefined;</script>'
            f'\n<script src="{three_url}"></script>'
            '\n<script>window.define = window.__usaavDefine; delete window.__usaavDefine;</script>'
            f'\n<script>\n{inline_script(integrator, view)}</script>\n')


def _on_html_page_context(app, pagename, templatename, context, doctree):
    body = context.get("body")
    if not body or MARKER not in body:
        return
    integrator = (LIVE / "usaav_live.mjs").read_text(encoding="utf-8")
    view = (LIVE / "usaav_live_view.mjs").read_text(encoding="utf-8")
    context["body"] = body + scripts(context["pathto"](THREE, 1), integrator, view)


def setup(app):
    app.connect("html-page-context", _on_html_page_context, priority=700)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
