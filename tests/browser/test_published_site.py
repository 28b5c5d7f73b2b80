"""The site ``make site`` assembles (``_build/site``, or USAAV_SITE): its links and its PDFs.

`make test` assembles it (tools/assemble_site.py, after the book build and the student edition:
the decks and every PDF) before this stage, so these checks see the site as it is published:

* the seminar page links every session's deck (``slides/sessionKK.html``), every chapter's PDF,
  the problem sets' handouts and keys and the student edition, and each link resolves to a file
  of the site; every chapter k links session k's deck and its own PDF, and the header's PDF
  entry is that PDF; no link into the site's parts (in either edition) is broken;
* each problem set has its handout (from the student edition) and its key (from the full one);
* every printed chapter: no page but the last more than a quarter empty, and no line of code
  that the page folds (a ``hide-input`` cell) printed, while its shown code is.

Without an assembled site these checks are skipped (``make site`` makes one).
"""
from __future__ import annotations

import io
import itertools
import os
import re
import unicodedata
from pathlib import Path

import pytest

from tools import assemble_site, book_site, print_pdf

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("USAAV_SITE", ROOT / "_build" / "site")).resolve()
CHAPTERS = sorted(SITE.glob("book/ch*.html")) if SITE.is_dir() else []
PROBLEM_SETS = sorted(SITE.glob("book/seminar/problems_*.html")) if SITE.is_dir() else []
SEMINAR = SITE / "book" / "seminar" / "index.html"
#: the shortest line of folded code looked for in a PDF (characters, white space aside)
MIN_CODE_LINE = 24

pytestmark = pytest.mark.skipif(not SEMINAR.is_file(),
                                reason=f"no assembled site at {SITE} (make site)")


def _resolved(page: Path, href: str) -> Path:
    target = assemble_site.resolve(page, href)
    assert target is not None, f"{page.name}: {href} is not a relative link"
    assert SITE in target.parents, f"{page.name}: {href} leads out of the site"
    assert target.is_file(), f"{page.name}: {href} -> {target.relative_to(SITE)} is missing"
    return target.relative_to(SITE)


def test_the_seminar_page_links_decks_pdfs_and_the_student_edition_inside_the_site():
    reached = {_resolved(SEMINAR, href).as_posix()
               for href in assemble_site.page_links(SEMINAR)}
    assert "student/index.html" in reached
    assert CHAPTERS, "no chapter in the site"
    for chapter in CHAPTERS:
        k = book_site.session_of(f"book/{chapter.stem}")
        assert f"slides/session{k:02d}.html" in reached, f"no deck of session {k}"
        assert f"pdf/{chapter.stem}.pdf" in reached, f"no PDF of {chapter.name}"
    for problems in PROBLEM_SETS:
        assert {f"pdf/{problems.stem}.pdf", f"pdf/{problems.stem}_key.pdf"} <= reached


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_each_chapter_links_its_deck_and_its_pdf(chapter):
    k = book_site.session_of(f"book/{chapter.stem}")
    links = assemble_site.page_links(chapter)
    reached = [_resolved(chapter, href).as_posix() for href in links]
    assert f"slides/session{k:02d}.html" in reached
    assert reached.count(f"pdf/{chapter.stem}.pdf") == 2, "the line under the title and the " \
        "header's PDF entry"


def test_no_link_into_the_sites_parts_is_broken():
    assert assemble_site.broken_links(SITE) == []


@pytest.mark.parametrize("problems", PROBLEM_SETS, ids=lambda p: p.stem)
def test_each_problem_set_has_a_handout_and_a_key(problems):
    title = print_pdf.page_title(problems)
    for name in (f"{problems.stem}.pdf", f"{problems.stem}_key.pdf"):
        assert print_pdf.check_pdf(SITE / "pdf" / name, title) == []
    handout = SITE / "student" / "book" / "seminar" / problems.name
    assert handout.is_file(), "the handout's page is not in the student edition"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_printed_chapter_has_no_page_more_than_a_quarter_empty(chapter):
    pdf = SITE / "pdf" / f"{chapter.stem}.pdf"
    assert print_pdf.sparse_pages(pdf) == [], "pages (number, fill) more than a quarter empty"


