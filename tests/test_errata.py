"""Statements of the book that were wrong, and stay corrected.

Each test reads the sources (chapter notebooks, the introduction, the reference and seminar pages,
the README) and requires that the wrong statement is gone and that the corrected one carries its
key content. Where the correction is a number, the chapter's check cells compute it when the
notebooks run; the cheap ones are computed here too.
"""
import json
import re
from pathlib import Path

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu import reductions
from usaav_edu.meanfield import solver as mf

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"


def cells(name, kind):
    """The sources of the cells of one kind ("markdown" or "code") of a notebook of the book."""
    nb = json.loads((BOOK / name).read_text(encoding="utf-8"))
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == kind]


def markdown(name):
    return "\n\n".join(cells(name, "markdown"))


def checks(name):
    """The code of the notebook's CHECK cells, joined."""
    return "\n\n".join(s for s in cells(name, "code") if s.lstrip().startswith("# CHECK"))


def page(rel):
    return (ROOT / rel).read_text(encoding="utf-8")


def block(text, label):
    """The body of the fenced directive whose ``:label:`` is ``label`` (up to its closing fence)."""
    at = text.index(f":label: {label}\n")
    return text[at:text.index("\n```", at)]


def section(text, heading):
    """The text of a Markdown section, from its heading to the next heading of the same level."""
    level = heading.split(" ", 1)[0]
    at = text.index(heading + "\n")
    nxt = text.find("\n" + level + " ", at + len(heading))
    return text[at:] if nxt < 0 else text[at:nxt]


def flat(text):
    """Text with its line breaks and runs of blanks made single spaces."""
    return " ".join(text.split())


CH9 = "ch09_meanfield.ipynb"
GUIDE = "book/seminar/instructor_guide.md"
RESULTS = "book/seminar/paper_results.md"


# ------------------------------------------------------------- C1: quantiles up to a shift

def test_ks_of_quantile_particles_is_not_claimed_to_stay_half_n():
    text = markdown(CH9)
    solution = block(text, "ch9-ex-ks")
    sol = flat(text[text.index("````{solution} ch9-ex-ks"):])
    sol = sol[:sol.index("````", 4)]
    assert "still about $\\frac1{2n}$ at $t_{\\rm end}$" not in flat(text)
    assert "common shift" in sol and "kuiper" in sol.lower(), sol
    assert "1.84" in sol and "1.79" in sol, sol
    assert solution  # the exercise itself is still there


def test_remark_quantiles_stay_quantiles_up_to_a_common_shift():
    remark = flat(block(markdown(CH9), "ch9-rem-order"))
    assert "up to a common shift of the levels" in remark
    assert "Kuiper" in remark and "\\frac1n" in remark
    assert "between $\\frac1{2n}$ and $\\frac1n$" in remark
    guide = flat(page(GUIDE))
    assert "so a quantile sample stays one" not in guide
    assert "stay at the quantiles up to a common shift of the levels" in guide


def test_chapter_nine_checks_kuiper_and_ks_of_quantile_particles():
    code = checks(CH9)
    assert '"kuiper"' in code and "ks_end" in code, "no check computes Kuiper and KS at t_end"
    assert "1.84, 1.39, 1.12, 1.79" in code


def quantile_particles_at(n, t_end=1.0):
    """Quantile particles of the chapter's f0 moved by USA (beta = 1) to t_end, and f(t_end)."""
    th = mf.grid(256)
    f0 = (1 + 0.5 * np.cos(th) + 0.25 * np.sin(2 * th)) / (2 * np.pi)
    usa = ue.models.usa(1.0)
    f_end = mf.solve(usa, f0, t_end, n_frames=2).f[-1]
    theta0 = mf.sample(f0, n, how="quantile")
    x0 = np.column_stack([np.cos(theta0), np.sin(theta0)])
    final = ue.simulate(usa, x0, None, t_max=t_end, n_frames=2, summation="direct").final
    return np.arctan2(final[:, 1], final[:, 0]), f_end


@pytest.mark.parametrize("n", [100, 300])
def test_quantile_particles_keep_kuiper_one_over_n_while_ks_moves(n):
    angles, f_end = quantile_particles_at(n)
    kuiper = mf.empirical_distance(angles, f_end, "kuiper") * n
    ks = mf.empirical_distance(angles, f_end, "ks") * 2 * n
    w1 = mf.empirical_distance(angles, f_end) * 2 * n / np.pi
    assert abs(kuiper - 1) < 1e-3, f"n * Kuiper = {kuiper:.5f}, not 1"
    assert abs(w1 - 1) < 1e-2, f"W1 / (pi / (2n)) = {w1:.4f}, not 1"
    assert 1 - 1e-3 < ks < 2 + 1e-3, f"2n * KS = {ks:.4f} outside [1, 2]"
    if n == 100:
        assert abs(ks - 1.84) < 0.01, f"2n * KS = {ks:.4f} at n = 100, the text says 1.84"


