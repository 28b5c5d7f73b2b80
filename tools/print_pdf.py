"""Print the built book's chapters and problem sets to PDF with Debian's chromium.

Usage (``make pdf`` runs the first form after ``make book``)::

    python tools/print_pdf.py                              # _build/html -> _build/pdf
    python tools/print_pdf.py --site _build/student/_build/html --out _build/pdf-student
    python tools/print_pdf.py --pages book/ch04_rope.html  # some pages only
    python tools/print_pdf.py --jobs jobs.json             # [page, pdf] pairs (make site)

One PDF per chapter page (``book/ch*.html``) and per problem-set page
(``book/seminar/problems_*.html``), named after the page.  Each page is opened from ``file://``
in headless chromium (``/usr/bin/chromium`` driven by Playwright; no browser download), and
before printing:

* every 3-D player (a pythreejs ``AnimationAction``: TrajectoryPlayer, TwinView, the players of
  an Explorer) is moved to the end of its run through the page's widget models, so the paper
  shows where the run goes (the final latitude circle of chapter 4, not the random start).  A
  plain player is printed twice, side by side: its start and its end;
* every 3-D widget is waited for until its WebGL canvas has drawn, photographed, and replaced by
  that picture (a WebGL canvas prints as a blank box otherwise);
* the math is typeset by MathJax (served from the site; a page that asks a CDN for MathJax is
  answered from the pinned npm copy in ``node_modules/mathjax``: nothing leaves the machine);
* each of a plain player's two pictures gets its own caption: the player's caption line with
  the time of that picture ("start of the run: model usa, ..., t = 0", "end of the run: ...,
  t = 20"), in place of the one line that named the start time under both;
* the book's print stylesheet (``_static/print.css``, the one of this checkout, added to the
  page) leaves out the players' buttons and the explorers' sliders and lets long blocks break
  across pages; code folded on screen stays folded (a ``hide-input`` cell prints its output
  only), and so do solutions in dropdowns (print the student edition for a copy without them),
  except a problem set's key, which prints open (the full edition's page is the instructors'
  copy);
* a picture may not break across pages, so one taller than the rest of a page moves whole to
  the next and leaves the page before it partly empty: ``fit_pictures`` prints the page on
  trial with every picture outlined in a colour of its own, reads from the PDF where each
  picture begins and how full each page is, and shrinks the picture that opens the next page
  (and, where that is not enough, the pictures of the page itself, each to no less than two
  fifths of its height) until no page but the last is more than a quarter empty.

After printing, ``check_pdf`` checks pages and title and ``sparse_pages`` lists the pages (all
but the last) whose content ends above three quarters of the page (text, pictures and drawn
figures counted); ``print_all`` fails a PDF that has one.
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import re
import sys
import time
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--enable-unsafe-swiftshader",
                 "--disable-background-networking"]
MATHJAX_CDN = re.compile(r"^https?://[^/]+/npm/mathjax@3[^/]*/es5/(.*?)(\?.*)?$")
PAGE_PATTERNS = ("book/ch*.html", "book/seminar/problems_*.html")
#: the element of a live view (its canvas is drawn by the page's script, not by a widget)
LIVE_VIEW = 'class="usaav-live"'
WIDGET_STATE = re.compile(
    r'<script type="application/vnd\.jupyter\.widget-state\+json">(.*?)</script>', re.S)
RENDER_TIMEOUT_S = 90
#: MathJax for pages that ask a CDN for it (the pinned npm copy)
MATHJAX = ROOT / "node_modules" / "mathjax" / "es5"
#: the book's print stylesheet; added to every page printed (see _add_print_css)
PRINT_CSS = ROOT / "_static" / "print.css"
#: a page (not the last) whose content ends above this fraction of its printable height is sparse:
#: more than a quarter of it empty
MIN_FILL = 0.75
#: page size and margins of the PDFs (A4)
PAGE_FORMAT = "A4"
MARGINS_MM = {"top": 14, "bottom": 14, "left": 12, "right": 12}
A4_HEIGHT_MM, A4_WIDTH_MM = 297.0, 210.0
#: one CSS pixel (1/96 inch) in millimetres: the PDFs print at scale 1
MM_PER_PX = 25.4 / 96
PRINTABLE_WIDTH_PX = (A4_WIDTH_MM - MARGINS_MM["left"] - MARGINS_MM["right"]) / MM_PER_PX
PDF_OPTIONS = {"format": PAGE_FORMAT, "print_background": True, "outline": True, "tagged": True,
               "margin": {k: f"{v}mm" for k, v in MARGINS_MM.items()}}
#: fitting pictures to pages (fit_pictures): pictures lower than MIN_PICTURE_PX are left alone;
#: a picture shrinks to no less than MIN_SHRINK of its height on screen; at most FIT_ROUNDS
#: trial prints; LEAD_MAX_PX, what may stand above a picture that opens a page (a heading, a
#: line) and still go with it; FIT_SLACK_PX, the room kept free below a shrunk picture
MIN_PICTURE_PX = 80
MIN_SHRINK = 0.4
FIT_ROUNDS = 4
LEAD_MAX_PX = 140
FIT_SLACK_PX = 12
#: a drawn path taller than this fraction of the page is a frame or a background (of a block
#: that goes on over the page break), not content: the text in it says how far the page is filled
MAX_PATH_SPAN = 0.6
#: the outline colour that marks picture k for the trial prints: rgb(253, 3, k)
MARK_RGB = (253, 3)
#: width of each of the two pictures of a player printed at its start and its end, as a
#: fraction of the canvas width (the pair and the player's legend fit the printed column)
PAIR_SCALE = 0.55

# Run before any script of the page.  At "load" (this listener comes first, before the one that
# renders the widgets; every script of the page, the widget JavaScript included, has run), load
# jupyter-threejs and make every AnimationAction model record itself, so the printer can reach
# the players' models (the page's widget manager keeps them to itself).
COLLECT_ACTIONS = r"""
(() => {
  window.__usaavActions = [];
  window.addEventListener('load', () => {
    const rj = window.requirejs;
    const ctx = rj && rj.s && rj.s.contexts && rj.s.contexts._;
    if (!ctx || !ctx.config.paths || !ctx.config.paths['jupyter-threejs']) return;
    rj(['jupyter-threejs'], (lib) => {
      const proto = lib.AnimationActionModel.prototype;
      const construct = proto.constructThreeObject;
      proto.constructThreeObject = function () {
        window.__usaavActions.push(this);
        return construct.apply(this, arguments);
      };
      window.__usaavActionsReady = true;
    });
  });
})();
"""

# Move every animation to a fraction of its clip (0: start, 1: end), paused, and redraw.
SEEK_ACTIONS = r"""
(fraction) => Promise.all((window.__usaavActions || []).map((m) => m.initPromise.then(() => {
  const action = m.obj, mixer = m.get('mixer').obj;
  const span = action.getClip().duration;
  action.play();
  action.paused = true;
  action.time = Math.min(span * fraction, span * (1 - 1e-9));
  mixer.update(0);
  let root = m.get('localRoot').obj;
  while (root.parent) root = root.parent;
  if (root.ipymodel) root.ipymodel.trigger('rerender', m, {});
  return span;
})))
"""

# For each canvas: is it animated (a play control drives it), and is it the only canvas of a
# player outside an explorer (printed at start and end)?  For such a player, also its caption
# (the line under its view, "model usa, ..., t = 0") and the times its run goes from and to
# (read off the controls' line, "Press ... to play t = 0 to 20 (...)").
CANVAS_ROLES = r"""
() => {
  const canvases = Array.from(document.querySelectorAll('canvas'));
  const role = canvases.map(() => ({animated: false, pair: false, caption: '', times: null}));
  Array.from(document.querySelectorAll('.widget-play')).forEach((play) => {
    let node = play;
    while (node && !(node.querySelector && node.querySelector('canvas'))) node = node.parentElement;
    if (!node) return;
    const mine = Array.from(node.querySelectorAll('canvas'));
    const row = Array.from(node.children).find((c) => c.contains(play));
    const after = row ? row.nextElementSibling : null;
    const caption = after && after.classList.contains('widget-html') ? after : null;
    const m = (row ? row.innerText : '').match(/t = (-?[\d.e+-]+) to (-?[\d.e+-]+)/);
    mine.forEach((c) => {
      const k = canvases.indexOf(c);
      role[k].animated = true;
      role[k].pair = mine.length === 1 && !c.closest('.usaav-explorer');
      if (role[k].pair && caption) {
        caption.setAttribute('data-usaav-caption', String(k));
        role[k].caption = caption.innerText.trim();
      }
      if (m) role[k].times = [m[1], m[2]];
    });
  });
  return role;
}
"""


def pair_captions(caption: str, times) -> list[str]:
    """The captions of a player's two pictures: ``caption`` (the player's line under its view,
    which names the time shown) with the time of the start and of the end of the run, each after
    "start of the run" / "end of the run".  Without a caption or times, the two labels alone."""
    labels = ["start of the run", "end of the run"]
    if not caption or not times:
        return labels
    out = []
    for label, when in zip(labels, times, strict=False):
        line = re.sub(r"\bt = [^;,]*", f"t = {when}", caption, count=1)
        if line == caption and f"t = {when}" not in caption:
            line = f"{caption}, t = {when}"
        out.append(f"{label}: {line}")
    return out


# replace a canvas by an <img> holding its screenshot (same on-screen size), or by a pair of
# pictures (start, end) at PAIR_SCALE of its size, each with its own caption; the player's one
# caption line (which names the start time only) is then left out
SWAP_CANVAS = """
([index, urls, scale, captions]) => {
  const c = document.querySelectorAll('canvas')[index];
  const r = c.getBoundingClientRect();
  const picture = (url, factor) => {
    const img = document.createElement('img');
    img.src = url;
    img.className = 'usaav-widget-picture';
    img.style.width = (r.width * factor) + 'px';
    img.style.height = (r.height * factor) + 'px';
    img.style.maxWidth = '100%';
    img.style.objectFit = 'contain';
    return img;
  };
  let node;
  if (urls.length === 1) {
    node = picture(urls[0], 1);
  } else {
    node = document.createElement('div');
    node.className = 'usaav-print-pair';
    captions.forEach((label, k) => {
      const fig = document.createElement('figure');
      fig.style.width = (r.width * scale) + 'px';  // the caption wraps under its own picture
      fig.appendChild(picture(urls[k], scale));
      const cap = document.createElement('figcaption');
      cap.textContent = label;
      fig.appendChild(cap);
      node.appendChild(fig);
    });
    const shared = document.querySelector('[data-usaav-caption="' + index + '"]');
    if (shared) shared.classList.add('usaav-print-replaced');
  }
  c.replaceWith(node);
  const imgs = Array.from(node.querySelectorAll ? node.querySelectorAll('img') : []);
  if (node.tagName === 'IMG') imgs.push(node);
  return Promise.all(imgs.map((img) => new Promise((resolve) => {
    if (img.complete) resolve(); else img.onload = resolve;
  })));
}
"""


def model_refs(value):
    """The widget model ids a widget state value names (``"IPY_MODEL_<id>"``), at any depth."""
    if isinstance(value, str) and value.startswith("IPY_MODEL_"):
        yield value[len("IPY_MODEL_"):]
    elif isinstance(value, list):
        for v in value:
            yield from model_refs(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from model_refs(v)


def shown_models(state: dict, model_name: str) -> int:
    """How many models named ``model_name`` a page shows at first: a Stack shows only its
    selected child, so what only its other children hold is not drawn until selected."""
    refs = model_refs

    def reach(model_id, seen):
        if model_id in seen or model_id not in state:
            return
        seen.add(model_id)
        model = state[model_id]
        body = model["state"]
        if model["model_name"] == "StackModel":
            children, k = body.get("children", []), body.get("selected_index")
            shown = [children[k]] if k is not None and 0 <= k < len(children) else []
            body = {**body, "children": shown}
        for r in refs(body):
            reach(r, seen)

    hidden: set[str] = set()
    shown: set[str] = set()
    for model in state.values():
        if model["model_name"] == "StackModel":
            k = model["state"].get("selected_index")
            for j, child in enumerate(model["state"].get("children", [])):
                if j != k:
                    for r in refs(child):
                        reach(r, hidden)
    for model_id in state:
        if model_id not in hidden:
            shown.add(model_id)
    # what a shown widget refers to is shown too (e.g. a model shared with a hidden child)
    for model_id in list(shown):
        reach(model_id, shown)
    return sum(1 for m in shown if state[m]["model_name"] == model_name)


def renderer_count(html_path: Path) -> int:
    """How many 3-D canvases the page draws when it opens: its pythreejs renderers (see
    shown_models) and its live views (``usaav_edu.widgets.LiveView``, one canvas each)."""
    text = html_path.read_text(encoding="utf-8", errors="replace")
    live = text.count(LIVE_VIEW)
    m = WIDGET_STATE.search(text)
    if not m:
        return live
    return shown_models(json.loads(m.group(1)).get("state", {}), "RendererModel") + live


def page_title(html_path: Path) -> str:
    """The page's first heading, as text."""
    text = html_path.read_text(encoding="utf-8", errors="replace")
    m = re.search(r"<h1[^>]*>(.*?)</h1>", text, re.S)
    if not m:
        return ""
    import html as _html
    title = re.sub(r"<[^>]+>", "", m.group(1))
    return " ".join(_html.unescape(title).replace("#", "").split())


