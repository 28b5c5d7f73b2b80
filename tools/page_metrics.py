"""How the built book's chapter pages read: height, first picture, visible code, debug prints.

Usage::

    python tools/page_metrics.py                       # the chapters of _build/html
    python tools/page_metrics.py --site other/_build/html --pages book/ch04_rope.html

prints a Markdown table, one row per chapter page (``book/ch*.html``), measured in headless
chromium (``/usr/bin/chromium`` driven by Playwright, pages from ``file://``, nothing leaves the
machine) at ``WIDTH`` x ``HEIGHT`` (1280 x 900) as a reader first sees the page: nothing
unfolded, after MathJax has typeset it and every 3-D view has drawn its canvas.

* **height**: the page's ``scrollHeight`` in pixels;
* **first picture**: how far down the page (pixels from its top) the first picture of the
  article starts: a canvas (a 3-D view), an ``img`` or an ``svg`` at least ``MIN_PICTURE``
  pixels wide and high (icons and typeset math are not pictures), shown (not in a closed
  ``details``), below the page title;
* **visible code lines**: non-blank lines of the code cells a reader sees without unfolding
  anything (``div.cell`` inputs; a cell folded by ``hide-input`` or removed is not seen),
  exercise cells left out (tags ``exercise-stub`` and ``exercise-check``: myst-nb gives a cell
  the class ``tag_<name>`` for each of its tags);
* **code cells**: shown and folded, exercise cells left out;
* **debug prints**: lines of cell outputs that report the page's bookkeeping rather than the
  computation (``DEBUG``: "explorer: embedded state 898804 bytes", a budget), folded or not.

``tests/browser/test_reading.py`` checks the limits on these numbers.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:           # run as a script: tools/ is on the path, not the root
    sys.path.insert(0, str(ROOT))

from tools.print_pdf import CHROMIUM, CHROMIUM_ARGS, renderer_count, wait_canvases  # noqa: E402

WIDTH, HEIGHT = 1280, 900
#: the chapter pages of a built site
CHAPTERS = "book/ch*.html"
#: a picture is at least this many pixels wide and high
MIN_PICTURE = 100
#: tags of exercise cells, left out of the code counts
EXERCISE_TAGS = ("exercise-stub", "exercise-check")
#: outputs that report the page's own bookkeeping, not the computation
#: (a line that states a view's parameters, "explorer: SA, n = 32, beta in ...", is not one)
DEBUG = re.compile(r"embedded state|widget state|\bbytes\b|\bbudget\b", re.I)
RENDER_TIMEOUT_S = 90

MEASURE = """
([minPicture, exerciseTags]) => {
  const article = document.querySelector('main article') || document.querySelector('article')
                  || document.body;
  // not shown: no box, display none or visibility hidden on the way up, or inside a closed
  // details (outside its summary), which Chromium hides by content-visibility
  const shown = (el) => {
    if (el.getClientRects().length === 0) return false;
    if (el.checkVisibility && !el.checkVisibility({visibilityProperty: true})) return false;
    const closed = el.closest('details:not([open])');
    return !closed || !!el.closest('summary');
  };
  const title = article.querySelector('h1');
  const below = title ? title.getBoundingClientRect().bottom + window.scrollY : 0;
  let first = null;
  for (const el of article.querySelectorAll('canvas, img, svg')) {
    if (el.closest('mjx-container') || (el.parentElement && el.parentElement.closest('svg'))) {
      continue;                                     // typeset math, or a part of a picture
    }
    const r = el.getBoundingClientRect();
    if (!shown(el) || r.width < minPicture || r.height < minPicture) continue;
    const top = r.top + window.scrollY;
    if (top < below) continue;
    if (first === null || top < first.top) {
      first = {top: Math.round(top), tag: el.tagName.toLowerCase(),
               where: (el.closest('section[id]') || {}).id || ''};
    }
  }
  const exercise = new RegExp('(^|\\\\s)tag_(' + exerciseTags.join('|') + ')(\\\\s|$)');
  let lines = 0, cellsShown = 0, cellsFolded = 0, exerciseCells = 0;
  const cells = [];
  for (const cell of article.querySelectorAll('div.cell')) {
    const input = cell.querySelector('.cell_input');
    if (!input) continue;                           // remove-input: no code on the page
    if (exercise.test(cell.className)) { exerciseCells++; continue; }
    const pre = input.querySelector('pre') || input;
    if (!shown(pre)) { cellsFolded++; continue; }
    const n = pre.textContent.split('\\n').filter((l) => l.trim() !== '').length;
    cellsShown++;
    lines += n;
    cells.push({lines: n, first: pre.textContent.trim().split('\\n')[0].slice(0, 70),
                where: (cell.closest('section[id]') || {}).id || ''});
  }
  const outputs = Array.from(article.querySelectorAll('div.cell_output pre'))
    .map((p) => p.textContent);
  return {height: document.documentElement.scrollHeight, first_picture: first,
          code_lines: lines, cells_shown: cellsShown, cells_folded: cellsFolded,
          exercise_cells: exerciseCells, cells, outputs};
}
"""


def chapter_pages(site: Path) -> list[Path]:
    """The chapter pages (``book/ch*.html``) of a built site, sorted; [] when it is not built."""
    site = Path(site)
    return sorted(site.glob(CHAPTERS)) if site.is_dir() else []


def debug_prints(outputs) -> list[str]:
    """The lines of ``outputs`` (texts) that match ``DEBUG``."""
    return [line.strip() for text in outputs for line in text.splitlines() if DEBUG.search(line)]


def open_page(page, url: str, renderers: int = 0, timeout: float = RENDER_TIMEOUT_S):
    """Load ``url`` in ``page`` and wait until MathJax is done and ``renderers`` canvases are
    drawn (RuntimeError, naming the page, when they are not within ``timeout`` seconds)."""
    page.goto(url)
    page.wait_for_load_state("load")
    page.evaluate("""async () => {
        if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
            await MathJax.startup.promise;
        }
    }""")
    if renderers:
        n = wait_canvases(page, renderers, timeout)
        if n < renderers:
            raise RuntimeError(f"{url}: {n} of {renderers} 3-D views drawn within {timeout:g} s")
    page.wait_for_timeout(300)              # the layout settles once the widgets are in


def measure(page, url: str, renderers: int = 0) -> dict:
    """The reading measurements of one page (see the module docstring); ``renderers`` is how
    many canvases to wait for.  Keys: height, first_picture (dict with top, tag, where; or
    None), code_lines, cells_shown, cells_folded, exercise_cells, cells, debug."""
    open_page(page, url, renderers)
    m = page.evaluate(MEASURE, [MIN_PICTURE, list(EXERCISE_TAGS)])
    m["debug"] = debug_prints(m.pop("outputs"))
    return m


def measure_file(page, html_path: Path) -> dict:
    """``measure`` for a page of a built site, waiting for the 3-D views it draws on opening."""
    return measure(page, Path(html_path).resolve().as_uri(), renderer_count(Path(html_path)))


def reader_context(browser):
    """A browser context as the reader's: WIDTH x HEIGHT, and no request leaves file://."""
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith(
        ("file:", "data:", "blob:", "about:")) else r.abort())
    return context


