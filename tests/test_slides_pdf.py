"""Slides and printable PDFs.

`make test` runs this file after the book build (next to tests/browser), so:

* the slide tests read every session outline in book/seminar/slides/ (whoever wrote it) and check
  the format and the design rules on the deck made from it: 12 to 25 slides, at least 80% titled,
  at most 25% with code, notes on at least half, notes that add up to about 90 minutes, no debug
  output and no label or MyST role on a slide; that every `fig:` and `cell:` picture names a cell
  of the saved chapter notebooks; that bad outlines stop with an error naming the file, the slide
  and what was expected; and, on small synthetic notebooks, that a picture brings its images and
  widget views (with the widget state they need) and never a cell's printed output (milliseconds
  each).  Then every deck is made as `make slides` makes it after the book build (outputs from
  the build, no notebook runs here), opened offline in chromium, stepped through slide by slide,
  and no slide may overflow;
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

from tools import print_pdf, slides

ROOT = Path(__file__).resolve().parents[1]

SITE = Path(os.environ.get("USAAV_BOOK_HTML", ROOT / "_build" / "html")).resolve()
OUTLINES = slides.outline_paths()


def _ids(paths):
    return [p.stem for p in paths]


@pytest.fixture(scope="module")
def book():
    """The saved chapter notebooks (no outputs), by name."""
    return slides.source_notebooks()


@pytest.fixture(scope="module")
def refs():
    """Numbers and titles as the built book shows them; kinds and titles without one."""
    return slides.book_refs(SITE if (SITE / "book").is_dir() else None)


def test_there_are_outlines_for_the_first_sessions():
    names = {p.stem for p in OUTLINES}
    assert {"session01", "session02", "session03", "session04"} <= names, sorted(names)


@pytest.mark.parametrize("path", OUTLINES, ids=_ids(OUTLINES))
def test_each_outline_parses_and_names_its_session_and_chapter(path, book):
    outline = slides.read_outline(path)
    assert outline.name == path.stem, f"{path.name} says session {outline.session}"
    assert outline.meta["chapter"] in book
    assert all(s.title.strip() for s in outline.slides)


@pytest.mark.parametrize("path", OUTLINES, ids=_ids(OUTLINES))
def test_each_deck_keeps_the_design_rules(path, book, refs):
    """12 to 25 slides, at least 80% titled, at most 25% with code, notes on at least half,
    notes adding up to 80 to 100 minutes, no debug output on a slide (pictures as framed
    placeholders: the rules do not depend on the outputs)."""
    outline = slides.read_outline(path)
    ctx = slides.Context(refs=refs, doc=f"book/{outline.meta['chapter']}")
    m = slides.measure_deck(slides.deck_html(outline, None, ctx, book=book))
    assert 12 <= m.slides <= 25, f"{m.slides} slides"
    assert m.share("titled") >= 0.8, f"{m.titled} of {m.slides} titled"
    assert m.share("code") <= 0.25, f"{m.code} of {m.slides} with code"
    assert m.share("notes") >= 0.5, f"{m.notes} of {m.slides} with notes"
    assert 80 <= m.minutes <= 100, f"the notes add up to {m.minutes:g} minutes"
    assert not m.debug_lines(), m.debug_lines()


@pytest.mark.parametrize("path", OUTLINES, ids=_ids(OUTLINES))
def test_pictures_name_cells_of_the_chapter_notebooks(path, book):
    """Every fig: names a figure (metadata.mystnb.figure.name) and every cell: a code cell id
    of the saved notebooks; a session shows two or more of them."""
    outline = slides.read_outline(path)
    found = slides.resolve_pictures(outline, book)
    assert len(found) >= 2, f"{path.name}: {len(found)} pictures"
    for address, pic in found.items():
        cell = next(c for c in book[pic.chapter].cells if c.get("id") == pic.cell_id)
        assert cell.cell_type == "code", address
        if address.startswith("fig:"):
            assert cell.metadata["mystnb"]["figure"]["name"] == address[len("fig:"):]


def _labels() -> set[str]:
    """Every label the book's sources define (blocks, sections)."""
    sources = sorted((ROOT / "book").rglob("*.ipynb")) + sorted((ROOT / "book").rglob("*.md"))
    refs = slides.Refs.from_sources(p for p in sources if ".ipynb_checkpoints" not in p.parts
                                    and "slides" not in p.parts)
    return set(refs.kind) | set(refs.title)


