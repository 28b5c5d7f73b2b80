"""The quizzes answer in chromium from file://, with no kernel and no network.

* An exported page per session (the quiz's HTML alone, as a chapter's output holds it): one
  ``.usaav-quiz`` container per question of the bank; clicking a choice shows that choice's
  feedback, marked right or wrong as the bank says; a number inside the correct range, typed and
  entered, is marked right, one outside it wrong.
* The built book: at least ten pages carry a quiz, and on each chapter page the quiz of its
  session is there, built by the page's own script, and reacts to a click, with no request
  leaving file:// and no uncaught error.
* JupyterLab (started as ``make lab`` starts it, on a scratch folder with a one-cell notebook):
  once the cell ``ue.quizzes.show(k)`` has run, the quiz is in its output and a click shows the
  feedback.
"""
from __future__ import annotations

import json
import os
import re
import time

import pytest

from usaav_edu import quizzes

from .pages import ROOT, SITE, site_pages, wait_for
from .test_lab import lab_server

SESSIONS = list(range(1, 11))
EXPORT = ('<!DOCTYPE html><html><head><meta charset="utf-8"><title>quiz</title></head>'
          "<body>{}</body></html>")


def plain(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", "", html).split())


def feedback_of(question):
    fb = question.locator(".Feedback")
    return fb.get_attribute("class") or "", " ".join(fb.inner_text().split())


def open_quiz(page, url, session):
    page.goto(url)
    n = len(quizzes.questions(session))
    boxes = page.locator(".usaav-quiz")
    wait_for(lambda: boxes.count() >= n, timeout=20)
    return boxes


def check_offline(page):
    assert not page.log.outside, f"requests left file:// (not offline): {page.log.outside}"
    assert not page.log.errors, f"errors on the page: {page.log.errors[:5]}"


@pytest.mark.parametrize("session", SESSIONS)
def test_an_exported_quiz_answers_every_question(page, tmp_path, session):
    path = tmp_path / f"quiz{session}.html"
    path.write_text(EXPORT.format(quizzes.show(session)._repr_html_()), encoding="utf-8")
    boxes = open_quiz(page, path.as_uri(), session)
    bank = quizzes.questions(session)
    assert boxes.count() == len(bank)
    for k, q in enumerate(bank):
        box = boxes.nth(k)
        assert plain(q["question"]) in " ".join(box.inner_text().split())
        if q["type"] == "multiple_choice":
            # answers are shuffled on the page: click the first one shown, find it in the bank
            button = box.locator("label.MCButton").first
            shown = " ".join(button.inner_text().split())
            answer = next(a for a in q["answers"] if plain(a["answer"]) == shown)
            button.click()
            cls, text = feedback_of(box)
            assert ("correct" if answer["correct"] else "incorrect") in cls.split(), (q["id"], cls)
            assert text == plain(answer["feedback"]), q["id"]
        else:
            lo, hi = next(a["range"] for a in q["answers"] if a.get("correct"))
            field = box.locator("input.Input-text")
            for value, verdict in (((lo + hi) / 2, "correct"), (hi + 10 * (hi - lo), "incorrect")):
                field.click()
                field.type(f"{value:.6g}")
                field.press("Enter")
                cls, text = feedback_of(box)
                assert verdict in cls.split(), (q["id"], value, cls)
                assert text, q["id"]
    check_offline(page)


def quiz_pages():
    return [p for p in site_pages()
            if "usaav-quiz" in p.read_text(encoding="utf-8", errors="replace")]


def test_at_least_ten_pages_of_the_book_carry_a_quiz():
    if not SITE.is_dir():
        pytest.skip(f"{SITE} is missing: build the book first (make book)")
    pages = quiz_pages()
    assert len(pages) >= 10, f"quizzes on {len(pages)} pages: {[p.name for p in pages]}"


def chapter_page(session):
    found = sorted((SITE / "book").glob(f"ch{session:02d}_*.html"))
    if not found:
        pytest.skip(f"no page of chapter {session} under {SITE}: build the book first (make book)")
    return found[0]


@pytest.mark.parametrize("session", SESSIONS)
def test_each_chapter_page_runs_its_quiz_without_a_kernel(page, session):
    html = chapter_page(session)
    boxes = open_quiz(page, html.as_uri(), session)
    bank = quizzes.questions(session)
    assert boxes.count() == len(bank), f"{html.name}: {boxes.count()} questions"
    k = next(i for i, q in enumerate(bank) if q["type"] == "multiple_choice")
    box = boxes.nth(k)
    assert plain(bank[k]["question"]) in " ".join(box.inner_text().split())
    assert feedback_of(box) == ("Feedback", "")
    button = box.locator("label.MCButton").first
    button.scroll_into_view_if_needed()
    button.click()
    cls, text = feedback_of(box)
    assert {"correct", "incorrect"} & set(cls.split()) and text, (html.name, cls, text)
    check_offline(page)


LAB_SESSION = 5
#: for the kernel to start, import the package (compiling its kernels if the cache is cold:
#: half a minute to two) and run the cell
LAB_TIMEOUT_MS = 240_000


@pytest.fixture(scope="module")
def lab_notebook(tmp_path_factory):
    """A ``jupyter lab`` on a scratch folder holding ``quiz.ipynb`` (one cell that shows the quiz
    of LAB_SESSION); yields the notebook's URL.  The kernel imports this repository's package."""
    tmp = tmp_path_factory.mktemp("quizlab")
    root = tmp / "root"
    root.mkdir()
    source = f"import usaav_edu as ue\nue.quizzes.show({LAB_SESSION})"
    nb = {"cells": [{"cell_type": "code", "execution_count": None, "id": "quiz", "metadata": {},
                     "outputs": [], "source": [source]}],
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                      "language": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    (root / "quiz.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    env = dict(os.environ,
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    with lab_server(root, tmp, cwd=root, env=env) as (url, token):
        yield f"{url}/lab/workspaces/quiz/tree/quiz.ipynb?reset&token={token}"


def _run_first_cell(page, timeout_s):
    """Run the notebook's first cell (Ctrl+Enter), again while its prompt shows that the run
    was not taken (a kernel still connecting drops it): until the prompt shows [*] or [1]."""
    prompt = page.locator(".jp-NotebookPanel .jp-CodeCell .jp-InputPrompt").first
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        dialog = page.locator(".jp-Dialog")
        if dialog.count():
            pytest.fail(f"JupyterLab shows a dialog over the notebook: {dialog.first.inner_text()!r}")
        page.locator(".jp-NotebookPanel .jp-CodeCell .cm-content").first.click()
        page.keyboard.press("Control+Enter")
        if wait_for(lambda: re.search(r"\[(\*|\d+)\]", prompt.inner_text()), timeout=5):
            return
    pytest.fail(f"JupyterLab did not run the cell within {timeout_s} s")


@pytest.mark.lab
def test_the_quiz_runs_in_jupyterlab(browser, lab_notebook):
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    try:
        page.goto(lab_notebook)
        page.locator(".jp-NotebookPanel .jp-CodeCell .cm-content").first.wait_for(
            timeout=LAB_TIMEOUT_MS)
        _run_first_cell(page, LAB_TIMEOUT_MS / 1000)
        boxes = page.locator(".jp-OutputArea .usaav-quiz")
        bank = quizzes.questions(LAB_SESSION)
        page.wait_for_function(f"() => document.querySelectorAll('.jp-OutputArea .usaav-quiz')"
                               f".length === {len(bank)}", timeout=LAB_TIMEOUT_MS)
        box = boxes.nth(next(i for i, q in enumerate(bank) if q["type"] == "multiple_choice"))
        box.locator("label.MCButton").first.click()
        cls, text = feedback_of(box)
        assert {"correct", "incorrect"} & set(cls.split()) and text, (cls, text)
    finally:
        context.close()
