"""Write the book's index of results, book/reference/results.md, from the chapter notebooks.

Every ``prf:theorem``, ``prf:proposition``, ``prf:lemma``, ``prf:corollary`` and ``prf:definition``
block of the chapters (``book/ch[0-9][0-9]_*.ipynb``, in file order) becomes one row of a table under its
chapter's title: a ``{prf:ref}`` link to the block (which the book renders with its number) and the
block's title.  The page is generated, never edited by hand:

    python tools/results_index.py            # rewrite book/reference/results.md
    python tools/results_index.py --check    # exit 1 if the committed page is out of date

A block without a ``:label:`` cannot be linked and is an error naming the chapter and the title.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
OUTPUT = BOOK / "reference" / "results.md"
CHAPTERS = "ch[0-9][0-9]_*.ipynb"
KINDS = ("theorem", "proposition", "lemma", "corollary", "definition")
PLURALS = {"theorem": "theorems", "proposition": "propositions", "lemma": "lemmas",
           "corollary": "corollaries", "definition": "definitions"}

# the opening line of a directive block: ```{prf:kind} title  or  :::{prf:kind} title
OPENING = re.compile(r"^(?P<fence>`{3,}|:{3,})\{prf:(?P<kind>[a-z]+)\}[ \t]*(?P<title>.*?)[ \t]*$")
# any fence line: the fence and what follows it (a language, a directive, or nothing)
FENCE = re.compile(r"^[ \t]{0,3}(?P<fence>`{3,}|:{3,}|~{3,})[ \t]*(?P<info>.*?)[ \t]*$")
OPTION = re.compile(r"^:(?P<key>[\w-]+):[ \t]*(?P<value>.*?)[ \t]*$")
HEADING = re.compile(r"^#[ \t]+(?P<title>.+?)[ \t]*#*[ \t]*$")
# an index entry must not break the role's "text <entry>" form
PLAIN_TITLE = re.compile(r"^[\w ,.;:'()+=/-]+$")

HEADER = """\
# Index of results

```{{index}} single: results; index of
```

Every definition, lemma, proposition, theorem and corollary of the book, chapter by chapter, in
the order in which they appear. Each link opens the statement; the proofs follow the statements
in the chapters.
There are {total} results: {counts}.