def test_decks_show_numbers_and_names_not_labels(book, refs):
    """What a deck shows (not the notes) names no label and no MyST role: references read
    "Theorem 1.2" (with a built book) or "Theorem (title)", citations "Author et al. (year)"."""
    labels = _labels()
    assert len(labels) > 20
    problems = []
    for path in OUTLINES:
        outline = slides.read_outline(path)
        ctx = slides.Context(refs=refs, doc=f"book/{outline.meta['chapter']}")
        shown = " ".join(slides.measure_deck(slides.deck_html(outline, None, ctx,
                                                              book=book)).shown)
        found = sorted(lab for lab in labels
                       if re.search(rf"(?<![\w:/-]){re.escape(lab)}(?![\w-])", shown))
        if found:
            problems.append(f"{path.name}: labels {found}")
        if re.search(r"\{(prf:ref|ref|numref|eq|doc|cite[\w:]*)\}", shown):
            problems.append(f"{path.name}: a MyST role left as it is")
    assert not problems, problems


# ---------------------------------------------------------------------------------------------
# the format, on small outlines


GOOD = """---
session: 3
title: A small session
chapter: ch01_particles
---

# A small session

Opening words.

Note:
- 0-10 min: welcome.

---

## The energy

$$E_\\beta = \\frac{1}{2\\beta n^2}\\sum_{i,j} e^{\\beta\\langle x_i, x_j\\rangle}$$

- tokens $x_i \\in S^{d-1}$ and *one* idea

Note:
- 10-30 min (of this block: 5). Ask where $V = I$ enters.

---

## Demo

```python
# a comment, not a title
x = 1
```

---

## A picture

![](fig:ch1-fig-energy)
"""


def test_an_outline_is_read_into_front_matter_slides_and_notes():
    outline = slides.parse_outline(GOOD, "small.md")
    assert outline.meta == {"session": 3, "title": "A small session",
                            "chapter": "ch01_particles"}
    assert outline.name == "session03"
    assert [s.title for s in outline.slides] == ["A small session", "The energy", "Demo",
                                                  "A picture"]
    assert [s.level for s in outline.slides] == [1, 2, 2, 2]
    assert outline.slides[1].notes.startswith("- 10-30 min (of this block: 5)")
    assert "# a comment, not a title" in outline.slides[2].body
    assert outline.slides[2].notes == "" and outline.slides[3].images == [
        ("", "fig:ch1-fig-energy")]
    assert [s.minutes for s in outline.slides] == [10, 5, None, None]


@pytest.mark.parametrize("note, minutes", [
    ("- 3 min. Point at the bound", 3), ("- 0-10 min: welcome", 10),
    ("- 10-30 min (of this block: 5). Derive it", 5), ("- 45 to 55 min: the demo", 10),
    ("- Point at the bound.\n- 3 min", None), ("", None)])
def test_the_minutes_of_a_note_are_read_from_its_first_line(note, minutes):
    assert slides.note_minutes(note) == minutes


def _bad(text, fragment):
    with pytest.raises(slides.OutlineError) as err:
        outline = slides.parse_outline(text, "book/seminar/slides/session03.md")
        slides.resolve_pictures(outline, slides.source_notebooks())
    message = str(err.value)
    assert message.startswith("book/seminar/slides/session03.md:"), message
    return message


