"""The package's imports point downward: read from the source (ast), checked against a layer order.

A module may import modules of its own layer or of lower layers, never of a higher one and never
the package root (``import usaav_edu``, ``from usaav_edu import simulate``, ``from . import
simulate``), also inside functions.  A new module must be given its layer here.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = "usaav_edu"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE

# lowest first; "" is the package root (usaav_edu/__init__.py)
LAYERS = [
    ["_validate", "_version", "progress", "sphere", "laws", "checks", "exercises", "quizzes"],
    ["dynamics.fastexp", "dynamics.expansions"],
    ["dynamics.rhs"],
    ["gauges", "biases", "profiles"],
    ["dynamics.energy", "dynamics.integrators", "dynamics.unrotated", "dynamics.reference",
     "dynamics.fastsum", "dynamics"],
    ["models"],
    ["trajectory"],
    ["solver", "diagnostics", "maximizers", "density"],
    ["reductions", "experiments", "spectral", "meanfield", "sweep"],
    ["bench", "cli"],
    ["widgets._checks", "widgets.colors", "widgets.state"],
    ["widgets.scene", "widgets.mpl", "widgets.density_plots"],
    ["widgets.player", "widgets.twin", "widgets.predict"],
    ["widgets.explorer", "widgets.dashboard", "widgets.density"],
    ["widgets"],
    ["figures.ch01", "figures.ch02", "figures.ch03", "figures.ch04", "figures.ch05", "figures.ch06", "figures.ch07", "figures.ch08", "figures.ch09", "figures.large_n", "figures.intro", "figures.primers", "figures"],
    [""],
]
LAYER = {name: k for k, names in enumerate(LAYERS) for name in names}


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


def upward_edges():
    known = module_names()
    bad = []
    for name, path in known.items():
        for target in imports(name, path.read_text(), known):
            if target == name:
                continue
            if target == "" and name != "":
                bad.append(f"{name or PACKAGE} imports the package root")
            elif LAYER[target] > LAYER[name]:
                bad.append(f"{name} (layer {LAYER[name]}) imports {target} (layer {LAYER[target]})")
    return bad


def test_every_module_has_a_layer():
    missing = sorted(set(module_names()) - set(LAYER))
    assert not missing, f"give these modules a layer in tests/test_layering.py: {missing}"


def test_no_module_imports_upward_or_the_package_root():
    assert upward_edges() == []


@pytest.mark.parametrize("source, target", [
    ("from . import simulate\n", ""),
    ("def f():\n    import usaav_edu as ue\n", ""),
    ("from .solver import simulate\n", "solver"),
    ("from .dynamics import integrators\n", "dynamics.integrators"),
])
def test_the_reader_sees_every_kind_of_import(source, target):
    assert target in imports("spectral", source, module_names())
    assert imports("widgets.player", "from .. import solver\n", module_names()) == {"solver"}
