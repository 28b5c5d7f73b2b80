"""Two editions from one source: the student edition carries no solution text at all.

The build tests make a tiny book in a temporary folder (one page and one notebook, each with an
exercise and a solution, a check cell tagged solution-check, plus an instructor page the other
pages link to) and build it twice, as `make book` and as `make book-student` do
(tools/editions.py with the real _config_student.yml), so they take seconds, not a full book
build.  The notebook counts its executions, so the tests see that the student edition reuses the
execution cache of the full build.  The check itself is tested on small fake sites, and the
tagging rule on the book's own chapters.  When the real builds exist (`_build/html`,
`_build/student/_build/html`) they are checked too: every chapter page offers its .ipynb, and
the student site holds no trace of any answer.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tools import editions

ROOT = Path(__file__).resolve().parents[1]

SECRET = "The answer hides in a purple lighthouse beside the harbour wall"
NB_SECRET = "Gradient ascent never lowers the energy of the particle system"
EXERCISE = "Count the lighthouses along the northern coast of the island"
#: printed by the notebook's check cell tagged solution-check
CHECK_OUTPUT = "the keeper's logbook records 4217 ships in the harbour"
CHECK_CODE = 'ships_in_logbook = 4217  # the answer of tiny-ex-nb'
#: printed by an ordinary cell: the student edition keeps it
PUBLIC_OUTPUT = "the lighthouse beam turns 42 times an hour"

#: the key of a problem set page: the full edition shows it, the student edition leaves it out
KEY_INTRO = "The solutions of the lighthouse problems, for the keepers only"
KEY_SECRET = "Count the beams from the harbour wall and divide by the turns"
PROBLEMS = f"""# Problem set

A handout: the problems of the tiny book.

## Problems

Show that the energy grows ({{ref}}`tiny-ex-nb`).

{editions.KEY_BEGIN}
## Key

{KEY_INTRO}.

````{{solution}} tiny-ex-nb
:class: dropdown problem-key

{KEY_SECRET}.
````
{editions.KEY_END}
"""

PAGE = f"""# A page

Some text. Instructors find the plan in {{doc}}`seminar/instructor_guide`, the same in
the {{doc}}`instructor guide <seminar/instructor_guide>`, a Markdown link to
[the guide](seminar/instructor_guide.md), and its first session in {{ref}}`tiny-session-one`.

```{{exercise}} Lighthouses
:label: tiny-ex-page

{EXERCISE}.
```

````{{solution}} tiny-ex-page
:class: dropdown

{SECRET}. It is $x^2$ high.

