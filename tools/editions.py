"""Two editions of the book from one source: the full book and the student edition.

``make book`` builds the full book (solutions in dropdowns).  ``make book-student`` runs::

    python tools/editions.py student            # build, strip, check -> _build/student/_build/html

which

1. merges ``_config_student.yml`` into ``_config.yml`` (sphinx-exercise's ``hide_solutions``: a
   ``{solution}`` directive then produces no output at all) and drops the pages it lists under
   ``toc_exclude`` from ``_toc.yml``, writing both into the build folder;
2. builds with Jupyter Book, reusing the execution cache of ``make book``
   (``execute.cache`` = ``_build/.jupyter_cache``): a notebook whose code cells are unchanged since
   the last ``make book`` is not run again; one that changed (or a cold cache) is executed, so the
   edition is always correct, only slower;
3. loads this module as a Sphinx extension (``setup`` below), which in that build

   * leaves out every code cell tagged ``solution-check`` (:data:`STUDENT_TAG`), its code and its
     outputs.  Give a code cell this tag when it restates or verifies the answer of an
     exercise: the check cell after a chapter's exercises, say, whose output prints the numbers
     the solutions derive.  The cell still runs (the cache is shared with the full book, and later cells may use
     its variables); only the page leaves it out;
   * leaves out the key of a problem set: everything from :data:`KEY_BEGIN` to :data:`KEY_END`
     (the solutions ``tools/problem_sets.py`` copies from the chapters, with the section's
     heading), removed from the page's source before it is read;
   * turns every link to a page left out of the edition (``{doc}`` roles, Markdown links, ``{ref}``
     to a label of that page) into plain text: the link's own text, or the page's title;

4. removes the solutions, the keys and the tagged cells from the page sources the site offers
   for download (the ".ipynb" and ".md" buttons serve ``_sources/``), including gated
   ``solution-start``/``solution-end`` blocks;
5. checks the result (``check`` does only this step on an existing build).  It fails when

   * a sentence of a solution, a distinctive number of a solution (four or more significant
     digits, not in the pages' public text), a distinctive line of code of a tagged cell, or a line
     of a tagged cell's output (read from the executed notebooks in ``_build/jupyter_execute``)
     is found in any page of the site (code and outputs included: the text of the HTML) or in any
     downloadable source or notebook (its cells' code and outputs);
   * a downloadable notebook or MyST source still holds a cell tagged ``solution-check``;
   * a page or a downloadable source still holds a key's marker (:data:`KEY_BEGIN`), or a sentence
     of the key's own text (its heading and introduction count as a solution);
   * a code cell of the sources names the label of an exercise (``ch1-ex-stiffness``, say) but
     is not tagged (the tagging rule, :func:`untagged_answer_cells`).

Other commands: ``python tools/editions.py check SITE`` (exit 1 on any of these) and
``python tools/editions.py probes`` (print the sentences the check looks for).
"""
from __future__ import annotations

import argparse
import copy
import html
import json
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

try:  # imported as tools.editions, or run as tools/editions.py (tools/ on the path)
    from tools.built_book import EXECUTED, executed_cells
    from tools.fences import fence_end
except ImportError:  # pragma: no cover
    # the same modules, run as a script
    from built_book import EXECUTED, executed_cells  # type: ignore[no-redef,import-not-found]
    from fences import fence_end  # type: ignore[no-redef,import-not-found]

ROOT = Path(__file__).resolve().parents[1]
FENCE_OPEN = re.compile(r"^\s*(`{3,}|:{3,})\s*\{([\w:.-]+)\}(.*)$")
TOOL_KEYS = ("title_suffix", "toc_exclude")
#: text files of a built site that may carry page text
SITE_SUFFIXES = {".html", ".js", ".ipynb", ".md", ".txt", ".json"}
MIN_PROBE = 24
#: the shortest line of a tagged cell's output the check looks for (characters, white space aside)
MIN_OUTPUT_LINE = 16
#: class that marks an admonition as an answer note for instructors (the instructor guide's notes
#: on its discussion questions): removed and checked like a solution
ANSWER_CLASS = "answer-note"
#: cell tag of a code cell that restates or verifies an exercise's answer: left out of the student
#: edition (code and outputs), of its pages and of its downloads
STUDENT_TAG = "solution-check"
#: the comments around the key of a problem set page (tools/problem_sets.py writes it): the
#: full edition shows it, the student edition leaves it out entirely
KEY_BEGIN = "<!-- key: begin -->"
KEY_END = "<!-- key: end -->"
#: the label of an exercise directive (``{exercise}`` or ``{exercise-start}``)
EXERCISE_LABEL = re.compile(r"(?:`{3,}|:{3,})\{exercise(?:-start)?\}[^\n]*\n"
                            r"(?:[ \t]*:[\w-]+:.*\n)*?[ \t]*:label:[ \t]*(\S+)")
