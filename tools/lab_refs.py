"""Cross-references in the notebooks that read the same in the book and in JupyterLab.

The book numbers its theorems, exercises and sections within each chapter (Theorem 4.2), and
the chapters themselves.  In JupyterLab the MyST renderer sees one notebook at a time: it numbers
a notebook's blocks from 1, it cannot resolve a label defined in another chapter (it shows the
bare label), and a ``{doc}`` link leads to a file name without its ``.ipynb`` suffix.  So the
notebooks write every reference with its text spelt out, the text the book would print:

* ``{prf:ref}`Theorem 4.2 <ch4-thm-conjugacy>``` and ``{ref}`Exercise 4.1 <ch4-ex-projection>```
  (the book links them; JupyterLab shows the same words and, within a chapter, links them too);
* ``[Chapter 2](ch02_metastability.ipynb)`` for a chapter (both open the chapter).

Written by hand those numbers would go stale when a block is added; this tool fills them in from
the built book (``make book``): it reads the number of every labelled block, section and chapter
from the HTML pages and rewrites each reference whose text is a bare label or a number text
("Theorem 4.2", "Section 4.5", "Chapter 2").  A reference with words of its own ("the
conjugacy theorem <ch4-thm-conjugacy>") is left as written.

    python tools/lab_refs.py            # rewrite book/*.ipynb from _build/html
    python tools/lab_refs.py --check    # exit 1 and list every reference whose text is stale

After a change in the numbering: ``make book``, then this tool, then ``make book`` again.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

try:  # imported as tools.lab_refs, or run as tools/lab_refs.py (tools/ on the path)
    from tools import built_book
except ImportError:  # pragma: no cover
    import built_book  # type: ignore[no-redef,import-not-found]  # the same module, run as a script

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
SITE = ROOT / "_build" / "html"

#: ``{prf:ref}`label``` or ``{prf:ref}`text <label>```, the same for ``{ref}``
ROLE = re.compile(r"\{(prf:ref|ref)\}`([^`<]*?)\s*(?:<([^`<>]+)>)?`")
DOC_ROLE = re.compile(r"\{doc\}`([^`<]*?)\s*(?:<([^`<>]+)>)?`")
CHAPTER_LINK = re.compile(r"\[Chapter ([0-9]+)\]\(((?:\.\./)*)([\w-]+)\.ipynb\)")
#: texts the tool owns: a kind and a number, as the book prints them
NUMBER_TEXT = re.compile(r"^[A-Z][a-z]+ [0-9]+(\.[0-9]+)*$")


def targets(site: Path = SITE) -> tuple[dict[str, str], dict[str, str]]:
    """What the built book prints for each label and each chapter.

    Returns ``(labels, chapters)``: ``labels`` maps a block's or section's label to its number
    text ("Theorem 4.2", "Exercise 4.1", "Section 4.5"), ``chapters`` maps a chapter's file stem
    to "Chapter 4".  Read from the HTML pages under ``site/book`` (``built_book.Refs``).
    """
    pages = built_book.chapter_pages(site)
    if not pages:
        raise FileNotFoundError(f"site={site} holds no built pages under book/: run `make book`")
    refs = built_book.Refs.from_site(Path(site), pages)
    labels = {label: refs.number[label] for label in refs.blocks}
    for label, number in refs.section.items():
        labels.setdefault(label, f"Section {number}")
    chapters = {doc.split("/")[-1]: f"Chapter {number}" for doc, number in refs.chapter.items()}
    return labels, chapters


def rewrite(text: str, labels: dict[str, str], chapters: dict[str, str],
            up: str = "") -> tuple[str, list[str]]:
    """``text`` with every reference it owns spelt out; also the list of changes made.

    ``up`` is the path from the notebook's folder to ``book/`` ("../" for book/primers/).
    """
    changes: list[str] = []

    def role(m: re.Match) -> str:
        kind, first, label = m.group(1), m.group(2).strip(), m.group(3)
        shown = first if label else None
        label = label or first
        if label not in labels or (shown is not None and not NUMBER_TEXT.match(shown)):
            return m.group(0)
        new = f"{{{kind}}}`{labels[label]} <{label}>`"
        if new != m.group(0):
            changes.append(f"{m.group(0)} -> {new}")
        return new

    def doc(m: re.Match) -> str:
        stem = (m.group(2) or m.group(1)).strip()
        if stem not in chapters:
            return m.group(0)
        new = f"[{chapters[stem]}]({up}{stem}.ipynb)"
        changes.append(f"{m.group(0)} -> {new}")
        return new

    def link(m: re.Match) -> str:
        stem = m.group(3)
        if stem not in chapters or m.group(2) != up:
            return m.group(0)
        new = f"[{chapters[stem]}]({up}{stem}.ipynb)"
        if new != m.group(0):
            changes.append(f"{m.group(0)} -> {new}")
        return new

    text = ROLE.sub(role, text)
    text = DOC_ROLE.sub(doc, text)
    text = CHAPTER_LINK.sub(link, text)
    return text, changes


def notebooks(book: Path = BOOK) -> list[Path]:
    """The book's notebooks: ``book/*.ipynb`` and those one folder down (the primers)."""
    return sorted(Path(book).glob("*.ipynb")) + sorted(Path(book).glob("*/*.ipynb"))


def rewrite_notebook(path: Path, labels: dict[str, str], chapters: dict[str, str],
                     write: bool = True, book: Path = BOOK) -> list[str]:
    """Rewrite the markdown cells of one notebook (atomically); return the changes."""
    depth = len(Path(path).resolve().parent.relative_to(Path(book).resolve()).parts)
    up = "../" * depth
    raw = path.read_text(encoding="utf-8")
    nb = json.loads(raw)
    changes: list[str] = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        source = "".join(cell["source"])
        new, done = rewrite(source, labels, chapters, up)
        if done:
            changes += done
            cell["source"] = new.splitlines(keepends=True)
    if changes and write:
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    return changes


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--site", type=Path, default=SITE, help="the built book (default: %(default)s)")
    ap.add_argument("--book", type=Path, default=BOOK, help="the notebooks (default: %(default)s)")
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 when stale")
    args = ap.parse_args(argv)
    try:
        labels, chapters = targets(args.site)
    except FileNotFoundError as exc:
        print(f"lab_refs: {exc}", file=sys.stderr)
        return 2
    stale = 0
    for path in notebooks(args.book):
        changes = rewrite_notebook(path, labels, chapters, write=not args.check, book=args.book)
        stale += len(changes)
        for change in changes:
            print(f"{path.name}: {change}")
    verb = "stale" if args.check else "rewritten"
    print(f"{stale} references {verb}")
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
