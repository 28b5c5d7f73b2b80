"""What the built book shows: the numbers and titles of its labelled blocks, and its outputs.

The book build (``make book``, Jupyter Book) numbers the theorems, exercises, figures, sections
and chapters, and executes the chapters.  The tools that show these numbers or outputs outside the
book read them here, from the build, never by guessing them from the sources:

* :class:`Refs` reads the HTML pages (``_build/html``): ``Refs.from_site(site)`` gives, for each
  label, the number the book prints for it ("Theorem 4.2", "Fig. 1.1", "(2.3)"), its title, the
  number of its section ("4.5") and the number of each chapter ("4").  The decks
  (``tools/slides.py``) show references with them; the notebooks' references are spelt out from
  them (``tools/lab_refs.py``).
* :func:`executed_copy` gives a chapter with the outputs the build gave it, from the execution
  cache (``_build/.jupyter_cache``) or the executed copy (``_build/jupyter_execute``): the
  pictures of the decks.  :func:`executed_cells` gives the executed code cells of a page from
  the first of several builds that holds them: the outputs the student edition's check
  (``tools/editions.py``) looks for.
"""
from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
#: folders of the built site that hold no page of the book
NOT_PAGES = frozenset({"_static", "_sources", "widgets-js", "_images", "mathjax", "genindex"})
#: the folder of a build (``_build``) where Jupyter Book writes each executed notebook, under its
#: path in the book's source
EXECUTED = "jupyter_execute"

#: the first line of a directive and its options
DIRECTIVE_HEAD = re.compile(
    r"^(`{3,}|:{3,})\{([\w:-]+)\}[ \t]*(.*)\n((?:[ \t]*:[\w-]+:.*\n)*)", re.M)
#: a heading's number as the book prints it ("4.5. ") and the number itself ("4.5")
SECTION_NUMBER = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)*)\.?\s*$")


def site_pages(site: Path) -> list[Path]:
    """The pages of the book in the built site ``site``: every HTML file but the static ones."""
    site = Path(site)
    return [page for page in sorted(site.rglob("*.html"))
            if not NOT_PAGES & set(page.relative_to(site).parts)]


def chapter_pages(site: Path) -> list[Path]:
    """The pages directly under ``site/book`` (the chapters, the introduction)."""
    return sorted((Path(site) / "book").glob("*.html"))


def _html_text(node) -> str:
    """The text of an HTML node with its inline math as ``$...$`` (MathJax in the deck)."""
    text = " ".join(node.get_text(" ").split())
    text = re.sub(r"\\\(\s*(.*?)\s*\\\)", r"$\1$", text)
    return text.replace("#", "").strip()


