"""The density views of the built book (DensityView in mode "density") draw and play offline.

For the first built page with a density view: its sphere is painted with the colour map of the
density (most of the sphere's pixels lie on the map's ramp, which no other view of the book
uses), the page's widget state holds one mesh per kept frame, and pressing play changes the
picture: the painted colours move on the sphere.  (test_widget_pages.py checks every page's
canvases, players and console as well; this check is about the density itself.)
"""
from __future__ import annotations

import io
import time

import numpy as np
import pytest

from tools.print_pdf import wait_canvases

from .pages import SITE, image_change, is_blank, pages_with, widget_state

DENSITY_CLASS = "usaav-density-view"
PAGES = pages_with(DENSITY_CLASS)
RENDER_TIMEOUT_S = 60


def ramp_fraction(png: bytes, cmap: str = "viridis", tol: float = 18.0) -> float:
    """Fraction of a screenshot's non-white pixels whose colour lies within ``tol`` (0-255
    units) of the colour map ``cmap``: how much of the drawing is painted with it."""
    import matplotlib
    from PIL import Image

    img = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=float)
    px = img.reshape(-1, 3)
    px = px[np.any(px < 235, axis=1)]                        # leave the white background out
    if len(px) == 0:
        return 0.0
    ramp = 255.0 * matplotlib.colormaps[cmap](np.linspace(0.0, 1.0, 256))[:, :3]
    sample = px[:: max(1, len(px) // 4000)]
    dist = np.sqrt(((sample[:, None, :] - ramp[None]) ** 2).sum(axis=2)).min(axis=1)
    return float(np.mean(dist < tol))


def test_the_book_has_a_density_view():
    assert SITE.is_dir(), f"{SITE} is missing: build the book first (make book)"
    assert PAGES, f"no built page holds a density view (class {DENSITY_CLASS})"


def test_ramp_fraction_tells_painted_from_plain_pictures():
    from PIL import Image

    def png(rgb):
        buf = io.BytesIO()
        Image.fromarray(np.full((40, 40, 3), rgb, dtype=np.uint8)).save(buf, format="PNG")
        return buf.getvalue()

    assert ramp_fraction(png((33, 145, 140))) == 1.0            # viridis' teal
    assert ramp_fraction(png((158, 197, 232))) == 0.0           # the players' pale sphere


@pytest.mark.parametrize("html", PAGES[:1], ids=[p.name for p in PAGES[:1]])
def test_density_view_is_painted_and_plays(page, html):
    state = widget_state(html)
    meshes = [m for m in state.values() if m["model_name"] == "MeshModel"
              and str(m["state"].get("name", "")).startswith("d")
              and m["state"]["name"][1:].isdigit()]
    assert len(meshes) >= 2, f"{html.name}: {len(meshes)} density meshes in the widget state"

    page.goto(html.as_uri())
    wait_canvases(page, 1, RENDER_TIMEOUT_S)
    view = page.locator(f".{DENSITY_CLASS}").first
    canvas = view.locator("canvas").first
    time.sleep(1.0)
    before = canvas.screenshot()
    assert not is_blank(before), f"{html.name}: the density view's canvas is blank"
    painted = ramp_fraction(before)
    assert painted > 0.5, f"{html.name}: only {painted:.2f} of the sphere shows the colour map"

    view.locator(".widget-play button").nth(0).click()          # play
    shots = []
    for _ in range(3):
        time.sleep(0.5)
        shots.append(canvas.screenshot())
    view.locator(".widget-play button").nth(1).click()          # pause
    moved = max(image_change(before, s) for s in shots)
    assert moved > 0.02, f"{html.name}: the density did not change while playing ({moved:.4f})"
    assert min(ramp_fraction(s) for s in shots) > 0.5, "the sphere lost its colours while playing"
    bad = [text for text, _ in page.log.errors]
    assert not bad, f"console errors: {bad}"
