"""The package and the notebooks run outside the repository.

* The chapters' set-up cell (tools/setup_cell.py): written first, tagged, output-free,
  idempotent; it does nothing where the package imports; where it does not, it installs the package
  only from a pinned source (the repository at a commit or tag, or a shipped wheel checked by its
  sha256), never a bare name from a package index, and with no source pinned it stops; it turns on
  Colab's widget manager under Colab.
* The repository URL (_config.yml, tools/book_launch.py): a tiny book built with the book's own
  settings has no repository link and no launch buttons while the URL is empty, and has the
  repository link and the Binder, Colab and JupyterHub buttons once it is set.
* The dependencies: the core (numpy, numba, llvmlite, tqdm) and the extras in pyproject.toml cover
  every module the package imports and contain the pinned versions; requirements.txt pins exactly
  what they bring (as `make requirements` writes it), Binder's file what the chapters need, at
  the same pins.
* The wheel: ``python -m build`` makes an sdist and a wheel from a copy of the sources; in a fresh
  virtual environment, ``pip install`` of the wheel alone (the core, at the pins) gives a working
  ``usaav-edu simulate`` and ``simulate`` with no dask, ipywidgets or matplotlib installed, and
  names the extra that a sweep, the widgets, the figures or the quizzes need; with the widgets
  extra ``usaav_edu.widgets`` imports and a chapter, copied alone into an empty folder, executes
  top to bottom.
"""
from __future__ import annotations

import ast
import copy
import email
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import types
import zipfile
from pathlib import Path

import nbformat
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tools import book_launch, setup_cell

ROOT = Path(__file__).resolve().parents[1]

CHAPTER = "ch03_conditional_dirac"  # a chapter that runs in seconds
REPO = "https://github.com/someone/usaav-edu"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
PINNED = f"usaav-edu[all] @ git+{REPO}@{COMMIT}"


def _nb(cells, minor=5) -> dict:
    return {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                        "language": "python"}},
            "nbformat": 4, "nbformat_minor": minor}


def _code(src, id_, outputs=()) -> dict:
    return {"cell_type": "code", "execution_count": None, "id": id_, "metadata": {},
            "outputs": list(outputs), "source": src}


# ---------------------------------------------------------------------------------------------
# the set-up cell


def test_setup_cell_keeps_an_older_notebook_valid():
    old = _nb([{"cell_type": "markdown", "metadata": {}, "source": "# A page"}], minor=4)
    new = setup_cell.with_setup_cell(old, PINNED)
    assert new["nbformat_minor"] == 4 and "id" not in new["cells"][0]
    nbformat.validate(nbformat.from_dict(new))


def test_every_notebook_of_the_book_begins_with_the_current_setup_cell():
    spec = setup_cell.config_spec(ROOT / "_config.yml")
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        assert setup_cell.with_setup_cell(nb, spec) == nb, f"{path.name}: run make setup-cells"
        nbformat.validate(nbformat.from_dict(nb))


@pytest.fixture
def chapter_copy(tmp_path) -> Path:
    """The chapter as it would be without its set-up cell."""
    nb = json.loads((ROOT / "book" / f"{CHAPTER}.ipynb").read_text(encoding="utf-8"))
    nb["cells"] = [c for c in nb["cells"] if not setup_cell.is_setup_cell(c)]
    path = tmp_path / f"{CHAPTER}.ipynb"
    path.write_text(setup_cell.dumps(nb), encoding="utf-8")
    return path


def test_setup_cell_comes_first_once_and_leaves_the_other_cells_alone(chapter_copy):
    before = json.loads(chapter_copy.read_text())
    others = [c for c in before["cells"] if not setup_cell.is_setup_cell(c)]
    assert setup_cell.update_notebook(chapter_copy, PINNED)
    after = json.loads(chapter_copy.read_text())
    first = after["cells"][0]
    assert first["cell_type"] == "code" and first["id"] == setup_cell.CELL_ID
    assert {"remove-cell", setup_cell.TAG} <= set(first["metadata"]["tags"])
    assert sum(setup_cell.is_setup_cell(c) for c in after["cells"]) == 1
    assert after["cells"][1:] == others
    assert {k: v for k, v in after.items() if k != "cells"} == \
        {k: v for k, v in before.items() if k != "cells"}
    # output-free, as the book's notebooks are saved
    for c in after["cells"]:
        assert c.get("outputs", []) == [] and c.get("execution_count") is None
    assert "%pip install" in "".join(first["source"])


def test_setup_cell_is_folded_in_jupyterlab(chapter_copy):
    """The notebook opens on the chapter: the set-up cell's source is hidden (one click shows it)."""
    setup_cell.update_notebook(chapter_copy, PINNED)
    first = json.loads(chapter_copy.read_text())["cells"][0]
    assert first["metadata"].get("jupyter", {}).get("source_hidden") is True, first["metadata"]
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        folded = [c["metadata"].get("jupyter", {}).get("source_hidden") for c in cells
                  if setup_cell.is_setup_cell(c)]
        assert folded == [True], f"{path.name}: set-up cell folded {folded}; run make setup-cells"


