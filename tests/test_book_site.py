"""tools/book_site.py: the text search excerpts are cut from, and the download menu.

The search page of the built book answers its fetch of a page from the text the build wrote
(``article_text`` of each page, in ``excerpts_script``); the browser checks are in
tests/browser/test_reading_tools.py.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from tools import book_site

ROOT = Path(__file__).resolve().parents[1]

PAGE = """<html><head><script>var head = 1;</script></head><body>
<nav>the sidebar, not the article</nav>
<article class="bd-article">
<section id="collapse"><h1>Collapse<a class="headerlink" href="#collapse">#</a></h1>
<p>Tokens <em>attract</em> each other &amp; x &lt; y.<br>Next line.</p>
<script type="application/vnd.jupyter.widget-state+json">{"state": "898804 bytes"}</script>
<style>.x { color: red }</style>
<section id="energy"><h2>The energy</h2><p>It rises.</p></section>
</section>
</article>
<footer>the footer</footer></body></html>"""


def test_article_text_keeps_the_words_and_the_sections_only():
    text = book_site.article_text(PAGE)
    assert text == ('<section id="collapse"> Collapse Tokens attract each other &amp; x &lt; y. '
                    'Next line. <section id="energy"> The energy It rises. </section> </section>'), text
    for absent in ("sidebar", "footer", "898804", "color: red", "head = 1", "#"):
        assert absent not in text


def test_excerpts_script_holds_each_page_as_the_search_reads_it():
    script = book_site.excerpts_script({"book/ch01": "<section id=\"a\"> words </section>",
                                        "index": "home"})
    data = json.loads(re.search(r"var pages = (\{.*?\});", script, re.S).group(1))
    assert data == {"book/ch01": '<div role="main"><section id="a"> words </section></div>',
                    "index": '<div role="main">home</div>'}
    assert script.isascii(), "the script is read in any encoding"
    assert "realFetch.apply(this, arguments)" in script  # other requests go on as before


def test_the_browsers_print_gives_way_to_the_printed_chapters():
    buttons = [{"type": "group", "label": "download-buttons", "buttons": [
        {"type": "link", "label": "download-source-button", "url": "../_sources/ch01.ipynb"},
        {"type": "javascript", "label": "download-pdf-button", "javascript": "window.print()"}]},
        {"type": "javascript", "label": "fullscreen-button", "javascript": "toggleFullScreen()"}]
    out = book_site.without_print_button(buttons, "reference/faq.html#faq-print")
    menu = out[0]["buttons"]
    assert [b["label"] for b in menu] == ["download-source-button", "printed-chapters-button"]
    assert menu[1]["type"] == "link" and menu[1]["url"] == "reference/faq.html#faq-print"
    assert "window.print()" not in json.dumps(out)
    assert out[1]["label"] == "fullscreen-button"


def test_a_built_notebook_waits_for_every_output_of_a_cell_and_raises_without_it(monkeypatch):
    import nbformat
    from jupyter_cache.executors import utils

    calls = []
    monkeypatch.setattr(utils, "executenb", lambda nb, **kwargs: calls.append(kwargs))
    book_site.wait_for_all_output()
    book_site.wait_for_all_output()  # the extension loaded twice wraps once
    # the path myst-nb's cache and force modes take
    result = utils.single_nb_execution(nbformat.v4.new_notebook(), cwd=None, timeout=30,
                                       allow_errors=False)
    assert result.err is None
    assert len(calls) == 1
    assert calls[0]["iopub_timeout"] == book_site.IOPUB_TIMEOUT_S >= 60
    assert calls[0]["raise_on_iopub_timeout"] is True
    assert calls[0]["timeout"] == 30


def test_a_callers_own_iopub_settings_are_kept():
    seen = {}
    run = book_site.waiting_for_all_output(lambda nb, **kwargs: seen.update(kwargs))
    run(None, iopub_timeout=7, raise_on_iopub_timeout=False)
    assert seen == {"iopub_timeout": 7, "raise_on_iopub_timeout": False}
    run(None)
    assert seen == {"iopub_timeout": book_site.IOPUB_TIMEOUT_S, "raise_on_iopub_timeout": True}