```python
print("solution code")
```
````
"""


def _notebook() -> dict:
    md = (f"# A notebook\n\n```{{exercise}}\n:label: tiny-ex-nb\n\nShow that the energy grows.\n```\n\n"
          f"```{{solution}} tiny-ex-nb\n:class: dropdown\n\n{NB_SECRET}.\n```\n")

    def code(src, tags=()):
        return {"cell_type": "code", "metadata": {"tags": list(tags)}, "execution_count": None,
                "outputs": [], "source": src}
    return {"cells": [{"cell_type": "markdown", "metadata": {}, "source": md},
                      # counts the executions of the notebook (it runs in its own folder)
                      code('with open("executions.log", "a") as log:\n    log.write("run\\n")'),
                      code(f'print("{PUBLIC_OUTPUT}")'),
                      code(f'{CHECK_CODE}\nprint(f"the keeper\'s logbook records '
                           f'{{ships_in_logbook}} ships in the harbour")',
                           tags=["hide-input", editions.STUDENT_TAG])],
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                        "language": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


def _make_tiny_book(root: Path) -> Path:
    (root / "book" / "seminar").mkdir(parents=True)
    (root / "_config.yml").write_text(yaml.safe_dump({
        "title": "Tiny book", "author": "test", "only_build_toc_files": True,
        "exclude_patterns": ["_build/*", "out_*/*", "student/*"],
        "execute": {"execute_notebooks": "cache"},
        "parse": {"myst_enable_extensions": ["dollarmath", "colon_fence"]},
        "sphinx": {"extra_extensions": ["sphinx_exercise"]},
    }))
    (root / "_toc.yml").write_text(yaml.safe_dump({
        "format": "jb-book", "root": "book/intro",
        "chapters": [{"file": "book/page"}, {"file": "book/nb"},
                     {"file": "book/seminar/problems"},
                     {"file": "book/seminar/instructor_guide"}],
    }))
    (root / "book" / "intro.md").write_text("# Tiny book\n\nHello.\n")
    (root / "book" / "page.md").write_text(PAGE)
    (root / "book" / "nb.ipynb").write_text(json.dumps(_notebook()))
    (root / "book" / "seminar" / "problems.md").write_text(PROBLEMS)
    (root / "book" / "seminar" / "instructor_guide.md").write_text(
        "# Instructor guide\n\nOnly instructors read the session plan of the lighthouse seminar.\n"
        "\n(tiny-session-one)=\n## Session one\n\nThe first session.\n")
    return root


@pytest.fixture(scope="module")
def tiny_book(tmp_path_factory) -> Path:
    return _make_tiny_book(tmp_path_factory.mktemp("tiny_book"))


def _executions(root: Path) -> int:
    log = root / "book" / "executions.log"
    return len(log.read_text().split()) if log.is_file() else 0


def _jupyter_book() -> str:
    jb = Path(sys.executable).with_name("jupyter-book")
    return str(jb) if jb.exists() else "jupyter-book"


@pytest.fixture(scope="module")
def normal_site(tiny_book) -> Path:
    """The full edition, built as `make book` does (its execution cache: _build/.jupyter_cache)."""
    subprocess.run([_jupyter_book(), "build", str(tiny_book), "-W", "-n", "--keep-going", "-q"],
                   check=True, capture_output=True)
    return tiny_book / "_build" / "html"


@pytest.fixture(scope="module")
def student_site(tiny_book, normal_site) -> Path:
    """The student edition, built after the full one (a warm execution cache)."""
    assert _executions(tiny_book) == 1, "the full build should have run the notebook once"
    out = tiny_book / "student"
    rc = editions.main(["student", "--source", str(tiny_book), "--out", str(out), "--",
                        "-W", "-n", "--keep-going", "-q"])
    assert rc == 0, "tools/editions.py found answers in the student edition"
    return out / "_build" / "html"


def _all_text(site: Path) -> str:
    return "\n".join(editions.site_text(p) for p in site.rglob("*")
                     if p.is_file() and p.suffix in editions.SITE_SUFFIXES)


# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_normal_edition_shows_solutions_in_dropdowns(normal_site):
    page = (normal_site / "book" / "page.html").read_text()
    assert SECRET in editions.site_text(normal_site / "book" / "page.html")
    assert "dropdown" in page and "solution" in page
    assert NB_SECRET in editions.site_text(normal_site / "book" / "nb.html")
    assert NB_SECRET in (normal_site / "_sources" / "book" / "nb.ipynb").read_text()
    # ... and the check cell, code and output, and a working link to the instructor guide
    nb_text = editions.site_text(normal_site / "book" / "nb.html")
    assert editions.squeeze(CHECK_CODE) in editions.squeeze(nb_text)
    assert CHECK_OUTPUT in nb_text and PUBLIC_OUTPUT in nb_text
    assert 'href="seminar/instructor_guide.html' in (normal_site / "book" / "page.html").read_text()
    # the check would see a leak, of solutions and of the tagged cell: it is not vacuous
    leaks, _ = editions.check_site(normal_site, normal_site.parents[1])
    found = " ".join(p for _, p in leaks)
    assert NB_SECRET in found and "solution-check cell" in found and "in a download" in found


@pytest.mark.slow
def test_student_edition_has_no_solution_text(student_site):
    text = _all_text(student_site)
    for secret in (SECRET, NB_SECRET, 'print("solution code")', "solution code"):
        assert secret not in text
    assert "Solution to" not in editions.site_text(student_site / "book" / "page.html")
    # ... but it keeps the exercises, the title suffix, and the downloadable notebook
    assert EXERCISE in editions.site_text(student_site / "book" / "page.html")
    assert "(student edition)" in (student_site / "book" / "page.html").read_text()
    nb = json.loads((student_site / "_sources" / "book" / "nb.ipynb").read_text())
    src = "".join("".join(c["source"]) for c in nb["cells"])
    assert "Show that the energy grows" in src and "{solution}" not in src
    assert not editions.find_leaks(student_site, editions.solution_texts(student_site.parents[2]))


@pytest.mark.slow
def test_student_edition_leaves_out_tagged_cells(student_site):
    """The cell tagged solution-check is gone from the page (code and output) and the download;
    the other cells and their outputs stay."""
    page = editions.site_text(student_site / "book" / "nb.html")
    assert PUBLIC_OUTPUT in page
    assert "4217" not in page and "logbook" not in page and "ships_in_logbook" not in page
    nb = json.loads((student_site / "_sources" / "book" / "nb.ipynb").read_text())
    assert not any(editions.is_tagged(c) for c in nb["cells"])
    assert "ships_in_logbook" not in json.dumps(nb)
    assert "4217" not in _all_text(student_site)
    leaks, _ = editions.check_site(student_site, student_site.parents[2])
    assert not leaks


@pytest.mark.slow
def test_student_edition_reuses_the_execution_cache(tiny_book, student_site):
    """Built after the full edition, the student edition runs no notebook: the notebook counts
    its executions, and the count is still one; the page shows the outputs of the cache."""
    assert _executions(tiny_book) == 1
    assert PUBLIC_OUTPUT in editions.site_text(student_site / "book" / "nb.html")
    cfg = yaml.safe_load((tiny_book / "student" / "_config.yml").read_text())
    assert Path(cfg["execute"]["cache"]) == (tiny_book / "_build" / ".jupyter_cache").resolve()


@pytest.mark.slow
def test_student_edition_with_a_cold_cache_executes(tmp_path):
    """Without a full build first, the student edition runs the notebook (correct, only slower)."""
    root = _make_tiny_book(tmp_path / "cold")
    rc = editions.main(["student", "--source", str(root), "--out", str(root / "student"), "--",
                        "-W", "-n", "--keep-going", "-q"])
    assert rc == 0
    assert _executions(root) == 1
    site = root / "student" / "_build" / "html"
    page = editions.site_text(site / "book" / "nb.html")
    assert PUBLIC_OUTPUT in page and "4217" not in page


@pytest.mark.slow
def test_the_key_of_a_problem_set_is_in_the_full_edition_only(normal_site, student_site):
    """A problem set's key (between editions.KEY_BEGIN and KEY_END): on the page of the full
    edition, gone entirely from the student edition's page and download, and the check that
    passes the student edition fails on the full one because of it."""
    full = editions.site_text(normal_site / "book" / "seminar" / "problems.html")
    assert KEY_INTRO in full and KEY_SECRET in full and "Key" in full
    page = student_site / "book" / "seminar" / "problems.html"
    text = editions.site_text(page)
    assert "A handout: the problems of the tiny book" in text
    for gone in (KEY_INTRO, KEY_SECRET, "Key", "Solution to"):
        assert gone not in text
    assert editions.KEY_BEGIN not in page.read_text()
    download = (student_site / "_sources" / "book" / "seminar" / "problems.md").read_text()
    assert "A handout" in download and KEY_INTRO not in download and "## Key" not in download
    leaks, _ = editions.check_site(normal_site, normal_site.parents[1])
    keyed = [p for f, p in leaks if "problems" in f]
    assert KEY_INTRO in keyed and KEY_SECRET in keyed
    assert any("the key of a problem set" in p for p in keyed)


@pytest.mark.slow
def test_links_to_the_instructor_guide_become_plain_text(student_site):
    """Every kind of link to a page the student edition leaves out builds with -W -n (the
    fixture) and shows as plain text naming the page: no link, no raw target."""
    html = (student_site / "book" / "page.html").read_text()
    text = editions.site_text(student_site / "book" / "page.html")
    assert "instructor_guide" not in html
    for piece in ("Instructors find the plan in Instructor guide",
                  "the same in the instructor guide", "a Markdown link to the guide",
                  "its first session in Instructor guide"):
        assert piece in text


@pytest.mark.slow
def test_student_edition_leaves_out_the_instructor_guide(normal_site, student_site):
    assert (normal_site / "book" / "seminar" / "instructor_guide.html").is_file()
    assert not (student_site / "book" / "seminar" / "instructor_guide.html").exists()
    assert "lighthouse seminar" not in _all_text(student_site)


# ---------------------------------------------------------------------------------------------
# the pieces


def test_split_solutions_removes_plain_colon_and_gated_blocks():
    text = ("a\n```{solution} ex1\n:class: dropdown\n\nS1 text\n```\nb\n"
            ":::{solution} ex2\nS2 text\n:::\nc\n"
            "```{solution-start} ex3\n```\nS3 text\n```{solution-end}\n```\nd")
    kept, removed, gated = editions.split_solutions(text)
    assert kept.split("\n") == ["a", "b", "c", "d"]
    assert not gated
    assert any("S1 text" in r for r in removed) and any("S2 text" in r for r in removed)
    assert any("S3 text" in r for r in removed)


def test_an_unclosed_solution_is_an_error_naming_the_page_cell_and_line():
    from tools.fences import FenceError

    nb = {"cells": [{"cell_type": "markdown", "source": "Ex"},
                    {"cell_type": "markdown", "source": "Q\n\n```{solution} ex1\nThe answer"}]}
    with pytest.raises(FenceError, match=r"^book/ch\.ipynb cell 1: line 3: the ``` block opened "
                                         r"by '```\{solution\} ex1' is never closed"):
        editions.strip_notebook(nb, "book/ch.ipynb")
    with pytest.raises(FenceError, match=r"^page\.md: line 2: the ::: block"):
        editions.strip_myst("a\n:::{solution} ex2\nS2 text\n", "page.md")
    with pytest.raises(FenceError, match=r"^page\.md: line 1: the ```` block"):
        editions.split_tagged_code_cells(f"````{{code-cell}} python\n:tags: [{editions.STUDENT_TAG}]\n"
                                         "x = 1\n```\n", editions.STUDENT_TAG, "page.md")


def test_answer_notes_are_removed_like_solutions():
    text = ("Question?\n\n:::{admonition} Answer note\n:class: dropdown answer-note\n"
            "The gauge point is uniform on the sphere.\n:::\n\n"
            ":::{admonition} A remark\n:class: dropdown\nKept for students.\n:::\n")
    out, removed, _ = editions.split_solutions(text)
    assert "uniform on the sphere" not in out and "Kept for students." in out
    assert len(removed) == 1 and "uniform on the sphere" in removed[0]


def test_gated_solution_across_notebook_cells_is_removed():
    nb = {"cells": [
        {"cell_type": "markdown", "source": "Ex\n```{solution-start} e\n:class: dropdown\n```\nWords"},
        {"cell_type": "code", "source": "secret_code()", "outputs": [], "metadata": {}},
        {"cell_type": "markdown", "source": "```{solution-end}\n```\nAfter"},
    ]}
    out, removed = editions.strip_notebook(nb)
    srcs = [c["source"] for c in out["cells"]]
    assert srcs == ["Ex", "After"]
    assert "secret_code()" in removed


def test_probes_skip_math_and_markup():
    ps = editions.probes("By {prf:ref}`thm` we get $x=1$. The energy is bounded by the largest "
                         "value of the kernel. **Bold words here** are fine too.")
    assert "The energy is bounded by the largest value of the kernel" in ps
    assert not any("$" in p or "{" in p for p in ps)


def test_student_config_merges_and_prunes():
    cfg = editions.student_config({"title": "T", "sphinx": {"config": {"a": 1}}},
                                  yaml.safe_load((ROOT / "_config_student.yml").read_text()))
    assert cfg["title"] == "T (student edition)"
    assert cfg["sphinx"]["config"] == {
        "a": 1, "hide_solutions": True,
        "html_context": {"usaav_site_path": "student/", "usaav_edition": "student"}}
    assert "toc_exclude" not in cfg and "title_suffix" not in cfg
    toc = {"root": "i", "parts": [{"caption": "S", "chapters": [{"file": "x"}]},
                                  {"caption": "K", "chapters": [{"file": "y"}, {"file": "x"}]}]}
    assert editions.prune_toc(toc, {"x"}) == {"root": "i", "parts": [
        {"caption": "K", "chapters": [{"file": "y"}]}]}


# ---------------------------------------------------------------------------------------------
# the real books, when built


SITE = ROOT / "_build" / "html"
STUDENT_SITE = ROOT / "_build" / "student" / "_build" / "html"


def _chapter_pages(site: Path) -> list[Path]:
    return sorted((site / "book").glob("ch*.html")) if site.is_dir() else []


@pytest.mark.skipif(not _chapter_pages(SITE), reason="the book is not built (make book)")
@pytest.mark.parametrize("page", _chapter_pages(SITE), ids=lambda p: p.name)
def test_every_chapter_page_offers_its_notebook(page):
    html = page.read_text(encoding="utf-8")
    target = f"../_sources/book/{page.stem}.ipynb"
    assert re.search(r'href="' + re.escape(target) + r'"[^>]*download-source-button', html), \
        f"{page.name} has no download button for {target}"
    assert (SITE / "_sources" / "book" / f"{page.stem}.ipynb").is_file()


@pytest.mark.skipif(not STUDENT_SITE.is_dir(), reason="no student edition built (make book-student)")
def test_built_student_edition_has_no_solution_text():
    leaks, _ = editions.check_site(STUDENT_SITE, ROOT)
    assert not leaks, f"answers in the student edition: {leaks[:5]}"


# ---------------------------------------------------------------------------------------------
# the check catches what it must, on small fake sites


def _fake_source(root: Path, tagged: bool = True) -> Path:
    """A book source: one chapter with an exercise, its solution and a check cell."""
    (root / "book").mkdir(parents=True)
    md = ("```{exercise} Hitting time\n:label: fk-ex-time\n\nCompute the hitting time.\n```\n\n"
          "```{solution} fk-ex-time\n:class: dropdown\n\nThe time is one half of log 793, "
          "that is 3.33791 for these values.\n```\n")
    check = ("# CHECK (exercise fk-ex-time)\nT_formula = 0.5 * np.log((8 - 7 * 0.01) / 0.01)\n"
             'print(f"T = (1/2) log 793 = {T_formula:.5f}")')
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": md},
                    {"cell_type": "code", "metadata": {"tags": ["check"] + (
                        [editions.STUDENT_TAG] if tagged else [])},
                     "execution_count": None, "outputs": [], "source": check},
                    {"cell_type": "code", "metadata": {}, "execution_count": None,
                     "outputs": [], "source": 'print("a public cell prints this line of text")'}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (root / "book" / "ch.ipynb").write_text(json.dumps(nb))
    return root


def _executed(root: Path) -> Path:
    """The executed notebook, as Jupyter Book writes it to _build/jupyter_execute."""
    nb = json.loads((root / "book" / "ch.ipynb").read_text())
    nb["cells"][1]["outputs"] = [{"output_type": "stream", "name": "stdout",
                                  "text": "T = (1/2) log 793 = 3.33791\n"}]
    nb["cells"][2]["outputs"] = [{"output_type": "stream", "name": "stdout",
                                  "text": "a public cell prints this line of text\n"}]
    out = root / "_build" / "jupyter_execute" / "book"
    out.mkdir(parents=True)
    (out / "ch.ipynb").write_text(json.dumps(nb))
    return root / "_build" / "jupyter_execute"


def _fake_site(root: Path, page_body: str, download: dict | None = None) -> Path:
    site = root / "site"
    (site / "book").mkdir(parents=True)
    (site / "book" / "ch.html").write_text(f"<html><body><h1>Chapter</h1>{page_body}</body></html>")
    if download is not None:
        (site / "_sources" / "book").mkdir(parents=True)
        (site / "_sources" / "book" / "ch.ipynb").write_text(json.dumps(download))
    return site


CLEAN_BODY = ("<p>Compute the hitting time.</p><div class='cell'><pre>print(&quot;a public cell "
              "prints this line of text&quot;)</pre><pre>a public cell prints this line of text"
              "</pre></div>")


def _student_download(root: Path) -> dict:
    nb, _ = editions.strip_notebook(json.loads((root / "book" / "ch.ipynb").read_text()))
    return nb


def test_check_passes_a_clean_site(tmp_path):
    root = _fake_source(tmp_path / "src")
    site = _fake_site(tmp_path, CLEAN_BODY, _student_download(root))
    leaks, _ = editions.check_site(site, root, [_executed(root)])
    assert leaks == []


def test_check_catches_a_tagged_cells_output_in_a_page(tmp_path):
    """Only the output of the check cell shows (its code folded away or removed): found."""
    root = _fake_source(tmp_path / "src")
    site = _fake_site(tmp_path, CLEAN_BODY + "<div class='output'><pre>T = (1/2) log 793 = "
                      "3.33791</pre></div>", _student_download(root))
    leaks, _ = editions.check_site(site, root, [_executed(root)])
    assert ("book/ch.html", "code or output of a solution-check cell: T=(1/2)log793=3.33791") \
        in leaks
    # the answer number of the solution is found too, even without the executed notebooks
    leaks, _ = editions.check_site(site, root, [])
    assert ("book/ch.html", "number of a solution: 3.33791") in leaks


def test_check_catches_a_tagged_cells_code_in_highlighted_html(tmp_path):
    """Code rendered by the highlighter (a span per token) is compared without white space."""
    root = _fake_source(tmp_path / "src")
    code = ('<pre><span class="n">T_formula</span> <span class="o">=</span> <span class="mf">0.5'
            '</span> <span class="o">*</span> <span class="n">np</span><span class="o">.</span>'
            '<span class="n">log</span><span class="p">((</span><span class="mi">8</span> '
            '<span class="o">-</span> <span class="mi">7</span> <span class="o">*</span> '
            '<span class="mf">0.01</span><span class="p">)</span> <span class="o">/</span> '
            '<span class="mf">0.01</span><span class="p">)</span></pre>')
    site = _fake_site(tmp_path, CLEAN_BODY + code, _student_download(root))
    leaks, _ = editions.check_site(site, root, [])
    assert any(f == "book/ch.html" and "T_formula=0.5*np.log((8-7*0.01)/0.01)" in p
               for f, p in leaks)


def test_check_catches_a_tagged_cell_in_a_download(tmp_path):
    """The downloadable notebook still holds the tagged cell: found, by its tag, its code and
    its output."""
    root = _fake_source(tmp_path / "src")
    executed = _executed(root)
    leaked = json.loads((executed / "book" / "ch.ipynb").read_text())
    site = _fake_site(tmp_path, CLEAN_BODY, leaked)
    leaks, _ = editions.check_site(site, root, [executed])
    what = [p for f, p in leaks if f == "_sources/book/ch.ipynb"]
    assert "1 cell(s) tagged solution-check in a download" in what
    assert any("T_formula=0.5*np.log" in p for p in what)
    assert any("T=(1/2)log793=3.33791" in p for p in what)
    # a MyST source with a tagged code cell is caught as well
    (site / "_sources" / "book" / "ch.ipynb").write_text(json.dumps(_student_download(root)))
    (site / "_sources" / "book" / "extra.md").write_text(
        "# Extra\n\n```{code-cell} python3\n:tags: [hide-input, solution-check]\n\nx = 1\n```\n")
    leaks, _ = editions.check_site(site, root, [executed])
    assert leaks == [("_sources/book/extra.md", "1 cell(s) tagged solution-check in a download")]
    assert editions.strip_site_sources(site) == 1
    assert "x = 1" not in (site / "_sources" / "book" / "extra.md").read_text()


def test_check_fails_on_an_untagged_exercise_check_cell(tmp_path):
    """The leak of the first student edition: the check cell is not tagged, so the edition keeps
    it and its output shows the answer.  The check finds the cell in the sources and the answer
    number in the page."""
    root = _fake_source(tmp_path / "src", tagged=False)
    nb = json.loads((root / "book" / "ch.ipynb").read_text())
    site = _fake_site(tmp_path, CLEAN_BODY + "<pre>T = (1/2) log 793 = 3.33791</pre>",
                      editions.strip_notebook(nb)[0])
    leaks, _ = editions.check_site(site, root, [])
    assert ("book/ch.ipynb cell 1", "names exercise fk-ex-time but is not tagged solution-check") \
        in leaks
    assert ("book/ch.html", "number of a solution: 3.33791") in leaks


def test_significant_digits():
    assert [editions.significant_digits(n) for n in ("3857", "3.33791", "0.018", "1000", "2.785")] \
        == [4, 6, 2, 1, 4]


# ---------------------------------------------------------------------------------------------
# the tagging rule, on the book's chapters


CHAPTERS = sorted((ROOT / "book").glob("*.ipynb"))


def test_every_code_cell_naming_an_exercise_is_tagged():
    assert editions.exercise_labels(ROOT) >= {"ch1-ex-normalization", "ch9-ex-ks"}
    assert editions.untagged_answer_cells(ROOT) == []


#: the answers of chapter 1's exercises that its check cell prints (session 1's homework)
CH1_ANSWERS = ("log 793", "3.338", "(h^2/2)<x,v>P_x v", "n_rhs / (e^beta t_max)")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_known_answers_occur_in_no_untagged_cell(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code" and not editions.is_tagged(cell):
            src = editions.cell_text(cell)
            found = [a for a in CH1_ANSWERS if a in src]
            assert not found, f"{path.name} cell {i} holds {found} but is not tagged solution-check"


def test_chapter_1_answers_are_in_a_tagged_cell():
    nb = json.loads((ROOT / "book" / "ch01_particles.ipynb").read_text(encoding="utf-8"))
    tagged = "\n".join(editions.cell_text(c) for c in nb["cells"] if editions.is_tagged(c))
    assert all(a in tagged for a in CH1_ANSWERS), "chapter 1's exercise check cell is not tagged"


# ---------------------------------------------------------------------------------------------
# the problem sets collect the chapters' exercises


PARTS = {"problems_part1.md": ("ch01", "ch02", "ch03"),
         "problems_part2.md": ("ch04", "ch05", "ch06", "ch07", "ch08"),
         "problems_part3.md": ("ch09", "ch10")}
LABEL = re.compile(r"```+\{exercise\}[^\n]*\n(?:\s*:[\w-]+:.*\n)*?\s*:label:\s*(\S+)")


def _exercise_labels(prefix: str) -> set[str]:
    labels = set()
    for path in (ROOT / "book").glob(f"{prefix}_*.ipynb"):
        nb = json.loads(path.read_text(encoding="utf-8"))
        for c in nb["cells"]:
            if c["cell_type"] == "markdown":
                labels |= set(LABEL.findall("".join(c["source"])))
    return labels


@pytest.mark.parametrize("name", sorted(PARTS))
def test_problem_sets_refer_to_exercises_of_their_part(name):
    page = ROOT / "book" / "seminar" / name
    assert page.is_file()
    text = page.read_text(encoding="utf-8")
    refs = set(re.findall(r"\{(?:ref|numref)\}`(?:[^`<]*<)?([\w:.-]+)>?`", text))
    refs = {r for r in refs if not r.startswith("seminar-")}
    labels = set().union(*(_exercise_labels(p) for p in PARTS[name]))
    assert refs, f"{name} collects no exercise"
    assert refs <= labels, f"{name} refers to labels that are no exercise of its part: {refs - labels}"
    assert "{solution}" not in editions.split_keys(text)[0], \
        "problem sets carry solutions in their key only"


def test_a_figure_caption_is_public_text(tmp_path):
    """A caption (myst-nb's ``mystnb.figure.caption`` in a cell's metadata) shows on the page in
    both editions: a solution that repeats it is no leak."""
    cell = {"cell_type": "code", "execution_count": None, "id": "c1", "outputs": [], "source": "x = 1",
            "metadata": {"mystnb": {"figure": {"caption": "Merging time of two clusters at a right angle",
                                               "name": "fig-x"}}}}
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "page.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    assert editions.normalize("two clusters at a right angle") in editions.public_text(tmp_path)
