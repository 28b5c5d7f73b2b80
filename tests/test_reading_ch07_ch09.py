"""Chapters 7 to 10, the large-n page and the widgets page read picture first, with code folded.

Checked on the sources (the notebooks are saved without outputs):

* at most 60 lines of code shown per page outside the exercises: code cells not tagged
  ``hide-input``, ``remove-input``, ``remove-cell``, ``exercise-stub`` or ``exercise-check``;
* no cell prints the size of the embedded widget state (it belongs to the tests);
* a page opens with its title and a short lead, then its picture (a code cell that draws a
  player, explorer or figure) and a "Key idea" box, before any definition, theorem or section;
  the imports are folded;
* the "predict first" prompt of a chapter is a ``Predict`` widget, not a box asking the reader
  to write the answer down;
* chapter 7's explorer: at least eight frequencies, increasing, on a slider named after the
  parameter it moves.
"""
import ast
import json
import re
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[1] / "book"
CHAPTERS = ["ch07_spectral", "ch08_experiments", "ch09_meanfield", "ch10_beyond"]
PAGES = CHAPTERS + ["large_n", "widgets"]
FOLDED = {"hide-input", "remove-input", "remove-cell", "exercise-stub", "exercise-check"}
MAX_SHOWN = 60
PICTURE_CALLS = re.compile(r"\b(TrajectoryPlayer|TwinView|Explorer|DensityView|SphereView|"
                           r"player_with_plane|plt\.show)\(")


def cells(stem):
    return json.loads((BOOK / f"{stem}.ipynb").read_text(encoding="utf-8"))["cells"]


def text(cell):
    return "".join(cell["source"])


def tags(cell):
    return set(cell.get("metadata", {}).get("tags", []))


def shown_code_lines(stem):
    return sum(len(text(c).splitlines()) for c in cells(stem)
               if c["cell_type"] == "code" and not tags(c) & FOLDED)


@pytest.mark.parametrize("stem", PAGES)
def test_at_most_60_lines_of_code_are_shown(stem):
    assert shown_code_lines(stem) <= MAX_SHOWN, (
        f"{stem}: {shown_code_lines(stem)} lines of code shown, more than {MAX_SHOWN}")


@pytest.mark.parametrize("stem", PAGES)
def test_no_cell_prints_widget_sizes(stem):
    for k, c in enumerate(cells(stem)):
        if c["cell_type"] == "code":
            assert "embedded_state_bytes" not in text(c), (
                f"{stem} cell {k} measures a widget's size: that belongs to the tests")
            for call in ast.walk(ast.parse(text(c))):
                if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "print":
                    shown = ast.unparse(call)
                    assert "embedded_state_bytes" not in shown and "bytes" not in shown, (
                        f"{stem} cell {k} prints a size: {shown[:80]}")


@pytest.mark.parametrize("stem", PAGES)
def test_the_chapter_opens_with_its_picture_and_key_idea(stem):
    cs = cells(stem)
    body = [c for c in cs if "remove-cell" not in tags(c)]
    assert body[0]["cell_type"] == "markdown" and text(body[0]).startswith("# ")
    lead = text(body[0]).split("\n", 1)[1]
    assert "{prf:" not in lead and len(lead.split()) < 120, f"{stem}: the lead is long"
    first_picture = next(k for k, c in enumerate(body)
                         if c["cell_type"] == "code" and PICTURE_CALLS.search(text(c)))
    key_idea = next(k for k, c in enumerate(body)
                    if c["cell_type"] == "markdown" and "{admonition} Key idea" in text(c))
    first_block = next(k for k, c in enumerate(body)
                       if c["cell_type"] == "markdown" and re.search(
                           r"\{prf:(definition|theorem|lemma|proposition)\}|^## ", text(c),
                           re.MULTILINE))
    assert first_picture < key_idea < first_block, (
        f"{stem}: picture at cell {first_picture}, key idea at {key_idea}, first "
        f"definition or theorem at {first_block}")
    assert first_picture <= 6, f"{stem}: the picture comes {first_picture} cells down"
    for c in body[:first_picture]:
        if c["cell_type"] == "code" and "import" in text(c):
            assert tags(c) & {"hide-input", "remove-input"}, f"{stem}: imports shown first"


@pytest.mark.parametrize("stem", CHAPTERS)
def test_predict_first_takes_the_prediction(stem):
    cs = cells(stem)
    assert not any("write your answer down" in text(c).lower() or
                   "{admonition} Predict first" in text(c) for c in cs)
    assert any(c["cell_type"] == "code" and "Predict(" in text(c) for c in cs), (
        f"{stem}: no Predict widget")


def test_chapter_7_explorer_moves_omega_in_increasing_order():
    source = "\n".join(text(c) for c in cells("ch07_spectral") if c["cell_type"] == "code")
    tree = ast.parse(source)
    values = next(ast.literal_eval(node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "")
                  == "omegas_ex")
    assert len(values) >= 8 and list(values) == sorted(values) and len(set(values)) == len(values)
    call = next(node for node in ast.walk(tree) if isinstance(node, ast.Call)
                and getattr(node.func, "id", "") == "Explorer")
    label = ast.literal_eval(call.args[1])
    assert label in ("ω", "omega"), f"the explorer's slider is labelled {label!r}"
    runs = ast.unparse(next(node.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
                            and getattr(node.targets[0], "id", "") == "runs_ex"))
    # the slider moves the frequency of the cosine bias only: no decay rate hides behind it
    assert "'distance'" not in runs and "'cosine'" in runs
