"""Make one reveal.js deck per seminar session from its outline; the decks work offline.

Usage (``make slides`` runs the first form)::

    python tools/slides.py --out _build/slides           # every book/seminar/slides/session*.md
    python tools/slides.py --out _build/slides book/seminar/slides/session01.md
    python tools/slides.py --out /tmp/decks --build _build   # outputs of another book build
    python tools/slides.py --out /tmp/decks --no-execute     # quick: pictures as framed captions

Each session has an outline, ``book/seminar/slides/sessionKK.md``: a YAML front matter
(``session``, ``title``, ``chapter``) and slides separated by lines holding only ``---``.  A slide
starts with one ``## Title`` line (the first slide may use ``# Title``); a line ``Note:`` starts
its speaker notes.  The deck ``<out>/sessionKK.html`` shows, slide by slide, what the outline says
and nothing else: no code but the fenced blocks of demo slides, no output of the chapter but the
pictures the outline asks for.

* ``![caption](fig:<figure-name>)`` places the output of the chapter cell whose
  ``metadata.mystnb.figure.name`` is ``<figure-name>`` (any chapter: figure names are unique in
  the book), the full width of the slide, with the book's number and, when the caption is empty,
  the book's caption.  ``![caption](cell:<chapter>/<cell-id>)`` places the output of the cell with
  that nbformat id (3-D views and players without a figure name).  Only pictures (SVG, PNG) and
  widget views are taken from a cell; its printed output never reaches a slide.  A 3-D view is
  scaled to fill the room the slide leaves it, and carries only the widget state it needs.
* MyST roles in an outline become what the book shows: ``{prf:ref}`ch1-thm-ascent``` reads
  "Theorem 1.2", ``{cite:t}`...``` "Author et al. (year)".  The numbers and titles are read from
  the built book (``<build>/html``, or ``--site``); without it a reference shows the kind and
  title of its target ("Theorem (Energy ascent)").  Math is written as in the book,
  ``$...$`` and ``$$...$$``.
* The speaker notes (press ``s`` in the deck) are the slide's ``Note:`` block: talking points,
  led by the minutes the slide takes (``- 5 min. ...``; ``measure_deck`` adds them up).

The outputs come from the book build (``--build``, default ``_build``): its execution cache
(``.jupyter_cache``) or its executed copy (``jupyter_execute/book/...``) when that copy's code is
the chapter's current code; otherwise the chapter is executed as the build executes it (with
nbclient, in ``book/``, in the book's kernel from ``tools/book_kernel/``, storing the widget
state).  ``built_book`` reads the build.  Bad input stops the run before anything is executed or written, with
an ``OutlineError`` naming the file, the slide and what was expected: a missing front matter
key, a slide without a title, an unknown figure name or cell id.

The decks load reveal.js, MathJax and the widget JavaScript from ``lib/`` beside them, copied
from the pinned npm packages (``npm ci`` from package-lock.json) and from the book's widget
JavaScript (``make widget-js``), so they work from ``file://`` with no network.  The page itself
is ``slides_template/usaav_reveal/deck.html.j2``.
"""
from __future__ import annotations

import argparse
import base64
import difflib
import html
import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

try:  # imported as tools.slides, or run as tools/slides.py (tools/ on the path)
    from tools import lab_cites
    from tools.built_book import Refs, book_refs, doc_name, executed_copy
    from tools.print_pdf import model_refs
except ImportError:  # pragma: no cover
    # the same modules, run as a script
    import lab_cites  # type: ignore[no-redef,import-not-found]
    from built_book import Refs, book_refs, doc_name, executed_copy  # type: ignore[no-redef,import-not-found]  # noqa: F401
    from print_pdf import model_refs  # type: ignore[no-redef,import-not-found]

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = Path(__file__).resolve().parent / "slides_template" / "usaav_reveal"
#: where the outlines live
OUTLINES = ROOT / "book" / "seminar" / "slides"
#: the keys every outline's front matter holds
FRONT_KEYS = ("session", "title", "chapter")
#: sessions 1..9, and 10 for the optional project talks
SESSIONS = range(1, 11)

TARGET = re.compile(r"^\s*\([\w:.-]+\)=\s*$")
ROLE = re.compile(r"\{([\w:.-]+)\}`([^`]*)`")
EQ_LABEL = re.compile(r"(\$\$)\s*\([\w:.-]+\)\s*$")
CITE_ROLES = {"cite", "cite:p", "cite:t", "cite:ps", "cite:ts", "cite:alp", "cite:empty",
              "cite:author", "cite:year", "cite:yearpar", "cite:label"}


