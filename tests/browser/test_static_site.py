"""The built site serves its own widget JavaScript and MathJax, and names no CDN for them."""
from __future__ import annotations

import re

import pytest

from .pages import SITE, widget_pages

CDN = re.compile(r"(cdn\.jsdelivr\.net|unpkg\.com|cdnjs\.cloudflare\.com)[^\"' ]*"
                 r"(jupyter-widgets|html-manager|jupyter-threejs|require|mathjax)", re.I)
SCRIPT = re.compile(r'<script[^>]*\ssrc="([^"]+)"')


def test_no_cdn_for_widget_code_or_math():
    pages = sorted(SITE.rglob("*.html"))
    assert pages, f"{SITE} is missing: build the book first (make book)"
    hits = {str(p.relative_to(SITE)): CDN.findall(p.read_text(encoding="utf-8", errors="replace"))
            for p in pages}
    assert not {k: v for k, v in hits.items() if v}, hits


@pytest.mark.parametrize("html", widget_pages(), ids=lambda p: str(p.relative_to(SITE)))
def test_widget_scripts_are_local_files(html):
    scripts = SCRIPT.findall(html.read_text(encoding="utf-8"))
    widget = [s for s in scripts if "widgets-js/" in s]
    names = [s.split("?")[0].rsplit("/", 1)[-1] for s in widget]
    assert names == ["require.js", "require-config.js", "embed-amd.js"], scripts
    for src in widget:
        assert "://" not in src, src
        target = (html.parent / src.split("?")[0]).resolve()
        assert target.is_file(), f"{src} does not exist in the site"
    threejs = SITE / "widgets-js" / "jupyter-threejs" / "index.js"
    assert threejs.is_file()
