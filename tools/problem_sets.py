"""The seminar's problem sets, written from the chapters: every exercise stated in full, a key.

Each problem set page (``book/seminar/problems_part1.md`` to ``_part3.md``) covers the chapters
of one part of the book.  Between the marker comments :data:`EXERCISES_BEGIN` and
:data:`EXERCISES_END` this tool writes every exercise of those chapters: the statement of each
``{exercise}`` block, copied from the chapter's markdown cells, with its points, its kind, its
suggested use and a link to the exercise in its chapter; for a "complete the function" exercise
(a code cell tagged ``exercise-stub`` after the exercise, followed by a cell tagged
``exercise-check``) also the stub's code and what the check verifies (the comment that opens the
check cell).  Between :data:`editions.KEY_BEGIN` and :data:`editions.KEY_END`, at the end of the
page, it writes the key: the ``{solution}`` block of each exercise.  The student edition
(``tools/editions.py``) leaves the key out, markers and all; the rest of the page (its
introduction, the projects) is written by hand.

What the chapters do not say is in ``book/seminar/problem_sets.yml``: the chapters of each part,
the points of each kind of exercise, and each exercise's kind and suggested use.

A statement is copied so that it means the same on the problem set page:

* roles that resolve across the book (``{prf:ref}``, ``{ref}``, ``{numref}``, ``{eq}``,
  ``{cite}``) are kept as written;
* a relative ``{doc}`` target, Markdown link or image is made relative to the problem set page;
* labels are not defined twice: the exercise's ``:label:`` is left out, and so are ``:label:``
  and ``:name:`` options, ``(target)=`` lines and ``$$ ... $$ (label)`` equation labels inside the
  statement (the problem set page links to the chapter's exercise instead); a solution of the key
  refers to its exercise by the chapter's label, as a ``{solution}`` does;
* a link to an anchor of the chapter's own page (``[text](#anchor)``) is an error: there is no
  such anchor on the problem set page.

Usage::

    python tools/problem_sets.py            # rewrite the generated parts of the three pages
    python tools/problem_sets.py --check    # change nothing; exit 1 and name each stale page
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:           # run as a script: tools/ is on the path, not the root
    sys.path.insert(0, str(ROOT))
from tools.editions import KEY_BEGIN, KEY_END  # noqa: E402
from tools.fences import fence_end  # noqa: E402

BOOK = ROOT / "book"
SPEC = BOOK / "seminar" / "problem_sets.yml"
EXERCISES_BEGIN = "<!-- exercises: begin -->"
EXERCISES_END = "<!-- exercises: end -->"
GENERATED = "<!-- written by tools/problem_sets.py from the chapters: edit the chapters, then run it -->"
#: the kind of exercise whose points go with a stub (a "complete the function" exercise)
STUB_TAG, CHECK_TAG = "exercise-stub", "exercise-check"
#: the class of the key's solutions (tools/print_pdf.py prints them unfolded: _static/print.css)
KEY_CLASS = "problem-key"

FENCE = re.compile(r"^(\s*)(`{3,}|:{3,})\s*\{([\w:.-]+)\}\s*(.*?)\s*$")
OPTION = re.compile(r"^\s*:([\w-]+):\s*(.*?)\s*$")
DOC_ROLE = re.compile(r"\{doc\}`([^`]*)`")
LINK = re.compile(r"(!?\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\])\(([^()\s]+)\)")


@dataclass
class Exercise:
    """One exercise of a chapter, as the problem set states it."""

    label: str
    title: str
    statement: str
    chapter: str                      # the notebook's name without suffix: ch01_particles
    solution: str | None = None       # the body of its {solution} block (options left out)
    stub: str | None = None           # the code of its exercise-stub cell
    check: str | None = None          # what its exercise-check cell verifies
    kind: str = ""
    use: str = ""
    points: int = 0
    number: int = 0                   # its number in the problem set


# ----------------------------------------------------------------------------------------------
# reading the chapters


def directives(text: str, names: tuple[str, ...],
               where: str = "text") -> list[tuple[str, str, dict, str]]:
    """The top-level directives called ``names`` in MyST ``text``: (name, argument, options,
    body) in order of appearance.  A block never closed is a ``FenceError`` naming ``where``
    and the line."""
    lines = text.split("\n")
    out = []
    k = 0
    while k < len(lines):
        m = FENCE.match(lines[k])
        if not m:
            k += 1
            continue
        end = fence_end(lines, k, m.group(2), where)
        if m.group(3) in names:
            options, j = {}, k + 1
            while j < end and (option := OPTION.match(lines[j])):
                key, value = option.groups()
                options[key] = value
                j += 1
            out.append((m.group(3), m.group(4), options, "\n".join(lines[j:end]).strip("\n")))
        k = end + 1
    return out


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _tags(cell: dict) -> list[str]:
    return list(cell.get("metadata", {}).get("tags") or [])


def check_summary(code: str, where: str) -> str:
    """What an exercise-check cell verifies: the comment lines that open it, as one sentence."""
    words = []
    for line in code.split("\n"):
        if not line.startswith("#"):
            break
        words.append(line.lstrip("#").strip())
    text = " ".join(w for w in words if w)
    if not text:
        raise ValueError(f"{where}: the {CHECK_TAG} cell must open with a comment that says what it "
                         "checks (the problem set quotes it)")
    return text


def chapter_exercises(path: Path) -> list[Exercise]:
    """The exercises of one chapter notebook, in order, with their solutions and stubs."""
    cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    found: list[Exercise] = []
    solutions: dict[str, str] = {}
    last_in_cell: dict[int, Exercise] = {}
    for i, cell in enumerate(cells):
        where = f"{path.name} cell {i}"
        if cell.get("cell_type") == "markdown":
            for name, arg, options, body in directives(_source(cell), ("exercise", "solution"), where):
                if name == "exercise":
                    label = options.get("label")
                    if not label:
                        raise ValueError(f"{where}: the exercise {arg!r} has no :label:")
                    ex = Exercise(label, arg, body, path.stem)
                    found.append(ex)
                    last_in_cell[i] = ex
                else:
                    solutions[arg] = body
        elif STUB_TAG in _tags(cell):
            owner = last_in_cell.get(i - 1)
            if owner is None:
                raise ValueError(f"{where}: an {STUB_TAG} cell must follow the markdown cell of "
                                 "its exercise")
            nxt = cells[i + 1] if i + 1 < len(cells) else {}
            if CHECK_TAG not in _tags(nxt):
                raise ValueError(f"{where}: the stub must be followed by its {CHECK_TAG} cell")
            owner.stub = _source(cell).strip("\n")
            owner.check = check_summary(_source(nxt), f"{path.name} cell {i + 1}")
    for ex in found:
        ex.solution = solutions.get(ex.label)
        if ex.solution is None:
            raise ValueError(f"{path.name}: the exercise {ex.label} has no {{solution}} block")
    return found


def chapter_title(path: Path) -> str:
    """The chapter's title: its first level-one heading outside fenced blocks."""
    for cell in json.loads(path.read_text(encoding="utf-8")).get("cells", []):
        if cell.get("cell_type") != "markdown":
            continue
        text = re.sub(r"^(`{3,}|:{3,}).*?^\1\s*$", "", _source(cell), flags=re.M | re.S)
        m = re.search(r"^#\s+(.+?)\s*$", text, flags=re.M)
        if m:
            return m.group(1)
    raise ValueError(f"{path.name} has no level-one heading")


