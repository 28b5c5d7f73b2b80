"""Turn the chapter notebooks into reveal.js slide decks that work offline.

Usage (``make slides`` runs the first form)::

    python tools/slides.py                          # every book/ch*.ipynb -> _build/slides/
    python tools/slides.py book/ch04_rope.ipynb     # one chapter
    python tools/slides.py --no-execute ...         # skip execution (no figures, no spheres)

Chapter authors do not tag cells for slides: the slide structure is derived from the notebook
when the deck is made (the notebook on disk is never changed).

* A ``#`` or ``##`` heading starts a new slide, a ``###`` (or deeper) heading a sub-slide (reveal.js
  shows sub-slides below their slide: press the down arrow).  A markdown cell with several headings
  is split at each of them.
* Inside a section, material is added to the current slide until it would overflow (an estimate
  of the lines it takes: text, display math, code, and a figure or 3-D sphere counts as a block of
  lines); then a sub-slide begins.  An exercise always begins a sub-slide.
* The speaker notes (press ``s`` in the deck) hold what a class does not need on the screen:
  every ``{solution}``; every check cell (tagged ``check``, or starting with a ``# CHECK``
  comment, or made mostly of ``assert`` and ``print`` lines), with its printed output; the part
  of a cell from a ``# CHECK`` comment on; and the code of every cell longer than
  ``LONG_CODE`` lines (its figure or sphere stays on the slide).  The ``## References`` section
  and its bibliography are left out.
* A cell that already has ``metadata.slideshow.slide_type`` keeps it: an author can override the
  derived structure cell by cell.  Cells tagged ``remove-cell`` are skipped, ``remove-input`` shows
  only the output, ``remove-output`` only the input (the book's own tags).
* MyST markup that plain notebooks do not know is rewritten to markdown: ``prf:`` blocks
  (definition, theorem, proof, ...), exercises and admonitions become boxes with their number and
  title, ``{cite}`` becomes "(Author et al., year)" (``{cite:t}`` "Author et al. (year)") from
  ``book/references.bib``, and ``{prf:ref}``, ``{ref}``, ``{numref}``, ``{eq}`` and ``{doc}`` become
  what the built book shows for them ("Theorem 4.2", a section's title...).  Those numbers and
  titles are read from the built book (``_build/html``, ``--site``); without it a reference shows
  the kind and title of its target ("Theorem (Maximizers of the RoPE energy)").  ``(label)=``
  targets are dropped.

Figures and the pythreejs spheres need the notebook's outputs.  When the book build (``_build``,
``--build``) holds outputs of the chapter's current code (its execution cache, or its executed
copy), the deck uses them; otherwise the notebook is executed (with nbclient, in ``book/``,
storing the widget state); ``--no-execute`` makes text-only decks quickly.  In the deck every
figure and 3-D view is scaled down when the slide would otherwise overflow the screen.

The decks load reveal.js, MathJax and the widget JavaScript from ``lib/`` beside them, copied
from the pinned npm packages (``npm ci`` from package-lock.json) and from the book's widget
JavaScript (``make widget-js``), so they work from ``file://`` with no network.
"""
from __future__ import annotations

import argparse
import ast
import copy
import html
import posixpath
import re
import shutil
import sys
import time
from pathlib import Path

import nbformat

try:  # run as tools/slides.py (tools/ on the path) or imported as tools.slides
    import lab_cites
except ImportError:  # pragma: no cover
    from tools import lab_cites

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = Path(__file__).resolve().parent / "slides_template"
TEMPLATE_NAME = "usaav_reveal"

#: how many "lines" fit on one slide (1280 x 800 at the sizes set in the template)
SLIDE_BUDGET = 24
#: lines charged for a figure or a 3-D sphere
FIGURE_LINES = 13
#: characters per wrapped line of text on a slide
LINE_CHARS = 95
#: a code cell with more lines than this shows only its output; its code goes to the notes
LONG_CODE = 12
#: printed output with more lines than this goes to the notes too
LONG_OUTPUT = 8
#: the cell tag that marks a check cell
CHECK_TAG = "check"
#: a comment line that starts the checking part of a cell
CHECK_COMMENT = re.compile(r"^\s*#\s*CHECK\b")

HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE_OPEN = re.compile(r"^(\s*)(`{3,}|:{3,})\s*(\{([\w:.-]+)\})?\s*(.*?)\s*$")
TARGET = re.compile(r"^\s*\([\w:.-]+\)=\s*$")
ROLE = re.compile(r"\{([\w:.-]+)\}`([^`]*)`")
EQ_LABEL = re.compile(r"(\$\$)\s*\([\w:.-]+\)\s*$")

PRF_NAMES = {
    "definition", "theorem", "lemma", "proposition", "corollary", "proof", "remark", "example",
    "assumption", "conjecture", "algorithm", "axiom", "criterion", "property", "observation",
}
ADMONITIONS = {
    "note", "tip", "warning", "important", "caution", "attention", "danger", "hint", "seealso",
    "error", "admonition",
}
CITE_ROLES = {"cite", "cite:p", "cite:t", "cite:ps", "cite:ts", "cite:alp", "cite:empty",
              "cite:author", "cite:year", "cite:yearpar", "cite:label"}
SLIDE_TYPES = {"slide", "subslide", "fragment", "skip", "notes", "-"}
#: the first line of a directive and its options
DIRECTIVE_HEAD = re.compile(
    r"^(`{3,}|:{3,})\{([\w:-]+)\}[ \t]*(.*)\n((?:[ \t]*:[\w-]+:.*\n)*)", re.M)


# ----------------------------------------------------------------------------------------------
# citations


def read_bib(path: Path) -> dict[str, tuple[str, str]]:
    """Map each BibTeX key of ``path`` to its authors and year as cited: ("Su et al.", "2021")."""
    labels: dict[str, tuple[str, str]] = {}
    if not path.is_file():
        return labels
    text = path.read_text(encoding="utf-8")
    for m in re.finditer(r"@\w+\s*\{\s*([^,\s]+)\s*,(.*?)(?=\n@|\Z)", text, re.S):
        key, body = m.group(1), m.group(2)
        author = re.search(r"\bauthor\s*=\s*[{\"](.*?)[}\"]\s*,?\s*\n", body, re.S)
        year = re.search(r"\byear\s*=\s*[{\"]?(\d{4})", body)
        names = []
        if author:
            for a in re.split(r"\s+and\s+", " ".join(author.group(1).split())):
                a = a.strip("{} ")
                names.append(a.split(",")[0].strip() if "," in a else a.split()[-1])
        who = key if not names else names[0] if len(names) == 1 else (
            f"{names[0]} and {names[1]}" if len(names) == 2 else f"{names[0]} et al.")
        labels[key] = (who, year.group(1) if year else "")
    return labels


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