#: a slide's title line: "## Title" (or "# Title" on the first slide)
TITLE_LINE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
#: the line that starts a slide's speaker notes, possibly with the first note on it
NOTE_LINE = re.compile(r"^Note:\s*(.*)$")
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
#: an image in an outline: ![caption](fig:name) or ![caption](cell:chapter/id) (or anything else)
IMAGE = re.compile(r"!\[([^\]]*)\]\(\s*([^)\s]*)\s*\)")
FIG_REF = re.compile(r"^fig:([\w.-]+)$")
CELL_REF = re.compile(r"^cell:(ch\d\d_\w+)/([\w.-]+)$")
#: minutes a note says its slide takes: "12 min", "0-10 min" (10), "(of this block: 5)" (5)
BLOCK_MINUTES = re.compile(r"of this block:\s*(\d+(?:\.\d+)?)")
RANGE_MINUTES = re.compile(r"(\d+(?:\.\d+)?)\s*(?:-|–|to)\s*(\d+(?:\.\d+)?)\s*min")
MINUTES = re.compile(r"(\d+(?:\.\d+)?)\s*min")

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
#: a widget view is scaled up to fill its room, at most by this factor
MAX_VIEW_ZOOM = 2.0
#: the kernel the book build runs the chapters in (``_config.yml``: ``nb_kernel_rgx_aliases``)
BOOK_KERNEL = "usaav-book"


# ----------------------------------------------------------------------------------------------
# citations


def read_bib(path: Path) -> dict[str, tuple[str, str]]:
    """Map each BibTeX key of ``path`` to its authors and year as cited: ("Su et al.", "2021").

    The book's reader (``lab_cites.read_bib``, pybtex) with "et al." as plain words."""
    return lab_cites.read_bib(path, et_al="et al.")


def cite_text(role: str, keys: list[str], bib: dict, prefix: str = "") -> str:
    """A citation as a slide shows it: "(Su et al., 2021; ...)", or for ``cite:t``
    "Su et al. (2021)".  ``prefix`` is the page's bibliography ``keyprefix``; a key that is not
    in ``bib`` shows as itself."""
    def entry(key):
        for k in (key, key[len(prefix):] if prefix and key.startswith(prefix) else key,
                  key.split("-", 1)[-1]):
            if k in bib:
                return bib[k]
        return (key, "")

    parts = [entry(k) for k in keys]
    if role in {"cite:t", "cite:ts"}:
        return "; ".join(f"{w} ({y})" if y else w for w, y in parts)
    if role == "cite:author":
        return "; ".join(w for w, _ in parts)
    if role in {"cite:year", "cite:yearpar"}:
        years = ", ".join(y for _, y in parts)
        return f"({years})" if role == "cite:yearpar" else years
    return "(" + "; ".join(f"{w}, {y}" if y else w for w, y in parts) + ")"


class Context:
    """What rewriting a chapter's MyST needs: the bibliography, the references, the page."""

    def __init__(self, bib: dict | None = None, refs: Refs | None = None, doc: str = "",
                 keyprefix: str = ""):
        self.bib = bib if bib is not None else read_bib(ROOT / "book" / "references.bib")
        self.refs = refs if refs is not None else Refs()
        self.doc = doc
        self.keyprefix = keyprefix


def _context(ctx) -> Context:
    """A Context from a Context, or from a bibliography dict (older call form)."""
    if isinstance(ctx, Context):
        return ctx
    return Context(bib=ctx)


# ----------------------------------------------------------------------------------------------
# MyST markdown -> plain markdown, in units


def rewrite_roles(text: str, ctx) -> str:
    """Rewrite MyST roles and labelled equations into text a notebook renderer understands.

    A citation written as a link for JupyterLab (tools/lab_cites.py) is read as its role first."""
    ctx = _context(ctx)
    text = lab_cites.to_roles(text)

    def role(m):
        name, content = m.group(1), m.group(2)
        if name in CITE_ROLES:
            keys = [k.strip() for k in content.split(",") if k.strip()]
            return cite_text(name, keys, ctx.bib, ctx.keyprefix)
        if name == "math":
            return f"${content}$"
        explicit = re.match(r"^(.*?)\s*<([^>]+)>\s*$", content, re.S)
        if explicit and explicit.group(1):
            return explicit.group(1)
        target = explicit.group(2) if explicit else content
        shown = ctx.refs.resolve(name, target, ctx.doc)
        if shown:
            return shown
        if name == "eq":
            return f"({target})"
        return target

    lines = []
    for line in text.split("\n"):
        if TARGET.match(line):
            continue
        lines.append(EQ_LABEL.sub(r"\1", line))
    return ROLE.sub(role, "\n".join(lines))



# ----------------------------------------------------------------------------------------------
# outlines


class OutlineError(ValueError):
    """An outline that does not follow the format: the message names the file, the slide and
    what was expected."""


