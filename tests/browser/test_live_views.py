"""Live views in the built book, from file://, with no kernel and no network.

On every built page that holds a live view (class ``usaav-live``), and on at least the five
chapter pages that should (chapters 1, 2, 4, 6 and 7): every view starts; then, for each of its
sliders, set the slider to a value that no precomputed run of the book holds (as a reader's drag
does: the value, then an ``input`` event), and require that the value shown beside it and the
view's state read it, that the tokens are drawn again (the canvas changes) and that playing moves
them; the bias menu of chapter 7 switches the model; "new seed" draws new tokens.  The console
stays free of errors and nothing is fetched from outside the disk.  (The frame rate is measured by
``benchmarks/live_fps.py``, not here.)
"""
from __future__ import annotations

import pytest

from tools import live_pages

from .pages import SITE, image_change, is_harmless, site_pages, wait_for

PAGES = [p for p in site_pages()
         if live_pages.MARKER in p.read_text(encoding="utf-8", errors="replace")]
EXPECTED = {"ch01_particles", "ch02_metastability", "ch04_rope", "ch06_prefix_gauges",
            "ch07_spectral"}

#: a value of each slider that no precomputed grid of the book holds (the explorers hold
#: beta 0.1 to 4 and 1 to 9 on a grid, omega on a grid from 0.1 to 2, K = 1 to 8 for n = 16)
OFF_GRID = {"beta": 1.37, "omega": 1.13, "lam": 0.77, "prompts": 5, "n": 100}

SET = """
([k, name, value]) => {
  const root = document.querySelectorAll('.usaav-live')[k];
  const input = root.querySelector('input[id$="-' + name + '"]');
  input.value = String(value);
  input.dispatchEvent(new Event('input', {bubbles: true}));
  return {shown: root.querySelector('output[for="' + input.id + '"]').textContent,
          state: root.usaavLive.values[name], label: input.getAttribute('aria-label')};
}
"""


def test_the_chapters_hold_their_live_views():
    if not SITE.is_dir():
        pytest.skip("the book is not built (make book)")
    assert EXPECTED <= {p.stem for p in PAGES}, [p.stem for p in PAGES]


def _canvas(page, k):
    return page.locator(".usaav-live canvas").nth(k).screenshot()


def _live(page, k, member):
    """``member`` of live view k's state (``element.usaavLive``): a property or a call."""
    return page.evaluate(
        f"(k) => document.querySelectorAll('.usaav-live')[k].usaavLive.{member}", k)


def _move(page, path, k, name):
    """Set slider ``name`` of view k off the grid, then play: the value is shown and read, the
    run starts again, the tokens move and the sphere is drawn again."""
    before = _canvas(page, k)
    got = page.evaluate(SET, [k, name, OFF_GRID[name]])
    assert got["state"] == pytest.approx(OFF_GRID[name]), (name, got)
    assert float(got["shown"]) == pytest.approx(OFF_GRID[name]), (name, got)
    assert got["label"], f"{name}: the slider has no name for screen readers"
    t0 = _live(page, k, "t")
    assert t0 == 0, f"{name}: a new value starts the run again, at t = {t0}"
    start = _live(page, k, "positions()")
    _live(page, k, "play()")
    assert wait_for(lambda: _live(page, k, "t") > 0 or None)
    page.wait_for_timeout(400)
    _live(page, k, "pause()")
    after = _live(page, k, "positions()")
    assert max(abs(a - b) for a, b in zip(start, after, strict=True)) > 1e-3, name
    change = image_change(before, _canvas(page, k))
    assert change > 0.001, f"{path.name} view {k}, {name}: the sphere did not change"


SLIDERS = """(k) => Array.from(document.querySelectorAll('.usaav-live')[k]
  .querySelectorAll('input[type=range]')).map((i) => [i.id.split('-').pop(), i.disabled])"""


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem)
def test_every_slider_moves_the_live_view_off_the_grid(page, path):
    page.goto(path.as_uri())
    count = page.locator(".usaav-live").count()
    assert wait_for(lambda: page.locator(".usaav-live-ready").count() == count or None), (
        f"{path.name}: {page.locator('.usaav-live-ready').count()} of {count} live views started")
    for k in range(count):
        sliders = page.evaluate(SLIDERS, k)
        assert "n" in dict(sliders) and len(sliders) >= 2, sliders
        for name, disabled in sliders:
            if not disabled:
                _move(page, path, k, name)
        seed = _live(page, k, "values.seed")
        page.locator(".usaav-live").nth(k).get_by_role(
            "button", name="start again from new random tokens").click()
        assert _live(page, k, "values.seed") == seed + 1
        menu = page.locator(".usaav-live").nth(k).locator("select")
        if menu.count():  # the other bias: its parameter's slider is enabled and moves the view
            menu.select_option("distance_bias")
            assert _live(page, k, "values.bias") == "distance_bias"
            now = dict(page.evaluate(SLIDERS, k))
            assert now["lam"] is False and now["omega"] is True, now
            _move(page, path, k, "lam")
    errors = [e for e in page.log.errors if not is_harmless(*e)]
    assert not errors, errors[:3]
    assert not page.log.outside, page.log.outside[:3]
