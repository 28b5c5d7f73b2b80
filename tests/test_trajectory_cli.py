"""Trajectory files and the usaav-edu command."""

import json

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu.cli import main


def test_save_load_roundtrip(tmp_path):
    model, x0, xi = ue.experiments.setup("prefix_gauge", n=20, seed=3)
    traj = ue.simulate(model, x0, xi, t_max=2.0, seed=3, n_frames=5)
    path = tmp_path / "run.npz"
    traj.save(path)
    back = ue.Trajectory.load(path)
    for name in ("t", "x", "xi", "energy"):
        assert np.array_equal(getattr(back, name), getattr(traj, name))
    assert back.model.params() == traj.model.params()
    assert back.seed == 3 and back.version == ue.__version__ and back.method == "rk4"
    assert back.dt == traj.dt
    # the reloaded model reproduces the run
    again = ue.simulate(back.model, back.x[0], back.xi, t_max=2.0, dt=back.dt, n_frames=5)
    assert np.array_equal(again.x, traj.x)


def test_frozen_mask_roundtrip(tmp_path):
    frozen = np.zeros(10, dtype=bool)
    frozen[2] = True
    traj = ue.simulate(ue.models.usa(1.0), ue.sphere.uniform(10, 3, seed=0), t_max=1.0, frozen=frozen)
    traj.save(tmp_path / "f.npz")
    assert np.array_equal(ue.Trajectory.load(tmp_path / "f.npz").frozen, frozen)


def test_cli_simulate_writes_and_summarizes(tmp_path, capsys):
    out = tmp_path / "run.npz"
    code = main(["simulate", "--model", "rope", "--n", "64", "--d", "3", "--beta", "1", "--t-max", "20",
                 "--seed", "0", "--out", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    traj = ue.Trajectory.load(out)
    summary = ue.diagnostics.summary(traj)
    assert f"{summary['energy']:.10g}" in text
    assert f"{summary['energy_bound']:.10g}" in text
    assert f"clusters       {summary['clusters']}" in text
    assert traj.n == 64 and traj.seed == 0 and traj.t[-1] == 20.0
    meta = json.loads(str(np.load(out)["metadata"]))
    assert meta["model"]["name"] == "rope" and meta["version"] == ue.__version__


def test_cli_reports_bad_input(capsys):
    assert main(["simulate", "--model", "usa", "--beta", "-800"]) == 2
    assert "beta must be >= -700" in capsys.readouterr().err


def test_cli_rejects_unknown_model():
    with pytest.raises(SystemExit):
        main(["simulate", "--model", "gpt"])


def test_bench_pairs_adjacent_batches_and_checks_agreement():
    from usaav_edu.cli import bench

    calls = []
    times = bench.batch_times([lambda: calls.append("a"), lambda: calls.append("b")], repeats=3, min_time=0.0)
    assert times.shape == (3, 2) and np.all(times > 0)
    # warm-up a, b; then one call per batch, alternating a, b
    assert "".join(calls) == "ab" + "ab" + "ababab"
    (row,) = bench.measure(n_values=(32,), repeats=3, min_time=0.001)
    assert row["n"] == 32 and row["ratio_q1"] <= row["ratio"] <= row["ratio_q3"]
    assert row["max_abs_diff"] < 1e-13