def pages_of(site: Path, patterns=PAGE_PATTERNS) -> list[Path]:
    out: list[Path] = []
    for pat in patterns:
        out.extend(sorted(site.glob(pat)))
    return out


def _serve_mathjax(mathjax_dir: Path):
    def handler(route):
        url = route.request.url
        if url.startswith(("file:", "data:", "blob:", "about:")):
            return route.continue_()
        m = MATHJAX_CDN.match(url)
        if m and mathjax_dir.is_dir():
            local = (mathjax_dir / m.group(1)).resolve()
            if mathjax_dir.resolve() in local.parents and local.is_file():
                ctype = "application/javascript" if local.suffix == ".js" else (
                    "font/woff2" if local.suffix == ".woff2" else "application/octet-stream")
                return route.fulfill(status=200, body=local.read_bytes(), content_type=ctype,
                                     headers={"Access-Control-Allow-Origin": "*"})
        return route.abort()  # offline: nothing else leaves the machine
    return handler


def wait_canvases(page, expected: int, timeout: float) -> int:
    """Poll until the page has ``expected`` canvases or ``timeout`` seconds pass; the count."""
    deadline = time.time() + timeout
    n = 0
    while time.time() < deadline:
        n = page.evaluate("document.querySelectorAll('canvas').length")
        if n >= expected:
            return n
        time.sleep(0.25)
    return n


