"""Write the set-up cell at the top of the book's notebooks, so that each runs anywhere.

A chapter downloaded from the book, or opened from a launch button on Colab or Binder, starts with
this cell.  Where the ``usaav_edu`` package cannot be imported, it installs the package from the
one source the book pins, and from nowhere else; under Colab it turns on Colab's custom widget
manager (the 3-D spheres are pythreejs widgets, which Colab shows only through it).  Where the
package is installed already (the book build, ``make lab``, Binder) the cell does nothing.

The cell is tagged ``remove-cell`` (the built pages leave it out; the downloadable notebook keeps
it) and ``usaav-edu-setup``, the tag by which this tool finds it again; its source is folded in
JupyterLab and Jupyter Notebook (``jupyter.source_hidden``: the chapter's title is the first thing
on screen, the cell runs as it is and one click shows it): running the tool twice
gives the same file, and a changed install source replaces the old cell rather than adding one.

A numbered chapter also gets, right after it, a markdown cell for JupyterLab only: the MyST
renderer there (jupyterlab_myst) numbers a notebook's blocks from 1 ("Theorem 2") where the book
prints "Theorem 1.2"; a YAML block first in a notebook's first markdown cell is page frontmatter
for that renderer, and ``numbering: enumerator: "<chapter>.%s"`` makes it print the book's
numbers.  The cell is tagged ``remove-cell`` too (the book and its pages leave it out; Sphinx
numbers the chapters itself) and ``usaav-edu-lab-numbering``; the chapter's number is its place
among the numbered parts of ``_toc.yml``.

The install source is pinned, never a bare distribution name (whoever registered that name on a
package index would run code in every reader's notebook).  It is one of

* the repository at a commit or a release tag: ``repository.url`` and ``repository.install_ref``
  in ``_config.yml`` (a 40-hex commit, or a tag such as ``v0.1.0``), which the cell installs as
  ``usaav-edu[all] @ git+<url>@<ref>``; or ``--source git+https://<host>/<owner>/<repo>@<ref>``;
* a wheel the book's site ships: ``--source <path of the .whl>`` with ``--wheel-url <the https
  address the site serves it at>``; the cell names the wheel's version and sha256, and pip checks
  the sha256 (``#sha256=`` on the address) before it installs.

With neither, the cell installs nothing: where the package is missing it stops with a message that
says how to get it.  A branch (``@main``), an abbreviated commit or an unpinned URL is refused.

    python tools/setup_cell.py book/ch01_particles.ipynb book/ch02_metastability.ipynb
    python tools/setup_cell.py --source "git+https://github.com/<owner>/usaav-edu@v0.1.0" book/ch*.ipynb
    python tools/setup_cell.py --source dist/usaav_edu-0.1.0-py3-none-any.whl \\
        --wheel-url https://<owner>.github.io/usaav-edu/usaav_edu-0.1.0-py3-none-any.whl book/ch*.ipynb
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
TAG = "usaav-edu-setup"
TAGS = ["remove-cell", TAG]
CELL_ID = "usaav-edu-setup"
#: the cell's metadata besides its tags: its source folded in JupyterLab (nbformat's ``jupyter``
#: namespace), so that a notebook opens on the chapter, not on the installer
FOLDED = {"jupyter": {"source_hidden": True}}
#: the JupyterLab numbering cell of a chapter (see the module's docstring)
NUMBERING_TAG = "usaav-edu-lab-numbering"
NUMBERING_ID = "usaav-edu-lab-numbering"
NUMBERING = """\
```yaml
# JupyterLab numbers this chapter's blocks as the book does (Theorem {chapter}.1);
# the book leaves this cell out.  Written by tools/setup_cell.py.
numbering:
  enumerator: "{chapter}.%s"
```
"""
# the package with the extras the chapters import (widgets and sweep: usaav-edu[all], pyproject.toml)
DISTRIBUTION = "usaav-edu[all]"
# a repository address, https://<host>/<owner>/<repository>: nothing a shell would expand
REPO_FORM = re.compile(r"^https://[A-Za-z0-9.-]+(/[A-Za-z0-9._~-]+){2,}$")
# a pin that names one tree: a full commit, or a release tag (v1, v1.2.3, 0.1, 0.1.0rc1).  A
# branch name, an abbreviated commit (1234567 too: a tag without v needs a dot) or any other ref
# can move or be ambiguous, and is refused.
REF_FORM = re.compile(r"^([0-9a-f]{40}|(v[0-9]+|[0-9]+\.[0-9]+)(\.[0-9]+)*([.-]?(a|b|rc|post|dev)[0-9]+)*)$")
COMMIT_FORM = re.compile(r"^[0-9a-f]{40}$")
SHA256_FORM = re.compile(r"^[0-9a-f]{64}$")
# a wheel's file name (PEP 427): usaav_edu-<version>(-<build>)-<python>-<abi>-<platform>.whl
WHEEL_NAME = re.compile(r"^usaav_edu-(?P<version>[0-9][A-Za-z0-9.+!]*)(-[0-9][A-Za-z0-9_.]*)?"
                        r"-[A-Za-z0-9_.]+-[A-Za-z0-9_.]+-[A-Za-z0-9_.]+\.whl$")
WHEEL_URL = re.compile(r"^https://[A-Za-z0-9.-]+(:[0-9]+)?(/[A-Za-z0-9._~%+-]+)+\.whl$")
# what the cell gives to pip: the repository at a pinned ref, or a shipped wheel with its sha256
GIT_SPEC = re.compile(r"^usaav-edu\[all\] @ git\+(?P<url>https://[^@\s]+)@(?P<ref>[^@/\s]+)$")
WHEEL_SPEC = re.compile(r"^usaav-edu\[all\] @ (?P<url>https://[^#\s]+)#sha256=(?P<sha256>\S+)$")

HEADER = """\
# Set-up: run this first outside the book's own environment (Colab,
# Binder, any Jupyter).  It installs the usaav_edu package if it is
# missing, from the one source this book pins, and, on Colab, turns on
# the widget manager that the 3-D spheres need.  Where the package is
# installed already, it does nothing.
import importlib
import importlib.util
import sys