def test_setup_cell_is_idempotent_and_replaced_by_a_new_source(chapter_copy):
    setup_cell.update_notebook(chapter_copy, "")
    once = chapter_copy.read_bytes()
    assert not setup_cell.update_notebook(chapter_copy, "")
    assert chapter_copy.read_bytes() == once
    assert "%pip" not in "".join(json.loads(once)["cells"][0]["source"])
    # a new install source replaces the cell; it never adds a second one
    assert setup_cell.update_notebook(chapter_copy, PINNED)
    nb = json.loads(chapter_copy.read_text())
    assert sum(setup_cell.is_setup_cell(c) for c in nb["cells"]) == 1
    assert COMMIT[:12] in "".join(nb["cells"][0]["source"])
    assert len(nb["cells"]) == len(json.loads(once)["cells"])


def test_setup_cell_cli_takes_the_pinned_source_from_the_config(tmp_path, chapter_copy, monkeypatch):
    cfg = tmp_path / "_config.yml"
    cfg.write_text(yaml.safe_dump({"repository": {"url": REPO + "/", "install_ref": COMMIT}}))
    assert setup_cell.main([str(chapter_copy), "--config", str(cfg)]) == 0
    magics, _ = _run_cell(chapter_copy, monkeypatch, installed=False, installs=True)
    assert magics == [("pip", f'install --quiet "{PINNED}"')]
    # a repository URL alone (for the launch buttons) pins nothing: the cell installs nothing
    cfg.write_text(yaml.safe_dump({"repository": {"url": REPO, "install_ref": ""}}))
    assert setup_cell.main([str(chapter_copy), "--config", str(cfg)]) == 0
    with pytest.raises(RuntimeError, match="pins no source"):
        _run_cell(chapter_copy, monkeypatch, installed=False)
    # a branch is not a pin
    cfg.write_text(yaml.safe_dump({"repository": {"url": REPO, "install_ref": "main"}}))
    with pytest.raises(SystemExit):
        setup_cell.main([str(chapter_copy), "--config", str(cfg)])


def test_setup_cell_writes_in_place_without_leaving_temporary_files(chapter_copy):
    setup_cell.update_notebook(chapter_copy, PINNED)
    assert sorted(p.name for p in chapter_copy.parent.iterdir()) == [chapter_copy.name]