#: an answer number: four or more significant digits (3857, 3.33791, 2.785)
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?!\.?\d)")
MIN_DIGITS = 4
#: parts of a path never searched for pages
SKIP_PARTS = {"_build", "node_modules", ".venv", ".git", ".ipynb_checkpoints"}


# ----------------------------------------------------------------------------------------------
# configuration


def deep_merge(base: dict, over: dict) -> dict:
    """``base`` updated by ``over``: nested dicts merged key by key, anything else replaced."""
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def student_config(config: dict, overrides: dict, cache: Path | None = None) -> dict:
    """The student edition's Jupyter Book configuration."""
    over = {k: v for k, v in overrides.items() if k not in TOOL_KEYS}
    cfg = deep_merge(config, over)
    cfg["title"] = str(config.get("title", "")) + str(overrides.get("title_suffix", ""))
    cfg.setdefault("sphinx", {}).setdefault("config", {})["hide_solutions"] = True
    if cache is not None:
        cfg.setdefault("execute", {})["cache"] = str(cache)
    return cfg


def prune_toc(node, exclude: set[str]):
    """A copy of a _toc.yml tree without the entries whose ``file`` is in ``exclude``."""
    if isinstance(node, list):
        return [prune_toc(x, exclude) for x in node
                if not (isinstance(x, dict) and x.get("file") in exclude)]
    if isinstance(node, dict):
        out = {k: prune_toc(v, exclude) for k, v in node.items()}
        # a part or section left empty is dropped
        for key in ("chapters", "sections"):
            if key in out and not out[key]:
                del out[key]
        if "parts" in out:
            out["parts"] = [p for p in out["parts"] if p.get("chapters")]
        return out
    return node


# ----------------------------------------------------------------------------------------------
# solutions in MyST sources


def _classes(lines: list[str], start: int) -> set[str]:
    """The classes named by the ``:class:`` option of the directive opened at ``lines[start]``."""
    for line in lines[start + 1:]:
        m = re.match(r"^\s*:([\w-]+):\s*(.*)$", line)
        if not m:
            break
        if m.group(1) == "class":
            return set(m.group(2).split())
    return set()


def split_solutions(text: str, gated: bool = False,
                    where: str = "text") -> tuple[str, list[str], bool]:
    """Remove solution blocks from MyST text.

    Returns the text without them, the removed solution bodies, and whether a gated solution
    (``solution-start`` ... ``solution-end``) is still open at the end of ``text``; pass that flag
    as ``gated`` for the next cell of a notebook.  A block never closed is a ``FenceError``
    naming ``where`` and the line.
    """
    lines = text.split("\n")
    keep: list[str] = []
    removed: list[str] = []
    k = 0
    while k < len(lines):
        m = FENCE_OPEN.match(lines[k])
        name = m.group(2) if m else None
        if m is None:  # not a fence: kept, or removed inside a gated solution
            (removed if gated else keep).append(lines[k])
            k += 1
            continue
        if gated:
            if name == "solution-end":
                gated = False
                k = fence_end(lines, k, m.group(1), where) + 1
            else:
                removed.append(lines[k])
                k += 1
            continue
        if name == "solution" or (name in ("admonition", "dropdown")
                                  and ANSWER_CLASS in _classes(lines, k)):
            end = fence_end(lines, k, m.group(1), where)
            removed.append("\n".join(lines[k + 1:end]))
            k = end + 1
            continue
        if name == "solution-start":
            gated = True
            k = fence_end(lines, k, m.group(1), where) + 1
            continue
        keep.append(lines[k])
        k += 1
    return "\n".join(keep), removed, gated


