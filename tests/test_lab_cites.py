"""tools/lab_cites.py: citations that read as author and year in JupyterLab and in the book.

The texts are the book's: a tiny Sphinx project cites every entry of book/references.bib with the
roles (sphinxcontrib-bibtex, the book's author-year style) and the tool's texts must equal what it
prints.  The extension must give the book the same citations from the links as from the roles.
"""
from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tools import lab_cites

ROOT = Path(__file__).resolve().parents[1]
BIB = {"su2021roformer": ("Su *et al.*", "2021"), "kuramoto1975": ("Kuramoto", "1975"),
       "dormand1980family": ("Dormand and Prince", "1980")}


def linked(text, prefix="ch04-"):
    return lab_cites.rewrite(text, BIB, prefix)[0]


def test_a_role_becomes_a_link_with_the_books_text():
    assert linked("RoPE {cite}`ch04-su2021roformer`.") == \
        "RoPE [[Su *et al.*, 2021]](#cite:p:ch04-su2021roformer)."
    assert linked("{cite:p}`ch04-kuramoto1975, ch04-dormand1980family`") == \
        "[[Kuramoto, 1975, Dormand and Prince, 1980]](#cite:p:ch04-kuramoto1975,ch04-dormand1980family)"
    assert linked("as {cite:t}`ch04-su2021roformer` show") == \
        "as [Su *et al.* [2021]](#cite:t:ch04-su2021roformer) show"


def test_a_stale_text_is_rewritten_and_reported():
    text, changes = lab_cites.rewrite("[[Su, 2020]](#cite:p:ch04-su2021roformer)", BIB, "ch04-")
    assert text == "[[Su *et al.*, 2021]](#cite:p:ch04-su2021roformer)"
    assert len(changes) == 1 and "Su, 2020" in changes[0]


def test_a_current_link_is_not_a_change():
    text = "[Kuramoto [1975]](#cite:t:ch04-kuramoto1975) and [a link](#ch4-sec-x)"
    assert lab_cites.rewrite(text, BIB, "ch04-") == (text, [])


def test_an_unknown_key_or_a_wrong_prefix_is_an_error():
    with pytest.raises(KeyError, match="ch04-nobody2020"):
        linked("{cite}`ch04-nobody2020`")
    with pytest.raises(KeyError, match="'ch05-su2021roformer' is not 'ch04-'"):
        linked("{cite}`ch05-su2021roformer`")
    with pytest.raises(ValueError, match=r"use \{cite:p\} or \{cite:t\}.*cite:ps"):
        linked("{cite:ps}`ch04-su2021roformer`")
    with pytest.raises(ValueError, match="kind='ps'"):
        lab_cites.cite_text("ps", ["ch04-su2021roformer"], BIB, "ch04-")


def test_a_link_the_book_cannot_read_is_an_error():
    broken = "as [[Su *et al.*,\n2021]](#cite:p:ch04-su2021roformer) show"
    with pytest.raises(ValueError, match="cannot read"):
        linked(broken)
    with pytest.raises(ValueError, match="cannot read"):
        linked("[Su](#cite:x:ch04-su2021roformer)")
    assert lab_cites.stale_links(broken, BIB) == ["2021]](#cite:p:ch04-su2021roformer)"]


def test_a_notebooks_links_are_checked_as_they_read():
    bib = {"markdahl2018almost": ("Gonçalves", "2018")}
    cell = ["Proved [[Gonçalves, 2018]](#cite:p:ch01-markdahl2018almost)\n", ":keyprefix: ch01-\n"]
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": cell}]}
    for ascii_only in (False, True):  # "Gon\u00e7alves" in the file reads "Gonçalves"
        source = json.dumps(nb, indent=1, ensure_ascii=ascii_only)
        assert lab_cites.stale_links(source, bib) == []
        assert lab_cites.stale_links(source.replace("2018]]", "2019]]"), bib) != []


def test_links_are_read_back_as_the_roles():
    assert lab_cites.to_roles("A [[Su *et al.*, 2021]](#cite:p:ch04-su2021roformer) B "
                              "[Kuramoto [1975]](#cite:t:ch04-kuramoto1975,ch04-su2021roformer)") \
        == "A {cite:p}`ch04-su2021roformer` B {cite:t}`ch04-kuramoto1975,ch04-su2021roformer`"
    other = "[Chapter 2](ch02_metastability.ipynb) [x](#ch1-thm-ascent) [c](https://a.b/#cite:p:x)"
    assert lab_cites.to_roles(other) == other


