"""Explorers in the browser, offline, with no kernel: moving a slider switches the run shown.

Two checks:

* a small page exported here with ``ipywidgets.embed.embed_minimal_html`` and the book's own
  widget JavaScript (``_static_widgets/widgets-js``): runs without building the book;
* every built page of ``_build/html`` that holds an Explorer (skipped when there is none).

In each, for every slider of every Explorer: press the right arrow key on the slider's handle;
the title must then state the value the slider reads, the sphere's pixels and the energy
picture must change, and the console must stay free of errors.
"""
from __future__ import annotations

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

#: the CSS class of an Explorer's root and of its run titles (see usaav_edu/widgets/explorer.py)
EXPLORER_CLASS = "usaav-explorer"
TITLE_CLASS = "usaav-explorer-title"

PAGES = pages_with(TITLE_CLASS)

# what an Explorer shows now: its title text, slider readouts, and the index of its canvas
SHOWN = """
(k) => {
  const root = document.querySelectorAll('.%s')[k];
  const titles = Array.from(root.querySelectorAll('.%s')).map((t) => t.textContent);
  const readouts = Array.from(root.querySelectorAll('.widget-slider:not(.usaav-time) .widget-readout'))
    .map((r) => (r.value !== undefined && r.value !== '' ? r.value : r.textContent).trim());
  const canvas = root.querySelector('canvas');
  const img = root.querySelector('img');
  return {titles: titles, readouts: readouts,
          canvas: Array.from(document.querySelectorAll('canvas')).indexOf(canvas),
          img: img ? img.src.length + ':' + img.src.slice(-64) : null};
}
""" % (EXPLORER_CLASS, TITLE_CLASS)


def _drawn_canvas(page, k):
    """Screenshot of explorer k's canvas once it has drawn something (None if it never does)."""
    def shot():
        info = page.evaluate(SHOWN, k)
        if info["canvas"] < 0:
            return None
        png = page.locator("canvas").nth(info["canvas"]).screenshot()
        return None if is_blank(png) else png
    return wait_for(shot)


def check_explorers(page, url: str) -> int:
    """Open ``url``; move every slider of every Explorer to its last value; return how many moved.

    The last value, not the next: neighbouring runs of a fine slider may end alike (chapter 2's
    beta = 1 and 2 both end in one cluster, a few pixels apart), the ends of its range do not.
    """
    page.goto(url)
    n = wait_for(lambda: page.locator("." + EXPLORER_CLASS).count())
    assert n > 0, f"{url}: no Explorer rendered"
    moved = 0
    for k in range(n):
        root = page.locator("." + EXPLORER_CLASS).nth(k)
        # the explorer's sliders, not its players' time readouts (disabled sliders, "t = ...")
        sliders = root.locator(".widget-slider:not(.usaav-time)")
        for j in range(sliders.count()):
            before = _drawn_canvas(page, k)
            assert before is not None, f"explorer {k}: the sphere never drew: no canvas or blank"
            shown = page.evaluate(SHOWN, k)
            assert len(shown["titles"]) == 1, f"explorer {k}: {len(shown['titles'])} titles shown"
            handle = sliders.nth(j).locator(".noUi-handle")
            handle.focus()
            handle.press("End")
            after_info = wait_for(lambda k=k, shown=shown: (lambda s: s if s["titles"] != shown["titles"]
                                                                and len(s["titles"]) == 1 else None)(
                page.evaluate(SHOWN, k)))
            assert after_info, f"explorer {k}, slider {j}: the title did not change ({shown['titles']})"
            value = after_info["readouts"][j]
            assert value != shown["readouts"][j], f"slider {j} did not move ({value})"
            name = sliders.nth(j).locator(".widget-label").text_content().strip()
            assert f"{name} = {value}" in after_info["titles"][0], \
                f"title {after_info['titles'][0]!r} does not state {name} = {value}"
            assert after_info["img"] != shown["img"], f"explorer {k}: the energy plot did not change"
            after = _drawn_canvas(page, k)
            assert after is not None, f"explorer {k}: the sphere is blank after the switch"
            change = image_change(before, after)
            assert change > 0.002, (f"explorer {k}, slider {j}: the sphere did not change "
                                    f"({change:.5f}; {image_stats(after)})")
            moved += 1
    assert not page.log.outside, f"requests left file:// (not offline): {page.log.outside}"
    bad = [text for text, loc in page.log.errors if not is_harmless(text, loc)]
    assert not bad, f"console errors: {bad}"
    return moved


def test_exported_explorer_switches_runs_offline(page, tmp_path):
    """A two-parameter Explorer in a page of its own, with the book's widget JavaScript."""
    import numpy as np

    import usaav_edu as ue
    from usaav_edu.widgets import Explorer

    runs = {}
    for i, beta in enumerate((0.5, 4.0)):
        for j, omega in enumerate((1.0, 3.0)):
            model, x0, xi = ue.experiments.setup("rope", n=16, beta=beta, omega=omega, seed=0)
            # made-up frames that end in a different place for every run (fast)
            rng = np.random.default_rng(3 * i + j)
            end = rng.normal(size=x0.shape)
            s = np.linspace(0.0, 1.0, 11)[:, None, None]
            x = (1 - s) * x0[None] + s * end[None]
            x /= np.linalg.norm(x, axis=2, keepdims=True)
            runs[(beta, omega)] = ue.Trajectory(
                t=np.linspace(0.0, 5.0, 11), x=x, xi=xi, energy=np.linspace(1.0, 1.0 + beta + omega, 11),
                model=model, method="rk4", dt=0.1)
    explorer = Explorer(runs, ("beta", "omega"), max_bytes=1_500_000)
    out = export_page(explorer, tmp_path / "explorer.html", "Explorer")
    assert check_explorers(page, out.as_uri()) == 2


def test_built_pages_have_explorers_or_skip():
    if not PAGES:
        pytest.skip(f"no page under {SITE} holds an Explorer (build the book with one)")
    assert all(p.is_file() for p in PAGES)


@pytest.mark.parametrize("html", PAGES, ids=[str(p.relative_to(SITE)) for p in PAGES])
def test_built_explorers_switch_runs(page, html):
    assert check_explorers(page, html.as_uri()) >= 1