def test_a_missing_front_matter_key_is_named():
    message = _bad(GOOD.replace("chapter: ch01_particles\n", ""), "chapter")
    assert "no key 'chapter'" in message and "session, title, chapter" in message
    message = _bad(GOOD.split("---\n", 2)[2], "front matter")
    assert "line 1: expected the front matter" in message


def test_a_slide_without_a_title_is_named_with_its_number():
    message = _bad(GOOD.replace("## Demo\n", "Demo, no title\n"), "slide")
    assert "slide 3 (line 26)" in message and "'## Title'" in message
    message = _bad(GOOD.replace("## A picture", "### A picture"), "slide")
    assert "slide 4" in message and "'## Title'" in message
    message = _bad(GOOD.replace("- tokens", "## Another title\n- tokens"), "slide")
    assert "slide 2" in message and "a second title" in message


def test_an_unknown_figure_or_cell_is_named_with_its_slide():
    message = _bad(GOOD.replace("fig:ch1-fig-energy", "fig:ch1-fig-enrgy"), "figure")
    assert "slide 4 ('A picture')" in message and "unknown figure name 'ch1-fig-enrgy'" in message
    assert "ch1-fig-energy" in message  # the near miss is suggested
    message = _bad(GOOD.replace("fig:ch1-fig-energy", "cell:ch01_particles/nope"), "cell")
    assert "slide 4" in message and "ch01_particles has no code cell with id 'nope'" in message
    message = _bad(GOOD.replace("fig:ch1-fig-energy", "energy.png"), "address")
    assert "slide 4" in message and "expected fig:<figure-name> or cell:<chapter>/<cell-id>" \
        in message
    message = _bad(GOOD.replace("chapter: ch01_particles", "chapter: ch01_particle"), "chapter")
    assert "chapter 'ch01_particle' is not a chapter of the book" in message


def test_math_reaches_mathjax_and_code_only_demo_slides():
    outline = slides.parse_outline(GOOD, "small.md")
    page = slides.deck_html(outline, None, slides.Context(bib={}))
    assert r"\(x_i \in S^{d-1}\)" in page and "<em>one</em>" in page
    assert r"\[E_\beta = \frac{1}{2\beta n^2}\sum_{i,j}" in page
    m = slides.measure_deck(page)
    assert (m.slides, m.titled, m.code, m.notes, m.minutes) == (4, 4, 1, 2, 15)


def test_the_measure_counts_untitled_slides_code_and_notes():
    page = """<div class="reveal"><div class="slides">
<section><h2>Titled</h2><pre><code>x = 1</code></pre><aside class="notes">talk</aside></section>
<section><p>embedded state 898804 bytes</p><aside class="notes"> </aside></section>
<section><section><h1>Nested</h1></section><section><h2></h2></section></section>
</div></div>"""
    m = slides.measure_deck(page)
    assert (m.slides, m.titled, m.code, m.notes) == (4, 2, 1, 1)
    assert m.debug_lines() == ["slide 2: embedded state 898804 bytes"]


def test_references_in_an_outline_show_the_numbers_of_the_built_book(tmp_path):
    refs = slides.Refs.from_site(_site(tmp_path))
    text = GOOD.replace("Opening words.", "By {prf:ref}`thm-a`, see {ref}`sec-later` and "
                        "{cite:t}`ch04-su2021roformer`.")
    page = slides.deck_html(slides.parse_outline(text, "small.md"), None,
                            slides.Context(bib={"su2021roformer": ("Su et al.", "2021")},
                                           refs=refs))
    assert "By Theorem 3.2, see A later section and Su et al. (2021)." in page


def _site(tmp_path):
    """A two-page built book in the HTML form of Jupyter Book, numbers as it prints them."""
    book = tmp_path / "site" / "book"
    book.mkdir(parents=True)
    (book / "ch.html").write_text("""<html><body><article><h1>Sample chapter<a>#</a></h1>
<p>See <a class="reference internal" href="#thm-a">Theorem 3.2</a>.</p>
<div class="proof theorem admonition" id="thm-a">
<p class="admonition-title"><span class="caption-number">Theorem 3.2 </span> (Big)</p></div>
<span id="sec-later"></span><h2>A later section<a class="headerlink">#</a></h2>
<figure id="ch1-fig-energy"><figcaption><span class="caption-number">Fig. 1.1 </span>
Energy.</figcaption></figure>
</article></body></html>""", encoding="utf-8")
    return tmp_path / "site"


