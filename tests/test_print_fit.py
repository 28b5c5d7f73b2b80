"""tools/print_pdf.py's plan for pictures that leave a page more than a quarter empty, on
layouts given here (the trial prints it reads them from are tested in
tests/browser/test_print_layout.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tools import print_pdf

ROOT = Path(__file__).resolve().parents[1]

PAGE_PX = print_pdf.A4_HEIGHT_MM / print_pdf.MM_PER_PX
BOTTOM = 1 - print_pdf.MARGINS_MM["bottom"] / print_pdf.A4_HEIGHT_MM


def _page(bottom, marks=None, top=0.05):
    return {"extent": (top, bottom), "marks": marks or {}}


def _block(picture, caption=40):
    return {"height": picture + caption, "picture": picture, "original": picture}


def test_a_picture_that_opens_the_next_page_shrinks_just_enough_to_fit():
    layout = [_page(0.6), _page(0.9, {0: 0.05}), _page(0.3)]
    room = (BOTTOM - 0.6) * PAGE_PX
    blocks = [_block(360)]
    (k, height), = print_pdf.shrink_plan(layout, blocks)
    assert k == 0
    assert height == pytest.approx(360 - (400 + print_pdf.FIT_SLACK_PX - room))
    assert print_pdf.MIN_SHRINK * 360 < height < 360


def test_full_pages_and_the_last_page_need_nothing():
    assert print_pdf.shrink_plan([_page(0.9), _page(0.9, {0: 0.05}), _page(0.2)],
                                 [_block(360)]) == []
    assert print_pdf.shrink_plan([_page(0.9), _page(0.2, {0: 0.05})], [_block(100)]) == []


def test_the_pictures_of_the_page_give_room_too_none_below_its_least_height():
    # the picture alone would have to fall below MIN_SHRINK of its height; the one above helps
    layout = [_page(0.7, {1: 0.2}), _page(0.9, {0: 0.05}), _page(0.3)]
    blocks = [_block(400, caption=120), _block(300)]
    plan = dict(print_pdf.shrink_plan(layout, blocks))
    assert set(plan) == {0, 1}
    freed = (400 - plan[0]) + (300 - plan[1])
    room = (BOTTOM - 0.7) * PAGE_PX
    assert freed == pytest.approx(520 + print_pdf.FIT_SLACK_PX - room)
    assert plan[0] >= print_pdf.MIN_SHRINK * 400 and plan[1] >= print_pdf.MIN_SHRINK * 300
    # without the picture above, no plan: the page stays as it is (and the check reports it)
    assert print_pdf.shrink_plan([_page(0.7), _page(0.9, {0: 0.05}), _page(0.3)],
                                 blocks[:1]) == []


def test_a_picture_far_below_the_top_or_broken_across_pages_is_not_the_cause():
    # a page of text above it: the picture did not open the page
    assert print_pdf.shrink_plan([_page(0.6), _page(0.9, {0: 0.5}), _page(0.3)],
                                 [_block(300)]) == []
    # outlined above the page's top: the rest of a picture begun on the page before
    assert print_pdf.shrink_plan([_page(0.6), _page(0.9, {0: -0.3}), _page(0.3)],
                                 [_block(300)]) == []


def test_a_sparse_page_is_one_whose_content_ends_above_three_quarters(tmp_path, monkeypatch):
    extents = [(0.05, 0.95), (0.05, 0.70), (0.05, 0.3)]
    monkeypatch.setattr(print_pdf, "page_extents", lambda pdf: extents)
    (page, fill), = print_pdf.sparse_pages(tmp_path / "x.pdf")
    assert page == 2 and fill < 0.75
    extents[1] = (0.05, 0.78)
    assert print_pdf.sparse_pages(tmp_path / "x.pdf") == []


def test_a_page_of_session_cards_prints_one_sheet_per_card():
    page = ('<section class="section seminar-card" id="s1"><h2>Session 1</h2></section>'
            '<p class="seminar-cards-intro">not a card</p>'
            '<section class="seminar-card section" id="s2"><h2>Session 2</h2></section>')
    assert print_pdf.sheets(page) == 2
    assert print_pdf.sheets("<section class='section'>no cards</section>") == 0