def cell_text(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def is_tagged(cell: dict, tag: str = STUDENT_TAG) -> bool:
    """Whether a notebook cell is a code cell tagged ``tag``."""
    return cell.get("cell_type") == "code" and tag in (cell.get("metadata", {}).get("tags") or [])


def _code_cell_tags(lines: list[str], start: int) -> list[str]:
    """The tags of the MyST ``{code-cell}`` opened at ``lines[start]`` (``:tags:`` option or a
    ``---`` YAML header)."""
    opts: dict = {}
    k = start + 1
    if k < len(lines) and lines[k].strip() == "---":
        end = next((j for j in range(k + 1, len(lines)) if lines[j].strip() == "---"), k)
        try:
            opts = yaml.safe_load("\n".join(lines[k + 1:end])) or {}
        except yaml.YAMLError:
            opts = {}
    else:
        while k < len(lines):
            m = re.match(r"^\s*:([\w-]+):\s*(.*)$", lines[k])
            if not m:
                break
            try:
                opts[m.group(1)] = yaml.safe_load(m.group(2))
            except yaml.YAMLError:
                opts[m.group(1)] = m.group(2)
            k += 1
    tags = opts.get("tags") if isinstance(opts, dict) else None
    return [str(x) for x in tags] if isinstance(tags, list) else []


def split_tagged_code_cells(text: str, tag: str = STUDENT_TAG,
                            where: str = "text") -> tuple[str, list[str]]:
    """MyST text without its ``{code-cell}`` blocks tagged ``tag``, and the removed blocks; a
    block never closed is a ``FenceError`` naming ``where`` and the line."""
    lines = text.split("\n")
    keep: list[str] = []
    removed: list[str] = []
    k = 0
    while k < len(lines):
        m = FENCE_OPEN.match(lines[k])
        if m and m.group(2) == "code-cell" and tag in _code_cell_tags(lines, k):
            end = fence_end(lines, k, m.group(1), where)
            removed.append("\n".join(lines[k + 1:end]))
            k = end + 1
            continue
        keep.append(lines[k])
        k += 1
    return "\n".join(keep), removed


def strip_notebook(nb: dict, where: str = "notebook") -> tuple[dict, list[str]]:
    """A notebook (JSON dict) without solutions and without the code cells tagged
    :data:`STUDENT_TAG`, and the removed solution texts (``where`` names the notebook in
    errors)."""
    nb = copy.deepcopy(nb)
    cells: list[dict] = []
    removed: list[str] = []
    gated = False
    for i, cell in enumerate(nb.get("cells", [])):
        src = cell_text(cell)
        if is_tagged(cell):
            continue
        if cell.get("cell_type") == "markdown" or gated:
            if cell.get("cell_type") != "markdown":  # code inside a gated solution
                removed.append(src)
                continue
            was_gated = gated
            new, gone, gated = split_solutions(src, gated, f"{where} cell {i}")
            removed.extend(gone)
            if was_gated and not new.strip():
                continue
            cell["source"] = new
        cells.append(cell)
    nb["cells"] = cells
    return nb, removed


def split_keys(text: str, where: str = "text") -> tuple[str, list[str]]:
    """MyST text without the keys of a problem set (from :data:`KEY_BEGIN` to :data:`KEY_END`),
    and what they held: each solution of a key and, apart, the rest of its text (heading,
    introduction).  A key whose end marker is missing runs to the end of the text."""
    removed: list[str] = []
    while KEY_BEGIN in text:
        i = text.index(KEY_BEGIN)
        j = text.find(KEY_END, i)
        end = len(text) if j < 0 else j + len(KEY_END)
        rest, solutions, _ = split_solutions(text[i + len(KEY_BEGIN):end].replace(KEY_END, ""),
                                             where=f"{where}, the key on line "
                                                   f"{text.count(chr(10), 0, i) + 1}")
        removed += solutions + [rest]
        text = text[:i] + text[end:]
    return text, removed


def strip_myst(text: str, where: str = "text") -> tuple[str, list[str]]:
    """MyST text without keys, solutions and tagged code cells, and the removed solution texts."""
    text, keys = split_keys(text, where)
    text, removed, _ = split_solutions(text, where=where)
    return split_tagged_code_cells(text, where=where)[0], keys + removed


def _pages(source_dir: Path) -> list[Path]:
    """The book's page sources (.md and .ipynb) under ``source_dir``."""
    pages = source_dir / "book" if (source_dir / "book").is_dir() else source_dir
    return [p for p in sorted(pages.rglob("*"))
            if p.suffix in (".md", ".ipynb") and p.is_file()
            and not SKIP_PARTS & set(p.relative_to(source_dir).parts)]


def _read_nb(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def solution_texts(source_dir: Path) -> dict[str, list[str]]:
    """Every solution body of the book's pages under ``source_dir`` (path -> texts)."""
    out: dict[str, list[str]] = {}
    for path in _pages(source_dir):
        if path.suffix == ".ipynb":
            _, texts = strip_notebook(_read_nb(path), str(path))
        else:
            _, texts = strip_myst(path.read_text(encoding="utf-8"), str(path))
        if texts:
            out[str(path.relative_to(source_dir))] = texts
    return out


def tagged_cells(source_dir: Path) -> dict[str, list[str]]:
    """The code of every cell tagged :data:`STUDENT_TAG` in the book's pages (path -> codes)."""
    out: dict[str, list[str]] = {}
    for path in _pages(source_dir):
        if path.suffix == ".ipynb":
            codes = [cell_text(c) for c in _read_nb(path).get("cells", []) if is_tagged(c)]
        else:
            codes = split_tagged_code_cells(path.read_text(encoding="utf-8"), where=str(path))[1]
        if codes:
            out[str(path.relative_to(source_dir))] = codes
    return out


def public_text(source_dir: Path) -> str:
    """All text of the book's pages outside solutions and tagged cells (markdown and code),
    normalized.

    A solution sentence that also occurs here (say, a phrase repeated from the chapter) is no
    evidence of a leak, so the check ignores it.
    """
    parts = []
    for path in _pages(source_dir):
        if path.suffix == ".ipynb":
            nb, _ = strip_notebook(_read_nb(path), str(path))
            parts += [cell_text(c) for c in nb.get("cells", [])]
            # figure captions live in the cells' metadata (myst-nb's mystnb.figure.caption)
            parts += [str(c.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("caption", ""))
                      for c in nb.get("cells", [])]
        else:
            parts.append(strip_myst(path.read_text(encoding="utf-8"), str(path))[0])
    return normalize("\n".join(parts))


def exercise_labels(source_dir: Path) -> set[str]:
    """The labels of all exercises in the book's pages."""
    labels: set[str] = set()
    for path in _pages(source_dir):
        if path.suffix == ".ipynb":
            text = "\n".join(cell_text(c) for c in _read_nb(path).get("cells", [])
                             if c.get("cell_type") == "markdown")
        else:
            text = path.read_text(encoding="utf-8")
        labels |= set(EXERCISE_LABEL.findall(text))
    return labels


def untagged_answer_cells(source_dir: Path) -> list[tuple[str, int, str]]:
    """(notebook, cell index, label): code cells that name an exercise but are not tagged.

    The tagging rule: a code cell that names an exercise's label (a check cell headed
    ``# CHECK (exercises ch1-ex-...)``, say) restates or verifies its answer, so it must carry
    the tag :data:`STUDENT_TAG`.
    """
    labels = exercise_labels(source_dir)
    if not labels:
        return []
    named = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, sorted(labels))) + r")(?![\w-])")
    out = []
    for path in _pages(source_dir):
        if path.suffix != ".ipynb":
            continue
        for i, cell in enumerate(_read_nb(path).get("cells", [])):
            if cell.get("cell_type") == "code" and not is_tagged(cell):
                m = named.search(cell_text(cell))
                if m:
                    out.append((str(path.relative_to(source_dir)), i, m.group(1)))
    return out


