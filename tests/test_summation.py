"""Direct and fast summation in simulate, energy, the Trajectory, the CLI and the bench.

Fast summation (usaav_edu.dynamics.fastsum) is tested against the direct kernel in
tests/test_fastsum.py; here: that simulate uses it as asked, records it, never builds an n x n
matrix on that path, and refuses it where it does not apply.
"""

import json
import math

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu import experiments, models
from usaav_edu.cli import command as cli
from usaav_edu.cli import main
from usaav_edu.dynamics import fastsum
from usaav_edu.models.biases import CosineBias, DistanceBias

TOL = 1e-10
N = 96
T_MAX = 1.0


def positions(n):
    return 2.0 * np.pi * np.arange(n) / n


def frames(k, d, seed):
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((k, d, d)))
    return q


CASES = {
    "usa": (lambda: models.usa(1.0), 3, lambda n: None),
    "sa": (lambda: models.sa(2.0), 3, lambda n: None),
    "rope": (lambda: models.rope(1.0, (1.0,), 3), 3, positions),
    "prefix_gauge": (lambda: models.prefix_gauge(1.0, frames(3, 4, 1)), 4,
                     lambda n: np.arange(n) % 3),
    "distance_bias": (lambda: models.distance_bias(1.0, lam=0.5), 3, positions),
    "cosine_bias": (lambda: models.cosine_bias(omega=1.0), 3, positions),
    "cosine_bias_exp": (lambda: models.cosine_bias(1.5, omega=1.0, profile="exp"), 2, positions),
}


def run(name, summation, n=N, **kw):
    build, d, labels = CASES[name]
    x0 = ue.sphere.uniform(n, d, seed=3)
    kw.setdefault("t_max", T_MAX)
    kw.setdefault("n_frames", 3)
    return ue.simulate(build(), x0, labels(n), summation=summation, **kw)


# ---------------------------------------------------------------------- fast against direct
@pytest.mark.parametrize("name", sorted(CASES))
def test_fast_and_direct_runs_agree_within_the_error_bound(name):
    direct, fast = run(name, "direct"), run(name, "fast")
    assert (direct.summation, direct.degree, direct.error_bound) == ("direct", None, None)
    assert fast.summation == "fast" and 0.0 <= fast.error_bound <= TOL
    assert isinstance(fast.degree, int) and fast.degree >= 0
    # the field differs by at most bound * (row mass <= e^beta max|b|); over a time T the
    # states drift apart by at most that times (e^(L T) - 1) / L, L the Lipschitz estimate
    p = fast.model
    lip = 0.25 / ue.particles.solver.default_dt(p, direct.xi)  # max(5, L) >= L
    mass = 1.0 if p.normalization == "sa" or p.linear else math.exp(p.beta)
    drift = fast.error_bound * mass * math.expm1(lip * T_MAX) / lip
    gap = float(np.max(np.abs(fast.x - direct.x)))
    assert gap <= drift + 1e-12, (gap, drift)
    scale = float(np.max(np.abs(direct.energy)))
    assert np.max(np.abs(fast.energy - direct.energy)) <= 1e-9 * scale + 1e-14


def test_frozen_tokens_stay_put_with_fast_summation():
    frozen = np.zeros(N, dtype=bool)
    frozen[::5] = True
    traj = run("rope", "fast", frozen=frozen)
    # frozen in gauge coordinates; mapped back to contents up to rounding
    assert np.max(np.abs(traj.x[-1][frozen] - traj.x[0][frozen])) < 1e-14
    assert np.max(np.abs(traj.x[-1][~frozen] - traj.x[0][~frozen])) > 1e-3
    direct = run("rope", "direct", frozen=frozen)
    assert np.max(np.abs(traj.x - direct.x)) < 1e-8


def test_the_adaptive_stepper_runs_the_fast_field_too():
    fast = run("rope", "fast", method="dopri5", rtol=1e-8, atol=1e-10)
    direct = run("rope", "direct", method="dopri5", rtol=1e-8, atol=1e-10)
    assert fast.summation == "fast" and fast.steps_accepted > 0
    assert np.max(np.abs(fast.x - direct.x)) < 1e-6


