"""Sphinx extension: the published site's address, and pages whose console stays clean.

**The base URL.**  ``_config.yml`` names the address the book is published at under
``html.baseurl`` (Sphinx's ``html_baseurl``); every page then names its canonical address in a
``<link rel="canonical">``.  The environment variable ``USAAV_BOOK_BASEURL``, when set and not
empty, takes the place of that key for one build: the publishing workflow
(``.github/workflows/pages.yml``) sets it to the address GitHub Pages reports, so the key need
not be edited for each fork.  The address must be ``http(s)://<host>[/<path>]``; a trailing
``/`` is added.  Links between pages stay relative, so the site still works from ``file://``.

**A clean console.**  Two things in the themes' output logged errors on every page:

* sphinx-thebe registers an inline script (``const THEBE_JS_URL = ...``) after Sphinx's HTML
  builder has been set up.  Sphinx then holds that script twice, once as registered with the
  builder (file name ``None``) and once copied from its registry before writing (file name
  ``''``); the two do not compare equal, so each page declared the constant twice and the
  browser stopped at "Identifier 'THEBE_JS_URL' has already been declared".  Each page's
  script list is reduced here to one copy of each script, in its first position.
* The PyData theme, with no ``default_mode`` in ``html_context``, starts a reader's first visit
  with the empty mode and logs "Got invalid theme mode" before falling back to ``auto``.  The
  default here is ``auto`` (what the theme falls back to), unless the configuration names one.

**Search results with excerpts.**  Sphinx's search page shows each result's title and, below it,
an excerpt around the words searched for, cut from the page it fetches (``fetch(<page>.html)``).
Opened from the disk (``file://``) the browser refuses that fetch, and a chapter page is a few
megabytes of widget state besides.  So the build writes the text of every page's article, without
scripts, styles or widget state and with its sections kept (a result that points to a section
gets its excerpt from that section), into ``_static/usaav-search-excerpts.js``, which only the
search page loads; it answers the search page's fetch of a page from that text, offline and at
once.  Any other request goes to the network as before.

**Printed pages, not the browser's print.**  The theme's download menu offers ".pdf", which
is the browser's print dialog: it prints a 3-D sphere as an empty or squashed box.  That entry is
replaced by a link to the page's own PDF in the published site (``pdf/<page>.pdf``, printed by
tools/print_pdf.py: every sphere a picture, players at the end of their run) on a page that has
one, and by "printed chapters", a link to the FAQ's section on the PDFs, on any other page; the
menu's ``.ipynb`` stays.

**Links into the published site.**  ``make site`` (tools/assemble_site.py) publishes the book with
its student edition (``student/``), the session decks (``slides/``) and the PDFs (``pdf/``) beside
it.  These are not pages of the Sphinx project, so the links to them are written here, as plain
HTML at ``html-page-context`` (no reference for ``-n`` to resolve): each chapter k gets a line
under its title with session k's deck and its own PDF, the seminar's index page a section with
every deck, PDF and the student edition, and the header's PDF entry its page's PDF (see
:func:`page_pdf` and :func:`site_links`).  The links are written in every build, so a book built
alone links to files that only the assembled site holds: the browser check of the plain build
(tests/browser/test_console.py) leaves links into those parts alone while they are absent, and
tests/browser/test_published_site.py checks that every one of them resolves in ``_build/site``.
Where a build sits in the site is ``usaav_site_path`` in the configuration's ``html_context``
("" for the book, ``student/`` for the student edition, set in ``_config_student.yml``), and
``usaav_edition`` there says which edition it is ("full" or "student"): the student edition links the handouts of the problem sets (printed
from it) and no chapter PDF or deck (printed from the full edition, they show its answers).
With a base URL, a build's canonical addresses carry its ``usaav_site_path`` too.

**Every output of a cell, or a failed build.**  The notebooks run in nbclient, and a cell that
builds 3-D views sends thousands of messages (widget models, a few megabytes) on the kernel's
IOPub channel.  Two defaults lost some of them on a busy machine, without an error, leaving a
page with a view whose models were never saved ("widget model not found"):

* the kernel's IOPub socket is a ZeroMQ publisher that drops what it cannot queue (1,000
  messages) while the reader lags.  The build runs its notebooks in the kernel of
  ``tools/book_kernel/`` (``usaav-book``: ipykernel's, with an unbounded queue);
  ``_config.yml`` maps the notebooks' ``python3`` to it (``nb_kernel_rgx_aliases``) and this
  extension puts the folder on the build's kernel search path (``JUPYTER_PATH``);
* once a cell has replied, nbclient waits ``iopub_timeout`` seconds (4) for the rest of its
  output and then drops it with a warning.  Here each cell waits up to ``IOPUB_TIMEOUT_S`` and
  the build fails when the output does not come (``-W``).  The notebooks run through
  jupyter-cache's ``single_nb_execution`` in every execution mode of myst-nb; its call of
  nbclient is wrapped.
"""
from __future__ import annotations