@dataclass
class Slide:
    """One slide of an outline: its number (from 1), title, body and notes (markdown)."""

    number: int
    title: str
    body: str
    notes: str = ""
    level: int = 2
    line: int = 0  # the line of the outline where the slide's title is

    @property
    def images(self) -> list[tuple[str, str]]:
        """The (caption, address) of every image of the slide, in order."""
        return IMAGE.findall(self.body)

    @property
    def minutes(self) -> float | None:
        """The minutes the slide's notes give it (see ``note_minutes``), or None."""
        return note_minutes(self.notes)


@dataclass
class Outline:
    """A session's outline: its file, front matter and slides."""

    path: str
    meta: dict
    slides: list[Slide] = field(default_factory=list)

    @property
    def session(self) -> int:
        return self.meta["session"]

    @property
    def name(self) -> str:
        """The deck's name: session01 ... session10."""
        return f"session{self.session:02d}"


def note_minutes(notes: str) -> float | None:
    """The minutes a slide takes, read from the first line of its notes: "- 5 min. Point at
    the bound" gives 5, a stretch of the agenda "- 0-10 min: welcome" gives 10, and
    "- 10-30 min (of this block: 5)" gives 5.  None when the first line names no minutes."""
    first = next((line for line in notes.split("\n") if line.strip()), "")
    for pattern, value in ((BLOCK_MINUTES, lambda m: float(m.group(1))),
                           (RANGE_MINUTES, lambda m: float(m.group(2)) - float(m.group(1))),
                           (MINUTES, lambda m: float(m.group(1)))):
        m = pattern.search(first)
        if m:
            return value(m)
    return None


def _outside_fences(lines: list[str]):
    """Yield ``(index, line, in_fence)`` for each line, ``in_fence`` true inside a fenced
    block (its fence lines included)."""
    fence = None
    for k, line in enumerate(lines):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            yield k, line, True
        elif fence is not None:
            if line.strip().startswith(fence[0] * len(fence)) and \
                    set(line.strip()) == {fence[0]}:
                fence = None
            yield k, line, True
        else:
            yield k, line, False


def parse_front_matter(lines: list[str], path: str) -> tuple[dict, int]:
    """The front matter of an outline's lines and the index of the line after it."""
    import yaml

    expected = ", ".join(FRONT_KEYS)
    if not lines or lines[0].strip() != "---":
        raise OutlineError(f"{path}: line 1: expected the front matter: a line '---', the keys "
                           f"{expected} (YAML), and a line '---'")
    end = next((k for k in range(1, len(lines)) if lines[k].strip() == "---"), None)
    if end is None:
        raise OutlineError(f"{path}: the front matter opened on line 1 is never closed by a "
                           "line '---'")
    try:
        meta = yaml.safe_load("\n".join(lines[1:end])) or {}
    except yaml.YAMLError as exc:
        raise OutlineError(f"{path}: the front matter is not YAML: {exc}") from None
    if not isinstance(meta, dict):
        raise OutlineError(f"{path}: the front matter must be YAML keys ({expected}), "
                           f"not {type(meta).__name__}")
    missing = [k for k in FRONT_KEYS if k not in meta]
    if missing:
        raise OutlineError(f"{path}: the front matter has no key {', '.join(map(repr, missing))} "
                           f"(expected the keys {expected})")
    session = meta["session"]
    if not isinstance(session, int) or isinstance(session, bool) or session not in SESSIONS:
        raise OutlineError(f"{path}: front matter: session must be a whole number from "
                           f"{SESSIONS.start} to {SESSIONS.stop - 1}, not {session!r}")
    if not isinstance(meta["title"], str) or not meta["title"].strip():
        raise OutlineError(f"{path}: front matter: title must be a non-empty text, "
                           f"not {meta['title']!r}")
    if not isinstance(meta["chapter"], str) or not re.fullmatch(r"ch\d\d_\w+", meta["chapter"]):
        raise OutlineError(f"{path}: front matter: chapter must be a chapter's file name "
                           f"without suffix (like ch01_particles), not {meta['chapter']!r}")
    return meta, end + 1