def test_energy_by_fast_summation_matches_direct_for_every_bias():
    for name in ("usa", "distance_bias", "cosine_bias", "cosine_bias_exp", "prefix_gauge"):
        build, d, labels = CASES[name]
        m, x, xi = build(), ue.sphere.uniform(200, d, seed=5), labels(200)
        exact = ue.energy(m, x, xi, summation="direct")
        approx = ue.energy(m, x, xi, summation="fast", summation_tol=1e-12)
        assert approx == pytest.approx(exact, rel=1e-10, abs=1e-15), name
        # a loose summation_tol is honoured too, and is visibly looser
        loose = ue.energy(m, x, xi, summation="fast", summation_tol=1e-3)
        assert abs(loose - exact) <= 1e-3 * abs(exact) * math.exp(2 * m.beta) + 1e-15, name


# ---------------------------------------------------------------------- auto
@pytest.mark.parametrize("d", [2, 3])
def test_auto_sums_directly_below_the_crossover_and_fast_above(d):
    cross = fastsum.crossover_n(d, 1.0, TOL)
    model = models.usa(1.0)
    kw = dict(t_max=0.01, n_frames=2, dt=0.01)
    below = ue.simulate(model, ue.sphere.uniform(cross - 1, d, seed=0), None, **kw)
    above = ue.simulate(model, ue.sphere.uniform(cross, d, seed=0), None, **kw)
    assert below.summation == "direct" and above.summation == "fast"
    # a model where fast summation does not apply sums directly whatever n
    unrotated = models.rope(1.0, (1.0,), d, rotate_values=False) if d == 3 else None
    if unrotated is not None:
        traj = ue.simulate(unrotated, ue.sphere.uniform(cross, d, seed=0), positions(cross), **kw)
        assert traj.summation == "direct"


# ---------------------------------------------------------------------- refusals
class GaussianBias:
    def matrix(self, xi):
        return np.exp(-(xi[:, None] - xi[None, :]) ** 2)


def test_fast_is_refused_with_the_reason_where_it_does_not_apply():
    x0, xi = ue.sphere.uniform(16, 3, seed=0), positions(16)
    user = ue.Model(bias=GaussianBias(), profile=models.ExpProfile(1.0))
    with pytest.raises(ValueError, match="summation='fast' does not apply.*user-defined bias"):
        ue.simulate(user, x0, xi, t_max=0.1, summation="fast")
    with pytest.raises(ValueError, match="summation='fast'.*user-defined bias"):
        ue.energy(user, x0, xi, summation="fast")
    unrotated = models.rope(1.0, (1.0,), 3, rotate_values=False)
    with pytest.raises(ValueError, match="summation='fast' does not apply.*not values"):
        ue.simulate(unrotated, x0, xi, t_max=0.1, summation="fast")
    # both run directly under auto
    assert ue.simulate(user, x0, xi, t_max=0.1, n_frames=2).summation == "direct"


@pytest.mark.parametrize("kw, name", [
    ({"summation": "fastest"}, "summation"), ({"summation": 1}, "summation"),
    ({"summation": None}, "summation"), ({"summation_tol": 0.0}, "summation_tol"),
    ({"summation_tol": -1e-3}, "summation_tol"), ({"summation_tol": 1.0}, "summation_tol"),
    ({"summation_tol": float("nan")}, "summation_tol"), ({"summation_tol": "1e-8"}, "summation_tol"),
    ({"summation_tol": True}, "summation_tol"),
])
def test_bad_summation_and_summation_tol_are_refused_naming_the_argument(kw, name):
    x0 = ue.sphere.uniform(8, 3, seed=0)
    with pytest.raises((TypeError, ValueError), match=f"^{name} must"):
        ue.simulate(models.usa(1.0), x0, None, t_max=0.1, **kw)
    with pytest.raises((TypeError, ValueError), match=f"^{name} must"):
        ue.energy(models.usa(1.0), x0, None, **kw)


# ---------------------------------------------------------------------- invariants
def test_a_long_fast_run_keeps_unit_norms_and_raises_the_energy():
    n = 2000
    traj = ue.simulate(models.usa(1.0), ue.sphere.uniform(n, 3, seed=1), None, t_max=1.5,
                       n_frames=16, summation="fast")
    assert traj.summation == "fast"
    assert np.max(np.abs(np.linalg.norm(traj.x, axis=2) - 1.0)) < 1e-12
    # gradient ascent: non-decreasing up to the energies' own error bound
    slack = 2.0 * 1e-10 * np.abs(traj.energy[1:])
    assert np.all(np.diff(traj.energy) >= -slack)
    assert traj.energy[-1] > traj.energy[0] * (1.0 + 1e-3)


