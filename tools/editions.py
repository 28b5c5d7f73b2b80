"""Two editions of the book from one source: the full book and the student edition.

``make book`` builds the full book (solutions in dropdowns).  ``make book-student`` runs::

    python tools/editions.py student            # build, strip, check -> _build/student/_build/html

which

1. merges ``_config_student.yml`` into ``_config.yml`` (sphinx-exercise's ``hide_solutions``: a
   ``{solution}`` directive then produces no output at all) and drops the pages it lists under
   ``toc_exclude`` from ``_toc.yml``, writing both into the build folder;
2. builds with Jupyter Book, reusing the execution cache of ``make book`` (``_build/.jupyter_cache``)
   so no notebook runs twice;
3. removes the solutions from the page sources the site offers for download (the ".ipynb" and
   ".md" buttons serve ``_sources/``), including gated ``solution-start``/``solution-end`` blocks;
4. checks the result: every sentence of every solution in the book's sources is absent from every
   file of the student site (``check`` does only this step on an existing build).

Other commands: ``python tools/editions.py check SITE`` (exit 1 when solution text is found) and
``python tools/editions.py probes`` (print the sentences the check looks for).
"""
from __future__ import annotations

import argparse
import copy
import html
import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
FENCE_OPEN = re.compile(r"^\s*(`{3,}|:{3,})\s*\{([\w:.-]+)\}(.*)$")
TOOL_KEYS = ("title_suffix", "toc_exclude")
#: text files of a built site that may carry page text
SITE_SUFFIXES = {".html", ".js", ".ipynb", ".md", ".txt", ".json"}
MIN_PROBE = 24
#: class that marks an admonition as an answer note for instructors (the instructor guide's notes
#: on its discussion questions): removed and checked like a solution
ANSWER_CLASS = "answer-note"


# ----------------------------------------------------------------------------------------------
# configuration


def deep_merge(base: dict, over: dict) -> dict:
    """``base`` updated by ``over``: nested dicts merged key by key, anything else replaced."""
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def student_config(config: dict, overrides: dict, cache: Path | None = None) -> dict:
    """The student edition's Jupyter Book configuration."""
    over = {k: v for k, v in overrides.items() if k not in TOOL_KEYS}
    cfg = deep_merge(config, over)
    cfg["title"] = str(config.get("title", "")) + str(overrides.get("title_suffix", ""))
    cfg.setdefault("sphinx", {}).setdefault("config", {})["hide_solutions"] = True
    if cache is not None:
        cfg.setdefault("execute", {})["cache"] = str(cache)
    return cfg


def prune_toc(node, exclude: set[str]):
    """A copy of a _toc.yml tree without the entries whose ``file`` is in ``exclude``."""
    if isinstance(node, list):
        return [prune_toc(x, exclude) for x in node
                if not (isinstance(x, dict) and x.get("file") in exclude)]
    if isinstance(node, dict):
        out = {k: prune_toc(v, exclude) for k, v in node.items()}
        # a part or section left empty is dropped
        for key in ("chapters", "sections"):
            if key in out and not out[key]:
                del out[key]
        if "parts" in out:
            out["parts"] = [p for p in out["parts"] if p.get("chapters")]
        return out
    return node


# ----------------------------------------------------------------------------------------------
# solutions in MyST sources


def _fence_end(lines: list[str], start: int, fence: str) -> int:
    char, width = fence[0], len(fence)
    for k in range(start + 1, len(lines)):
        s = lines[k].strip()
        if len(s) >= width and set(s) == {char}:
            return k
    return len(lines) - 1


def _classes(lines: list[str], start: int) -> set[str]:
    """The classes named by the ``:class:`` option of the directive opened at ``lines[start]``."""
    for line in lines[start + 1:]:
        m = re.match(r"^\s*:([\w-]+):\s*(.*)$", line)
        if not m:
            break
        if m.group(1) == "class":
            return set(m.group(2).split())
    return set()


def split_solutions(text: str, gated: bool = False) -> tuple[str, list[str], bool]:
    """Remove solution blocks from MyST text.

    Returns the text without them, the removed solution bodies, and whether a gated solution
    (``solution-start`` ... ``solution-end``) is still open at the end of ``text``; pass that flag
    as ``gated`` for the next cell of a notebook.
    """
    lines = text.split("\n")
    keep: list[str] = []
    removed: list[str] = []
    k = 0
    while k < len(lines):
        m = FENCE_OPEN.match(lines[k])
        name = m.group(2) if m else None
        if gated:
            if name == "solution-end":
                gated = False
                k = _fence_end(lines, k, m.group(1)) + 1
            else:
                removed.append(lines[k])
                k += 1
            continue
        if name == "solution" or (name in ("admonition", "dropdown")
                                  and ANSWER_CLASS in _classes(lines, k)):
            end = _fence_end(lines, k, m.group(1))
            removed.append("\n".join(lines[k + 1:end]))
            k = end + 1
            continue
        if name == "solution-start":
            gated = True
            k = _fence_end(lines, k, m.group(1)) + 1
            continue
        keep.append(lines[k])
        k += 1
    return "\n".join(keep), removed, gated


