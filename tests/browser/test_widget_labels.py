"""Every control of every widget in the built book has an accessible name.

A screen reader names a control by its accessible name (WAI-ARIA "accname"): an icon-only
button, or a slider whose description is printed beside it but not tied to it, is announced as
"button" or "slider" and nothing else.  For each built page with widgets, every visible button,
slider, text box and menu inside a rendered widget must have a non-empty accessible name, as
Playwright computes it, and each player's four animation buttons must be named Play, Pause,
Stop and Repeat, in that order (the page script _static/widget_labels.js gives them these names).
"""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tools.print_pdf import shown_models, wait_canvases

from .pages import SITE, widget_pages, widget_state

PAGES = widget_pages()
CONTROLS = ".jupyter-widgets :is(button, input, select, textarea, [role='slider'], " \
           "[contenteditable='true'])"
PLAYER_BUTTONS = ["Play", "Pause", "Stop", "Repeat"]
RENDER_TIMEOUT_S = 60


@pytest.mark.parametrize("html", PAGES, ids=[str(p.relative_to(SITE)) for p in PAGES])
def test_every_widget_control_is_named(page, html):
    renderers = shown_models(widget_state(html), "RendererModel")
    page.goto(html.as_uri())
    assert wait_canvases(page, renderers, RENDER_TIMEOUT_S) == renderers, \
        f"{html.name}: the widgets did not render"

    controls = page.locator(CONTROLS)
    visible = [controls.nth(k) for k in range(controls.count()) if controls.nth(k).is_visible()]
    assert visible, f"{html.name}: no visible widget control found"
    unnamed = []
    for loc in visible:
        try:
            expect(loc).to_have_accessible_name(re.compile(r"\S"), timeout=2000)
        except AssertionError:
            unnamed.append(loc.evaluate("e => e.outerHTML.slice(0, 120)"))
    assert not unnamed, f"{html.name}: {len(unnamed)} of {len(visible)} widget controls have " \
                        f"no accessible name, e.g. {unnamed[:3]}"

    players = page.locator(".widget-play")
    for j in range(players.count()):
        if not players.nth(j).is_visible():
            continue
        names = [b.get_attribute("aria-label") or b.inner_text().strip()
                 for b in players.nth(j).locator("button").all()]
        assert names == PLAYER_BUTTONS, f"{html.name}: player {j} buttons are named {names}"
