"""Open every built page from file://, offline, and check that it works without a complaint.

For each page of ``_build/html`` (the book's pages, the index, the search page and the proof
index; whatever the table of contents adds is checked too): no uncaught exception, no console
error (pages.HARMLESS is empty), no console warning outside the narrow list of harmless ones
(pages.HARMLESS_WARNINGS, each tied to the script it comes from), no request that leaves
file://, no formula MathJax fails on (an error node, or its "Math input error"), and every
link, script, style sheet and picture of the page points to a file of the site.  When the book
is built with a base URL (``html.baseurl``, or ``USAAV_BOOK_BASEURL`` as in the publishing
workflow), links must still be relative: only the canonical link may name it.
The links into the parts ``make site`` publishes beside the book (``student/``, ``slides/``,
``pdf/``: tools/book_site.py writes them in every build) are left alone while the site's folder
has no such part, as a book built alone has not; tests/browser/test_published_site.py checks
them in the assembled site.

One browser context opens the pages one after the other.  A page with widgets is given time to
draw its spheres, and a page with math waits for MathJax, so that their errors are seen too.
"""
from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import unquote, urlsplit

import pytest
from sphinx.errors import ConfigError

from tools.book_site import BASEURL_ENV, SITE_PARTS, base_url, drop_duplicates
from tools.print_pdf import shown_models

from .pages import (
    SITE,
    is_harmless,
    is_harmless_warning,
    site_pages,
    wait_for,
    widget_pages,
    widget_state,
)

PAGES = site_pages()
WIDGET_PAGES = set(widget_pages())
DRAW_TIMEOUT_S = 30
MATH_TIMEOUT_MS = 20000
SETTLE_MS = 500

#: every address a page refers to: links, scripts, style sheets, pictures, frames
REFERENCES = """
() => Array.from(document.querySelectorAll(
    'a[href], link[href], script[src], img[src], iframe[src], source[src], video[src]'))
  .map((e) => ({tag: e.tagName.toLowerCase(), rel: (e.getAttribute('rel') || ''),
                url: (e.href || e.src || '')}))
"""

#: wait until MathJax, where the page loads it, has typeset the page (or give up after a while)
MATH_DONE = """
async (ms) => {
  const started = Date.now();
  while (!(window.MathJax && MathJax.startup && MathJax.startup.promise)) {
    const loaded = document.querySelector('script[src*="mathjax"]');
    if (!loaded || Date.now() - started > ms) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
  const timeout = new Promise((r) => setTimeout(() => r(false), ms));
  return await Promise.race([MathJax.startup.promise.then(() => true), timeout]);
}
"""

#: what MathJax could not typeset: its error nodes, a TeX error ("Missing superscript or
#: subscript argument", shown and named in data-mjx-error) or its "Math input error" (a formula
#: its parser fails on, e.g. one with a control character; data-mjx-error holds the exception).
#: Run after MATH_DONE.
MATH_ERRORS = """
() => {
  const found = Array.from(document.querySelectorAll('mjx-merror')).map((e) => {
    const shown = e.textContent.trim(), why = (e.getAttribute('data-mjx-error') || '').trim();
    return 'MathJax error: ' + shown + (why && why !== shown ? ' (' + why + ')' : '');
  });
  const text = document.body ? document.body.innerText : '';
  if (text.includes('Math input error') && !found.some((f) => f.includes('Math input error')))
    found.push('MathJax error: Math input error');
  return found;
}
"""


def math_errors(page) -> list[str]:
    """The formulas MathJax failed on in the open page, once it has typeset (MATH_DONE)."""
    return page.evaluate(MATH_ERRORS)


class ConsoleLog:
    """Everything a page said: console messages, uncaught exceptions, requests leaving file://."""

    def __init__(self, page):
        self.messages: list[tuple[str, str, str]] = []
        self.outside: list[str] = []
        page.on("console", lambda m: self.messages.append(
            (m.type, m.text, (m.location or {}).get("url", ""))))
        page.on("pageerror", lambda exc: self.messages.append(("pageerror", str(exc), "")))
        page.route("**/*", self._route)

    def _route(self, route):
        url = route.request.url
        if url.startswith(("file:", "data:", "blob:", "about:")):
            route.continue_()
        else:
            self.outside.append(url)
            route.abort()

    def clear(self):
        self.messages.clear()
        self.outside.clear()


