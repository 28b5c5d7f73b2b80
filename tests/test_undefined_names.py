"""No name is used that nothing defines: an error path that raises NameError instead of its message.

A static check with :mod:`symtable` (the compiler's own scopes): every name a function reads as
a global must be bound at the top of its module (assigned, imported, defined) or be a builtin.
Error paths are rarely run, so this is the only way to see such a name before a user does.
"""

import builtins
import pathlib
import symtable

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "usaav_edu"
SOURCES = sorted(PACKAGE.rglob("*.py"))
MODULE_NAMES = {"__file__", "__name__", "__spec__", "__path__", "__doc__", "__package__",
                "__loader__"}
"""What the import system binds in every module."""


def undefined_names(source, filename):
    """``(scope, line, name)`` of every global read that the module and builtins do not bind."""
    top = symtable.symtable(source, filename, "exec")
    bound = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    found = []

    def walk(table):
        for sym in table.get_symbols():
            name = sym.get_name()
            if (sym.is_referenced() and sym.is_global() and name not in bound
                    and name not in MODULE_NAMES and not hasattr(builtins, name)):
                found.append((table.get_name(), table.get_lineno(), name))
        for child in table.get_children():
            walk(child)

    walk(top)
    return found


def test_the_check_finds_an_undefined_name():
    source = "def check(rtol):\n    raise ValueError(f'{rtol} {atol}')\n"
    assert undefined_names(source, "example.py") == [("check", 1, "atol")]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_name_read_is_defined(path):
    assert undefined_names(path.read_text(encoding="utf-8"), str(path)) == []
