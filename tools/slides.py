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
* Every ``{solution}`` goes into the speaker notes (press ``s`` in the deck), never on a slide.
  The ``## References`` section and its bibliography are left out.
* A cell that already has ``metadata.slideshow.slide_type`` keeps it: an author can override the
  derived structure cell by cell.  Cells tagged ``remove-cell`` are skipped, ``remove-input`` shows
  only the output, ``remove-output`` only the input (the book's own tags).
* MyST markup that plain notebooks do not know is rewritten to markdown: ``prf:`` blocks
  (definition, theorem, proof, ...), exercises and admonitions become boxes with their title,
  ``{cite}`` becomes "(Author et al. year)" from ``book/references.bib``, ``{ref}``/``{numref}``/
  ``{prf:ref}``/``{eq}`` become their text or label, ``(label)=`` targets are dropped.

The notebook is executed first (with nbclient, in ``book/``, storing the widget state) so figures
and the pythreejs spheres appear in the deck; ``--no-execute`` makes text-only decks quickly.

The decks load reveal.js, MathJax and the widget JavaScript from ``lib/`` beside them, copied
from the pinned npm packages (``npm ci`` from package-lock.json) and from the book's widget
JavaScript (``make widget-js``), so they work from ``file://`` with no network.
"""
from __future__ import annotations

import argparse
import copy
import html
import re
import shutil
import sys
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = Path(__file__).resolve().parent / "slides_template"
TEMPLATE_NAME = "usaav_reveal"

#: how many "lines" fit on one slide (1280 x 800 at the sizes set in the template)
SLIDE_BUDGET = 24
#: lines charged for a figure or a 3-D sphere
FIGURE_LINES = 13
#: characters per wrapped line of text on a slide
LINE_CHARS = 95

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


# ----------------------------------------------------------------------------------------------
# citations


def read_bib(path: Path) -> dict[str, str]:
    """Map each BibTeX key of ``path`` to a short author-year label ("Su et al. 2021")."""
    labels: dict[str, str] = {}
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
        if not names:
            labels[key] = key
            continue
        who = names[0] if len(names) == 1 else (
            f"{names[0]} and {names[1]}" if len(names) == 2 else f"{names[0]} et al.")
        labels[key] = f"{who} {year.group(1)}" if year else who
    return labels


# ----------------------------------------------------------------------------------------------
# MyST markdown -> plain markdown, in units


def rewrite_roles(text: str, bib: dict[str, str]) -> str:
    """Rewrite MyST roles and labelled equations into text a notebook renderer understands."""

    def role(m):
        name, content = m.group(1), m.group(2)
        if name in CITE_ROLES:
            keys = [k.strip() for k in content.split(",") if k.strip()]
            return "(" + "; ".join(bib.get(k, k) for k in keys) + ")"
        if name == "math":
            return f"${content}$"
        explicit = re.match(r"^(.*?)\s*<([^>]+)>\s*$", content, re.S)
        if explicit and explicit.group(1):
            return explicit.group(1)
        target = explicit.group(2) if explicit else content
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


def _box(kind: str, title: str, body: str, css: str) -> str:
    head = f"**{kind}**" + (f" ({title})" if title else "") + "."
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


def render_directive(u: dict, bib: dict[str, str]) -> tuple[str, str]:
    """Markdown for a directive unit and where it goes: ("md"|"notes"|"drop", text)."""
    name, title, body = u["name"], u["title"], u["body"]
    inner = render_units(units(body), bib)
    short = name.split(":")[-1]
    if name == "solution":
        target = title.strip()
        return "notes", f"**Solution to {target}.**\n\n{inner}"
    if name == "bibliography":
        return "drop", ""
    if name == "exercise":
        return "md", _box("Exercise", rewrite_roles(title, bib), inner, "exercise")
    if name.startswith("prf:") and short in PRF_NAMES:
        if short == "proof":
            return "md", f'<div class="usaav-box usaav-proof">\n\n*Proof.* {inner.strip()} &#8718;\n\n</div>'
        return "md", _box(short.capitalize(), rewrite_roles(title, bib), inner, short)
    if name in ADMONITIONS:
        kind = title if name == "admonition" and title else name.capitalize()
        return "md", _box(kind, "" if name == "admonition" else rewrite_roles(title, bib), inner,
                          "note")
    if name == "math":
        return "md", f"$$\n{body}\n$$"
    if name in {"code", "code-block", "sourcecode"}:
        return "md", f"```{title}\n{body}\n```"
    # figures, margins, sidebars, tabs and anything else: keep the content
    return "md", inner


def render_units(us: list[dict], bib: dict[str, str]) -> str:
    parts = []
    for u in us:
        if u["kind"] == "directive":
            where, text = render_directive(u, bib)
            if where == "md":
                parts.append(text)
            elif where == "notes":
                parts.append(f'<aside class="notes">\n\n{text}\n\n</aside>')
        else:
            parts.append(rewrite_roles(u["text"], bib))
    return "\n\n".join(parts)


# ----------------------------------------------------------------------------------------------
# slide structure


def text_lines(text: str) -> int:
    """Estimated slide lines taken by a piece of markdown."""
    n = 0
    in_math = False
    for line in text.split("\n"):
        s = line.strip()
        if s.startswith("$$"):
            in_math = not in_math if s.count("$$") == 1 else in_math
            n += 1
            continue
        if not s:
            continue
        n += 1.4 if in_math else max(1, -(-len(s) // LINE_CHARS))
    return int(round(n))


def code_lines(cell) -> int:
    """Estimated slide lines taken by a code cell with its outputs."""
    n = len(cell.source.strip().split("\n")) if cell.source.strip() else 0
    if "remove-input" in cell.metadata.get("tags", []):
        n = 0
    big = False
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        if any(k.startswith("image/") for k in data) or \
                "application/vnd.jupyter.widget-view+json" in data:
            big = True
        elif out.get("output_type") == "stream":
            n += min(8, len(out.get("text", "").split("\n")))
        elif "text/plain" in data:
            n += min(6, len(data["text/plain"].split("\n")))
    if not cell.get("outputs") and re.search(
            r"SphereView|TrajectoryPlayer|Dashboard|plt\.|plot_sphere|plot_energy", cell.source):
        big = True
    return n + (FIGURE_LINES if big else 0)


def slide_cells(nb, bib: dict[str, str] | None = None) -> nbformat.NotebookNode:
    """A copy of ``nb`` whose cells carry reveal.js slide types derived from its structure."""
    bib = bib if bib is not None else read_bib(ROOT / "book" / "references.bib")
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
            if "remove-input" in tags:
                c.metadata.setdefault("jupyter", {})["source_hidden"] = True
                c.metadata["transient"] = {"remove_source": True}
            add(c, "auto", code_lines(c), forced)
            continue
        if cell.cell_type != "markdown":
            continue
        # split the cell at headings; group plain units with the preceding heading
        pending: list[dict] = []

        def emit(kind_hint, group, first):
            nonlocal in_references
            if not group:
                return
            md = render_units(group, bib)
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
                c = nbformat.v4.new_markdown_cell(rewrite_roles(u["text"], bib))
                add(c, kind, 2, forced if first else None)
                first = False
                continue
            if in_references:
                continue
            if u["kind"] == "directive" and u["name"] == "solution":
                emit("auto", pending, first)
                first = first and not pending
                pending = []
                where, text = render_directive(u, bib)
                add(nbformat.v4.new_markdown_cell(text), "notes", 0)
                continue
            if u["kind"] == "directive" and u["name"] == "exercise":
                emit("auto", pending, first)
                first = first and not pending
                pending = []
                md = render_units([u], bib)
                add(nbformat.v4.new_markdown_cell(md), "subslide", text_lines(md))
                continue
            if u["kind"] == "directive":
                # a block of its own: it may start a sub-slide, never splits
                emit("auto", pending, first)
                first = first and not pending
                pending = []
                md = render_units([u], bib)
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
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.split("\n"):
                h = HEADING.match(line)
                if h and len(h.group(1)) == 1:
                    return h.group(2)
    return ""


def convert(path: Path, out_dir: Path, run: bool = True, lib: str = "lib") -> Path:
    """Write the deck of the notebook ``path`` to ``out_dir/<stem>.html`` and return its path."""
    nb = nbformat.read(path, as_version=4)
    if run:
        execute(nb, path.parent)
    deck = slide_cells(nb)
    deck.metadata["title"] = chapter_title(nb) or path.stem
    body, _ = exporter(lib).from_notebook_node(deck, resources={"usaav_lib": lib})
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{path.stem}.html"
    target.write_text(body, encoding="utf-8")
    return target


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
    ap.add_argument("--node-modules", type=Path, default=ROOT / "node_modules")
    ap.add_argument("--widget-js", type=Path, default=ROOT / "_static_widgets" / "widgets-js")
    args = ap.parse_args(argv)
    notebooks = args.notebooks or sorted((ROOT / "book").glob("ch*.ipynb"))
    if not notebooks:
        print("no chapter notebooks found", file=sys.stderr)
        return 1
    copy_libs(args.out, args.node_modules, args.widget_js)
    decks = []
    for nb_path in notebooks:
        t0 = time.perf_counter()
        deck = convert(nb_path.resolve(), args.out, run=not args.no_execute)
        title = chapter_title(nbformat.read(nb_path, as_version=4)) or nb_path.stem
        decks.append((deck, title))
        print(f"{deck.relative_to(args.out.parent) if args.out.parent in deck.parents else deck}"
              f"  ({time.perf_counter() - t0:.1f} s)")
    write_index(args.out, decks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
