"""Citations that read as author and year in the book and in JupyterLab.

The book resolves a citation role against ``book/references.bib`` (sphinxcontrib-bibtex,
author-year style) and prints "[Geshkovski *et al.*, 2023]", linked to the page's bibliography.
JupyterLab's MyST renderer (jupyterlab_myst) reads no bibliography: it shows a role's key marked
"Citation Not Found".  So the pages write each citation as a Markdown link whose text is what the
book prints and whose target names the citation:

* ``[[Geshkovski *et al.*, 2023]](#cite:p:ch01-geshkovski2023mathematical)`` for ``{cite:p}``
  (and ``{cite}``, the same in this style); several keys are separated by commas;
* ``[Geshkovski *et al.* [2023]](#cite:t:ch01-geshkovski2023mathematical)`` for ``{cite:t}``.

JupyterLab shows the text (a link to nowhere, without a warning).  The book reads the link back
as the role it stands for: this file is also a Sphinx extension (``local_extensions`` in
``_config.yml``) that turns each such link into ``{cite:p}`keys``` when a page is read, so the
book prints and links its citations as before; a link whose text is not the one this tool writes
is a build warning (an error in the ``-W`` build).  Keys carry the page's ``:keyprefix:`` (the
page's ``{bibliography}`` directive), as the roles did.

The texts are written from the bibliography, never by hand:

    python tools/lab_cites.py            # citation roles -> links, stale texts rewritten
    python tools/lab_cites.py --check    # change nothing; exit 1 and list what is stale
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
BIB = BOOK / "references.bib"

#: the roles the tool writes as links: ``{cite}`` and ``{cite:p}`` (parenthetical), ``{cite:t}``
ROLE = re.compile(r"\{cite(?::([pt]))?\}`([^`]+)`")
#: a citation link: its text (brackets inside balanced, one level), its kind, its keys
LINK = re.compile(r"\[((?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]\(#cite:([pt]):([^\s(),]+(?:,[^\s(),]+)*)\)")
KEYPREFIX = re.compile(r"^[ \t\"]*:keyprefix:[ \t]*([^\s\"\\]+)", re.M)


#: the start of a BibTeX entry and its key (``@string``, ``@preamble``, ``@comment`` are no entries)
ENTRY = re.compile(r"^[ \t]*@[ \t]*(?!(?:string|preamble|comment)\b)\w+[ \t]*[{(][ \t]*([^,\s{}()]+)",
                   re.M | re.I)


class BibError(ValueError):
    """A bibliography that cannot be read: the message names the file and the entry."""


def parse_bib(path: Path = BIB):
    """The entries of the BibTeX file ``path`` (pybtex's ``BibliographyData``).

    A file that cannot be read or parsed is a ``BibError`` naming the file, the entry that
    could not be read (the first whose key pybtex had not reached) and pybtex's reason.
    """
    from pybtex.database.input.bibtex import Parser
    from pybtex.exceptions import PybtexError

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BibError(f"{path}: cannot read the bibliography ({exc.strerror or exc})") from None
    parser = Parser()
    try:
        return parser.parse_string(text)
    except PybtexError as exc:
        # pybtex reads the entries in order: the one it failed on follows those it has read
        starts = list(ENTRY.finditer(text))
        done = len(parser.data.entries)
        failed = starts[done] if done < len(starts) else None
        where = (f"entry {failed.group(1)!r} (line {text.count(chr(10), 0, failed.start()) + 1})"
                 if failed else "the text after the last entry")
        raise BibError(f"{path}: {where} is not valid BibTeX: {exc}") from None


def read_bib(path: Path = BIB, et_al: str = "*et al.*") -> dict[str, tuple[str, str]]:
    """Map each BibTeX key to its authors and year as the author-year style cites them.

    Authors: the last name of a sole author, "A and B" for two, "A *et al.*" for three or more
    (LaTeX accents decoded; ``et_al`` is the words after the first name, Markdown by default);
    the year as written.  An entry without an author or a year is an error: the book could not
    cite it by author and year either.  So is a file that is not valid BibTeX (``BibError``).
    """
    from pybtex.richtext import Text

    def last(person) -> str:
        return Text.from_latex(" ".join(person.prelast_names + person.last_names)).render_as("text")

    data = parse_bib(path)
    out: dict[str, tuple[str, str]] = {}
    for key, entry in data.entries.items():
        persons = entry.persons.get("author", [])
        year = entry.fields.get("year", "")
        if not persons or not year:
            raise BibError(f"{path}: entry {key!r} needs an author and a year to be cited")
        names = [last(p) for p in persons]
        who = (names[0] if len(names) == 1 else
               f"{names[0]} and {names[1]}" if len(names) == 2 else f"{names[0]} {et_al}")
        out[key] = (who, str(year))
    return out


def keyprefix(source: str, where: str = "page") -> str:
    """The ``:keyprefix:`` of the page's bibliography ('' if none); two different is an error."""
    found = set(KEYPREFIX.findall(source))
    if len(found) > 1:
        raise ValueError(f"{where}: bibliographies with different keyprefixes {sorted(found)}")
    return found.pop() if found else ""


def cite_text(kind: str, keys: list[str], bib: dict, prefix: str = "", where: str = "page") -> str:
    """What the book prints for a citation of ``keys``, in Markdown.

    ``kind`` "p": ``[A, year, B, year]``; ``kind`` "t": ``A [year], B [year]``.  Each key is the
    page's ``prefix`` followed by a key of ``bib``.
    """
    if kind not in ("p", "t"):
        raise ValueError(f"kind={kind!r}: expected 'p' or 't'")
    parts = []
    for key in keys:
        bare = key[len(prefix):] if key.startswith(prefix) else None
        if bare not in bib:
            raise KeyError(f"{where}: citation key {key!r} is not {prefix!r} followed by a key "
                           f"of the bibliography")
        parts.append(bib[bare])
    if kind == "p":
        return "[" + ", ".join(f"{who}, {year}" for who, year in parts) + "]"
    return ", ".join(f"{who} [{year}]" for who, year in parts)


def _keys(content: str) -> list[str]:
    return [k.strip() for k in content.split(",") if k.strip()]


def rewrite(text: str, bib: dict, prefix: str = "", where: str = "page") -> tuple[str, list[str]]:
    """``text`` with every citation a link with the book's text; also the list of changes."""
    changes: list[str] = []

    def role(m: re.Match) -> str:
        kind, keys = m.group(1) or "p", _keys(m.group(2))
        new = f"[{cite_text(kind, keys, bib, prefix, where)}](#cite:{kind}:{','.join(keys)})"
        changes.append(f"{m.group(0)} -> {new}")
        return new

    def link(m: re.Match) -> str:
        kind, keys = m.group(2), m.group(3).split(",")
        new = f"[{cite_text(kind, keys, bib, prefix, where)}](#cite:{kind}:{','.join(keys)})"
        if new != m.group(0):
            changes.append(f"{m.group(0)} -> {new}")
        return new

    bad = malformed(text)
    if bad:
        raise ValueError(f"{where}: citation links the book cannot read (write each on one line, "
                         f"[text](#cite:p:key) or [text](#cite:t:key1,key2)): {bad}")
    text = LINK.sub(link, text)
    text = ROLE.sub(role, text)
    other = re.findall(r"\{(?:foot)?cite[\w:]*\}`[^`]*`", text)
    if other:
        raise ValueError(f"{where}: citation roles JupyterLab would show as keys and this tool "
                         f"does not write (use {{cite:p}} or {{cite:t}}): {other}")
    return text, changes


def malformed(text: str) -> list[str]:
    """Links to ``#cite:`` that are not citation links this tool reads (e.g. broken across
    lines): the book would take them for references to a missing label."""
    rest = LINK.sub("", text)
    return [m.group(0) for m in re.finditer(r"[^\n]{0,40}\(#cite:[^)\n]*\)?", rest)]


def to_roles(text: str) -> str:
    """The citation links of ``text`` as the roles they stand for: what the book parses."""
    return LINK.sub(lambda m: f"{{cite:{m.group(2)}}}`{m.group(3)}`", text)


def pages(book: Path = BOOK) -> list[Path]:
    """The book's pages that may cite: its notebooks and Markdown files, one folder down too."""
    return sorted(p for ext in ("ipynb", "md") for pattern in (f"*.{ext}", f"*/*.{ext}")
                  for p in Path(book).glob(pattern) if not p.name.startswith("."))


def rewrite_page(path: Path, bib: dict, write: bool = True) -> list[str]:
    """Rewrite one page's citations (a notebook's markdown cells), atomically; the changes."""
    raw = Path(path).read_text(encoding="utf-8")
    where = Path(path).name
    prefix = keyprefix(raw, where)
    if path.suffix == ".ipynb":
        nb = json.loads(raw)
        changes: list[str] = []
        for cell in nb["cells"]:
            if cell["cell_type"] != "markdown":
                continue
            new, done = rewrite("".join(cell["source"]), bib, prefix, where)
            if done:
                changes += done
                cell["source"] = new.splitlines(keepends=True)
        out = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
    else:
        out, changes = rewrite(raw, bib, prefix, where)
    if changes and write:
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(out, encoding="utf-8")
        os.replace(tmp, path)
    return changes


def markdown(source: str) -> str:
    """The Markdown of a page's source: a notebook's markdown cells, or the text itself."""
    try:
        nb = json.loads(source)
    except ValueError:
        return source
    if not isinstance(nb, dict) or "cells" not in nb:
        return source
    return "\n\n".join("".join(c.get("source", "")) for c in nb["cells"]
                       if c.get("cell_type") == "markdown")


def stale_links(source: str, bib: dict, where: str = "page") -> list[str]:
    """What in a page's source (Markdown or a notebook's JSON) the book would not cite as the
    link reads: links whose text is not the book's, links it cannot read."""
    text = markdown(source)
    prefix = keyprefix(text, where)
    wrong = malformed(text)
    for m in LINK.finditer(text):
        kind, keys = m.group(2), m.group(3).split(",")
        if m.group(1) != cite_text(kind, keys, bib, prefix, where):
            wrong.append(m.group(0))
    return wrong


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bib", type=Path, default=BIB, help="the bibliography (default: %(default)s)")
    ap.add_argument("--book", type=Path, default=BOOK, help="the pages (default: %(default)s)")
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 when stale")
    args = ap.parse_args(argv)
    try:
        bib = read_bib(args.bib)
        stale = 0
        for path in pages(args.book):
            changes = rewrite_page(path, bib, write=not args.check)
            stale += len(changes)
            for change in changes:
                print(f"{path.relative_to(args.book)}: {change}")
    except (OSError, ValueError, KeyError) as exc:
        print(f"lab_cites: {exc}", file=sys.stderr)
        return 2
    verb = "stale" if args.check else "rewritten"
    print(f"{stale} citations {verb}")
    return 1 if (args.check and stale) else 0


# ----------------------------------------------------------------------------------------------
# the Sphinx extension


def _on_source_read(app, docname, source):
    """Each citation link of a page becomes its role before the page is parsed."""
    from sphinx.util import logging

    text = source[0]
    if "(#cite:" not in text:
        return
    bibfiles = [Path(app.srcdir) / f for f in app.config.bibtex_bibfiles]
    bib: dict = {}
    for f in bibfiles:
        bib.update(read_bib(f))
    try:
        wrong = stale_links(text, bib, docname)
    except (KeyError, ValueError) as exc:
        wrong = [str(exc)]
    for w in wrong:
        logging.getLogger(__name__).warning(
            f"citation not written as the book prints it: {w} (run python tools/lab_cites.py)",
            location=docname)
    source[0] = to_roles(text)


def setup(app):
    app.connect("source-read", _on_source_read)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    sys.exit(main())
