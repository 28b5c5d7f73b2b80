"""Slides and printable PDFs.

`make test` runs this file after the book build (next to tests/browser), so:

* the slide tests check the derived slide structure, the MyST rewriting (references show the
  built book's numbers and titles, citations authors and years), and what goes to the speaker
  notes (solutions, check cells, long code) on small synthetic notebooks (milliseconds); then
  they make every chapter's deck as `make slides` does after the book build (outputs from the
  build, no notebook runs here), check that no deck's prose shows a label or a MyST role, and
  open each deck offline in chromium, step through every slide and check that none overflows;
* the PDF tests print a page of two players (one of them moved to the end of its run, which
  must then look like the other, shown at its last frame), then the problem sets and chapter 4
  of the built book (`_build/html`, or USAAV_BOOK_HTML) into a temporary folder with
  tools/print_pdf.py (printing every chapter takes minutes, too long for `make test`), and
  check that each PDF has pages and the page's title, shows every 3-D widget as a picture and
  every player at the end of its run (its picture in the PDF, unlike its first frame), prints
  no play buttons or sliders and has no page but the last more than a quarter empty; when
  `make pdf` has run, every PDF in `_build/pdf` is checked for pages and title too.  Without a built book
  these tests are skipped.
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
    ("md", "# Title\n\nIntro with {cite}`su2021roformer` and {prf:ref}`thm-a`.\n\n"
           "## First\n\nText."),
    ("code", "x = 1"),
    ("md", "### Detail\n\n```{prf:theorem} Big\n:label: thm-a\n\nStatement $x^2$.\n```"),
    ("md", "## Exercises\n\n```{exercise} Ex one\n:label: ex-1\n\nDo it.\n```\n\n"
           "````{solution} ex-1\n:class: dropdown\n\nSECRET SOLUTION\n\n```python\nprint(1)\n"
           "```\n````"),
    ("md", "## References\n\n```{bibliography}\n:filter: docname in docnames\n```"),
)


def _types(nb):
    return [(c.metadata["slideshow"]["slide_type"], c.source.split("\n")[0]) for c in nb.cells]


def _shown(deck):
    return "\n".join(c.source for c in deck.cells
                     if c.metadata["slideshow"]["slide_type"] != "notes")


def _notes(deck):
    return [c.source for c in deck.cells if c.metadata["slideshow"]["slide_type"] == "notes"]


def test_headings_start_slides_and_solutions_go_to_notes():
    deck = slides.slide_cells(SAMPLE, bib={"su2021roformer": ("Su et al.", "2021")})
    types = _types(deck)
    assert types[0] == ("slide", "# Title")
    assert ("slide", "## First") in types and ("subslide", "### Detail") in types
    assert ("slide", "## Exercises") in types
    notes = _notes(deck)
    assert len(notes) == 1 and "SECRET SOLUTION" in notes[0]
    shown = _shown(deck)
    assert "SECRET SOLUTION" not in shown
    assert "(Su et al., 2021)" in shown and "{cite}" not in shown
    # without a built book a reference shows the kind and title of its target
    assert "Theorem (Big)" in shown and "thm-a" not in shown
    assert "**Theorem** (Big)." in shown and ":label:" not in shown
    assert "References" not in shown and "bibliography" not in shown
    exercise = [t for t, s in types if "usaav-exercise" in s]
    assert exercise == ["subslide"]


def test_long_sections_are_split_into_subslides():
    long_text = "\n\n".join(f"Paragraph {k} " + "word " * 30 for k in range(12))
    deck = slides.slide_cells(_nb(("md", "## Long"), ("md", long_text), ("md", long_text)),
                              bib={})
    kinds = [t for t, _ in _types(deck)]
    assert kinds[0] == "slide" and "subslide" in kinds[1:]


def test_author_slide_types_are_kept():
    nb = _nb(("md", "## A"), ("code", "1"), ("code", "2"))
    nb.cells[2].metadata["slideshow"] = {"slide_type": "fragment"}
    assert _types(slides.slide_cells(nb, bib={}))[2][0] == "fragment"


def test_bibliography_labels():
    bib = slides.read_bib(ROOT / "book" / "references.bib")
    assert bib["su2021roformer"] == ("Su et al.", "2021")
    assert bib["imaizumi2026antimode"] == ("Imaizumi et al.", "2026")
    assert slides.cite_text("cite", ["ch04-su2021roformer", "imaizumi2026antimode"], bib,
                            "ch04-") == "(Su et al., 2021; Imaizumi et al., 2026)"
    assert slides.cite_text("cite:t", ["su2021roformer"], bib) == "Su et al. (2021)"


def _site(tmp_path):
    """A two-page built book in the HTML form of Jupyter Book, numbers as it prints them."""
    book = tmp_path / "site" / "book"
    book.mkdir(parents=True)
    (book / "ch.html").write_text("""<html><body><article><h1>Sample chapter<a>#</a></h1>
