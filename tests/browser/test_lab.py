"""The learner's JupyterLab (``make lab``) renders the book's MyST.

A JupyterLab server is started on ``book/`` as ``make lab`` starts it (headless, on 127.0.0.1, a
random token and a free port), chapter 1 is opened in chromium, and the rendered markdown cells are
read: the exercise and theorem blocks are blocks, the dropdown solution is closed until clicked,
the math is typeset and the cross-references are links, not the raw MyST source.

The server gets its own workspace, user-settings (autosave off) and checkpoint folders, so the
check neither writes into book/ nor touches the user's JupyterLab settings.  It is started with the
options of ``make lab`` (the Makefile's ``LAB_OPTIONS``): it shows no news pop-up.  It is stopped at
the end, also when a check fails.

The chapter reads as in the book: its set-up cell is folded (the title is the first thing on
screen), and its theorems and exercises carry the book's numbers ("Theorem 1.2": the chapter's
numbering cell, written by tools/setup_cell.py, gives the renderer the chapter's number).

The renderer sees one notebook at a time, so the chapters spell their references out with the
book's numbers (tools/lab_refs.py): chapter 8 is opened too, to check that a reference to another
chapter's theorem shows the book's number and no "not found" mark, and that a link to a chapter
opens that chapter's notebook in JupyterLab.

The renderer reads no bibliography either (jupyterlab_myst 2.7 marks every {cite} role "Citation
Not Found" and shows its key), so the chapters write their citations as links whose text is the
book's author and year (tools/lab_cites.py, which the book reads back as the roles): chapter 1's
citations must show those texts and no "not found" mark.

What the renderer does not do (not checked here): {bibliography} shows nothing, and a citation
link does not lead to the reference; a reference to another chapter's block shows its text but
does not lead there.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tools import lab_cites, lab_refs, setup_cell

from .pages import ROOT, SITE

BOOK = ROOT / "book"
#: every check here talks to a JupyterLab server: run alone (`make test` runs `-m lab` on its own)
pytestmark = pytest.mark.lab

CHAPTER = "ch01_particles.ipynb"
EXERCISE = "ch1-ex-normalization"    # an exercise of the chapter, with a dropdown solution
THEOREM = "ch1-thm-ascent"           # a prf:theorem of the chapter, cited by {prf:ref}
LAST_CHAPTER = "ch08_experiments.ipynb"  # refers to blocks and chapters elsewhere in the book
#: a phrase of the solution of EXERCISE that shows only when the dropdown is opened
SOLUTION_PHRASE = "The layer map adds the tangent vector"
START_TIMEOUT = 60.0                 # seconds for the server to answer
RENDER_TIMEOUT_MS = 45_000           # for every markdown cell of the chapter to be rendered
#: what a rendered markdown cell shows: the MyST renderer's widget, or JupyterLab's own markdown
RENDERED = ".jp-NotebookPanel .jp-MarkdownCell :is(.myst, .jp-MarkdownOutput)"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: the question JupyterLab asks on its first start unless told not to
NEWS_QUESTION = "Would you like to get notified about official Jupyter news?"


def lab_options(makefile: Path = ROOT / "Makefile") -> list[str]:
    """The options ``make lab`` gives ``jupyter lab`` (``LAB_OPTIONS``, continued lines joined)."""
    text = makefile.read_text(encoding="utf-8").replace("\\\n", " ")
    m = re.search(r"^LAB_OPTIONS\s*:?=(.*)$", text, re.M)
    assert m, f"{makefile}: no LAB_OPTIONS"
    return shlex.split(m.group(1).replace("$(CURDIR)", str(ROOT)))


def _write_settings(folder: Path) -> None:
    """User settings of the test's JupyterLab: no autosave (news: as ``make lab`` has them)."""
    settings = {
        "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    }
    for name, value in settings.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value), encoding="utf-8")


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM (the server shuts its kernels down), then SIGKILL the process group if it hangs."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@contextlib.contextmanager
def lab_server(root: Path, tmp: Path, cwd: Path = ROOT, env: dict | None = None):
    """A running ``jupyter lab`` on ``root`` with the Makefile's options and fresh settings,
    runtime and checkpoint folders under ``tmp``; yields its base URL and token, and stops it."""
    _write_settings(tmp / "user-settings")
    port, token = _free_port(), secrets.token_hex(16)
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser",
           f"--ServerApp.root_dir={root}", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
           "--ServerApp.port_retries=0", f"--ServerApp.token={token}",
           *lab_options(), f"--LabApp.workspaces_dir={tmp / 'workspaces'}",
           f"--LabApp.user_settings_dir={tmp / 'user-settings'}",
           f"--FileCheckpoints.checkpoint_dir={tmp / 'checkpoints'}"]
    env = dict(os.environ if env is None else env, JUPYTER_RUNTIME_DIR=str(tmp / "runtime"))
    log_path = tmp / "server.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if proc.poll() is not None:
                pytest.fail(f"jupyter lab exited with {proc.returncode}:\n{log_path.read_text()}")
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"jupyter lab did not answer within {START_TIMEOUT} s:\n"
                                f"{log_path.read_text()}")
                time.sleep(0.3)
        yield url, token
    finally:
        _stop(proc)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A running ``jupyter lab`` on book/: yields its base URL and token."""
    with lab_server(BOOK, tmp_path_factory.mktemp("lab")) as (url, token):
        yield url, token


def _markdown_cells(chapter: Path) -> tuple[int, int]:
    """The notebook's markdown cells, and how many of them show text (not the numbering cell)."""
    nb = json.loads(chapter.read_text(encoding="utf-8"))
    cells = [c for c in nb["cells"] if c["cell_type"] == "markdown"]
    return len(cells), sum(not setup_cell.is_numbering_cell(c) for c in cells)


