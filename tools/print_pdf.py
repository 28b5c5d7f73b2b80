"""Print the built book's chapters and problem sets to PDF with Debian's chromium.

Usage (``make pdf`` runs the first form after ``make book``)::

    python tools/print_pdf.py                              # _build/html -> _build/pdf
    python tools/print_pdf.py --site _build/student/_build/html --out _build/pdf-student
    python tools/print_pdf.py --pages book/ch04_rope.html  # some pages only

One PDF per chapter page (``book/ch*.html``) and per problem-set page
(``book/seminar/problems_*.html``), named after the page.  Each page is opened from ``file://``
in headless chromium (``/usr/bin/chromium`` driven by Playwright; no browser download), and
before printing:

* every 3-D widget is waited for until its WebGL canvas has drawn, photographed, and replaced by
  that picture (a WebGL canvas prints as a blank box otherwise);
* the math is typeset by MathJax: the page asks a CDN for MathJax, and the request is answered
  from the pinned npm copy in ``node_modules/mathjax`` (nothing leaves the machine);
* solutions in dropdowns stay folded (print the student edition for a copy without them).
"""
from __future__ import annotations

import argparse
import base64
import json
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
WIDGET_STATE = re.compile(
    r'<script type="application/vnd\.jupyter\.widget-state\+json">(.*?)</script>', re.S)
RENDER_TIMEOUT_S = 90
#: long code lines wrap on paper instead of running off the page
PRINT_CSS = ("@media print { pre, .highlight pre, .output pre { white-space: pre-wrap !important; "
             "overflow-wrap: anywhere; } img.usaav-widget-picture { break-inside: avoid; } }")

# replace each canvas by an <img> holding its screenshot (same on-screen size)
SWAP_CANVAS = """
([index, dataUrl]) => {
  const c = document.querySelectorAll('canvas')[index];
  const r = c.getBoundingClientRect();
  const img = document.createElement('img');
  img.src = dataUrl;
  img.className = 'usaav-widget-picture';
  img.style.width = r.width + 'px';
  img.style.height = r.height + 'px';
  img.style.maxWidth = '100%';
  img.style.objectFit = 'contain';
  c.dataset.usaavSwapped = '1';
  c.replaceWith(img);
  return new Promise((resolve) => { if (img.complete) resolve(); else img.onload = resolve; });
}
"""


def shown_models(state: dict, model_name: str) -> int:
    """How many models named ``model_name`` a page shows at first: a Stack shows only its
    selected child, so what only its other children hold is not drawn until selected."""
    def refs(value):
        if isinstance(value, str) and value.startswith("IPY_MODEL_"):
            yield value[len("IPY_MODEL_"):]
        elif isinstance(value, list):
            for v in value:
                yield from refs(v)
        elif isinstance(value, dict):
            for v in value.values():
                yield from refs(v)

    def reach(model_id, seen):
        if model_id in seen or model_id not in state:
            return
        seen.add(model_id)
        model = state[model_id]
        body = model["state"]
        if model["model_name"] == "StackModel":
            children, k = body.get("children", []), body.get("selected_index")
            body = {**body, "children": [children[k]] if k is not None and 0 <= k < len(children) else []}
        for r in refs(body):
            reach(r, seen)

    hidden, shown = set(), set()
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
    """How many pythreejs renderers (3-D canvases) the page draws when it opens (see shown_models)."""
    m = WIDGET_STATE.search(html_path.read_text(encoding="utf-8", errors="replace"))
    if not m:
        return 0
    return shown_models(json.loads(m.group(1)).get("state", {}), "RendererModel")


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


def print_page(browser, html_path: Path, pdf_path: Path, mathjax_dir: Path,
               timeout: float = RENDER_TIMEOUT_S) -> dict:
    """Print one built page to ``pdf_path``; return what was done (for logs and tests)."""
    expected = renderer_count(html_path)
    context = browser.new_context(viewport={"width": 1100, "height": 1400})
    page = context.new_page()
    page.route("**/*", _serve_mathjax(mathjax_dir))
    page.goto(html_path.as_uri(), wait_until="load")
    try:
        page.wait_for_function(
            "() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=15000)
        page.evaluate("() => MathJax.startup.promise")
    except Exception:  # a page without math
        pass
    n = wait_canvases(page, expected, timeout) if expected else 0
    pictures = 0
    if n:
        time.sleep(1.0)
        for k in range(n):
            canvas = page.locator("canvas").nth(0)  # swapped canvases leave the list
            shot = canvas.screenshot()
            deadline = time.time() + 15
            while not _is_drawn(shot) and time.time() < deadline:
                time.sleep(0.5)
                shot = canvas.screenshot()
            url = "data:image/png;base64," + base64.b64encode(shot).decode()
            page.evaluate(SWAP_CANVAS, [0, url])
            pictures += 1
    pdf_path.parent.mkdir(parents=True, exist_ok=True)
    page.add_style_tag(content=PRINT_CSS)
    page.emulate_media(media="print")
    page.pdf(path=str(pdf_path), format="A4", print_background=True, outline=True, tagged=True,
             margin={"top": "14mm", "bottom": "14mm", "left": "12mm", "right": "12mm"})
    context.close()
    return {"page": str(html_path), "pdf": str(pdf_path), "renderers": expected,
            "canvases": n, "pictures": pictures}


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
    ap.add_argument("--mathjax", type=Path, default=ROOT / "node_modules" / "mathjax" / "es5")
    args = ap.parse_args(argv)
    site = args.site.resolve()
    if not site.is_dir():
        print(f"{site} is missing: build the book first (make book)", file=sys.stderr)
        return 1
    pages = [site / p for p in args.pages] if args.pages else pages_of(site)
    if not pages:
        print(f"no chapter or problem-set page under {site}", file=sys.stderr)
        return 1
    from playwright.sync_api import sync_playwright

    failures = 0
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                     headless=True)
        for html_path in pages:
            t0 = time.perf_counter()
            pdf = args.out / (html_path.stem + ".pdf")
            info = print_page(browser, html_path, pdf, args.mathjax)
            bad = check_pdf(pdf, page_title(html_path))
            for b in bad:
                print(b, file=sys.stderr)
            ok = info["pictures"] == info["renderers"] and not bad
            failures += not ok
            print(f"{pdf}: {info['pictures']}/{info['renderers']} spheres as pictures"
                  f"  ({time.perf_counter() - t0:.1f} s){'' if ok else '  MISSING SPHERES'}")
        browser.close()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