# ----------------------------------------------------------------------------------------------
# what the built book shows for each label


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
    of a numbered block, ``pages[doc]`` the title of the page ``doc`` ("book/ch04_rope").
    ``Refs.from_sources(paths)`` knows only kinds and titles (no numbers): the fallback when the
    book has not been built.
    """

    def __init__(self):
        self.text: dict[str, str] = {}
        self.number: dict[str, str] = {}
        self.title: dict[str, str] = {}
        self.kind: dict[str, str] = {}
        self.pages: dict[str, str] = {}
        self.site: Path | None = None

    def __bool__(self):
        return bool(self.text or self.number or self.title or self.pages)

    @classmethod
    def from_site(cls, site: Path) -> "Refs":
        from bs4 import BeautifulSoup

        refs = cls()
        refs.site = site
        skip = {"_static", "_sources", "widgets-js", "_images", "mathjax", "genindex"}
        for page in sorted(site.rglob("*.html")):
            rel = page.relative_to(site)
            if skip & set(rel.parts):
                continue
            raw = page.read_text(encoding="utf-8", errors="replace")
            raw = re.sub(r"<script[^>]*>.*?</script>", "", raw, flags=re.S)
            raw = re.sub(r'(src|href)="data:[^"]*"', r'\1=""', raw)  # inlined pictures
            body = re.search(r"<article[^>]*>.*</article>", raw, re.S)
            soup = BeautifulSoup(body.group(0) if body else raw, "html.parser")
            h1 = soup.find("h1")
            if h1 is not None:
                refs.pages[rel.with_suffix("").as_posix()] = _html_text(h1)
            refs._read_targets(soup)
            for a in soup.select("a.reference.internal"):
                href = a.get("href", "")
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
            label = div["id"]
            self.number[label] = " ".join(num.get_text().split())
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
                self.title.setdefault(span["id"], _html_text(heading))
        for sec in soup.select("section[id]"):
            heading = sec.find(re.compile(r"^h[1-6]$"))
            if heading is not None:
                self.title.setdefault(sec["id"], _html_text(heading))
        for eq in soup.select("div.math[id^=equation-]"):
            no = eq.find(class_="eqno")
            if no is not None:
                self.number[eq["id"][len("equation-"):]] = " ".join(no.get_text().split())

    @classmethod
    def from_sources(cls, paths) -> "Refs":
        """Kinds and titles of the labelled blocks and sections of the book's sources."""
        refs = cls()
        for path in paths:
            path = Path(path)
            if path.suffix == ".ipynb":
                refs.read_source(nbformat.read(path, as_version=4))
            else:
                refs.read_source(path.read_text(encoding="utf-8"))
        return refs

    def read_source(self, source) -> "Refs":
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


def _directive_end(lines: list[str], start: int, fence: str) -> int:
    """Index of the line closing the fence opened at ``start`` (or len(lines))."""
    char, width = fence[0], len(fence)
    for k in range(start + 1, len(lines)):
        s = lines[k].strip()
        if len(s) >= width and set(s) == {char}:
            return k
    return len(lines)


def _split_options(body: list[str]) -> tuple[dict[str, str], list[str]]:
    opts, k = {}, 0
    while k < len(body):
        m = re.match(r"^\s*:([\w-]+):\s*(.*)$", body[k])
        if not m:
            break
        opts[m.group(1)] = m.group(2).strip()
        k += 1
    return opts, body[k:]


def _box(head: str, title: str, body: str, css: str) -> str:
    head = f"**{head}**" + (f" ({title})" if title else "") + "."
    return f'<div class="usaav-box usaav-{css}">\n\n{head}\n\n{body.strip()}\n\n</div>'


def units(source: str) -> list[dict]:
    """Split MyST markdown into top-level units: headings, directives and plain text.

    Each unit is ``{"kind": "heading"|"directive"|"text", ...}``; fenced code blocks and
    directives are kept whole, so a heading inside a directive does not split it.
    """
    lines = source.split("\n")
    out: list[dict] = []
    buf: list[str] = []

    def flush():
        if any(x.strip() for x in buf):
            out.append({"kind": "text", "text": "\n".join(buf).strip("\n")})
        buf.clear()

    k = 0
    while k < len(lines):
        line = lines[k]
        fence = FENCE_OPEN.match(line)
        if fence and not fence.group(1):  # top-level fence
            end = _directive_end(lines, k, fence.group(2))
            block = lines[k:end + 1]
            if fence.group(4):  # a directive
                flush()
                opts, body = _split_options(lines[k + 1:end])
                out.append({"kind": "directive", "name": fence.group(4), "title": fence.group(5),
                            "options": opts, "body": "\n".join(body).strip("\n"),
                            "raw": "\n".join(block)})
            else:  # plain code block
                buf.extend(block)
            k = end + 1
            continue
        h = HEADING.match(line)
        if h:
            flush()
            out.append({"kind": "heading", "level": len(h.group(1)), "text": line.strip(),
                        "title": h.group(2)})
        else:
            buf.append(line)
        k += 1
    flush()
    return out