def _slide(chunk: list[str], first_line: int, number: int, path: str) -> Slide:
    """One slide from its lines (``first_line``: the 1-based line of ``chunk[0]``)."""
    where = f"{path}: slide {number} (line {first_line})"
    body: list[str] = []
    notes: list[str] | None = None
    title = None
    for k, line, in_fence in _outside_fences(chunk):
        if notes is not None:
            notes.append(line)
            continue
        note = None if in_fence else NOTE_LINE.match(line)
        if note:
            notes = [note.group(1)] if note.group(1).strip() else []
            continue
        heading = None if in_fence else TITLE_LINE.match(line)
        if title is None:
            if not line.strip():
                continue
            levels = "'# Title' or '## Title'" if number == 1 else "'## Title'"
            if heading is None or len(heading.group(1)) > 2 or \
                    (len(heading.group(1)) == 1 and number > 1) or not heading.group(2):
                raise OutlineError(f"{where}: a slide must start with one title line "
                                   f"{levels}, not {line.strip()[:60]!r}")
            title = (heading.group(2), len(heading.group(1)), first_line + k)
            continue
        if heading is not None and len(heading.group(1)) <= 2:
            raise OutlineError(f"{path}: slide {number} (line {first_line + k}): a second title "
                               f"line {line.strip()[:60]!r}; one title a slide (a line '---' "
                               "between slides)")
        body.append(line)
    if title is None:
        raise OutlineError(f"{where}: a slide without a title: expected a title line "
                           f"{'# Title or ' if number == 1 else ''}'## Title'")
    text, level, line_no = title
    return Slide(number=number, title=text, body="\n".join(body).strip("\n"),
                 notes="\n".join(notes or []).strip("\n"), level=level, line=line_no)


def parse_outline(text: str, path: str = "outline") -> Outline:
    """Read an outline (see the module's docstring) into its front matter and slides.

    Raises OutlineError naming ``path``, the slide and what was expected."""
    lines = text.replace("\r\n", "\n").split("\n")
    meta, start = parse_front_matter(lines, path)
    chunks: list[tuple[int, list[str]]] = []
    current: list[str] = []
    current_start = start
    for k, line, in_fence in _outside_fences(lines[start:]):
        if not in_fence and line.strip() == "---":
            chunks.append((current_start, current))
            current, current_start = [], start + k + 1
        else:
            current.append(line)
    chunks.append((current_start, current))
    # blank space before the first slide and after the last is no slide
    while chunks and not any(x.strip() for x in chunks[0][1]):
        chunks.pop(0)
    while chunks and not any(x.strip() for x in chunks[-1][1]):
        chunks.pop()
    if not chunks:
        raise OutlineError(f"{path}: no slides after the front matter")
    slides = [_slide(chunk, first + 1, number, path)
              for number, (first, chunk) in enumerate(chunks, 1)]
    return Outline(path=path, meta=meta, slides=slides)


def read_outline(path: Path) -> Outline:
    """The outline in the file ``path`` (named in errors relative to the project)."""
    path = Path(path)
    if not path.is_file():
        raise OutlineError(f"{path}: no such outline file")
    try:
        shown = path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        shown = str(path)
    return parse_outline(path.read_text(encoding="utf-8"), shown)


def outline_paths(folder: Path = OUTLINES) -> list[Path]:
    """Every session outline in ``folder``, in session order."""
    return sorted(Path(folder).glob("session*.md"))


# ----------------------------------------------------------------------------------------------
# pictures: which chapter cell each reference names


@dataclass(frozen=True)
class Picture:
    """A picture an outline asks for: the chapter and cell whose output it is."""

    address: str  # as written: fig:name or cell:chapter/id
    chapter: str  # ch01_particles
    cell_id: str
    figure: str = ""  # the figure name, for fig: addresses


def chapter_paths(book: Path | None = None) -> dict[str, Path]:
    """The chapter notebooks of the book by name: {"ch01_particles": .../ch01_particles.ipynb}."""
    book = Path(book) if book is not None else ROOT / "book"
    return {p.stem: p for p in sorted(book.glob("ch[0-9][0-9]_*.ipynb"))}


def figure_names(nb) -> dict[str, str]:
    """Map each figure name of a notebook (``metadata.mystnb.figure.name``) to its cell's id."""
    names = {}
    for cell in nb.cells:
        fig = (cell.get("metadata", {}).get("mystnb") or {}).get("figure") or {}
        if cell.get("cell_type") == "code" and fig.get("name"):
            names[str(fig["name"])] = cell.get("id", "")
    return names


