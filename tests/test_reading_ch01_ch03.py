"""Chapters 1 to 3 and the primers read picture first, with their code folded.

Checked on the sources: a chapter shows its picture (the player or the explorer of its central
run) and a "Key idea" box before any definition, lemma or theorem, with its imports folded; at
most ``MAX_VISIBLE`` lines of code are shown outside the exercise stubs; nothing prints sizes in
bytes; a "predict first" prompt is a Predict widget, not a request to write something down.  A
primer shows a picture before its first section.
"""
import json
import re
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[1] / "book"
CHAPTERS = ["ch01_particles", "ch02_metastability", "ch03_conditional_dirac"]
PRIMERS = ["attention", "laws", "sphere_gradients"]
MAX_VISIBLE = 60
FOLDED = {"hide-input", "remove-input", "remove-cell"}
PICTURE = re.compile(r"\b(TrajectoryPlayer|Explorer|TwinView|figs\.\w+)\(")
THEORY = re.compile(r"\{prf:(definition|lemma|theorem|proposition|corollary|remark)\}")


def cells(name):
    return json.loads((BOOK / f"{name}.ipynb").read_text(encoding="utf-8"))["cells"]


def source(cell):
    return "".join(cell["source"])


def tags(cell):
    return set(cell.get("metadata", {}).get("tags", []))


def visible_code_lines(nb):
    return sum(len(source(c).rstrip("\n").split("\n")) for c in nb
               if c["cell_type"] == "code" and not tags(c) & (FOLDED | {"exercise-stub"}))


def first(nb, test):
    return next((i for i, c in enumerate(nb) if test(c)), len(nb))


@pytest.mark.parametrize("name", CHAPTERS)
def test_at_most_60_lines_of_code_are_shown(name):
    shown = visible_code_lines(cells(name))
    assert shown <= MAX_VISIBLE, f"{name} shows {shown} lines of code, more than {MAX_VISIBLE}"


@pytest.mark.parametrize("name", CHAPTERS)
def test_the_picture_and_the_key_idea_come_before_the_theory(name):
    nb = cells(name)
    theory = first(nb, lambda c: c["cell_type"] == "markdown" and THEORY.search(source(c)))
    picture = first(nb, lambda c: c["cell_type"] == "code" and not tags(c) & FOLDED
                    and PICTURE.search(source(c)))
    key = first(nb, lambda c: c["cell_type"] == "markdown"
                and "{admonition} Key idea" in source(c))
    assert picture < key < theory, (
        f"{name}: picture at cell {picture}, key idea at {key}, first theory block at {theory}")
    assert picture <= 5, f"{name}: the picture is cell {picture}, not among the first cells"


@pytest.mark.parametrize("name", CHAPTERS)
def test_the_imports_are_folded(name):
    nb = cells(name)
    imports = [i for i, c in enumerate(nb) if c["cell_type"] == "code"
               and re.search(r"^import usaav_edu as ue", source(c), re.M)]
    assert imports and all(tags(nb[i]) & FOLDED for i in imports), (
        f"{name}: the import cells {imports} are not folded")


@pytest.mark.parametrize("name", CHAPTERS)
def test_no_cell_prints_sizes_in_bytes(name):
    bad = [i for i, c in enumerate(cells(name)) if c["cell_type"] == "code"
           and re.search(r"print\([^)]*(bytes|embedded_state_bytes)", source(c), re.S)]
    assert not bad, f"{name}: cells {bad} print sizes in bytes"


@pytest.mark.parametrize("name", CHAPTERS)
def test_predictions_are_widgets(name):
    nb = cells(name)
    asks = [i for i, c in enumerate(nb) if c["cell_type"] == "markdown"
            and re.search(r"write (your|the) (answer|guess)\s+down", source(c), re.I)]
    assert not asks, f"{name}: cells {asks} ask the reader to write a prediction down"
    assert any("Predict(" in source(c) for c in nb if c["cell_type"] == "code"), (
        f"{name}: no Predict widget")


@pytest.mark.parametrize("name", PRIMERS)
def test_a_primer_shows_a_picture_before_its_first_section(name):
    nb = cells(f"primers/{name}")
    section = first(nb, lambda c: c["cell_type"] == "markdown"
                    and re.search(r"^## ", source(c), re.M))
    picture = first(nb, lambda c: c["cell_type"] == "code" and PICTURE.search(source(c)))
    assert picture < section, f"primer {name}: picture at cell {picture}, first section {section}"
