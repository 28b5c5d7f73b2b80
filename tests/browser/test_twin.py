"""TwinView in the browser, offline, with no kernel: one play button moves both canvases.

* a small page exported here with ``ipywidgets.embed.embed_minimal_html`` and the book's own
  widget JavaScript (runs without building the book);
* every built page of ``_build/html`` that holds a twin view (skipped when there is none).

For every twin view: both canvases draw; after pressing its one play button both canvases
change (the contents and the gauge coordinates move, and each time bead moves); after pause
both stand still.
"""
from __future__ import annotations

import time

import pytest

from .pages import (
    SITE,
    export_page,
    image_change,
    image_stats,
    is_blank,
    is_harmless,
    pages_with,
    wait_for,
)

#: the CSS class of a twin view's root (see usaav_edu/widgets/twin.py)
TWIN_CLASS = "usaav-twin"

# for each twin view, the indices of its canvases and of its play controls
TWINS = """
() => {
  const canvases = Array.from(document.querySelectorAll('canvas'));
  const plays = Array.from(document.querySelectorAll('.widget-play'));
  return Array.from(document.querySelectorAll('.%s')).map((root) => ({
    canvases: Array.from(root.querySelectorAll('canvas')).map((c) => canvases.indexOf(c)),
    plays: Array.from(root.querySelectorAll('.widget-play')).map((p) => plays.indexOf(p)),
  }));
}
""" % TWIN_CLASS


PAGES = pages_with(TWIN_CLASS)


def check_twins(page, url: str) -> int:
    """Open ``url``; play every twin view; return how many played with both canvases moving."""
    page.goto(url)
    twins = wait_for(lambda: (lambda ts: ts if ts and all(len(t["canvases"]) == 2 for t in ts) else None)(
        page.evaluate(TWINS)))
    twins = twins or page.evaluate(TWINS)
    assert twins, f"{url}: no twin view rendered"
    canvases = page.locator("canvas")
    for twin in twins:
        assert len(twin["canvases"]) == 2, f"a twin view shows {len(twin['canvases'])} canvases, not 2"
        assert len(twin["plays"]) == 1, f"a twin view has {len(twin['plays'])} play controls, not 1"
        a, b = twin["canvases"]
        before = wait_for(lambda a=a, b=b: (lambda s: s if not any(is_blank(x) for x in s) else None)(
            [canvases.nth(a).screenshot(), canvases.nth(b).screenshot()]))
        assert before, "a twin view's canvases stay blank"
        buttons = page.locator(".widget-play").nth(twin["plays"][0]).locator("button")
        buttons.nth(0).click()                       # play
        time.sleep(2.0)
        playing = [canvases.nth(a).screenshot(), canvases.nth(b).screenshot()]
        buttons.nth(1).click()                       # pause
        time.sleep(0.5)
        paused = [canvases.nth(a).screenshot(), canvases.nth(b).screenshot()]
        time.sleep(1.0)
        still = [canvases.nth(a).screenshot(), canvases.nth(b).screenshot()]
        for side, name in enumerate(("contents x", "gauge coordinates y")):
            moved = image_change(before[side], playing[side])
            assert moved > 0.002, f"{name}: the canvas did not change after play ({moved:.5f})"
            assert not is_blank(playing[side]), f"{name}: blank while playing {image_stats(playing[side])}"
            drift = image_change(paused[side], still[side])
            assert drift < 1e-4, f"{name}: the canvas kept moving after pause ({drift:.5f})"
    assert not page.log.outside, f"requests left file:// (not offline): {page.log.outside}"
    bad = [text for text, loc in page.log.errors if not is_harmless(text, loc)]
    assert not bad, f"console errors: {bad}"
    return len(twins)


def test_exported_twin_view_plays_both_views(page, tmp_path):
    import usaav_edu as ue
    from usaav_edu.widgets import TwinView

    model, x0, xi = ue.experiments.setup("rope", n=16, beta=1.0, seed=0)
    run = ue.simulate(model, x0, xi, t_max=10.0, n_frames=41, seed=0)
    twin = TwinView(run, duration=6.0)
    out = export_page(twin, tmp_path / "twin.html", "TwinView")
    assert check_twins(page, out.as_uri()) == 1


def test_built_pages_have_twin_views_or_skip():
    if not PAGES:
        pytest.skip(f"no page under {SITE} holds a twin view (build the book with one)")
    assert all(p.is_file() for p in PAGES)


@pytest.mark.parametrize("html", PAGES, ids=[str(p.relative_to(SITE)) for p in PAGES])
def test_built_twin_views_play(page, html):
    assert check_twins(page, html.as_uri()) >= 1