def problems_in(messages: list[tuple[str, str, str]]) -> list[str]:
    """The console messages that are not allowed: exceptions, errors, unknown warnings."""
    bad = []
    for kind, text, where in messages:
        if kind == "pageerror":
            bad.append(f"uncaught exception: {text}")
        elif kind == "error" and not is_harmless(text, where):
            bad.append(f"console error: {text} ({where})")
        elif kind == "warning" and not is_harmless_warning(text, where):
            bad.append(f"console warning: {text} ({where})")
    return bad


def _unassembled(url: str, root: str, site: Path) -> bool:
    """Whether ``url`` (under the site's ``root``) points into a part of the published site
    that this folder does not hold (a book built without ``make site``)."""
    part = url[len(root):].split("/", 1)[0]
    return part in SITE_PARTS and not (site / part).exists()


def broken_references(refs: list[dict], page_path: str, site: Path = SITE) -> list[str]:
    """References of the page at ``page_path`` (relative to the site) that do not point to a
    file of the site, that load from outside it, or that name its published address."""
    bad = []
    canonical = next((r["url"] for r in refs if "canonical" in r["rel"].split()), "")
    base = ""  # the published site's address, read off the canonical link
    if canonical and not canonical.endswith("/" + page_path):
        bad.append(f"the canonical address {canonical} does not end with the page's path")
    elif canonical:
        base = canonical[:len(canonical) - len(page_path)]
    root = site.as_uri() + "/"
    for r in refs:
        url, rel = r["url"], r["rel"].split()
        parts = urlsplit(url)
        if "canonical" in rel:
            continue
        if parts.scheme == "file":
            if not url.startswith(root):
                bad.append(f"<{r['tag']}> points outside the site: {url}")
            elif not Path(unquote(parts.path)).exists() and not _unassembled(url, root, site):
                bad.append(f"<{r['tag']}> points to a missing file: {url}")
        elif parts.scheme in ("http", "https"):
            if r["tag"] != "a":
                bad.append(f"<{r['tag']}> loads from outside the site: {url}")
            elif base and url.startswith(base):
                bad.append(f"<a> names the published site instead of a relative path: {url}")
    return bad


def _ids(pages):
    return [str(p.relative_to(SITE)) for p in pages]


@pytest.fixture(scope="module")
def site_page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    log = ConsoleLog(page)
    yield page, log
    context.close()


def test_site_has_the_book():
    assert SITE.is_dir(), f"{SITE} is missing: build the book first (make book)"
    names = {str(p.relative_to(SITE)) for p in PAGES}
    assert {"index.html", "search.html", "book/intro.html"} <= names, sorted(names)
    assert WIDGET_PAGES & set(PAGES), "no page with widgets among the pages checked"


@pytest.mark.parametrize("html", PAGES, ids=_ids(PAGES))
def test_page_console_is_clean_and_links_stay_in_the_site(site_page, html):
    page, log = site_page
    log.clear()
    uri = html.as_uri()
    page.goto(uri, wait_until="load")
    if re.search(r'http-equiv="refresh"', html.read_text(encoding="utf-8"), re.I):
        page.wait_for_url(lambda u: u != uri, timeout=10000)  # a redirect: check where it goes
        page.wait_for_load_state("load")
    if html in WIDGET_PAGES:
        renderers = shown_models(widget_state(html), "RendererModel")
        drawn = wait_for(lambda: page.evaluate("document.querySelectorAll('canvas').length")
                         >= renderers, timeout=DRAW_TIMEOUT_S)
        assert drawn, f"{html.name}: the {renderers} spheres were not drawn"
    page.evaluate(MATH_DONE, MATH_TIMEOUT_MS)
    page.wait_for_timeout(SETTLE_MS)
    refs = page.evaluate(REFERENCES)
    bad_math = math_errors(page)
    shown = Path(unquote(urlsplit(page.url).path)).relative_to(SITE).as_posix()
    page.goto("about:blank")  # stops the page's timers: nothing it does later counts elsewhere

    problems = problems_in(log.messages)
    problems += [f"request left file:// (not offline): {u}" for u in log.outside]
    problems += broken_references(refs, shown)
    problems += bad_math
    assert not problems, f"{html.relative_to(SITE)}:\n  " + "\n  ".join(problems)


# ---------------------------------------------------------------------------------------------
# the checks above, and the fixes in tools/book_site.py, on known input

UNION_TYPES = ('strict mode: use allowUnionTypes to allow union type keyword at '
               '"#/properties/state/additionalProperties/properties/buffers/items" (strictTypes)')