def _is_drawn(png: bytes) -> bool:
    """Whether a canvas screenshot shows something (not one flat colour)."""
    import io

    import numpy as np
    from PIL import Image

    img = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=float)
    return img.std() > 3.0 and len(np.unique(img.reshape(-1, 3), axis=0)) > 16


def _shot(page, k: int, wait: float = 15.0) -> bytes:
    """Screenshot of canvas ``k``, retried for up to ``wait`` seconds until something is drawn."""
    canvas = page.locator("canvas").nth(k)
    shot = canvas.screenshot()
    deadline = time.time() + wait
    while not _is_drawn(shot) and time.time() < deadline:
        time.sleep(0.5)
        shot = canvas.screenshot()
    return shot


def seek_players(page, fraction: float, settle: float = 0.8) -> list[float]:
    """Move every player of ``page`` to ``fraction`` of its run (0 start, 1 end), paused, and
    let the canvases redraw; the clip lengths (model time)."""
    spans = page.evaluate(SEEK_ACTIONS, fraction)
    time.sleep(settle)
    return spans


def prepare_page(page, html_path: Path, mathjax_dir: Path, timeout: float = RENDER_TIMEOUT_S,
                 swap: bool = True) -> dict:
    """Open ``html_path`` in ``page`` and make it ready to print: math typeset, every player at
    the end of its run (a plain player also at its start), every canvas photographed and, when
    ``swap``, replaced by its picture(s).  Returns what was done and the screenshots."""
    expected = renderer_count(html_path)
    page.add_init_script(COLLECT_ACTIONS)
    page.route("**/*", _serve_mathjax(mathjax_dir))
    page.goto(html_path.as_uri(), wait_until="load")
    loads_math = page.evaluate(
        "() => !!window.MathJax || !!document.querySelector('script[src*=\"mathjax\"]')")
    try:
        if loads_math:
            page.wait_for_function(
                "() => window.MathJax && MathJax.startup && MathJax.startup.promise",
                timeout=15000)
            page.evaluate("() => MathJax.startup.promise")
    except Exception:  # a page without math
        pass
    n = wait_canvases(page, expected, timeout) if expected else 0
    info: dict = {"page": str(html_path), "renderers": expected, "canvases": n, "pictures": 0,
                  "players": 0, "start": {}, "end": {}}
    if not n:
        return info
    time.sleep(1.0)
    roles = page.evaluate(CANVAS_ROLES)[:n]
    info["players"] = sum(r["animated"] for r in roles)
    start: dict[int, bytes] = {}
    if info["players"]:
        seek_players(page, 0.0)
        start = {k: _shot(page, k) for k, r in enumerate(roles) if r["animated"]}
        seek_players(page, 1.0)
    end = {k: _shot(page, k) for k in range(n)}
    info["start"], info["end"] = start, end
    if swap:
        # last canvas first: a swapped canvas leaves the list, the indices before it stay put
        for k in reversed(range(n)):
            shots = [start[k], end[k]] if roles[k]["pair"] else [end[k]]
            urls = ["data:image/png;base64," + base64.b64encode(s).decode() for s in shots]
            captions = pair_captions(roles[k]["caption"], roles[k]["times"])
            page.evaluate(SWAP_CANVAS, [k, urls, PAIR_SCALE, captions])
            info["pictures"] += 1
    return info


