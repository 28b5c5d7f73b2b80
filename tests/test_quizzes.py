"""The seminar's quizzes: the bank, what the chapters show, and the QTI export.

* The bank (``usaav_edu/quizzes/sessionKK.json``): every session 1 to 9 has four to six
  questions, multiple-choice and numeric; every answer has feedback that says why; a
  multiple-choice question has exactly one correct answer; a numeric one has one correct range,
  narrow around its value, and a default answer.  Every numeric answer is the number the package
  computes (energy bounds, merging times, Fourier coefficients, maximizers, mean-field runs).
* No quiz gives a chapter's exercises away: no sentence of a solution, no number of a solution
  that the chapter's text does not state, no exercise named.
* ``show`` (and ``Quiz``) validate the session; the quiz's HTML sets the class ``usaav-quiz`` on
  every question's container, embeds the bank's questions, and names no network address; the
  chapters end with the quiz of their session, before the references, its code hidden.
* ``tools/quiz_qti.py`` writes a QTI zip per session that parses: a manifest and an assessment
  with every question, the bank's correct choice, the bank's numeric range.

The browser checks are ``tests/browser/test_quizzes.py``.
"""
from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
import zipfile
from html import unescape
from pathlib import Path

import numpy as np
import pytest

import usaav_edu as ue
from tools import editions, quiz_qti
from usaav_edu import quizzes
from usaav_edu.sweep import phase

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"

SESSIONS = list(range(1, 11))
#: a numeric answer's range: at most this relative width around its value (absolute at 0)
TOLERANCE = 0.02


def bank(session):
    return quizzes.load(session)


def all_questions():
    return [(s, q) for s in SESSIONS for q in bank(s)["questions"]]


def question_id(v):
    """A test id: the question's id for a question, the value itself otherwise."""
    return v["id"] if isinstance(v, dict) else str(v)


def plain(html: str) -> str:
    """The text of ``html``, its quotes and dashes made plain (text2qti's Markdown curls them)."""
    return editions.normalize(unescape(re.sub(r"<[^>]+>", "", html)))


# ------------------------------------------------------------------------------- the bank
@pytest.mark.parametrize("session", SESSIONS)
def test_every_session_has_four_to_six_questions_of_both_kinds(session):
    quiz = bank(session)
    assert quiz["session"] == quiz["chapter"] == session and quiz["title"].strip()
    qs = quiz["questions"]
    assert 4 <= len(qs) <= 6, f"session {session}: {len(qs)} questions"
    assert {q["type"] for q in qs} == {"multiple_choice", "numeric"}, (
        f"session {session}: the types are {sorted({q['type'] for q in qs})}")
    ids = [q["id"] for q in qs]
    assert len(set(ids)) == len(ids) and all(i.startswith(f"s{session:02d}-") for i in ids), ids
    assert all(len(q["question"].split()) >= 5 for q in qs)


def test_the_bank_has_exactly_the_ten_sessions():
    files = sorted(p.name for p in (ROOT / "usaav_edu" / "quizzes").glob("*.json"))
    assert files == [f"session{k:02d}.json" for k in SESSIONS]
    assert list(quizzes.SESSIONS) == SESSIONS


@pytest.mark.parametrize("session,q", all_questions(), ids=question_id)
def test_every_answer_has_feedback_that_says_why(session, q):
    for a in q["answers"]:
        assert len(plain(a.get("feedback", "")).split()) >= 6, (
            f"{q['id']}: the answer {a.get('answer', a.get('range', a.get('type')))!r} "
            "has no feedback that says why")


@pytest.mark.parametrize("session,q", [(s, q) for s, q in all_questions()
                                       if q["type"] == "multiple_choice"],
                         ids=question_id)
def test_a_multiple_choice_question_has_exactly_one_correct_answer(session, q):
    answers = q["answers"]
    assert len(answers) >= 3
    assert [a["correct"] for a in answers].count(True) == 1, q["id"]
    assert all(isinstance(a["correct"], bool) for a in answers)
    texts = [plain(a["answer"]) for a in answers]
    assert len(set(texts)) == len(texts), f"{q['id']}: two answers read the same"