def output_text(cell: dict) -> str:
    """The text of a code cell's outputs as a page shows it (streams, plain text, HTML, errors)."""
    parts = []
    for out in cell.get("outputs", []) or []:
        if "text" in out:
            parts.append(cell_text({"source": out["text"]}))
        data = out.get("data", {}) or {}
        for mime in ("text/plain", "text/html", "text/markdown", "text/latex"):
            if mime in data:
                txt = cell_text({"source": data[mime]})
                parts.append(_strip_tags(txt) if mime == "text/html" else txt)
        if out.get("output_type") == "error":
            parts.append(f"{out.get('ename', '')}: {out.get('evalue', '')}")
    return "\n".join(parts)


def executed_outputs(source_dir: Path, executed: list[Path]) -> tuple[list[str], str]:
    """Outputs of the tagged cells, and all other outputs, of the executed notebooks.

    ``executed`` holds folders such as ``_build/jupyter_execute`` (Jupyter Book writes each
    notebook there, under its source path); of a notebook, the first copy with outputs is read
    (a build that took the notebook from the cache may write it there without them).
    Returns the output texts of the tagged cells and the joined output text of the untagged ones.
    """
    tagged: list[str] = []
    public: list[str] = []
    for path in _pages(source_dir):
        if path.suffix != ".ipynb":
            continue
        for cell in executed_cells(path.relative_to(source_dir), executed):
            (tagged if is_tagged(cell) else public).append(output_text(cell))
    return [t for t in tagged if t.strip()], "\n".join(public)


