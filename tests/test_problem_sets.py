"""The problem sets state every exercise of their part, with points, and a key the student edition
leaves out (tools/problem_sets.py writes them from the chapters; tools/editions.py strips the key).

The chapters are read here with tools/editions.py's own functions (exercise labels, solution
bodies, the sentences its leak check looks for), not with the generator's.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tools import editions, problem_sets

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
SPEC = yaml.safe_load((BOOK / "seminar" / "problem_sets.yml").read_text(encoding="utf-8"))
PARTS = [(part["page"], part["chapters"]) for part in SPEC["parts"]]
IDS = [page for page, _ in PARTS]


def page_text(page: str) -> str:
    return (BOOK / "seminar" / page).read_text(encoding="utf-8")


def region(text: str, begin: str, end: str) -> str:
    assert text.count(begin) == 1 and text.count(end) == 1, f"one {begin} and one {end} expected"
    return text[text.index(begin):text.index(end)]


def exercises_of(page: str) -> str:
    return region(page_text(page), problem_sets.EXERCISES_BEGIN, problem_sets.EXERCISES_END)


def key_of(page: str) -> str:
    return region(page_text(page), editions.KEY_BEGIN, editions.KEY_END)


def notebook(chapter: str) -> dict:
    return json.loads((BOOK / f"{chapter}.ipynb").read_text(encoding="utf-8"))


def labels(chapter: str) -> list[str]:
    text = "\n".join(editions.cell_text(c) for c in notebook(chapter)["cells"]
                     if c["cell_type"] == "markdown")
    return editions.EXERCISE_LABEL.findall(text)


def stubs(chapter: str) -> list[str]:
    return [editions.cell_text(c) for c in notebook(chapter)["cells"]
            if "exercise-stub" in c.get("metadata", {}).get("tags", [])]


def chapter_solutions(chapter: str) -> list[str]:
    return editions.strip_notebook(notebook(chapter))[1]


def test_the_parts_cover_the_nine_chapters_once():
    chapters = [c for _, cs in PARTS for c in cs]
    assert chapters == sorted(p.stem for p in BOOK.glob("ch[0-9][0-9]_*.ipynb"))


@pytest.mark.parametrize("page,chapters", PARTS, ids=IDS)
def test_every_exercise_and_every_stub_of_the_part_is_stated(page, chapters):
    text = editions.normalize(exercises_of(page))
    for chapter in chapters:
        assert labels(chapter), f"{chapter} has no exercise"
        for label in labels(chapter):
            assert f"{{ref}}`{label}`" in text, f"{page} does not state {label} of {chapter}"
        for stub in stubs(chapter):
            assert editions.normalize(stub) in text, f"{page} lacks a stub of {chapter}:\n{stub}"
        # the statements themselves: the first sentence of each one, as the chapter writes it
        for c in notebook(chapter)["cells"]:
            if c["cell_type"] != "markdown":
                continue
            for _, title, _, body in problem_sets.directives(editions.cell_text(c), ("exercise",)):
                first = editions.normalize(body).split(". ")[0]
                assert first in text, f"{page}: the statement of {title!r} is not the chapter's"


@pytest.mark.parametrize("page,chapters", PARTS, ids=IDS)
def test_every_problem_has_points_summing_to_the_stated_total(page, chapters):
    text = exercises_of(page)
    n_exercises = sum(len(labels(c)) for c in chapters)
    problems = re.findall(r"^#### Problem (\d+): ", text, flags=re.M)
    points = [int(p) for p in re.findall(r"^\*\*(\d+) points?\*\* · ", text, flags=re.M)]
    assert [int(p) for p in problems] == list(range(1, n_exercises + 1))
    assert len(points) == n_exercises and all(p > 0 for p in points)
    stated = re.search(r"(\d+) problems worth (\d+) points in\s+all", text)
    assert stated, f"{page} states no total"
    assert (int(stated.group(1)), int(stated.group(2))) == (n_exercises, sum(points))
    total_row = re.search(r"^\| \*\*total\*\* \| \| \*\*(\d+)\*\* \| \*\*(\d+)\*\* \|$", text, re.M)
    assert total_row and int(total_row.group(2)) == sum(points)
    # each problem's points are those of its kind in the table at the top
    kinds = re.findall(r"^\*\*(\d+) points?\*\* · ([^·]+?) · ", text, flags=re.M)
    for pts, kind in kinds:
        assert re.search(rf"^\| {re.escape(kind)} \| {pts} \|", text, flags=re.M), (pts, kind)


@pytest.mark.parametrize("page,chapters", PARTS, ids=IDS)
def test_the_key_of_the_full_edition_holds_every_solution(page, chapters):
    key = key_of(page)
    flat = editions.normalize(key)
    for chapter in chapters:
        for label in labels(chapter):
            assert re.search(rf"^`{{3,}}\{{solution\}} {re.escape(label)}$", key, flags=re.M), \
                f"{page}: no solution of {label} in the key"
        for solution in chapter_solutions(chapter):
            for sentence in editions.probes(solution):
                assert sentence in flat, f"{page}: the key lacks {sentence!r} of {chapter}"
    # the key comes after the projects, at the end of the page
    assert page_text(page).rstrip().endswith(editions.KEY_END)


@pytest.mark.parametrize("page,chapters", PARTS, ids=IDS)
def test_the_student_edition_has_no_key(page, chapters):
    text = page_text(page)
    stripped, removed = editions.strip_myst(text)
    source = [text]
    editions.remove_keys(None, "book/seminar/" + page, source)   # the build's source-read
    for student in (stripped, source[0]):
        assert editions.KEY_BEGIN not in student and "## Key" not in student
        assert "{solution}" not in student
        flat = editions.normalize(student)
        for chapter in chapters:
            for solution in chapter_solutions(chapter):
                for sentence in editions.probes(solution):
                    assert sentence not in flat, f"{sentence!r} of {chapter} left in"
        assert "Problem 1: " in student            # the statements stay
    # and the key's own text (heading, introduction) counts as an answer for the leak check
    assert any("The solutions of the problems above" in r for r in removed)


def test_the_leak_check_catches_a_key_left_in(tmp_path):
    page = "problems_part1.md"
    text = page_text(page)
    source = tmp_path / "src"
    (source / "book" / "seminar").mkdir(parents=True)
    (source / "book" / "seminar" / page).write_text(text, encoding="utf-8")
    shutil.copy(BOOK / "ch01_particles.ipynb", source / "book")
    texts = editions.solution_texts(source)
    public = editions.public_text(source)

    def site_with(page_source: str) -> Path:
        site = tmp_path / f"site{len(list(tmp_path.iterdir()))}"
        (site / "_sources" / "book" / "seminar").mkdir(parents=True)
        (site / "_sources" / "book" / "seminar" / (page + ".txt")).write_text(page_source)
        return site

    left_in = editions.find_leaks(site_with(text), texts, public)
    assert any("the key of a problem set" in what for _, what in left_in)
    sentences = {p for sol in chapter_solutions("ch01_particles") for p in editions.probes(sol)}
    assert {what for _, what in left_in} & sentences, "no sentence of a solution found"
    # without its markers the key's sentences are still found
    bare = text.replace(editions.KEY_BEGIN, "").replace(editions.KEY_END, "")
    assert editions.find_leaks(site_with(bare), texts, public)
    # the site's sources as the student edition strips them carry none of it
    site = site_with(text)
    assert editions.strip_site_sources(site) > 0
    assert editions.find_leaks(site, texts, public) == []


def copy_of_the_book(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "book" / "seminar").mkdir(parents=True)
    for p in BOOK.glob("ch[0-9][0-9]_*.ipynb"):
        shutil.copy(p, root / "book")
    for p in (BOOK / "seminar").glob("problem*"):
        shutil.copy(p, root / "book" / "seminar")
    return root


def run_tool(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "tools" / "problem_sets.py"), "--root",
                           str(root), *args], capture_output=True, text=True)


def test_check_fails_when_a_statement_changes_and_the_page_is_not_regenerated(tmp_path):
    root = copy_of_the_book(tmp_path)
    assert run_tool(root, "--check").returncode == 0, "the problem sets are stale: run the tool"
    ch = root / "book" / "ch02_metastability.ipynb"
    old = "which cluster moves faster?"
    new = "which of the two clusters moves faster?"
    assert old in ch.read_text(encoding="utf-8")
    ch.write_text(ch.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    stale = run_tool(root, "--check")
    assert stale.returncode == 1
    assert "problems_part1.md" in stale.stdout and "problems_part2.md" not in stale.stdout
    assert run_tool(root).returncode == 0
    assert run_tool(root, "--check").returncode == 0
    assert new in (root / "book" / "seminar" / "problems_part1.md").read_text(encoding="utf-8")


def test_an_exercise_without_kind_or_an_unknown_label_is_an_error(tmp_path):
    root = copy_of_the_book(tmp_path)
    spec_path = root / "book" / "seminar" / "problem_sets.yml"
    spec = spec_path.read_text(encoding="utf-8")
    spec_path.write_text(spec.replace("      ch5-ex-own-bias:", "      ch5-ex-no-such:"))
    out = run_tool(root, "--check")
    assert out.returncode == 2
    assert "ch5-ex-own-bias" in out.stderr and "ch5-ex-no-such" not in out.stderr
    spec_path.write_text(spec.replace("[proof, warm-up before session 1]", "[essay, warm-up]"))
    out = run_tool(root, "--check")
    assert out.returncode == 2 and "ch1-ex-normalization" in out.stderr and "essay" in out.stderr


def test_a_statement_keeps_its_references_and_defines_no_label():
    text = ("See {prf:ref}`Theorem 1.2 <ch1-thm-dirac>`, {eq}`ch1-eq-flow`, {doc}`ch02_metastability`,"
            " {doc}`the next chapter <ch03_conditional_dirac>` and [Chapter 2](ch02_metastability.ipynb),"
            " ![a picture](figures/x.png), [a site](https://example.org).\n"
            "(ch1-eq-target)=\n$$ a = b $$ (ch1-eq-copy)\n"
            "```{math}\n:label: ch1-eq-math\nc = d\n```\n")
    out = problem_sets.relocate(text, "..", "test")
    assert "{prf:ref}`Theorem 1.2 <ch1-thm-dirac>`" in out and "{eq}`ch1-eq-flow`" in out
    assert "{doc}`../ch02_metastability`" in out
    assert "{doc}`the next chapter <../ch03_conditional_dirac>`" in out
    assert "[Chapter 2](../ch02_metastability.ipynb)" in out
    assert "![a picture](../figures/x.png)" in out and "[a site](https://example.org)" in out
    assert not re.findall(r"^\(([^()\s]+)\)=\s*$", out, flags=re.M)
    assert ":label:" not in out and "(ch1-eq-copy)" not in out and "$$ a = b $$" in out
    with pytest.raises(ValueError, match="anchor"):
        problem_sets.relocate("as [above](#ch1-sec-flow)", "..", "test")


def test_the_pages_define_no_label_of_a_chapter():
    chapter_labels = {label for p in BOOK.glob("ch[0-9][0-9]_*.ipynb") for label in editions.page_labels(p)}
    for page, _ in PARTS:
        path = BOOK / "seminar" / page
        assert not set(editions.page_labels(path)) & chapter_labels, page
        assert "{exercise}" not in path.read_text(encoding="utf-8")


def test_an_unclosed_directive_is_an_error_naming_the_cell_and_line(tmp_path):
    from tools.fences import FenceError

    cells = [{"cell_type": "markdown", "metadata": {}, "source": "# 1. A chapter"},
             {"cell_type": "markdown", "metadata": {},
              "source": "Text\n\n:::{exercise} An exercise\n:label: ch1-ex-open\nDo it.\n"}]
    path = tmp_path / "ch01_open.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                "nbformat_minor": 5}), encoding="utf-8")
    with pytest.raises(FenceError, match=r"^ch01_open\.ipynb cell 1: line 3: the ::: block opened "
                                         r"by ':::\{exercise\} An exercise' is never closed"):
        problem_sets.chapter_exercises(path)


def test_the_two_tools_find_the_end_of_a_block_with_one_helper():
    from tools import fences

    assert problem_sets.fence_end is fences.fence_end is editions.fence_end
    lines = ["::::{exercise} E", ":::{hint}", "h", ":::", "::::", "after"]
    assert fences.fence_end(lines, 0, "::::") == 4 and fences.fence_end(lines, 1, ":::") == 3
