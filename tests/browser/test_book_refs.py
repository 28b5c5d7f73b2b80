"""The notebooks' spelt-out references agree with the numbers of the built book.

The chapters write "Theorem 4.2" and "Chapter 2" out in full, so that JupyterLab shows the same
words as the book (tools/lab_refs.py); this check fails when a block was added or moved and the
numbers were not refreshed (``python tools/lab_refs.py`` after ``make book`` refreshes them).
"""
from __future__ import annotations

from tools import lab_refs

from .pages import ROOT, SITE


def test_every_reference_names_the_number_the_book_prints():
    labels, chapters = lab_refs.targets(SITE)
    stale = {}
    for path in lab_refs.notebooks(ROOT / "book"):
        changes = lab_refs.rewrite_notebook(path, labels, chapters, write=False, book=ROOT / "book")
        if changes:
            stale[path.name] = changes
    assert not stale, f"references out of date (run python tools/lab_refs.py): {stale}"


def test_chapter_references_are_spelt_out():
    """No bare label is left for JupyterLab to show as it is."""
    labels, _ = lab_refs.targets(SITE)
    assert len(labels) > 50, f"only {len(labels)} labelled blocks found in {SITE}"
    bare = []
    for path in [p for p in lab_refs.notebooks(ROOT / "book") if p.name != "widgets.ipynb"]:
        text = path.read_text(encoding="utf-8")
        bare += [f"{path.name}: {m.group(0)}" for m in lab_refs.ROLE.finditer(text)
                 if not m.group(3)]
        bare += [f"{path.name}: {m.group(0)}" for m in lab_refs.DOC_ROLE.finditer(text)]
    assert not bare, f"bare references left: {bare[:5]}"