# ------------------------------------------------------- C2: the marginal does concentrate

def test_marginal_concentrates_onto_the_points_u_minus_omega_xi():
    text = flat(markdown(CH9))
    assert "The marginal never concentrates" not in text
    assert "the grid, not the dynamics" not in text
    at = text.index("The marginal stays spread")
    para = text[at:at + 900]
    assert "u - \\omega\\xi_l" in para and "half a circle" in para, para
    assert "1.5" in para and "2.1" in para, para
    assert "growth[2.8]" in checks(CH9) and "quoted = {2.6: 1.5, 2.8: 2.1}" in checks(CH9)


# --------------------------------------------------------- C3: the ledger and the table

def test_ledger_covers_chapter_nine():
    ledger = flat(section(page("book/intro.md"), "## What is proved, what is cited, what is observed"))
    proved = ledger[ledger.index("**Proved on the page**"):ledger.index("**Cited and used")]
    observed = ledger[ledger.index("**Observed**"):]
    assert "(chapter 9)" in proved, proved
    assert "chapter 9" in observed, observed


def test_ledger_covers_chapter_ten():
    ledger = flat(section(page("book/intro.md"), "## What is proved, what is cited, what is observed"))
    proved = ledger[ledger.index("**Proved on the page**"):ledger.index("**Cited and used")]
    cited = ledger[ledger.index("**Cited and used"):ledger.index("**Observed**")]
    observed = ledger[ledger.index("**Observed**"):]
    assert "(chapter 10)" in proved, proved
    assert "chapter 10" in cited and "karagodin2024clustering" in cited, cited
    assert "chapter 10" in observed, observed


def test_chapter_ten_proves_what_its_ledger_calls_proved():
    """Every proposition of chapter 10 has a proof and is listed as proved in the chapter's own
    ledger; the cited collapse under a causal mask is a remark, not a theorem."""
    text = markdown("ch10_beyond.ipynb")
    ledger = flat(section(text, "## What is proved, cited and observed in this chapter"))
    proved = ledger[ledger.index("**Proved**"):ledger.index("**Cited**")]
    for label in ("ch10-prop-rates", "ch10-prop-first", "ch10-prop-poles", "ch10-prop-preln"):
        at = text.index(f":label: {label}")
        assert "{prf:proof}" in text[at:at + 4000].split("{prf:proposition}")[0], label
        assert label in proved, (label, proved)
    assert "{prf:theorem}" not in text
    assert "{prf:remark} Collapse onto the first token (cited)\n:label: ch10-rem-causal" in text


def test_table_of_results_has_the_mean_field_formulation():
    rows = [r for r in page(RESULTS).splitlines() if "ch09_meanfield" in r]
    assert len(rows) == 1, rows
    assert "mean-field" in rows[0] and "ch9-prop-continuity" in rows[0], rows[0]


# --------------------------------------------------------------- C4: Proposition 9.3

def test_wrapped_cauchy_proposition_needs_positive_r0():
    prop = flat(block(markdown(CH9), "ch9-prop-cauchy"))
    assert "0 \\le r_0" not in prop
    assert "0 < r_0 < 1" in prop
    assert "r_0 = 0" in prop and "stationary" in prop, prop


def test_uniform_density_is_stationary_for_the_linear_profile():
    # Z = 0, so w = Im(Z e^{-i theta}) = 0: r0 = 0 stays uniform and never tends to 1
    f = np.full(64, 1 / (2 * np.pi))
    v = mf.velocity(ue.models.usa(profile="linear"), f)
    assert np.max(np.abs(v)) < 1e-14, f"velocity of the uniform density {np.max(np.abs(v)):.1e}"


# ------------------------------------------------------ C5: collapse from almost every start

def test_bibliography_has_markdahl_and_criscitiello():
    bib = page("book/references.bib")
    m = bib[bib.index("@article{markdahl2018almost,"):]
    m = m[:m.index("\n}")]
    assert "Almost global consensus on the $n$-sphere" in m
    assert "Markdahl" in m and "Thunberg" in m and "alves" in m
    assert "IEEE Transactions on Automatic Control" in m and "1664--1675" in m and "{63}" in m
    c = bib[bib.index("@misc{criscitiello2024synchronization,"):]
    c = c[:c.index("\n}")]
    assert "2405.18273" in c and "Boumal" in c and "Rebjock" in c and "McRae" in c


