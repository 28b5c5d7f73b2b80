"""No function of the package is long: a body (its docstring left out) of at most 100 lines, and
at most 5 of more than 60.

A function's length is counted from the first statement after its docstring to its last line,
comments and blank lines included, so that what it measures is what a reader scrolls through.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "usaav_edu"
#: no function body may be longer
LIMIT = 100
#: at most ``ALLOWED_LONG`` function bodies may be longer than ``LONG``
LONG = 60
ALLOWED_LONG = 5


def body_lengths(source: str, filename: str = "<source>") -> list[tuple[int, str]]:
    """``(lines, "file:line name")`` of every function and method in ``source``, where
    ``lines`` runs from the first statement after the docstring to the function's last line."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = node.body
        first = body[0]
        if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)):
            body = body[1:]
        if not body:              # a docstring and nothing else
            continue
        end = node.end_lineno if node.end_lineno is not None else body[-1].lineno
        found.append((end - body[0].lineno + 1, f"{filename}:{node.lineno} {node.name}"))
    return found


@functools.cache
def package_lengths() -> tuple[tuple[int, str], ...]:
    """``body_lengths`` of every module of the package (read once per test session)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE.parent).as_posix()
        found += body_lengths(path.read_text(encoding="utf-8"), name)
    return tuple(found)


def listing(found: list[tuple[int, str]]) -> str:
    return "; ".join(f"{where} ({lines} lines)" for lines, where in sorted(found, reverse=True))


def test_no_function_body_is_over_the_limit():
    over = [f for f in package_lengths() if f[0] > LIMIT]
    assert not over, f"function bodies over {LIMIT} lines: {listing(over)}"


def test_at_most_a_few_function_bodies_are_long():
    long = [f for f in package_lengths() if f[0] > LONG]
    assert len(long) <= ALLOWED_LONG, (f"{len(long)} function bodies over {LONG} lines "
                                       f"(at most {ALLOWED_LONG}): {listing(long)}")


def test_the_measure_counts_the_body_without_the_docstring():
    statements = "".join(f"    x{k} = {k}\n" for k in range(LIMIT + 1))
    source = ('def long():\n    """A docstring\n\n    of four lines.\n    """\n' + statements
              + "\n\nclass A:\n    def short(self):\n        '''Only a docstring.'''\n\n"
              + "    def two(self):\n        '''Doc.'''\n        y = 1\n        return y\n")
    two = source.splitlines().index("    def two(self):") + 1
    found = {where: lines for lines, where in body_lengths(source, "m.py")}
    assert found == {"m.py:1 long": LIMIT + 1, f"m.py:{two} two": 2}
    assert [where for lines, where in body_lengths(source, "m.py") if lines > LIMIT] == ["m.py:1 long"]