<p>See <a class="reference internal" href="#thm-a">Theorem 3.2</a>.</p>
<div class="proof theorem admonition" id="thm-a">
<p class="admonition-title"><span class="caption-number">Theorem 3.2 </span> (Big)</p></div>
<div class="exercise admonition" id="ex-1">
<p class="admonition-title"><span class="caption-number">Exercise 3.7 </span> (Ex one)</p></div>
<span id="sec-later"></span><h2>A later section<a class="headerlink">#</a></h2>
</article></body></html>""", encoding="utf-8")
    (book / "other.html").write_text("<article><h1>The other page</h1></article>",
                                     encoding="utf-8")
    return tmp_path / "site"


def test_references_show_the_numbers_and_titles_of_the_built_book(tmp_path):
    refs = slides.Refs.from_site(_site(tmp_path))
    nb = _nb(("md", "# T\n\nBy {prf:ref}`thm-a`, see {ref}`sec-later`, {doc}`other`, "
                    "{cite:t}`ch04-su2021roformer` and {ref}`that one <ex-1>`."))
    nb.cells += SAMPLE.cells[2:4]
    deck = slides.slide_cells(nb, bib={"su2021roformer": ("Su et al.", "2021")}, refs=refs,
                              doc="book/ch")
    shown = _shown(deck)
    assert "By Theorem 3.2, see A later section, The other page, Su et al. (2021) and " \
           "that one." in shown
    assert "**Theorem 3.2** (Big)." in shown and "**Exercise 3.7** (Ex one)." in shown
    assert "Solution to Exercise 3.7." in "\n".join(_notes(deck))
    for label in ("thm-a", "sec-later", "ex-1", "{prf:ref}", "{doc}"):
        assert label not in shown


def test_a_figure_cell_shows_its_caption_with_the_book_number(tmp_path):
    nb = _nb(("md", "## Runs"), ("code", "plt.plot([1, 2])"))
    nb.cells[1].metadata["mystnb"] = {"figure": {"caption": "Energy, by {prf:ref}`thm-a`.",
                                                 "name": "fig-energy"}}
    refs = slides.Refs.from_site(_site(tmp_path))
    refs.number["fig-energy"] = "Fig. 3.4"
    deck = slides.slide_cells(nb, bib={}, refs=refs, doc="book/ch")
    assert "**Fig. 3.4.** Energy, by Theorem 3.2." in _shown(deck)


LONG = "\n".join(f"y{k} = {k}" for k in range(slides.LONG_CODE + 3))


def _code(src, tags=(), outputs=()):
    cell = nbformat.v4.new_code_cell(src)
    cell.metadata["tags"] = list(tags)
    cell.outputs = list(outputs)
    cell.execution_count = 1
    return cell


def test_checks_and_long_code_go_to_the_speaker_notes():
    png = nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo=",
                                                       "text/plain": "<Figure>"})
    printed = nbformat.v4.new_output("stream", name="stdout", text="gap = 1e-12\n")
    kept = nbformat.v4.new_output("stream", name="stdout", text="1\n")
    nb = _nb(("md", "## Runs"))
    nb.cells += [
        _code("z = 1\nassert z == 1", tags=["check"], outputs=[printed]),       # tagged
        _code("# CHECK (theorem): gaps\ngap = 0.0\nassert gap < 1"),            # comment
        _code("g = 2\nprint(g)\nassert g > 1\nassert g < 3"),                  # mostly asserts
        _code("SHORT_KEPT = 1\nprint(SHORT_KEPT)", outputs=[kept]),
        _code(LONG + "\nplt.show()", outputs=[png]),                            # long code
        _code("run = 3\nshown_part = run\n# CHECK: the run\nassert run == 3"),   # mixed
    ]
    deck = slides.slide_cells(nb, bib={})
    code = [c for c in deck.cells if c.cell_type == "code"]
    notes = "\n".join(_notes(deck))
    visible = "\n".join(c.source for c in code)
    for text in ("assert z == 1", "assert gap < 1", "assert g > 1", "y3 = 3",
                 "assert run == 3", "gap = 1e-12"):
        assert text in notes and text not in visible, text
    assert "SHORT_KEPT = 1" in visible and "shown_part = run" in visible
    assert any(o.get("text") == "1\n" for c in code for o in c.outputs), "a short output stays"
    # the long cell's figure stays on the slide without its code
    figure = [c for c in code if any("image/png" in o.get("data", {}) for o in c.outputs)]
    assert len(figure) == 1 and figure[0].source == ""
    assert figure[0].metadata["transient"] == {"remove_source": True}
    # a check that prints only: nothing of it left on the slides
    assert not any("gap" in c.source or any("gap" in str(o) for o in c.outputs) for c in code)


@pytest.fixture(scope="module")
def chromium():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=print_pdf.CHROMIUM,
                                     args=print_pdf.CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    """Every chapter's deck, made as `make slides` makes it after the book build: outputs from
    the build (no notebook runs here), numbers and titles from the built book."""
    if not (ROOT / "node_modules" / "reveal.js").is_dir() or \
            not (ROOT / "_static_widgets" / "widgets-js").is_dir():
        pytest.skip("reveal.js / widget JavaScript not installed (make widget-js)")
    if not CHAPTERS:
        pytest.skip("no chapter notebooks yet")
    if not (SITE / "book").is_dir():
        pytest.skip(f"no built book under {SITE} (make book)")
    out = tmp_path_factory.mktemp("slides")
    slides.copy_libs(out, ROOT / "node_modules", ROOT / "_static_widgets" / "widgets-js")
    refs = slides.book_refs(SITE)
    made = {}
    for chapter in CHAPTERS:
        # the build's outputs when it has them; never a notebook run here (text-only then)
        built = slides.executed_copy(chapter, SITE.parent) is not None
        made[chapter] = slides.convert(chapter, out, run=built, refs=refs, build=SITE.parent)
    return made


def _labels() -> set[str]:
    """Every label the book's sources define (blocks, sections)."""
    sources = sorted((ROOT / "book").rglob("*.ipynb")) + sorted((ROOT / "book").rglob("*.md"))
    refs = slides.Refs.from_sources(p for p in sources if ".ipynb_checkpoints" not in p.parts)
    return set(refs.kind) | set(refs.title)