@pytest.fixture(scope="module")
def chapter(lab, browser):
    """Chapter 1 open in JupyterLab, every markdown cell rendered."""
    yield from _open(lab, browser, CHAPTER)


@pytest.fixture(scope="module")
def last_chapter(lab, browser):
    """Chapter 8 (references to other chapters) open in JupyterLab, every markdown cell rendered."""
    yield from _open(lab, browser, LAST_CHAPTER)


def _open(lab, browser, name):
    url, token = lab
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    try:
        page.goto(f"{url}/lab/workspaces/check-{Path(name).stem}/tree/{name}?reset&token={token}")
        n_markdown, n_text = _markdown_cells(BOOK / name)
        # a markdown cell is rendered when its output area holds the renderer's content (the
        # numbering cell holds only frontmatter, which the renderer takes and does not show)
        page.wait_for_function(
            """([n, k]) => {
                const cells = document.querySelectorAll('.jp-NotebookPanel .jp-MarkdownCell');
                const done = [...cells].filter(c => {
                    const out = c.querySelector(':is(.myst, .jp-MarkdownOutput)');
                    return out && out.textContent.trim().length > 0;
                });
                return cells.length === n && done.length === k;
            }""",
            arg=[n_markdown, n_text], timeout=RENDER_TIMEOUT_MS)
        yield page
    finally:
        context.close()


def _rendered_text(page) -> str:
    """The text of every rendered markdown cell (hidden parts, e.g. closed dropdowns, included)."""
    return page.evaluate(
        "sel => [...document.querySelectorAll(sel)].map(e => e.textContent).join('\\n')",
        RENDERED)


def test_no_raw_myst_source_is_shown(chapter):
    text = _rendered_text(chapter)
    raw = [s for s in (":label:", ":class: dropdown", "{exercise}", "{solution}", "{prf:theorem}",
                       "{prf:proof}", "{prf:ref}", "{cite", "(#cite:", "```") if s in text]
    assert not raw, f"raw MyST source in the rendered cells of {CHAPTER}: {raw}"


def test_citations_show_author_and_year(chapter):
    source = (BOOK / CHAPTER).read_text(encoding="utf-8")
    bib, prefix = lab_cites.read_bib(), lab_cites.keyprefix(source, CHAPTER)
    expected = sorted(lab_cites.cite_text(kind, keys.split(","), bib, prefix).replace("*", "")
                      for _, kind, keys in lab_cites.LINK.findall(source))
    missing = chapter.locator(f"{RENDERED} [title='Citation Not Found']").all_text_contents()
    assert not missing, f"{CHAPTER}: citations shown as not found: {missing}"
    assert expected, f"{CHAPTER} has no citation written for JupyterLab (tools/lab_cites.py)"
    shown = sorted(" ".join(t.split()) for t in
                   chapter.locator(f"{RENDERED} a[href^='#cite:']").all_text_contents())
    assert shown == expected, f"{CHAPTER}: citations show {shown}, the book prints {expected}"