def _add_print_css(page) -> None:
    """Add the book's print stylesheet (``_static/print.css`` of this checkout) to the page: a
    page built before it changed links an older copy, and the newer rules win over it (a
    page built from the same sources holds the same rules twice, to no effect)."""
    if PRINT_CSS.is_file():
        page.add_style_tag(content=PRINT_CSS.read_text(encoding="utf-8"))


def print_page(browser, html_path: Path, pdf_path: Path, mathjax_dir: Path,
               timeout: float = RENDER_TIMEOUT_S, min_fill: float = MIN_FILL) -> dict:
    """Print one built page to ``pdf_path``; return what was done (for logs and tests).

    Before the PDF is written, pictures that would leave a page more than ``1 - min_fill``
    empty are shrunk to fit (:func:`fit_pictures`).  The PDF is written through a temporary
    file in the same folder, renamed into place."""
    context = browser.new_context(viewport={"width": 1100, "height": 1400})
    page = context.new_page()
    try:
        info = prepare_page(page, html_path, mathjax_dir, timeout)
        _add_print_css(page)
        page.emulate_media(media="print")
        info["controls_shown"] = page.evaluate(VISIBLE_CONTROLS)
        # lay the page out as wide as the paper's printable width, as the PDF does
        page.set_viewport_size({"width": round(PRINTABLE_WIDTH_PX), "height": 1400})
        info["shrunk"], data = fit_pictures(page, min_fill)
        write_bytes(pdf_path, data)
    finally:
        context.close()
    info["pdf"] = str(pdf_path)
    return info


