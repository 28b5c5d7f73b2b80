"""Slides and printable PDFs.

`make test` runs this file after the book build (next to tests/browser), so:

* the slide tests convert a small synthetic notebook and one real chapter WITHOUT executing it
  (seconds): the derived slide structure, the MyST rewriting, solutions only in speaker notes, and
  a deck that loads reveal.js and MathJax from its own lib/ and opens offline in chromium;
* the PDF test prints the problem sets and the chapter with the most 3-D widgets of the built book
  (`_build/html`, or USAAV_BOOK_HTML) into a temporary folder with tools/print_pdf.py (printing
  every chapter takes minutes, too long for `make test`), and checks that each PDF has pages,
  contains the page's title, and shows every 3-D widget as a picture; when `make pdf` has run,
  every PDF in `_build/pdf` is checked for pages and title too.  Without a built book the PDF
  tests are skipped.
"""
from __future__ import annotations

import io
import os
import re
import sys
import time
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import print_pdf  # noqa: E402
import slides  # noqa: E402

SITE = Path(os.environ.get("USAAV_BOOK_HTML", ROOT / "_build" / "html")).resolve()
CHAPTERS = sorted((ROOT / "book").glob("ch*.ipynb"))


def _nb(*cells):
    nb = nbformat.v4.new_notebook()
    for kind, src in cells:
        nb.cells.append(nbformat.v4.new_markdown_cell(src) if kind == "md"
                        else nbformat.v4.new_code_cell(src))
    return nb


SAMPLE = _nb(
    ("md", "# Title\n\nIntro with {cite}`su2021roformer` and {prf:ref}`thm-a`.\n\n## First\n\nText."),
    ("code", "x = 1"),
    ("md", "### Detail\n\n```{prf:theorem} Big\n:label: thm-a\n\nStatement $x^2$.\n```"),
    ("md", "## Exercises\n\n```{exercise} Ex one\n:label: ex-1\n\nDo it.\n```\n\n"
           "````{solution} ex-1\n:class: dropdown\n\nSECRET SOLUTION\n\n```python\nprint(1)\n```\n````"),
    ("md", "## References\n\n```{bibliography}\n:filter: docname in docnames\n```"),
)


def _types(nb):
    return [(c.metadata["slideshow"]["slide_type"], c.source.split("\n")[0]) for c in nb.cells]


def test_headings_start_slides_and_solutions_go_to_notes():
    deck = slides.slide_cells(SAMPLE, bib={"su2021roformer": "Su et al. 2021"})
    types = _types(deck)
    assert types[0] == ("slide", "# Title")
    assert ("slide", "## First") in types and ("subslide", "### Detail") in types
    assert ("slide", "## Exercises") in types
    notes = [c.source for c in deck.cells if c.metadata["slideshow"]["slide_type"] == "notes"]
    assert len(notes) == 1 and "SECRET SOLUTION" in notes[0]
    shown = "\n".join(c.source for c in deck.cells
                      if c.metadata["slideshow"]["slide_type"] != "notes")
    assert "SECRET SOLUTION" not in shown
    assert "(Su et al. 2021)" in shown and "{cite}" not in shown and "thm-a" in shown
    assert "**Theorem** (Big)." in shown and ":label:" not in shown
    assert "References" not in shown and "bibliography" not in shown
    exercise = [t for t, s in types if "usaav-exercise" in s]
    assert exercise == ["subslide"]


def test_long_sections_are_split_into_subslides():
    long_text = "\n\n".join(f"Paragraph {k} " + "word " * 30 for k in range(12))
    deck = slides.slide_cells(_nb(("md", "## Long"), ("md", long_text), ("md", long_text)), bib={})
    kinds = [t for t, _ in _types(deck)]
    assert kinds[0] == "slide" and "subslide" in kinds[1:]


def test_author_slide_types_are_kept():
    nb = _nb(("md", "## A"), ("code", "1"), ("code", "2"))
    nb.cells[2].metadata["slideshow"] = {"slide_type": "fragment"}
    assert _types(slides.slide_cells(nb, bib={}))[2][0] == "fragment"


def test_bibliography_labels():
    bib = slides.read_bib(ROOT / "book" / "references.bib")
    assert bib["su2021roformer"] == "Su et al. 2021"
    assert bib["imaizumi2026antimode"] == "Imaizumi et al. 2026"