def test_console_check_flags_errors_exceptions_and_unknown_warnings():
    theme = "file:///s/_static/scripts/pydata-sphinx-theme.js?digest=1"
    messages = [
        ("pageerror", "Identifier 'THEBE_JS_URL' has already been declared", ""),
        ("error", "Got invalid theme mode: . Resetting to auto.", theme),
        ("warning", UNION_TYPES, "file:///s/book/some-other-script.js"),
        ("warning", "Something the book does", "file:///s/book/ch01_particles.html"),
        ("warning", UNION_TYPES, "file:///s/widgets-js/embed-amd.js?v=39b3b2cb"),
        ("log", "[PST]: Changed to auto mode using the light theme.", theme),
        ("debug", "TV(1): renderScene", "file:///s/widgets-js/jupyter-threejs/index.js"),
    ]
    problems = problems_in(messages)
    assert len(problems) == 4, problems
    assert "THEBE_JS_URL" in problems[0] and "invalid theme mode" in problems[1]
    assert "some-other-script.js" in problems[2] and "Something the book does" in problems[3]


def test_reference_check_flags_missing_files_outside_resources_and_absolute_links(tmp_path):
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "a.html").write_text("<html></html>")
    here = (tmp_path / "book" / "a.html").as_uri()
    refs = [
        {"tag": "link", "rel": "canonical", "url": "https://example.org/pub/book/a.html"},
        {"tag": "a", "rel": "", "url": here + "#section"},
        {"tag": "link", "rel": "next", "url": here},
        {"tag": "a", "rel": "", "url": "https://arxiv.org/abs/2605.30229"},
        {"tag": "a", "rel": "", "url": "mailto:someone@example.org"},
        {"tag": "a", "rel": "", "url": (tmp_path / "book" / "missing.html").as_uri()},
        {"tag": "script", "rel": "", "url": "https://cdn.example.com/x.js"},
        {"tag": "a", "rel": "", "url": "https://example.org/pub/book/b.html"},
        {"tag": "img", "rel": "", "url": "file:///elsewhere/picture.png"},
    ]
    problems = broken_references(refs, "book/a.html", site=tmp_path)
    assert len(problems) == 4, problems
    assert "missing.html" in problems[0] and "cdn.example.com" in problems[1]
    assert "names the published site" in problems[2] and "outside the site" in problems[3]
    moved = [{"tag": "link", "rel": "canonical", "url": "https://example.org/pub/other.html"}]
    assert broken_references(moved, "book/a.html", site=tmp_path)


def test_links_into_the_published_sites_parts_are_checked_once_the_part_is_there(tmp_path):
    (tmp_path / "book").mkdir()
    deck = {"tag": "a", "rel": "", "url": (tmp_path / "slides" / "session01.html").as_uri()}
    other = {"tag": "a", "rel": "", "url": (tmp_path / "slidesx" / "session01.html").as_uri()}
    # a book built alone: no slides/ folder, the deck's link is left to the assembled site
    assert broken_references([deck], "book/a.html", site=tmp_path) == []
    assert len(broken_references([other], "book/a.html", site=tmp_path)) == 1
    (tmp_path / "slides").mkdir()  # an assembled site without that deck
    problems = broken_references([deck], "book/a.html", site=tmp_path)
    assert len(problems) == 1 and "session01.html" in problems[0], problems


def test_base_url_comes_from_the_config_or_the_environment():
    assert base_url("", {}) == ""
    assert base_url("https://example.org/book", {}) == "https://example.org/book/"
    assert base_url("https://example.org/book/", {BASEURL_ENV: " "}) == "https://example.org/book/"
    given = {BASEURL_ENV: "https://someone.github.io/usaav-edu"}
    assert base_url("https://example.org/book/", given) == "https://someone.github.io/usaav-edu/"
    with pytest.raises(ConfigError, match=BASEURL_ENV):
        base_url("", {BASEURL_ENV: "someone.github.io/usaav-edu"})
    with pytest.raises(ConfigError, match="html.baseurl"):
        base_url("ftp://example.org/book", {})


def test_each_script_is_kept_once_at_its_first_place():
    def script(filename, body=None, priority=500):
        return SimpleNamespace(filename=filename, priority=priority,
                               attributes={"body": body} if body else {})

    # an inline script registered before and after the builder was set up: None and ''
    first, other, second = script(None, "const A = 1"), script("x.js"), script("", "const A = 1")
    scripts = [first, other, second, script("x.js", priority=900), script("", "const B = 2")]
    assert drop_duplicates(scripts) is scripts
    assert scripts[:2] == [first, other] and len(scripts) == 4