def write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename; only a regular file
    (or nothing) may be at ``path``."""
    path = Path(path)
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise ValueError(f"pdf_path {path} exists and is not a regular file")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


# Mark every picture a page break may not split (a player's pair, a figure, an image alone)
# with an outline in the colour rgb(253, 3, k) (an outline takes no room: the layout does not
# move), so that a trial print says on which page and where each picture begins.  At most 256
# pictures are marked (the first ones of the page).
MARK_PICTURES = r"""
([minHeight, rgb]) => {
  const blocks = [];
  const pictures = Array.from(document.querySelectorAll('img')).filter(
    (img) => img.getBoundingClientRect().height >= minHeight);
  pictures.forEach((img) => {
    let block = img.closest('.usaav-print-pair') || img.closest('figure');
    if (!block) {
      block = document.createElement('span');
      block.style.display = 'block';
      img.replaceWith(block);
      block.appendChild(img);
    }
    if (!blocks.includes(block) && blocks.length < 256) blocks.push(block);
  });
  window.__usaavBlocks = blocks;
  blocks.forEach((block, k) => {
    block.style.outline = `1px solid rgb(${rgb[0]}, ${rgb[1]}, ${k})`;
  });
  return blocks.length;
}
"""

# per marked picture: its height and the tallest of its pictures (CSS px)
MEASURE_PICTURES = r"""
() => (window.__usaavBlocks || []).map((block) => {
  const imgs = block.tagName === 'IMG' ? [block] : Array.from(block.querySelectorAll('img'));
  return {height: block.getBoundingClientRect().height,
          picture: Math.max(0, ...imgs.map((i) => i.getBoundingClientRect().height))};
})
"""

# shrink the pictures of marked picture k to the height h (CSS px), keeping their proportions
SHRINK_PICTURE = r"""
([k, h]) => {
  const block = window.__usaavBlocks[k];
  const imgs = Array.from(block.querySelectorAll('img'));
  const tallest = Math.max(...imgs.map((i) => i.getBoundingClientRect().height));
  const f = h / tallest;
  imgs.forEach((img) => {
    const r = img.getBoundingClientRect();
    img.style.width = (r.width * f) + 'px';
    img.style.height = (r.height * f) + 'px';
  });
  block.querySelectorAll('figure').forEach((fig) => {
    if (fig.style.width) fig.style.width = (parseFloat(fig.style.width) * f) + 'px';
  });
}
"""

UNMARK_PICTURES = r"""
() => (window.__usaavBlocks || []).forEach((block) => { block.style.outline = ''; })
"""


def fit_pictures(page, min_fill: float = MIN_FILL, rounds: int = FIT_ROUNDS
                 ) -> tuple[list[dict], bytes]:
    """Print ``page``, shrinking the pictures that leave a page more than ``1 - min_fill``
    empty, until none does (or after ``rounds`` trial prints): a picture may not break, so one
    taller than the rest of a page moves whole to the next page.  A page printed without such a
    page is printed once.  Otherwise each trial print has every picture outlined in a colour of
    its own (MARK_PICTURES: an outline takes no room), which says where each picture begins;
    :func:`shrink_plan` picks the pictures to shrink and by how much; the outlines are then
    removed and the page printed again.  Returns the pictures shrunk (``{"picture": k, "from":
    px, "to": px}``) and the PDF."""
    data = page.pdf(**PDF_OPTIONS)
    if not sparse_pages(data, min_fill):
        return [], data
    page.evaluate(MARK_PICTURES, [MIN_PICTURE_PX, list(MARK_RGB)])
    done = []
    try:
        original = None
        for _ in range(rounds):
            blocks = page.evaluate(MEASURE_PICTURES)
            original = original or [b["picture"] for b in blocks]
            for b, h in zip(blocks, original, strict=False):
                b["original"] = h
            plan = shrink_plan(page_layout(page.pdf(**PDF_OPTIONS)), blocks, min_fill)
            if not plan:
                break
            for k, height in plan:
                page.evaluate(SHRINK_PICTURE, [k, height])
                done.append({"picture": k, "from": round(blocks[k]["picture"]),
                             "to": round(height)})
    finally:
        page.evaluate(UNMARK_PICTURES)
    # nothing shrunk: the first print holds (the outlines took no room)
    return done, (page.pdf(**PDF_OPTIONS) if done else data)


def page_layout(pdf) -> list[dict]:
    """For each page of ``pdf`` (a path or the bytes): ``extent`` (see :func:`page_extents`)
    and ``marks``, the pictures marked by MARK_PICTURES that begin on it, ``{k: top}`` (fraction
    of the page height from the top)."""
    extents, marks = _read_pages(pdf)
    return [{"extent": e, "marks": m} for e, m in zip(extents, marks, strict=True)]


def shrink_plan(layout: list[dict], blocks: list[dict], min_fill: float = MIN_FILL
                ) -> list[tuple[int, float]]:
    """Which pictures to shrink, and to what height of their pictures (CSS px), so that no page
    but the last is filled less than ``min_fill``.  For each such page: the marked picture that
    opens the next page (nothing but a heading and a line or two above it, LEAD_MAX_PX) must fit
    in the room left, with what goes with it (its caption, the lines above it); it shrinks, and
    so do the pictures of the page itself (each frees room below it), all in the same
    proportion of what they may give, none below MIN_SHRINK of its height.  A page whose
    pictures cannot give enough is left as it is."""
    page_px = A4_HEIGHT_MM / MM_PER_PX
    bottom_limit = 1 - MARGINS_MM["bottom"] / A4_HEIGHT_MM
    plan: dict[int, float] = {}
    for k in range(len(layout) - 1):
        here, after = layout[k], layout[k + 1]
        # a picture broken across pages is outlined above the next page's top: not one that
        # opens it
        opening = {j: top for j, top in after["marks"].items() if top >= 0 and j < len(blocks)}
        if here["extent"] is None or after["extent"] is None or not opening:
            continue
        if _fill(here["extent"]) >= min_fill:
            continue
        first, top = min(opening.items(), key=lambda kv: kv[1])
        lead = max(0.0, (top - after["extent"][0]) * page_px)
        if lead > LEAD_MAX_PX:
            continue
        room = (bottom_limit - here["extent"][1]) * page_px
        excess = max(lead + blocks[first]["height"] + FIT_SLACK_PX - room, FIT_SLACK_PX)
        # the pictures that begin on this page (not an empty piece of one in its bottom margin)
        above = [j for j, top in here["marks"].items()
                 if 0 <= top < bottom_limit - 0.01 and j != first and j < len(blocks)]
        def give(j):  # what picture j may still give: down to MIN_SHRINK of its first height
            return max(0.0, blocks[j]["picture"]
                       - MIN_SHRINK * blocks[j].get("original", blocks[j]["picture"]))

        shrinking = [j for j in [first] + above if j not in plan and give(j) > 0]
        capacity = sum(give(j) for j in shrinking)
        if first not in shrinking or excess > capacity:
            continue
        share = excess / capacity
        for j in shrinking:
            plan[j] = blocks[j]["picture"] - give(j) * share
    return sorted(plan.items())


# play buttons, explorer sliders and dashboard controls still visible (in print media: none)
VISIBLE_CONTROLS = r"""
() => Array.from(document.querySelectorAll(
    '.widget-play, .usaav-explorer .widget-slider, .usaav-dashboard .widget-slider'))
  .filter((e) => e.getClientRects().length > 0 && getComputedStyle(e).display !== 'none').length