def test_bibliography_labels():
    bib = slides.read_bib(ROOT / "book" / "references.bib")
    assert bib["su2021roformer"] == ("Su et al.", "2021")
    assert bib["imaizumi2026antimode"] == ("Imaizumi et al.", "2026")
    assert slides.cite_text("cite", ["ch04-su2021roformer", "imaizumi2026antimode"], bib,
                            "ch04-") == "(Su et al., 2021; Imaizumi et al., 2026)"
    assert slides.cite_text("cite:t", ["su2021roformer"], bib) == "Su et al. (2021)"


def test_a_chapter_the_build_has_not_run_is_executed_in_the_book_kernel(monkeypatch, tmp_path):
    """Without outputs from the build, a chapter runs as the book build runs it: in the kernel of
    tools/book_kernel/ (the one _config.yml maps python3 to), waiting for all of its output."""
    import nbclient
    import yaml

    from tools import book_site

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert slides.BOOK_KERNEL == config["sphinx"]["config"]["nb_kernel_rgx_aliases"]["python3"]
    assert (book_site.BOOK_KERNELS / "kernels" / slides.BOOK_KERNEL / "kernel.json").is_file()
    seen = {}

    class Client:
        def __init__(self, nb, **kwargs):
            seen.update(kwargs)

        def execute(self):
            seen["JUPYTER_PATH"] = os.environ.get("JUPYTER_PATH", "")

    monkeypatch.setattr(nbclient, "NotebookClient", Client)
    monkeypatch.setenv("JUPYTER_PATH", "/elsewhere")
    slides.execute(nbformat.v4.new_notebook(), tmp_path)
    assert seen["kernel_name"] == slides.BOOK_KERNEL and seen["store_widget_state"]
    assert seen["raise_on_iopub_timeout"] and seen["iopub_timeout"] == book_site.IOPUB_TIMEOUT_S
    assert seen["JUPYTER_PATH"].split(os.pathsep)[0] == str(book_site.BOOK_KERNELS)
    assert os.environ["JUPYTER_PATH"] == "/elsewhere"


# ---------------------------------------------------------------------------------------------
# pictures from an executed chapter


def _executed_chapter():
    """A stand-in for executed chapter 1: the energy figure's cell (a PNG and a printed line),
    a player cell (a widget view, its models linked, and a model nothing on a slide needs)."""
    nb = nbformat.v4.new_notebook()
    fig = nbformat.v4.new_code_cell("figs.energy(traj)", id="c005")
    fig.metadata["mystnb"] = {"figure": {"name": "ch1-fig-energy",
                                         "caption": "Energy, by {prf:ref}`thm-a`."}}
    fig.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="explorer: embedded state "
                               "898804 bytes\n"),
        nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo=",
                                                     "text/plain": "<Figure size 640x480>"})]
    player = nbformat.v4.new_code_cell("TrajectoryPlayer(traj)", id="c003")
    player.outputs = [nbformat.v4.new_output("display_data", data={
        slides.WIDGET_VIEW: {"model_id": "box", "version_major": 2, "version_minor": 0},
        "text/plain": "VBox()"})]
    nb.cells = [player, fig]

    def model(name, view, **state):
        return {"model_name": name, "model_module": "@jupyter-widgets/controls",
                "model_module_version": "2.0.0", "state": {"_view_name": view, **state}}

    nb.metadata["widgets"] = {slides.WIDGET_STATE: {"version_major": 2, "version_minor": 0,
                                                    "state": {
        "box": model("VBoxModel", "VBoxView", children=["IPY_MODEL_play", "IPY_MODEL_slider"],
                     layout="IPY_MODEL_layout"),
        "play": model("PlayModel", "PlayView"),
        "slider": model("IntSliderModel", "IntSliderView"),
        "layout": model("LayoutModel", "LayoutView"),
        "link": model("LinkModel", None, source=["IPY_MODEL_play", "value"],
                      target=["IPY_MODEL_slider", "value"]),
        "other": model("VBoxModel", "VBoxView", children=["IPY_MODEL_elsewhere"]),
        "elsewhere": model("HTMLModel", "HTMLView"),
    }}}
    return nb


