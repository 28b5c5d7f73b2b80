"""The 3-D views fit their column at 390, 1280 and 1600 pixels, and their time bars read well.

For every built page with 3-D views (``_build/html``), at viewport widths 390, 1280 and 1600:
every canvas of a view (a pythreejs canvas, or the picture it leaves when the page takes its
WebGL context back) lies within the page's text column (``article.bd-article``) within 1 px,
and no two canvases overlap.  The same check runs on a page exported here with the book's
stylesheet (no book build needed), and on hand-made pages that show it catching a canvas that
spills out of its column and canvases that overlap.

The players' time bars: the readout reads "t =" and a number with three significant digits
while playing and after pause, and the numbers under the bar's ticks are drawn.
"""
from __future__ import annotations

import base64
import re
import time

import pytest

from .pages import ROOT, SITE, WIDGET_JS, image_change, pages_with
from .test_time_label import read_label

WIDTHS = (390, 1280, 1600)
#: the text column of the book's pages at those widths (measured on the built book), for the
#: exported pages
COLUMNS = {390: 390, 1280: 752, 1600: 854}
COLUMN = "article.bd-article"
TOLERANCE = 1.0
CSS = ROOT / "_static" / "usaav-views.css"

#: the canvases of the 3-D views, and the column: rectangles in page pixels (hidden canvases,
#: e.g. the runs an explorer does not show, have no size and are left out)
MEASURE = """
(column) => {
  const col = document.querySelector(column);
  if (!col) return null;
  const r = col.getBoundingClientRect();
  const canvases = [];
  for (const el of col.querySelectorAll('.jupyter-threejs > canvas, .jupyter-threejs > img')) {
    const b = el.getBoundingClientRect();
    if (b.width < 1 || b.height < 1) continue;
    const sec = el.closest('section[id]');
    canvases.push({left: b.left, right: b.right, top: b.top + scrollY, bottom: b.bottom + scrollY,
                   where: sec ? sec.id : ''});
  }
  return {column: {left: r.left, right: r.right}, canvases};
}
"""


def fit_problems(measured: dict, tolerance: float = TOLERANCE) -> list[str]:
    """What does not fit: each canvas whose rectangle leaves the column's ``[left, right]`` by
    more than ``tolerance`` pixels, and each pair of canvases whose rectangles overlap by more
    than ``tolerance`` pixels both ways."""
    col = measured["column"]
    out = []
    boxes = measured["canvases"]
    for k, b in enumerate(boxes):
        if b["left"] < col["left"] - tolerance or b["right"] > col["right"] + tolerance:
            out.append(f"canvas {k} (#{b['where']}) spans x = {b['left']:.0f} to {b['right']:.0f}, "
                       f"outside its column {col['left']:.0f} to {col['right']:.0f}")
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            a, b = boxes[i], boxes[j]
            dx = min(a["right"], b["right"]) - max(a["left"], b["left"])
            dy = min(a["bottom"], b["bottom"]) - max(a["top"], b["top"])
            if dx > tolerance and dy > tolerance:
                out.append(f"canvases {i} and {j} (#{a['where']}) overlap by {dx:.0f} x {dy:.0f} px")
    return out


def measure_when_drawn(page, column: str = COLUMN, expect: int = 1, settle: float = 1.5) -> dict:
    """The measurements once at least ``expect`` canvases are drawn and their count and places
    have not changed for ``settle`` seconds."""
    last, since = None, time.time()
    deadline = time.time() + 90
    while time.time() < deadline:
        m = page.evaluate(MEASURE, column)
        if m is not None and len(m["canvases"]) >= expect:
            key = [(round(b["left"]), round(b["right"]), round(b["top"])) for b in m["canvases"]]
            if key != last:
                last, since = key, time.time()
            elif time.time() - since >= settle:
                return m
        time.sleep(0.25)
    raise AssertionError(f"fewer than {expect} canvases were drawn in {column}: {m}")


# --------------------------------------------------------------------- the checks can fail
def _data_url(html: str) -> str:
    return "data:text/html;base64," + base64.b64encode(html.encode()).decode()


def _hand_made(body: str, column_width: int) -> str:
    return _data_url(f"<html><body style='margin:0'><article class='bd-article' "
                     f"style='width:{column_width}px;padding:0 16px;box-sizing:border-box'>"
                     f"{body}</article></body></html>")


