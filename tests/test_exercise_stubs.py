"""The "complete the function" exercises run where they stand and tell right from wrong.

Each is a code cell tagged ``exercise-stub`` (the function, whose body raises
``NotImplementedError`` with what to write) followed at once by a cell tagged
``exercise-check`` that calls :func:`usaav_edu.exercises.check`.  Both cells stand on their own:
they use only ``np`` (NumPy), ``ue`` (``usaav_edu``) and what they define.  As shipped the check
says "not done yet"; with the stub's body replaced by ``return 0`` it must say "wrong".
"""
import ast
import contextlib
import io
import json
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[1] / "book"
CHAPTERS = sorted(BOOK.glob("ch[0-9][0-9]_*.ipynb"))
PRELUDE = "import numpy as np\nimport usaav_edu as ue\n"


def exercise_pairs(path):
    """(stub source, check source) for every exercise-stub cell of the notebook ``path``."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    pairs = []
    for k, cell in enumerate(cells):
        if "exercise-stub" in cell.get("metadata", {}).get("tags", []):
            assert cell["cell_type"] == "code", f"{path.name} cell {k}: an exercise stub is a code cell"
            nxt = cells[k + 1] if k + 1 < len(cells) else {}
            assert "exercise-check" in nxt.get("metadata", {}).get("tags", []), (
                f"{path.name} cell {k}: the stub must be followed at once by its exercise-check cell")
            pairs.append(("".join(cell["source"]), "".join(nxt["source"])))
    return pairs


def answered_with_zero(stub):
    """The stub with the body of every function that raises NotImplementedError made ``return 0``."""
    tree = ast.parse(stub)
    changed = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(
                isinstance(s, ast.Raise) and "NotImplementedError" in ast.unparse(s) for s in node.body):
            node.body = [ast.Return(ast.Constant(0))]
            changed += 1
    assert changed, "the stub defines no function that raises NotImplementedError"
    return ast.unparse(ast.fix_missing_locations(tree))


def run(stub, check):
    out = io.StringIO()
    scope = {}
    with contextlib.redirect_stdout(out):
        exec(compile(PRELUDE + stub, "<stub>", "exec"), scope)
        exec(compile(check, "<check>", "exec"), scope)
    return out.getvalue()


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_has_a_runnable_exercise(path):
    pairs = exercise_pairs(path)
    assert pairs, f"{path.name}: no exercise-stub cell"
    for stub, _ in pairs:
        assert "raise NotImplementedError(" in stub and 'NotImplementedError()' not in stub, (
            f"{path.name}: the stub's NotImplementedError must say what to write")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_as_shipped_the_check_says_not_done_yet(path):
    for stub, check in exercise_pairs(path):
        out = run(stub, check)
        assert out.startswith("not done yet:"), f"{path.name}: the shipped check printed {out!r}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_a_wrong_answer_is_reported_as_wrong(path):
    for stub, check in exercise_pairs(path):
        out = run(answered_with_zero(stub), check)
        assert out.startswith("wrong:"), f"{path.name}: `return 0` was reported as {out!r}"