def test_the_correct_answer_is_not_always_first():
    firsts = [next(i for i, a in enumerate(q["answers"]) if a["correct"])
              for _, q in all_questions() if q["type"] == "multiple_choice"]
    assert len(set(firsts)) >= 3, firsts


def numeric_range(q):
    right = [a for a in q["answers"] if a.get("type") == "range" and a.get("correct") is True]
    default = [a for a in q["answers"] if a.get("type") == "default"]
    assert len(right) == 1 and len(default) == 1 and len(q["answers"]) == 2, q["id"]
    lo, hi = right[0]["range"]
    assert lo < hi, q["id"]
    return lo, hi


# --------------------------------------------------------- the numbers, from the package
def _frames():
    return ue.models.frames_from_targets(ue.sphere.uniform(5, 3, seed=1), np.array([0.0, 0.0, 1.0]))


def _merge_exponent():
    """(1/beta) log T of two equal SA clusters at 2 pi/3, its prefactor 1/(2 beta sin^2)
    taken out, from the package's quadrature at beta = 40 and 60."""
    th = 2 * np.pi / 3
    logs = [math.log(ue.reductions.two_cluster_merge_time(th, 0.1, 0.5, b, "sa")
                     * 2 * b * math.sin(th) ** 2) for b in (40.0, 60.0)]
    return (logs[1] - logs[0]) / 20.0


def _clusters_of_five_prompts():
    prompts = np.arange(40) % 5
    model = ue.models.prefix_gauge(1.0, _frames())
    x = ue.maximizers.gauge_maximizer(model, prompts, ue.sphere.uniform(1, 3, seed=7)[0])
    assert ue.energy(model, x, prompts) == pytest.approx(ue.energy_bound(model, prompts))
    return len(set(ue.diagnostics.clusters(x, 1e-6)))


def _height():
    model = ue.models.rope(1.0, (1.0,), 3)
    x = ue.maximizers.rope_orbit(model, np.array([0.6, 0.0, 0.8]),
                                 np.linspace(0, 2 * np.pi, 16, endpoint=False))
    assert np.ptp(x[:, 2]) < 1e-12
    return float(x[:, 2].mean())


def _fixed_axis_spread():
    model = ue.models.rope(1.0, (1.0, 0.5), 5)
    x = ue.maximizers.rope_orbit(model, np.eye(5)[4], np.arange(64.0))
    return float(np.sqrt(max(0.0, 1.0 - np.sum(x.mean(axis=0) ** 2))))


def _cosine_energy():
    k, bhat = ue.spectral.bias_fourier(np.cos, 32)
    return float(np.max(bhat.real)) / 2


def _cosine_singular_values():
    xi = ue.spectral.circle_positions(50)
    x = ue.maximizers.great_circle(xi, 1, np.eye(3)[0], np.eye(3)[1])
    s = np.linalg.svd(x, compute_uv=False)
    assert s[2] < 1e-9 and s[0] == pytest.approx(s[1])
    return float(s[0])


def _bound_of_the_four_systems(beta):
    xi = np.arange(16, dtype=float)
    bounds = {ue.energy_bound(ue.models.usa(beta), None, 16),
              ue.energy_bound(ue.models.rope(beta, (1.0,), 3), 2 * np.pi * xi / 16),
              ue.energy_bound(ue.models.rope(beta, (1.0, math.sqrt(2)), 4), xi),
              ue.energy_bound(ue.models.prefix_gauge(beta, _frames()[:4]), np.arange(16) % 4)}
    assert max(bounds) - min(bounds) < 1e-12, bounds
    return bounds.pop()


def _quantile_w1():
    theta = ue.meanfield.grid(256)
    f = np.exp(0.8 * np.cos(theta))
    f /= f.mean() * 2 * np.pi
    sample = ue.meanfield.sample(f, 100, how="quantile")
    return float(ue.meanfield.empirical_distance(sample, f, metric="w1"))


