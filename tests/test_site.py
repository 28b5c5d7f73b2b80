"""The published site: the links tools/book_site.py writes into the pages, and its assembly by
tools/assemble_site.py (``make site``), on small synthetic builds (milliseconds).

The assembled site of the real builds is checked in tests/browser/test_published_site.py.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tools import assemble_site, book_site

ROOT = Path(__file__).resolve().parents[1]

TITLES = {"index": "Home", "book/ch01_particles": "Tokens as particles",
          "book/ch02_metastability": "Metastability", "book/seminar/index": "The seminar",
          "book/seminar/problems_part1": "Problem set 1", "book/start": "Before you start"}


def test_chapter_k_is_session_k_with_its_deck_and_pdf():
    assert book_site.session_of("book/ch04_rope") == 4
    assert book_site.session_of("book/seminar/index") is None
    assert book_site.session_deck(4) == "slides/session04.html"
    assert book_site.page_pdf("book/ch04_rope") == "pdf/ch04_rope.pdf"
    assert book_site.page_pdf("book/ch04_rope", "student") is None
    assert book_site.page_pdf("book/seminar/problems_part2") == "pdf/problems_part2_key.pdf"
    assert book_site.page_pdf("book/seminar/problems_part2", "student") == \
        "pdf/problems_part2.pdf"
    assert book_site.page_pdf("book/seminar/cards", "student") == "pdf/cards.pdf"
    assert book_site.page_pdf("book/start") is None
    for bad in (0, "1", True):
        with pytest.raises(ValueError, match="session must be a positive integer"):
            book_site.session_deck(bad)
    with pytest.raises(ValueError, match="edition must be one of"):
        book_site.page_pdf("book/ch04_rope", "teacher")


def test_links_are_relative_to_the_page_and_to_where_its_edition_sits():
    assert book_site.site_href("book/ch01_particles", "pdf/ch01_particles.pdf") == \
        "../pdf/ch01_particles.pdf"
    assert book_site.site_href("book/seminar/index", "slides/session01.html", "student/") == \
        "../../../slides/session01.html"
    assert book_site.site_href("index", "student/index.html") == "student/index.html"
    for bad in ("/abs/", "student", "../up/"):
        with pytest.raises(Exception, match="usaav_site_path must be"):
            book_site.site_path_of(bad)


def test_an_edition_says_where_it_sits_in_the_site_through_html_context():
    from sphinx.errors import ConfigError

    assert book_site.site_settings({}) == ("", "full")
    assert book_site.site_settings({"usaav_site_path": "student/",
                                    "usaav_edition": "student"}) == ("student/", "student")
    with pytest.raises(ConfigError, match="usaav_edition must be one of"):
        book_site.site_settings({"usaav_edition": "teacher"})
    import yaml

    student = yaml.safe_load((ROOT / "_config_student.yml").read_text(encoding="utf-8"))
    assert book_site.site_settings(student["sphinx"]["config"]["html_context"]) == \
        ("student/", "student")


def test_the_seminar_page_lists_every_deck_pdf_and_the_student_edition():
    rows = book_site.site_links("book/seminar/index", TITLES)
    targets = [t for _, links in rows for _, t in links]
    assert targets == ["student/index.html",
                       "slides/session01.html", "pdf/ch01_particles.pdf", "qti/session01.zip",
                       "slides/session02.html", "pdf/ch02_metastability.pdf", "qti/session02.zip",
                       "pdf/problems_part1.pdf", "pdf/problems_part1_key.pdf"]
    assert rows[1][0] == "Session 1, Tokens as particles"
    student = book_site.site_links("book/seminar/index", TITLES, "student")
    assert [t for _, links in student for _, t in links] == ["pdf/problems_part1.pdf"]
    assert book_site.site_links("book/ch01_particles", TITLES, "student") == []
    assert book_site.site_links("book/start", TITLES) == []


def test_a_chapters_links_go_under_its_title_and_the_seminars_at_the_end():
    body = "<section><h1>Tokens<a>#</a></h1><p>Text.</p></section>"
    rows = book_site.site_links("book/ch01_particles", TITLES)
    block = book_site.site_links_html("book/ch01_particles", rows)
    out = book_site.with_site_links(body, block, "book/ch01_particles")
    assert out.index("</h1>") < out.index('href="../slides/session01.html"') < out.index("Text.")
    assert 'class="reference external usaav-site-link"' in out
    seminar = book_site.site_links_html("book/seminar/index",
                                        book_site.site_links("book/seminar/index", TITLES))
    out = book_site.with_site_links(body, seminar, "book/seminar/index")
    assert out.startswith(body) and 'href="../../student/index.html"' in out
    assert book_site.with_site_links(body, "", "book/start") == body


# ---------------------------------------------------------------------------------------------
# assembly


def _page(pagename: str, edition: str, site_path: str) -> str:
    """A built page as the extension writes it: its site links and the header's PDF entry."""
    rows = book_site.site_links(pagename, TITLES, edition)
    body = book_site.with_site_links(f"<h1>{TITLES[pagename]}</h1><p>Text.</p>",
                                     book_site.site_links_html(pagename, rows, site_path),
                                     pagename)
    own = book_site.page_pdf(pagename, edition)
    entry = (f'<a class="btn btn-printed-chapters-button" '
             f'href="{book_site.site_href(pagename, own, site_path)}">PDF</a>' if own else "")
    return f"<html><body>{entry}<article>{body}</article></body></html>"