@pytest.fixture(scope="module")
def deck_dir(tmp_path_factory):
    if not (ROOT / "node_modules" / "reveal.js").is_dir() or \
            not (ROOT / "_static_widgets" / "widgets-js").is_dir():
        pytest.skip("reveal.js / widget JavaScript not installed (make widget-js)")
    out = tmp_path_factory.mktemp("slides")
    slides.copy_libs(out, ROOT / "node_modules", ROOT / "_static_widgets" / "widgets-js")
    return out


@pytest.mark.skipif(not CHAPTERS, reason="no chapter notebooks yet")
def test_chapter_deck_is_offline_and_opens(deck_dir):
    chapter = CHAPTERS[0]
    deck = slides.convert(chapter, deck_dir, run=False)
    html = deck.read_text(encoding="utf-8")
    for ref in ('"lib/reveal.js/dist/reveal.js"', 'href="lib/reveal.js/dist/reveal.css"',
                'src="lib/mathjax/tex-chtml-full.js"', 'src="lib/widgets-js/require.js"'):
        assert ref in html, ref
    assert not re.search(r"cdn\.jsdelivr|unpkg\.com|cdnjs\.cloudflare", html), "the deck names a CDN"
    title = slides.chapter_title(nbformat.read(chapter, as_version=4))

    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=print_pdf.CHROMIUM,
                                     args=print_pdf.CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        outside, errors = [], []
        page.on("pageerror", lambda e: errors.append(str(e)))

        def route(r):
            if r.request.url.startswith(("file:", "data:", "blob:", "about:")):
                r.continue_()
            else:
                outside.append(r.request.url)
                r.abort()

        page.route("**/*", route)
        page.goto(deck.as_uri())
        page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=60000)
        n_slides = page.evaluate("Reveal.getTotalSlides()")
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.document",
                               timeout=60000)
        first = page.evaluate("document.querySelector('.reveal .slides section').innerText")
        browser.close()
    assert n_slides >= 5
    assert title.split(":")[0] in first
    assert not outside, f"the deck asked the network for {outside}"
    assert not errors, errors


# ---------------------------------------------------------------------------------------------


PAGES = print_pdf.pages_of(SITE) if SITE.is_dir() else []
PDF_DIR = ROOT / "_build" / "pdf"


def _printed_in_make_test(pages):
    """What `make test` prints itself (to stay in its time budget): the problem sets and the
    chapter with the most 3-D spheres.  `make pdf` prints and checks every page."""
    chapters = [p for p in pages if p.name.startswith("ch")]
    rest = [p for p in pages if not p.name.startswith("ch")]
    if chapters:
        rest.append(max(chapters, key=print_pdf.renderer_count))
    return rest


@pytest.mark.skipif(not PAGES, reason=f"no built chapters under {SITE} (make book)")
def test_chapters_and_problem_sets_print_with_spheres_as_pictures(tmp_path):
    from playwright.sync_api import sync_playwright

    mathjax = ROOT / "node_modules" / "mathjax" / "es5"
    problems = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=print_pdf.CHROMIUM,
                                     args=print_pdf.CHROMIUM_ARGS, headless=True)
        for html in _printed_in_make_test(PAGES):
            t0 = time.perf_counter()
            pdf = tmp_path / f"{html.stem}.pdf"
            info = print_pdf.print_page(browser, html, pdf, mathjax)
            problems += print_pdf.check_pdf(pdf, print_pdf.page_title(html))
            if info["pictures"] != info["renderers"]:
                problems.append(f"{html.name}: {info['pictures']} pictures for "
                                f"{info['renderers']} spheres")
            print(f"{html.name}: {info['pictures']} spheres, {time.perf_counter() - t0:.1f} s")
        browser.close()
    assert not problems, problems


@pytest.mark.skipif(not (PAGES and PDF_DIR.is_dir()), reason="no PDFs yet (make pdf)")
@pytest.mark.parametrize("html", PAGES, ids=lambda p: p.name)
def test_each_pdf_of_make_pdf_has_pages_and_title(html):
    pdf = PDF_DIR / f"{html.stem}.pdf"
    assert pdf.is_file(), f"{pdf} is missing: run make pdf"
    assert not print_pdf.check_pdf(pdf, print_pdf.page_title(html))