def resolve_pictures(outline: Outline, notebooks: dict) -> dict[str, Picture]:
    """Find the cell behind every picture of ``outline`` in ``notebooks`` ({chapter name:
    notebook}, the sources suffice: no outputs are read).

    Raises OutlineError for an address that is neither ``fig:`` nor ``cell:``, a figure name no
    chapter has, a chapter that does not exist and a cell id the chapter does not have; also for
    a front matter ``chapter`` that is not one of ``notebooks``."""
    if outline.meta["chapter"] not in notebooks:
        raise OutlineError(f"{outline.path}: front matter: chapter {outline.meta['chapter']!r} "
                           f"is not a chapter of the book (expected one of "
                           f"{', '.join(sorted(notebooks))})")
    figures: dict[str, tuple[str, str]] = {}
    for chapter, nb in notebooks.items():
        for name, cell_id in figure_names(nb).items():
            figures[name] = (chapter, cell_id)
    found: dict[str, Picture] = {}
    for slide in outline.slides:
        where = f"{outline.path}: slide {slide.number} ({slide.title!r})"
        for _, address in slide.images:
            fig, cell = FIG_REF.match(address), CELL_REF.match(address)
            if fig:
                name = fig.group(1)
                if name not in figures:
                    near = difflib.get_close_matches(name, list(figures), n=3)
                    raise OutlineError(f"{where}: unknown figure name {name!r}: expected the "
                                       "metadata.mystnb.figure.name of a chapter cell"
                                       + (f" (did you mean {', '.join(near)}?)" if near else ""))
                chapter, cell_id = figures[name]
                found[address] = Picture(address, chapter, cell_id, name)
            elif cell:
                chapter, cell_id = cell.groups()
                if chapter not in notebooks:
                    raise OutlineError(f"{where}: {address!r}: no chapter {chapter!r} (expected "
                                       f"one of {', '.join(sorted(notebooks))})")
                ids = [c.get("id") for c in notebooks[chapter].cells
                       if c.get("cell_type") == "code"]
                if cell_id not in ids:
                    near = difflib.get_close_matches(cell_id, [i for i in ids if i], n=3)
                    raise OutlineError(f"{where}: {chapter} has no code cell with id {cell_id!r}"
                                       + (f" (did you mean {', '.join(near)}?)" if near else ""))
                found[address] = Picture(address, chapter, cell_id)
            else:
                raise OutlineError(f"{where}: image address {address!r}: expected "
                                   "fig:<figure-name> or cell:<chapter>/<cell-id> (pictures come "
                                   "from the executed chapter)")
    return found


def source_notebooks(book: Path | None = None) -> dict:
    """The chapter notebooks as saved (no outputs), by chapter name."""
    return {name: nbformat.read(p, as_version=4) for name, p in chapter_paths(book).items()}


# ----------------------------------------------------------------------------------------------
# markdown, math and pictures to HTML


def _markdown():
    """A CommonMark renderer (tables, raw HTML) whose ``$...$`` and ``$$...$$`` reach MathJax
    untouched, as ``\\(...\\)`` and ``\\[...\\]``."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    md.use(dollarmath_plugin, double_inline=True)

    def inline(self, tokens, idx, options, env):
        return "\\(" + html.escape(tokens[idx].content, quote=False) + "\\)"

    def block(self, tokens, idx, options, env):
        return ('<div class="usaav-math">\\[' + html.escape(tokens[idx].content, quote=False)
                + "\\]</div>\n")

    def fence(self, tokens, idx, options, env):
        token = tokens[idx]
        lang = token.info.strip().split()[0] if token.info.strip() else ""
        cls = f' class="language-{html.escape(lang)}"' if lang else ""
        return (f"<pre><code{cls}>{html.escape(token.content.rstrip(), quote=False)}"
                "</code></pre>\n")

    md.add_render_rule("fence", fence)
    md.add_render_rule("math_inline", inline)
    md.add_render_rule("math_inline_double", block)
    md.add_render_rule("math_block", block)
    md.add_render_rule("math_block_label", block)
    return md


_MD = None


def markdown_html(text: str, ctx: Context | None = None, inline: bool = False) -> str:
    """HTML of a piece of an outline: MyST roles rewritten (``rewrite_roles``), then markdown."""
    global _MD
    if _MD is None:
        _MD = _markdown()
    text = rewrite_roles(text, ctx if ctx is not None else Context(bib={}))
    return _MD.renderInline(text) if inline else _MD.render(text)



def widget_closure(state: dict, roots) -> set[str]:
    """The models the views ``roots`` need: every model they name, recursively, and every model
    without a view (a link between two sliders, say) that names one of those."""
    need: set[str] = set()
    stack = list(roots)
    while True:
        while stack:
            m = stack.pop()
            if m in need or m not in state:
                continue
            need.add(m)
            stack.extend(model_refs(state[m].get("state", {})))
        links = [m for m, model in state.items() if m not in need
                 and model.get("state", {}).get("_view_name") is None
                 and need & set(model_refs(model.get("state", {})))]
        if not links:
            return need
        stack.extend(links)


def _picture_outputs(cell) -> list[tuple[str, str]]:
    """The pictures among a cell's outputs: ("svg"|"png", data) and ("view", model id)."""
    shown = []
    for out in cell.get("outputs", []):
        if out.get("output_type") not in {"display_data", "execute_result"}:
            continue
        data = out.get("data", {})
        if WIDGET_VIEW in data:
            shown.append(("view", data[WIDGET_VIEW]["model_id"]))
        elif "image/svg+xml" in data:
            svg = data["image/svg+xml"]
            shown.append(("svg", "".join(svg) if isinstance(svg, list) else svg))
        elif "image/png" in data:
            shown.append(("png", data["image/png"]))
    return shown