"""

INSTALL = """\
{what}
SOURCE = ({lines})
if importlib.util.find_spec("usaav_edu") is None:
    %pip install --quiet "$SOURCE"
    importlib.invalidate_caches()
    if importlib.util.find_spec("usaav_edu") is None:
        raise RuntimeError("usaav_edu did not install from " + SOURCE
                           + " (pip says why above)")
"""

NO_SOURCE = """\
# This copy of the book pins no source to install the package from.
if importlib.util.find_spec("usaav_edu") is None:
    raise RuntimeError(
        "usaav_edu is not installed, and this notebook pins no source to "
        "install it from, so it installs nothing.  Run the notebook in the "
        "book's environment (make lab, or Binder), or install usaav-edu "
        "from a commit of its repository you trust; or, in the book's "
        "sources, set repository.url and repository.install_ref in "
        "_config.yml and run make setup-cells.")
"""

COLAB = """\
if "google.colab" in sys.modules:
    from google.colab import output
    output.enable_custom_widget_manager()"""


def _config_string(config_path: Path, section: str, key: str) -> str:
    config = yaml.safe_load(Path(config_path).read_text(encoding="utf-8")) or {}
    part = config.get(section) or {} if isinstance(config, dict) else None
    if not isinstance(part, dict):
        raise ValueError(f"{config_path}: {section!r} must be a mapping, got {type(part).__name__}")
    value = part.get(key) or ""
    if not isinstance(value, str):
        raise ValueError(f"{config_path}: {section}.{key} must be a string, "
                         f"got {type(value).__name__}")
    return value.strip()


def repository_url(config_path: Path) -> str:
    """``repository.url`` of a Jupyter Book configuration, '' when it is not set."""
    return _config_string(config_path, "repository", "url").rstrip("/")


def install_ref(config_path: Path) -> str:
    """``repository.install_ref``, the commit or tag the set-up cell installs; '' when unset."""
    return _config_string(config_path, "repository", "install_ref")


def install_spec(url: str, ref: str) -> str:
    """What the cell gives to pip for the repository ``url`` at ``ref``:
    ``usaav-edu[all] @ git+<url>@<ref>`` (the package with the extras the chapters import).

    ``ref`` must pin one tree: a 40-hex commit or a release tag.  A URL without it, or with a
    branch or an abbreviated commit, is refused.
    """
    if not isinstance(url, str) or not isinstance(ref, str):
        raise TypeError(f"url and ref must be strings, got {type(url).__name__} and "
                        f"{type(ref).__name__}")
    url, ref = url.strip().rstrip("/"), ref.strip()
    if not REPO_FORM.match(url):
        raise ValueError(f"url must be an https:// repository URL "
                         f"(https://<host>/<owner>/<repository>), got {url!r}")
    if not ref:
        raise ValueError(f"url {url!r} is not pinned: without a commit or tag it installs whatever "
                         f"its branch holds; give ref, a 40-hex commit or a release tag")
    if not REF_FORM.match(ref):
        raise ValueError(f"ref must pin the repository at a 40-hex commit or a release tag such as "
                         f"v0.1.0 (a branch or an abbreviated commit can move), got {ref!r}")
    return f"{DISTRIBUTION} @ git+{url}@{ref}"


def config_spec(config_path: Path) -> str:
    """The install source ``_config.yml`` pins: ``repository.url`` at ``repository.install_ref``.

    '' while ``install_ref`` is unset: a repository URL alone (it turns on the launch buttons)
    pins nothing, and the cell then installs nothing.
    """
    ref = install_ref(config_path)
    if not ref:
        return ""
    url = repository_url(config_path)
    if not url:
        raise ValueError(f"{config_path}: repository.install_ref {ref!r} needs repository.url, "
                         f"the repository it is a commit or tag of")
    return install_spec(url, ref)


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def wheel_spec(path: Path, url: str) -> str:
    """``usaav-edu[all] @ <url>#sha256=<sha256 of the wheel at path>``: the shipped wheel, hash-checked.

    ``url`` is the https address the book's site serves the wheel at; it ends in the wheel's name.
    """
    path = Path(path)
    if not WHEEL_NAME.match(path.name):
        raise ValueError(f"source must be a usaav_edu wheel (usaav_edu-<version>-...-<platform>.whl), "
                         f"got {str(path)!r}")
    if not path.is_file():
        raise ValueError(f"source: no wheel at {str(path)!r}")
    if not isinstance(url, str) or not WHEEL_URL.match(url) or url.rsplit("/", 1)[1] != path.name:
        raise ValueError(f"wheel_url must be the https address the site serves {path.name} at "
                         f"(ending in /{path.name}), got {url!r}")
    return f"{DISTRIBUTION} @ {url}#sha256={sha256_of(path)}"


def source_spec(source: str, wheel_url: str | None = None) -> str:
    """The pip requirement for ``--source``: a pinned ``git+https`` URL, or a local wheel's path.

    A bare distribution name (``usaav-edu``, ``usaav-edu==0.1.0``) is refused: it installs
    whatever a package index serves under that name.
    """
    if not isinstance(source, str) or not source.strip():
        raise ValueError(f"source must be a git+https URL pinned to a commit or tag, or the path of "
                         f"a wheel, got {source!r}")
    source = source.strip()
    if source.startswith("git+"):
        url, sep, ref = source[len("git+"):].rpartition("@")
        if not sep or "/" in ref:  # no @ after the address: unpinned
            url, ref = source[len("git+"):], ""
        return install_spec(url, ref)
    if source.endswith(".whl"):
        if not wheel_url:
            raise ValueError(f"source {source!r} is a wheel: give wheel_url, the https address the "
                             f"book's site serves it at")
        return wheel_spec(Path(source), wheel_url)
    raise ValueError(f"source must be a git+https URL pinned to a commit or tag "
                     f"(git+https://github.com/<owner>/usaav-edu@<commit or tag>) or the path of a "
                     f"usaav_edu wheel, got {source!r}: a bare name installs whatever a package "
                     f"index serves under it")


def _literals(spec: str, width: int = 56) -> str:
    """``spec`` as adjacent Python string literals of at most ``width`` characters each."""
    parts = [spec[i:i + width] for i in range(0, len(spec), width)]
    return "\n          ".join(f'"{p}"' for p in parts)


def cell_source(spec: str) -> str:
    """The set-up cell's code: where the package is missing, install ``spec``, or stop if ''.

    ``spec`` is ``usaav-edu[all] @ git+<url>@<commit or tag>`` or
    ``usaav-edu[all] @ <wheel url>#sha256=<hex>``;
    '' pins nothing: the cell installs nothing and, where the package is missing, raises.
    """
    if not isinstance(spec, str):
        raise ValueError(f"spec must be a string, got {type(spec).__name__}")
    spec = spec.strip()
    if not spec:
        return HEADER + NO_SOURCE + COLAB
    git, wheel = GIT_SPEC.match(spec), WHEEL_SPEC.match(spec)
    if git:
        install_spec(git["url"], git["ref"])  # checks the address and the pin
        ref = git["ref"]
        what = (f"# The package's source: its repository at commit {ref[:12]}."
                if COMMIT_FORM.match(ref) else
                f"# The package's source: its repository at the tag {ref}.")
    elif (wheel and WHEEL_URL.match(wheel["url"]) and SHA256_FORM.match(wheel["sha256"])
          and (named := WHEEL_NAME.match(wheel["url"].rsplit("/", 1)[1]))):
        version = named["version"]
        what = (f"# The package's source: the wheel of usaav-edu {version} that the book's\n"
                f"# site ships, sha256 {wheel['sha256'][:32]}\n"
                f"# {wheel['sha256'][32:]} (pip checks it before it installs).")
    else:
        raise ValueError(f"spec must pin the package's source, 'usaav-edu[all] @ "
                         f"git+https://...@<commit or tag>' or "
                         f"'usaav-edu[all] @ https://.../<wheel>.whl#sha256=<hex>', got "
                         f"{spec!r}")
    return HEADER + INSTALL.format(what=what, lines=_literals(spec)) + COLAB


def setup_cell(spec: str) -> dict:
    """The set-up cell as an nbformat 4 code cell: no outputs, tagged ``TAGS``, source folded."""
    lines = cell_source(spec).splitlines(keepends=True)
    metadata = {**json.loads(json.dumps(FOLDED)), "tags": list(TAGS)}
    return {"cell_type": "code", "execution_count": None, "id": CELL_ID,
            "metadata": metadata, "outputs": [], "source": lines}


def chapter_numbers(toc_path: Path) -> dict[str, int]:
    """The book's chapter numbers by notebook stem: their order in the numbered parts of the toc."""
    toc = yaml.safe_load(Path(toc_path).read_text(encoding="utf-8"))
    numbers: dict[str, int] = {}
    for part in toc.get("parts") or []:
        if not part.get("numbered"):
            continue
        for chapter in part.get("chapters") or []:
            numbers[Path(chapter["file"]).stem] = len(numbers) + 1
    return numbers