This page is generated from the chapters by `tools/results_index.py`.
"""


@dataclass(frozen=True)
class Result:
    """One labelled block of a chapter."""

    kind: str
    label: str
    title: str


@dataclass(frozen=True)
class Chapter:
    """A chapter notebook: its file stem, its title and its results in order."""

    stem: str
    title: str
    results: tuple[Result, ...]


def _markdown(path: Path) -> list[str]:
    """The markdown cells of a notebook, each as one string."""
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a readable notebook ({exc})") from None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise ValueError(f"{path}: not a notebook (no list of cells)")
    out = []
    for cell in cells:
        if isinstance(cell, dict) and cell.get("cell_type") == "markdown":
            source = cell.get("source", "")
            out.append(source if isinstance(source, str) else "".join(source))
    return out


def read_chapter(path: Path) -> Chapter:
    """The title and the results of one chapter notebook, in the order of the text."""
    path = Path(path)
    title = None
    results = []
    for text in _markdown(path):
        lines = text.splitlines()
        # the open fenced blocks, innermost last: (fence, is_code); a code block's lines are
        # literal, a directive's lines are Markdown that may hold further blocks
        stack: list[tuple[str, bool]] = []
        for i, line in enumerate(lines):
            fence = FENCE.match(line)
            if stack and stack[-1][1]:
                if fence and _closes(fence, stack[-1][0]):
                    stack.pop()
                continue
            if fence is None:
                heading = HEADING.match(line)
                if title is None and not stack and heading:
                    title = heading.group("title")
                continue
            if stack and _closes(fence, stack[-1][0]):
                stack.pop()
                continue
            info = fence.group("info")
            stack.append((fence.group("fence"), not info.startswith("{")))
            opening = OPENING.match(line)
            if opening is None or opening.group("kind") not in KINDS:
                continue
            kind, name = opening.group("kind"), opening.group("title")
            if not name:
                raise ValueError(f"{path.name}: a prf:{kind} block has no title; give it one "
                                 f"(the index lists results by title)")
            label = None
            for option in lines[i + 1:]:
                match = OPTION.match(option)
                if match is None:
                    break
                if match.group("key") == "label":
                    label = match.group("value")
            if not label:
                raise ValueError(f"{path.name}: the prf:{kind} block {name!r} has no :label:, "
                                 f"so the index cannot link to it; add one")
            results.append(Result(kind, label, name))
    if title is None:
        raise ValueError(f"{path.name}: no '# ' title heading in any markdown cell")
    return Chapter(path.stem, title, tuple(results))


def _closes(fence: re.Match, opened: str) -> bool:
    """Whether the fence line ``fence`` closes a block opened with ``opened``."""
    mark = fence.group("fence")
    return not fence.group("info") and mark[0] == opened[0] and len(mark) >= len(opened)


def read_book(book: Path = BOOK) -> list[Chapter]:
    """Every chapter notebook of ``book``, in file order."""
    paths = sorted(Path(book).glob(CHAPTERS))
    if not paths:
        raise ValueError(f"no chapter notebooks {CHAPTERS} in {book}")
    chapters = [read_chapter(p) for p in paths]
    seen: dict[str, str] = {}
    for chapter in chapters:
        for result in chapter.results:
            if result.label in seen:
                raise ValueError(f"label {result.label!r} is used in {seen[result.label]} and in "
                                 f"{chapter.stem}; labels must be unique")
            seen[result.label] = chapter.stem
    return chapters


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|")


def _title_cell(result: Result) -> str:
    """The title, with an index entry "title (kind)" when the title is plain text."""
    if PLAIN_TITLE.match(result.title):
        return f"{{index}}`{result.title} <single: {result.title} ({result.kind})>`"
    return _cell(result.title)


def render(chapters: list[Chapter]) -> str:
    """The Markdown text of the results page."""
    counts = {kind: 0 for kind in KINDS}
    for chapter in chapters:
        for result in chapter.results:
            counts[result.kind] += 1
    total = sum(counts.values())
    order = ("definition", "lemma", "proposition", "theorem", "corollary")
    described = ", ".join(f"{counts[k]} {k if counts[k] == 1 else PLURALS[k]}"
                          for k in order if counts[k])
    parts = [HEADER.format(total=total, counts=described)]
    for chapter in chapters:
        parts.append(f"\n## {chapter.title}\n\n")
        parts.append(f"The chapter: {{doc}}`../{chapter.stem}`.\n\n")
        if not chapter.results:
            parts.append("This chapter states no numbered results.\n")
            continue
        parts.append("| Result | Title |\n|---|---|\n")
        for result in chapter.results:
            parts.append(f"| {{prf:ref}}`{result.label}` | {_title_cell(result)} |\n")
    return "".join(parts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--book", type=Path, default=BOOK, help="folder of the chapter notebooks")
    ap.add_argument("--out", type=Path, default=None,
                    help="the page to write or check (default: <book>/reference/results.md)")
    ap.add_argument("--check", action="store_true",
                    help="do not write; exit 1 if the page differs from what the chapters give")
    args = ap.parse_args(argv)
    out = args.out if args.out is not None else args.book / "reference" / "results.md"
    try:
        text = render(read_book(args.book))
    except ValueError as exc:
        print(f"results_index: {exc}", file=sys.stderr)
        return 2
    if args.check:
        current = out.read_text(encoding="utf-8") if out.is_file() else None
        if current != text:
            print(f"results_index: {out} is out of date with the chapters; run "
                  f"python tools/results_index.py", file=sys.stderr)
            return 1
        return 0
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
