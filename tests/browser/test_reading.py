"""Every chapter reads picture first, with little code in sight and no debug prints.

On the built site, each chapter page (``book/ch*.html``) opened at 1280 x 900 as a reader first
sees it (nothing unfolded, math typeset, 3-D views drawn; ``tools/page_metrics.py`` measures):

* its first picture (a 3-D view's canvas, an image or an svg figure, below the title) starts
  within ``FIRST_PICTURE_PX`` (1,800) pixels of the page top: two screens;
* it shows at most ``MAX_CODE_LINES`` (60) non-blank lines of code outside the exercises (cells
  folded by ``hide-input`` or removed are not shown; exercise cells are left out);
* no cell output reports the page's bookkeeping ("embedded state ... bytes").

The intro opens with its visual abstract: three spheres side by side in the text column at 1280
and 1600 px, one under the other at 390 px.

The checks of the built pages skip when the site is not built.  The detectors are tried on hand-made pages
first: a picture 2,500 px down, 70 visible lines, a debug print are each reported, and a page
that reads well passes.
"""
from __future__ import annotations

import base64
import itertools

import pytest

from tools.page_metrics import (
    WIDTH,
    chapter_pages,
    measure,
    measure_file,
    open_page,
    reader_context,
)
from tools.print_pdf import renderer_count

from .pages import SITE

FIRST_PICTURE_PX = 1800
MAX_CODE_LINES = 60

PAGES = chapter_pages(SITE)


def problems(m: dict) -> list[str]:
    """What keeps a page from reading picture first (empty when it reads well)."""
    out = []
    first = m["first_picture"]
    if first is None:
        out.append("no picture on the page")
    elif first["top"] > FIRST_PICTURE_PX:
        out.append(f"first picture ({first['tag']} in #{first['where']}) at {first['top']} px, "
                   f"more than {FIRST_PICTURE_PX} px down")
    if m["code_lines"] > MAX_CODE_LINES:
        longest = sorted(m["cells"], key=lambda c: -c["lines"])[:5]
        out.append(f"{m['code_lines']} visible lines of code (at most {MAX_CODE_LINES}) in "
                   f"{m['cells_shown']} shown cells; the longest: "
                   + "; ".join(f"{c['lines']} lines in #{c['where']} ({c['first']!r})"
                               for c in longest))
    if m["debug"]:
        out.append(f"debug prints: {m['debug'][:5]}")
    return out


@pytest.fixture(scope="module")
def reader(browser):
    context = reader_context(browser)
    yield context.new_page()
    context.close()


# ------------------------------------------------------------------ the detectors say no
PICTURE = ("<img alt='a picture' width='320' height='200' src='data:image/svg+xml;base64,"
           + base64.b64encode(b"<svg xmlns='http://www.w3.org/2000/svg' width='320' "
                              b"height='200'><circle cx='160' cy='100' r='80' fill='teal'/>"
                              b"</svg>").decode() + "'>")


def cell(lines: int, tags: str = "", folded: bool = False, output: str = "") -> str:
    """A myst-nb code cell of ``lines`` lines (folded as by hide-input), with an output."""
    code = "\n".join(f"x{k} = {k}" for k in range(lines))
    inp = (f"<div class='cell_input docutils container'><div class='highlight-ipython3'>"
           f"<div class='highlight'><pre>{code}\n</pre></div></div></div>")
    if folded:
        inp = f"<details class='hide above-input'><summary>Show code</summary>{inp}</details>"
    out = (f"<div class='cell_output docutils container'><div class='output stream'>"
           f"<div class='highlight'><pre>{output}</pre></div></div></div>" if output else "")
    return f"<div class='cell {tags} docutils container'>{inp}{out}</div>"


def html_page(tmp_path, body: str, name: str = "page.html") -> str:
    path = tmp_path / name
    path.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'>"
                    "<style>body{margin:0;font:16px/1.5 sans-serif}</style></head><body><main>"
                    f"<article class='bd-article'><h1>A chapter</h1>{body}</article></main>"
                    "</body></html>", encoding="utf-8")
    return path.as_uri()


GOOD = (f"<p>Key idea.</p>{PICTURE}" + cell(20) + cell(39, "tag_check tag_hide-input", folded=True)
        + cell(40, "tag_exercise-stub") + cell(12, "tag_exercise-check") + cell(30)
        + cell(2, output="n = 48, beta = 1, seed = 0"))


def test_a_page_that_reads_well_passes(reader, tmp_path):
    m = measure(reader, html_page(tmp_path, GOOD))
    assert m["first_picture"]["tag"] == "img" and m["first_picture"]["top"] < 300
    assert m["code_lines"] == 20 + 30 + 2          # folded and exercise cells not counted
    assert (m["cells_shown"], m["cells_folded"], m["exercise_cells"]) == (3, 1, 2)
    assert problems(m) == []


