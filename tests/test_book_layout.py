"""The book's reading layout and figures, checked on the sources.

* Code lines: no line of code in the book is longer than ``MAX_CODE`` (88) characters: code
  cells of every notebook (hidden ones too, since the downloaded notebooks show them) and
  fenced code blocks in markdown cells and in ``book/**/*.md``.  Code cells shown on a page
  must also fit its text column: ``COLUMN`` (76) characters is what the column holds at
  1280 pixels in the theme's code font (684 px wide, 14 px DejaVu Sans Mono, 8.43 px a
  character, 16 px padding each side).  So must the code blocks of the markdown, and those
  in a box fit the box: ``BOX_COLUMN`` is what an exercise box and an unfolded solution
  dropdown hold (619 px, 69 characters).  ``tests/browser/test_layout.py`` measures the built
  pages themselves (inputs, outputs, equations).
* Check cells (code that asserts the chapter's claims, with ``assert`` or ``ue.checks.claim``)
  are tagged ``check`` and folded with ``hide-input``; every cell with a claim is one, and every
  cell tagged ``check`` checks one.
* Figures: every code cell that draws a matplotlib figure shows exactly one, with a caption, a
  label and alt text in its metadata (``mystnb.figure`` and ``mystnb.image``), and writes its
  labels as mathematics (``$\\beta = 1$``, not ``beta = 1``); the notebooks draw SVG.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
NOTEBOOKS = sorted(BOOK.rglob("*.ipynb"))
MARKDOWN = sorted(BOOK.rglob("*.md"))

#: longest code line anywhere in the book
MAX_CODE = 88
#: longest line of a code cell shown on a page (the text column at 1280 px)
COLUMN = 76
#: longest line of a code block inside a box of the page, by the box's directive (measured
#: at 1280 px like ``COLUMN``)
BOX_COLUMN = {"{exercise}": 69, "{solution}": 69}

SETUP_TAG = "usaav-edu-setup"
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,}|:{3,})\s*(.*?)\s*$")
#: directives whose body is code, not MyST text
CODE_DIRECTIVES = {"{code}", "{code-block}", "{code-cell}", "{sourcecode}"}

#: calls that draw a figure (matplotlib's and the package's)
FIGURE_CALLS = {"subplots", "figure", "plot_energy", "plot_sphere"}
#: calls that set text on a figure; their string arguments must typeset symbols as math
TEXT_CALLS = {"set_title", "set_xlabel", "set_ylabel", "set_zlabel", "suptitle", "text",
              "annotate", "legend"}
#: symbols written out in words where a label should use mathtext
SYMBOL_WORDS = re.compile(r"\b(alpha|beta|gamma|delta|theta|kappa|lambda|lam|mu|nu|xi|rho|"
                          r"sigma|tau|phi|omega|t_max|x0|E_beta)\b")
#: a figure's name: the page's prefix (ch1, widgets, the primer's first word), -fig- and words
FIGURE_NAME = re.compile(r"^[a-z][a-z0-9]*-fig-[a-z0-9]+(-[a-z0-9]+)*$")
FILE_NAME = re.compile(r"\.(png|svg|jpe?g|pdf)\b|^[\w-]+$")


def code_cells(nb):
    return [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code"]


def shown(cell) -> bool:
    tags = cell.metadata.get("tags", [])
    return not {"remove-cell", "remove-input"} & set(tags)


def code_blocks(text: str):
    """The fenced code blocks of MyST text: (line number of the block's first line, the
    directives of the fences around it, outermost first, its own directive or language, its
    lines).

    Fences nest (a ``{solution}`` holding a code block); colon fences and ``{directive}``
    fences hold text, other fences code.  A fence closes with the same character, at least as
    long, and nothing after it.
    """
    stack: list[tuple[str, int, bool, str]] = []
    block: list[str] = []
    for k, line in enumerate(text.split("\n"), start=1):
        m = FENCE.match(line)
        in_code = bool(stack) and stack[-1][2]
        if m:
            mark, info = m.group(2), m.group(3)
            top = stack[-1] if stack else None
            if top and mark[0] == top[0] and len(mark) >= top[1] and not info:
                stack.pop()
                if in_code:
                    yield k - len(block), tuple(s[3] for s in stack), top[3], block
                continue
            if not in_code:
                directive = info.split()[0] if info.startswith("{") else ""
                is_code = mark[0] != ":" and (not directive or directive in CODE_DIRECTIVES)
                stack.append((mark[0], len(mark), is_code, directive or info))
                block = []
                continue
        if in_code:
            block.append(line)
    if stack and stack[-1][2]:  # a code block left open runs to the end of the text
        yield len(text.split("\n")) + 1 - len(block), tuple(s[3] for s in stack[:-1]), \
            stack[-1][3], block


def fenced_code(text: str):
    """(line number, line) of every line inside a fenced code block of MyST text."""
    for start, _, _, lines in code_blocks(text):
        yield from enumerate(lines, start=start)


def shown_code(text: str):
    """(line number, line, longest line the box holds) of every line of a code block shown
    on the page: code cells of a MyST page tagged ``remove-input`` or ``remove-cell`` are
    not shown."""
    for start, boxes, kind, lines in code_blocks(text):
        options = "\n".join(s for s in lines if s.startswith(":"))
        if kind == "{code-cell}" and re.search(r"\bremove-(input|cell)\b", options):
            continue
        limit = min([COLUMN] + [BOX_COLUMN[b] for b in boxes if b in BOX_COLUMN])
        for k, line in enumerate(lines, start=start):
            yield k, line, limit


def long_lines(lines, limit):
    return [(where, len(line), line) for where, line in lines if len(line) > limit]


# ----------------------------------------------------------------------------- code lines
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_code_line_of_a_notebook_is_over_88_characters(path):
    nb = nbformat.read(path, as_version=4)
    lines = []
    for i, cell in enumerate(nb.cells):
        if SETUP_TAG in cell.metadata.get("tags", []):
            continue  # written by tools/setup_cell.py: see the test of its template
        if cell.cell_type == "code":
            lines += [(f"cell {i} line {k}", s)
                      for k, s in enumerate(cell.source.split("\n"), start=1)]
        elif cell.cell_type == "markdown":
            lines += [(f"cell {i} (markdown) line {k}", s) for k, s in fenced_code(cell.source)]
    bad = long_lines(lines, MAX_CODE)
    assert not bad, (f"{path.name}: {len(bad)} code lines over {MAX_CODE} characters, e.g. "
                     + "; ".join(f"{w} ({n}): {s.strip()[:60]}" for w, n, s in bad[:5]))


def test_the_set_up_cell_fits():
    """The set-up cell heading every notebook comes from ``tools/setup_cell.py``."""
    from tools import setup_cell
    url = "https://a-long-owner-name.github.io/usaav-edu"
    for spec in ("", "usaav-edu[all] @ git+https://github.com/owner/usaav-edu@" + "0" * 40,
                 "usaav-edu[all] @ git+https://github.com/owner/usaav-edu@v0.10.2rc1",
                 f"usaav-edu[all] @ {url}/usaav_edu-0.1.0-py3-none-any.whl#sha256=" + "f" * 64):
        cell = setup_cell.cell_source(spec)
        bad = [(k, len(s)) for k, s in enumerate(cell.split("\n"), start=1) if len(s) > MAX_CODE]
        assert not bad, (f"tools/setup_cell.py: lines (number, length) {bad} of the set-up cell "
                         f"for {spec!r} are over {MAX_CODE} characters")


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: str(p.relative_to(BOOK)))
def test_no_code_line_of_a_page_is_over_88_characters(path):
    lines = [(f"line {k}", s) for k, s in fenced_code(path.read_text(encoding="utf-8"))]
    bad = long_lines(lines, MAX_CODE)
    assert not bad, (f"{path.relative_to(ROOT)}: {len(bad)} code lines over {MAX_CODE} "
                     "characters, e.g. " + "; ".join(f"{w} ({n}): {s.strip()[:60]}"
                                                     for w, n, s in bad[:5]))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_code_cells_shown_fit_the_text_column(path):
    nb = nbformat.read(path, as_version=4)
    bad = long_lines([(f"cell {i} line {k}", s) for i, c in code_cells(nb) if shown(c)
                      for k, s in enumerate(c.source.split("\n"), start=1)], COLUMN)
    assert not bad, (f"{path.name}: {len(bad)} lines of shown code cells over {COLUMN} "
                     "characters (they scroll at 1280 px), e.g. "
                     + "; ".join(f"{w} ({n})" for w, n, _ in bad[:8]))


@pytest.mark.parametrize("path", NOTEBOOKS + MARKDOWN, ids=lambda p: str(p.relative_to(BOOK)))
def test_code_blocks_of_the_text_fit_their_box(path):
    """Code blocks of markdown cells and pages fit the column, or the exercise box or the
    solution dropdown they sit in."""
    if path.suffix == ".ipynb":
        nb = nbformat.read(path, as_version=4)
        lines = [(f"cell {i} (markdown) line {k}", s, limit)
                 for i, cell in enumerate(nb.cells) if cell.cell_type == "markdown"
                 for k, s, limit in shown_code(cell.source)]
    else:
        lines = [(f"line {k}", s, limit)
                 for k, s, limit in shown_code(path.read_text(encoding="utf-8"))]
    bad = [(where, len(s), limit) for where, s, limit in lines if len(s) > limit]
    assert not bad, (f"{path.relative_to(ROOT)}: {len(bad)} lines of code blocks longer than "
                     "their box holds (they scroll at 1280 px), e.g. "
                     + "; ".join(f"{w} ({n} > {limit})" for w, n, limit in bad[:8]))


def test_shown_code_knows_the_boxes():
    text = "\n".join([
        "```python",
        "a = 1",
        "```",
        "````{exercise} A title",
        ":label: ex",
        "```python",
        "b = 2",
        "```",
        "````",
        "````{solution} ex",
        ":class: dropdown",
        "```",
        "c = 3",
        "```",
        "````",
        "```{code-cell} ipython3",
        ":tags: [remove-input]",
        "hidden = 4",
        "```",
        "```{code-cell} ipython3",
        "shown = 5",
        "```",
    ])
    assert list(shown_code(text)) == [(2, "a = 1", COLUMN), (7, "b = 2", 69), (13, "c = 3", 69),
                                      (21, "shown = 5", COLUMN)]


def test_fenced_code_finds_code_inside_directives_only():
    text = "\n".join([
        "text that is long " * 10,
        "````{solution} ex",
        "prose inside a solution " * 5,
        "```python",
        "x = 1",
        "```",
        "````",
        ":::{note}",
        "```",
        "y = 2",
        "```",
        ":::",
        "```{prf:theorem}",
        "z = 3 is mathematics, not code",
        "```",
    ])
    assert [s for _, s in fenced_code(text)] == ["x = 1", "y = 2"]


# ----------------------------------------------------------------------------- check cells
def is_claim(node) -> bool:
    """A call of ``claim(...)`` (``ue.checks.claim``): a check of the book, like ``assert``."""
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")) == "claim"


def asserts(cell) -> int:
    """The checks of a cell: its ``assert`` statements and its ``claim(...)`` calls."""
    tree = ast.parse(TransformerManager().transform_cell(cell.source))
    return sum(isinstance(node, ast.Assert) or is_claim(node) for node in ast.walk(tree))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_check_cells_are_tagged_and_folded(path):
    nb = nbformat.read(path, as_version=4)
    untagged, folded_open, empty = [], [], []
    for i, cell in code_cells(nb):
        tags = cell.metadata.get("tags", [])
        if asserts(cell) and "check" not in tags:
            untagged.append(i)
        if "check" in tags and "hide-input" not in tags:
            folded_open.append(i)
        if "check" in tags and not asserts(cell):
            empty.append(i)
    assert not untagged, f"{path.name}: cells {untagged} assert claims but are not tagged 'check'"
    assert not folded_open, f"{path.name}: check cells {folded_open} are not tagged 'hide-input'"
    assert not empty, f"{path.name}: cells {empty} are tagged 'check' but assert nothing"


def test_the_stylesheet_styles_check_cells():
    css = (ROOT / "_static" / "checks.css").read_text(encoding="utf-8")
    assert re.search(r"div\.cell\.tag_check\s*\{[^}]*border-left", css), \
        "_static/checks.css draws no rule beside cells tagged 'check'"
    assert re.search(r"div\.cell\.tag_check::before\s*\{[^}]*content:\s*\"Check\"", css), \
        "_static/checks.css labels no check cell 'Check'"


# ----------------------------------------------------------------------------- figures
def called(tree) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            names.append(f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", ""))
    return names


def figure_cells(nb):
    """Code cells that draw a matplotlib figure, with their parsed source."""
    found = []
    for i, cell in code_cells(nb):
        tree = ast.parse(TransformerManager().transform_cell(cell.source))
        names = called(tree)
        if FIGURE_CALLS & set(names) or "show" in names:
            found.append((i, cell, tree, names))
    return found


def texts(node):
    """The literal texts an expression can give: strings, f-strings (fields become ``{}``),
    their sums, both branches of a conditional, the items of a list or tuple."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return ["".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return [a + b for a in texts(node.left) or [""] for b in texts(node.right) or [""]]
    if isinstance(node, ast.IfExp):
        return texts(node.body) + texts(node.orelse)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [t for item in node.elts for t in texts(item)]
    return []