CANVAS = "<div class='jupyter-threejs'{style}><canvas width='{w}' height='{h}' style='width:{w}px;height:{h}px;display:block'></canvas></div>"


def test_a_canvas_wider_than_its_column_is_caught(page):
    page.goto(_hand_made(CANVAS.format(style="", w=460, h=400), 390))
    problems = fit_problems(measure_when_drawn(page, settle=0.3))
    assert len(problems) == 1 and "outside its column" in problems[0], problems


def test_canvases_squeezed_into_boxes_too_small_are_caught(page):
    # the old twin view: two 330 px canvases in a flex row whose boxes shrink to 270 px
    row = ("<div style='display:flex;width:540px'>"
           + 2 * CANVAS.format(style=" style='flex:0 1 auto;min-width:0;overflow:visible;width:270px'",
                               w=330, h=310) + "</div>")
    page.goto(_hand_made(row, 752))
    problems = fit_problems(measure_when_drawn(page, expect=2, settle=0.3))
    assert any("overlap by 60 x 310" in p for p in problems), problems


def test_canvases_side_by_side_in_their_column_pass(page):
    row = "<div style='display:flex;gap:4px'>" + 2 * CANVAS.format(style="", w=330, h=310) + "</div>"
    page.goto(_hand_made(row, 752))
    m = measure_when_drawn(page, expect=2, settle=0.3)
    assert len(m["canvases"]) == 2 and fit_problems(m) == []


# ------------------------------------------------------------ exported views, book stylesheet
TEMPLATE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>{{title}}</title>
<link rel="stylesheet" href="{css}">
<script src="{js}/require.js"></script>
<script src="{js}/require-config.js"></script>
</head><body style="margin:0">
<article class="bd-article" style="max-width:{column}px;padding:0 16px;box-sizing:border-box">
{{snippet}}
</article>
</body></html>
"""


def export_in_column(widgets, path, column: int, css: bool = True):
    """Write ``widgets`` to ``path`` inside a column like the book's, with its stylesheet."""
    from ipywidgets.embed import dependency_state, embed_minimal_html

    if not (WIDGET_JS / "embed-amd.js").is_file():
        pytest.fail(f"{WIDGET_JS} is missing: `make widget-js` installs the widget JavaScript")
    url = WIDGET_JS.as_uri()
    state = {}
    for w in widgets:
        state.update(dependency_state(w, drop_defaults=True))
    embed_minimal_html(path, views=list(widgets), title="views",
                       state=state, requirejs=False, embed_url=f"{url}/embed-amd.js", cors=False,
                       template=TEMPLATE.format(js=url, column=column,
                                                css=CSS.as_uri() if css else "about:blank"))
    return path


@pytest.fixture(scope="module")
def views():
    """A player, a twin view and an explorer, at their default sizes."""
    import usaav_edu as ue
    from usaav_edu.widgets import Explorer, TrajectoryPlayer, TwinView

    model, x0, xi = ue.experiments.setup("rope", n=12, beta=1.0, seed=0)
    run = ue.simulate(model, x0, xi, t_max=10.0, n_frames=21, seed=0)
    runs = {b: ue.simulate(ue.models.sa(b), x0, t_max=6.0, n_frames=11, seed=0) for b in (4.0, 1.0)}
    return [TrajectoryPlayer(run, duration=4.0), TwinView(run, duration=4.0),
            Explorer(runs, "beta", max_bytes=900_000)]


@pytest.fixture(scope="module")
def fit_browser(browser):
    return browser


@pytest.mark.parametrize("width", WIDTHS)
def test_exported_views_fit_their_column(fit_browser, views, tmp_path, width):
    path = export_in_column(views, tmp_path / "views.html", COLUMNS[width])
    context = fit_browser.new_context(viewport={"width": width, "height": 900})
    try:
        page = context.new_page()
        page.goto(path.as_uri())
        m = measure_when_drawn(page, expect=4)     # player, two twin canvases, explorer run
        assert fit_problems(m) == [], f"at {width} px"
        if width == 390:                           # the twin view stacks its two spheres
            tops = sorted(b["top"] for b in m["canvases"])
            assert len(set(round(t) for t in tops)) == len(tops), "canvases share a row at 390 px"
    finally:
        context.close()