def test_setup_cell_refuses_bad_input(tmp_path):
    with pytest.raises(ValueError, match="spec"):
        setup_cell.cell_source(f'usaav-edu[all] @ git+{REPO}@{COMMIT}"; rm -rf ~; echo "')
    with pytest.raises(ValueError, match="url"):
        setup_cell.cell_source(f"usaav-edu[all] @ git+https://example.org/$(whoami)/x@{COMMIT}")
    with pytest.raises(ValueError, match="url"):
        setup_cell.install_spec("git@github.com:someone/usaav-edu", COMMIT)
    with pytest.raises(ValueError, match="nbformat 4"):
        setup_cell.with_setup_cell({"cells": [], "nbformat": 3}, PINNED)
    clash = _nb([_code("1", setup_cell.CELL_ID)])
    with pytest.raises(ValueError, match="already has a cell"):
        setup_cell.with_setup_cell(clash, PINNED)
    txt = tmp_path / "notes.txt"
    txt.write_text("{}")
    with pytest.raises(ValueError, match=r"\.ipynb"):
        setup_cell.update_notebook(txt, PINNED)
    with pytest.raises(ValueError, match="existing notebook"):
        setup_cell.update_notebook(tmp_path / "missing.ipynb", PINNED)
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{not json")
    with pytest.raises(ValueError, match="not a notebook"):
        setup_cell.update_notebook(broken, PINNED)
    assert broken.read_text() == "{not json"
    with pytest.raises(ValueError, match=r"chapter must be a chapter's number, None or 'keep', got '4'"):
        setup_cell.update_notebook(broken, PINNED, chapter="4")


@pytest.mark.parametrize("name", ["usaav-edu", "usaav-edu==0.1.0", "usaav_edu", " usaav-edu "])
def test_setup_cell_refuses_a_bare_distribution_name(name):
    # whoever registers the name on a package index would run code in every reader's notebook
    with pytest.raises(ValueError, match="spec must pin"):
        setup_cell.cell_source(name)
    with pytest.raises(ValueError, match="bare name"):
        setup_cell.source_spec(name)


@pytest.mark.parametrize("source", [
    f"git+{REPO}", f"git+{REPO}@main", f"git+{REPO}@{COMMIT[:7]}", f"git+{REPO}@release/0.1",
    f"git+{REPO}@HEAD", f"git+{REPO}@1234567", f"git+http://github.com/someone/usaav-edu@{COMMIT}"])
def test_setup_cell_refuses_an_unpinned_repository(source, chapter_copy):
    with pytest.raises(ValueError, match="pinned|pin the repository|url must"):
        setup_cell.source_spec(source)
    before = chapter_copy.read_bytes()
    with pytest.raises(SystemExit):
        setup_cell.main([str(chapter_copy), "--source", source])
    assert chapter_copy.read_bytes() == before


def test_setup_cell_takes_a_pinned_commit_or_tag():
    assert setup_cell.source_spec(f"git+{REPO}@{COMMIT}") == PINNED
    assert setup_cell.source_spec(f"git+{REPO}/@v0.1.0") == f"usaav-edu[all] @ git+{REPO}@v0.1.0"
    assert setup_cell.source_spec(f"git+{REPO}@1.2rc1") == f"usaav-edu[all] @ git+{REPO}@1.2rc1"


class _Shell:
    """Stands in for IPython: records the line magics the cell runs, after IPython's expansion
    of ``$name`` from the cell's namespace (as ``InteractiveShell.var_expand`` does)."""

    def __init__(self):
        self.magics = []

    def run_line_magic(self, name, line):
        from IPython.utils.text import DollarFormatter

        self.magics.append((name, DollarFormatter().vformat(line, [], sys._getframe(1).f_globals)))


def _cell_code(where) -> str:
    """The set-up cell's code: of a notebook file, or written for a spec."""
    if isinstance(where, Path):
        cells = json.loads(where.read_text(encoding="utf-8"))["cells"]
        return "".join(next(c for c in cells if setup_cell.is_setup_cell(c))["source"])
    return setup_cell.cell_source(where)


def _run_cell(where, monkeypatch, *, installed=True, colab=False, installs=False, shell=None):
    """Run the set-up cell as IPython would (magics transformed); return (magics, colab calls).

    ``installed``: whether the package imports before the cell runs; ``installs``: whether the
    (recorded, not run) pip install makes it importable; ``shell`` keeps the record when the
    cell raises.
    """
    import importlib.util

    from IPython.core.inputtransformer2 import TransformerManager

    code = TransformerManager().transform_cell(_cell_code(where))
    shell = _Shell() if shell is None else shell
    enabled = []
    if not installed:
        real = importlib.util.find_spec
        monkeypatch.setattr(importlib.util, "find_spec",
                            lambda name, *a: (real(name, *a) if installs and shell.magics else None)
                            if name == "usaav_edu" else real(name, *a))
    if colab:
        google = types.ModuleType("google")
        colab_mod = types.ModuleType("google.colab")
        colab_mod.output = types.SimpleNamespace(enable_custom_widget_manager=lambda: enabled.append(1))
        google.colab = colab_mod
        monkeypatch.setitem(sys.modules, "google", google)
        monkeypatch.setitem(sys.modules, "google.colab", colab_mod)
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    exec(compile(code, "<setup cell>", "exec"), {"get_ipython": lambda: shell})
    return shell.magics, enabled


def test_setup_cell_does_nothing_where_the_package_imports(monkeypatch):
    for spec in (PINNED, ""):
        magics, enabled = _run_cell(spec, monkeypatch)
        assert magics == [] and enabled == []


def test_setup_cell_installs_exactly_the_pinned_commit_where_the_package_is_missing(monkeypatch):
    magics, enabled = _run_cell(PINNED, monkeypatch, installed=False, installs=True)
    assert magics == [("pip", f'install --quiet "usaav-edu[all] @ git+{REPO}@{COMMIT}"')]
    assert enabled == []


def test_setup_cell_stops_when_the_pinned_install_fails(monkeypatch):
    # %pip does not raise when pip fails: the cell checks that the package now imports
    with pytest.raises(RuntimeError, match=r"did not install from usaav-edu\[all\] @ git"):
        _run_cell(PINNED, monkeypatch, installed=False, installs=False)


def test_setup_cell_with_no_source_stops_without_installing(monkeypatch):
    shell = _Shell()
    with pytest.raises(RuntimeError, match="pins no source.*installs nothing") as e:
        _run_cell("", monkeypatch, installed=False, installs=True, shell=shell)
    assert shell.magics == []
    assert "repository.install_ref" in str(e.value) and "book's environment" in str(e.value)
    assert "pip" not in setup_cell.cell_source("")


def test_setup_cell_installs_a_shipped_wheel_checked_by_its_sha256(tmp_path, monkeypatch):
    wheel = tmp_path / "usaav_edu-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"not really a wheel, but bytes with a hash")
    url = "https://someone.github.io/usaav-edu/usaav_edu-0.1.0-py3-none-any.whl"
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    spec = setup_cell.source_spec(str(wheel), url)
    assert spec == f"usaav-edu[all] @ {url}#sha256={digest}"
    code = setup_cell.cell_source(spec)
    assert "usaav-edu 0.1.0" in code and digest[:32] in code and digest[32:] in code
    magics, _ = _run_cell(spec, monkeypatch, installed=False, installs=True)
    assert magics == [("pip", f'install --quiet "{spec}"')]
    with pytest.raises(ValueError, match="wheel_url"):
        setup_cell.source_spec(str(wheel))
    with pytest.raises(ValueError, match="wheel_url"):
        setup_cell.source_spec(str(wheel), url.replace("0.1.0", "0.2.0"))
    with pytest.raises(ValueError, match="spec must pin"):
        setup_cell.cell_source(f"usaav-edu[all] @ {url}")  # no sha256
    other = tmp_path / "numpy-2.0.0-py3-none-any.whl"
    other.write_bytes(b"x")
    with pytest.raises(ValueError, match="usaav_edu wheel"):
        setup_cell.source_spec(str(other), url)


def test_setup_cell_turns_on_colab_widget_manager(monkeypatch):
    magics, enabled = _run_cell(PINNED, monkeypatch, installed=False, colab=True, installs=True)
    assert magics == [("pip", f'install --quiet "{PINNED}"')]
    assert enabled == [1]


@pytest.mark.parametrize("path", sorted((ROOT / "book").glob("*.ipynb")), ids=lambda p: p.stem)
def test_no_notebook_set_up_cell_installs_a_bare_name(path, monkeypatch):
    """Run each notebook's own set-up cell where the package is missing: it installs only a pinned
    repository or a hash-checked wheel, or stops without installing anything."""
    code = _cell_code(path)
    assert not re.search(r"pip\s+install[^\n]*[\"' ]usaav[-_]edu[\"'\s]*$", code, re.M)
    shell = _Shell()
    try:
        _run_cell(path, monkeypatch, installed=False, installs=True, shell=shell)
    except RuntimeError as e:
        assert "pins no source" in str(e) and shell.magics == []
    for name, line in shell.magics:
        assert name == "pip"
        requirement = line.removeprefix("install --quiet ").strip('"')
        assert setup_cell.GIT_SPEC.match(requirement) or setup_cell.WHEEL_SPEC.match(requirement)
        setup_cell.cell_source(requirement)  # the tool's check of the pin


# ---------------------------------------------------------------------------------------------
# the repository URL and the launch buttons


def _book_config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text())