"""


def _mult(a, b):
    """Product of two PDF matrices [a b c d e f] (``a`` applied first)."""
    return [a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
            a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3],
            a[4] * b[0] + a[5] * b[2] + b[4], a[4] * b[1] + a[5] * b[3] + b[5]]


#: operators that paint the current path with the fill colour, the stroke colour, or both
FILL_OPS = {b"f", b"F", b"f*"}
STROKE_OPS = {b"S", b"s"}
BOTH_OPS = {b"B", b"B*", b"b", b"b*"}
#: operators that set a colour: (stroke?, how many numbers it takes)
COLOR_OPS = {b"rg": (False, 3), b"RG": (True, 3), b"g": (False, 1), b"G": (True, 1),
             b"k": (False, 4), b"K": (True, 4)}


def _rgb(op: bytes, args) -> tuple[float, float, float] | None:
    """A colour operator's colour as RGB in 0..1 (None for one this reader does not know)."""
    try:
        v = [float(a) for a in args]
    except (TypeError, ValueError):
        return None
    if op in (b"rg", b"RG") and len(v) == 3:
        return v[0], v[1], v[2]
    if op in (b"g", b"G") and len(v) == 1:
        return (v[0],) * 3
    if op in (b"k", b"K") and len(v) == 4:
        c, m, y, k = v
        return (1 - c) * (1 - k), (1 - m) * (1 - k), (1 - y) * (1 - k)
    return None


def _mark_of(rgb) -> int | None:
    """The picture a colour marks (MARK_PICTURES outlines a picture in rgb(253, 3, k)), or None."""
    if rgb is None:
        return None
    r, g, b = (round(c * 255) for c in rgb)
    return b if (r, g) == MARK_RGB else None


