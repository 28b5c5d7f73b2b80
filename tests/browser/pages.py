"""Helpers for the browser checks of the built book (``_build/html``).

Kept free of pytest so the same code can be imported by the tests and used by hand.
"""
from __future__ import annotations

import io
import json
import os
import re
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
#: the built book; USAAV_BOOK_HTML points the checks at another build
SITE = Path(os.environ.get("USAAV_BOOK_HTML", ROOT / "_build" / "html")).resolve()
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--enable-unsafe-swiftshader",
                 "--disable-background-networking"]

WIDGET_STATE = "application/vnd.jupyter.widget-state+json"

#: console noise known to be harmless (DESIGN.md, "Widgets in the live notebook ...")
HARMLESS = [
    re.compile(r"Identifier 'THEBE_JS_URL' has already been declared"),  # sphinx-thebe twice
    re.compile(r"Got invalid theme mode"),                                # pydata theme
    re.compile(r"strictTypes"),                                           # ajv warnings
]


def widget_pages(site: Path = SITE) -> list[Path]:
    """Every built page that embeds widget state, sorted."""
    if not site.is_dir():
        return []
    skip = {"_static", "_sources", "widgets-js", "_images"}
    pages = []
    for page in sorted(site.rglob("*.html")):
        if skip & set(page.relative_to(site).parts):
            continue
        if WIDGET_STATE in page.read_text(encoding="utf-8", errors="replace"):
            pages.append(page)
    return pages


def pages_with(css_class: str, site: Path = SITE) -> list[Path]:
    """Built pages with widgets whose page source names ``css_class`` (an Explorer, a twin view...)."""
    return [p for p in widget_pages(site) if css_class in p.read_text(encoding="utf-8", errors="replace")]


#: the book's widget JavaScript (``make widget-js``), used by pages exported in the tests
WIDGET_JS = ROOT / "_static_widgets" / "widgets-js"

EXPORT_TEMPLATE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{{title}}</title>
<script src="{js}/require.js"></script>
<script src="{js}/require-config.js"></script>
</head><body>
{{snippet}}
</body></html>
"""


def export_page(widget, path: Path, title: str) -> Path:
    """Write ``widget`` to ``path`` as a static page with the book's own widget JavaScript.

    The state is saved without defaults, as a page that holds only what differs from them.
    """
    from ipywidgets.embed import dependency_state, embed_minimal_html

    if not (WIDGET_JS / "embed-amd.js").is_file():
        raise FileNotFoundError(f"{WIDGET_JS} is missing: `make widget-js` installs the widget JavaScript")
    url = WIDGET_JS.as_uri()
    embed_minimal_html(path, views=[widget], title=title,
                       state=dependency_state(widget, drop_defaults=True),
                       template=EXPORT_TEMPLATE.format(js=url), requirejs=False,
                       embed_url=f"{url}/embed-amd.js", cors=False)
    return path


def wait_for(predicate, timeout: float = 60.0, pause: float = 0.25):
    """``predicate()`` once it is truthy, polled every ``pause`` seconds for up to ``timeout``;
    after that, its last value."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(pause)
    return predicate()


def widget_state(page: Path) -> dict:
    """The widget state embedded in ``page`` (model id -> model)."""
    text = page.read_text(encoding="utf-8")
    m = re.search(r'<script type="application/vnd\.jupyter\.widget-state\+json">(.*?)</script>',
                  text, re.S)
    if m is None:
        raise ValueError(f"{page} embeds no widget state")
    return json.loads(m.group(1))["state"]


def is_harmless(text: str, location_url: str = "") -> bool:
    """Whether a console error is on the documented harmless list."""
    if any(p.search(text) for p in HARMLESS):
        return True
    # the theme asks for a favicon the book does not ship
    return "Failed to load resource" in text and location_url.endswith("favicon.ico")


def image_stats(png: bytes) -> dict:
    """Simple statistics of a screenshot: how much of it is coloured and how varied it is."""
    from PIL import Image

    img = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=float) / 255.0
    mx, mn = img.max(axis=2), img.min(axis=2)
    saturation = np.where(mx > 0, (mx - mn) / np.maximum(mx, 1e-9), 0.0)
    return {
        "std": float(img.std()),
        "colored_fraction": float(np.mean(saturation > 0.35)),
        "distinct_colors": int(len(np.unique((img * 255).astype(np.uint8).reshape(-1, 3), axis=0))),
    }


def is_blank(png: bytes) -> bool:
    """A canvas counts as blank when it is (nearly) one flat colour.

    A drawn sphere (shaded, with reference circles and tokens) has a pixel standard deviation
    near 0.1 and thousands of distinct colours; a cleared canvas has one colour.  Tokens are not
    required: after a collapse they cover only a few pixels.
    """
    s = image_stats(png)
    return s["std"] < 0.02 or s["distinct_colors"] < 32


def image_change(a: bytes, b: bytes) -> float:
    """Fraction of pixels that differ noticeably between two screenshots of one canvas."""
    from PIL import Image

    x = np.asarray(Image.open(io.BytesIO(a)).convert("RGB"), dtype=float)
    y = np.asarray(Image.open(io.BytesIO(b)).convert("RGB"), dtype=float)
    if x.shape != y.shape:
        return 1.0
    return float(np.mean(np.abs(x - y).max(axis=2) > 24))