def _cauchy_energy():
    """The energy at t = ln 3 of the mean-field run from the wrapped Cauchy density r0 = 0.5."""
    theta = ue.meanfield.grid(128)
    r0 = 0.5
    f0 = (1 - r0 ** 2) / (2 * np.pi * (1 - 2 * r0 * np.cos(theta) + r0 ** 2))
    model = ue.models.usa(1.0, profile="linear")
    run = ue.meanfield.solve(model, f0, math.log(3.0), n_frames=3)
    return float(ue.meanfield.energy(model, run.f[-1]))


def _most_unstable_mode(beta):
    """The k maximizing the SA growth rate k^2 I_k(beta) / (beta I_0(beta)) (the package's I_k)."""
    from usaav_edu.dynamics.fastsum.expansions import scaled_bessel_i

    scaled = scaled_bessel_i(40, beta)  # e^-beta I_k(beta), k = 0 .. 39
    k = np.arange(1, 40)
    return int(k[np.argmax(k ** 2 * scaled[1:] / scaled[0])])


#: question id -> the package's value of its answer
PACKAGE_VALUES = {
    "s01-energy-bound": lambda: ue.energy_bound(ue.models.usa(1.0), None, 16),
    "s01-sa-slower": lambda: (ue.reductions.equiangular_rate(1 - 1e-9, 8, 2.0, "usa")
                              / ue.reductions.equiangular_rate(1 - 1e-9, 8, 2.0, "sa")),
    "s02-merge-exponent": _merge_exponent,
    "s03-gauge-bound": lambda: ue.energy_bound(ue.models.prefix_gauge(2.0, _frames()),
                                               np.arange(20) % 5),
    "s03-prompts-clusters": _clusters_of_five_prompts,
    "s04-height": _height,
    "s05-fixed-axis": _fixed_axis_spread,
    "s06-bound": lambda: ue.energy_bound(ue.models.prefix_gauge(0.5, _frames()), np.arange(20) % 5),
    "s07-cosine-energy": _cosine_energy,
    "s07-singular-values": _cosine_singular_values,
    "s08-bound": lambda: _bound_of_the_four_systems(1.5),
    "s09-quantile-w1": _quantile_w1,
    "s09-cauchy-energy": _cauchy_energy,
    "s10-kstar": lambda: _most_unstable_mode(16.0),
    "s10-critical-noise": lambda: phase.critical_noise(1.0),
}
NUMERIC = [(s, q) for s, q in all_questions() if q["type"] == "numeric"]


def test_every_numeric_question_has_a_package_value():
    assert sorted(q["id"] for _, q in NUMERIC) == sorted(PACKAGE_VALUES)


@pytest.mark.parametrize("session,q", NUMERIC, ids=question_id)
def test_a_numeric_answer_is_what_the_package_computes(session, q):
    lo, hi = numeric_range(q)
    value = PACKAGE_VALUES[q["id"]]()
    assert lo <= value < hi, f"{q['id']}: the package gives {value}, the bank accepts [{lo}, {hi})"
    # a count is accepted within one half either side; a real number within TOLERANCE
    allowed = 1.0 if isinstance(value, int) else 2 * TOLERANCE * max(abs(value), 0.25)
    assert hi - lo <= allowed, (
        f"{q['id']}: the range [{lo}, {hi}) is wider than {TOLERANCE:.0%} around {value}")


# ------------------------------------------------------------ nothing given away, no TeX
def test_the_questions_hold_no_tex_links_or_addresses():
    for _, q in all_questions():
        text = json.dumps(q, ensure_ascii=False)
        for bad in ("$", "\\(", "\\[", "](", "<http", "http:", "https:", "<script"):
            assert bad not in text, f"{q['id']} holds {bad!r}"


