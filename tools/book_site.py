"""Sphinx extension: the published site's address, and pages whose console stays clean.

**The base URL.**  ``_config.yml`` names the address the book is published at under
``html.baseurl`` (Sphinx's ``html_baseurl``); every page then names its canonical address in a
``<link rel="canonical">``.  The environment variable ``USAAV_BOOK_BASEURL``, when set and not
empty, takes the place of that key for one build: the publishing workflow
(``.github/workflows/pages.yml``) sets it to the address GitHub Pages reports, so the key need
not be edited for each fork.  The address must be ``http(s)://<host>[/<path>]``; a trailing
``/`` is added.  Links between pages stay relative, so the site still works from ``file://``.

**A clean console.**  Two things in the themes' output logged errors on every page:

* sphinx-thebe registers an inline script (``const THEBE_JS_URL = ...``) after Sphinx's HTML
  builder has been set up.  Sphinx then holds that script twice, once as registered with the
  builder (file name ``None``) and once copied from its registry before writing (file name
  ``''``); the two do not compare equal, so each page declared the constant twice and the
  browser stopped at "Identifier 'THEBE_JS_URL' has already been declared".  Each page's
  script list is reduced here to one copy of each script, in its first position.
* The PyData theme, with no ``default_mode`` in ``html_context``, starts a reader's first visit
  with the empty mode and logs "Got invalid theme mode" before falling back to ``auto``.  The
  default here is ``auto`` (what the theme falls back to), unless the configuration names one.
"""
from __future__ import annotations

import os
import re

from sphinx.errors import ConfigError

BASEURL_ENV = "USAAV_BOOK_BASEURL"
BASEURL_FORM = re.compile(r"^https?://[^/\s?#]+(/[^\s?#]*)?$")


def base_url(configured: str, environ=None) -> str:
    """The site's base URL: ``$USAAV_BOOK_BASEURL`` when set, else ``configured``.

    '' (no canonical links) when both are empty; otherwise checked and ended with ``/``.
    """
    environ = os.environ if environ is None else environ
    override = environ.get(BASEURL_ENV, "").strip()
    value, source = (override, BASEURL_ENV) if override else (configured or "", "html.baseurl")
    if not isinstance(value, str):
        raise ConfigError(f"{source} must be a string, got {type(value).__name__}")
    value = value.strip()
    if not value:
        return ""
    if not BASEURL_FORM.match(value):
        raise ConfigError(f"{source} must look like https://<host>/<path>, got {value!r}")
    return value if value.endswith("/") else value + "/"


def script_key(script) -> tuple:
    """What makes two entries of a page's script list the same script."""
    if isinstance(script, str):
        return (script, 0, ())
    attributes = tuple(sorted((k, str(v)) for k, v in (script.attributes or {}).items()))
    return (script.filename or "", script.priority, attributes)


def drop_duplicates(scripts: list) -> list:
    """``scripts`` with each script kept once, at its first position (the list is changed)."""
    seen = set()
    unique = []
    for script in scripts:
        key = script_key(script)
        if key not in seen:
            seen.add(key)
            unique.append(script)
    scripts[:] = unique
    return scripts


def _on_config_inited(app, config):
    config.html_baseurl = base_url(config.html_baseurl)
    context = dict(config.html_context or {})
    context.setdefault("default_mode", "auto")
    config.html_context = context


def _on_html_page_context(app, pagename, templatename, context, doctree):
    # the same list object as the builder's, so scripts added by other handlers are seen too
    scripts = context.get("script_files")
    if scripts:
        drop_duplicates(scripts)


def setup(app):
    app.connect("config-inited", _on_config_inited, priority=100)
    # late, after the handlers that add page-specific scripts
    app.connect("html-page-context", _on_html_page_context, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