def _code_lines(html: str) -> tuple[set[str], set[str]]:
    """The page's lines of code (white space removed, MIN_CODE_LINE or longer) that only its
    folded cells hold, and those of its shown code cells."""
    from bs4 import BeautifulSoup

    def lines(pre):
        return {"".join(line.split()) for line in pre.get_text().splitlines()}

    soup = BeautifulSoup(html, "html.parser")
    folded: set[str] = set()
    shown: set[str] = set()
    for pre in soup.select("div.cell div.cell_input pre"):
        (folded if pre.find_parent("details", class_="hide") else shown).update(lines(pre))
    for details in soup.select("div.cell details.hide"):
        details.decompose()
    # a line that the page also shows elsewhere (its prose, an output) may be printed
    elsewhere = "".join(soup.get_text().split())
    folded = {line for line in folded - shown if line not in elsewhere}
    return ({line for line in folded if len(line) >= MIN_CODE_LINE},
            {line for line in shown if len(line) >= MIN_CODE_LINE})


def _pdf_text(pdf: Path) -> str:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(pdf.read_bytes()))
    text = unicodedata.normalize("NFKC", " ".join(p.extract_text() or "" for p in reader.pages))
    return re.sub(r"\s+", "", text)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_printed_chapter_keeps_folded_code_folded(chapter):
    folded, shown = _code_lines(chapter.read_text(encoding="utf-8"))
    text = _pdf_text(SITE / "pdf" / f"{chapter.stem}.pdf")
    printed = sorted(line for line in folded if line in text)
    assert not printed, f"folded code printed: {printed[:5]}"
    if shown:
        assert any(line in text for line in shown), "no shown code in the PDF: no test"


def test_the_session_cards_print_one_page_per_session():
    cards_html = SITE / "book" / "seminar" / "cards.html"
    if not cards_html.is_file():
        pytest.skip("the book has no session cards")
    n_cards = print_pdf.sheets(cards_html.read_text(encoding="utf-8"))
    sessions = len(re.findall(r"<h2[^>]*>\s*Session \d+", cards_html.read_text(encoding="utf-8")))
    assert n_cards >= 9 and n_cards == sessions, (n_cards, sessions)
    # a cover (the page's title and introduction), then one page per card
    assert print_pdf.pdf_pages(SITE / "pdf" / "cards.pdf") == n_cards + 1


def test_every_sessions_quiz_is_in_the_site_as_a_qti_package():
    import zipfile

    packages = sorted((SITE / "qti").glob("session*.zip"))
    assert len(packages) == 10, packages
    for package in packages:
        with zipfile.ZipFile(package) as z:
            assert z.testzip() is None
            assert "imsmanifest.xml" in z.namelist(), (package, z.namelist())


def test_the_syllabus_and_its_calendar_are_in_the_site():
    import icalendar

    syllabus = SITE / "book" / "seminar" / "syllabus.html"
    text = syllabus.read_text(encoding="utf-8")
    assert 'href="seminar.ics"' in text
    calendar = icalendar.Calendar.from_ical((syllabus.parent / "seminar.ics").read_bytes())
    events = [e for e in calendar.walk("VEVENT")]
    assert len(events) >= 9
    starts = sorted(e.decoded("DTSTART") for e in events)
    assert all(b > a for a, b in itertools.pairwise(starts)), "two sessions at one time"
    # the syllabus's session table shows the calendar's first date
    first = starts[0]
    assert f"{first:%d} {first:%b} {first:%Y}" in text or f"{first:%d %B %Y}" in text, first


@pytest.mark.parametrize("problems", PROBLEM_SETS, ids=lambda p: p.stem)
def test_each_problem_set_states_its_exercises_on_the_printed_handout(problems):
    # the handout (student edition, printed) holds every problem of the page, by its title
    from pypdf import PdfReader

    headings = re.findall(r"<h4>(.*?)</h4>", problems.read_text(encoding="utf-8"), re.S)
    plain = [html_unescape(re.sub(r"<[^>]+>", "", h)).rstrip("#").strip() for h in headings]
    titles = [re.sub(r"^[\d.]*\s*Problem \d+: ", "", t) for t in plain if "Problem" in t]
    assert titles, f"{problems.name}: no problem headings"
    handout = SITE / "pdf" / f"{problems.stem}.pdf"
    text = unicodedata.normalize("NFKC", " ".join(p.extract_text() or ""
                                                  for p in PdfReader(str(handout)).pages))
    flat = "".join(text.split())
    # math (\(...\)) prints typeset: the words around it are looked for
    words = {t: [w for w in re.split(r"\\\(.*?\\\)", t) if w.strip()] for t in titles}
    missing = [t for t, parts in words.items()
               if not all("".join(w.split()) in flat for w in parts)]
    assert not missing, f"{handout.name}: problems not printed: {missing}"


def html_unescape(text: str) -> str:
    import html

    return html.unescape(text)
