"""Chapters 4 to 6 (RoPE, generalized RoPE, prefix gauges) read picture first, code folded.

Checked on the notebook sources:

* the chapter opens with its picture and a "Key idea" box before its first section;
* at most ``MAX_VISIBLE`` lines of code are shown (code cells not tagged ``hide-input``,
  ``remove-input`` or ``remove-cell``, exercise cells aside);
* no cell prints the page's widget sizes (``embedded_state_bytes``, "embedded state ...");
* the checks are claims (``ue.checks.claim``), not bare ``assert`` statements;
* the "predict first" prompt is a ``ue.widgets.Predict`` cell, not a box of text;
* each explorer's grid has at least ``MIN_VALUES`` values, in increasing order.
"""
import ast
import json
import re
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[1] / "book"
CHAPTERS = ["ch04_rope", "ch05_generalized_rope", "ch06_prefix_gauges"]
MAX_VISIBLE = 60
MIN_VALUES = 8
HIDDEN = {"hide-input", "remove-input", "remove-cell"}
EXERCISE = {"exercise-stub", "exercise-check"}
#: the variable holding each explorer's values, per chapter
EXPLORER_GRIDS = {"ch04_rope": ["omegas_o"], "ch06_prefix_gauges": ["Ks"]}


def cells(chapter):
    nb = json.loads((BOOK / f"{chapter}.ipynb").read_text(encoding="utf-8"))
    return [(c["cell_type"], set(c.get("metadata", {}).get("tags", [])), "".join(c["source"]))
            for c in nb["cells"]]


def visible_code_lines(chapter) -> int:
    return sum(len(s.split("\n")) for kind, tags, s in cells(chapter)
               if kind == "code" and not tags & (HIDDEN | EXERCISE))


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_chapter_opens_with_its_picture_and_its_key_idea(chapter):
    found = cells(chapter)
    first_section = next(k for k, (kind, _, s) in enumerate(found)
                         if kind == "markdown" and re.search(r"^## ", s, re.M))
    head = found[:first_section + 1]
    pictures = [k for k, (kind, _, s) in enumerate(head)
                if kind == "code" and re.search(r"^figs\.\w+\(|^\w+$", s.strip().split("\n")[-1])]
    keys = [k for k, (kind, _, s) in enumerate(head)
            if kind == "markdown" and re.search(r"```\{admonition\} Key idea", s)]
    assert pictures, f"{chapter}: no picture before the first section"
    assert keys and keys[0] > pictures[0], f"{chapter}: no Key idea box after the picture"
    # the title's lead is short: 2 to 4 sentences before the first code cell
    lead = re.sub(r"\{cite\}`[^`]*`|\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(#cite:[^)]*\)", "",
                  found[1][2].split("\n", 1)[1])
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", lead.strip()) if s]
    assert 2 <= len(sentences) <= 4, f"{chapter}: the lead has {len(sentences)} sentences"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_at_most_60_lines_of_code_are_shown(chapter):
    n = visible_code_lines(chapter)
    assert n <= MAX_VISIBLE, f"{chapter}: {n} lines of visible code, more than {MAX_VISIBLE}"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_no_cell_prints_widget_sizes(chapter):
    bad = [k for k, (kind, _, s) in enumerate(cells(chapter))
           if kind == "code" and re.search(r"embedded_state_bytes|embedded state", s)]
    assert not bad, f"{chapter}: cells {bad} print the page's widget sizes"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_checks_are_claims_not_asserts(chapter):
    found = cells(chapter)
    asserts = [k for k, (kind, tags, s) in enumerate(found) if kind == "code"
               and "usaav-edu-setup" not in tags
               and any(isinstance(n, ast.Assert) for n in ast.walk(ast.parse(s)))]
    claims = [k for k, (kind, tags, s) in enumerate(found)
              if kind == "code" and "check" in tags and "ue.checks.claim(" in s]
    assert not asserts, f"{chapter}: cells {asserts} still check with assert"
    assert claims, f"{chapter}: no check cell calls ue.checks.claim"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_predict_first_is_a_prediction_widget(chapter):
    found = cells(chapter)
    boxes = [k for k, (kind, _, s) in enumerate(found)
             if kind == "markdown" and re.search(r"\{admonition\} Predict first", s)]
    widgets = [k for k, (kind, _, s) in enumerate(found)
               if kind == "code" and "ue.widgets.Predict(" in s]
    assert not boxes, f"{chapter}: cells {boxes} are 'predict first' boxes of text"
    assert widgets, f"{chapter}: no ue.widgets.Predict cell"


@pytest.mark.parametrize("chapter", sorted(EXPLORER_GRIDS))
def test_explorers_offer_at_least_8_increasing_values(chapter):
    values = {}
    for kind, _, s in cells(chapter):
        if kind != "code":
            continue
        for node in ast.walk(ast.parse(s)):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id in EXPLORER_GRIDS[chapter]:
                        values[target.id] = ast.literal_eval(node.value)
                    elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                        for t, v in zip(target.elts, node.value.elts, strict=True):
                            if isinstance(t, ast.Name) and t.id in EXPLORER_GRIDS[chapter]:
                                values[t.id] = ast.literal_eval(v)
    assert sorted(values) == sorted(EXPLORER_GRIDS[chapter]), f"{chapter}: grids {values}"
    for name, grid in values.items():
        assert len(grid) >= MIN_VALUES, f"{chapter}: {name} has {len(grid)} values"
        assert list(grid) == sorted(set(grid)), f"{chapter}: {name} = {grid} does not increase"
