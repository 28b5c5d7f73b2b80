"""Helpers for the browser checks of the built book (``_build/html``).

Kept free of pytest so the same code can be imported by the tests and used by hand.
"""
from __future__ import annotations

import io
import json
import os
import re
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