#: typographic characters and the plain ones they compare as
PLAIN: dict[str, str | int | None] = {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                                      "\u2013": "-", "\u2014": "-", "\u00a0": " ", "\u2212": "-"}


def normalize(text: str) -> str:
    text = text.translate(str.maketrans(PLAIN))
    return " ".join(text.split())


def squeeze(text: str) -> str:
    """``text`` without any white space: code compares so whatever the highlighting did."""
    return re.sub(r"\s+", "", normalize(text))


def probes(solution: str) -> list[str]:
    """Plain-prose sentences of a solution: what would show if the solution leaked.

    Sentences with math, roles, markup or code are skipped (they render differently from their
    source), so every probe appears verbatim in a page that shows the solution.
    """
    body = re.sub(r"^\s*:[\w-]+:.*$", "", solution, flags=re.M)          # directive options
    body = re.sub(r"(`{3,}|:{3,}).*?\1", " | ", body, flags=re.S)        # nested fences
    body = re.sub(r"\$\$.*?\$\$", " | ", body, flags=re.S)
    out = []
    for para in re.split(r"\n\s*\n", body):
        for sent in re.split(r"(?<=[.!?:;])\s+|\n\s*[-*+]\s+|\|", para):
            # cut at anything that renders differently from its source
            for piece in re.split(r"\$[^$]*\$|\{[^}]*\}`[^`]*`|`[^`]*`|[*_\[\]<>#\\|(){}=~^]",
                                  sent):
                s = normalize(piece).strip(" .,;:!?'\"-")
                if len(s) >= MIN_PROBE and " " in s and "$" not in s:
                    out.append(s)
    return out


def line_probes(text: str, public: str = "", shortest: int = MIN_PROBE) -> list[str]:
    """Distinctive lines of code or output, without white space: the lines of ``text`` with at
    least ``shortest`` characters that are not in ``public`` (already squeezed)."""
    out = []
    for line in text.split("\n"):
        s = squeeze(line)
        if len(s) >= shortest and s not in public:
            out.append(s)
    return out


def significant_digits(number: str) -> int:
    """Significant digits of a decimal numeral: 3857 -> 4, 3.33791 -> 6, 0.018 -> 2, 1000 -> 1."""
    return len(number.replace(".", "").lstrip("0").rstrip("0"))


def answer_numbers(solutions: list[str], public: str = "") -> set[str]:
    """The numbers of ``solutions`` with at least :data:`MIN_DIGITS` significant digits that the
    public text does not hold: the answers a check cell would print."""
    seen = set(NUMBER.findall(public))
    return {n for s in solutions for n in NUMBER.findall(s)
            if significant_digits(n) >= MIN_DIGITS and n not in seen}


# ----------------------------------------------------------------------------------------------
# a built site


def _strip_tags(raw: str) -> str:
    raw = re.sub(r"<(script|style)\b[^>]*>.*?</\1>", " ", raw, flags=re.S | re.I)
    raw = re.sub(r"<[^>]+>", " ", raw)
    return html.unescape(raw)


def site_text(path: Path) -> str:
    """The text of one site file as a reader (or a download) would see it: a page's text, code
    and outputs; a notebook's cells, code and outputs."""
    raw = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".html":
        raw = _strip_tags(raw)
    elif path.name.endswith(".ipynb") or path.name.endswith(".ipynb.txt"):
        try:
            nb = json.loads(raw)
            raw = "\n".join(cell_text(c) + "\n" + output_text(c) for c in nb.get("cells", []))
        except ValueError:
            pass
    return normalize(raw)


def _site_files(site: Path) -> list[Path]:
    return [p for p in sorted(site.rglob("*"))
            if p.is_file() and p.suffix in SITE_SUFFIXES
            and "widgets-js" not in p.parts and p.relative_to(site).parts[0] not in ("lib",)]


def page_key(rel: str) -> str:
    """The source a site file was made from, without suffix: ``book/ch01_particles.html``,
    ``_sources/book/ch01_particles.ipynb`` and ``book/ch01_particles.ipynb`` all give
    ``book/ch01_particles``."""
    rel = rel.removeprefix("_sources/").removesuffix(".txt")
    return str(Path(rel).with_suffix(""))


