"""The book's sources hold no control characters.

A control character in a source is invisible in an editor and breaks the page: ``"\\beta"``
written in a Python string without ``r`` becomes a backspace followed by ``eta``, which MathJax
shows as "Math input error".  Every source of the book (its pages, the notebooks' cell sources,
the bibliography, the table of contents, the configurations and the README) may hold a newline,
a tab or a carriage return, and no other character of Unicode's category Cc (U+0000 to U+001F,
U+007F to U+009F).  ``tests/browser/test_console.py`` checks the built pages for MathJax errors.
"""
from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
ALLOWED = {"\n", "\t", "\r"}
TEXT_SOURCES = sorted([*BOOK.rglob("*.md"), *BOOK.rglob("*.bib"), ROOT / "_toc.yml",
                       *ROOT.glob("_config*.yml"), ROOT / "README.md"])
NOTEBOOKS = sorted(BOOK.rglob("*.ipynb"))


def control_characters(text: str) -> list[tuple[int, int, str]]:
    """(line, column, U+XXXX) of every control character in ``text`` other than ``ALLOWED``."""
    found = []
    for number, line in enumerate(re.split(r"\r\n|\n|\r", text), start=1):
        for column, ch in enumerate(line, start=1):
            if ch not in ALLOWED and unicodedata.category(ch) == "Cc":
                found.append((number, column, f"U+{ord(ch):04X}"))
    return found


def test_control_characters_are_found():
    assert control_characters("lifetimes in $\beta$\nand $\\beta$\tok\r\n") == [(1, 15, "U+0008")]
    assert control_characters("a\x00b\x1b[0m\x7f\x85") == [(1, 2, "U+0000"), (1, 4, "U+001B"),
                                                          (1, 8, "U+007F"), (1, 9, "U+0085")]
    assert control_characters("plain text, ümlauts, \u2013 dashes\n") == []


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", TEXT_SOURCES, ids=_name)
def test_no_source_holds_a_control_character(path):
    found = control_characters(path.read_text(encoding="utf-8"))
    assert not found, f"{_name(path)}: control characters (line, column, code) {found}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_name)
def test_no_notebook_cell_holds_a_control_character(path):
    # the cells' sources as Jupyter reads them: JSON escapes such as \u0008 decoded
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    found = {}
    for i, cell in enumerate(cells):
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        if hits := control_characters(source):
            found[f"cell {i} ({cell['cell_type']})"] = hits
    assert not found, f"{_name(path)}: control characters (line, column, code) {found}"