import functools
import html
import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

from sphinx.errors import ConfigError

#: seconds a built notebook's cell may take, after its reply, to deliver the rest of its output
IOPUB_TIMEOUT_S = 120

BASEURL_ENV = "USAAV_BOOK_BASEURL"
BASEURL_FORM = re.compile(r"^https?://[^/\s?#]+(/[^\s?#]*)?$")


def base_url(configured: str, environ=None) -> str:
    """The site's base URL: ``$USAAV_BOOK_BASEURL`` when set, else ``configured``.

    '' (no canonical links) when both are empty; otherwise checked and ended with ``/``.
    """
    environ = os.environ if environ is None else environ
    override = environ.get(BASEURL_ENV, "").strip()
    value, source = (override, BASEURL_ENV) if override else (configured or "", "html.baseurl")
    if not isinstance(value, str):
        raise ConfigError(f"{source} must be a string, got {type(value).__name__}")
    value = value.strip()
    if not value:
        return ""
    if not BASEURL_FORM.match(value):
        raise ConfigError(f"{source} must look like https://<host>/<path>, got {value!r}")
    return value if value.endswith("/") else value + "/"


def script_key(script) -> tuple:
    """What makes two entries of a page's script list the same script."""
    if isinstance(script, str):
        return (script, 0, ())
    attributes = tuple(sorted((k, str(v)) for k, v in (script.attributes or {}).items()))
    return (script.filename or "", script.priority, attributes)


def drop_duplicates(scripts: list) -> list:
    """``scripts`` with each script kept once, at its first position (the list is changed)."""
    seen = set()
    unique = []
    for script in scripts:
        key = script_key(script)
        if key not in seen:
            seen.add(key)
            unique.append(script)
    scripts[:] = unique
    return scripts


#: the search page's script holding the pages' text (written into the built site's _static)
EXCERPTS_JS = "usaav-search-excerpts.js"
#: what the search page's fetch gets for a page, around the text: Sphinx's search reads [role=main]
EXCERPT_PAGE = '<div role="main">{}</div>'
#: the elements whose content never shows as text on a page
SKIPPED = {"script", "style", "template", "noscript"}
#: elements that run inside a line of text: no space around them
INLINE = {"a", "abbr", "b", "cite", "code", "em", "i", "kbd", "mark", "q", "s", "samp", "small",
          "span", "strong", "sub", "sup", "u", "var", "mjx-container"}
#: elements without an end tag
VOID = {"br", "img", "hr", "input", "meta", "link", "wbr", "source", "col", "area", "embed",
        "track"}
#: the download menu's entries: the one replaced, and where its replacement leads
PRINT_BUTTON = "download-pdf-button"
PRINTED_DOC, PRINTED_ANCHOR = "book/reference/faq", "faq-print"