def _read_pages(pdf) -> tuple[list, list[dict]]:
    """Per page of ``pdf`` (a path or the bytes): the extent of what it shows and the marks of
    MARK_PICTURES on it (see page_extents and page_layout).  What a page shows is its text (by
    its matrices and font size), its pictures (an XObject drawn into the unit square, a form by
    its bounding box) and its drawn paths in any colour but white (the pictures of an SVG
    figure, the background of a code block; a white page background is not content)."""
    import io

    from pypdf import PdfReader

    data = pdf if isinstance(pdf, (bytes, bytearray)) else Path(pdf).read_bytes()
    reader = PdfReader(io.BytesIO(data))
    extents: list[tuple[float, float] | None] = []
    marks: list[dict] = []
    for page in reader.pages:
        height = float(page.mediabox.height)
        spans: list[tuple[float, float]] = []
        found: dict[int, float] = {}
        xobjects = (page.get("/Resources") or {}).get("/XObject") or {}
        state = {"fill": (0.0, 0.0, 0.0), "stroke": (0.0, 0.0, 0.0), "stack": [], "path": []}

        def on_text(text, cm, tm, font, size, spans=spans):
            if text.strip():
                m = _mult(tm, cm)
                spans.append((m[5], m[5] + float(size or 0) * abs(m[3] or 1.0)))

        def on_operator(op, args, cm, tm, spans=spans, found=found, state=state,
                        xobjects=xobjects, height=height):
            def ys(points):
                return [cm[1] * x + cm[3] * y + cm[5] for x, y in points]

            if op == b"q":
                state["stack"].append((state["fill"], state["stroke"]))
            elif op == b"Q" and state["stack"]:
                state["fill"], state["stroke"] = state["stack"].pop()
            elif op in COLOR_OPS:
                rgb = _rgb(op, args)
                if rgb is not None:
                    state["stroke" if COLOR_OPS[op][0] else "fill"] = rgb
            elif op in (b"m", b"l", b"c", b"v", b"y"):
                v = [float(a) for a in args]
                state["path"] += ys(list(zip(v[0::2], v[1::2], strict=False)))
            elif op == b"re":
                x, y, w, h = (float(a) for a in args)
                state["path"] += ys([(x, y), (x + w, y + h)])
            elif op in FILL_OPS | STROKE_OPS | BOTH_OPS | {b"n"}:
                path, state["path"] = state["path"], []
                if op == b"n" or not path:
                    return
                colors = ([state["fill"]] if op in FILL_OPS | BOTH_OPS else []) + \
                    ([state["stroke"]] if op in STROKE_OPS | BOTH_OPS else [])
                marked = [_mark_of(c) for c in colors if _mark_of(c) is not None]
                if marked:
                    found.setdefault(marked[0], 1 - max(path) / height)
                elif any(min(c) < 0.97 for c in colors) and \
                        max(path) - min(path) < MAX_PATH_SPAN * height:
                    spans.append((min(path), max(path)))
            elif op == b"Do":
                xobj = xobjects.get(args[0]) if args else None
                xobj = xobj.get_object() if xobj is not None else None
                if xobj is not None and xobj.get("/Subtype") == "/Form" and "/BBox" in xobj:
                    x0, y0, x1, y1 = (float(c) for c in xobj["/BBox"])
                    fm = [float(c) for c in xobj.get("/Matrix", [1, 0, 0, 1, 0, 0])]
                    m = _mult(fm, cm)
                    corners = [m[1] * x + m[3] * y + m[5] for x in (x0, x1) for y in (y0, y1)]
                    spans.append((min(corners), max(corners)))
                else:
                    y0, y1 = cm[5], cm[5] + cm[3]
                    spans.append((min(y0, y1), max(y0, y1)))

        page.extract_text(visitor_text=on_text, visitor_operand_before=on_operator)
        spans = [(max(lo, 0.0), min(hi, height)) for lo, hi in spans
                 if hi > 0 and lo < height and hi - lo < 0.98 * height]
        marks.append(found)
        if not spans:
            extents.append(None)
            continue
        top = 1 - max(hi for _, hi in spans) / height
        bottom = 1 - min(lo for lo, _ in spans) / height
        extents.append((top, bottom))
    return extents, marks


def page_extents(pdf_path) -> list[tuple[float, float] | None]:
    """For each page of ``pdf_path`` (or the PDF's bytes): where its text and pictures begin
    and end, as fractions of the page height from the top (``None`` for a page with neither).
    Text and pictures are located through the page's content stream: text by its matrices and
    font size, a picture (an image XObject) by the unit square it is drawn into."""
    return _read_pages(pdf_path)[0]


def _fill(extent) -> float:
    """How much of a page's printable height its content fills, from the top margin down to
    where the content ends (``extent`` from page_extents)."""
    top = MARGINS_MM["top"] / A4_HEIGHT_MM
    usable = 1 - (MARGINS_MM["top"] + MARGINS_MM["bottom"]) / A4_HEIGHT_MM
    return 0.0 if extent is None else (extent[1] - top) / usable


def sparse_pages(pdf_path, min_fill: float = MIN_FILL) -> list[tuple[int, float]]:
    """Pages (1-based, all but the last) of ``pdf_path`` (or the PDF's bytes) whose content ends
    above ``min_fill`` of the printable height (more than a quarter of it empty by default),
    with that fill.  A block that may not break and is taller than the rest of a page moves
    whole to the next page and leaves such a page behind; pictures (a sphere, a figure) are the
    only such blocks the print stylesheet keeps, and the printer shrinks one that would
    (fit_pictures)."""
    extents = page_extents(pdf_path)
    return [(k + 1, round(_fill(ext), 3)) for k, ext in enumerate(extents[:-1])
            if _fill(ext) < min_fill]