def test_exercise_is_a_block(chapter):
    block = chapter.locator(f"{RENDERED} .myst-exercise#{EXERCISE}")
    assert block.count() == 1, f"exercise {EXERCISE}: {block.count()} rendered blocks, expected 1"
    block.scroll_into_view_if_needed()  # cells off screen are not laid out (content-visibility)
    assert block.is_visible(), f"exercise {EXERCISE} is rendered but not visible"
    title = block.locator(".myst-exercise-title").text_content()
    assert title.startswith("Exercise") and "Normalization to second order" in title, (
        f"exercise {EXERCISE}: title {title!r}, "
        "expected 'Exercise N (Normalization to second order)'")


def test_solution_is_a_closed_dropdown(chapter):
    solution = chapter.locator(f"{RENDERED} details.myst-exercise").filter(
        has=chapter.locator(f"summary a[href='#{EXERCISE}']"))
    assert solution.count() == 1, (
        f"solution of {EXERCISE}: {solution.count()} dropdown (<details>) blocks, expected 1")
    solution.scroll_into_view_if_needed()
    summary = solution.locator("summary")
    assert summary.text_content().startswith("Solution to"), (
        f"solution of {EXERCISE}: summary {summary.text_content()!r}, expected 'Solution to ...'")
    assert summary.is_visible(), f"solution of {EXERCISE}: the dropdown's summary is not visible"
    body = solution.locator(".myst-exercise-body")
    assert SOLUTION_PHRASE in body.text_content(), (
        f"solution of {EXERCISE}: body does not hold {SOLUTION_PHRASE!r}")
    opened = solution.evaluate("d => d.open")
    assert not opened and not body.is_visible(), (
        f"solution of {EXERCISE} is shown before it is asked for (open={opened})")
    summary.click()
    body.wait_for(state="visible", timeout=5_000)
    assert chapter.get_by_text(SOLUTION_PHRASE).first.is_visible(), (
        f"solution of {EXERCISE}: clicking the summary did not show {SOLUTION_PHRASE!r}")


def test_theorem_is_a_block(chapter):
    block = chapter.locator(f"{RENDERED} .myst-proof#{THEOREM}")
    assert block.count() == 1, f"theorem {THEOREM}: {block.count()} rendered blocks, expected 1"
    title = block.locator(".myst-proof-title").text_content()
    assert title.startswith("Theorem") and "gradient ascent" in title, (
        f"theorem {THEOREM}: title {title!r}, expected 'Theorem N (USA is gradient ascent ...)'")
    n_proofs = chapter.locator(f"{RENDERED} .myst-proof").count()
    n_source = (BOOK / CHAPTER).read_text(encoding="utf-8").count("```{prf:")
    assert n_proofs == n_source, (
        f"{n_proofs} theorem/proof blocks rendered, the chapter has {n_source} prf: directives")


def test_math_is_typeset(chapter):
    inline = chapter.locator(f"{RENDERED} .katex").count()
    display = chapter.locator(f"{RENDERED} .katex-display").count()
    assert inline >= 50 and display >= 5, (
        f"{inline} typeset formulas, {display} of them displayed; expected >= 50 and >= 5")


def test_cross_references_are_links(chapter):
    refs = chapter.locator(f"{RENDERED} a[href='#{THEOREM}']:not([aria-label])")
    texts = [t.replace("\xa0", " ") for t in refs.all_text_contents()]
    assert texts and all(t.startswith("Theorem ") for t in texts), (
        f"{{prf:ref}}`{THEOREM}` rendered as {texts}, expected links 'Theorem N'")
    book = lab_refs.targets(SITE)[0][THEOREM]
    assert set(texts) == {book}, f"{{prf:ref}} to {THEOREM} shows {texts}; the book prints {book!r}"