class _ArticleText(HTMLParser):
    """The text of a page's ``<article>`` as a fragment of HTML: only ``<section id>`` tags kept.

    Scripts, styles and heading anchors (the pilcrow of ``a.headerlink``) are left out;
    white space is collapsed.
    """

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.depth = 0           # inside <article>: how deep
        self.skip = 0            # inside a skipped element: how deep
        self.stack: list[tuple[str, bool]] = []   # open elements in the article: (tag, section?)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if not self.depth:
            if tag == "article":
                self.depth = 1
            return
        if tag not in INLINE and not self.skip:
            self.out.append(" ")
        if tag in VOID:
            return
        self.depth += 1
        classes = (attrs.get("class") or "").split()
        if self.skip or tag in SKIPPED or "headerlink" in classes:
            self.skip += 1
            self.stack.append((tag, False))
            return
        section = tag == "section" and bool(attrs.get("id"))
        if section:
            self.out.append(f'<section id="{html.escape(attrs["id"])}">')
        self.stack.append((tag, section))

    def handle_endtag(self, tag):
        if not self.depth or not self.stack:
            if tag == "article" and self.depth:
                self.depth = 0
            return
        if tag in VOID:
            return
        if tag not in INLINE and not self.skip:
            self.out.append(" ")
        # close up to the matching open tag (HTML lets some end tags be left out)
        while self.stack:
            open_tag, section = self.stack.pop()
            self.depth -= 1
            if self.skip:
                self.skip -= 1
            elif section:
                self.out.append("</section>")
            if open_tag == tag:
                break
        if tag == "article" and not self.stack:
            self.depth = 0

    def handle_data(self, data):
        if self.depth and not self.skip:
            self.out.append(html.escape(data, quote=False))

    def text(self) -> str:
        return re.sub(r"\s+", " ", "".join(self.out)).strip()


def article_text(page_html: str) -> str:
    """What a search excerpt is cut from: the article of a built page as text (sections kept)."""
    parser = _ArticleText()
    parser.feed(page_html)
    parser.close()
    return parser.text()


def excerpts_script(texts: dict[str, str]) -> str:
    """The search page's script: each page's article text, and the fetch that answers from it.

    ``texts`` maps a page's name (``book/ch01_particles``) to :func:`article_text` of it.
    Sphinx's search fetches ``<content root><page name><file suffix>``; that request is answered
    with ``EXCERPT_PAGE`` around the page's text; every other request goes on to the network.
    """
    data = json.dumps({name: EXCERPT_PAGE.format(text) for name, text in sorted(texts.items())},
                      ensure_ascii=True, indent=0)
    return f"""/* Search excerpts from the disk: written by tools/book_site.py, see there. */
(function () {{
  "use strict";
  var pages = {data};
  var realFetch = window.fetch;
  window.fetch = function (input, init) {{
    var url = typeof input === "string" ? input : (input && input.url) || "";
    var root = document.documentElement.dataset.content_root || "";
    var options = window.DOCUMENTATION_OPTIONS || {{}};
    var suffix = options.FILE_SUFFIX || ".html";
    if (url.indexOf(root) === 0 && url.slice(-suffix.length) === suffix) {{
      var name = url.slice(root.length, url.length - suffix.length);
      if (Object.prototype.hasOwnProperty.call(pages, name)) {{
        return Promise.resolve(new Response(pages[name],
          {{status: 200, headers: {{"Content-Type": "text/html; charset=utf-8"}}}}));
      }}
    }}
    return realFetch.apply(this, arguments);
  }};
}})();
"""


def without_print_button(header_buttons: list, printed_url: str,
                         text: str = "printed chapters",
                         tooltip: str = "The chapters printed to PDF, spheres as pictures"
                         ) -> list:
    """The theme's header buttons with the download menu's ".pdf" (the browser's print) replaced.

    The replacement is a link to ``printed_url``: the page's own PDF, or where the chapters
    printed by ``make pdf`` are described.  The list is changed in place and returned.
    """
    for group in header_buttons:
        if group.get("type") != "group" or group.get("label") != "download-buttons":
            continue
        buttons = group["buttons"]
        for i, button in enumerate(buttons):
            if button.get("label") == PRINT_BUTTON:
                buttons[i] = {"type": "link", "url": printed_url, "text": text,
                              "tooltip": tooltip, "icon": "fas fa-file-pdf",
                              "label": "printed-chapters-button"}
    return header_buttons