# ---------------------------------------------------------------------- no n x n
@pytest.fixture
def no_dense_bias(monkeypatch):
    """Any n x n bias matrix fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("an n x n bias matrix was built")

    monkeypatch.setattr(models.Model, "bias_matrix", refuse)
    monkeypatch.setattr(DistanceBias, "matrix", refuse)
    monkeypatch.setattr(CosineBias, "matrix", refuse)


@pytest.mark.parametrize("name", ["distance_bias", "cosine_bias", "cosine_bias_exp"])
def test_a_fast_run_builds_no_bias_matrix(no_dense_bias, name):
    traj = run(name, "fast", n=300)
    assert traj.summation == "fast"
    build, d, labels = CASES[name]
    ue.energy(build(), traj.x[-1], traj.xi, summation="fast")
    ue.particles.solver.default_dt(build(), traj.xi)
    ue.diagnostics.summary(traj)
    # the direct path does build it (so the fixture can fail)
    with pytest.raises(AssertionError, match="n x n"):
        run(name, "direct", n=8)


def test_bias_facts_without_the_matrix_match_the_matrix():
    rng = np.random.default_rng(0)
    for omega in (0.3, 1.0, 2.5, -4.0):
        for span in (0.1, 0.5, 1.5, 3.0, 7.0):
            xi = np.sort(rng.uniform(0.0, span, 40))
            m = models.cosine_bias(omega=omega)
            dense = m.bias_matrix(xi)
            facts = m.bias_facts(xi)
            assert facts == m.bias_facts(xi, dense), (omega, span)
            # the energy bound's factor in O(n log n) against the bias's own block test
            assert m.bound_factor(xi + 50.0) == pytest.approx(m.bias.bound_factor(xi),
                                                              rel=1e-12)
    for m in (models.distance_bias(1.0, lam=0.7), models.usa(1.0)):
        xi = np.sort(rng.uniform(0.0, 5.0, 30))
        dense = m.bias_matrix(xi)
        expect = (False, 1.0, False) if dense is None else m.bias_facts(xi, dense)
        assert m.bias_facts(xi) == expect


def test_kernel_without_the_dense_bias_holds_no_params_until_asked():
    m, x0, xi = models.distance_bias(1.0, lam=0.5), ue.sphere.uniform(20, 3, seed=0), positions(20)
    light = m.kernel(x0, xi, dense_bias=False)
    assert light.params is None and not light.dense_bias
    with pytest.raises(ValueError, match="dense_bias=False"):
        _ = light.bias
    dense = light.with_dense_bias()
    reference = m.kernel(x0, xi)
    assert np.array_equal(dense.bias, reference.bias) and dense.facts == reference.facts
    with pytest.raises(ValueError, match="needs a built-in bias"):
        ue.Model(bias=GaussianBias()).kernel(x0, xi, dense_bias=False)


# ---------------------------------------------------------------------- files
def test_save_and_load_keep_the_summation(tmp_path):
    fast = run("rope", "fast", n=32)
    fast.save(tmp_path / "fast.npz")
    back = ue.Trajectory.load(tmp_path / "fast.npz")
    assert (back.summation, back.degree, back.error_bound) == (
        "fast", fast.degree, fast.error_bound)
    direct = run("rope", "direct", n=32)
    direct.save(tmp_path / "direct.npz")
    back = ue.Trajectory.load(tmp_path / "direct.npz")
    assert (back.summation, back.degree, back.error_bound) == ("direct", None, None)
    assert "summation='fast'" in repr(fast)


def rewrite(src, dst, edit):
    with np.load(src) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays.pop("metadata")))
    edit(meta)
    np.savez(dst, **arrays, metadata=np.array(json.dumps(meta)))


def test_a_file_written_before_the_summation_was_recorded_loads_as_direct(tmp_path):
    run("rope", "direct", n=16).save(tmp_path / "new.npz")

    def old(meta):
        for key in ("summation", "degree", "error_bound"):
            del meta[key]

    rewrite(tmp_path / "new.npz", tmp_path / "old.npz", old)
    back = ue.Trajectory.load(tmp_path / "old.npz")
    assert (back.summation, back.degree, back.error_bound) == ("direct", None, None)


@pytest.mark.parametrize("edit, words", [
    (lambda m: m.update(summation="multipole"), "summation must be one of"),
    (lambda m: m.update(summation="fast", degree=None, error_bound=None), "records its degree"),
    (lambda m: m.update(degree=4), "direct summation has no degree"),
    (lambda m: m.update(summation="fast", degree=-1, error_bound=1e-11), "degree must be >= 0"),
    (lambda m: m.update(summation="fast", degree=3, error_bound=-1.0), "error_bound must be"),
])
def test_malformed_summation_metadata_is_refused(tmp_path, edit, words):
    run("rope", "direct", n=16).save(tmp_path / "good.npz")
    rewrite(tmp_path / "good.npz", tmp_path / "bad.npz", edit)
    with pytest.raises(ValueError, match=f"not a valid usaav-edu trajectory.*{words}"):
        ue.Trajectory.load(tmp_path / "bad.npz")


# ---------------------------------------------------------------------- command line
TINY = ["simulate", "--n", "8", "--t-max", "0.2", "--n-frames", "3"]


def test_cli_summation_fast_runs_and_is_recorded(tmp_path, capsys):
    path = tmp_path / "run.npz"
    assert main(TINY + ["--model", "rope", "--summation", "fast", "--summation-tol", "1e-8",
                        "--out", str(path)]) == 0
    traj = ue.Trajectory.load(path)
    assert traj.summation == "fast" and 0.0 < traj.error_bound <= 1e-8
    assert f"summation      fast (degree {traj.degree}," in capsys.readouterr().out


def test_cli_summation_flags_reach_simulate(capsys, monkeypatch):
    seen = {}

    def record(*args, **kwargs):
        seen.update(kwargs)
        raise ue.IntegrationError("stopped here")

    monkeypatch.setattr(cli, "simulate", record)
    assert main(TINY + ["--summation", "direct"]) == 1
    assert seen["summation"] == "direct" and "summation_tol" not in seen
    assert main(TINY + ["--summation-tol", "1e-6"]) == 1
    assert seen["summation"] == "auto" and seen["summation_tol"] == 1e-6


@pytest.fixture
def no_run(monkeypatch):
    def ran(*args, **kwargs):
        raise AssertionError("the run started before the flags were checked")

    monkeypatch.setattr(cli, "simulate", ran)


@pytest.mark.parametrize("flags, words", [
    (["--summation-tol", "0"], "--summation-tol must be > 0"),
    (["--summation-tol", "1"], "--summation-tol must be below 1"),
    (["--summation-tol", "nan"], "--summation-tol must be finite"),
    (["--summation", "direct", "--summation-tol", "1e-8"],
     "--summation-tol applies to --summation fast or auto only"),
])
def test_cli_bad_summation_flags_are_refused_before_the_run(capsys, no_run, flags, words):
    assert main(TINY + flags) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("usaav-edu: error: ") and words in err[0]


def test_cli_refuses_fast_summation_where_it_does_not_apply_before_the_run(capsys, no_run,
                                                                            monkeypatch):
    unrotated = experiments.Experiment(
        "rope_unrotated", "RoPE, values not rotated", ("d", "beta", "omega"),
        lambda d, beta, omega, **_: models.rope(beta, (omega,), d, rotate_values=False),
        lambda n, omega=1.0, **_: experiments.positions(n, omega))
    monkeypatch.setitem(experiments.EXPERIMENTS, "rope_unrotated", unrotated)
    monkeypatch.setattr(experiments, "NAMES", experiments.NAMES + ("rope_unrotated",))
    assert main(TINY + ["--model", "rope_unrotated", "--summation", "fast"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1
    assert "--summation fast does not apply to the rope_unrotated experiment" in err[0]
    assert "not values" in err[0]


def test_cli_bench_prints_the_fast_table_and_the_crossover(capsys):
    assert main(["bench", "--n", "32", "--repeats", "1", "--fast-n", "300"]) == 0
    out = capsys.readouterr().out
    assert "Numba pairs/s" in out  # the throughput table is still printed first
    row = [line.split() for line in out.splitlines() if line.split()[:1] == ["300"]]
    assert len(row) == 1 and float(row[0][4]) <= TOL  # the measured error within the bound
    assert f"crossover n (cost model): {fastsum.crossover_n(3, 1.0, TOL)}:" in out
