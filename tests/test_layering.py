"""The package's imports point downward: read from the source (ast), checked against its folders.

The package's folders are its rooms, lowest first (``FOLDERS``): a module may import modules of
its own folder or of lower folders, never of a higher one and never the package root
(``import usaav_edu``, ``from usaav_edu import simulate``, ``from . import simulate``), also
inside functions.  Inside a folder the imports form no cycle.  A new top-level module must be
named in ``BASE``; a new folder must be given its place in ``FOLDERS``.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = "usaav_edu"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE

#: the modules at the top of the package, below every folder (at most 8 with the root)
BASE = ["_validate", "_version", "errors", "sphere", "progress", "checks", "exercises"]
#: the folders, lowest first; "base" holds BASE (and quizzes, the bank of questions), "" is the root
FOLDERS = ["base", "quizzes", "dynamics", "models", "particles", "analysis", "meanfield", "sweep",
           "cli", "widgets", "figures", ""]
#: imports that point upward today, each to be removed (and then struck from here)
PENDING: set[tuple[str, str]] = set()


def folder(name):
    """The folder of a module (dotted name relative to the package): its first component."""
    if name == "":
        return ""
    head = name.split(".")[0]
    return "base" if head in BASE else head


def module_names():
    """Every module of the package, as a dotted name relative to it ("" for the root)."""
    names = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def imports(name, source, known):
    """The modules of the package that the module ``name`` imports (relative dotted names)."""
    is_package = name == "" or name in {k.rsplit(".", 1)[0] for k in known if "." in k}
    package = name if is_package else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == PACKAGE or alias.name.startswith(PACKAGE + "."):
                    found.add(alias.name[len(PACKAGE) + 1:])
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                if node.module != PACKAGE and not (node.module or "").startswith(PACKAGE + "."):
                    continue
                base = node.module[len(PACKAGE) + 1:]
            else:
                parts = package.split(".") if package else []
                parts = parts[:len(parts) - (node.level - 1)]
                if node.module:
                    parts += node.module.split(".")
                base = ".".join(parts)
            for alias in node.names:
                sub = f"{base}.{alias.name}" if base else alias.name
                found.add(sub if sub in known else base)
    return found


def edges():
    """Every import between two modules of the package, as (importer, imported)."""
    known = module_names()
    return {(name, target) for name, path in known.items()
            for target in imports(name, path.read_text(), known) if target != name}


def upward_edges():
    bad = set()
    for name, target in edges():
        if target == "" and name != "":
            bad.add((name, ""))
        elif FOLDERS.index(folder(target)) > FOLDERS.index(folder(name)):
            bad.add((name, target))
    return bad


def cycles():
    """The import cycles inside the package (each as the list of modules on it), by depth-first search."""
    graph = {}
    for name, target in edges():
        graph.setdefault(name, set()).add(target)
    found, state = [], {}

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def test_every_module_is_in_a_known_folder():
    unknown = sorted(n for n in module_names() if folder(n) not in FOLDERS)
    assert not unknown, f"name these in BASE or FOLDERS of tests/test_layering.py: {unknown}"


def test_few_modules_at_the_top():
    top = [n for n in module_names() if n and "." not in n and (ROOT / f"{n}.py").exists()]
    assert len(top) + 1 <= 8, f"{len(top)} modules beside __init__.py at the top: {top}"


def test_no_module_imports_upward_or_the_package_root():
    assert upward_edges() - PENDING == set()


def test_the_pending_upward_imports_are_still_there():
    """A pending edge that is gone must be struck from PENDING, so that it cannot come back."""
    assert PENDING <= upward_edges()


def test_no_import_cycle():
    assert cycles() == []


def test_the_folder_check_sees_an_upward_import():
    known = module_names()
    assert ("dynamics.rhs", "particles.solver") not in edges()
    found = imports("dynamics.rhs", "from ..particles.solver import simulate\n", known)
    assert found == {"particles.solver"}
    assert FOLDERS.index(folder("particles.solver")) > FOLDERS.index(folder("dynamics.rhs"))


@pytest.mark.parametrize("source, target", [
    ("from .. import simulate\n", ""),
    ("def f():\n    import usaav_edu as ue\n", ""),
    ("from ..particles.solver import simulate\n", "particles.solver"),
    ("from ..dynamics.integrate import steppers\n", "dynamics.integrate.steppers"),
    ("from . import diagnostics\n", "analysis.diagnostics"),
])
def test_the_reader_sees_every_kind_of_import(source, target):
    assert target in imports("analysis.spectral", source, module_names())
    assert imports("widgets.player", "from ..particles import solver\n", module_names()) == {"particles.solver"}