def _cell(nb, cell_id: str):
    return next(c for c in nb.cells if c.get("id") == cell_id)


def picture_html(picture: Picture, caption: str, nb, ctx: Context, where: str,
                 views: list[str]) -> str:
    """The HTML of one picture: the cell's images and widget views and a caption.

    ``caption`` is the outline's (markdown; empty: the book's caption of the figure).  The model
    ids of the widget views are appended to ``views``.  ``nb`` None: a framed placeholder (decks
    made without outputs)."""
    cell: dict = _cell(nb, picture.cell_id) if nb is not None else {}
    fig = (cell.get("metadata", {}).get("mystnb") or {}).get("figure") or {}
    text = caption.strip() or str(fig.get("caption", "")).strip()
    number = ctx.refs.number.get(picture.figure) if picture.figure else None
    cap = markdown_html(text, ctx, inline=True) if text else ""
    if number:
        cap = f'<span class="usaav-fignum">{html.escape(number)}</span> ' + cap
    figcaption = f"<figcaption>{cap}</figcaption>" if cap else ""
    if nb is None:
        return (f'<figure class="usaav-figure usaav-placeholder" data-picture="'
                f'{html.escape(picture.address)}"><div class="usaav-picture">'
                f"<span>{html.escape(picture.address)}</span></div>{figcaption}</figure>")
    parts = _picture_outputs(cell)
    if not parts:
        kinds = sorted({o.get("output_type", "?") for o in cell.get("outputs", [])}) or ["none"]
        raise OutlineError(f"{where}: {picture.address} ({picture.chapter}/{picture.cell_id}) "
                           f"shows no picture or 3-D view (its outputs: {', '.join(kinds)}); "
                           "was the chapter executed?")
    blocks = []
    for kind, data in parts:
        if kind == "view":
            views.append(data)
            view = json.dumps({"model_id": data, "version_major": 2, "version_minor": 0})
            blocks.append('<div class="usaav-view"><div class="usaav-zoom">'
                          f'<script type="{WIDGET_VIEW}">{view}</script></div></div>')
        else:
            if kind == "svg":
                data = base64.b64encode(data.encode("utf-8")).decode("ascii")
            mime = "image/svg+xml" if kind == "svg" else "image/png"
            alt = html.escape(re.sub(r"[$*`]", "", rewrite_roles(text, ctx)), quote=True)
            blocks.append(f'<img src="data:{mime};base64,{"".join(data.split())}" alt="{alt}">')
    kind = "view" if any(k == "view" for k, _ in parts) else "image"
    return (f'<figure class="usaav-figure usaav-{kind}" data-picture="'
            f'{html.escape(picture.address)}"><div class="usaav-picture">{"".join(blocks)}</div>'
            f"{figcaption}</figure>")


def slide_html(slide: Slide, outline: Outline, pictures: dict[str, Picture], notebooks: dict | None,
               ctx: Context, views: list[str]) -> str:
    """One ``<section>`` of the deck."""
    where = f"{outline.path}: slide {slide.number} ({slide.title!r})"
    placed: list[str] = []

    def place(m):
        caption, address = m.group(1), m.group(2)
        picture = pictures[address]
        nb = None if notebooks is None else notebooks[picture.chapter]
        placed.append(picture_html(picture, caption, nb, ctx, where, views))
        return f"\n\nUSAAVPICTURE{len(placed) - 1}END\n\n"

    body = markdown_html(IMAGE.sub(place, slide.body), ctx)
    for k, block in enumerate(placed):
        body = body.replace(f"<p>USAAVPICTURE{k}END</p>", block).replace(
            f"USAAVPICTURE{k}END", block)
    title = markdown_html(slide.title, ctx, inline=True)
    tag = "h1" if slide.level == 1 else "h2"
    classes = ["usaav-slide"]
    if slide.number == 1:
        classes.append("usaav-title-slide")
    if placed:
        classes.append("usaav-has-picture")
    attrs = f' data-minutes="{slide.minutes:g}"' if slide.minutes is not None else ""
    notes = (f'\n<aside class="notes">{markdown_html(slide.notes, ctx)}</aside>'
             if slide.notes.strip() else "")
    return (f'<section class="{" ".join(classes)}" data-slide="{slide.number}"{attrs}>'
            f'<div class="usaav-frame"><{tag}>{title}</{tag}>'
            f'<div class="usaav-body">{body}</div></div>{notes}</section>')