def render_directive(u: dict, ctx) -> tuple[str, str]:
    """Markdown for a directive unit and where it goes: ("md"|"notes"|"drop", text)."""
    ctx = _context(ctx)
    name, title, body = u["name"], u["title"], u["body"]
    label = u["options"].get("label") or u["options"].get("name")
    inner = render_units(units(body), ctx)
    short = name.split(":")[-1]
    if name == "solution":
        target = title.strip()
        shown = ctx.refs.resolve("ref", target, ctx.doc) or target
        return "notes", f"**Solution to {shown}.**\n\n{inner}"
    if name == "bibliography":
        return "drop", ""
    if name == "exercise":
        return "md", _box(ctx.refs.heading(label, "Exercise"), rewrite_roles(title, ctx), inner,
                          "exercise")
    if name.startswith("prf:") and short in PRF_NAMES:
        if short == "proof":
            return "md", (f'<div class="usaav-box usaav-proof">\n\n*Proof.* {inner.strip()} '
                          "&#8718;\n\n</div>")
        return "md", _box(ctx.refs.heading(label, short.capitalize()), rewrite_roles(title, ctx),
                          inner, short)
    if name in ADMONITIONS:
        kind = title if name == "admonition" and title else name.capitalize()
        return "md", _box(kind, "" if name == "admonition" else rewrite_roles(title, ctx), inner,
                          "note")
    if name == "math":
        return "md", f"$$\n{body}\n$$"
    if name in {"code", "code-block", "sourcecode"}:
        return "md", f"```{title}\n{body}\n```"
    if name in {"figure", "image"}:
        return "md", _figure(title.strip(), u["options"], inner, label, ctx)
    # margins, sidebars, tabs and anything else: keep the content
    return "md", inner


def _figure(path: str, options: dict, caption: str, label: str | None, ctx: Context) -> str:
    """A figure as markdown: the picture inlined (the deck stays one file) and its caption."""
    import base64
    import mimetypes

    src = ROOT / posixpath.dirname(ctx.doc) / path if ctx.doc else ROOT / "book" / path
    alt = options.get("alt", "")
    if src.is_file():
        mime = mimetypes.guess_type(src.name)[0] or "image/png"
        data = base64.b64encode(src.read_bytes()).decode()
        picture = f'<img src="data:{mime};base64,{data}" alt="{html.escape(alt)}">'
    else:
        picture = f"*[{html.escape(alt or path)}]*"
    number = ctx.refs.number.get(label) if label else None
    cap = (f"**{number}.** " if number else "") + caption.strip()
    return f'<figure class="usaav-figure">\n{picture}\n\n{cap}\n\n</figure>'


def render_units(us: list[dict], ctx) -> str:
    ctx = _context(ctx)
    parts = []
    for u in us:
        if u["kind"] == "directive":
            where, text = render_directive(u, ctx)
            if where == "md":
                parts.append(text)
            elif where == "notes":
                parts.append(f'<aside class="notes">\n\n{text}\n\n</aside>')
        else:
            parts.append(rewrite_roles(u["text"], ctx))
    return "\n\n".join(parts)


# ----------------------------------------------------------------------------------------------
# code cells: checks and long code go to the notes


def _code_line_numbers(source: str) -> set[int]:
    return {k + 1 for k, line in enumerate(source.split("\n"))
            if line.strip() and not line.strip().startswith("#")}


def check_start(cell) -> int | None:
    """Where the checking part of a code cell starts (a line index), or None.

    0 (the whole cell) for a cell tagged ``check``, for a cell whose first code line is a
    ``# CHECK`` comment, and for a cell at least half of whose code lines belong to ``assert``
    statements and ``print`` calls, one assert at least (a cell of checks before the cells are
    tagged); the line of a later ``# CHECK`` comment for a cell that computes first and then
    checks."""
    if CHECK_TAG in cell.metadata.get("tags", []):
        return 0
    lines = cell.source.split("\n")
    first_code = next((k for k, line in enumerate(lines) if line.strip()), None)
    for k, line in enumerate(lines):
        if CHECK_COMMENT.match(line):
            return 0 if k == first_code else k
    try:
        tree = ast.parse(cell.source)
    except SyntaxError:  # IPython magics
        return None
    code = _code_line_numbers(cell.source)
    asserts, checks = set(), set()
    for node in ast.walk(tree):
        span = set(range(node.lineno, (node.end_lineno or node.lineno) + 1)) \
            if isinstance(node, ast.stmt) else set()
        if isinstance(node, ast.Assert):
            asserts |= span
            checks |= span
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and \
                getattr(node.value.func, "id", None) == "print":
            checks |= span
    if asserts and code and len(checks & code) >= 0.5 * len(code):
        return 0
    return None