@pytest.mark.parametrize("where, prefix", [
    ("ch01_particles.ipynb", "ch01-"), ("ch02_metastability.ipynb", "ch02-"),
    ("ch04_rope.ipynb", "ch04-"), ("intro.md", "intro-")])
def test_collapse_from_almost_every_start_is_cited_to_markdahl(where, prefix):
    text = markdown(where) if where.endswith(".ipynb") else page(f"book/{where}")
    text = flat(text)
    at = text.index("almost every start")
    near = text[at - 200:at + 700]     # the citations as links take room
    assert f"{prefix}markdahl2018almost" in near, near
    assert f"{prefix}criscitiello2024synchronization" in near, near


# ---------------------------------------------------------- C6: distance bias and collapse

def test_distance_bias_collapse_is_proved_for_maximizers_and_observed_for_the_dynamics():
    ledger = flat(section(page("book/intro.md"), "## What is proved, what is cited, what is observed"))
    assert "the collapse forced by a non-negative distance bias" not in ledger
    proved = ledger[ledger.index("**Proved on the page**"):ledger.index("**Cited and used")]
    observed = ledger[ledger.index("**Observed**"):]
    assert "maximizers under a positive distance bias are collapsed" in proved
    assert "non-negative distance bias collapses" in observed
    row = next(r for r in page(RESULTS).splitlines() if "ch7-thm-nonneg" in r)
    assert "A non-negative distance bias leaves only collapsed maximizers" not in row
    assert "$b > 0$" in row and "observed" in row and "ch7-ex-nonneg-peak" in row, row


# --------------------------------------------------------------- C7: Corollary 7.1 (2)

def test_dichotomy_states_when_the_circles_are_wound_k_times():
    cor = flat(block(markdown("ch07_spectral.ipynb"), "ch7-cor-dichotomy"))
    assert "$n\\nmid 2k^*$ and $n\\nmid 4k^*$" in cor, cor
    assert "ch7-ex-four" in cor and "k^* = n/2" in cor, cor


# ------------------------------------------------------------------------ C8: chapter 5

def test_even_dimension_maximizers_collapse_only_for_one_rotation():
    text = flat(markdown("ch05_generalized_rope.ipynb"))
    assert "no pole exception: the maximizers never collapse." not in text
    at = text.index("no pole exception")
    assert "same rotation" in text[at:at + 700], text[at:at + 700]


def test_unrotated_values_are_not_called_a_non_gradient_flow():
    text = flat(markdown("ch05_generalized_rope.ipynb"))
    assert "it is *not* a gradient flow" not in text
    assert "is not a gradient flow" not in text
    assert "not monotone" in text
    guide = flat(page(GUIDE))
    assert "so there is no energy that increases" not in guide
    assert "There is no energy to climb" not in guide
    assert guide.count("not monotone") >= 2


# ---------------------------------------------------------------------- C9: the glossary

def glossary_entry(term):
    text = page("book/reference/glossary.md")
    at = text.index(f"\n{term}\n") + 1
    nxt = re.search(r"\n\n\S", text[at:])
    return flat(text[at:at + nxt.start()] if nxt else text[at:])


def test_glossary_conditional_diracization_follows_theorem_3_1():
    entry = glossary_entry("conditional Diracization")
    assert "(each {term}`slice` is a {term}`Dirac mass`)" not in entry
    assert "carried by the maximum points of its potential" in entry, entry


def test_glossary_gauge_coordinates_collapse_for_almost_every_start():
    entry = glossary_entry("gauge coordinate")
    assert "for almost every start in $d\\ge3$" in entry, entry


# --------------------------------------------------------------------- C10: the smaller ones

def test_half_the_squared_distance():
    text = flat(markdown("ch02_metastability.ipynb"))
    assert "squared half-distance" not in text
    assert "half the squared distance $1 - \\cos\\theta_0 = 2\\sin^2(\\theta_0/2) = \\frac12|x - y|^2$" in text


def test_formation_times_are_stated_for_the_chapters_seeds():
    for text in (flat(markdown("ch02_metastability.ipynb")), flat(page(GUIDE))):
        hits = [m.start() for m in re.finditer(r"4\.5\$? (to|and) \$?9\.5", text)]
        assert hits
        for at in hits:
            assert "seeds" in text[at - 120:at + 160], text[at - 120:at + 160]


