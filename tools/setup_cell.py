"""Write the set-up cell at the top of the book's notebooks, so that each runs anywhere.

A chapter downloaded from the book, or opened from a launch button on Colab or Binder, starts with
this cell.  It installs the ``usaav_edu`` package when the package cannot be imported and, under
Colab, turns on Colab's custom widget manager (the 3-D spheres are pythreejs widgets, which Colab
shows only through it).  Where the package is installed already (the book build, ``make lab``,
Binder) the cell does nothing.

The cell is tagged ``remove-cell`` (the built pages leave it out; the downloadable notebook keeps
it) and ``usaav-edu-setup``, the tag by which this tool finds it again: running the tool twice
gives the same file, and a changed install source replaces the old cell rather than adding one.

The package is installed from the repository named by ``repository.url`` in ``_config.yml``
(``pip install "usaav-edu @ git+<url>"``) when that is set, else by its distribution name
``usaav-edu``; ``--source`` overrides both.

    python tools/setup_cell.py book/ch01_particles.ipynb book/ch02_metastability.ipynb
    python tools/setup_cell.py --source "usaav-edu==0.1.0" book/ch*.ipynb
"""
from __future__ import annotations

import argparse
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
DISTRIBUTION = "usaav-edu"
# a pip requirement: a name with an optional version, or "name @ url"; nothing a shell would expand
# inside double quotes
SPEC_FORM = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\s*(==|>=|<=|~=|!=|>|<)\s*[A-Za-z0-9.*+!-]+)?"
                       r"(\s*@\s*(git\+)?https://[A-Za-z0-9._~:/@%+#=-]+)?$")

TEMPLATE = '''\
# Set-up: run this first outside the book's own environment (Colab,
# Binder, any Jupyter).  It installs the usaav_edu package if it is
# missing and, on Colab, turns on the widget manager that the 3-D spheres
# need.  Where the package is installed already, it does nothing.
import importlib
import importlib.util
import sys

if importlib.util.find_spec("usaav_edu") is None:
    %pip install --quiet {spec}
    importlib.invalidate_caches()
if "google.colab" in sys.modules:
    from google.colab import output
    output.enable_custom_widget_manager()'''


def repository_url(config_path: Path) -> str:
    """``repository.url`` of a Jupyter Book configuration, '' when it is not set."""
    config = yaml.safe_load(Path(config_path).read_text(encoding="utf-8")) or {}
    repo = config.get("repository") or {}
    if not isinstance(repo, dict):
        raise ValueError(f"{config_path}: 'repository' must be a mapping, got {type(repo).__name__}")
    url = repo.get("url") or ""
    if not isinstance(url, str):
        raise ValueError(f"{config_path}: repository.url must be a string, got {type(url).__name__}")
    return url.strip().rstrip("/")


def install_spec(url: str = "") -> str:
    """What the cell gives to pip: ``usaav-edu @ git+<url>`` for a repository URL, else ``usaav-edu``."""
    if not isinstance(url, str):
        raise TypeError(f"url must be a string, got {type(url).__name__}")
    if not url:
        return DISTRIBUTION
    if not url.startswith("https://"):
        raise ValueError(f"url must be an https:// repository URL, got {url!r}")
    return f"{DISTRIBUTION} @ git+{url}"


def cell_source(spec: str) -> str:
    """The set-up cell's code, installing ``spec`` (a pip requirement) when the package is missing."""
    if not isinstance(spec, str) or not SPEC_FORM.match(spec.strip()):
        raise ValueError(f"spec must be a pip requirement such as 'usaav-edu' or "
                         f"'usaav-edu @ git+https://...', got {spec!r}")
    return TEMPLATE.format(spec=f'"{spec.strip()}"')


def setup_cell(spec: str) -> dict:
    """The set-up cell as an nbformat 4 code cell: no outputs, tagged ``TAGS``."""
    lines = cell_source(spec).splitlines(keepends=True)
    return {"cell_type": "code", "execution_count": None, "id": CELL_ID,
            "metadata": {"tags": list(TAGS)}, "outputs": [], "source": lines}


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


def update_notebook(path: Path, spec: str) -> bool:
    """Put the set-up cell at the top of the notebook at ``path``; True if the file changed."""
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
    new = dumps(with_setup_cell(nb, spec))
    if new == old:
        return False
    write_atomic(path, new)
    return True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("notebooks", nargs="+", type=Path, help="notebooks to update in place")
    ap.add_argument("--source", help="pip requirement to install (default: from repository.url in "
                                     "--config, else the distribution name usaav-edu)")
    ap.add_argument("--config", type=Path, default=ROOT / "_config.yml",
                    help="the book's _config.yml (default: %(default)s)")
    args = ap.parse_args(argv)
    spec = args.source if args.source is not None else install_spec(repository_url(args.config))
    for path in args.notebooks:
        changed = update_notebook(path, spec)
        print(f"{path}: {'set-up cell written' if changed else 'unchanged'} (installs {spec})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