def _output_text(cell) -> str:
    """The printed output of a code cell (streams and plain-text results), as one string."""
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append(out.get("text", ""))
        elif out.get("output_type") in {"execute_result", "display_data"}:
            data = out.get("data", {})
            if "text/plain" in data and not any(k.startswith("image/") or "widget" in k
                                                for k in data):
                parts.append(data["text/plain"])
        elif out.get("output_type") == "error":
            parts.append(f"{out.get('ename')}: {out.get('evalue')}")
    return "".join(parts).rstrip("\n")


def _rich(out) -> bool:
    data = out.get("data", {})
    return any(k.startswith("image/") or k == "application/vnd.jupyter.widget-view+json"
               or k == "text/html" for k in data)


def _fence(text: str, lang: str = "") -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{lang}\n{text}\n{ticks}"


def split_code_cell(cell) -> tuple[object | None, str]:
    """What a code cell puts on the slide and in the notes.

    Returns ``(shown, notes)``: ``shown`` is a copy of the cell for the slide or None, and
    ``notes`` markdown for the speaker notes ("" for none).  A check cell goes to the notes
    whole, with its printed output (a figure or sphere it makes stays on the slide); the part
    of a cell from a later ``# CHECK`` comment and the code of a cell longer than
    ``LONG_CODE`` lines go to the notes, the rest of the cell and its output stay; printed
    output longer than ``LONG_OUTPUT`` lines goes to the notes too."""
    c = copy.deepcopy(cell)
    tags = c.metadata.get("tags", [])
    hidden_input = "remove-input" in tags
    notes = []
    start = check_start(c)
    source = c.source.rstrip()
    if start is not None and not hidden_input:
        checked = "\n".join(source.split("\n")[start:]).strip("\n")
        source = "\n".join(source.split("\n")[:start]).rstrip()
        notes.append("**Check** (the notebook runs it; it fails loudly if the claim does "
                     "not hold):\n\n" + _fence(checked, "python"))
    if source and not hidden_input and len(source.split("\n")) > LONG_CODE:
        what = "**Code** (its output is on the slide):" if c.get("outputs") else "**Code:**"
        notes.insert(0, what + "\n\n" + _fence(source, "python"))
        source = ""
    printed = _output_text(c)
    keep_outputs = [o for o in c.get("outputs", []) if _rich(o)]
    if printed and (start == 0 or len(printed.split("\n")) > LONG_OUTPUT):
        notes.append("**Output:**\n\n" + _fence(printed))
    else:
        keep_outputs = [o for o in c.get("outputs", [])
                        if o.get("output_type") != "error"]
    c.source = source
    c.outputs = keep_outputs
    if not source or hidden_input:
        c.metadata.setdefault("jupyter", {})["source_hidden"] = True
        c.metadata["transient"] = {"remove_source": True}
    shown = c if (source and not hidden_input) or c.outputs else None
    return shown, "\n\n".join(notes)


# ----------------------------------------------------------------------------------------------
# slide structure