def numbering_cell(chapter: int) -> dict:
    """Chapter ``chapter``'s JupyterLab numbering cell: a markdown cell tagged remove-cell."""
    if isinstance(chapter, bool) or not isinstance(chapter, int) or chapter < 1:
        raise ValueError(f"chapter must be a chapter number >= 1, got {chapter!r}")
    lines = NUMBERING.format(chapter=chapter).splitlines(keepends=True)
    return {"cell_type": "markdown", "id": NUMBERING_ID,
            "metadata": {"tags": ["remove-cell", NUMBERING_TAG]}, "source": lines}


def is_numbering_cell(cell: dict) -> bool:
    return NUMBERING_TAG in (cell.get("metadata", {}).get("tags") or [])


def with_numbering_cell(nb: dict, chapter: int | None) -> dict:
    """A copy of ``nb`` with chapter ``chapter``'s numbering cell right after the set-up cell.

    Every earlier numbering cell is removed; ``chapter=None`` (a page that is not a numbered
    chapter) leaves none.  ``nb`` must begin with its set-up cell.
    """
    cells = [c for c in nb["cells"] if not is_numbering_cell(c)]
    if not cells or not is_setup_cell(cells[0]):
        raise ValueError("nb must begin with the set-up cell (with_setup_cell first)")
    out = dict(nb)
    if chapter is None:
        out["cells"] = cells
        return out
    if NUMBERING_ID in [c.get("id") for c in cells]:
        raise ValueError(f"nb already has a cell with id {NUMBERING_ID!r} that is not tagged "
                         f"{NUMBERING_TAG!r}")
    cell = numbering_cell(chapter)
    if nb.get("nbformat_minor", 0) < 5:
        del cell["id"]
    out["cells"] = cells[:1] + [cell] + cells[1:]
    return out