#: the parts ``make site`` publishes beside the book (folders of the site's root)
STUDENT_DIR, SLIDES_DIR, PDF_DIR, QTI_DIR = "student", "slides", "pdf", "qti"
SITE_PARTS = (STUDENT_DIR, SLIDES_DIR, PDF_DIR, QTI_DIR)
EDITIONS = ("full", "student")
#: class of every link written into a page by :func:`site_links_html` and the header entry
SITE_LINK_CLASS = "usaav-site-link"
CHAPTER_PAGE = re.compile(r"^book/ch(\d\d)_[\w-]+$")
PROBLEMS_PAGE = re.compile(r"^book/seminar/(problems_part(\d+))$")
SEMINAR_INDEX = "book/seminar/index"
#: seminar pages printed as they are in either edition (when the book has them)
SEMINAR_PRINTS = ("book/seminar/cards", "book/seminar/syllabus")


def session_of(pagename: str) -> int | None:
    """The session a page belongs to: chapter k (``book/chKK_...``) is session k; else None."""
    m = CHAPTER_PAGE.match(pagename)
    return int(m.group(1)) if m else None


def session_quiz_package(session: int) -> str:
    """Session ``session``'s quiz as a QTI package for a learning platform (tools/quiz_qti.py),
    relative to the site's root (``qti/session01.zip``)."""
    return session_deck(session).replace(f"{SLIDES_DIR}/", f"{QTI_DIR}/").replace(".html", ".zip")


def session_deck(session: int) -> str:
    """Session ``session``'s deck, relative to the site's root (``slides/session01.html``)."""
    if not isinstance(session, int) or isinstance(session, bool) or session < 1:
        raise ValueError(f"session must be a positive integer, got {session!r}")
    return f"{SLIDES_DIR}/session{session:02d}.html"


def page_pdf(pagename: str, edition: str = "full") -> str | None:
    """The PDF of a page in the published site, relative to its root, or None when none is printed.

    A chapter prints as ``pdf/<chapter>.pdf`` from the full edition; a problem set as its key
    from the full edition (``pdf/problems_part1_key.pdf``) and as its handout from the student
    edition (``pdf/problems_part1.pdf``); the seminar's cards and syllabus as themselves.  The
    student edition has no chapter PDF (a chapter printed from the full edition shows answers).
    """
    if edition not in EDITIONS:
        raise ValueError(f"edition must be one of {EDITIONS}, got {edition!r}")
    name = pagename.rsplit("/", 1)[-1]
    if CHAPTER_PAGE.match(pagename):
        return f"{PDF_DIR}/{name}.pdf" if edition == "full" else None
    if PROBLEMS_PAGE.match(pagename):
        return f"{PDF_DIR}/{name}_key.pdf" if edition == "full" else f"{PDF_DIR}/{name}.pdf"
    if pagename in SEMINAR_PRINTS:
        return f"{PDF_DIR}/{name}.pdf"
    return None


def site_href(pagename: str, target: str, site_path: str = "") -> str:
    """The relative link from the built page ``pagename`` to ``target`` (a path from the site's
    root), for a build that sits at ``site_path`` in the site ("" or ``student/``)."""
    depth = pagename.count("/") + len([s for s in site_path.split("/") if s])
    return "../" * depth + target


def _printed(pagename: str, edition: str) -> str:
    """The PDF of a page that ``page_pdf`` prints in ``edition`` (an error for one it does not)."""
    pdf = page_pdf(pagename, edition)
    if pdf is None:
        raise ValueError(f"{pagename} has no PDF in the {edition} edition")
    return pdf