def _chapter(session):
    return next(BOOK.glob(f"ch{session:02d}_*.ipynb"))


@pytest.mark.parametrize("session", SESSIONS)
def test_no_quiz_gives_a_solution_away(session):
    texts = editions.solution_texts(BOOK)
    public = editions.public_text(BOOK)
    solutions = texts[_chapter(session).name]
    quiz = editions.normalize(plain(" ".join(
        q["question"] + " " + " ".join(a.get("answer", "") + " " + a["feedback"]
                                       for a in q["answers"])
        for q in bank(session)["questions"])))
    sentences = {p for s in solutions for p in editions.probes(s) if p not in public}
    assert not [p for p in sentences if p in quiz]
    numbers = editions.answer_numbers(solutions, public)
    assert not [n for n in numbers if re.search(r"(?<![\w.])" + re.escape(n) + r"(?!\.?\d)", quiz)]
    labels = editions.exercise_labels(BOOK)
    assert not [label for label in labels if label in quiz]


# ------------------------------------------------------------------- show() and the HTML
@pytest.mark.parametrize("bad,error", [(0, ValueError), (11, ValueError), (-1, ValueError),
                                       ("1", TypeError), (1.0, TypeError), (True, TypeError),
                                       (None, TypeError)])
def test_show_names_the_session_it_refuses(bad, error):
    for call in (quizzes.show, quizzes.Quiz, quizzes.load, quizzes.render):
        with pytest.raises(error, match=r"session must be an integer from 1 to 10"):
            call(bad)


def embedded_questions(html: str) -> list:
    m = re.search(r"var questions(usaavQuiz\d\dn\d+)=(\[.*?\]);\n", html, re.S)
    assert m, "no questions in the quiz's script"
    return json.loads(m.group(2).replace("<\\/", "</"))


@pytest.mark.parametrize("session", SESSIONS)
def test_the_quiz_marks_every_question_and_names_no_address(session):
    html = quizzes.show(session)._repr_html_()
    assert quizzes.ADDRESS.search(html) is None
    assert "mathjax@" not in html.lower() and "createElement('script')" not in html
    # the one place jupyterquiz's script makes a question's container: it carries the class
    assert html.count("this.wrapper = document.createElement('div');") == 1
    assert html.count("this.wrapper.className = 'Quiz usaav-quiz';") == 1
    assert "this.wrapper.className = 'Quiz';" not in html
    assert embedded_questions(html) == bank(session)["questions"]
    # a script, and nothing that would end it early
    assert html.count("<script") == 1 and html.count("</script>") == 1
    assert html.rstrip().endswith("</script>")


def test_two_quizzes_get_two_containers():
    a, b = (quizzes.render(4) for _ in range(2))
    ida, idb = (re.search(r'<div id="(\w+)"', h).group(1) for h in (a, b))
    assert ida != idb and ida.startswith("usaavQuiz04")


def test_an_unknown_jupyterquiz_script_is_refused(monkeypatch):
    import jupyterquiz.dynamic.renderer as renderer

    real = renderer.build_script
    monkeypatch.setattr(renderer, "build_script",
                        lambda *a: real(*a).replace("this.wrapper.className = 'Quiz';", ""))
    with pytest.raises(RuntimeError, match="2.9.6.4"):
        quizzes.render(1)
    monkeypatch.setattr(renderer, "build_script",
                        lambda *a: real(*a) + "\nfetch('https://example.org/q.json');")
    with pytest.raises(RuntimeError, match="network"):
        quizzes.render(1)


def test_the_wheel_ships_the_bank():
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "*.json" in config["package-data"]["usaav_edu.quizzes"]


