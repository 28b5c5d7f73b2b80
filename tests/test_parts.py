"""The parts of a model are known by what they give (``dynamics.parts``), not by their type.

The built-in gauges, biases and profiles satisfy the protocols; a bias of one's own that gives
its formula (a ``SeparableBias``) runs in ``simulate`` with fast summation, as the built-in one
it copies; a part that lacks what is asked is refused with the names of what it lacks; and
outside the parts' own modules the package switches on a concrete part's type only where the
reason is written down (read from the source with ast).
"""

import ast
from pathlib import Path

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu.dynamics import parts
from usaav_edu.models import biases, gauges, profiles

ROOT = Path(__file__).resolve().parents[1] / "usaav_edu"


# ---------------------------------------------------------------------- the protocols
@pytest.mark.parametrize("gauge", [gauges.IdentityGauge(), gauges.RopeGauge((1.0,)),
                                   gauges.FrameGauge(np.eye(3)[None])])
def test_the_built_in_gauges_satisfy_the_gauge_protocols(gauge):
    assert parts.missing(gauge, parts.BuiltInGauge) == []
    assert isinstance(gauge, parts.BuiltInGauge)


@pytest.mark.parametrize("bias", [biases.NoBias(), biases.DistanceBias(0.5),
                                  biases.CosineBias(2.0)])
def test_the_built_in_biases_satisfy_the_separable_bias_protocol(bias):
    assert parts.missing(bias, parts.SeparableBias) == []
    assert parts.is_separable(bias)


@pytest.mark.parametrize("profile", [profiles.ExpProfile(2.0), profiles.LinearProfile()])
def test_the_built_in_profiles_satisfy_the_profile_protocol(profile):
    assert parts.missing(profile, parts.Profile) == []


class OwnDistanceBias:
    """``b = exp(-lam |xi - zeta|)``, written from the SeparableBias protocol alone."""

    kind = "own distance"
    constant = False
    nonnegative = True

    def __init__(self, lam):
        self.lam = lam

    def matrix(self, xi):
        return np.exp(-self.lam * np.abs(xi[:, None] - xi[None, :]))

    def facts(self, xi):
        return parts.BiasFacts(True, 1.0, False)

    def bound_factor(self, xi):
        return float(np.mean(self.matrix(xi)))

    def check_labels(self, xi):
        pass

    def separable(self):
        return "distance", {"lam": self.lam}

    def params(self):
        return {"kind": self.kind, "lam": self.lam}


def test_a_bias_of_ones_own_that_gives_its_formula_runs_fast_in_simulate():
    n = 200
    x0 = ue.sphere.uniform(n, 3, seed=3)
    xi = np.linspace(0.0, 10.0, n)
    own = ue.Model(bias=OwnDistanceBias(0.4), profile=ue.models.ExpProfile(1.0))
    built_in = ue.Model(bias=biases.DistanceBias(0.4), profile=ue.models.ExpProfile(1.0))
    assert ue.dynamics.fastsum.fast_applies(own) is None
    mine = ue.simulate(own, x0, xi, t_max=1.0, n_frames=3, summation="fast")
    theirs = ue.simulate(built_in, x0, xi, t_max=1.0, n_frames=3, summation="fast")
    assert mine.summation == "fast"
    np.testing.assert_array_equal(mine.x, theirs.x)
    # and directly, from its matrix, the same dynamics
    direct = ue.simulate(own, x0, xi, t_max=1.0, n_frames=3, summation="direct")
    np.testing.assert_allclose(direct.x, theirs.x, atol=1e-8)


def test_a_bias_without_its_matrix_is_refused_naming_what_it_lacks():
    class Weights:
        kind = "weights"

    with pytest.raises(TypeError, match=r"Weights.*which lacks matrix"):
        ue.Model(bias=Weights())


def test_a_gauge_without_its_matrices_is_refused_naming_what_it_lacks():
    class Turn:
        def rotate(self, x):
            return x

    with pytest.raises(TypeError, match=r"which lacks matrices"):
        ue.Model(gauge=Turn())


def test_a_bias_that_gives_only_part_of_its_formula_is_summed_from_its_matrix():
    class Partial(OwnDistanceBias):
        facts = None  # not callable: the protocol's method is missing

    assert parts.missing(Partial(0.4), parts.SeparableBias) == ["facts"]
    model = ue.Model(bias=Partial(0.4))
    assert "user-defined bias" in ue.dynamics.fastsum.fast_applies(model)
    with pytest.raises(ValueError, match="summation='fast' does not apply"):
        ue.simulate(model, ue.sphere.uniform(8, 3, seed=0), np.arange(8.0), t_max=0.1,
                    summation="fast")