def table(rows: dict) -> str:
    """A Markdown table of ``{page name: measure(...)}``."""
    out = ["| page | height (px) | first picture (px) | visible code lines | code cells "
           "shown / folded | debug prints |",
           "|---|---:|---:|---:|---:|---:|"]
    for name, m in rows.items():
        first = m["first_picture"]
        out.append(f"| {name} | {m['height']:,} | {first['top']:,} | {m['code_lines']} | "
                   f"{m['cells_shown']} / {m['cells_folded']} | {len(m['debug'])} |"
                   if first else
                   f"| {name} | {m['height']:,} | none | {m['code_lines']} | "
                   f"{m['cells_shown']} / {m['cells_folded']} | {len(m['debug'])} |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--site", type=Path, default=ROOT / "_build" / "html")
    ap.add_argument("--pages", nargs="*", help="pages relative to the site (default: chapters)")
    args = ap.parse_args(argv)
    site = args.site.resolve()
    if not site.is_dir():
        print(f"{site} is missing: build the book first (make book)", file=sys.stderr)
        return 1
    pages = [site / p for p in args.pages] if args.pages else chapter_pages(site)
    missing = [str(p) for p in pages if not p.is_file()]
    if missing or not pages:
        print(f"no such page: {missing}" if missing else f"no chapter page under {site}",
              file=sys.stderr)
        return 1
    from playwright.sync_api import sync_playwright

    rows = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        context = reader_context(browser)
        page = context.new_page()
        for html_path in pages:
            rows[html_path.stem] = measure_file(page, html_path)
        context.close()
        browser.close()
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
