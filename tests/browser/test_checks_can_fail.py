"""The browser checks' own detectors must be able to say no."""
from __future__ import annotations

import base64

from .pages import image_change, is_blank, is_harmless, is_harmless_warning

BLANK_PAGE = ("<html><body style='margin:0'><canvas id='c' width='300' height='200'></canvas>"
              "<script>const g=document.getElementById('c').getContext('webgl');"
              "g.clearColor(1,1,1,1);g.clear(g.COLOR_BUFFER_BIT);</script></body></html>")

DRAWN_PAGE = ("<html><body style='margin:0'><canvas id='c' width='300' height='200'></canvas>"
              "<script>const x=document.getElementById('c').getContext('2d');"
              "x.fillStyle='#fff';x.fillRect(0,0,300,200);"
              "for(let i=0;i<40;i++){x.fillStyle=`hsl(${9*i},80%,50%)`;x.beginPath();"
              "x.arc(20+6*i,100+40*Math.sin(i),6,0,7);x.fill();}</script></body></html>")


def _data_url(html):
    return "data:text/html;base64," + base64.b64encode(html.encode()).decode()


def test_blank_canvas_is_detected(page):
    page.goto(_data_url(BLANK_PAGE))
    assert is_blank(page.locator("canvas").screenshot())


def test_drawn_canvas_is_not_blank_and_changes_are_seen(page):
    page.goto(_data_url(DRAWN_PAGE))
    shot = page.locator("canvas").screenshot()
    assert not is_blank(shot)
    page.goto(_data_url(BLANK_PAGE))
    assert image_change(shot, page.locator("canvas").screenshot()) > 0.01


def test_unknown_console_errors_are_not_harmless():
    assert not is_harmless("Uncaught TypeError: x is undefined")
    assert not is_harmless("Failed to load resource: net::ERR_FILE_NOT_FOUND", "file:///a/b.js")
    assert not is_harmless("Identifier 'THEBE_JS_URL' has already been declared")
    assert not is_harmless_warning("(strictTypes)", "file:///s/book/ch01_particles.html")