def test_the_keyprefix_is_the_pages_bibliographys():
    nb = json.dumps({"cells": [{"source": ["```{bibliography}\n", ":filter: docname in docnames\n",
                                           ":keyprefix: ch01-\n", "```"]}]}, indent=1)
    assert lab_cites.keyprefix(nb) == "ch01-"
    assert lab_cites.keyprefix("```{bibliography}\n:keyprefix: intro-\n```\n") == "intro-"
    assert lab_cites.keyprefix("no bibliography") == ""
    with pytest.raises(ValueError, match="different keyprefixes"):
        lab_cites.keyprefix(":keyprefix: a-\n:keyprefix: b-\n")


def test_a_notebook_is_rewritten_in_place_and_only_its_markdown(tmp_path):
    nb = {"cells": [{"cell_type": "markdown", "metadata": {},
                     "source": ["Su {cite}`ch04-su2021roformer`\n", ":keyprefix: ch04-\n"]},
                    {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                     "source": ["# {cite}`ch04-su2021roformer`"]}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "ch04_rope.ipynb"
    path.write_text(json.dumps(nb, indent=1) + "\n", encoding="utf-8")
    assert len(lab_cites.rewrite_page(path, BIB, write=False)) == 1
    assert "{cite}" in path.read_text(encoding="utf-8").split("code")[0]  # --check wrote nothing
    lab_cites.rewrite_page(path, BIB)
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    assert cells[0]["source"][0] == "Su [[Su *et al.*, 2021]](#cite:p:ch04-su2021roformer)\n"
    assert cells[1]["source"] == ["# {cite}`ch04-su2021roformer`"]
    assert lab_cites.rewrite_page(path, BIB) == []


def test_the_book_cites_only_with_current_links(capsys):
    """Every citation of book/ is a link whose text the bibliography gives (no role left)."""
    assert lab_cites.main(["--check"]) == 0, capsys.readouterr().out
    n = sum(len(lab_cites.LINK.findall(p.read_text(encoding="utf-8")))
            for p in lab_cites.pages())
    assert n >= 100, f"only {n} citation links in book/"


def test_the_book_reads_the_links_back():
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert config["sphinx"]["local_extensions"].get("lab_cites") == "tools"
    assert config["sphinx"]["config"]["bibtex_reference_style"] == "author_year"


# ----------------------------------------------------------------------------------------------
# against Sphinx: what sphinxcontrib-bibtex prints, from the roles and from the links

CONF = """extensions = ["myst_nb", "sphinxcontrib.bibtex"{extra}]
bibtex_bibfiles = ["references.bib"]
bibtex_reference_style = "author_year"
nb_execution_mode = "off"
myst_enable_extensions = ["dollarmath"]
"""
BIBLIOGRAPHY = "```{bibliography}\n:filter: docname in docnames\n:keyprefix: x-\n```\n"


class BuildFailed(Exception):
    """A Sphinx build that stopped (with -W: on its first warning)."""


def _build(src: Path, pages: dict[str, str], extension: bool) -> dict[str, str]:
    """Build ``pages`` (name -> source) with Sphinx (-W, a process of its own); each page's HTML.

    A failed build raises BuildFailed with Sphinx's messages."""
    src.mkdir()
    shutil.copy(ROOT / "book" / "references.bib", src / "references.bib")
    extra = ', "lab_cites"' if extension else ""
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'tools')!r})\n" + CONF.format(extra=extra),
        encoding="utf-8")
    names = [Path(n).stem for n in pages]
    toc = "```{toctree}\n" + "\n".join(names) + "\n```\n"
    (src / "index.md").write_text("# Index\n\n" + toc, encoding="utf-8")
    for name, text in pages.items():
        (src / name).write_text(text, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "sphinx", "-q", "-W", "-E", "-b", "html",
                           str(src), str(src / "_build")], capture_output=True, text=True)
    if done.returncode:
        raise BuildFailed(done.stderr + done.stdout)
    return {n: (src / "_build" / f"{Path(n).stem}.html").read_text(encoding="utf-8")
            for n in pages}


def _citations(page: str) -> list[str]:
    """The page's citations as printed: each ``bibtex-citation`` span, ids and all."""
    return re.findall(r'<span class="bibtex-citation".*?</span>', page, re.S)


def _entries(page: str) -> list[str]:
    """The page's bibliography as printed: each ``doc-biblioentry`` block."""
    return re.findall(r'<div class="citation" id="[^"]+" role="doc-biblioentry">.*?</div>', page,
                      re.S)