def _edition(root: Path, edition: str, site_path: str) -> Path:
    for name in TITLES:
        path = root / f"{name}.html"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_page(name, edition, site_path), encoding="utf-8")
    (root / "_static").mkdir()
    (root / "_static" / "x.css").write_text("", encoding="utf-8")
    return root


@pytest.fixture
def builds(tmp_path):
    book = _edition(tmp_path / "html", "full", "")
    student = _edition(tmp_path / "student" / "html", "student", "student/")
    slides = tmp_path / "decks"
    (slides / "lib").mkdir(parents=True)
    (slides / "lib" / "reveal.js").write_text("", encoding="utf-8")
    for k in (1, 2):
        (slides / f"session{k:02d}.html").write_text("<html></html>", encoding="utf-8")
    pdf = tmp_path / "pdfs"
    pdf.mkdir()
    for name in ("ch01_particles", "ch02_metastability", "problems_part1", "problems_part1_key"):
        (pdf / f"{name}.pdf").write_bytes(b"%PDF-1.4\n")
    return {"book": book, "student": student, "slides": slides, "pdf": pdf,
            "out": tmp_path / "site"}


def test_the_site_holds_the_book_the_student_edition_the_decks_and_the_pdfs(builds):
    out = assemble_site.assemble(**builds)
    assert (out / "index.html").is_file() and (out / "book" / "ch01_particles.html").is_file()
    assert (out / "student" / "book" / "seminar" / "problems_part1.html").is_file()
    assert (out / "slides" / "session02.html").is_file()
    assert (out / "slides" / "lib" / "reveal.js").is_file()  # whatever the decks' folder holds
    assert (out / "pdf" / "problems_part1_key.pdf").is_file()
    assert assemble_site.broken_links(out) == []
    seminar = assemble_site.page_links(out / "book" / "seminar" / "index.html")
    assert "../../student/index.html" in seminar and "../../slides/session02.html" in seminar
    assert sorted(p.name for p in out.parent.iterdir()) == sorted(
        ["html", "student", "decks", "pdfs", "site"]), "a temporary folder was left behind"


def test_a_deck_a_page_links_but_nobody_made_fails_and_keeps_the_previous_site(builds):
    out = assemble_site.assemble(**builds)
    (out / "marker").write_text("the previous site", encoding="utf-8")
    (builds["slides"] / "session02.html").unlink()
    with pytest.raises(assemble_site.SiteError, match=r"slides/session02\.html is missing"):
        assemble_site.assemble(**builds)
    assert (out / "marker").is_file(), "the previous site was replaced by a broken one"
    assert sorted(p.name for p in out.parent.iterdir()) == sorted(
        ["html", "student", "decks", "pdfs", "site"])


def test_a_missing_part_is_named_with_the_command_that_makes_it(builds, tmp_path):
    with pytest.raises(assemble_site.SiteError, match="the student edition is missing.*"
                                                      "make book-student"):
        assemble_site.assemble(**{**builds, "student": tmp_path / "nowhere"})
    with pytest.raises(assemble_site.SiteError, match="the book is missing.*make book"):
        assemble_site.assemble(**{**builds, "book": tmp_path / "nowhere"})
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(assemble_site.SiteError, match="the PDFs are missing"):
        assemble_site.assemble(**{**builds, "pdf": empty})
    (tmp_path / "a-file").write_text("not a site", encoding="utf-8")
    with pytest.raises(assemble_site.SiteError, match="exists and is not a folder"):
        assemble_site.assemble(**{**builds, "out": tmp_path / "a-file"})
    assert (tmp_path / "a-file").read_text(encoding="utf-8") == "not a site"


def test_a_link_out_of_the_site_is_refused(builds):
    page = builds["book"] / "book" / "start.html"
    page.write_text('<a class="usaav-site-link" href="../../../elsewhere.pdf">x</a>'
                    '<a class="usaav-site-link" href="https://example.org/x.pdf">y</a>',
                    encoding="utf-8")
    with pytest.raises(assemble_site.SiteError, match="points outside the site") as err:
        assemble_site.assemble(**builds)
    assert "https://example.org/x.pdf is not a relative link" in str(err.value)


def test_what_is_printed_and_under_which_name(builds):
    (builds["book"] / "book" / "seminar" / "cards.html").write_text("<h1>Cards</h1>")
    (builds["student"] / "book" / "seminar" / "cards.html").write_text("<h1>Cards</h1>")
    jobs = assemble_site.print_jobs(builds["book"], builds["student"])
    named = [(p.relative_to(p.parents[2] if "seminar" in p.parts else p.parents[1]).as_posix(),
              n) for p, n in jobs]
    assert [n for _, n in jobs] == ["ch01_particles.pdf", "ch02_metastability.pdf", "cards.pdf",
                                    "problems_part1_key.pdf", "problems_part1.pdf"], named
    assert builds["student"] in jobs[-1][0].parents and builds["book"] in jobs[-2][0].parents


def test_decks_that_cannot_be_made_stop_the_assembly(builds, monkeypatch):
    import subprocess
    from types import SimpleNamespace

    calls = []

    def run(cmd, env=None):
        calls.append((cmd, env))
        return SimpleNamespace(returncode=1)

    monkeypatch.setattr(subprocess, "run", run)
    with pytest.raises(assemble_site.SiteError, match=r"the decks: .*slides\.py --out"):
        assemble_site.assemble(**{**builds, "slides": None})
    (cmd, env), = calls
    assert cmd[-2:] == ["--out", cmd[-1]] and cmd[-1].endswith("/slides")
    assert env["USAAV_EDU_STATIC_PAGE"] == "1"
    assert not builds["out"].exists()