class Refs:
    """Numbers and titles of the book's labelled blocks, sections and pages.

    ``Refs.from_site(site)`` reads them from the built book's HTML, which holds what a reader
    sees: ``text[label]`` is the text of a reference to ``label`` ("Theorem 4.2", "Exercise
    21", a section's title), ``number[label]`` and ``title[label]`` the caption number and title
    of a numbered block, figure or equation ("Theorem 4.2", "Fig. 1.1", "(2.3)"), ``blocks``
    the labels of the numbered blocks (theorems, exercises, ...) among them, ``section[label]``
    the number of a labelled section ("4.5"), ``pages[doc]`` the title of the page ``doc``
    ("book/ch04_rope") and ``chapter[doc]`` the number of a numbered page ("4").
    ``Refs.from_sources(paths)`` knows only kinds and titles (no numbers): the fallback when the
    book has not been built.
    """

    def __init__(self):
        self.text: dict[str, str] = {}
        self.number: dict[str, str] = {}
        self.title: dict[str, str] = {}
        self.kind: dict[str, str] = {}
        self.pages: dict[str, str] = {}
        self.blocks: set[str] = set()
        self.section: dict[str, str] = {}
        self.chapter: dict[str, str] = {}
        self.site: Path | None = None

    def __bool__(self):
        return bool(self.text or self.number or self.title or self.pages)

    @classmethod
    def from_site(cls, site: Path, pages: list[Path] | None = None) -> Refs:
        """What the built site ``site`` shows, read from its ``pages`` (default: all,
        ``site_pages``); where two pages give a label a number, the later one counts."""
        from bs4 import BeautifulSoup

        site = Path(site)
        refs = cls()
        refs.site = site
        for page in site_pages(site) if pages is None else pages:
            rel = Path(page).relative_to(site)
            raw = page.read_text(encoding="utf-8", errors="replace")
            raw = re.sub(r"<script[^>]*>.*?</script>", "", raw, flags=re.S)
            raw = re.sub(r'(src|href)="data:[^"]*"', r'\1=""', raw)  # inlined pictures
            body = re.search(r"<article[^>]*>.*</article>", raw, re.S)
            soup = BeautifulSoup(body.group(0) if body else raw, "html.parser")
            h1 = soup.find("h1")
            doc = rel.with_suffix("").as_posix()
            if h1 is not None:
                refs.pages[doc] = _html_text(h1)
                number = h1.find("span", class_="section-number")
                m = SECTION_NUMBER.match(number.get_text()) if number is not None else None
                if m:
                    refs.chapter[doc] = m.group(1)
            refs._read_targets(soup)
            for a in soup.select("a.reference.internal"):
                href = str(a.get("href", ""))
                if "#" not in href or a.find_parent(class_="admonition-title") is not None:
                    continue
                label = href.split("#", 1)[1]
                text = _html_text(a)
                if label and text:
                    refs.text.setdefault(label, text)
        return refs

    def _read_targets(self, soup) -> None:
        for div in soup.select("div.admonition[id]"):
            title = div.find(class_="admonition-title")
            num = title.find(class_="caption-number") if title is not None else None
            if num is None:
                continue
            label = str(div["id"])
            self.number[label] = " ".join(num.get_text().split())
            self.blocks.add(label)
            rest = _html_text(title).replace(self.number[label], "", 1).strip()
            self.title[label] = re.sub(r"^\((.*)\)$", r"\1", rest)
        for fig in soup.select("figure[id]"):
            num = fig.find(class_="caption-number")
            if num is not None:
                self.number[fig["id"]] = " ".join(num.get_text().split()).rstrip(":").strip()
            cap = fig.find("figcaption")
            if cap is not None:
                text = _html_text(cap)
                if num is not None:
                    text = text.replace(" ".join(num.get_text().split()), "", 1).strip(" :")
                self.title[fig["id"]] = text
        for span in soup.select("span[id]"):
            heading = span.find_next_sibling()
            if heading is not None and re.fullmatch(r"h[1-6]", heading.name or ""):
                label = str(span["id"])
                self.title.setdefault(label, _html_text(heading))
                number = heading.find("span", class_="section-number")
                m = SECTION_NUMBER.match(number.get_text()) if number is not None else None
                if m:
                    self.section.setdefault(label, m.group(1))
        for sec in soup.select("section[id]"):
            heading = sec.find(re.compile(r"^h[1-6]$"))
            if heading is not None:
                self.title.setdefault(sec["id"], _html_text(heading))
        for eq in soup.select("div.math[id^=equation-]"):
            no = eq.find(class_="eqno")
            if no is not None:
                self.number[eq["id"][len("equation-"):]] = " ".join(no.get_text().split())

    @classmethod
    def from_sources(cls, paths) -> Refs:
        """Kinds and titles of the labelled blocks and sections of the book's sources."""
        refs = cls()
        for path in paths:
            path = Path(path)
            if path.suffix == ".ipynb":
                refs.read_source(nbformat.read(path, as_version=4))
            else:
                refs.read_source(path.read_text(encoding="utf-8"))
        return refs

    def read_source(self, source) -> Refs:
        """Add the kinds and titles of the labelled blocks and sections of ``source`` (MyST
        text, or a notebook whose markdown cells are read)."""
        if not isinstance(source, str):
            source = "\n".join(c.source for c in source.cells if c.cell_type == "markdown")
        for m in DIRECTIVE_HEAD.finditer(source):
            label = re.search(r":label:\s*(\S+)", m.group(4))
            if label:
                self.kind.setdefault(label.group(1), m.group(2).split(":")[-1].capitalize())
                self.title.setdefault(label.group(1), m.group(3).strip())
        for m in re.finditer(r"^\(([\w:.-]+)\)=\s*\n+#+\s+(.*)$", source, re.M):
            self.title.setdefault(m.group(1), m.group(2).strip())
        return self

    def heading(self, label: str | None, kind: str) -> str:
        """The number of a labelled block ("Theorem 4.2"), else its kind ("Theorem")."""
        return self.number.get(label, kind) if label else kind

    def resolve(self, role: str, target: str, doc: str = "") -> str | None:
        """What the book shows for ``{role}`target```, or None when it is not known."""
        if role == "doc":
            here = posixpath.dirname(doc)
            path = target.lstrip("/") if target.startswith("/") else posixpath.normpath(
                posixpath.join(here, target))
            return self.pages.get(path)
        if role == "eq":
            num = self.number.get(target)
            return num if num is None or num.startswith("(") else f"({num})"
        if target in self.text:
            return self.text[target]
        if target in self.number:
            return self.number[target]
        if target in self.kind:
            title = self.title.get(target)
            return f"{self.kind[target]} ({title})" if title else self.kind[target]
        return self.title.get(target)



