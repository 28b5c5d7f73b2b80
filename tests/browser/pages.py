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

#: console errors known to be harmless: none.  (The book's pages used to log two, a duplicate
#: sphinx-thebe script and the theme's empty default mode; tools/book_site.py removes both.)
HARMLESS: list[re.Pattern] = []

#: console warnings known to be harmless, each with the script (or page) it must come from:
#: the widget manager's schema library notes a union type in its own schema when it compiles it,
#: and the software WebGL of headless chromium notes that reading pixels back stalls its GPU
HARMLESS_WARNINGS: list[tuple[re.Pattern, re.Pattern]] = [
    (re.compile(r"^strict mode: use allowUnionTypes to allow union type keyword at "
                r'"#/properties/state/[^"]*" \(strictTypes\)$'),
     re.compile(r"/widgets-js/embed-amd\.js(\?|$)")),
    (re.compile(r"GL Driver Message \(OpenGL, Performance, \w+, \w+\): "
                r"GPU stall due to ReadPixels( \(this message will no longer repeat\))?$"),
     re.compile(r"^file://.*\.html$")),
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
    """Whether a console error is on the documented harmless list (HARMLESS)."""
    return any(p.search(text) for p in HARMLESS)


def is_harmless_warning(text: str, location_url: str = "") -> bool:
    """Whether a console warning is on the narrow list of harmless ones, from where it must
    come from."""
    return any(p.search(text) and where.search(location_url) for p, where in HARMLESS_WARNINGS)


def site_pages(site: Path = SITE) -> list[Path]:
    """Every built page of the book (not the widget JavaScript, MathJax or static files), sorted."""
    if not site.is_dir():
        return []
    skip = {"_static", "_sources", "_images", "widgets-js", "mathjax"}
    return [p for p in sorted(site.rglob("*.html")) if not skip & set(p.relative_to(site).parts)]


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