def site_links(pagename: str, docs: dict[str, str], edition: str = "full") -> list[tuple]:
    """What a page links in the published site, as ``(heading, [(text, target), ...])`` rows
    (targets relative to the site's root); ``docs`` maps the build's page names to titles.

    A chapter of the full edition: its session's deck and its PDF.  The seminar's index: the
    student edition, then each session's deck and chapter PDF, each problem set's PDFs and the
    cards and syllabus the book has (the student edition: the handouts, cards and syllabus).
    """
    if edition not in EDITIONS:
        raise ValueError(f"edition must be one of {EDITIONS}, got {edition!r}")
    session = session_of(pagename)
    if session is not None:
        if edition != "full":
            return []
        return [("", [(f"Session {session}: slides", session_deck(session)),
                      ("printed chapter (PDF)", _printed(pagename, edition))])]
    if pagename != SEMINAR_INDEX:
        return []
    rows = []
    if edition == "full":
        rows.append(("The student edition", [("the book without solutions",
                                              f"{STUDENT_DIR}/index.html")]))
        for name in sorted(docs):
            k = session_of(name)
            if k is None:
                continue
            rows.append((f"Session {k}, {docs[name]}",
                         [("slides", session_deck(k)), ("printed chapter (PDF)",
                                                        _printed(name, edition)),
                          ("quiz for Canvas or Moodle (QTI)", session_quiz_package(k))]))
    for name in sorted(d for d in docs if PROBLEMS_PAGE.match(d)):
        links = [("handout (PDF)", _printed(name, "student"))]
        if edition == "full":
            links.append(("key, for instructors (PDF)", _printed(name, "full")))
        rows.append((docs[name], links))
    for name in SEMINAR_PRINTS:
        if name in docs:
            rows.append((docs[name], [("printed (PDF)", _printed(name, edition))]))
    return rows


def site_links_html(pagename: str, rows: list[tuple], site_path: str = "") -> str:
    """The HTML of :func:`site_links`' rows for the page ``pagename``: one line under a
    chapter's title, a section of the seminar's index page (empty without rows)."""
    def line(heading, links):
        anchors = " · ".join(
            f'<a class="reference external {SITE_LINK_CLASS}" '
            f'href="{html.escape(site_href(pagename, target, site_path))}">{html.escape(text)}</a>'
            for text, target in links)
        return (f"{html.escape(heading)}: {anchors}" if heading else anchors)

    if not rows:
        return ""
    if pagename != SEMINAR_INDEX:
        return ('<p class="usaav-site-links">'
                + "<br>".join(line(h, links) for h, links in rows) + "</p>\n")
    items = "\n".join(f"<li>{line(h, links)}</li>" for h, links in rows)
    return ('<section id="published-material" class="usaav-site-links">\n'
            "<h2>Slides, printed pages and the student edition</h2>\n"
            "<p>Published beside the book (<code>make site</code>):</p>\n"
            f"<ul>\n{items}\n</ul>\n</section>\n")


def with_site_links(body: str, block: str, pagename: str) -> str:
    """The page's body with ``block`` in its place: under a chapter's title (after the first
    ``</h1>``), at the end of the seminar's index page."""
    if not block:
        return body
    if pagename == SEMINAR_INDEX:
        return body + block
    end = body.find("</h1>")
    if end < 0:
        return block + body
    end += len("</h1>")
    return body[:end] + "\n" + block + body[end:]


def waiting_for_all_output(execute, iopub_timeout: int = IOPUB_TIMEOUT_S):
    """``execute`` (nbclient's ``execute(nb, **kwargs)``), run so that each cell waits up to
    ``iopub_timeout`` seconds for its output after its reply and raises ``CellTimeoutError``
    when the output does not come (nbclient's ``raise_on_iopub_timeout``), instead of dropping
    it.  A caller's own ``iopub_timeout`` or ``raise_on_iopub_timeout`` is kept."""
    if getattr(execute, "waits_for_all_output", False):
        return execute

    @functools.wraps(execute)
    def run(nb, **kwargs):
        kwargs.setdefault("iopub_timeout", iopub_timeout)
        kwargs.setdefault("raise_on_iopub_timeout", True)
        return execute(nb, **kwargs)

    run.waits_for_all_output = True  # type: ignore[attr-defined]  # a marker on the wrapper
    return run


#: the folder holding the build's kernel specification (``kernels/usaav-book/``)
BOOK_KERNELS = Path(__file__).resolve().parent / "book_kernel"