def is_setup_cell(cell: dict) -> bool:
    return TAG in (cell.get("metadata", {}).get("tags") or [])


def with_setup_cell(nb: dict, spec: str) -> dict:
    """A copy of notebook ``nb`` whose first cell is the set-up cell and which has no other one.

    Every earlier set-up cell (found by its tag) is removed; no other cell is changed.
    """
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ValueError("nb must be a notebook: a mapping with a list of 'cells'")
    if nb.get("nbformat") != 4:
        raise ValueError(f"nb must be an nbformat 4 notebook, got nbformat {nb.get('nbformat')!r}")
    cells = [c for c in nb["cells"] if not is_setup_cell(c)]
    taken = [c.get("id") for c in cells]
    if CELL_ID in taken:
        raise ValueError(f"nb already has a cell with id {CELL_ID!r} that is not tagged {TAG!r}")
    cell = setup_cell(spec)
    if nb.get("nbformat_minor", 0) < 5:  # cell ids exist from nbformat 4.5 on: an older notebook stays valid
        del cell["id"]
    out = dict(nb)
    out["cells"] = [cell] + cells
    return out


def dumps(nb: dict) -> str:
    """A notebook as Jupyter saves it: one-space indent, non-ASCII kept, final newline."""
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and os.replace."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


#: ``update_notebook(..., chapter=KEEP)``: leave the numbering cell as it is
KEEP = "keep"


