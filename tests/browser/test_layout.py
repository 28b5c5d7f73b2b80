"""The reading layout of the built book at 1280 pixels: nothing scrolls sideways, nothing is
clipped, every figure is captioned.

Every page of the book is opened at 1280 x 1000 with everything folded unfolded (the code of
check cells, solutions, dropdowns), and after MathJax has typeset it:

* no code block, code cell or output (``pre``) scrolls sideways: ``scrollWidth`` is at most
  ``clientWidth``;
* no displayed equation (``mjx-container[display]``) is wider than the box it sits in (the
  text column, or a theorem or exercise box);
* every image in a code cell's output is a numbered figure with a caption and alt text that
  describes it (not a file name).
"""
from __future__ import annotations

import re

import pytest

from .pages import SITE

SKIP = {"_static", "_sources", "_images", "widgets-js", "mathjax"}
SKIP_PAGES = {"genindex.html", "search.html", "py-modindex.html"}
#: a page that only forwards to another (the site's index.html)
REDIRECT = re.compile(r'http-equiv="refresh"', re.I)


def book_pages():
    if not SITE.is_dir():
        return []
    return [p for p in sorted(SITE.rglob("*.html"))
            if not SKIP & set(p.relative_to(SITE).parts) and p.name not in SKIP_PAGES
            and not REDIRECT.search(p.read_text(encoding="utf-8", errors="replace")[:2000])]


PAGES = book_pages()

UNFOLD = """
() => {
  for (const d of document.querySelectorAll('details')) d.open = true;
  for (const b of document.querySelectorAll('.toggle-hidden button.toggle-button')) b.click();
}
"""

MEASURE = """
() => {
  const where = (el) => {
    const s = el.closest('section[id], div[id]');
    return s ? s.id : '';
  };
  const pre = [];
  for (const p of document.querySelectorAll('main pre')) {
    if (p.clientWidth > 0 && p.scrollWidth > p.clientWidth + 1) {
      const kind = p.closest('.cell_output') ? 'output'
                 : p.closest('.cell_input') ? 'code cell' : 'code block';
      const longest = p.textContent.split('\\n').reduce((a, l) => l.length > a.length ? l : a, '');
      pre.push({kind, where: where(p), scroll: p.scrollWidth, width: p.clientWidth,
                chars: longest.length, line: longest.slice(0, 70)});
    }
  }
  const math = [];
  for (const m of document.querySelectorAll('main mjx-container[display]')) {
    const box = m.getBoundingClientRect();
    const body = (m.querySelector('mjx-math') || m).getBoundingClientRect();
    if (box.width > 0 && (body.width > box.width + 1 || m.scrollWidth > m.clientWidth + 1)) {
      math.push({where: where(m), width: Math.round(body.width), column: Math.round(box.width),
                 tex: (m.getAttribute('aria-label') || m.textContent).slice(0, 70)});
    }
  }
  const figures = [];
  for (const img of document.querySelectorAll('main .cell_output img')) {
    // pictures drawn by widgets (the spheres' snapshots, explorers) are not figures
    if (img.closest('.jupyter-widgets') || /^(blob|data):/.test(img.getAttribute('src'))) {
      continue;
    }
    const fig = img.closest('figure');
    const cap = fig ? fig.querySelector('figcaption') : null;
    figures.push({src: img.getAttribute('src'), alt: img.getAttribute('alt') || '',
                  caption: cap ? cap.innerText.trim() : '',
                  number: cap && cap.querySelector('.caption-number') ?
                          cap.querySelector('.caption-number').innerText.trim() : ''});
  }
  return {pre, math, figures};
}
"""


def measure(page, path):
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    page.evaluate(UNFOLD)
    page.evaluate("""async () => {
        if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
            await MathJax.startup.promise;
        }
    }""")
    page.wait_for_timeout(200)
    return page.evaluate(MEASURE)


@pytest.fixture(scope="module")
def wide(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    pg = context.new_page()
    pg.route("**/*", lambda r: r.continue_() if r.request.url.startswith(
        ("file:", "data:", "blob:", "about:")) else r.abort())
    yield pg
    context.close()


@pytest.fixture(scope="module")
def layout(wide):
    """The measurements of every page, taken once."""
    if not PAGES:
        pytest.fail(f"no built book at {SITE}: build it first (jupyter-book build .)")
    return {p.relative_to(SITE).as_posix(): measure(wide, p) for p in PAGES}


def test_the_pages_are_found():
    names = {p.relative_to(SITE).as_posix() for p in PAGES}
    assert "book/ch01_particles.html" in names, f"chapter 1 missing from {sorted(names)}"


def test_no_code_or_output_scrolls_sideways(layout):
    bad = [(name, p) for name, m in layout.items() for p in m["pre"]]
    assert not bad, (f"{len(bad)} code blocks or outputs scroll sideways at 1280 px:\n"
                     + "\n".join(f"{name} #{p['where']} {p['kind']}: {p['scroll']} px in "
                                 f"{p['width']} px, longest line {p['chars']} chars: "
                                 f"{p['line']!r}" for name, p in bad))


def test_no_displayed_equation_is_wider_than_its_column(layout):
    bad = [(name, m) for name, page in layout.items() for m in page["math"]]
    assert not bad, (f"{len(bad)} displayed equations wider than their column at 1280 px:\n"
                     + "\n".join(f"{name} #{m['where']}: {m['width']} px in {m['column']} px: "
                                 f"{m['tex']!r}" for name, m in bad))


def test_every_figure_is_numbered_captioned_and_described(layout):
    figures = [(name, f) for name, page in layout.items() for f in page["figures"]]
    assert figures, "no figure found in any cell output"
    bad = []
    for name, f in figures:
        if not re.match(r"Fig(ure|\.)\s*\d", f["number"]):
            bad.append(f"{name} {f['src']}: no figure number ({f['caption'][:40]!r})")
        if len(f["caption"].split()) < 8:
            bad.append(f"{name} {f['src']}: caption {f['caption']!r}")
        if len(f["alt"].split()) < 8 or re.search(r"\.(png|svg|jpe?g)\b", f["alt"]):
            bad.append(f"{name} {f['src']}: alt text {f['alt']!r}")
    assert not bad, "\n".join(bad)


def test_figures_are_vector_graphics(layout):
    raster = [(name, f["src"]) for name, page in layout.items() for f in page["figures"]
              if not f["src"].endswith(".svg")]
    assert not raster, f"figures drawn as raster images: {raster}"
