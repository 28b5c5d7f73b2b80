"""Every control of every widget in the built book has an accessible name (the check).

A screen reader names a control by its accessible name (WAI-ARIA "accname"): an icon-only
button, or a slider whose description is printed beside it but not tied to it, is announced as
"button" or "slider" and nothing else.  On every built page with widgets
(tests/browser/test_widget_pages.py calls the check), every visible button, slider, text box and
menu inside a rendered widget must have a non-empty accessible name, as Playwright computes it,
and each player's four animation buttons must be named Play, Pause, Stop and Repeat, in that
order (the page script _static/widget_labels.js gives them these names).
"""
from __future__ import annotations

import re

from playwright.sync_api import expect

from .pages import ROOT

CONTROLS = ".jupyter-widgets :is(button, input, select, textarea, [role='slider'], " \
           "[contenteditable='true'])"
PLAYER_BUTTONS = ["Play", "Pause", "Stop", "Repeat"]


def unnamed_controls(page) -> tuple[int, list[str]]:
    """``(visible controls, the outer HTML of those with no accessible name)`` of a rendered page."""
    controls = page.locator(CONTROLS)
    visible = [controls.nth(k) for k in range(controls.count()) if controls.nth(k).is_visible()]
    unnamed = []
    for loc in visible:
        try:
            expect(loc).to_have_accessible_name(re.compile(r"\S"), timeout=2000)
        except AssertionError:
            unnamed.append(loc.evaluate("e => e.outerHTML.slice(0, 120)"))
    return len(visible), unnamed


def player_button_names(page) -> list[list[str]]:
    """The names of each visible player's buttons, in order."""
    players = page.locator(".widget-play")
    return [[b.get_attribute("aria-label") or b.inner_text().strip()
             for b in players.nth(j).locator("button").all()]
            for j in range(players.count()) if players.nth(j).is_visible()]


def check_controls_are_named(page, name: str) -> None:
    """Fail unless every visible widget control of the page has an accessible name."""
    n, unnamed = unnamed_controls(page)
    assert n, f"{name}: no visible widget control found"
    assert not unnamed, f"{name}: {len(unnamed)} of {n} widget controls have no accessible " \
                        f"name, e.g. {unnamed[:3]}"
    for j, names in enumerate(player_button_names(page)):
        assert names == PLAYER_BUTTONS, f"{name}: player {j} buttons are named {names}"


# Every page with widgets is checked by tests/browser/test_widget_pages.py, which loads it once
# and calls check_controls_are_named; here the check is shown able to fail.
def test_icon_only_buttons_and_unlabelled_sliders_are_found(page, tmp_path):
    html = tmp_path / "bare.html"
    html.write_text("""<!DOCTYPE html><html><body><div class="jupyter-widgets">
      <button class="jupyter-button"><svg class="fa-play"></svg></button>
      <div role="slider" tabindex="0" aria-valuenow="1" style="width:50px;height:10px"></div>
      <button>Named</button></div></body></html>""", encoding="utf-8")
    page.goto(html.as_uri())
    n, unnamed = unnamed_controls(page)
    assert n == 3 and len(unnamed) == 2, (n, unnamed)


def test_the_page_script_names_icon_buttons_and_sliders(page, tmp_path):
    script = (ROOT / "_static" / "widget_labels.js").as_uri()
    html = tmp_path / "labelled.html"
    html.write_text(f"""<!DOCTYPE html><html><body><div class="jupyter-widgets widget-play">
      <button class="jupyter-button"><svg class="svg-inline--fa fa-play"></svg></button>
      <button class="jupyter-button"><svg class="svg-inline--fa fa-pause"></svg></button>
      <button class="jupyter-button"><svg class="svg-inline--fa fa-stop"></svg></button>
      <button class="jupyter-button"><svg class="svg-inline--fa fa-retweet"></svg></button></div>
      <div class="jupyter-widgets widget-slider"><label class="widget-label">beta</label>
      <div class="slider-container"><div role="slider" tabindex="0"
      style="width:50px;height:10px"></div></div></div>
      <script src="{script}"></script></body></html>""", encoding="utf-8")
    page.goto(html.as_uri())
    page.wait_for_timeout(200)
    check_controls_are_named(page, html.name)
    assert page.get_by_role("slider", name="beta").count() == 1