def with_book_kernels(environ=None) -> str:
    """``JUPYTER_PATH`` of ``environ`` (default ``os.environ``) with :data:`BOOK_KERNELS` first
    (once), so that jupyter_client finds the ``usaav-book`` kernel."""
    environ = os.environ if environ is None else environ
    parts = [p for p in environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]
    return os.pathsep.join([str(BOOK_KERNELS)] + [p for p in parts if p != str(BOOK_KERNELS)])


def wait_for_all_output() -> None:
    """Make jupyter-cache's notebook runs (myst-nb's ``cache`` and ``force`` modes) wait for
    every output of every cell (``waiting_for_all_output``)."""
    from jupyter_cache.executors import utils

    utils.executenb = waiting_for_all_output(utils.executenb)


def site_path_of(value) -> str:
    """``usaav_site_path`` checked: "" or a relative folder of the site ending with ``/``."""
    if not isinstance(value, str) or value.startswith("/") or ".." in value.split("/") or \
            (value and not value.endswith("/")):
        raise ConfigError(f"html_context.usaav_site_path must be '' or a folder such as "
                          f"'student/', got {value!r}")
    return value


def site_settings(context: dict) -> tuple[str, str]:
    """``(usaav_site_path, usaav_edition)`` from the configuration's ``html_context``, checked;
    ("", "full") when it names neither."""
    site_path = site_path_of(context.get("usaav_site_path", ""))
    edition = context.get("usaav_edition", "full")
    if edition not in EDITIONS:
        raise ConfigError(f"html_context.usaav_edition must be one of {EDITIONS}, got {edition!r}")
    return site_path, edition


def _on_config_inited(app, config):
    context = dict(config.html_context or {})
    site_path, edition = site_settings(context)
    config.html_baseurl = base_url(config.html_baseurl)
    if config.html_baseurl:
        config.html_baseurl += site_path
    context.setdefault("default_mode", "auto")
    context.update(usaav_site_path=site_path, usaav_edition=edition)
    config.html_context = context


def _on_html_page_context(app, pagename, templatename, context, doctree):
    # the same list object as the builder's, so scripts added by other handlers are seen too
    if pagename == "search":
        app.add_js_file(EXCERPTS_JS)  # this page only (Sphinx resets the list after each page)
    scripts = context.get("script_files")
    if scripts:
        drop_duplicates(scripts)


def _on_html_page_buttons(app, pagename, templatename, context, doctree):
    site_path, edition = site_settings(app.config.html_context)
    buttons = context.get("header_buttons")
    if buttons:
        own = page_pdf(pagename, edition)
        if own:
            without_print_button(buttons, site_href(pagename, own, site_path),
                                 text="printed page (PDF)",
                                 tooltip="This page printed to PDF, spheres as pictures")
        else:
            url = context["pathto"](PRINTED_DOC) + "#" + PRINTED_ANCHOR
            without_print_button(buttons, url)
    if doctree is not None and "body" in context:
        docs = {name: app.env.titles[name].astext() for name in app.env.found_docs
                if name in app.env.titles}
        rows = site_links(pagename, docs, edition)
        context["body"] = with_site_links(
            context["body"], site_links_html(pagename, rows, site_path), pagename)


def _on_build_finished(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    suffix = app.builder.out_suffix
    texts = {}
    for name in sorted(app.env.found_docs):
        page = out / f"{name}{suffix}"
        if page.is_file():
            texts[name] = article_text(page.read_text(encoding="utf-8"))
    target = out / "_static" / EXCERPTS_JS
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(excerpts_script(texts), encoding="utf-8")
    os.replace(tmp, target)


def setup(app):
    wait_for_all_output()
    os.environ["JUPYTER_PATH"] = with_book_kernels()
    app.connect("config-inited", _on_config_inited, priority=100)
    # late, after the handlers that add page-specific scripts
    app.connect("html-page-context", _on_html_page_context, priority=900)
    # after sphinx-book-theme has made its header buttons (priority 501)
    app.connect("html-page-context", _on_html_page_buttons, priority=600)
    app.connect("build-finished", _on_build_finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
