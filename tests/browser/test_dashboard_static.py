"""Dashboards in the browser, offline, with no kernel: visibly disabled, with a note that says why.

Two checks, as for the explorers:

* small pages exported here with ``ipywidgets.embed.embed_minimal_html`` and the book's own
  widget JavaScript: a dashboard built for a static page (controls disabled, note shown) and,
  as the counter-example the check must catch, one built for a live kernel;
* every built page of ``_build/html`` that holds a dashboard (skipped when there is none).

In each static dashboard: every control's input is disabled (the model menu, the seed field,
every slider; pressing the right arrow key on a slider handle leaves its readout unchanged), the
note is visible and links to the book's "Running the notebooks" section, the energy plot's title
names the run the controls show, and the text beside the animation buttons names them
(pythreejs gives the buttons no label of their own).
"""
from __future__ import annotations

import time

import pytest

from .pages import SITE, export_page, is_harmless, pages_with, wait_for

DASHBOARD_CLASS = "usaav-dashboard"
NOTE_CLASS = "usaav-static-note"

PAGES = pages_with(DASHBOARD_CLASS)

# what dashboard k shows: its controls (kind, disabled, value), the note, the title, the labels
SHOWN = """
(k) => {
  const root = document.querySelectorAll('.%s')[k];
  const controls = [];
  root.querySelectorAll('select').forEach((e) => controls.push(
      {kind: 'select', disabled: e.disabled, value: e.value}));
  root.querySelectorAll('.widget-text input').forEach((e) => controls.push(
      {kind: 'text', disabled: e.disabled, value: e.value}));
  root.querySelectorAll('.widget-slider').forEach((e) => {
      const r = e.querySelector('.widget-readout');
      controls.push({kind: 'slider', disabled: e.querySelector('.noUi-target').hasAttribute('disabled'),
                     value: (r.value !== undefined && r.value !== '' ? r.value : r.textContent).trim(),
                     label: e.querySelector('.widget-label').textContent.trim()});
  });
  const note = root.querySelector('.%s');
  const link = note ? note.querySelector('a') : null;
  const title = root.querySelector('svg text:last-of-type');
  const play = root.querySelector('.widget-play');
  return {controls: controls,
          note: note ? {visible: note.offsetParent !== null && note.getBoundingClientRect().height > 0,
                        text: note.textContent, href: link ? link.getAttribute('href') : null} : null,
          title: title ? title.textContent : null,
          play_label: play ? play.parentElement.textContent : null,
          play_buttons: play ? play.querySelectorAll('button').length : 0};
}
""" % (DASHBOARD_CLASS, NOTE_CLASS)


def dashboards_shown(page, url: str) -> list[dict]:
    """Open ``url``; what each dashboard shows once its controls and title have rendered."""
    page.goto(url)
    n = wait_for(lambda: page.locator("." + DASHBOARD_CLASS).count())
    assert n > 0, f"{url}: no dashboard rendered"
    shown = []
    for k in range(n):
        info = wait_for(lambda k=k: (lambda s: s if len(s["controls"]) >= 6 and s["title"] and s["play_buttons"] else None)(
            page.evaluate(SHOWN, k)))
        assert info, f"{url}: dashboard {k} did not render its controls and energy plot"
        shown.append(info)
    return shown


def check_static_dashboards(page, url: str) -> int:
    """Every dashboard of ``url`` is disabled, says why, and its title matches its controls."""
    shown = dashboards_shown(page, url)
    for k, info in enumerate(shown):
        enabled = [c for c in info["controls"] if not c["disabled"]]
        assert not enabled, f"dashboard {k}: controls enabled with no kernel: {enabled}"
        note = info["note"]
        assert note is not None and note["visible"], f"dashboard {k}: no visible note ({note})"
        assert "need a running Python kernel" in note["text"], note["text"]
        assert note["href"] and note["href"].endswith("#running-notebooks"), note["href"]
        sliders = {c["label"]: c["value"] for c in info["controls"] if c["kind"] == "slider"}
        assert f"beta = {float(sliders['beta']):g}" in info["title"], \
            f"dashboard {k}: title {info['title']!r} disagrees with beta = {sliders['beta']}"
        assert f"n = {int(float(sliders['tokens n']))}" in info["title"], info["title"]
        assert info["play_buttons"] == 4, f"dashboard {k}: {info['play_buttons']} animation buttons"
        assert info["play_label"] and "buttons: play, pause, stop, repeat" in info["play_label"], \
            f"dashboard {k}: the animation buttons have no label ({info['play_label']!r})"
        # a disabled slider does not move
        root = page.locator("." + DASHBOARD_CLASS).nth(k)
        handle = root.locator(".widget-slider .noUi-handle").first
        handle.focus()
        handle.press("ArrowRight")
        time.sleep(0.3)
        after = page.evaluate(SHOWN, k)
        assert after["controls"] == info["controls"], f"dashboard {k}: a disabled control moved"
    assert not page.log.outside, f"requests left file:// (not offline): {page.log.outside}"
    bad = [text for text, loc in page.log.errors if not is_harmless(text, loc)]
    assert not bad, f"console errors: {bad}"
    return len(shown)


def _export(tmp_path, live: bool):
    from usaav_edu.widgets import ExperimentDashboard

    dash = ExperimentDashboard("rope", n=16, beta=2.5, t_max=1.0, n_frames=6, live=live)
    return export_page(dash, tmp_path / f"dashboard_{'live' if live else 'static'}.html", "Dashboard")


def test_exported_static_dashboard_is_disabled_and_says_why(page, tmp_path):
    assert check_static_dashboards(page, _export(tmp_path, live=False).as_uri()) == 1


def test_exported_live_dashboard_fails_the_static_check(page, tmp_path):
    # the check can fail: a dashboard built for a live kernel has enabled controls and no note
    url = _export(tmp_path, live=True).as_uri()
    (info,) = dashboards_shown(page, url)
    assert any(not c["disabled"] for c in info["controls"])
    assert info["note"] is None or not info["note"]["visible"]
    with pytest.raises(AssertionError, match="controls enabled with no kernel"):
        check_static_dashboards(page, url)


def test_built_pages_have_dashboards_or_skip():
    if not PAGES:
        pytest.skip(f"no page under {SITE} holds a dashboard (build the book)")
    assert all(p.is_file() for p in PAGES)


@pytest.mark.parametrize("html", PAGES, ids=[str(p.relative_to(SITE)) for p in PAGES])
def test_built_dashboards_are_disabled_and_say_why(page, html):
    assert check_static_dashboards(page, html.as_uri()) >= 1
    # the note's link lands on the section it names
    href = page.evaluate(SHOWN, 0)["note"]["href"]
    target = (html.parent / href.split("#")[0]).resolve()
    assert target.is_file(), f"the note links to {href}, which is not a built page"
    assert 'id="running-notebooks"' in target.read_text(encoding="utf-8"), \
        f"{target.name} has no running-notebooks anchor"