def test_usa_merge_time_grows_exponentially_only_for_large_beta():
    ex = flat(block(markdown("ch02_metastability.ipynb"), "ch2-ex-usa-merge"))
    assert "increases exponentially when $\\theta_0 > \\pi/2$. Then" not in ex
    assert "grows exponentially for large $\\beta$" in ex, ex
    # from theta0 = 2 > pi/2 the time first falls, then grows like e^{-beta cos theta0}
    t = [reductions.two_cluster_merge_time(2.0, 0.01, 0.5, b, "usa") for b in (0.0, 3.0, 8.0)]
    assert t[1] < t[0] and t[2] > t[1], t


def test_dormand_prince_is_not_said_never_to_become_unstable():
    assert "never becomes unstable" not in flat(markdown("ch02_metastability.ipynb"))


def test_bootstrap_interval_is_quoted_one_way():
    text = flat(markdown("ch02_metastability.ipynb"))
    assert "1.94" not in text
    assert "between about 1.76 and 1.93" in text and "1.76 to 1.93" in text
    assert "[1.76, 1.93]" in checks("ch02_metastability.ipynb")


def test_slice_affinity_is_affine_to_first_order():
    lemma = flat(block(markdown("ch03_conditional_dirac.ipynb"), "ch3-lem-affine"))
    assert "and $E_h$ is affine in each slice." not in lemma
    assert "to first order" in lemma, lemma
    row = next(r for r in page(RESULTS).splitlines() if "ch3-lem-affine" in r)
    assert "to first order" in row, row


def test_speed_towards_a_token_peaks():
    text = flat(markdown("primers/sphere_gradients.ipynb"))
    assert "the faster the closer they already are" not in text
    assert "\\cos\\theta = \\beta\\sin^2\\theta" in text and "0.90" in text
    theta = np.linspace(0.0, np.pi, 100_001)
    top = theta[np.argmax(np.exp(np.cos(theta)) * np.sin(theta))]
    assert abs(np.cos(top) - np.sin(top) ** 2) < 1e-4 and abs(top - 0.90) < 0.005, top


def test_spectral_solver_is_not_called_exact_to_round_off():
    assert "exact to round-off" not in flat(markdown(CH9))
    assert "exact to round-off" not in flat(page("README.md"))
    assert "below $10^{-9}$" in flat(markdown(CH9))
    assert "cauchy_gap < 1e-9" in checks(CH9)


def test_theorem_two_is_qualified_in_the_ledger():
    ledger = flat(section(page("book/intro.md"), "## What is proved, what is cited, what is observed"))
    at = ledger.index("Theorems 2 and 4")
    assert "Theorem 2 in the case $d = 3$ with one rotation plane" in ledger[at:at + 160]


def test_metastability_row_names_its_source():
    row = next(r for r in page(RESULTS).splitlines() if r.startswith("| Metastability"))
    assert "Geshkovski, Koubbi, Polyanskiy and Rigollet" in row, row


def test_before_you_start_covers_chapter_nine_and_many_tokens():
    start = page("book/start.md")
    svg = start[start.index("<svg"):start.index("</svg>")]
    assert ">Chapter 9<" in svg and ">Many tokens<" in svg
    times = section(start, "## Reading times")
    assert "{doc}`ch09_meanfield`" in times and "{doc}`large_n`" in times
    tracks = section(start, "## Two reading tracks")
    for track in ("### If you come from machine learning", "### If you come from mathematics"):
        part = section(tracks, track)
        assert "{doc}`ch09_meanfield`" in part and "{doc}`large_n`" in part, track
    assert "the nine chapters" in times and "eight chapters" not in times


def test_faq_on_large_n_covers_fast_summation():
    faq = flat(section(page("book/reference/faq.md"), "## How large can n be?"))
    assert 'summation="fast"' in faq and "linear in $n$" in faq
    assert not faq.startswith("## How large can n be? ```{index} single: memory; large n ``` Time grows like $n^2$")


def test_exercise_promise_holds_for_every_chapter():
    intro = flat(page("book/intro.md"))
    assert "at least four exercises" not in intro
    assert "Each chapter ends with three or more exercises" in intro
    for nb in sorted(BOOK.glob("ch[0-9][0-9]_*.ipynb")):
        n = markdown(nb.name).count("{exercise}")
        assert n >= 3, f"{nb.name} has {n} exercises"


WORDS = {"eight": 8, "nine": 9, "ten": 10}


def test_readme_and_guide_count_the_same_sessions():
    guide = page(GUIDE)
    said = WORDS[re.search(r"a seminar of (\w+) sessions", guide).group(1)]
    regular = re.findall(r"^## Session (\d+): ", guide, re.M)
    assert said == len(regular), (said, regular)
    readme = WORDS[re.search(r"plan of (\w+) 90-minute sessions", page("README.md")).group(1)]
    assert readme == said, (readme, said)