def deck_html(outline: Outline, notebooks: dict | None, ctx: Context | None = None,
              lib: str = "lib", book: dict | None = None) -> str:
    """The deck of ``outline`` as one HTML page.

    ``notebooks``: the executed chapters by name (the pictures' outputs and widget state), or
    None for a deck whose pictures are framed placeholders.  ``book``: the chapters the
    references are resolved against (default: the saved notebooks)."""
    import jinja2

    ctx = ctx if ctx is not None else Context()
    pictures = resolve_pictures(outline, book if book is not None else source_notebooks())
    views: list[str] = []
    sections = [slide_html(s, outline, pictures, notebooks, ctx, views) for s in outline.slides]
    state = {}
    if views:
        for nb in (notebooks or {}).values():
            full = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
            for m in widget_closure(full, views):
                state[m] = full[m]
        missing = [v for v in views if v not in state]
        if missing:
            raise OutlineError(f"{outline.path}: the widget state of the views {missing} is not "
                               "in the executed chapter (executed without storing it?)")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                             autoescape=False, keep_trailing_newline=True)
    widget_state = json.dumps({"version_major": 2, "version_minor": 0, "state": state},
                              separators=(",", ":")).replace("</", "<\\/") if state else ""
    return env.get_template("deck.html.j2").render(
        title=f"Session {outline.session}: {outline.meta['title']}",
        footer=html.escape(f"Session {outline.session} · {outline.meta['title']}"),
        sections="\n\n".join(sections), widget_state=widget_state, lib=lib,
        max_zoom=MAX_VIEW_ZOOM)


# ----------------------------------------------------------------------------------------------
# measuring a deck


#: words that only debug output puts on a slide
DEBUG_WORDS = re.compile(r"embedded state|\bbytes\b|Traceback|<Figure size", re.I)


@dataclass
class DeckMeasure:
    """What a deck holds: slides, how many are titled, carry code, have speaker notes, the
    minutes the notes add up to, and the text each slide shows (notes left out)."""

    slides: int
    titled: int
    code: int
    notes: int
    minutes: float
    shown: list[str]

    def share(self, what: str) -> float:
        return getattr(self, what) / self.slides if self.slides else 0.0

    def debug_lines(self) -> list[str]:
        """Lines a slide shows that read like debug output ("embedded state 898804 bytes")."""
        return [f"slide {k}: {line.strip()}" for k, text in enumerate(self.shown, 1)
                for line in text.split("\n") if DEBUG_WORDS.search(line)]