def _text(span: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", span)).split())


def _plain(markdown: str) -> str:
    return markdown.replace("*", "")


def _notebook(markdown: str) -> str:
    """A notebook of one markdown cell: ``markdown`` with the keyprefix y- (x- is the page's)."""
    markdown = markdown.replace("x-", "y-").replace("# Roles", "# Notebook")
    nb = {"cells": [{"cell_type": "markdown", "id": "cited", "metadata": {},
                     "source": markdown.splitlines(keepends=True)}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def test_a_malformed_entry_is_an_error_naming_the_file_and_the_entry(tmp_path):
    path = tmp_path / "refs.bib"
    path.write_text("@article{good2020,\n author = {A. Good},\n year = {2020}\n}\n\n"
                    "@article{bad2021,\n author = {B. Bad,\n year = {2021}\n}\n\n"
                    "@article{next2022, author = {C. Next}, year = {2022}}\n", encoding="utf-8")
    with pytest.raises(lab_cites.BibError, match=rf"{re.escape(str(path))}: entry 'bad2021' "
                                                 r"\(line 6\) is not valid BibTeX"):
        lab_cites.read_bib(path)
    path.write_text("@article{twice, author = {X}, year = {2020}}\n"
                    "@article{twice, author = {Y}, year = {2021}}\n", encoding="utf-8")
    with pytest.raises(lab_cites.BibError, match=r"refs.bib: entry 'twice' \(line 2\)"):
        lab_cites.read_bib(path)
    with pytest.raises(lab_cites.BibError, match=r"missing.bib: cannot read the bibliography"):
        lab_cites.read_bib(tmp_path / "missing.bib")


def test_an_entry_without_author_or_year_is_an_error(tmp_path):
    path = tmp_path / "refs.bib"
    path.write_text("@misc{anon, title = {No one}, year = {2020}}\n", encoding="utf-8")
    with pytest.raises(lab_cites.BibError, match=r"refs.bib: entry 'anon' needs an author and a year"):
        lab_cites.read_bib(path)


def test_the_slides_cite_the_same_entries_in_plain_words():
    from tools import slides

    book = lab_cites.read_bib(ROOT / "book" / "references.bib")
    deck = slides.read_bib(ROOT / "book" / "references.bib")
    assert deck == {k: (who.replace("*et al.*", "et al."), year) for k, (who, year) in book.items()}
    assert any("et al." in who for who, _ in deck.values())


@pytest.fixture(scope="module")
def bib():
    return lab_cites.read_bib(ROOT / "book" / "references.bib")


@pytest.fixture(scope="module")
def role_page(bib):
    keys = sorted(bib)
    lines = ["# Roles", ""]
    lines += [f"{{cite:p}}`x-{k}` and {{cite:t}}`x-{k}`" for k in keys]
    lines += ["", f"{{cite}}`x-{keys[0]},x-{keys[1]}` and {{cite:t}}`x-{keys[0]},x-{keys[1]}`", ""]
    return "\n\n".join(lines) + "\n" + BIBLIOGRAPHY


@pytest.mark.slow
def test_the_texts_are_what_the_book_prints(tmp_path, bib, role_page):
    page = _build(tmp_path / "roles", {"cited.md": role_page}, extension=False)["cited.md"]
    printed = [_text(s) for s in _citations(page)]
    keys = sorted(bib)
    expected = []
    for k in keys:
        expected += [lab_cites.cite_text("p", [f"x-{k}"], bib, "x-"),
                     lab_cites.cite_text("t", [f"x-{k}"], bib, "x-")]
    pair = [f"x-{keys[0]}", f"x-{keys[1]}"]
    expected += [lab_cites.cite_text("p", pair, bib, "x-"), lab_cites.cite_text("t", pair, bib, "x-")]
    assert printed == [_plain(e) for e in expected]


@pytest.mark.slow
def test_the_links_give_the_book_the_same_citations(tmp_path, role_page):
    links, changes = lab_cites.rewrite(role_page, lab_cites.read_bib(), "x-")
    assert changes and "{cite" not in links
    roles = _build(tmp_path / "roles", {"cited.md": role_page, "nb.ipynb": _notebook(role_page)},
                   extension=False)
    from_links = _build(tmp_path / "links", {"cited.md": links, "nb.ipynb": _notebook(links)},
                        extension=True)
    for name in roles:
        assert _citations(roles[name]), f"{name}: no citation printed"
        assert _citations(from_links[name]) == _citations(roles[name]), name
        # the bibliography lists the same entries
        assert _entries(from_links[name]) == _entries(roles[name]) != []


@pytest.mark.slow
def test_a_stale_text_fails_the_book_build(tmp_path):
    page = "# Stale\n\n[[Su, 2020]](#cite:p:x-su2021roformer)\n\n" + BIBLIOGRAPHY
    with pytest.raises(BuildFailed, match="not written as the book prints it"):
        _build(tmp_path / "stale", {"stale.md": page}, extension=True)