def text_lines(text: str) -> int:
    """Estimated slide lines taken by a piece of markdown."""
    n = 0.0
    in_math = False
    for line in text.split("\n"):
        s = line.strip()
        if s.startswith("$$"):
            in_math = not in_math if s.count("$$") == 1 else in_math
            n += 1
            continue
        if not s or s.startswith("<div") or s == "</div>":
            continue
        n += 1.4 if in_math else max(1, -(-len(s) // LINE_CHARS))
    return int(round(n))


def code_lines(cell) -> int:
    """Estimated slide lines taken by a code cell with its outputs."""
    hidden = cell.metadata.get("transient", {}).get("remove_source") or \
        "remove-input" in cell.metadata.get("tags", [])
    n = 0 if hidden or not cell.source.strip() else len(cell.source.strip().split("\n")) + 1
    big = False
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        if any(k.startswith("image/") for k in data) or \
                "application/vnd.jupyter.widget-view+json" in data:
            big = True
        elif out.get("output_type") == "stream":
            n += min(LONG_OUTPUT, len(out.get("text", "").rstrip("\n").split("\n"))) + 1
        elif "text/plain" in data:
            n += min(6, len(data["text/plain"].split("\n"))) + 1
    if not cell.get("outputs") and re.search(
            r"SphereView|TrajectoryPlayer|TwinView|Explorer|Dashboard|plt\.|plot_sphere|"
            r"plot_energy", cell.source):
        big = True
    return n + (FIGURE_LINES if big else 0)


def figure_caption(cell, ctx: Context) -> str:
    """The caption of a code cell's figure (myst-nb's ``mystnb.figure`` cell metadata), with the
    number the built book gives it ("**Figure 4.1.** ..."), or ""."""
    fig = (cell.metadata.get("mystnb") or {}).get("figure") or {}
    caption = str(fig.get("caption", "")).strip()
    if not caption:
        return ""
    number = ctx.refs.number.get(fig.get("name", "")) if fig.get("name") else None
    text = rewrite_roles(caption, ctx)
    return '<div class="usaav-caption">\n\n' + (f"**{number}.** " if number else "") + \
        text + "\n\n</div>"


def _keyprefix(nb) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = re.search(r":keyprefix:\s*(\S+)", cell.source)
            if m:
                return m.group(1)
    return ""


def slide_cells(nb, bib: dict | None = None, refs: Refs | None = None,
                doc: str = "") -> nbformat.NotebookNode:
    """A copy of ``nb`` whose cells carry reveal.js slide types derived from its structure.

    ``refs`` (see ``Refs``) gives the numbers and titles that references show (default: the
    kinds and titles of the notebook's own blocks); ``doc`` is the notebook's path in the book
    without suffix ("book/ch04_rope"), for ``{doc}`` links."""
    if refs is None:
        refs = Refs().read_source(nb)  # kinds and titles of the notebook's own blocks
    ctx = Context(bib=bib, refs=refs, doc=doc, keyprefix=_keyprefix(nb))
    out = copy.deepcopy(nb)
    cells = []
    used = SLIDE_BUDGET  # nothing on screen yet: the first material starts a slide
    in_references = False

    def add(cell, kind, lines, forced=None):
        nonlocal used
        if forced in SLIDE_TYPES:
            kind = forced
        elif kind == "auto":
            if used + lines > SLIDE_BUDGET and used > 0:
                kind = "subslide" if cells else "slide"
            else:
                kind = "-"
        if kind in ("slide", "subslide"):
            used = lines
        elif kind not in ("notes", "skip"):
            used += lines
        cell.metadata["slideshow"] = {"slide_type": kind}
        cells.append(cell)

    for cell in nb.cells:
        forced = cell.metadata.get("slideshow", {}).get("slide_type")
        tags = cell.metadata.get("tags", [])
        if "remove-cell" in tags:
            continue
        if cell.cell_type == "code":
            if in_references:
                continue
            c = copy.deepcopy(cell)
            if "remove-output" in tags:
                c.outputs = []
            shown, notes = split_code_cell(c)
            if notes:
                add(nbformat.v4.new_markdown_cell(notes), "notes", 0)
            if shown is not None:
                caption = figure_caption(c, ctx)
                add(shown, "auto", code_lines(shown) + (2 if caption else 0), forced)
                if caption:
                    add(nbformat.v4.new_markdown_cell(caption), "-", 0)
            continue
        if cell.cell_type != "markdown":
            continue
        # split the cell at headings; group plain units with the preceding heading
        pending: list[dict] = []

        def emit(kind_hint, group, first):
            nonlocal in_references
            if not group:
                return
            md = render_units(group, ctx)
            if not md.strip():
                return
            c = nbformat.v4.new_markdown_cell(md)
            add(c, kind_hint, text_lines(md), forced if first else None)

        first = True
        for u in units(cell.source):
            if u["kind"] == "heading":
                emit("auto", pending, first)
                first = first and not pending
                pending = []
                in_references = u["title"].strip().lower() in {"references", "bibliography"}
                if in_references:
                    continue
                kind = "slide" if u["level"] <= 2 else "subslide"
                c = nbformat.v4.new_markdown_cell(rewrite_roles(u["text"], ctx))
                add(c, kind, 2, forced if first else None)
                first = False
                continue
            if in_references:
                continue
            if u["kind"] == "directive" and u["name"] == "solution":
                emit("auto", pending, first)
                first = first and not pending
                pending = []
                where, text = render_directive(u, ctx)
                add(nbformat.v4.new_markdown_cell(text), "notes", 0)
                continue
            if u["kind"] == "directive" and u["name"] == "exercise":
                emit("auto", pending, first)
                first = first and not pending
                pending = []
                md = render_units([u], ctx)
                add(nbformat.v4.new_markdown_cell(md), "subslide", text_lines(md))
                continue
            if u["kind"] == "directive":
                # a block of its own: it may start a sub-slide, never splits
                emit("auto", pending, first)
                first = first and not pending
                pending = []
                md = render_units([u], ctx)
                if md.strip():
                    add(nbformat.v4.new_markdown_cell(md), "auto", text_lines(md))
                continue
            pending.append(u)
        emit("auto", pending, first)
    out.cells = cells
    return out


# ----------------------------------------------------------------------------------------------
# execution and export


def execute(nb, cwd: Path, timeout: int = 600):
    """Run ``nb`` in ``cwd`` with the python3 kernel, keeping the widget state (for the spheres)."""
    from nbclient import NotebookClient

    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(cwd)}}, store_widget_state=True)
    client.execute()
    return nb


