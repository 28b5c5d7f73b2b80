"""tools/lab_refs.py: references spelt out with the numbers the built book prints."""
from __future__ import annotations

import json

import pytest

from tools import lab_refs

LABELS = {"ch4-thm-conjugacy": "Theorem 4.1", "ch4-ex-projection": "Exercise 4.1",
          "ch4-sec-metastability": "Section 4.5"}
CHAPTERS = {"ch02_metastability": "Chapter 2", "ch04_rope": "Chapter 4"}


def spelt(text):
    return lab_refs.rewrite(text, LABELS, CHAPTERS)[0]


def test_a_bare_label_gets_the_books_number():
    assert spelt("By {prf:ref}`ch4-thm-conjugacy`, x") == \
        "By {prf:ref}`Theorem 4.1 <ch4-thm-conjugacy>`, x"
    assert spelt("({ref}`ch4-ex-projection`)") == "({ref}`Exercise 4.1 <ch4-ex-projection>`)"
    assert spelt("see {ref}`ch4-sec-metastability`") == \
        "see {ref}`Section 4.5 <ch4-sec-metastability>`"


def test_a_stale_number_is_corrected_and_reported():
    text, changes = lab_refs.rewrite("{prf:ref}`Theorem 5 <ch4-thm-conjugacy>`", LABELS, CHAPTERS)
    assert text == "{prf:ref}`Theorem 4.1 <ch4-thm-conjugacy>`"
    assert len(changes) == 1 and "Theorem 5" in changes[0]


def test_a_current_reference_is_not_a_change():
    text = "{prf:ref}`Theorem 4.1 <ch4-thm-conjugacy>` and [Chapter 4](ch04_rope.ipynb)"
    assert lab_refs.rewrite(text, LABELS, CHAPTERS) == (text, [])


def test_words_of_its_own_are_kept():
    text = "{prf:ref}`the conjugacy theorem <ch4-thm-conjugacy>`"
    assert spelt(text) == text


def test_unknown_labels_and_pages_are_left_alone():
    text = "{prf:ref}`ch9-thm-none` {doc}`seminar/index` {ref}`Running <running-notebooks>`"
    assert spelt(text) == text


def test_chapters_become_links_that_open_the_notebook():
    assert spelt("the lifetimes of {doc}`ch02_metastability` carry over") == \
        "the lifetimes of [Chapter 2](ch02_metastability.ipynb) carry over"
    assert spelt("{doc}`the RoPE chapter <ch04_rope>`") == "[Chapter 4](ch04_rope.ipynb)"
    assert spelt("[Chapter 3](ch04_rope.ipynb)") == "[Chapter 4](ch04_rope.ipynb)"


PAGE = """<h1><span class="section-number">4. </span>RoPE<a class="headerlink" href="#r">#</a></h1>
<div class="proof theorem admonition" id="ch4-thm-conjugacy">
<p class="admonition-title"><span class="caption-number">Theorem 4.1 </span> (RoPE is USA)</p>
<section id="metastability"> <span id="ch4-sec-metastability"></span><h2><span class="section-number">4.5. </span>Metastability</h2>
<div class="exercise admonition" id="ch4-ex-projection">

<p class="admonition-title"><span class="caption-number">Exercise 4.1 </span> (Rotations)</p>
"""


def test_targets_are_read_from_the_built_pages(tmp_path):
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "ch04_rope.html").write_text(PAGE, encoding="utf-8")
    labels, chapters = lab_refs.targets(tmp_path)
    assert labels == LABELS
    assert chapters == {"ch04_rope": "Chapter 4"}


def test_no_built_book_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="make book"):
        lab_refs.targets(tmp_path)


def test_notebooks_are_rewritten_in_place_and_only_their_markdown(tmp_path):
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["{doc}`ch04_rope`\n"]},
                    {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                     "source": ["# {doc}`ch04_rope`\n"]}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "ch08.ipynb"
    path.write_text(json.dumps(nb, indent=1) + "\n", encoding="utf-8")
    assert lab_refs.rewrite_notebook(path, LABELS, CHAPTERS, write=False, book=tmp_path)
    assert json.loads(path.read_text())["cells"][0]["source"] == ["{doc}`ch04_rope`\n"]
    lab_refs.rewrite_notebook(path, LABELS, CHAPTERS, book=tmp_path)
    cells = json.loads(path.read_text())["cells"]
    assert cells[0]["source"] == ["[Chapter 4](ch04_rope.ipynb)\n"]
    assert cells[1]["source"] == ["# {doc}`ch04_rope`\n"]
    assert [p.name for p in tmp_path.iterdir()] == ["ch08.ipynb"]


def test_a_notebook_one_folder_down_links_up():
    assert lab_refs.rewrite("{doc}`ch04_rope`", LABELS, CHAPTERS, up="../")[0] == \
        "[Chapter 4](../ch04_rope.ipynb)"
    assert lab_refs.rewrite("[Chapter 3](../ch04_rope.ipynb)", LABELS, CHAPTERS, up="../")[0] == \
        "[Chapter 4](../ch04_rope.ipynb)"