def strip_notebook(nb: dict) -> tuple[dict, list[str]]:
    """A notebook (JSON dict) without solutions, and the removed solution texts."""
    nb = copy.deepcopy(nb)
    cells, removed, gated = [], [], False
    for cell in nb.get("cells", []):
        src = cell.get("source", "")
        src = "".join(src) if isinstance(src, list) else src
        if cell.get("cell_type") == "markdown" or gated:
            if cell.get("cell_type") != "markdown":  # code inside a gated solution
                removed.append(src)
                continue
            was_gated = gated
            new, gone, gated = split_solutions(src, gated)
            removed.extend(gone)
            if was_gated and not new.strip():
                continue
            cell["source"] = new
        cells.append(cell)
    nb["cells"] = cells
    return nb, removed


def solution_texts(source_dir: Path) -> dict[str, list[str]]:
    """Every solution body of the book's pages under ``source_dir`` (path -> texts)."""
    out: dict[str, list[str]] = {}
    pages = source_dir / "book" if (source_dir / "book").is_dir() else source_dir
    for path in sorted(pages.rglob("*")):
        if any(p in {"_build", "node_modules", ".venv", ".git", ".ipynb_checkpoints"}
               for p in path.relative_to(source_dir).parts):
            continue
        if path.suffix == ".ipynb":
            _, texts = strip_notebook(json.loads(path.read_text(encoding="utf-8")))
        elif path.suffix == ".md":
            _, texts, _ = split_solutions(path.read_text(encoding="utf-8"))
        else:
            continue
        if texts:
            out[str(path.relative_to(source_dir))] = texts
    return out


def public_text(source_dir: Path) -> str:
    """All text of the book's pages outside solutions (markdown and code), normalized.

    A solution sentence that also occurs here (say, a phrase repeated from the chapter) is no
    evidence of a leak, so the check ignores it.
    """
    parts = []
    pages = source_dir / "book" if (source_dir / "book").is_dir() else source_dir
    for path in sorted(pages.rglob("*")):
        if any(p in {"_build", ".ipynb_checkpoints"} for p in path.relative_to(pages).parts):
            continue
        if path.suffix == ".ipynb":
            nb, _ = strip_notebook(json.loads(path.read_text(encoding="utf-8")))
            parts += ["".join(c.get("source", "")) for c in nb.get("cells", [])]
        elif path.suffix == ".md":
            parts.append(split_solutions(path.read_text(encoding="utf-8"))[0])
    return normalize("\n".join(parts))


def normalize(text: str) -> str:
    text = text.translate(str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"',
                                         "\u201d": '"', "\u2013": "-", "\u2014": "-",
                                         "\u00a0": " "}))
    return " ".join(text.split())


def probes(solution: str) -> list[str]:
    """Plain-prose sentences of a solution: what would show if the solution leaked.

    Sentences with math, roles, markup or code are skipped (they render differently from their
    source), so every probe appears verbatim in a page that shows the solution.
    """
    body = re.sub(r"^\s*:[\w-]+:.*$", "", solution, flags=re.M)          # directive options
    body = re.sub(r"(`{3,}|:{3,}).*?\1", " | ", body, flags=re.S)        # nested fences
    body = re.sub(r"\$\$.*?\$\$", " | ", body, flags=re.S)
    out = []
    for para in re.split(r"\n\s*\n", body):
        for sent in re.split(r"(?<=[.!?:;])\s+|\n\s*[-*+]\s+|\|", para):
            # cut at anything that renders differently from its source
            for piece in re.split(r"\$[^$]*\$|\{[^}]*\}`[^`]*`|`[^`]*`|[*_\[\]<>#\\|(){}=~^]",
                                  sent):
                s = normalize(piece).strip(" .,;:!?'\"-")
                if len(s) >= MIN_PROBE and " " in s and "$" not in s:
                    out.append(s)
    return out


# ----------------------------------------------------------------------------------------------
# a built site


def site_text(path: Path) -> str:
    """The text of one site file as a reader (or a download) would see it."""
    raw = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".html":
        raw = re.sub(r"<(script|style)\b[^>]*>.*?</\1>", " ", raw, flags=re.S | re.I)
        raw = re.sub(r"<[^>]+>", " ", raw)
        raw = html.unescape(raw)
    elif path.suffix == ".ipynb":
        try:
            nb = json.loads(raw)
            raw = "\n".join("".join(c.get("source", "")) for c in nb.get("cells", []))
        except ValueError:
            pass
    return normalize(raw)


