"""The learner's tools: claims that warn or stop, exercise checks that tell right from wrong,
and predictions revealed in the browser."""
import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu.checks import ClaimFailed, claim
from usaav_edu.exercises import Case, Outcome, check


def test_a_claim_that_holds_is_true_in_both_modes(monkeypatch, capsys):
    for mode in ("", "strict", "warn"):
        monkeypatch.setenv("USAAV_EDU_CHECKS", mode)
        assert claim(np.float64(1.0) < 2.0, "one is below two") is True
    assert capsys.readouterr().out == ""


def test_a_failed_claim_stops_by_default(monkeypatch):
    monkeypatch.delenv("USAAV_EDU_CHECKS", raising=False)
    with pytest.raises(ClaimFailed, match="diameter 0.3"):
        claim(0.3 < 1e-6, "collapse: diameter 0.3 is not below 1e-6; increase t_max")
    assert issubclass(ClaimFailed, AssertionError)


def test_a_failed_claim_is_one_line_in_warn_mode(monkeypatch, capsys):
    monkeypatch.setenv("USAAV_EDU_CHECKS", "warn")
    assert claim(False, "collapse: diameter 0.3\n is not below 1e-6") is False
    out = capsys.readouterr().out
    assert out == "check failed: collapse: diameter 0.3 is not below 1e-6\n"


def test_an_unknown_mode_and_a_bad_claim_are_refused(monkeypatch):
    monkeypatch.setenv("USAAV_EDU_CHECKS", "lenient")
    with pytest.raises(ValueError, match="USAAV_EDU_CHECKS='lenient'"):
        claim(True, "x")
    monkeypatch.delenv("USAAV_EDU_CHECKS")
    with pytest.raises(TypeError, match="single truth value"):
        claim(np.array([True, False]), "x")
    with pytest.raises(TypeError, match="message"):
        claim(True, "")


def _stub(x):
    raise NotImplementedError("return the diameter of x")


def _right(x):
    return float(ue.diagnostics.diameter(x))


def _zero(x):
    return 0


def _broken(x):
    return x.nope


CASES = [Case((ue.sphere.uniform(8, 3, seed=s),), _right(ue.sphere.uniform(8, 3, seed=s)),
              hint="the largest |x_i - x_j|") for s in range(3)]


@pytest.mark.parametrize("func, outcome, line", [
    (_stub, Outcome.NOT_DONE, "not done yet: _stub still raises NotImplementedError (return the diameter"),
    (_right, Outcome.CORRECT, "correct: _right agrees with the package on all 3 cases"),
    (_zero, Outcome.WRONG, "wrong: _zero("),
    (_broken, Outcome.WRONG, "wrong: _broken("),
])
def test_the_check_tells_not_done_right_and_wrong(func, outcome, line, capsys):
    assert check(func, CASES) is outcome
    out = capsys.readouterr().out
    # one report, in lines of the column's width, the later ones indented
    first, *rest = out.splitlines()
    assert first.startswith(line) and all(r.startswith("  ") for r in rest)
    out = " ".join(r.strip() for r in out.splitlines())
    if func is _zero:
        assert "should be" in out and "got 0" in out and "hint: the largest" in out
    if func is _broken:
        assert "AttributeError" in out


def test_agreement_needs_the_shape_and_the_value():
    from usaav_edu.exercises import agrees
    assert agrees([1, 2, 3], [1, 2, 3]) and agrees(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-12]))
    assert not agrees(np.array([1.0, 2.0]), np.array([[1.0, 2.0]]))
    assert not agrees([64, 64, 64, 64], [16, 16, 16, 16])
    assert not agrees(np.nan, 1.0) and not agrees("a", 1.0) and not agrees(1, "1")
    assert agrees({"a": 1.0}, {"a": 1.0}) and not agrees({"a": 1.0}, {"b": 1.0})


def test_a_check_without_cases_or_function_is_refused():
    with pytest.raises(ValueError, match="cases"):
        check(_right, [])
    with pytest.raises(TypeError, match="func"):
        check(3, CASES)


def test_a_prediction_reveals_the_picked_choice_in_the_browser():
    from usaav_edu.widgets import Predict
    w = Predict("How many points?", ["one", "two", "four"], "four", "The run ends in 4 clusters.")
    assert w.reveal.selected_index is None and len(w.reveal.children) == 3
    assert "Yes" in w.reveal.children[2].value and "Not quite" in w.reveal.children[0].value
    assert "4 clusters" in w.reveal.children[0].value and "<b>four</b>" in w.reveal.children[1].value
    link = w._link
    assert link.source == (w.buttons, "index") and link.target == (w.reveal, "selected_index")
    with pytest.raises(ValueError, match="not one of the choices"):
        Predict("q", ["a", "b"], "c", "e")
    with pytest.raises(ValueError, match="2 to 6"):
        Predict("q", ["a"], "a", "e")


def test_a_check_reports_in_lines_that_fit_the_column(capsys):
    def stub(x):
        raise NotImplementedError("return the sum of the squares of the entries of x, "
                                  "computed with numpy, as a float; the check compares it")

    assert check(stub, [((np.ones(3),), 3.0)]) is Outcome.NOT_DONE
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("not done yet: stub still raises NotImplementedError")
    assert len(lines) > 1 and all(len(line) <= ue.exercises.WIDTH for line in lines)
    assert all(line.startswith("  ") for line in lines[1:])
