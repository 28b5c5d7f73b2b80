"""The browser checks' own detectors must be able to say no."""
from __future__ import annotations

import base64

import pytest

from .pages import ROOT, image_change, is_blank, is_harmless, is_harmless_warning
from .test_console import MATH_DONE, MATH_TIMEOUT_MS, math_errors

#: the MathJax the book's pages load (make book copies it there from node_modules)
MATHJAX = ROOT / "_static_widgets" / "mathjax" / "tex-mml-chtml.js"

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


def _math_page(tmp_path, body: str):
    """A page typeset by the book's own MathJax, from file:// as the built pages are."""
    if not MATHJAX.is_file():
        pytest.fail(f"{MATHJAX} is missing: `make book` copies MathJax there")
    html = tmp_path / "math.html"
    html.write_text(f"<html><head><meta charset='utf-8'><script async src='{MATHJAX.as_uri()}'>"
                    f"</script></head><body>{body}</body></html>", encoding="utf-8")
    return html.as_uri()


def test_mathjax_errors_are_seen(page, tmp_path):
    # a backspace where "\\b" was meant (the intro's old "\x08eta"), and a TeX error
    page.goto(_math_page(tmp_path, "<p>lifetimes exponential in \\(\x08eta\\)</p>"
                                   "<p>and \\(e^\\)</p>"))
    assert page.evaluate(MATH_DONE, MATH_TIMEOUT_MS)
    errors = math_errors(page)
    assert len(errors) == 2, errors
    assert "Math input error" in errors[0], errors
    assert "Missing superscript or subscript argument" in errors[1], errors


def test_typeset_math_has_no_errors(page, tmp_path):
    page.goto(_math_page(tmp_path, "<p>lifetimes exponential in \\(\\beta\\), "
                                   "\\[E_\\beta = \\frac{1}{2\\beta n^2}\\]</p>"))
    assert page.evaluate(MATH_DONE, MATH_TIMEOUT_MS)
    assert page.locator("mjx-container").count() == 2  # typeset, not left as text
    assert math_errors(page) == []