#: pages printed as sheets, one per element of this class (the seminar's session cards, each
#: starting a new page by the print stylesheet): their PDF must have a cover (the page's title
#: and introduction) and one page per sheet, and a short sheet leaving its page half empty is by
#: design, not a sparse page
SHEET = re.compile(r'class="[^"]*\bseminar-card\b')


def sheets(page_html: str) -> int:
    """How many sheets (``seminar-card`` elements) a built page prints, one a page."""
    return len(SHEET.findall(page_html))


def pdf_pages(pdf_path: Path) -> int:
    import io

    from pypdf import PdfReader

    return len(PdfReader(io.BytesIO(Path(pdf_path).read_bytes())).pages)


def check_pdf(pdf_path: Path, title: str) -> list[str]:
    """Problems of a printed page: no pages, or its title missing from the text of page 1-2."""
    import io

    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(Path(pdf_path).read_bytes()))
    if len(reader.pages) < 1:
        return [f"{pdf_path}: no pages"]
    text = " ".join((p.extract_text() or "") for p in reader.pages[:2])
    # NFKC undoes typographic ligatures in the extracted text ("\ufb01" -> "fi")
    text = unicodedata.normalize("NFKC", text)
    if not title or "".join(title.split()) not in "".join(text.split()):
        return [f"{pdf_path}: title {title!r} not found in the text"]
    return []


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--site", type=Path, default=ROOT / "_build" / "html")
    ap.add_argument("--out", type=Path, default=ROOT / "_build" / "pdf")
    ap.add_argument("--pages", nargs="*", help="pages relative to the site (default: chapters "
                                               "and problem sets)")
    ap.add_argument("--mathjax", type=Path, default=MATHJAX)
    ap.add_argument("--jobs", type=Path,
                    help="a JSON file of [page, pdf] pairs (paths) to print instead")
    args = ap.parse_args(argv)
    if args.jobs:
        jobs = json.loads(args.jobs.read_text(encoding="utf-8"))
        if not isinstance(jobs, list) or not all(
                isinstance(j, list) and len(j) == 2 and all(isinstance(s, str) for s in j)
                for j in jobs):
            print(f"--jobs {args.jobs}: expected a JSON list of [page, pdf] pairs of paths",
                  file=sys.stderr)
            return 2
        missing = [page for page, _ in jobs if not Path(page).is_file()]
        if missing:
            print(f"--jobs {args.jobs}: no such page: {', '.join(missing)}", file=sys.stderr)
            return 1
        failed = print_all([(Path(a), Path(b)) for a, b in jobs], args.mathjax)
        return 1 if failed else 0
    site = args.site.resolve()
    if not site.is_dir():
        print(f"{site} is missing: build the book first (make book)", file=sys.stderr)
        return 1
    pages = [site / p for p in args.pages] if args.pages else pages_of(site)
    if not pages:
        print(f"no chapter or problem-set page under {site}", file=sys.stderr)
        return 1
    failed = print_all([(html_path, args.out / (html_path.stem + ".pdf")) for html_path in pages],
                       args.mathjax)
    return 1 if failed else 0


def print_all(jobs: list[tuple[Path, Path]], mathjax: Path = MATHJAX,
              min_fill: float = MIN_FILL) -> list[str]:
    """Print each ``(built page, PDF)`` of ``jobs`` and check it (check_pdf, a picture for every
    sphere, no controls, no sparse page); one line per PDF on standard output, each problem on
    standard error.  Returns the PDFs that failed."""
    from playwright.sync_api import sync_playwright

    failed = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                     headless=True)
        for html_path, pdf in jobs:
            t0 = time.perf_counter()
            info = print_page(browser, html_path, pdf, mathjax)
            bad = check_pdf(pdf, page_title(html_path))
            if info["pictures"] != info["renderers"]:
                bad.append(f"{pdf}: {info['pictures']} pictures for {info['renderers']} spheres")
            if info["controls_shown"]:
                bad.append(f"{pdf}: {info['controls_shown']} player or explorer controls printed")
            n_sheets = sheets(Path(html_path).read_text(encoding="utf-8"))
            sparse = [] if n_sheets else sparse_pages(pdf, min_fill)
            if n_sheets and pdf_pages(pdf) != n_sheets + 1:
                bad.append(f"{pdf}: {pdf_pages(pdf)} pages for a cover and {n_sheets} sheets "
                           f"(a card that does not fit its page)")
            if sparse:
                bad.append(f"{pdf}: pages (number, fill) more than {1 - min_fill:.0%} empty: "
                           f"{sparse}")
            for b in bad:
                print(b, file=sys.stderr)
            if bad:
                failed.append(str(pdf))
            print(f"{pdf}: {info['pictures']}/{info['renderers']} spheres as pictures, "
                  f"{info['players']} at the end of their run"
                  f"  ({time.perf_counter() - t0:.1f} s){'  FAILED' if bad else ''}")
        browser.close()
    return failed


if __name__ == "__main__":
    sys.exit(main())