def exporter(lib: str = "lib"):
    from nbconvert import SlidesExporter

    exp = SlidesExporter(extra_template_basedirs=[str(TEMPLATES)], template_name=TEMPLATE_NAME)
    exp.reveal_url_prefix = f"{lib}/reveal.js"
    exp.reveal_theme = "white"
    exp.reveal_transition = "none"
    exp.reveal_number = "c/t"
    exp.require_js_url = f"{lib}/widgets-js/require.js"
    exp.widget_renderer_url = f"{lib}/widgets-js/embed-amd.js"
    exp.mathjax_url = f"{lib}/mathjax/tex-chtml-full.js"
    exp.jquery_url = ""
    exp.mermaid_js_url = ""
    exp.exclude_input_prompt = True
    exp.exclude_output_prompt = True
    return exp


def chapter_title(nb) -> str:
    """The chapter's title: the first level-1 heading of a cell the book shows (a cell tagged
    ``remove-cell``, JupyterLab's numbering cell say, is not read: its comments are not
    headings)."""
    for cell in nb.cells:
        if cell.cell_type == "markdown" and "remove-cell" not in cell.metadata.get("tags", []):
            for line in cell.source.split("\n"):
                h = HEADING.match(line)
                if h and len(h.group(1)) == 1:
                    return h.group(2)
    return ""


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
    copy_path = build / "jupyter_execute" / f"{doc_name(path)}.ipynb"
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
    for c, src in zip(mine, prose):
        c.source = src.source
    return done