def update_notebook(path: Path, spec: str, chapter: int | None | str = KEEP) -> bool:
    """Put the set-up cell at the top of the notebook at ``path``; True if the file changed.

    ``chapter``: the book's number of the chapter (its JupyterLab numbering cell follows the
    set-up cell), None for a page that is not a numbered chapter (no numbering cell), or
    ``KEEP`` (the default) to leave the numbering cell as it is.
    """
    if isinstance(chapter, str) and chapter != KEEP:
        raise ValueError(f"chapter must be a chapter's number, None or {KEEP!r}, got {chapter!r}")
    path = Path(path)
    if path.suffix != ".ipynb":
        raise ValueError(f"path must be a .ipynb notebook, got {str(path)!r}")
    if not path.is_file():
        raise ValueError(f"path must be an existing notebook, {str(path)!r} is not a file")
    old = path.read_text(encoding="utf-8")
    try:
        nb = json.loads(old)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not a notebook (invalid JSON: {e})") from None
    nb = with_setup_cell(nb, spec)
    if not isinstance(chapter, str):  # KEEP leaves the numbering cell as it is
        nb = with_numbering_cell(nb, chapter)
    new = dumps(nb)
    if new == old:
        return False
    write_atomic(path, new)
    return True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("notebooks", nargs="+", type=Path, help="notebooks to update in place")
    ap.add_argument("--source", help="where the cell installs the package from: a git+https URL "
                                     "pinned to a 40-hex commit or a release tag, or the path of a "
                                     "usaav_edu wheel the site ships (default: repository.url at "
                                     "repository.install_ref in --config; neither: install nothing)")
    ap.add_argument("--wheel-url", help="with a wheel as --source: the https address the book's "
                                        "site serves it at")
    ap.add_argument("--config", type=Path, default=ROOT / "_config.yml",
                    help="the book's _config.yml (default: %(default)s)")
    ap.add_argument("--toc", type=Path, default=ROOT / "_toc.yml",
                    help="the book's _toc.yml, for the chapters' numbers (default: %(default)s)")
    args = ap.parse_args(argv)
    try:
        if args.source is not None:
            spec = source_spec(args.source, args.wheel_url)
        elif args.wheel_url is not None:
            raise ValueError("--wheel-url needs a wheel as --source")
        else:
            spec = config_spec(args.config)
    except ValueError as e:
        ap.error(str(e))
    chapters = chapter_numbers(args.toc)
    for path in args.notebooks:
        changed = update_notebook(path, spec, chapters.get(Path(path).stem))
        what = f"installs {spec}" if spec else "no source pinned: installs nothing"
        print(f"{path}: {'set-up cell written' if changed else 'unchanged'} ({what})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