def test_config_names_the_repository_in_one_place_and_loads_the_switch():
    cfg = _book_config()
    # the key is present (else Jupyter Book would fill in its own repository) and empty for now
    assert "url" in cfg["repository"]
    assert cfg["sphinx"]["local_extensions"]["book_launch"] == "tools"
    assert (ROOT / "tools" / "book_launch.py").is_file()
    text = (ROOT / "_config.yml").read_text()
    urls = [line for line in text.splitlines() if line.strip().startswith("url:")]
    assert len(urls) == 1


def test_book_launch_switches_on_exactly_when_a_url_is_set():
    launch = {"notebook_interface": "jupyterlab", "binderhub_url": "https://mybinder.org",
              "colab_url": "https://colab.research.google.com", "jupyterhub_url": ""}
    off = book_launch.apply({"repository_url": "", "launch_buttons": launch})
    assert off["use_repository_button"] is False
    assert not any(off["launch_buttons"].get(k) for k in book_launch.LAUNCH_KEYS)
    on = book_launch.apply({"repository_url": REPO + "/", "launch_buttons": launch})
    assert on["use_repository_button"] is True and on["repository_url"] == REPO
    assert on["launch_buttons"] == launch
    from sphinx.errors import ConfigError
    for bad in ("github.com/someone/usaav-edu", "https://github.com/usaav-edu", 42):
        with pytest.raises(ConfigError, match="repository.url"):
            book_launch.apply({"repository_url": bad})


def _jupyter_book() -> str:
    jb = Path(sys.executable).with_name("jupyter-book")
    return str(jb) if jb.exists() else "jupyter-book"


@pytest.fixture(scope="module")
def tiny_book(tmp_path_factory) -> Path:
    """A one-notebook book with the book's own repository, launch and extension settings."""
    root = tmp_path_factory.mktemp("launch_book")
    (root / "book").mkdir()
    (root / "_toc.yml").write_text(yaml.safe_dump(
        {"format": "jb-book", "root": "book/intro", "chapters": [{"file": "book/nb"}]}))
    (root / "book" / "intro.md").write_text("# Tiny book\n\nHello.\n")
    nb = setup_cell.with_setup_cell(_nb([
        {"cell_type": "markdown", "id": "m0", "metadata": {}, "source": "# A chapter\n\nText.\n"},
        _code("1 + 1", "c0")]), "")
    (root / "book" / "nb.ipynb").write_text(setup_cell.dumps(nb))
    cfg = _book_config()
    ext = {name: str((ROOT / path).resolve()) for name, path in cfg["sphinx"]["local_extensions"].items()}
    base = {"title": "Tiny book", "author": "test", "only_build_toc_files": True,
            "exclude_patterns": ["_build/*", "out_*/*"], "execute": {"execute_notebooks": "off"},
            "repository": cfg["repository"], "launch_buttons": cfg["launch_buttons"],
            "sphinx": {"local_extensions": ext}}
    assert base["repository"]["url"] == "", "the test expects the book's URL to be unset"
    (root / "_config.yml").write_text(yaml.safe_dump(base))
    with_url = copy.deepcopy(base)
    with_url["repository"]["url"] = REPO
    with_url["launch_buttons"]["jupyterhub_url"] = "https://hub.example.edu"
    (root / "_config_url.yml").write_text(yaml.safe_dump(with_url))
    return root


