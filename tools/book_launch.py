"""Sphinx extension: the repository link and the launch buttons follow ``repository.url``.

The book's ``_config.yml`` names the repository in one place, ``repository.url``.  Jupyter Book
turns that into the theme option ``repository_url``, and ``launch_buttons`` into the theme's
launch settings (Binder, Colab, JupyterHub).  The theme cannot build launch links without a
repository, and Jupyter Book refuses ``use_repository_button`` without one, so this extension
decides both from the URL, before the theme reads them:

* ``repository.url`` empty (the default): no repository link and no launch buttons; the pages
  still offer the chapter's ``.ipynb`` for download.
* ``repository.url`` set (``https://github.com/<owner>/<repository>``): every page links to the
  repository, and every notebook page has launch buttons for the services named under
  ``launch_buttons`` (a JupyterHub button only where ``jupyterhub_url`` is set).

A URL that is not of the form ``https://<host>/<owner>/<repository>`` is an error.
"""
from __future__ import annotations

import re

from sphinx.errors import ConfigError

LAUNCH_KEYS = ("binderhub_url", "colab_url", "jupyterhub_url", "deepnote_url", "jupyterlite_url", "thebe")
URL_FORM = re.compile(r"^https://[^/\s]+/[^/\s]+/[^/\s]+?/?$")


def repository_url(theme_options: dict) -> str:
    """The repository URL given in ``_config.yml`` ('' when unset), checked for its form."""
    url = theme_options.get("repository_url") or ""
    if not isinstance(url, str):
        raise ConfigError(f"repository.url must be a string, got {type(url).__name__}")
    url = url.strip()
    if url and not URL_FORM.match(url):
        raise ConfigError(f"repository.url must look like https://github.com/<owner>/<repository>, "
                          f"got {url!r}")
    return url.rstrip("/")


def apply(theme_options: dict) -> dict:
    """Theme options with the repository link and launch buttons on exactly when a URL is set."""
    out = dict(theme_options)
    url = repository_url(out)
    launch = dict(out.get("launch_buttons") or {})
    if url:
        out["repository_url"] = url
        out["use_repository_button"] = True
        out["launch_buttons"] = launch
    else:
        out["use_repository_button"] = False
        out["launch_buttons"] = {k: v for k, v in launch.items() if k not in LAUNCH_KEYS}
    return out


def _on_config_inited(app, config):
    config.html_theme_options = apply(config.html_theme_options or {})


def setup(app):
    app.connect("config-inited", _on_config_inited, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