def tagged_in_download(path: Path, tag: str = STUDENT_TAG) -> int:
    """How many cells tagged ``tag`` a downloadable notebook or MyST source still holds."""
    raw = path.read_text(encoding="utf-8", errors="replace")
    name = path.name.removesuffix(".txt")
    if name.endswith(".ipynb"):
        try:
            return sum(is_tagged(c, tag) for c in json.loads(raw).get("cells", []))
        except (ValueError, AttributeError):
            return 0
    if name.endswith(".md"):
        return len(split_tagged_code_cells(raw, tag, str(path))[1])
    return 0


def find_leaks(site: Path, texts: dict[str, list[str]], public: str = "",
               cells: dict[str, list[str]] | None = None, outputs: Sequence[str] = (),
               public_outputs: str = "") -> list[tuple[str, str]]:
    """(file, what) pairs: the traces of answers found in the built ``site``.

    * a prose sentence of a solution in ``texts`` (not also in ``public``), in any file;
    * a number of a solution with :data:`MIN_DIGITS` significant digits (not in ``public``), in
      the page made from the solution's own source or its download;
    * a distinctive line of code of a tagged cell (``cells``, path -> codes), or a line of a
      tagged cell's output (``outputs``; lines also in ``public_outputs`` are ignored), in any
      file, compared without white space;
    * a cell tagged :data:`STUDENT_TAG` in a downloadable notebook or MyST source;
    * the marker of a problem set's key, :data:`KEY_BEGIN`, in any file.
    """
    wanted = {p for sols in texts.values() for s in sols for p in probes(s) if p not in public}
    squeezed_public = squeeze(public)
    lines = {p for codes in (cells or {}).values() for c in codes
             for p in line_probes(c, squeezed_public)}
    squeezed_outputs = squeezed_public + "\n" + squeeze(public_outputs)
    lines |= {p for out in outputs for p in line_probes(out, squeezed_outputs, MIN_OUTPUT_LINE)}
    numbers = {str(Path(src).with_suffix("")): answer_numbers(sols, public)
               for src, sols in texts.items()}
    leaks = []
    for path in _site_files(site):
        rel = str(path.relative_to(site))
        text = site_text(path)
        for p in sorted(wanted):
            if p in text:
                leaks.append((rel, p))
        flat = squeeze(text)
        for p in sorted(lines):
            if p in flat:
                leaks.append((rel, f"code or output of a {STUDENT_TAG} cell: {p}"))
        for n in sorted(numbers.get(page_key(rel), ())):
            if re.search(r"(?<![\w.])" + re.escape(n) + r"(?!\.?\d)", text):
                leaks.append((rel, f"number of a solution: {n}"))
        if KEY_BEGIN in path.read_text(encoding="utf-8", errors="replace"):
            leaks.append((rel, f"the key of a problem set ({KEY_BEGIN})"))
        if rel.startswith("_sources/") or path.name.endswith(".ipynb"):
            k = tagged_in_download(path)
            if k:
                leaks.append((rel, f"{k} cell(s) tagged {STUDENT_TAG} in a download"))
    return leaks


def check_site(site: Path, source: Path, executed: list[Path] | None = None
               ) -> tuple[list[tuple[str, str]], str]:
    """Everything the check finds in ``site`` built from ``source``, and a one-line summary.

    ``executed`` are the folders of executed notebooks whose tagged cells' outputs are probed;
    by default the site's own ``../jupyter_execute`` and the full book's
    ``_build/jupyter_execute``.
    """
    if executed is None:
        executed = [site.parent / EXECUTED, source / "_build" / EXECUTED]
    texts = solution_texts(source)
    public = public_text(source)
    cells = tagged_cells(source)
    outputs, public_outputs = executed_outputs(source, executed)
    leaks = find_leaks(site, texts, public, cells, outputs, public_outputs)
    leaks += [(f"{nb} cell {i}", f"names exercise {label} but is not tagged {STUDENT_TAG}")
              for nb, i, label in untagged_answer_cells(source)]
    n_probes = sum(len(probes(s)) for sols in texts.values() for s in sols)
    n_cells = sum(len(v) for v in cells.values())
    summary = (f"{site}: none of {n_probes} sentences from {sum(len(v) for v in texts.values())} "
               f"solutions, nor the code or the {len(outputs)} outputs of {n_cells} cells tagged "
               f"{STUDENT_TAG}, is present")
    return leaks, summary


