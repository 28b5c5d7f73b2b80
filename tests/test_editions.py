"""Two editions from one source: the student edition carries no solution text at all.

The build tests make a tiny book in a temporary folder (one page and one notebook, each with an
exercise and a solution, plus an instructor page) and build it twice, as `make book` and as
`make book-student` do (tools/editions.py with the real _config_student.yml), so they take
seconds, not a full book build.  When the real builds exist (`_build/html`,
`_build/student/_build/html`) they are checked too: every chapter page offers its .ipynb, and
the student site holds no sentence of any solution in the book.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import editions  # noqa: E402

SECRET = "The answer hides in a purple lighthouse beside the harbour wall"
NB_SECRET = "Gradient ascent never lowers the energy of the particle system"
EXERCISE = "Count the lighthouses along the northern coast of the island"

PAGE = f"""# A page

Some text.

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
    return {"cells": [{"cell_type": "markdown", "metadata": {}, "source": md},
                      {"cell_type": "code", "metadata": {}, "execution_count": None,
                       "outputs": [], "source": "1 + 1"}],
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                        "language": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


@pytest.fixture(scope="module")
def tiny_book(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tiny_book")
    (root / "book" / "seminar").mkdir(parents=True)
    (root / "_config.yml").write_text(yaml.safe_dump({
        "title": "Tiny book", "author": "test", "only_build_toc_files": True,
        "exclude_patterns": ["_build/*", "out_*/*", "student/*"],
        "execute": {"execute_notebooks": "off"},
        "parse": {"myst_enable_extensions": ["dollarmath", "colon_fence"]},
        "sphinx": {"extra_extensions": ["sphinx_exercise"]},
    }))
    (root / "_toc.yml").write_text(yaml.safe_dump({
        "format": "jb-book", "root": "book/intro",
        "chapters": [{"file": "book/page"}, {"file": "book/nb"},
                     {"file": "book/seminar/instructor_guide"}],
    }))
    (root / "book" / "intro.md").write_text("# Tiny book\n\nHello.\n")
    (root / "book" / "page.md").write_text(PAGE)
    (root / "book" / "nb.ipynb").write_text(json.dumps(_notebook()))
    (root / "book" / "seminar" / "instructor_guide.md").write_text(
        "# Instructor guide\n\nOnly instructors read the session plan of the lighthouse seminar.\n")
    return root


def _jupyter_book() -> str:
    jb = Path(sys.executable).with_name("jupyter-book")
    return str(jb) if jb.exists() else "jupyter-book"


@pytest.fixture(scope="module")
def normal_site(tiny_book) -> Path:
    subprocess.run([_jupyter_book(), "build", str(tiny_book), "--path-output",
                    str(tiny_book / "out_normal"), "-W", "-n", "--keep-going", "-q"],
                   check=True, capture_output=True)
    return tiny_book / "out_normal" / "_build" / "html"


@pytest.fixture(scope="module")
def student_site(tiny_book) -> Path:
    out = tiny_book / "student"
    rc = editions.main(["student", "--source", str(tiny_book), "--out", str(out), "--",
                        "-W", "-n", "--keep-going", "-q"])
    assert rc == 0, "tools/editions.py found solution text in the student edition"
    return out / "_build" / "html"


def _all_text(site: Path) -> str:
    return "\n".join(editions.site_text(p) for p in site.rglob("*")
                     if p.is_file() and p.suffix in editions.SITE_SUFFIXES)


# ---------------------------------------------------------------------------------------------


def test_normal_edition_shows_solutions_in_dropdowns(normal_site):
    page = (normal_site / "book" / "page.html").read_text()
    assert SECRET in editions.site_text(normal_site / "book" / "page.html")
    assert "dropdown" in page and "solution" in page
    assert NB_SECRET in editions.site_text(normal_site / "book" / "nb.html")
    assert NB_SECRET in (normal_site / "_sources" / "book" / "nb.ipynb").read_text()
    # the check would see a leak: it is not vacuous
    assert editions.find_leaks(normal_site, editions.solution_texts(tiny_site_root(normal_site)))


def tiny_site_root(site: Path) -> Path:
    return site.parents[2]


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
    assert cfg["sphinx"]["config"] == {"a": 1, "hide_solutions": True}
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
    leaks = editions.find_leaks(STUDENT_SITE, editions.solution_texts(ROOT),
                                editions.public_text(ROOT))
    assert not leaks, f"solution text in the student edition: {leaks[:5]}"


# ---------------------------------------------------------------------------------------------
# the problem sets collect the chapters' exercises


PARTS = {"problems_part1.md": ("ch01", "ch02", "ch03"),
         "problems_part2.md": ("ch04", "ch05", "ch06", "ch07", "ch08"),
         "problems_part3.md": ("ch09",)}
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
    assert "{solution}" not in text, "problem sets must not carry solutions"
