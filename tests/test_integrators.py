"""Integrators: unit norm, order, adaptive accuracy, reproducibility, failure modes."""

import numpy as np
import pytest

import usaav_edu as ue


def test_unit_norm_preserved():
    model, x0, xi = ue.experiments.setup("rope", n=40, seed=1)
    for method in ("rk4", "dopri5"):
        traj = ue.simulate(model, x0, xi, t_max=15.0, method=method)
        assert np.max(np.abs(np.linalg.norm(traj.x, axis=2) - 1.0)) < 1e-12


def test_rk4_is_fourth_order():
    x0 = ue.sphere.uniform(16, 3, seed=3)
    model = ue.models.usa(1.0)
    final = lambda dt: ue.simulate(model, x0, t_max=2.0, dt=dt, n_frames=2).final  # noqa: E731
    exact = final(0.2 / 64)
    errors = [np.max(np.abs(final(dt) - exact)) for dt in (0.2, 0.1, 0.05)]
    ratios = [errors[0] / errors[1], errors[1] / errors[2]]
    assert all(12.0 < r < 20.0 for r in ratios), ratios


def test_dopri5_matches_fine_rk4():
    model, x0, xi = ue.experiments.setup("prefix_gauge", n=32, seed=2)
    fine = ue.simulate(model, x0, xi, t_max=5.0, dt=1e-3, n_frames=11)
    adaptive = ue.simulate(model, x0, xi, t_max=5.0, method="dopri5", rtol=1e-10, atol=1e-12, n_frames=11)
    assert np.max(np.abs(adaptive.x - fine.x)) < 1e-8
    assert adaptive.n_rhs < fine.n_rhs / 5  # and it took far fewer evaluations


def test_dopri5_tolerance_controls_error():
    x0 = ue.sphere.uniform(24, 3, seed=9)
    model = ue.models.usa(3.0)
    ref = ue.simulate(model, x0, t_max=3.0, dt=2e-4, n_frames=2).final
    loose = ue.simulate(model, x0, t_max=3.0, method="dopri5", rtol=1e-5, atol=1e-7, n_frames=2).final
    tight = ue.simulate(model, x0, t_max=3.0, method="dopri5", rtol=1e-10, atol=1e-12, n_frames=2).final
    assert np.max(np.abs(tight - ref)) < np.max(np.abs(loose - ref))
    assert np.max(np.abs(tight - ref)) < 1e-8


def test_frames_land_on_requested_times():
    x0 = ue.sphere.uniform(8, 3, seed=0)
    traj = ue.simulate(ue.models.usa(1.0), x0, t_max=3.0, dt=0.07, n_frames=7)
    assert np.allclose(traj.t, np.linspace(0, 3, 7))
    assert traj.dt <= 0.07
    per_frame = 0.5 / traj.dt
    assert abs(per_frame - round(per_frame)) < 1e-9


@pytest.mark.parametrize("method", ["rk4", "dopri5"])
def test_seeded_runs_reproduce_bit_for_bit(method):
    runs = []
    for _ in range(2):
        model, x0, xi = ue.experiments.setup("generalized_rope", n=50, seed=42)
        runs.append(ue.simulate(model, x0, xi, t_max=5.0, method=method, seed=42))
    assert np.array_equal(runs[0].x, runs[1].x)
    assert np.array_equal(runs[0].energy, runs[1].energy)


def test_frozen_tokens_do_not_move():
    x0 = ue.sphere.uniform(30, 3, seed=1)
    frozen = np.zeros(30, dtype=bool)
    frozen[[0, 7]] = True
    traj = ue.simulate(ue.models.usa(1.0), x0, t_max=10.0, frozen=frozen)
    assert np.array_equal(traj.x[:, frozen], np.broadcast_to(x0[frozen], traj.x[:, frozen].shape))
    assert np.max(np.abs(traj.final[~frozen] - x0[~frozen])) > 0.1


def test_nonfinite_state_raises(monkeypatch):
    # a step far beyond the stability bound is refused before the run; let one through
    x0 = ue.sphere.uniform(16, 3, seed=0)
    with pytest.raises(ue.IntegrationError, match="stability bound"):
        ue.simulate(ue.models.usa(700.0), x0, t_max=1.0, dt=1.0, n_frames=2)
    monkeypatch.setattr(ue.particles.solver, "_check_rk4_step", lambda *a, **k: None)
    with pytest.raises(ue.IntegrationError, match="non-finite"):
        ue.simulate(ue.models.usa(700.0), x0, t_max=1.0, dt=1.0, n_frames=2)


def test_step_size_underflow_raises():
    x0 = ue.sphere.uniform(16, 3, seed=0)
    with pytest.raises(ue.IntegrationError, match="could not meet its tolerances.*underflowed.*loosen rtol"):
        ue.simulate(ue.models.usa(5.0), x0, t_max=1.0, method="dopri5", rtol=1e-300, atol=1e-300, n_frames=2)