def _build(book: Path, config: str, out: str) -> Path:
    r = subprocess.run([_jupyter_book(), "build", str(book), "--config", str(book / config),
                        "--path-output", str(book / out), "-W", "-n", "--keep-going", "-q"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return book / out / "_build" / "html"


def _links(page: Path) -> set[str]:
    from html.parser import HTMLParser

    found = set()

    class P(HTMLParser):
        def handle_starttag(self, tag, attrs):
            if tag == "a" and dict(attrs).get("href"):
                found.add(dict(attrs)["href"])

    P().feed(page.read_text())
    return found


@pytest.mark.slow
def test_without_a_repository_url_pages_have_no_repository_link_or_launch_buttons(tiny_book):
    site = _build(tiny_book, "_config.yml", "out_plain")
    page = site / "book" / "nb.html"
    links = _links(page)
    assert not [u for u in links if "mybinder" in u or "colab" in u or "github.com" in u
                or "git-pull" in u]
    assert "source-repository-button" not in page.read_text()
    # the chapter is still offered for download, set-up cell included, and the page hides the cell
    assert any(u.endswith("_sources/book/nb.ipynb") for u in links)
    download = json.loads((site / "_sources" / "book" / "nb.ipynb").read_text())
    assert setup_cell.is_setup_cell(download["cells"][0])
    assert "enable_custom_widget_manager" not in page.read_text()


@pytest.mark.slow
def test_with_a_repository_url_pages_link_it_and_launch_binder_colab_jupyterhub(tiny_book):
    site = _build(tiny_book, "_config_url.yml", "out_url")
    links = _links(site / "book" / "nb.html")
    assert REPO in links
    assert "https://mybinder.org/v2/gh/someone/usaav-edu/main?urlpath=lab/tree/book/nb.ipynb" in links
    assert "https://colab.research.google.com/github/someone/usaav-edu/blob/main/book/nb.ipynb" in links
    hub = [u for u in links if u.startswith("https://hub.example.edu/hub/user-redirect/git-pull?")]
    assert len(hub) == 1 and "usaav-edu" in hub[0] and "book%2Fnb.ipynb" in hub[0].replace("/", "%2F")
    assert REPO in _links(site / "book" / "intro.html")  # every page links the repository


# ---------------------------------------------------------------------------------------------
# the wheel


def _pins(path: Path = ROOT / "requirements.txt") -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for line in path.read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, v = line.split("==")
            pins[canonicalize_name(name.strip())] = Version(v.strip())
    return pins


def _project() -> dict:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


CORE = {"numpy", "numba", "llvmlite", "tqdm", "ducc0"}
# the extras of the wheel test's environment are absent there: these must not import
NOT_CORE = ("dask", "distributed", "xarray", "zarr", "ipywidgets", "pythreejs", "matplotlib", "jupyterquiz")
# setuptools is not pinned: it is the one the virtual environment brings (`make requirements`)
UNPINNED = {"setuptools"}


def _closure(requirements: list[str]) -> set[str]:
    """The distributions that installing ``requirements`` brings, read from the metadata of the
    installed distributions (the tests run in the environment of requirements.txt); the
    package's own extras (``usaav-edu[widgets]``) are read from pyproject.toml."""
    from importlib import metadata

    extras = _project()["optional-dependencies"]
    found: set[str] = set()
    done = set()
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if (name, frozenset(req.extras)) in done:
            continue
        done.add((name, frozenset(req.extras)))
        if name == "usaav-edu":
            todo += [Requirement(r) for extra in req.extras for r in extras[extra]]
            continue
        found.add(name)
        for text in metadata.requires(name) or []:
            r = Requirement(text)
            if r.marker is None or any(r.marker.evaluate({"extra": e}) for e in {"", *req.extras}):
                todo.append(r)
    return found


# module imported by the package -> the distribution that provides it
DISTRIBUTION_OF = {"mpl_toolkits": "matplotlib"}


def _third_party_imports() -> set[str]:
    mods = set()
    for path in (ROOT / "usaav_edu").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                mods |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                mods.add(node.module.split(".")[0])
    return {m for m in mods if m not in sys.stdlib_module_names and m not in ("usaav_edu", "__future__")}


def test_declared_dependencies_are_the_core_and_extras_and_contain_the_pinned_versions():
    meta = _project()
    core = {canonicalize_name(Requirement(r).name): Requirement(r) for r in meta["dependencies"]}
    assert set(core) == CORE
    extras = meta["optional-dependencies"]
    assert {"widgets", "sweep", "all", "lab", "book", "dev"} <= set(extras)
    run_time = {canonicalize_name(Requirement(r).name) for e in ("widgets", "sweep") for r in extras[e]}
    needed = {DISTRIBUTION_OF.get(m, m) for m in _third_party_imports()}
    assert needed - CORE - run_time == set(), "imported by the package but in no run-time extra"
    assert run_time >= {"ipywidgets", "pythreejs", "matplotlib", "jupyterquiz", "dask", "distributed",
                        "xarray", "zarr"}
    pins = _pins()
    for text in [*meta["dependencies"], *(r for e in extras.values() for r in e)]:
        req = Requirement(text)
        if req.name == "usaav-edu":
            assert req.extras <= set(extras), text
            continue
        pin = pins[canonicalize_name(req.name)]
        assert req.specifier.contains(pin), f"{req} excludes the tested {req.name}=={pin}"
    # Jupyter Book 2 does not render the saved widget state: the book stays on version 1
    book = next(Requirement(r) for r in extras["book"] if Requirement(r).name == "jupyter-book")
    assert not book.specifier.contains("2.0.0") and book.specifier.contains(pins["jupyter-book"])
    assert meta["scripts"]["usaav-edu"] == "usaav_edu.cli:main"


def test_a_part_whose_extra_is_missing_names_the_extra(monkeypatch):
    import usaav_edu as ue
    from usaav_edu import _validate

    _validate.require_extra("sweep", "numpy", what="a thing")  # installed: nothing said
    with pytest.raises(ModuleNotFoundError, match=r'a thing needs no_such_module_1, no_such_module_2, '
                                                  r'which are not installed: pip install "usaav-edu\[sweep\]"'):
        _validate.require_extra("sweep", "numpy", "no_such_module_1", "no_such_module_2", what="a thing")
    monkeypatch.setitem(sys.modules, "zarr", None)  # as if it were not installed
    with pytest.raises(ModuleNotFoundError, match=r'usaav_edu.sweep needs zarr, which is not installed: '
                                                  r'pip install "usaav-edu\[sweep\]"') as e:
        ue.sweep("usa", {"beta": [1.0]}, t_max=1.0)
    assert e.value.name == "zarr"
    monkeypatch.setitem(sys.modules, "jupyterquiz", None)
    with pytest.raises(ModuleNotFoundError, match=r'usaav_edu.quizzes needs jupyterquiz.*usaav-edu\[widgets\]'):
        ue.quizzes.render(1)
    assert ue.quizzes.questions(1)  # the questions load without it


def test_requirements_pin_exactly_what_pyproject_declares():
    """requirements.txt is what `make requirements` writes: every distribution that the package
    with all its extras brings, each at the version installed here, and nothing else."""
    text = (ROOT / "requirements.txt").read_text()
    assert text.startswith("# This file was autogenerated by uv via the following command:\n"
                           "#    make requirements\n")
    pins = _pins()
    meta = _project()
    wanted = _closure([*meta["dependencies"], f"usaav-edu[{','.join(meta['optional-dependencies'])}]"])
    assert set(pins) - wanted == set(), "pinned, but nothing in pyproject.toml needs it"
    assert wanted - UNPINNED - set(pins) == set(), "needed by pyproject.toml, but not pinned"
    from importlib import metadata

    for name, version in pins.items():
        assert Version(metadata.version(name)) == version, f"{name}: this environment is not requirements.txt's"
    recipe = (ROOT / "Makefile").read_text().split("\nrequirements:", 1)[1].split("\n\n", 1)[0]
    assert "$(UV_COMPILE) --all-extras --output-file requirements.txt" in recipe


def test_binder_installs_what_the_chapters_import_at_the_same_pins():
    binder = _pins(ROOT / "binder" / "requirements.txt")
    pins = _pins()
    assert {n: v for n, v in binder.items() if pins.get(n) != v} == {}, "not at requirements.txt's pins"
    meta = _project()
    wanted = _closure([*meta["dependencies"], "usaav-edu[all,lab]"]) - UNPINNED
    assert set(binder) - wanted == set(), "Binder installs what the chapters do not need"
    assert wanted - set(binder) == set(), "the chapters need it, Binder does not install it"
    assert {"numba", "ipywidgets", "pythreejs", "jupyterquiz", "dask", "zarr", "jupyterlab-myst"} <= set(binder)
    assert not {"jupyter-book", "sphinx", "playwright", "pytest", "nbval"} & set(binder)
    assert (ROOT / "binder" / "requirements.txt").read_text().startswith(
        "# This file was autogenerated by uv via the following command:\n#    make requirements\n")
    recipe = (ROOT / "Makefile").read_text().split("\nrequirements:", 1)[1].split("\n\n", 1)[0]
    assert ("--extra all --extra lab --constraint requirements.txt --output-file binder/requirements.txt"
            in recipe)
    post = ROOT / "binder" / "postBuild"
    assert os.access(post, os.X_OK)
    assert "pip install --no-deps ." in post.read_text()


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """``python -m build`` of a copy of the package's sources: an sdist, then a wheel from it."""
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "usaav_edu", src / "usaav_edu",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc"))
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(src)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return out


@pytest.mark.slow
def test_build_makes_an_sdist_and_a_wheel_with_every_module(dist):
    wheels, sdists = list(dist.glob("*.whl")), list(dist.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1
    with zipfile.ZipFile(wheels[0]) as z:
        names = set(z.namelist())
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.message_from_bytes(z.read(info))
        entry = z.read(info.replace("METADATA", "entry_points.txt")).decode()
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "usaav_edu").rglob("*.py")}
    assert modules - names == set()
    assert meta["Name"] == "usaav-edu"
    # what `pip install <wheel>` brings: requirements without an extra's marker; the rest by extra
    requires = list(map(Requirement, meta.get_all("Requires-Dist")))
    assert {canonicalize_name(r.name) for r in requires if r.marker is None} == CORE
    assert {"widgets", "sweep", "all", "lab", "book", "dev"} <= set(meta.get_all("Provides-Extra"))
    widgets = {r.name for r in requires if r.marker is not None and r.marker.evaluate({"extra": "widgets"})}
    assert {"ipywidgets", "pythreejs", "matplotlib", "jupyterquiz"} <= widgets
    assert "usaav-edu = usaav_edu.cli:main" in entry


CORE_RUN = """\
import importlib.util, json, sys
import numpy as np
import usaav_edu as ue

report = {"installed": [m for m in sys.argv[1:] if importlib.util.find_spec(m) is not None],
          "where": ue.__file__}
traj = ue.simulate(ue.models.usa(1.0), ue.sphere.uniform(8, 3, seed=0), t_max=1.0)
report["shape"] = list(traj.x.shape)
report["on the sphere"] = bool(np.allclose(np.linalg.norm(traj.x, axis=-1), 1.0))
report["imported"] = sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[1:]))
for name, call in [("sweep", lambda: ue.sweep("usa", {"beta": [1.0]}, t_max=1.0)),
                   ("widgets", lambda: importlib.import_module("usaav_edu.widgets")),
                   ("figures", lambda: importlib.import_module("usaav_edu.figures")),
                   ("quizzes", lambda: ue.quizzes.render(1))]:
    try:
        call()
        report[name] = "ran"
    except ModuleNotFoundError as e:
        report[name] = str(e)
print(json.dumps(report))
"""


def _pip_install(venv: Path, env: dict, *requirements: str) -> None:
    """``pip install`` into ``venv``, at requirements.txt's pins."""
    r = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                        "--constraint", str(ROOT / "requirements.txt"), *requirements],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