# ---------------------------------------------------------------------- no switching on type
CONCRETE = {"IdentityGauge", "RopeGauge", "FrameGauge", "NoBias", "DistanceBias", "CosineBias",
            "ExpProfile", "LinearProfile"}
OWN_MODULES = {"models/gauges.py", "models/biases.py", "models/profiles.py"}
#: the dispatches on a concrete part outside its module, each with its reason (at most 2)
JUSTIFIED = {
    ("analysis/maximizers.py", "rope_orbit"): "the orbit exp(-s Omega) is a fact of RoPE alone",
}


def _names(node):
    """The class names an isinstance's second argument refers to."""
    items = node.elts if isinstance(node, ast.Tuple) else [node]
    out = set()
    for item in items:
        if isinstance(item, ast.Name):
            out.add(item.id)
        elif isinstance(item, ast.Attribute):
            out.add(item.attr)
    return out


def concrete_dispatches(source, path):
    """``(path, function)`` of each isinstance on a concrete part in ``source``."""
    found = []

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                else function
            if (isinstance(child, ast.Call) and isinstance(child.func, ast.Name)
                    and child.func.id == "isinstance" and len(child.args) == 2
                    and _names(child.args[1]) & CONCRETE):
                found.append((path, function))
            visit(child, name)

    visit(ast.parse(source), None)
    return found


def all_dispatches():
    found = []
    for file in sorted(ROOT.rglob("*.py")):
        rel = file.relative_to(ROOT).as_posix()
        if rel not in OWN_MODULES:
            found += concrete_dispatches(file.read_text(encoding="utf-8"), rel)
    return found


def test_the_package_switches_on_a_concrete_part_only_where_the_reason_is_written():
    found = all_dispatches()
    assert len(JUSTIFIED) <= 2
    assert sorted(found) == sorted(JUSTIFIED), found


def test_the_dispatch_count_sees_one_more():
    extra = "def f(model):\n    if isinstance(model.bias, (biases.CosineBias, int)):\n        pass\n"
    assert concrete_dispatches(extra, "x.py") == [("x.py", "f")]
    assert concrete_dispatches("isinstance(b, Bias)\n", "x.py") == []


# ---------------------------------------------------------------------- the summation plan
def test_a_run_asks_once_whether_fast_summation_applies_and_builds_no_kernel_it_does_not_use(
        monkeypatch):
    from usaav_edu.dynamics.fastsum import kernel as fastsum
    from usaav_edu.models import model as model_module

    asked, built = [], []
    real_applies, real_init = model_module.fast_applies, fastsum.FastKernel.__init__
    monkeypatch.setattr(model_module, "fast_applies", lambda m: asked.append(m) or real_applies(m))

    def init(self, *args, **kwargs):
        built.append(args)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(fastsum.FastKernel, "__init__", init)
    x0 = ue.sphere.uniform(16, 3, seed=1)
    traj = ue.simulate(ue.models.usa(1.0), x0, t_max=0.2, n_frames=3)  # auto: direct at n = 16
    assert traj.summation == "direct"
    assert len(asked) == 1 and built == []


def test_the_plan_says_how_the_pair_sum_is_computed():
    from usaav_edu.particles.plan import summation_args, summation_plan

    model = ue.models.cosine_bias(1.0)
    x0, xi = ue.sphere.uniform(40, 3, seed=2), np.linspace(0.0, 3.0, 40)
    summation, tol, reason = summation_args(model, "fast", 1e-8)
    plan = summation_plan(model.kernel(x0, xi, dense_bias=False), summation, reason, tol)
    assert (plan.summation, plan.reason, plan.dense) == ("fast", None, False)
    assert plan.rank == plan.fast.rank and plan.degree == plan.fast.degree
    assert plan.seconds == ue.dynamics.fastsum.estimated_seconds("fast", 40, 3, 1.0, 1e-8,
                                                                 bias="cosine", rank=plan.rank)
    assert plan.gauge_energy(plan.kernel.y0) == pytest.approx(
        ue.particles.solver.energy(model, x0, xi, summation="direct"), rel=1e-7)
    direct = summation_plan(model.kernel(x0, xi), "direct", reason, tol)
    assert (direct.summation, direct.fast, direct.dense, direct.rank) == ("direct", None, True,
                                                                          None)
