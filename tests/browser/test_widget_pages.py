"""Open every built page that holds widgets from file:// and check that its 3-D views work.

For each page: the widget JavaScript comes from the site itself (any request leaving file://
fails the test), one canvas per pythreejs renderer appears, every canvas is a WebGL canvas and
is not blank, every widget control has an accessible name (test_widget_labels.py), every
player moves after pressing play, and the console shows no error outside
the documented harmless list (pages.HARMLESS).

The pages come from ``_build/html`` (`make book` or `make test` builds it), so chapters that
add widgets are checked without changing this file.
"""
from __future__ import annotations

import itertools
import time

import pytest

from tools.print_pdf import renderer_count, shown_models, wait_canvases

from .pages import (
    SITE,
    image_change,
    image_stats,
    is_blank,
    is_harmless,
    widget_pages,
    widget_state,
)
from .test_widget_labels import check_controls_are_named

PAGES = widget_pages()
RENDER_TIMEOUT_S = 60


def _ids(pages):
    return [str(p.relative_to(SITE)) for p in pages]


def test_site_has_widget_pages():
    assert SITE.is_dir(), f"{SITE} is missing: build the book first (make book)"
    assert PAGES, f"no page under {SITE} embeds widget state (book/widgets.ipynb should)"


CANVAS_INFO = """
() => Array.from(document.querySelectorAll('canvas')).map((c) => {
  const r = c.getBoundingClientRect();
  let webgl = false;
  try { webgl = !!(c.getContext('webgl2') || c.getContext('webgl')); } catch (e) {}
  return {webgl: webgl, width: r.width, height: r.height};
})
"""

# for each player (AnimationAction view), the index of the canvas in the same widget
PLAYER_CANVAS = """
() => {
  const canvases = Array.from(document.querySelectorAll('canvas'));
  return Array.from(document.querySelectorAll('.widget-play')).map((w) => {
    let node = w;
    while (node && !(node.querySelector && node.querySelector('canvas'))) node = node.parentElement;
    return node ? canvases.indexOf(node.querySelector('canvas')) : -1;
  });
}
"""


#: seconds a player may take, after play, before its picture must have changed
PLAY_WAIT_S = 8.0


@pytest.mark.parametrize("html", PAGES, ids=_ids(PAGES))
def test_widgets_render_and_play(page, html):
    state = widget_state(html)
    # a Stack (an Explorer) draws only its selected child: count what the page shows when it opens
    renderers = shown_models(state, "RendererModel")
    players = shown_models(state, "AnimationActionModel")
    assert renderers > 0, f"{html.name}: widget state holds no pythreejs renderer"

    # and a live view (usaav_edu.widgets.LiveView) draws one canvas of its own, with no model
    canvases_expected = renderer_count(html)

    page.goto(html.as_uri())
    n = wait_canvases(page, canvases_expected, RENDER_TIMEOUT_S)
    assert n == canvases_expected, (f"{html.name}: {n} canvases drawn for {renderers} renderers "
                                    f"and {canvases_expected - renderers} live views")
    time.sleep(1.0)

    canvases = page.locator("canvas")
    for k, info in enumerate(page.evaluate(CANVAS_INFO)):
        assert info["webgl"], f"canvas {k} is not a WebGL canvas"
        assert info["width"] > 50 and info["height"] > 50, f"canvas {k} has size {info}"
        shot = canvases.nth(k).screenshot()
        assert not is_blank(shot), f"canvas {k} looks blank: {image_stats(shot)}"

    check_controls_are_named(page, html.name)

    links = page.evaluate(PLAYER_CANVAS)
    assert len(links) == players, f"{len(links)} play controls for {players} animation actions"
    for j, k in enumerate(links):
        assert k >= 0, f"player {j} has no canvas in its widget"
        canvas = canvases.nth(k)
        before = canvas.screenshot()
        buttons = page.locator(".widget-play").nth(j).locator("button")
        buttons.nth(0).click()                    # play
        # four shots half a second apart, more (up to PLAY_WAIT_S) while the picture has not
        # changed yet: on a busy machine software WebGL may draw only a few frames a second
        shots = []
        deadline = time.monotonic() + PLAY_WAIT_S
        while len(shots) < 4 or (max(image_change(before, s) for s in shots) <= 0.002
                                 and time.monotonic() < deadline):
            time.sleep(0.5)
            shots.append(canvas.screenshot())
        buttons.nth(1).click()                    # pause: software WebGL is slow, keep one busy
        moved = max(image_change(before, s) for s in shots)
        assert moved > 0.002, f"player {j}: nothing moved after play ({moved:.5f})"
        # tokens may settle early (a collapse is quick); the time bead keeps moving
        steps = [image_change(a, b) for a, b in itertools.pairwise(shots[-4:])]
        assert min(steps) > 0.0003, f"player {j}: stopped moving while playing {steps}"
        assert not any(is_blank(s) for s in shots), f"player {j}: canvas went blank while playing"

    assert not page.log.outside, f"requests left file:// (not offline): {page.log.outside}"
    bad = [text for text, loc in page.log.errors if not is_harmless(text, loc)]
    assert not bad, f"console errors: {bad}"