def strip_site_sources(site: Path) -> int:
    """Remove solutions and tagged cells from the page sources under ``site/_sources``; return
    how many solutions and cells were removed."""
    count = 0
    for path in sorted((site / "_sources").rglob("*")) if (site / "_sources").is_dir() else []:
        if not path.is_file():
            continue
        name = path.name.removesuffix(".txt")
        raw = path.read_text(encoding="utf-8")
        if name.endswith(".ipynb"):
            try:
                nb = json.loads(raw)
            except ValueError:
                continue
            out, gone = strip_notebook(nb, str(path))
            if out != nb:
                path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n",
                                encoding="utf-8")
            count += len(gone) + len(nb.get("cells", [])) - len(out.get("cells", []))
        elif name.endswith(".md"):
            text, keys = split_keys(raw, str(path))
            text, gone, _ = split_solutions(text, where=str(path))
            gone += keys
            text, cells = split_tagged_code_cells(text, where=str(path))
            if gone or cells:
                path.write_text(text, encoding="utf-8")
            count += len(gone) + len(cells)
    return count


# ----------------------------------------------------------------------------------------------
# the Sphinx extension of the student edition


def page_title(path: Path) -> str:
    """The first heading of a page source (.md or .ipynb), or its file name."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".ipynb":
        text = "\n".join(cell_text(c) for c in json.loads(text).get("cells", [])
                         if c.get("cell_type") == "markdown")
    m = re.search(r"^#\s+(.+?)\s*#*\s*$", text, flags=re.M)
    return m.group(1).strip() if m else path.stem


def page_labels(path: Path) -> list[str]:
    """The labels a page source defines (``(label)=`` targets and ``:label:`` options)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".ipynb":
        text = "\n".join(cell_text(c) for c in json.loads(text).get("cells", [])
                         if c.get("cell_type") == "markdown")
    return re.findall(r"^\(([^()\s]+)\)=\s*$", text, flags=re.M) + \
        re.findall(r"^\s*:label:\s*(\S+)\s*$", text, flags=re.M)


