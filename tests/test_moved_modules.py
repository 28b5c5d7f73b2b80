"""The module paths of version 2 that moved still import for one release, with a warning.

``ue.gauges``, ``ue.diagnostics`` and the other short names are the package's own names (no
warning); ``usaav_edu.solver`` and the other modules whose names go warn and give the module
that now holds the code.
"""

import importlib
import subprocess
import sys

import pytest

import usaav_edu as ue


def test_every_old_module_path_warns_and_gives_the_new_module():
    """In a fresh interpreter (the first import of a name is the one that warns)."""
    code = ("import importlib, warnings\n"
            "import usaav_edu\n"
            "for old, new in sorted(usaav_edu.MOVED.items()):\n"
            "    with warnings.catch_warnings(record=True) as seen:\n"
            "        warnings.simplefilter('always')\n"
            "        module = importlib.import_module(f'usaav_edu.{old}')\n"
            "    same = module is importlib.import_module(f'usaav_edu.{new}')\n"
            "    print(old, same, [str(w.message) for w in seen if w.category is DeprecationWarning])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    assert len(lines) == len(ue.MOVED) >= 5
    for line, (old, new) in zip(lines, sorted(ue.MOVED.items()), strict=True):
        message = f"usaav_edu.{old} moved to usaav_edu.{new}; the old name goes in the next release"
        assert line == f"{old} True {[message]!r}"


def test_an_old_attribute_warns():
    code = ("import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
            "import usaav_edu as ue\n"
            "try:\n    ue.solver\nexcept DeprecationWarning as w:\n    print(w)\n"
            "warnings.simplefilter('ignore', DeprecationWarning)\n"
            "print(ue.solver.simulate is ue.simulate)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [
        "usaav_edu.solver moved to usaav_edu.particles.solver; the old name goes in the next release",
        "True"]


@pytest.mark.parametrize("short, full", sorted(ue.SHORT_NAMES.items()))
def test_a_short_name_is_the_module_of_its_room(short, full, recwarn):
    module = importlib.import_module(f"usaav_edu.{short}")
    assert module is importlib.import_module(f"usaav_edu.{full}") is getattr(ue, short)
    assert not [w for w in recwarn if issubclass(w.category, DeprecationWarning)]


def test_the_names_users_rely_on():
    assert ue.simulate is ue.particles.solver.simulate
    assert ue.models.rope is ue.models.model.rope
    assert ue.meanfield.solve is ue.meanfield.solver.solve
    assert ue.diagnostics.summary is ue.analysis.diagnostics.summary
    assert ue.sweep is importlib.import_module("usaav_edu.sweep.run").sweep
    assert ue.errors.IntegrationError is ue.IntegrationError


def test_an_unknown_name_is_still_an_error():
    with pytest.raises(AttributeError, match="no attribute 'solverr'"):
        ue.solverr  # noqa: B018
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("usaav_edu.solverr")