def test_a_first_picture_2500_px_down_is_reported(reader, tmp_path):
    body = "<div style='height:2500px'>text, theorems and proofs</div>" + PICTURE + cell(5)
    m = measure(reader, html_page(tmp_path, body))
    assert abs(m["first_picture"]["top"] - 2500) < 200
    assert any("first picture" in p for p in problems(m)), problems(m)


def test_a_picture_in_a_closed_dropdown_or_an_icon_does_not_count(reader, tmp_path):
    icon = ("<img width='16' height='16' src='data:image/svg+xml;base64,"
            + base64.b64encode(b"<svg xmlns='http://www.w3.org/2000/svg' width='16' "
                               b"height='16'/>").decode() + "'>")
    body = (icon + f"<details><summary>Solution</summary>{PICTURE}</details>"
            "<div style='height:2500px'></div>" + PICTURE)
    m = measure(reader, html_page(tmp_path, body))
    assert m["first_picture"]["top"] > 2500
    assert any("first picture" in p for p in problems(m))


def test_a_page_without_a_picture_is_reported(reader, tmp_path):
    m = measure(reader, html_page(tmp_path, cell(5)))
    assert m["first_picture"] is None and problems(m) == ["no picture on the page"]


def test_70_visible_lines_are_reported(reader, tmp_path):
    m = measure(reader, html_page(tmp_path, PICTURE + cell(40) + cell(30)))
    assert m["code_lines"] == 70
    assert any("70 visible lines of code" in p for p in problems(m)), problems(m)


def test_a_debug_print_is_reported(reader, tmp_path):
    body = PICTURE + cell(3, output="explorer: embedded state 898804 bytes")
    m = measure(reader, html_page(tmp_path, body))
    assert m["debug"] == ["explorer: embedded state 898804 bytes"]
    assert any("debug prints" in p for p in problems(m))


def test_the_reader_is_1280_px_wide(reader, tmp_path):
    reader.goto(html_page(tmp_path, PICTURE))
    assert reader.evaluate("window.innerWidth") == WIDTH


# ---------------------------------------------------------------------- the built chapters
NOT_BUILT = pytest.param(None, marks=pytest.mark.skip(
    reason=f"no chapter page under {SITE}: build the book first (make book)"))
CHAPTERS = [pytest.param(p, id=p.stem) for p in PAGES] or [NOT_BUILT]

_measured: dict = {}


def measured(reader, html):
    if html not in _measured:
        _measured[html] = measure_file(reader, html)
    return _measured[html]


@pytest.mark.parametrize("html", CHAPTERS)
def test_first_picture_within_two_screens(reader, html):
    m = measured(reader, html)
    assert m["first_picture"] is not None, f"{html.name}: no picture"
    assert m["first_picture"]["top"] <= FIRST_PICTURE_PX, f"{html.name}: {problems(m)}"


@pytest.mark.parametrize("html", CHAPTERS)
def test_at_most_60_visible_lines_of_code_outside_exercises(reader, html):
    m = measured(reader, html)
    assert m["code_lines"] <= MAX_CODE_LINES, f"{html.name}: {problems(m)}"


@pytest.mark.parametrize("html", CHAPTERS)
def test_no_debug_prints(reader, html):
    m = measured(reader, html)
    assert not m["debug"], f"{html.name}: {m['debug']}"


# ------------------------------------------------------------- the intro's visual abstract
INTRO = SITE / "book" / "intro.html"

SPHERES = """
() => {
  const col = document.querySelector('main article').getBoundingClientRect();
  const box = document.querySelector('.usaav-abstract');
  return {column: [col.left, col.right],
          box: box ? [box.getBoundingClientRect().left, box.getBoundingClientRect().right] : null,
          canvases: Array.from(box ? box.querySelectorAll('canvas') : []).map((c) => {
            const r = c.getBoundingClientRect();
            return [r.left, r.right, r.top + window.scrollY];
          })};
}
"""


@pytest.mark.skipif(not INTRO.is_file(), reason=f"{INTRO} is not built (make book)")
@pytest.mark.parametrize("width", [390, 1280, 1600])
def test_intro_opens_with_three_spheres_side_by_side_or_stacked(browser, width):
    assert renderer_count(INTRO) == 3, f"{INTRO.name} draws {renderer_count(INTRO)} spheres, not 3"
    context = browser.new_context(viewport={"width": width, "height": 900})
    try:
        page = context.new_page()
        open_page(page, INTRO.as_uri(), 3)
        m = page.evaluate(SPHERES)
    finally:
        context.close()
    assert m["box"] is not None, "the intro has no visual abstract (.usaav-abstract)"
    lefts, rights, tops = zip(*m["canvases"], strict=True)
    assert len(tops) == 3, f"{len(tops)} spheres in the abstract"
    assert min(lefts) >= m["column"][0] - 1 and max(rights) <= m["column"][1] + 1, m
    if width >= 1280:     # side by side, one row, high on the page
        assert max(tops) - min(tops) < 1 and min(tops) < 600, m
    else:                 # one under the other
        assert all(b > a + 100 for a, b in itertools.pairwise(tops)), m