def chapter_number(name: str) -> int:
    """The chapter's number from its file name: ``ch04_rope`` -> 4."""
    m = re.match(r"ch0*(\d+)_", name)
    if not m:
        raise ValueError(f"chapter {name!r}: expected a name like ch04_rope")
    return int(m.group(1))


# ----------------------------------------------------------------------------------------------
# a statement on another page


def relocate(text: str, rel: str, where: str) -> str:
    """``text`` from a chapter, to be read on a page whose folder reaches the chapter's folder by
    ``rel`` (``..``): relative ``{doc}`` targets, links and images made relative to the page,
    labels left out (see the module's docstring)."""
    if rel in ("", "."):
        prefix = ""
    else:
        prefix = rel.rstrip("/") + "/"

    def doc(m: re.Match) -> str:
        inner = m.group(1)
        explicit = re.match(r"^(.*?)\s*<([^<>]+)>$", inner, flags=re.S)
        text_, target = explicit.groups() if explicit else ("", inner.strip())
        if not target.startswith("/"):
            target = prefix + target
        return f"{{doc}}`{text_} <{target}>`" if explicit else f"{{doc}}`{target}`"

    def link(m: re.Match) -> str:
        label, target = m.groups()
        if target.startswith("#"):
            raise ValueError(f"{where}: the link {m.group(0)!r} leads to an anchor of the "
                             "chapter's page, which the problem set page does not have; use a "
                             "{ref} role")
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
            return m.group(0)
        return f"{label}({prefix}{target})"

    text = DOC_ROLE.sub(doc, text)
    text = LINK.sub(link, text)
    lines = [line for line in text.split("\n")
             if not re.match(r"^\s*:(label|name):", line)
             and not re.match(r"^\s*\([^()\s]+\)=\s*$", line)]
    text = "\n".join(lines)
    return re.sub(r"\$\$[ \t]*\([^()\s]+\)[ \t]*$", "$$", text, flags=re.M)