def test_references_to_other_chapters_show_the_books_numbers(last_chapter):
    cross = last_chapter.locator(
        f"{RENDERED} [title='Cross Reference Not Found']").all_text_contents()
    assert not cross, f"{LAST_CHAPTER}: references shown as not found: {cross}"
    text = _rendered_text(last_chapter).replace("\xa0", " ")
    labels, _ = lab_refs.targets(SITE)
    source = (BOOK / LAST_CHAPTER).read_text(encoding="utf-8")
    other = sorted({m.group(3) for m in lab_refs.ROLE.finditer(source)
                    if m.group(3) and not m.group(3).startswith("ch8-")})
    assert other, f"{LAST_CHAPTER} refers to no block of another chapter"
    absent = [f"{label}: {labels[label]}" for label in other if labels[label] not in text]
    assert not absent, f"{LAST_CHAPTER}: these references do not show the book's number: {absent}"


def test_a_chapter_link_opens_that_notebook(last_chapter):
    link = last_chapter.locator(f"{RENDERED} a[href*='ch04_rope.ipynb']").first
    assert link.text_content().strip() == "Chapter 4", f"link text {link.text_content()!r}"
    link.scroll_into_view_if_needed()
    link.click()
    # the notebook opens in a JupyterLab tab of its own, which becomes the current one
    opened = """() => [...document.querySelectorAll('.lm-TabBar-tab.lm-mod-current')]
                 .map(t => t.textContent.trim())"""
    try:
        last_chapter.wait_for_function(f"() => ({opened})().some(t => t.includes('ch04_rope'))",
                                       timeout=20_000)
    except PlaywrightTimeout:
        pass  # the assertion below says what is open instead
    current = last_chapter.evaluate(opened)
    assert any("ch04_rope.ipynb" in t for t in current), (
        f"clicking 'Chapter 4' did not open ch04_rope.ipynb; current tabs: {current}")


def _book_number(title: str) -> str:
    """ "Theorem 1.2 (USA is gradient ascent)" -> "Theorem 1.2" (the kind and its number)."""
    m = re.match(r"^\s*([A-Z][a-z]+)\s+([0-9][0-9.]*)", title.replace("\xa0", " "))
    return f"{m.group(1)} {m.group(2)}" if m else title.strip()


def test_blocks_carry_the_books_numbers(chapter):
    labels, _ = lab_refs.targets(SITE)
    blocks = chapter.evaluate(
        """sel => [...document.querySelectorAll(sel + ' :is(.myst-proof, .myst-exercise)[id]')]
            .map(b => [b.id, (b.querySelector('.myst-proof-title, .myst-exercise-title') || {})
                             .textContent || ''])""", RENDERED)
    numbered = [(label, title) for label, title in blocks if label in labels]
    assert len(numbered) >= 5, f"{CHAPTER}: only {len(numbered)} labelled blocks found: {blocks}"
    wrong = [f"{label}: Lab shows {_book_number(title)!r}, the book {labels[label]!r}"
             for label, title in numbered if _book_number(title) != labels[label]]
    assert not wrong, f"{CHAPTER}: blocks numbered unlike the book: {wrong}"


def test_setup_cell_is_folded_and_the_title_comes_first(chapter):
    first = chapter.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").first
    assert "jp-CodeCell" in (first.get_attribute("class") or ""), "the first cell is not the set-up cell"
    chapter.evaluate("() => document.querySelector('.jp-NotebookPanel .jp-WindowedPanel-outer, "
                     ".jp-NotebookPanel .jp-Notebook').scrollTo(0, 0)")
    assert first.locator(".jp-InputPlaceholder").is_visible(), "the set-up cell is not folded"
    assert not first.locator(".jp-InputArea-editor").is_visible(), "the set-up code is on screen"
    title = chapter.locator(f"{RENDERED} h1").first
    box = title.bounding_box()
    assert box and box["y"] < 400, f"the chapter's title stands at {box} (1000 px window)"


def test_no_news_pop_up(chapter, lab):
    url, token = lab
    with urllib.request.urlopen(f"{url}/lab/api/settings/@jupyterlab/apputils-extension:notification"
                                f"?token={token}", timeout=10) as r:
        answer = json.load(r)
    # what JupyterLab uses: the user's settings over the defaults (overrides.json changes these)
    composite = {name: spec.get("default") for name, spec in answer["schema"]["properties"].items()}
    composite.update(answer.get("settings") or {})
    assert composite.get("fetchNews") == "false" and composite.get("checkForUpdates") is False, (
        f"make lab's JupyterLab would ask about news or updates: {composite}")
    body = chapter.evaluate("() => document.body.innerText")
    assert NEWS_QUESTION not in body, "JupyterLab asks about news on start"