def label_strings(tree):
    """(call, text) of every text given to a text-setting call or passed as ``label=`` or
    ``title=``."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        args = list(node.args) if name in TEXT_CALLS else []
        args += [k.value for k in node.keywords if k.arg in ("label", "title")]
        for arg in args:
            for text in texts(arg):
                yield name, text


def plain_symbols(s: str) -> list[str]:
    """Symbols written out in words outside the $...$ of a label."""
    outside = re.sub(r"\$[^$]*\$", " ", s)
    return SYMBOL_WORDS.findall(outside)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_figure_has_a_caption_a_label_and_alt_text(path):
    nb = nbformat.read(path, as_version=4)
    problems = []
    for i, cell, _, names in figure_cells(nb):
        opts = cell.metadata.get("mystnb", {})
        figure, image = opts.get("figure", {}), opts.get("image", {})
        caption, name = figure.get("caption", ""), figure.get("name", "")
        alt = image.get("alt", "")
        prefix = re.sub(r"^ch0?", "ch", path.stem.split("_")[0]) + "-fig-"
        if len(caption.split()) < 8:
            problems.append(f"cell {i}: caption {caption!r} "
                            "(mystnb.figure.caption, 8 words or more)")
        if not FIGURE_NAME.match(name) or not name.startswith(prefix):
            problems.append(f"cell {i}: figure name {name!r} "
                            f"(mystnb.figure.name, e.g. '{prefix}energy')")
        if len(alt.split()) < 8 or FILE_NAME.search(alt.strip()):
            problems.append(f"cell {i}: alt text {alt!r} (mystnb.image.alt: describe what the "
                            "figure shows, 8 words or more)")
        if names.count("show") != 1:
            problems.append(f"cell {i}: calls plt.show() {names.count('show')} times; a captioned "
                            "cell shows exactly one figure")
    assert not problems, f"{path.name}: " + "; ".join(problems)


def test_figure_names_are_unique_across_the_book():
    names = [c.metadata["mystnb"]["figure"]["name"] for p in NOTEBOOKS
             for _, c, _, _ in figure_cells(nbformat.read(p, as_version=4))
             if "name" in c.metadata.get("mystnb", {}).get("figure", {})]
    assert names, "no figure has a name"
    assert len(names) == len(set(names)), f"figure names used twice: {sorted(names)}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_figure_labels_are_mathematics(path):
    nb = nbformat.read(path, as_version=4)
    bad = [(i, call, s) for i, _, tree, _ in figure_cells(nb)
           for call, s in label_strings(tree) if plain_symbols(s)]
    assert not bad, (f"{path.name}: labels write symbols out in words (use mathtext, "
                     "r'$\\beta = 1$'): "
                     + "; ".join(f"cell {i} {call}: {s!r}" for i, call, s in bad))


#: the notebooks that draw at least one matplotlib figure
FIGURE_NOTEBOOKS = [p for p in NOTEBOOKS if figure_cells(nbformat.read(p, as_version=4))]


def test_the_book_draws_figures():
    """The figure tests below check something: some notebook draws a figure."""
    assert FIGURE_NOTEBOOKS, ("no notebook of the book draws a matplotlib figure (calls "
                              f"{sorted(FIGURE_CALLS)} or show): the figure checks are empty")


@pytest.mark.parametrize("path", FIGURE_NOTEBOOKS, ids=lambda p: p.stem)
def test_figures_are_vector_graphics(path):
    nb = nbformat.read(path, as_version=4)
    first = figure_cells(nb)[0][0]
    svg = [i for i, c in code_cells(nb)
           if re.search(r"set_matplotlib_formats\(\s*[\"']svg[\"']\s*\)", c.source)]
    assert svg and svg[0] < first, (f"{path.name}: no cell before the first figure (cell {first}) "
                                    "calls set_matplotlib_formats('svg')")


def test_the_label_check_catches_words_and_accepts_math():
    tree = ast.parse('ax.set_title(f"beta = {b}"); ax.plot(t, e, label=rf"$\\beta = {b}$")\n'
                     'ax.set_xlabel("t"); fig.suptitle("theta_i against " + "omega")')
    flagged = [s for _, s in label_strings(tree) if plain_symbols(s)]
    assert flagged == ["beta = {}", "theta_i against omega"]


def test_the_package_plots_label_with_mathematics():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    import usaav_edu as ue
    from usaav_edu.widgets import plot_energy, plot_sphere

    m = ue.models.rope(beta=1.0, omegas=(1.0,), d=3)
    traj = ue.simulate(m, ue.sphere.uniform(8, 3, seed=0), np.arange(8.0), t_max=1.0,
                       n_frames=5)
    ax = plot_sphere(traj)
    ax2 = plot_energy(traj, bound=1.0)
    texts = [ax.get_title(), ax.get_xlabel(), ax.get_ylabel(), ax.get_zlabel(),
             ax2.get_xlabel(), ax2.get_ylabel()]
    texts += [t.get_text() for t in ax2.get_legend().get_texts()]
    plt.close("all")
    bare = [s for s in texts if plain_symbols(s) or re.fullmatch(r"[a-z]\d?", s)]
    assert not bare, f"plot_sphere / plot_energy label without mathtext: {bare}"
    assert ax2.get_xlabel() == "$t$" and "$E(t)$" in ax2.get_ylabel(), (ax2.get_xlabel(),
                                                                         ax2.get_ylabel())