def measure_deck(page: str) -> DeckMeasure:
    """Measure a deck's HTML (``deck_html``, or any reveal.js page): its leaf slides, titled
    (a heading with text), with code (a ``<pre>``), with notes (a non-empty ``aside.notes``)."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page, "html.parser")
    leaves = [s for s in soup.select(".reveal .slides section") if s.find("section") is None]
    titled = code = notes = 0
    minutes = 0.0
    shown = []
    for s in leaves:
        aside = [a for a in s.select("aside.notes")]
        if any(a.get_text(strip=True) for a in aside):
            notes += 1
        for a in aside:
            a.extract()
        for script in s.find_all("script"):
            script.extract()
        heading = s.find(re.compile(r"^h[12]$"))
        titled += heading is not None and bool(heading.get_text(strip=True))
        code += s.find("pre") is not None
        minutes += float(str(s.get("data-minutes") or 0))
        shown.append(s.get_text("\n"))
    return DeckMeasure(len(leaves), titled, code, notes, minutes, shown)


# ----------------------------------------------------------------------------------------------
# outputs of the book build, execution, files


def execute(nb, cwd: Path, timeout: int = 600):
    """Run ``nb`` in ``cwd`` as the book build runs it: in the book's kernel (``BOOK_KERNEL``,
    from ``tools/book_kernel/``), each cell waiting for all of its output, keeping the widget
    state (for the spheres)."""
    from nbclient import NotebookClient

    try:  # imported as tools.slides, or run as tools/slides.py (tools/ on the path)
        from tools import book_site
    except ImportError:  # pragma: no cover
        import book_site  # type: ignore[no-redef,import-not-found]  # the same module, run as a script

    before = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = book_site.with_book_kernels()
    try:
        client = NotebookClient(nb, timeout=timeout, kernel_name=BOOK_KERNEL,
                                resources={"metadata": {"path": str(cwd)}},
                                store_widget_state=True,
                                iopub_timeout=book_site.IOPUB_TIMEOUT_S,
                                raise_on_iopub_timeout=True)
        client.execute()
    finally:
        if before is None:
            os.environ.pop("JUPYTER_PATH", None)
        else:
            os.environ["JUPYTER_PATH"] = before
    return nb


def copy_libs(out_dir: Path, node_modules: Path, widget_js: Path) -> None:
    """Copy reveal.js, MathJax and the widget JavaScript into ``out_dir/lib`` (offline decks)."""
    lib = out_dir / "lib"
    sources = {
        "reveal.js": node_modules / "reveal.js",
        "mathjax": node_modules / "mathjax" / "es5",
        "widgets-js": widget_js,
    }
    for src in sources.values():
        if not src.is_dir():
            raise SystemExit(f"{src} is missing: run `make widget-js` (npm ci) first")
    for name, src in sources.items():
        dst = lib / name
        if dst.exists():
            shutil.rmtree(dst)
        if name == "reveal.js":
            for sub in ("dist", "plugin"):
                shutil.copytree(src / sub, dst / sub,
                                ignore=shutil.ignore_patterns("*.map", "*.esm.js"))
            shutil.copy2(src / "LICENSE", dst / "LICENSE")
        else:
            shutil.copytree(src, dst)



def executed_chapter(path: Path, build: Path | None, run: bool = True):
    """The chapter ``path`` with outputs: the book build's (``executed_copy``), else executed
    here when ``run``, else None."""
    nb = executed_copy(path, build)
    if nb is None and run:
        nb = nbformat.read(path, as_version=4)
        execute(nb, path.parent)
    return nb


def write_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename; a target that exists
    and is not a regular file is refused."""
    path = Path(path)
    if path.exists() and not path.is_file():
        raise SystemExit(f"{path} exists and is not a regular file: not overwritten")
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_index(out_dir: Path, decks: list[tuple[Path, Outline]]) -> None:
    items = "\n".join(f'<li><a href="{p.name}">Session {o.session}: {html.escape(o.meta["title"])}'
                      "</a></li>" for p, o in decks)
    write_file(out_dir / "index.html",
               "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Slides"
               "</title></head><body><h1>Slides</h1>\n<p>One reveal.js deck per session. Arrow "
               "keys move; <kbd>s</kbd> opens the speaker notes (talking points and minutes); "
               f"<kbd>Esc</kbd> shows an overview.</p>\n<ul>\n{items}\n</ul></body></html>\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outlines", nargs="*", type=Path,
                    help="default: book/seminar/slides/session*.md")
    ap.add_argument("--out", type=Path, default=ROOT / "_build" / "slides")
    ap.add_argument("--build", type=Path, default=ROOT / "_build",
                    help="the book's build folder: its outputs of a chapter are used instead "
                         "of running it")
    ap.add_argument("--site", type=Path, default=None,
                    help="the built book, for the numbers and titles references show "
                         "(default: <build>/html)")
    ap.add_argument("--no-execute", action="store_true",
                    help="run no chapter: pictures the build lacks become framed captions")
    ap.add_argument("--node-modules", type=Path, default=ROOT / "node_modules")
    ap.add_argument("--widget-js", type=Path, default=ROOT / "_static_widgets" / "widgets-js")
    args = ap.parse_args(argv)
    t_all = time.perf_counter()
    paths = args.outlines or outline_paths()
    if not paths:
        print(f"no outlines in {OUTLINES}", file=sys.stderr)
        return 1
    book = source_notebooks()
    try:  # every outline is read and checked before anything runs
        outlines = [read_outline(p) for p in paths]
        pictures = {o.path: resolve_pictures(o, book) for o in outlines}
    except OutlineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    names = [o.name for o in outlines]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        print(f"error: two outlines for {', '.join(twice)}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    copy_libs(args.out, args.node_modules, args.widget_js)
    site = args.site if args.site is not None else args.build / "html"
    refs = book_refs(site)
    if refs.site is None:
        print(f"{site} has no built book: references show kinds and titles, not numbers "
              "(build the book first: make book)", file=sys.stderr)
    bib = read_bib(ROOT / "book" / "references.bib")
    executed: dict[str, object] = {}
    chapters = chapter_paths()
    decks = []
    for outline in outlines:
        t0 = time.perf_counter()
        needed = sorted({p.chapter for p in pictures[outline.path].values()})
        for name in needed:
            if name not in executed:
                executed[name] = executed_chapter(chapters[name], args.build,
                                                  run=not args.no_execute)
        # --no-execute and no build outputs: placeholders
        notebooks = (None if any(executed[n] is None for n in needed)
                     else {n: executed[n] for n in needed})
        ctx = Context(bib=bib, refs=refs, doc=f"book/{outline.meta['chapter']}")
        try:
            page = deck_html(outline, notebooks, ctx, book=book)
        except OutlineError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        target = args.out / f"{outline.name}.html"
        write_file(target, page)
        decks.append((target, outline))
        m = measure_deck(page)
        print(f"{target}: {m.slides} slides, {m.code} with code, {m.notes} with notes, "
              f"{m.minutes:g} min ({time.perf_counter() - t0:.1f} s)")
    write_index(args.out, decks)
    print(f"{len(decks)} decks in {time.perf_counter() - t_all:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
