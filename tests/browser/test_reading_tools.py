"""The reader's tools of the built book, from ``file://`` in chromium: search, the search box, the
"Show all code" switch, and the download menu.

* **Search** gives excerpts: each result shows, below its title, the text around the words
  searched for (tools/book_site.py answers the search page's fetch of a page from the text it
  wrote at build time; a browser refuses that fetch from the disk).
* **One search box** per page: the header's search button (the sidebar has no search field).
* **"Show all code"** (``_static/usaav-code-toggle.js``): one named toggle button at the top of a
  chapter opens every folded code cell at once and folds them all again, and follows the cells
  opened one by one.
* **No ".pdf" print button**: the download menu links to the page's own PDF in the published
  site (``pdf/<page>.pdf``; tests/browser/test_published_site.py checks that it resolves there),
  or on a page that is not printed to the printed chapters (the FAQ's section on ``make pdf``),
  instead of the browser's print.
"""
from __future__ import annotations

import re

from playwright.sync_api import TimeoutError as PlaywrightTimeout

from .pages import SITE

CHAPTER = SITE / "book" / "ch01_particles.html"
#: a page that is not printed
UNPRINTED = SITE / "book" / "start.html"
#: a word of chapter 1's prose and where the search must find it
QUERY, QUERY_PAGE = "metastability", "ch02_metastability"
TIMEOUT_MS = 30_000


def _open(page, path):
    assert path.is_file(), f"{path} is missing: build the book first (make book)"
    page.goto(path.as_uri())
    page.wait_for_load_state("load")


def test_search_results_have_excerpts(page):
    assert (SITE / "search.html").is_file(), f"{SITE} is missing: build the book first (make book)"
    page.goto((SITE / "search.html").as_uri() + f"?q={QUERY}")
    results = page.locator("#search-results ul.search li")
    results.first.wait_for(timeout=TIMEOUT_MS)
    # the results come one by one, each excerpt once its page's text is in: wait for all
    try:
        page.wait_for_function("""() => {
            const status = document.querySelector('#search-results .search-summary');
            if (!status || !/finished/i.test(status.textContent)) return false;
            return [...document.querySelectorAll('#search-results ul.search li')]
                .every(li => li.querySelector(':scope > span') || li.querySelector('p.context'));
        }""", timeout=TIMEOUT_MS)
    except PlaywrightTimeout:
        pass  # the assertions below say which results have no excerpt
    items = page.evaluate("""() => [...document.querySelectorAll('#search-results ul.search li')]
        .map(li => ({href: li.querySelector('a').getAttribute('href'),
                     object: !!li.querySelector(':scope > span'),   // an API entry: its description
                     excerpt: (li.querySelector('p.context') || {}).textContent || ''}))""")
    assert items, f"no results for {QUERY!r}"
    hit = [i for i in items if QUERY_PAGE in i["href"]]
    assert hit, f"{QUERY_PAGE} is not among the results for {QUERY!r}: {[i['href'] for i in items]}"
    excerpt = hit[0]["excerpt"]
    assert QUERY in excerpt.lower() and len(excerpt) > 60, (
        f"result {hit[0]['href']}: excerpt {excerpt!r} does not show the text around {QUERY!r}")
    texts = [i for i in items if not i["object"]]
    bare = [i["href"] for i in texts if not i["excerpt"].strip()]
    assert not bare, f"{len(bare)} of {len(texts)} results have no excerpt: {bare}"

    assert not page.log.outside, f"the search left the disk: {page.log.outside}"
    assert not page.log.errors, f"console errors on the search page: {page.log.errors}"


def test_one_search_box_per_page(page):
    _open(page, CHAPTER)
    boxes = page.evaluate("""() => [...document.querySelectorAll(
            'button.search-button, button.search-button-field, form.bd-search, input[type=search]')]
        .filter(e => !e.closest('.search-button__wrapper'))      // the dialog the boxes open
        .filter(e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; })
        .map(e => e.className || e.tagName)""")
    assert len(boxes) == 1, f"{CHAPTER.name}: {len(boxes)} search boxes on screen, expected 1: {boxes}"


#: a folded code cell, as myst-nb writes it (tag hide-input)
FOLD = "article div.cell details.hide.above-input"


def _folds(page):
    return page.evaluate("sel => [...document.querySelectorAll(sel)].map(d => d.open)", FOLD)


def test_show_all_code_opens_and_folds_every_folded_cell(page):
    _open(page, CHAPTER)
    folds = _folds(page)
    assert len(folds) >= 3 and not any(folds), (
        f"{CHAPTER.name}: {len(folds)} folded code cells, open {sum(folds)}; expected some, all closed")
    button = page.get_by_role("button", name="Show all code")
    assert button.count() == 1, f"{CHAPTER.name}: {button.count()} 'Show all code' buttons"
    assert button.get_attribute("aria-pressed") == "false"
    assert button.is_visible(), "the switch is not on screen at the top of the page"
    button.click()
    assert all(_folds(page)), f"after 'Show all code': open {_folds(page)}"
    hide = page.get_by_role("button", name="Hide all code")
    assert hide.count() == 1 and hide.get_attribute("aria-pressed") == "true"
    # the code is shown, not only the <details> flagged open
    first_code = page.locator(f"{FOLD} div.cell_input").first
    first_code.scroll_into_view_if_needed()
    assert first_code.is_visible()
    hide.click()
    assert not any(_folds(page)), f"after 'Hide all code': open {_folds(page)}"
    # one cell opened by its own summary: the switch still offers to show all
    page.locator(f"{FOLD} > summary").first.click()
    assert sum(_folds(page)) == 1
    assert page.get_by_role("button", name="Show all code").count() == 1
    assert not page.log.errors, f"console errors: {page.log.errors}"


def test_show_all_code_also_on_a_phone(browser):
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    try:
        _open(page, CHAPTER)
        button = page.get_by_role("button", name="Show all code")
        assert button.count() == 1 and button.is_visible(), "no visible 'Show all code' at 390 px"
        box = button.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, f"the switch spills: {box}"
    finally:
        context.close()


def test_no_switch_on_a_page_without_folded_code(page):
    _open(page, SITE / "book" / "reference" / "faq.html")
    assert page.locator(".usaav-code-toggle").count() == 0


def test_no_browser_print_button_but_the_printed_chapters(page):
    _open(page, CHAPTER)
    html = CHAPTER.read_text(encoding="utf-8")
    assert "window.print()" not in html and "btn-download-pdf-button" not in html, (
        f"{CHAPTER.name} still offers the browser's print as '.pdf'")
    printed = page.locator("a.btn-printed-chapters-button")
    assert printed.count() == 1, "the download menu has no link to the printed chapter"
    assert printed.get_attribute("href") == "../pdf/ch01_particles.pdf"
    _open(page, UNPRINTED)
    printed = page.locator("a.btn-printed-chapters-button")
    assert printed.count() == 1, "the download menu has no link to the printed chapters"
    href = printed.get_attribute("href")
    assert re.search(r"faq\.html#faq-print$", href), href
    target = (UNPRINTED.parent / href.split("#")[0]).resolve()
    assert target.is_file() and 'id="faq-print"' in target.read_text(encoding="utf-8"), (
        f"{href}: no section faq-print there")
    _open(page, CHAPTER)
    notebook = page.locator("a.btn-download-source-button")
    assert notebook.count() == 1 and notebook.get_attribute("href").endswith(".ipynb"), (
        "the download menu lost the chapter's .ipynb")