@pytest.mark.parametrize("session", SESSIONS)
def test_each_chapter_ends_with_its_quiz_before_the_references(session):
    cells = json.loads(_chapter(session).read_text(encoding="utf-8"))["cells"]
    text = ["".join(c["source"]) for c in cells]
    k = next(i for i, c in enumerate(cells) if c["cell_type"] == "code"
             and re.fullmatch(r"ue\.quizzes\.(Quiz|show)\((\d+)\)", text[i].strip()))
    assert text[k].strip().endswith(f"({session})"), f"chapter {session} shows {text[k]}"
    assert "remove-input" in cells[k]["metadata"].get("tags", [])
    assert cells[k]["outputs"] == [] and cells[k]["execution_count"] is None
    assert cells[k - 1]["cell_type"] == "markdown"
    assert text[k - 1].startswith("## Check your understanding\n")
    rest = text[k + 1:]
    assert len(rest) == 1 and rest[0].startswith("## References"), (
        f"chapter {session}: after the quiz come {len(rest)} cells")


# ----------------------------------------------------------------------------- QTI
def _qti_items(path: Path):
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        assert "imsmanifest.xml" in names
        manifest = ET.fromstring(z.read("imsmanifest.xml"))
        hrefs = {el.get("href") for el in manifest.iter() if el.get("href")}
        tests = [n for n in names if n.endswith(".xml") and "/" in n
                 and not n.endswith("assessment_meta.xml")]
        assert len(tests) == 1 and tests[0] in hrefs, (tests, hrefs)
        root = ET.fromstring(z.read(tests[0]))
    ns = {"q": root.tag.split("}")[0].strip("{")} if root.tag.startswith("{") else {}
    pre = "q:" if ns else ""
    return root.findall(f".//{pre}item", ns), ns, pre


def test_qti_packages_hold_every_question_with_its_correct_answer(tmp_path):
    paths = quiz_qti.write(tmp_path)
    assert [p.name for p in paths] == [f"session{k:02d}.zip" for k in SESSIONS]
    for session, path in zip(SESSIONS, paths, strict=True):
        items, ns, pre = _qti_items(path)
        by_title = {item.get("title"): item for item in items}
        qs = bank(session)["questions"]
        assert sorted(by_title) == sorted(q["id"] for q in qs), path.name
        for q in qs:
            item = by_title[q["id"]]
            kind = next(f.findtext(f"{pre}fieldentry", namespaces=ns)
                        for f in item.findall(f".//{pre}qtimetadatafield", ns)
                        if f.findtext(f"{pre}fieldlabel", namespaces=ns) == "question_type")
            scoring = [c for c in item.findall(f".//{pre}respcondition", ns)
                       if c.findtext(f"{pre}setvar", namespaces=ns) == "100"]
            assert len(scoring) == 1, q["id"]
            if q["type"] == "multiple_choice":
                assert kind == "multiple_choice_question"
                ident = scoring[0].findtext(f".//{pre}varequal", namespaces=ns)
                label = next(el for el in item.findall(f".//{pre}response_label", ns)
                             if el.get("ident") == ident)
                shown = plain(label.findtext(f".//{pre}mattext", namespaces=ns))
                right = next(a for a in q["answers"] if a["correct"])
                assert shown == plain(right["answer"]), q["id"]
                assert len(item.findall(f".//{pre}response_label", ns)) == len(q["answers"])
            else:
                assert kind == "numerical_question"
                lo, hi = numeric_range(q)
                gte = float(scoring[0].findtext(f".//{pre}vargte", namespaces=ns))
                lte = float(scoring[0].findtext(f".//{pre}varlte", namespaces=ns))
                assert (gte, lte) == pytest.approx((lo, hi)), q["id"]


def test_qti_refuses_a_target_that_is_not_a_file(tmp_path):
    (tmp_path / "session01.zip").mkdir()
    with pytest.raises(ValueError, match="not a regular file"):
        quiz_qti.write(tmp_path, [1])
    assert (tmp_path / "session01.zip").is_dir()


def test_qti_text_keeps_the_bank_literal():
    """Markdown specials of the bank stay literal in text2qti's text (``k*`` is no emphasis)."""
    text = quiz_qti.quiz_text(7)
    assert "k\\*" in text and "k*" not in text.replace("k\\*", "")
