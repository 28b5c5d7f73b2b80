"""tools/built_book.py: the one reader of what the built book shows (numbers, outputs)."""
from __future__ import annotations

import json

from tools import built_book, lab_refs, slides


def _notebook(outputs):
    return {"cells": [{"cell_type": "markdown", "source": "# T", "metadata": {}},
                      {"cell_type": "code", "source": "1", "metadata": {}, "outputs": outputs,
                       "execution_count": 1 if outputs else None}],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def test_executed_cells_come_from_the_first_build_whose_copy_has_outputs(tmp_path):
    shown = [{"output_type": "stream", "name": "stdout", "text": "2\n"}]
    for folder, outputs in (("cached", []), ("full", shown), ("later", shown + shown)):
        (tmp_path / folder / "book").mkdir(parents=True)
        (tmp_path / folder / "book" / "ch.ipynb").write_text(json.dumps(_notebook(outputs)))
    folders = [tmp_path / "missing", tmp_path / "cached", tmp_path / "full", tmp_path / "later"]
    cells = built_book.executed_cells("book/ch.ipynb", folders)
    assert [c["outputs"] for c in cells] == [shown]
    assert built_book.executed_cells("book/ch.ipynb", folders[:2]) == []


def test_the_decks_and_the_lab_references_read_the_same_numbers(tmp_path):
    book = tmp_path / "site" / "book"
    book.mkdir(parents=True)
    (book / "ch04_rope.html").write_text(
        '<html><body><article><h1><span class="section-number">4. </span>RoPE</h1>'
        '<span id="ch4-sec-bound"></span><h2><span class="section-number">4.5. </span>A bound</h2>'
        '<div class="admonition theorem" id="ch4-thm-conjugacy"><p class="admonition-title">'
        '<span class="caption-number">Theorem 4.2 </span> (Conjugacy)</p></div>'
        '<figure id="ch4-fig-x"><figcaption><span class="caption-number">Fig. 4.1 </span>'
        '<span class="caption-text">A picture</span></figcaption></figure>'
        '</article></body></html>', encoding="utf-8")
    refs = built_book.Refs.from_site(tmp_path / "site")
    assert slides.Refs is built_book.Refs
    assert refs.number["ch4-thm-conjugacy"] == "Theorem 4.2" and refs.blocks == {"ch4-thm-conjugacy"}
    assert refs.section == {"ch4-sec-bound": "4.5"} and refs.chapter == {"book/ch04_rope": "4"}
    labels, chapters = lab_refs.targets(tmp_path / "site")
    assert labels == {"ch4-thm-conjugacy": "Theorem 4.2", "ch4-sec-bound": "Section 4.5"}
    assert chapters == {"ch04_rope": "Chapter 4"}
