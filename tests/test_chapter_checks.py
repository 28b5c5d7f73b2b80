"""Every check in the book explains itself when a reader changes the parameters.

Each chapter has one code cell tagged ``parameters`` that holds the main parameters of its first
experiment.  The test runs the chapter with a second reasonable setting placed right after that cell
(as a reader would edit it) and requires every check to pass or to fail with an ``AssertionError``
whose message states the claim and the measured value.  Any other error, or a bare ``assert``,
fails the test.  A static pass over the chapters requires every ``assert`` to carry a message
that formats at least one value.
"""
import ast
import re
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager
from nbclient import NotebookClient

BOOK = Path(__file__).resolve().parents[1] / "book"

# a second setting per chapter: another seed and a nearby beta or n, chosen not to lengthen the runs much;
# ch01 at beta = 3, n = 64 has frames too coarse for the trapezoid rule of its energy identity
PERTURBED = {
    "ch01_particles": "n, beta, seed = 64, 3.0, 1",
    "ch02_metastability": "beta3, seed3, seeds = 8.0, 1, (3, 4, 5)",
    "ch03_conditional_dirac": "n_pos, beta, seed = 12, 1.5, 5",
    "ch04_rope": "n, beta, seed = 48, 1.5, 2",
    "ch05_generalized_rope": "n, beta, seed = 48, 1.5, 3",
    "ch06_prefix_gauges": "n, beta, K, seed = 80, 1.5, 3, 2",
    "ch07_spectral": "n, beta, lam, seed = 48, 1.5, 0.5, 2",
    "ch08_experiments": "params = dict(d=3, beta=1.5, omega=1.0, n_prompts=3, seed=2)",
    "ch09_meanfield": "beta, t_end, seed = 1.5, 0.8, 1",
    "ch10_beyond": "beta, n, seed = 12.0, 200, 1",
}

# a number as a check's message prints it: 1.2e-07, 0.25, 3, 45.0%
NUMBER = re.compile(r"\d")


def parameter_cell(nb):
    """Index of the one code cell tagged ``parameters``."""
    tagged = [i for i, c in enumerate(nb.cells)
              if c.cell_type == "code" and "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, f"expected one code cell tagged 'parameters', found {len(tagged)}"
    return tagged[0]


def assigned(source):
    """Names bound by the assignments of a cell."""
    return {node.id for stmt in ast.parse(source).body if isinstance(stmt, ast.Assign)
            for target in stmt.targets for node in ast.walk(target) if isinstance(node, ast.Name)}


def run_with(chapter, override):
    """Execute a chapter with ``override`` right after its parameter cell; return its errors."""
    nb = nbformat.read(BOOK / f"{chapter}.ipynb", as_version=4)
    at = parameter_cell(nb)
    unknown = assigned(override) - assigned(nb.cells[at].source)
    assert not unknown, f"{chapter}: {sorted(unknown)} are not set in the parameter cell"
    nb.cells.insert(at + 1, nbformat.v4.new_code_cell(override))
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(BOOK)}}).execute()
    return [(i, out) for i, c in enumerate(nb.cells) if c.cell_type == "code"
            for out in c.get("outputs", []) if out.output_type == "error"]


def is_claim(node) -> bool:
    """A call of ``claim(...)`` (``ue.checks.claim``)."""
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")) == "claim"


def bare_checks(nb):
    """The asserts and ``claim(...)`` calls of a notebook whose message is missing or formats no
    value, as (cell, line, source)."""
    found = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        # IPython syntax (the set-up cell's %pip) becomes plain Python first
        for node in ast.walk(ast.parse(TransformerManager().transform_cell(cell.source))):
            if isinstance(node, ast.Assert):
                msg = node.msg
            elif is_claim(node):
                msg = node.args[1] if len(node.args) > 1 else None   # ue.checks.claim(holds, message)
            else:
                continue
            if not (msg is not None and any(isinstance(m, ast.FormattedValue) for m in ast.walk(msg))):
                found.append((i, node.lineno, ast.unparse(node)))
    return found


@pytest.mark.parametrize("chapter", sorted(PERTURBED) + ["widgets"] + sorted(
    f"primers/{p.stem}" for p in BOOK.glob("primers/*.ipynb")))
def test_every_check_carries_a_message_with_values(chapter):
    bare = bare_checks(nbformat.read(BOOK / f"{chapter}.ipynb", as_version=4))
    assert not bare, f"{chapter}: {len(bare)} asserts without a message that formats a value, first {bare[0]}"


def test_every_chapter_has_a_perturbation():
    chapters = sorted(p.stem for p in BOOK.glob("ch[0-9][0-9]_*.ipynb"))
    assert chapters == sorted(PERTURBED), f"chapters {chapters} and perturbations {sorted(PERTURBED)} differ"


@pytest.mark.slow
@pytest.mark.parametrize("chapter", sorted(PERTURBED))
def test_checks_pass_or_explain_themselves(chapter):
    errors = run_with(chapter, PERTURBED[chapter])
    for i, out in errors:
        where = f"{chapter} with {PERTURBED[chapter]!r}, cell {i}"
        # ue.checks.claim raises ClaimFailed, an AssertionError
        assert out.ename in ("AssertionError", "ClaimFailed"), f"{where}: {out.ename}: {out.evalue}"
        assert out.evalue.strip(), f"{where}: a check failed without a message"
        assert NUMBER.search(out.evalue), f"{where}: the message gives no measured value: {out.evalue}"
    for i, out in errors:   # shown with -rA or on failure: what a reader would see
        print(f"{chapter} cell {i}: {out.evalue}")