def escape(text: str) -> str:
    """Plain text for a Markdown paragraph: Markdown's special characters escaped."""
    return re.sub(r"([\\`*_\[\]{}<>$#|~])", r"\\\1", text)


def paragraph(text: str) -> str:
    """``text`` wrapped as the book's sources are, at 100 characters."""
    return textwrap.fill(text, width=100, break_long_words=False, break_on_hyphens=False)


def fence_for(body: str, char: str = "`") -> str:
    """A fence longer than every fence of ``body``."""
    runs = [len(m.group(1)) for m in re.finditer(rf"^\s*({re.escape(char)}{{3,}})", body, re.M)]
    return char * max([3] + [r + 1 for r in runs])


# ----------------------------------------------------------------------------------------------
# the specification


def load_spec(path: Path = SPEC) -> dict:
    """``problem_sets.yml``, checked: points per kind, and per part its page, chapters and the
    kind and suggested use of each exercise."""
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(spec, dict) or not isinstance(spec.get("points"), dict) \
            or not isinstance(spec.get("parts"), list):
        raise ValueError(f"{path}: expected a mapping with 'points' (kind -> points) and 'parts' "
                         "(a list)")
    for kind, pts in spec["points"].items():
        if not isinstance(pts, int) or isinstance(pts, bool) or pts <= 0:
            raise ValueError(f"{path}: points of {kind!r} must be a positive integer, got {pts!r}")
    for n, part in enumerate(spec["parts"], 1):
        for key in ("page", "chapters", "exercises"):
            if key not in part:
                raise ValueError(f"{path}: part {n} has no {key!r}")
        for label, entry in part["exercises"].items():
            if not (isinstance(entry, list) and len(entry) == 2
                    and all(isinstance(x, str) and x for x in entry)):
                raise ValueError(f"{path}: {label}: expected [kind, suggested use], got {entry!r}")
            if entry[0] not in spec["points"]:
                raise ValueError(f"{path}: {label}: kind {entry[0]!r} is not one of "
                                 f"{sorted(spec['points'])}")
    return spec


def part_exercises(part: dict, points: dict, book: Path) -> list[Exercise]:
    """The exercises of one part, numbered, with kind, use and points from the specification."""
    out: list[Exercise] = []
    for chapter in part["chapters"]:
        out += chapter_exercises(book / f"{chapter}.ipynb")
    known = {ex.label for ex in out}
    missing = [ex.label for ex in out if ex.label not in part["exercises"]]
    if missing:
        raise ValueError(f"{part['page']}: no kind and suggested use in problem_sets.yml for "
                         f"{', '.join(missing)}")
    extra = sorted(set(part["exercises"]) - known)
    if extra:
        raise ValueError(f"{part['page']}: problem_sets.yml names {', '.join(extra)}, which the "
                         f"chapters {', '.join(part['chapters'])} do not hold")
    for n, ex in enumerate(out, 1):
        ex.kind, ex.use = part["exercises"][ex.label]
        ex.points = points[ex.kind]
        ex.number = n
    return out


# ----------------------------------------------------------------------------------------------
# writing


def points_table(exercises: list[Exercise], points: dict) -> str:
    """The points scheme of a part: one row per kind, and the total."""
    rows = ["| kind | points each | problems | points |", "|---|---|---|---|"]
    for kind, pts in points.items():
        k = sum(ex.kind == kind for ex in exercises)
        if k:
            rows.append(f"| {kind} | {pts} | {k} | {k * pts} |")
    total = sum(ex.points for ex in exercises)
    rows.append(f"| **total** | | **{len(exercises)}** | **{total}** |")
    return "\n".join(rows)


def exercises_section(exercises: list[Exercise], points: dict, chapters: list[str], book: Path,
                      page: Path) -> str:
    """The generated text between the exercise markers of a problem set page."""
    rel = os.path.relpath(book, page.parent).replace(os.sep, "/")
    total = sum(ex.points for ex in exercises)
    first, last = chapter_number(chapters[0]), chapter_number(chapters[-1])
    span = f"chapter {first}" if first == last else f"chapters {first} to {last}"
    out = [EXERCISES_BEGIN, GENERATED, "",
           "## Exercises",
           "",
           paragraph(f"Every exercise of {span}, {len(exercises)} problems worth {total} points in "
                     "all. The points go by the kind of problem:"),
           "",
           points_table(exercises, points),
           "",
           paragraph("Each statement is the chapter's own. \"Above\" and \"below\" refer to the "
                     "chapter: the runs, explorers and figures a statement uses are there, and a "
                     "\"complete the function\" problem is solved in the chapter's notebook, where "
                     "the stub and the cell that checks it stand after the statement."),
           ]
    for chapter in chapters:
        path = book / f"{chapter}.ipynb"
        out += ["", f"### Chapter {chapter_number(chapter)}: {chapter_title(path)}", "",
                f"Read with {{doc}}`{rel}/{chapter}`."]
        for ex in (e for e in exercises if e.chapter == chapter):
            plural = "s" if ex.points != 1 else ""
            out += ["", f"#### Problem {ex.number}: {ex.title}", "",
                    paragraph(f"**{ex.points} point{plural}** · {ex.kind} · suggested use: "
                              f"{ex.use} · in the chapter: {{ref}}`{ex.label}`"), "",
                    relocate(ex.statement, rel, f"{chapter} {ex.label}")]
            if ex.stub is not None:
                assert ex.check is not None  # read with the stub (chapter_exercises)
                out += ["", "The stub:", "", "```python", ex.stub, "```", "",
                        paragraph("What the check verifies (the cell after the stub): "
                                  f"{escape(ex.check)}.")]
    out += ["", EXERCISES_END]
    return "\n".join(out)