def test_a_picture_brings_its_images_and_views_never_printed_output(tmp_path):
    text = GOOD.replace("![](fig:ch1-fig-energy)",
                        "![](fig:ch1-fig-energy)\n\n![The run](cell:ch01_particles/c003)")
    outline = slides.parse_outline(text, "small.md")
    refs = slides.Refs.from_site(_site(tmp_path))
    ctx = slides.Context(bib={}, refs=refs)
    page = slides.deck_html(outline, {"ch01_particles": _executed_chapter()}, ctx)
    assert 'src="data:image/png;base64,iVBORw0KGgo=" alt="Energy, by Theorem 3.2."' in page
    assert "Fig. 1.1</span> Energy, by Theorem 3.2." in page  # the book's number and caption
    assert '{"model_id": "box", "version_major": 2, "version_minor": 0}' in page
    assert "<figcaption>The run</figcaption>" in page
    m = slides.measure_deck(page)
    assert not m.debug_lines() and "<Figure size" not in page and "VBox()" not in page
    assert "898804" not in page  # the printed line, in no form
    state = re.search(r'widget-state\+json">(.*?)</script>', page, re.S).group(1)
    import json
    assert set(json.loads(state)["state"]) == {"box", "play", "slider", "layout", "link"}


def test_a_picture_without_output_is_an_error_naming_the_slide():
    nb = _executed_chapter()
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
    outline = slides.parse_outline(GOOD, "small.md")
    with pytest.raises(slides.OutlineError, match=r"small\.md: slide 4 \('A picture'\): "
                       r"fig:ch1-fig-energy \(ch01_particles/c005\) shows no picture"):
        slides.deck_html(outline, {"ch01_particles": nb}, slides.Context(bib={}))


def test_a_deck_is_written_through_a_rename_and_never_over_a_folder(tmp_path):
    target = tmp_path / "session01.html"
    slides.write_file(target, "one")
    slides.write_file(target, "two")
    assert target.read_text() == "two" and [p.name for p in tmp_path.iterdir()] == [target.name]
    (tmp_path / "folder.html").mkdir()
    with pytest.raises(SystemExit, match="not a regular file"):
        slides.write_file(tmp_path / "folder.html", "x")