def excluded_pages(source: Path, exclude: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """The pages left out (docname -> title) and the labels they define (label -> title)."""
    docs, labels = {}, {}
    for doc in exclude:
        path = next((source / (doc + s) for s in (".md", ".ipynb")
                     if (source / (doc + s)).is_file()), None)
        if path is None:
            raise SystemExit(f"toc_exclude names {doc!r}, but {source} holds no {doc}.md or "
                             f"{doc}.ipynb")
        docs[doc] = page_title(path)
        for label in page_labels(path):
            labels[label] = docs[doc]
    return docs, labels


def remove_keys(app, docname, source) -> None:
    """``source-read``: a page's source without the keys of a problem set."""
    if KEY_BEGIN in source[0]:
        source[0] = split_keys(source[0])[0]


def remove_tagged_cells(app, doctree) -> None:
    """``doctree-read``: drop the code cells tagged ``edition_remove_tag``, code and outputs."""
    from docutils import nodes

    cls = "tag_" + app.config.edition_remove_tag.replace(" ", "_")
    for node in list(doctree.findall(nodes.container)):
        if node.get("nb_element") == "cell_code" and cls in node.get("classes", []):
            node.parent.remove(node)


def _excluded_target(node, docs: dict, labels: dict) -> str | None:
    """The title of the left-out page a pending cross-reference points to, or None."""
    from sphinx.util import docname_join

    target, domain, kind = node.get("reftarget", ""), node.get("refdomain"), node.get("reftype")
    if kind == "doc" or (kind == "myst" and domain == "doc"):
        doc = target if kind == "myst" else docname_join(node.get("refdoc", ""), target)
        return docs.get(doc.removesuffix(".md").removesuffix(".ipynb"))
    if kind in ("ref", "numref", "any", "myst") or domain == "prf":
        return labels.get(target.lower()) or labels.get(target)
    return None


def _transform_excluded_links():
    from docutils import nodes
    from sphinx import addnodes
    from sphinx.transforms.post_transforms import SphinxPostTransform

    class ExcludedLinks(SphinxPostTransform):
        """A link to a page the edition leaves out becomes its text (or the page's title)."""

        default_priority = 5  # before myst-parser's (9) and Sphinx's (10) reference resolvers

        def run(self, **kwargs) -> None:
            docs = self.config.edition_excluded_docs or {}
            labels = self.config.edition_excluded_labels or {}
            for node in list(self.document.findall(addnodes.pending_xref)):
                title = _excluded_target(node, docs, labels)
                if title is None:
                    continue
                text = node.astext() if node.get("refexplicit") else title
                node.replace_self(nodes.inline(text, text, classes=["excluded-page"]))

    return ExcludedLinks


def setup(app):
    """The student edition's Sphinx extension (``build_student`` loads it)."""
    app.add_config_value("edition_remove_tag", STUDENT_TAG, "env")
    app.add_config_value("edition_excluded_docs", {}, "env")
    app.add_config_value("edition_excluded_labels", {}, "env")
    app.connect("source-read", remove_keys)
    app.connect("doctree-read", remove_tagged_cells)
    app.add_post_transform(_transform_excluded_links())
    return {"parallel_read_safe": True, "parallel_write_safe": True}


# ----------------------------------------------------------------------------------------------
# the build


def build_student(source: Path, out: Path, extra_args: list[str] | None = None) -> Path:
    """Build the student edition of the book in ``source`` into ``out``; return the HTML folder.

    The execution cache is the full book's, ``source/_build/.jupyter_cache``: the notebooks that
    ``make book`` executed are not run again.
    """
    source, out = source.resolve(), out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    config = yaml.safe_load((source / "_config.yml").read_text(encoding="utf-8")) or {}
    overrides_path = ROOT / "_config_student.yml"
    if (source / "_config_student.yml").is_file():
        overrides_path = source / "_config_student.yml"
    overrides = yaml.safe_load(overrides_path.read_text(encoding="utf-8")) or {}
    cache = source / "_build" / ".jupyter_cache"
    cfg = student_config(config, overrides, cache=cache)
    # the configuration is written into `out`: paths Jupyter Book reads relative to it are made absolute
    sphinx_cfg = cfg.setdefault("sphinx", {})
    local = sphinx_cfg.get("local_extensions") or {}
    for name, path in local.items():
        local[name] = str((source / path).resolve())
    local["editions"] = str(Path(__file__).resolve().parent)
    sphinx_cfg["local_extensions"] = local
    exclude = list(overrides.get("toc_exclude", []))
    docs, labels = excluded_pages(source, exclude)
    sphinx_cfg.setdefault("config", {}).update(
        edition_remove_tag=STUDENT_TAG, edition_excluded_docs=docs,
        edition_excluded_labels=labels)
    toc = yaml.safe_load((source / "_toc.yml").read_text(encoding="utf-8"))
    toc = prune_toc(toc, set(exclude))
    (out / "_config.yml").write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    (out / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False), encoding="utf-8")
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb if jb.exists() else "jupyter-book"), "build", str(source),
           "--config", str(out / "_config.yml"), "--toc", str(out / "_toc.yml"),
           "--path-output", str(out)] + list(extra_args or [])
    rc = subprocess.run(cmd).returncode
    site = out / "_build" / "html"
    # strip even after a failed build (-W): whatever was written must not carry solutions
    n = strip_site_sources(site) if site.is_dir() else 0
    print(f"removed {n} solutions and {STUDENT_TAG} cells from the downloadable sources in "
          f"{site / '_sources'}")
    if rc != 0:
        raise SystemExit(f"jupyter-book build failed (exit {rc})")
    return site


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("student", help="build, strip and check the student edition")
    b.add_argument("--source", type=Path, default=ROOT)
    b.add_argument("--out", type=Path, default=ROOT / "_build" / "student")
    b.add_argument("jb_args", nargs="*", help="extra jupyter-book build arguments (after --)")
    c = sub.add_parser("check", help="exit 1 if an answer appears in a built site")
    c.add_argument("site", type=Path)
    c.add_argument("--source", type=Path, default=ROOT)
    c.add_argument("--executed", type=Path, action="append",
                   help="a folder of executed notebooks (default: SITE/../jupyter_execute and "
                        "SOURCE/_build/jupyter_execute)")
    probes_cmd = sub.add_parser("probes", help="print the solution sentences the check looks for")
    probes_cmd.add_argument("--source", type=Path, default=ROOT)
    args = ap.parse_args(argv)

    if args.cmd == "probes":
        for path, sols in solution_texts(args.source).items():
            for s in sols:
                print(f"{path}: {probes(s)}")
        for path, codes in tagged_cells(args.source).items():
            print(f"{path}: {len(codes)} cells tagged {STUDENT_TAG}")
        return 0
    if args.cmd == "student":
        site = build_student(args.source, args.out, args.jb_args)
        executed = None
    else:
        site, executed = args.site, args.executed
    leaks, summary = check_site(site, args.source, executed)
    for f, p in leaks[:20]:
        print(f"answer in {f}: {p!r}", file=sys.stderr)
    if len(leaks) > 20:
        print(f"... and {len(leaks) - 20} more", file=sys.stderr)
    if leaks:
        return 1
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