def key_section(exercises: list[Exercise], book: Path, page: Path) -> str:
    """The generated key: the solution of every problem (the full edition only)."""
    rel = os.path.relpath(book, page.parent).replace(os.sep, "/")
    out = [KEY_BEGIN, GENERATED, "",
           "## Key",
           "",
           paragraph("The solutions of the problems above, as the chapters give them. This section "
                     "is in the full edition only: the student edition of the book leaves it "
                     "out."),
           ]
    for ex in exercises:
        assert ex.solution is not None  # chapter_exercises refuses an exercise without one
        body = relocate(ex.solution, rel, f"{ex.chapter} solution of {ex.label}")
        fence = fence_for(body)
        out += ["", f"**Problem {ex.number}** ({ex.points} points)", "",
                f"{fence}{{solution}} {ex.label}", f":class: dropdown {KEY_CLASS}", "",
                body, fence]
    out += ["", KEY_END]
    return "\n".join(out)


def replace_between(text: str, begin: str, end: str, new: str, where: str) -> str:
    """``text`` with the block from ``begin`` to ``end`` (markers included) replaced by ``new``."""
    if text.count(begin) != 1 or text.count(end) != 1:
        raise ValueError(f"{where}: expected exactly one {begin!r} and one {end!r}, found "
                         f"{text.count(begin)} and {text.count(end)}")
    i, j = text.index(begin), text.index(end)
    if j < i:
        raise ValueError(f"{where}: {end!r} comes before {begin!r}")
    return text[:i] + new + text[j + len(end):]


def render_page(text: str, part: dict, points: dict, book: Path, page: Path) -> str:
    """A problem set page's text with its exercises and its key written from the chapters."""
    exercises = part_exercises(part, points, book)
    text = replace_between(text, EXERCISES_BEGIN, EXERCISES_END,
                           exercises_section(exercises, points, part["chapters"], book, page),
                           str(page))
    return replace_between(text, KEY_BEGIN, KEY_END, key_section(exercises, book, page), str(page))


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to the regular file ``path`` through a temporary file and a rename."""
    if path.exists() and not path.is_file():
        raise ValueError(f"{path} is not a regular file; refusing to write it")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def stale_pages(root: Path = ROOT, write: bool = False) -> list[Path]:
    """The problem set pages under ``root`` whose generated parts differ from the chapters.

    With ``write`` they are rewritten, once every page has been made (a chapter that cannot be
    read leaves all pages as they were)."""
    book = root / "book"
    spec = load_spec(book / "seminar" / "problem_sets.yml")
    new_texts = {}
    for part in spec["parts"]:
        page = book / "seminar" / part["page"]
        if not page.is_file():
            raise ValueError(f"{page} is not a regular file")
        old = page.read_text(encoding="utf-8")
        new = render_page(old, part, spec["points"], book, page)
        if new != old:
            new_texts[page] = new
    if write:
        for page, text in new_texts.items():
            write_atomic(page, text)
    return list(new_texts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="change nothing; exit 1 when a page is out of date with the chapters")
    ap.add_argument("--root", type=Path, default=ROOT,
                    help="the book's repository (default: %(default)s)")
    args = ap.parse_args(argv)
    try:
        stale = stale_pages(args.root, write=not args.check)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        print(f"problem_sets: {exc}", file=sys.stderr)
        return 2
    for page in stale:
        verb = "is out of date with the chapters" if args.check else "rewritten"
        print(f"{page.relative_to(args.root)}: {verb}")
    if args.check and stale:
        print("run: python tools/problem_sets.py", file=sys.stderr)
        return 1
    if not stale:
        print("the problem sets are up to date with the chapters")
    return 0


if __name__ == "__main__":
    sys.exit(main())