@pytest.fixture(scope="module")
def fresh_venv(dist, tmp_path_factory) -> types.SimpleNamespace:
    """A new virtual environment with the wheel alone, its core dependencies (numpy, numba,
    llvmlite, tqdm) at the pins: the ``usaav-edu simulate`` command and :data:`CORE_RUN` are run
    there; then the widgets extra is added, and a kernel and a runner (Jupyter brings these), as
    for a reader who downloads a chapter.  (One environment, so the kernels compile once.)"""
    root = tmp_path_factory.mktemp("venv")
    venv = root / "env"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", "PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    wheel = next(dist.glob("*.whl"))
    _pip_install(venv, env, str(wheel))
    out = root / "run.npz"
    cli = subprocess.run([str(venv / "bin" / "usaav-edu"), "simulate", "--n", "8", "--t-max", "1",
                          "--out", str(out)], cwd=root, capture_output=True, text=True, env=env)
    core = subprocess.run([str(venv / "bin" / "python"), "-c", CORE_RUN, *NOT_CORE],
                          cwd=root, capture_output=True, text=True, env=env)
    _pip_install(venv, env, f"{wheel}[widgets]", "nbclient", "ipykernel")
    return types.SimpleNamespace(venv=venv, env=env, cli=cli, out=out, core=core)