def test_the_command_writes_one_deck_a_session_and_an_index(tmp_path, capsys):
    """`make slides` runs `tools/slides.py --out _build/slides`: a deck sessionKK.html per
    outline given, lib/ beside it, an index; a bad outline stops it before anything is written."""
    if not (ROOT / "node_modules" / "reveal.js").is_dir() or \
            not (ROOT / "_static_widgets" / "widgets-js").is_dir():
        pytest.skip("reveal.js / widget JavaScript not installed (make widget-js)")
    out = tmp_path / "slides"
    assert slides.main(["--out", str(out), "--build", str(tmp_path / "no-build"),
                        "--no-execute", str(OUTLINES[0])]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["index.html", "lib",
                                                     f"{OUTLINES[0].stem}.html"]
    assert (out / "lib" / "reveal.js" / "dist" / "reveal.js").is_file()
    bad = tmp_path / "session09.md"
    bad.write_text(GOOD.replace("## Demo\n", ""), encoding="utf-8")
    assert slides.main(["--out", str(tmp_path / "other"), "--no-execute", str(bad)]) == 2
    assert "slide 3" in capsys.readouterr().err and not (tmp_path / "other").exists()


# ---------------------------------------------------------------------------------------------
# every deck in chromium


@pytest.fixture(scope="module")
def chromium():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=print_pdf.CHROMIUM,
                                     args=print_pdf.CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()



@pytest.fixture(scope="module")
def decks(tmp_path_factory, book, refs):
    """Every session's deck, made as `make slides` makes it after the book build: outputs from
    the build (no notebook runs here; a deck whose chapters the build lacks shows placeholders),
    numbers and titles from the built book."""
    if not (ROOT / "node_modules" / "reveal.js").is_dir() or \
            not (ROOT / "_static_widgets" / "widgets-js").is_dir():
        pytest.skip("reveal.js / widget JavaScript not installed (make widget-js)")
    if not (SITE / "book").is_dir():
        pytest.skip(f"no built book under {SITE} (make book)")
    out = tmp_path_factory.mktemp("slides")
    slides.copy_libs(out, ROOT / "node_modules", ROOT / "_static_widgets" / "widgets-js")
    paths = slides.chapter_paths()
    executed = {}
    made = {}
    for path in OUTLINES:
        outline = slides.read_outline(path)
        needed = {p.chapter for p in slides.resolve_pictures(outline, book).values()}
        for name in needed - set(executed):
            executed[name] = slides.executed_copy(paths[name], SITE.parent)
        notebooks = {n: executed[n] for n in needed}
        if any(nb is None for nb in notebooks.values()):
            notebooks = None
        ctx = slides.Context(refs=refs, doc=f"book/{outline.meta['chapter']}")
        target = out / f"{outline.name}.html"
        slides.write_file(target, slides.deck_html(outline, notebooks, ctx, book=book))
        made[outline.name] = (outline, target, notebooks is not None)
    return made


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
    """Each deck opens from file:// offline with no error, shows its title first, draws every
    3-D view, shows no debug output, and no slide's content is taller or wider than the slide
    (1280 x 800, the screen reveal.js scales to)."""
    problems = []
    for outline, deck, with_outputs in decks.values():
        t0 = time.perf_counter()
        html = deck.read_text(encoding="utf-8")
        for ref in ('"lib/reveal.js/dist/reveal.js"', 'href="lib/reveal.js/dist/reveal.css"',
                    'src="lib/mathjax/tex-chtml-full.js"', 'src="lib/widgets-js/require.js"'):
            assert ref in html, f"{deck.name}: {ref}"
        assert not re.search(r"cdn\.jsdelivr|unpkg\.com|cdnjs\.cloudflare", html), \
            f"{deck.name} names a CDN"
        if not with_outputs:
            problems.append(f"{deck.name}: the book build has no outputs of its chapters")
        debug = slides.measure_deck(html).debug_lines()
        if debug:
            problems.append(f"{deck.name}: debug output on slides: {debug}")
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
        if outline.slides[0].title not in first:
            problems.append(f"{deck.name}: first slide does not show {outline.slides[0].title!r}")
        if drawn != spheres:
            problems.append(f"{deck.name}: {drawn} of {spheres} 3-D views drawn")
        if len(measured) != len(outline.slides):
            problems.append(f"{deck.name}: {len(measured)} slides for {len(outline.slides)}")
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
    pictures = [im.image for page in reader.pages for im in page.images]
    assert all(p is not None for p in pictures), f"{pdf}: an image pypdf cannot decode"
    return [p.convert("RGB") for p in pictures if p is not None]


def test_print_moves_a_player_to_the_last_frame_of_its_run(chromium, tmp_path):
    """Two players of one run on an exported page, the first shown at its first frame, the
    second at its last: once the printer has moved both to the end of the run, the first shows
    what the second showed at once (up to the time bead) and no longer its first frame."""
    sys.path.insert(0, str(ROOT))
    from browser.pages import WIDGET_JS, export_page

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