def test_decks_show_numbers_and_names_not_labels(decks):
    """What a deck shows of the chapter's prose (not the speaker notes, not code) names no
    label and no MyST role: references read "Theorem 4.2", citations "Su et al., 2021"."""
    from bs4 import BeautifulSoup

    labels = _labels()
    assert len(labels) > 20
    problems = []
    numbered = 0
    for chapter, deck in decks.items():
        soup = BeautifulSoup(deck.read_text(encoding="utf-8"), "html.parser")
        for aside in soup.select("aside.notes"):
            aside.decompose()
        prose = " ".join(d.get_text(" ") for d in soup.select("div.jp-RenderedMarkdown"))
        found = sorted(lab for lab in labels if re.search(rf"(?<![\w-]){re.escape(lab)}(?![\w-])",
                                                          prose))
        if found:
            problems.append(f"{deck.name}: labels {found}")
        if re.search(r"\{(prf:ref|ref|numref|eq|doc|cite[\w:]*)\}", prose):
            problems.append(f"{deck.name}: a MyST role left as it is")
        numbered += len(re.findall(r"\b(Theorem|Definition|Proposition|Exercise) \d", prose))
        if re.search(r"\{cite|\(#cite:", chapter.read_text(encoding="utf-8")) and \
                not re.search(r"[A-Z]\w+( et al\.| and [A-Z]\w+)?,? \(?\d{4}", prose):
            problems.append(f"{deck.name}: no citation shows an author and a year")
    assert not problems, problems
    assert numbered > 20, "the decks show few numbered blocks: numbers not read from the book"