def find_leaks(site: Path, texts: dict[str, list[str]],
               public: str = "") -> list[tuple[str, str]]:
    """(file, probe) pairs: solution sentences found in ``site`` (ignoring those in ``public``)."""
    wanted = {p for sols in texts.values() for s in sols for p in probes(s) if p not in public}
    leaks = []
    for path in sorted(site.rglob("*")):
        if not path.is_file() or path.suffix not in SITE_SUFFIXES:
            continue
        if "widgets-js" in path.parts or "lib" in path.parts[:1]:
            continue
        text = site_text(path)
        for p in wanted:
            if p in text:
                leaks.append((str(path.relative_to(site)), p))
    return leaks


def strip_site_sources(site: Path) -> int:
    """Remove solutions from the page sources under ``site/_sources``; return how many."""
    count = 0
    for path in sorted((site / "_sources").rglob("*")) if (site / "_sources").is_dir() else []:
        if not path.is_file():
            continue
        name = path.name
        if name.endswith(".ipynb") or name.endswith(".ipynb.txt"):
            try:
                nb = json.loads(path.read_text(encoding="utf-8"))
            except ValueError:
                continue
            nb, gone = strip_notebook(nb)
            if gone:
                path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n",
                                encoding="utf-8")
        elif name.endswith(".md") or name.endswith(".md.txt"):
            text, gone, _ = split_solutions(path.read_text(encoding="utf-8"))
            if gone:
                path.write_text(text, encoding="utf-8")
        else:
            continue
        count += len(gone)
    return count


def build_student(source: Path, out: Path, extra_args: list[str] | None = None) -> Path:
    """Build the student edition of the book in ``source`` into ``out``; return the HTML folder."""
    source, out = source.resolve(), out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    config = yaml.safe_load((source / "_config.yml").read_text(encoding="utf-8")) or {}
    overrides_path = ROOT / "_config_student.yml"
    if (source / "_config_student.yml").is_file():
        overrides_path = source / "_config_student.yml"
    overrides = yaml.safe_load(overrides_path.read_text(encoding="utf-8")) or {}
    cache = source / "_build" / ".jupyter_cache"
    cfg = student_config(config, overrides, cache=cache)
    # the configuration is written into `out`: paths Jupyter Book reads relative to it are made absolute
    local = cfg.get("sphinx", {}).get("local_extensions") or {}
    for name, path in local.items():
        local[name] = str((source / path).resolve())
    toc = yaml.safe_load((source / "_toc.yml").read_text(encoding="utf-8"))
    toc = prune_toc(toc, set(overrides.get("toc_exclude", [])))
    (out / "_config.yml").write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    (out / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False), encoding="utf-8")
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb if jb.exists() else "jupyter-book"), "build", str(source),
           "--config", str(out / "_config.yml"), "--toc", str(out / "_toc.yml"),
           "--path-output", str(out)] + list(extra_args or [])
    rc = subprocess.run(cmd).returncode
    site = out / "_build" / "html"
    # strip even after a failed build (-W): whatever was written must not carry solutions
    n = strip_site_sources(site) if site.is_dir() else 0
    print(f"removed {n} solutions from the downloadable sources in {site / '_sources'}")
    if rc != 0:
        raise SystemExit(f"jupyter-book build failed (exit {rc})")
    return site


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("student", help="build, strip and check the student edition")
    b.add_argument("--source", type=Path, default=ROOT)
    b.add_argument("--out", type=Path, default=ROOT / "_build" / "student")
    b.add_argument("jb_args", nargs="*", help="extra jupyter-book build arguments (after --)")
    c = sub.add_parser("check", help="exit 1 if solution text appears in a built site")
    c.add_argument("site", type=Path)
    c.add_argument("--source", type=Path, default=ROOT)
    p = sub.add_parser("probes", help="print the solution sentences the check looks for")
    p.add_argument("--source", type=Path, default=ROOT)
    args = ap.parse_args(argv)

    if args.cmd == "probes":
        for path, sols in solution_texts(args.source).items():
            for s in sols:
                print(f"{path}: {probes(s)}")
        return 0
    if args.cmd == "student":
        site = build_student(args.source, args.out, args.jb_args)
    else:
        site = args.site
    texts = solution_texts(args.source)
    n_probes = sum(len(probes(s)) for sols in texts.values() for s in sols)
    leaks = find_leaks(site, texts, public_text(args.source))
    for f, p in leaks[:20]:
        print(f"solution text in {f}: {p!r}", file=sys.stderr)
    if leaks:
        return 1
    print(f"{site}: none of {n_probes} sentences from "
          f"{sum(len(v) for v in texts.values())} solutions is present")
    return 0


if __name__ == "__main__":
    sys.exit(main())