@pytest.mark.slow
def test_cli_simulates_from_the_installed_wheel(fresh_venv):
    r = fresh_venv.cli  # with the core dependencies only
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    import usaav_edu as ue

    traj = ue.Trajectory.load(fresh_venv.out)  # checks shapes and that every row is on the sphere
    assert traj.x.shape[1:] == (8, 3) and traj.t[-1] == pytest.approx(1.0)


@pytest.mark.slow
def test_the_core_install_simulates_and_names_the_extra_a_missing_part_needs(fresh_venv):
    r = fresh_venv.core
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(r.stdout.strip().splitlines()[-1])
    assert report["installed"] == [] and report["imported"] == []  # no dask, ipywidgets, matplotlib
    assert Path(report["where"]).is_relative_to(fresh_venv.venv)  # the installed copy
    assert report["shape"] == [101, 8, 3] and report["on the sphere"]
    assert report["sweep"].startswith("usaav_edu.sweep needs dask, distributed, xarray, zarr")
    assert report["sweep"].endswith('pip install "usaav-edu[sweep]"')
    for part in ("widgets", "figures", "quizzes"):
        assert f"usaav_edu.{part} needs " in report[part], report[part]
        assert report[part].endswith('pip install "usaav-edu[widgets]"'), report[part]


def test_widgets_import_from_the_installed_wheel_with_its_extra(fresh_venv, tmp_path):
    venv, env = fresh_venv.venv, fresh_venv.env
    r = subprocess.run([str(venv / "bin" / "python"), "-c",
                        "import usaav_edu, usaav_edu.widgets as w; w.TrajectoryPlayer; "
                        "print(usaav_edu.__file__)"],
                       cwd=tmp_path, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert Path(r.stdout.strip()).is_relative_to(venv)  # the installed copy, not the repository


def _downloadable_chapter() -> Path:
    """The chapter as the built site offers it for download, or its source if the site is not built
    (the site's copy is the source as it was at the last build; an outdated copy is not used)."""
    source = ROOT / "book" / f"{CHAPTER}.ipynb"
    site = ROOT / "_build" / "html" / "_sources" / "book" / f"{CHAPTER}.ipynb"
    if site.is_file() and json.loads(site.read_text())["cells"] == json.loads(source.read_text())["cells"]:
        return site
    return source


@pytest.mark.slow
def test_a_downloaded_chapter_runs_top_to_bottom_in_the_fresh_environment(fresh_venv, tmp_path):
    venv, env = fresh_venv.venv, fresh_venv.env
    nb = tmp_path / f"{CHAPTER}.ipynb"
    shutil.copy(_downloadable_chapter(), nb)
    # the chapter starts with its set-up cell (written here if the chapter has none yet): in a real
    # kernel where the package is installed it must run and do nothing
    if not any(setup_cell.is_setup_cell(c) for c in json.loads(nb.read_text())["cells"]):
        setup_cell.update_notebook(nb, PINNED)
    # executes every cell, stops at the first error; then reports where the kernel found the package
    run = ("import sys, nbformat, nbclient\n"
           "nb = nbformat.read(sys.argv[1], as_version=4)\n"
           "n = sum(c.cell_type == 'code' for c in nb.cells)\n"
           "nb.cells.append(nbformat.v4.new_code_cell('import usaav_edu; print(usaav_edu.__file__)'))\n"
           "nbclient.NotebookClient(nb, timeout=600, kernel_name='python3',\n"
           "                        resources={'metadata': {'path': sys.argv[2]}}).execute()\n"
           "print(n, 'code cells ran')\n"
           "print(len(nb.cells[0].outputs), 'outputs of the set-up cell')\n"
           "print(nb.cells[-1].outputs[0]['text'].strip())\n")
    r = subprocess.run([str(venv / "bin" / "python"), "-c", run, str(nb), str(tmp_path)],
                       cwd=tmp_path, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    ran, setup_outputs, where = r.stdout.strip().splitlines()[-3:]
    n_code = sum(c["cell_type"] == "code" for c in json.loads(nb.read_text())["cells"])
    assert ran == f"{n_code} code cells ran" and n_code > 0
    assert setup_outputs == "0 outputs of the set-up cell"  # nothing installed, nothing printed
    assert Path(where).is_relative_to(venv)  # the kernel ran in the fresh environment


# ---------------------------------------------------------------------------------------------
# the JupyterLab numbering cell (tools/setup_cell.py)


def test_chapter_numbers_follow_the_numbered_parts_of_the_toc():
    numbers = setup_cell.chapter_numbers(ROOT / "_toc.yml")
    assert numbers == {f"ch{k:02d}_{name}": k for k, name in enumerate(
        ["particles", "metastability", "conditional_dirac", "rope", "generalized_rope",
         "prefix_gauges", "spectral", "experiments", "meanfield", "beyond"], start=1)}


def test_every_chapter_gives_jupyterlab_its_number_and_no_other_page_does():
    numbers = setup_cell.chapter_numbers(ROOT / "_toc.yml")
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        numbering = [i for i, c in enumerate(cells) if setup_cell.is_numbering_cell(c)]
        chapter = numbers.get(path.stem)
        if chapter is None:
            assert numbering == [], f"{path.name} is no numbered chapter but has a numbering cell"
            continue
        assert numbering == [1], f"{path.name}: numbering cells at {numbering}; run make setup-cells"
        cell = cells[1]
        assert cell["cell_type"] == "markdown" and "remove-cell" in cell["metadata"]["tags"]
        source = "".join(cell["source"])
        # frontmatter for jupyterlab_myst: a YAML block first in the first markdown cell
        assert source.startswith("```yaml\n") and source.rstrip().endswith("```"), source
        front = yaml.safe_load(source.strip().removeprefix("```yaml").removesuffix("```"))
        assert front == {"numbering": {"enumerator": f"{chapter}.%s"}}, (path.name, front)
        assert not any(c["cell_type"] == "markdown" for c in cells[:1])


def test_numbering_cell_is_replaced_not_added(chapter_copy):
    setup_cell.update_notebook(chapter_copy, PINNED, chapter=3)
    setup_cell.update_notebook(chapter_copy, PINNED, chapter=4)
    cells = json.loads(chapter_copy.read_text())["cells"]
    found = [c for c in cells if setup_cell.is_numbering_cell(c)]
    assert len(found) == 1 and cells[1] is not None and setup_cell.is_numbering_cell(cells[1])
    assert 'enumerator: "4.%s"' in "".join(found[0]["source"])
    assert not setup_cell.update_notebook(chapter_copy, PINNED, chapter=4)  # idempotent
    setup_cell.update_notebook(chapter_copy, PINNED, chapter=None)
    assert not any(setup_cell.is_numbering_cell(c) for c in json.loads(chapter_copy.read_text())["cells"])
    with pytest.raises(ValueError, match="chapter must be a chapter number"):
        setup_cell.numbering_cell(0)
    with pytest.raises(ValueError, match="chapter must be a chapter number"):
        setup_cell.numbering_cell(True)
