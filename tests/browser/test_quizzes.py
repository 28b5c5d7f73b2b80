"""The quizzes answer in chromium from file://, with no kernel and no network.

* An exported page per session (the quiz's HTML alone, as a chapter's output holds it): one
  ``.usaav-quiz`` container per question of the bank; clicking a choice shows that choice's
  feedback, marked right or wrong as the bank says; a number inside the correct range, typed and
  entered, is marked right, one outside it wrong.
* The built book: at least nine pages carry a quiz, and on each chapter page the quiz of its
  session is there, built by the page's own script, and reacts to a click, with no request
  leaving file:// and no uncaught error.
"""
from __future__ import annotations

import re

import pytest

from usaav_edu import quizzes

from .pages import SITE, site_pages, wait_for

SESSIONS = list(range(1, 10))
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
    return [p for p in site_pages() if "usaav-quiz" in p.read_text(encoding="utf-8", errors="replace")]


def test_at_least_nine_pages_of_the_book_carry_a_quiz():
    if not SITE.is_dir():
        pytest.skip(f"{SITE} is missing: build the book first (make book)")
    pages = quiz_pages()
    assert len(pages) >= 9, f"quizzes on {len(pages)} pages: {[p.name for p in pages]}"


def chapter_page(session):
    found = sorted((SITE / "book").glob(f"ch0{session}_*.html"))
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