def doc_name(path: Path) -> str:
    """The notebook's path in the book without suffix ("book/ch04_rope")."""
    path = Path(path).resolve()
    try:
        return path.relative_to(ROOT).with_suffix("").as_posix()
    except ValueError:
        return f"book/{path.stem}"


def executed_copy(path: Path, build: Path | None):
    """The notebook ``path`` with the outputs the book build gave it, or None.

    ``build`` is the book's build folder (``_build``).  The outputs come from the build's
    execution cache (``.jupyter_cache``, matched on the notebook's code) or else from its
    executed copy (``jupyter_execute/book/...``) when that copy's code is the notebook's and
    every code cell of it ran."""
    if build is None:
        return None
    build = Path(build)
    nb = nbformat.read(path, as_version=4)
    if (build / ".jupyter_cache").is_dir():
        try:
            from jupyter_cache import get_cache

            _, merged = get_cache(build / ".jupyter_cache").merge_match_into_notebook(nb)
            return merged
        except (ImportError, KeyError):
            pass
    copy_path = build / EXECUTED / f"{doc_name(path)}.ipynb"
    if not copy_path.is_file():
        return None
    done = nbformat.read(copy_path, as_version=4)

    def code(book):
        return [c.source for c in book.cells if c.cell_type == "code"]

    if code(nb) != code(done):
        return None
    if any(c.get("execution_count") is None for c in done.cells
           if c.cell_type == "code" and "remove-cell" not in c.metadata.get("tags", [])):
        return None  # a copy that was not run (or only partly)
    # the prose is the notebook's own (the copy may be older in its prose only)
    prose = [c for c in nb.cells if c.cell_type == "markdown"]
    mine = [c for c in done.cells if c.cell_type == "markdown"]
    if len(prose) != len(mine):
        return None
    for c, src in zip(mine, prose, strict=True):
        c.source = src.source
    return done



def executed_cells(rel: Path | str, folders) -> list[dict]:
    """The code cells of the notebook ``rel`` (its path in the book's source) as a build ran
    them: from the first of ``folders`` (such as ``_build/jupyter_execute``) whose copy holds
    any output; ``[]`` when none does.  A build that took the notebook from its cache may write
    the copy without outputs, so a later folder is tried."""
    for folder in folders:
        done = Path(folder) / rel
        nb = json.loads(done.read_text(encoding="utf-8")) if done.is_file() else {}
        cells = [c for c in nb.get("cells", []) if c.get("cell_type") == "code"]
        if any(c.get("outputs") for c in cells):
            return cells
    return []


def book_refs(site: Path | None) -> Refs:
    """References as the built book at ``site`` shows them; from the sources (kinds and titles,
    no numbers) when there is no built book."""
    if site is not None and (Path(site) / "book").is_dir():
        refs = Refs.from_site(Path(site))
        if refs:
            return refs
    sources = sorted((ROOT / "book").rglob("*.ipynb")) + sorted((ROOT / "book").rglob("*.md"))
    return Refs.from_sources(p for p in sources if ".ipynb_checkpoints" not in p.parts)