def test_without_the_stylesheet_the_views_spill(fit_browser, views, tmp_path):
    # the check sees the old pages' fault: the same views, without the book's stylesheet
    path = export_in_column(views, tmp_path / "bare.html", COLUMNS[390], css=False)
    context = fit_browser.new_context(viewport={"width": 390, "height": 900})
    try:
        page = context.new_page()
        page.goto(path.as_uri())
        problems = fit_problems(measure_when_drawn(page, expect=4))
        assert any("outside its column" in p for p in problems), problems
    finally:
        context.close()


# ------------------------------------------------------------------------- the time bar
def test_the_player_reads_t_with_few_digits_and_numbers_its_ticks(fit_browser, tmp_path):
    import usaav_edu as ue
    from usaav_edu.widgets import TrajectoryPlayer

    model, x0, xi = ue.experiments.setup("usa", n=8, beta=1.0, seed=0)
    run = ue.simulate(model, x0, xi, t_max=10.0, n_frames=41, seed=0)
    numbered = TrajectoryPlayer(run, duration=6.0)
    bare = TrajectoryPlayer(run, duration=6.0)
    next(o for o in bare.hud.children if o.name == "ticks").visible = False
    path = export_in_column([numbered, bare], tmp_path / "player.html", COLUMNS[1280])
    context = fit_browser.new_context(viewport={"width": 1280, "height": 1000})
    try:
        page = context.new_page()
        page.goto(path.as_uri())
        measure_when_drawn(page, expect=2)
        canvases = page.locator(".jupyter-threejs > canvas")
        # the numbers under the bar: the strip below the bar differs from the same player's
        # without them (the bar sits at 92 % of the height, its numbers just under it)
        box = canvases.nth(0).bounding_box()
        strip = {"x": box["x"] + 0.1 * box["width"], "y": box["y"] + 0.93 * box["height"],
                 "width": 0.8 * box["width"], "height": 0.06 * box["height"]}
        box2 = canvases.nth(1).bounding_box()
        strip2 = dict(strip, x=box2["x"] + 0.1 * box2["width"], y=box2["y"] + 0.93 * box2["height"])
        with_numbers = page.screenshot(clip=strip)
        without = page.screenshot(clip=strip2)
        assert image_change(with_numbers, without) > 0.01, "no numbers are drawn under the ticks"

        # the time label above the bar: "t = 0.0" before play, one decimal while it plays
        assert read_label(canvases.nth(0).screenshot(), numbered) == "0.0"
        page.locator(".widget-play").nth(0).locator("button").nth(0).click()     # play
        time.sleep(1.5)
        playing = read_label(canvases.nth(0).screenshot(), numbered)
        page.locator(".widget-play").nth(0).locator("button").nth(1).click()     # pause
        assert re.fullmatch(r"\d{1,2}\.\d", playing), f"the label shows {playing!r}"
        assert 0.0 < float(playing) <= 10.0, playing
    finally:
        context.close()


# ----------------------------------------------------------------------------- the book
PAGES = pages_with("RendererModel")


def test_built_pages_with_views_are_found_or_skip():
    if not PAGES:
        pytest.skip(f"no page under {SITE} holds a 3-D view (build the book)")
    assert any(p.name == "ch04_rope.html" for p in PAGES), [p.name for p in PAGES]


@pytest.fixture(scope="module")
def contexts(browser):
    made = {w: browser.new_context(viewport={"width": w, "height": 900}) for w in WIDTHS}
    for ctx in made.values():
        ctx.route("**/*", lambda r: r.continue_() if r.request.url.startswith(
            ("file:", "data:", "blob:", "about:")) else r.abort())
    yield made
    for ctx in made.values():
        ctx.close()


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("html", PAGES, ids=[str(p.relative_to(SITE)) for p in PAGES])
def test_built_views_fit_their_column(contexts, html, width):
    page = contexts[width].new_page()
    try:
        page.goto(html.as_uri())
        m = measure_when_drawn(page)
        problems = fit_problems(m)
        assert not problems, (f"{html.relative_to(SITE)} at {width} px, "
                              f"{len(m['canvases'])} canvases:\n" + "\n".join(problems))
    finally:
        page.close()
