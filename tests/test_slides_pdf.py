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
def test_chapter_deck_is_offline_and_opens(deck_dir, chromium):
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
MATHJAX = ROOT / "node_modules" / "mathjax" / "es5"
#: the chapter `make test` prints: its players end on a latitude circle, far from their start
PRINTED_CHAPTER = "ch04_rope.html"


def _printed_in_make_test(pages):
    """What `make test` prints itself (to stay in its time budget): the problem sets and
    chapter 4 (a player, a twin view, an explorer and two still spheres; without it, the
    chapter with the most spheres).  `make pdf` prints and checks every page."""
    chapters = [p for p in pages if p.name.startswith("ch")]
    rest = [p for p in pages if not p.name.startswith("ch")]
    if chapters:
        named = [p for p in chapters if p.name == PRINTED_CHAPTER]
        rest.append(named[0] if named else max(chapters, key=print_pdf.renderer_count))
    return rest


def _png(data: bytes):
    from PIL import Image

    return Image.open(io.BytesIO(data)).convert("RGB")


def _change(a, b) -> float:
    """Fraction of pixels that differ noticeably between two pictures (PIL images or PNG
    bytes) of one canvas.  Two screenshots of one canvas may differ by a row of pixels and be
    offset by one, so the pictures are compared at shifts of up to one pixel each way and the
    best match counts; pictures whose sizes differ by more than 2 pixels differ everywhere."""
    import numpy as np

    a = _png(a) if isinstance(a, bytes) else a
    b = _png(b) if isinstance(b, bytes) else b
    (wa, ha), (wb, hb) = a.size, b.size
    if abs(wa - wb) > 2 or abs(ha - hb) > 2:
        return 1.0
    w, h = min(wa, wb) - 2, min(ha, hb) - 2
    x = np.asarray(a, dtype=float)[1:h + 1, 1:w + 1]
    y = np.asarray(b, dtype=float)
    return min(float(np.mean(np.abs(x - y[i:i + h, j:j + w]).max(axis=2) > 24))
               for i in range(3) for j in range(3))


def _same_picture(a, b, tol: float = 0.002) -> bool:
    """Whether two pictures differ in at most ``tol`` of their pixels (see _change)."""
    return _change(a, b) <= tol


def _pdf_pictures(pdf: Path) -> list:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(pdf.read_bytes()))
    return [im.image.convert("RGB") for page in reader.pages for im in page.images]


@pytest.fixture(scope="module")
def chromium():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=print_pdf.CHROMIUM,
                                     args=print_pdf.CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


def test_print_moves_a_player_to_the_last_frame_of_its_run(chromium, tmp_path):
    """Two players of one run on an exported page, the first shown at its first frame, the
    second at its last: once the printer has moved both to the end of the run, the first shows
    what the second showed at once (up to the time bead) and no longer its first frame."""
    sys.path.insert(0, str(ROOT))
    from tests.browser.pages import WIDGET_JS, export_page

    if not (WIDGET_JS / "embed-amd.js").is_file():
        pytest.skip("widget JavaScript not installed (make widget-js)")
    import ipywidgets as widgets

    import usaav_edu as ue
    from usaav_edu.widgets import TrajectoryPlayer

    model, x0, xi = ue.experiments.setup("rope", n=48, beta=1.0, seed=1)
    run = ue.simulate(model, x0, xi, t_max=20.0, n_frames=41, seed=1)
    first, last = TrajectoryPlayer(run, frame=0), TrajectoryPlayer(run, frame=-1)
    html = export_page(widgets.VBox([first, last]), tmp_path / "players.html", "players")

    page = chromium.new_page(viewport={"width": 1100, "height": 1400})
    try:
        page.add_init_script(print_pdf.COLLECT_ACTIONS)
        page.goto(html.as_uri())
        assert print_pdf.wait_canvases(page, 2, 60) == 2, "the players did not draw"
        time.sleep(1.0)
        shown_first = print_pdf._shot(page, 0)
        shown_last = print_pdf._shot(page, 1)
        assert page.evaluate("window.__usaavActions.length") == 2, "the players' models"
        spans = print_pdf.seek_players(page, 1.0)
        assert spans == pytest.approx([20.0, 20.0], rel=1e-5)
        end_first = print_pdf._shot(page, 0)
        print_pdf.seek_players(page, 0.0)
        start_last = print_pdf._shot(page, 1)
    finally:
        page.close()
    # the time bead moves from one end of its bar to the other (a few hundred pixels)
    moved = _change(shown_first, shown_last)
    assert moved > 0.02, f"the run hardly moves ({moved:.4f}): no test"
    assert _change(end_first, shown_last) < 0.004, "not moved to the last frame"
    assert _change(end_first, shown_first) > 0.02, "still at the first frame"
    assert _change(start_last, shown_first) < 0.004, "not moved back to the first frame"


@pytest.mark.skipif(not PAGES, reason=f"no built chapters under {SITE} (make book)")
def test_chapters_and_problem_sets_print_with_players_at_their_end(chromium, tmp_path):
    """The problem sets and chapter 4 print with every sphere as a picture, every player at the
    end of its run (the picture in the PDF is the last frame, not the first), no play buttons
    or sliders, and no page but the last less than half full."""
    problems = []
    printed = _printed_in_make_test(PAGES)
    for html in printed:
        t0 = time.perf_counter()
        pdf = tmp_path / f"{html.stem}.pdf"
        info = print_pdf.print_page(chromium, html, pdf, MATHJAX)
        problems += print_pdf.check_pdf(pdf, print_pdf.page_title(html))
        if info["pictures"] != info["renderers"]:
            problems.append(f"{html.name}: {info['pictures']} pictures for "
                            f"{info['renderers']} spheres")
        if info["controls_shown"]:
            problems.append(f"{html.name}: {info['controls_shown']} controls in print")
        sparse = print_pdf.sparse_pages(pdf)
        if sparse:
            problems.append(f"{html.name}: pages (number, fill) less than half full: {sparse}")
        if info["renderers"]:
            pictures = _pdf_pictures(pdf)
            for k, end in info["end"].items():
                if not any(_same_picture(_png(end), p) for p in pictures):
                    problems.append(f"{html.name}: the picture of canvas {k} is not in the PDF")
            for k, start in info["start"].items():
                if _same_picture(start, info["end"][k], tol=0.004):
                    problems.append(f"{html.name}: player {k} printed at its first frame")
        print(f"{html.name}: {info['pictures']} spheres, {info['players']} players, "
              f"{time.perf_counter() - t0:.1f} s")
    chapter = [h for h in printed if h.name.startswith("ch")]
    if chapter and chapter[0].name == PRINTED_CHAPTER:
        assert print_pdf.renderer_count(chapter[0]) >= 4
    assert not problems, problems


@pytest.mark.skipif(not (PAGES and PDF_DIR.is_dir()), reason="no PDFs yet (make pdf)")
@pytest.mark.parametrize("html", PAGES, ids=lambda p: p.name)
def test_each_pdf_of_make_pdf_has_pages_and_title(html):
    pdf = PDF_DIR / f"{html.stem}.pdf"
    assert pdf.is_file(), f"{pdf} is missing: run make pdf"
    assert not print_pdf.check_pdf(pdf, print_pdf.page_title(html))