# Move through every slide of the deck; measure each right after it is shown
STEP_THROUGH = r"""
async () => {
  const out = [];
  const frame = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  for (const s of Reveal.getSlides()) {
    const idx = Reveal.getIndices(s);
    Reveal.slide(idx.h, idx.v);
    await frame();
    out.push({slide: `${idx.h}.${idx.v || 0}`, height: s.scrollHeight, room: s.clientHeight,
              width: s.scrollWidth, roomWidth: s.clientWidth,
              text: s.innerText.trim().slice(0, 60)});
  }
  return out;
}
"""


def test_every_deck_opens_offline_and_no_slide_overflows(decks, chromium):
    """Each deck opens from file:// offline with no error, draws every 3-D view, and no slide's
    content is taller or wider than the slide (1280 x 800, the screen reveal.js scales to)."""
    problems = []
    for chapter, deck in decks.items():
        t0 = time.perf_counter()
        html = deck.read_text(encoding="utf-8")
        for ref in ('"lib/reveal.js/dist/reveal.js"', 'href="lib/reveal.js/dist/reveal.css"',
                    'src="lib/mathjax/tex-chtml-full.js"', 'src="lib/widgets-js/require.js"'):
            assert ref in html, f"{deck.name}: {ref}"
        assert not re.search(r"cdn\.jsdelivr|unpkg\.com|cdnjs\.cloudflare", html), \
            f"{deck.name} names a CDN"
        page = chromium.new_page(viewport={"width": 1280, "height": 800})
        outside, errors = [], []
        page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))

        def route(r, outside=outside):
            if r.request.url.startswith(("file:", "data:", "blob:", "about:")):
                r.continue_()
            else:
                outside.append(r.request.url)
                r.abort()

        try:
            page.route("**/*", route)
            page.goto(deck.as_uri())
            page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=60000)
            page.wait_for_function("() => window.MathJax && MathJax.startup && "
                                   "MathJax.startup.promise", timeout=60000)
            page.evaluate("() => MathJax.startup.promise")
            spheres = print_pdf.renderer_count(deck)
            drawn = print_pdf.wait_canvases(page, spheres, 90) if spheres else 0
            page.wait_for_function("() => Array.from(document.images).every((i) => i.complete)")
            first = page.evaluate("document.querySelector('.reveal .slides section').innerText")
            measured = page.evaluate(STEP_THROUGH)
        finally:
            page.close()
        title = slides.chapter_title(nbformat.read(chapter, as_version=4))
        if title.split(":")[0] not in first:
            problems.append(f"{deck.name}: first slide does not show the title {title!r}")
        if drawn != spheres:
            problems.append(f"{deck.name}: {drawn} of {spheres} 3-D views drawn")
        if len(measured) < 5:
            problems.append(f"{deck.name}: only {len(measured)} slides")
        for m in measured:
            if m["height"] > m["room"] + 2 or m["width"] > m["roomWidth"] + 2:
                problems.append(f"{deck.name} slide {m['slide']} overflows: content "
                                f"{m['width']} x {m['height']} on {m['roomWidth']} x "
                                f"{m['room']} ({m['text']!r})")
        if outside:
            problems.append(f"{deck.name} asked the network for {outside}")
        if errors:
            problems.append(f"{deck.name}: errors {errors}")
        print(f"{deck.name}: {len(measured)} slides, {drawn} spheres, "
              f"{time.perf_counter() - t0:.1f} s")
    assert not problems, problems


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
    or sliders, and no page but the last more than a quarter empty."""
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
            problems.append(f"{html.name}: pages (number, fill) more than a quarter empty: "
                            f"{sparse}")
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


def test_the_chapter_title_is_read_from_the_cells_the_book_shows():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("```yaml\n# JupyterLab numbers this chapter's blocks\n```",
                                      metadata={"tags": ["remove-cell"]}),
        nbformat.v4.new_markdown_cell("# Tokens as particles\n\nText."),
    ])
    assert slides.chapter_title(nb) == "Tokens as particles"