def convert(path: Path, out_dir: Path, run: bool = True, lib: str = "lib",
            refs: Refs | None = None, build: Path | None = None) -> Path:
    """Write the deck of the notebook ``path`` to ``out_dir/<stem>.html`` and return its path.

    ``build``: the book's build folder, whose outputs of the notebook are used when they are
    the outputs of its code (see ``executed_copy``); else the notebook runs when ``run``.
    ``refs``: the numbers and titles references show (``Refs.from_site``)."""
    path = Path(path)
    nb = executed_copy(path, build) if run else None
    if nb is None:
        nb = nbformat.read(path, as_version=4)
        if run:
            execute(nb, path.parent)
    deck = slide_cells(nb, refs=refs, doc=doc_name(path))
    deck.metadata["title"] = chapter_title(nb) or path.stem
    body, _ = exporter(lib).from_notebook_node(deck, resources={"usaav_lib": lib})
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{path.stem}.html"
    target.write_text(body, encoding="utf-8")
    return target


def book_refs(site: Path | None) -> Refs:
    """References as the built book at ``site`` shows them; from the sources (kinds and titles,
    no numbers) when there is no built book."""
    if site is not None and (Path(site) / "book").is_dir():
        refs = Refs.from_site(Path(site))
        if refs:
            return refs
    sources = sorted((ROOT / "book").rglob("*.ipynb")) + sorted((ROOT / "book").rglob("*.md"))
    return Refs.from_sources(p for p in sources if ".ipynb_checkpoints" not in p.parts)


def copy_libs(out_dir: Path, node_modules: Path, widget_js: Path) -> None:
    """Copy reveal.js, MathJax and the widget JavaScript into ``out_dir/lib`` (offline decks)."""
    lib = out_dir / "lib"
    sources = {
        "reveal.js": node_modules / "reveal.js",
        "mathjax": node_modules / "mathjax" / "es5",
        "widgets-js": widget_js,
    }
    for name, src in sources.items():
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


def write_index(out_dir: Path, decks: list[tuple[Path, str]]) -> None:
    items = "\n".join(f'<li><a href="{p.name}">{html.escape(t)}</a></li>' for p, t in decks)
    (out_dir / "index.html").write_text(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Slides</title>"
        "</head><body><h1>Slides</h1>\n<p>One reveal.js deck per chapter. Arrow keys move; "
        "<kbd>s</kbd> opens the speaker notes (solutions of the exercises); <kbd>Esc</kbd> shows "
        f"an overview.</p>\n<ul>\n{items}\n</ul></body></html>\n", encoding="utf-8")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("notebooks", nargs="*", type=Path, help="default: book/ch*.ipynb")
    ap.add_argument("--out", type=Path, default=ROOT / "_build" / "slides")
    ap.add_argument("--no-execute", action="store_true", help="do not run the notebooks")
    ap.add_argument("--site", type=Path, default=ROOT / "_build" / "html",
                    help="the built book, for the numbers and titles references show")
    ap.add_argument("--build", type=Path, default=ROOT / "_build",
                    help="the book's build folder: its outputs of a notebook are used instead "
                         "of running it")
    ap.add_argument("--node-modules", type=Path, default=ROOT / "node_modules")
    ap.add_argument("--widget-js", type=Path, default=ROOT / "_static_widgets" / "widgets-js")
    args = ap.parse_args(argv)
    notebooks = args.notebooks or sorted((ROOT / "book").glob("ch*.ipynb"))
    if not notebooks:
        print("no chapter notebooks found", file=sys.stderr)
        return 1
    copy_libs(args.out, args.node_modules, args.widget_js)
    refs = book_refs(args.site)
    if refs.site is None:
        print(f"{args.site} has no built book: references show kinds and titles, not numbers "
              "(build the book first: make book)", file=sys.stderr)
    decks = []
    for nb_path in notebooks:
        t0 = time.perf_counter()
        deck = convert(nb_path.resolve(), args.out, run=not args.no_execute, refs=refs,
                       build=args.build)
        title = chapter_title(nbformat.read(nb_path, as_version=4)) or nb_path.stem
        decks.append((deck, title))
        print(f"{deck.relative_to(args.out.parent) if args.out.parent in deck.parents else deck}"
              f"  ({time.perf_counter() - t0:.1f} s)")
    write_index(args.out, decks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
