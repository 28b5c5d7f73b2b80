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


# ---------------------------------------------------------------- one controller, one frame loop
from usaav_edu.dynamics import integrate  # noqa: E402


class _Rotation:
    """``y' = i omega y`` on complex states (exact: ``y0 e^{i omega t}``), with the identity as
    its retraction; ``reuse`` says that the last stage may be reused."""

    stage_speed = None

    def __init__(self, omega=1.0, reuse=True):
        self.omega, self.reuse_last_stage, self.calls = omega, reuse, 0

    def __call__(self, y, out):
        self.calls += 1
        out[...] = 1j * self.omega * y
        return out

    def retract(self, y):
        return bool(np.all(np.isfinite(y)))

    def error_norm(self, y, y_new, h, e, ks, rtol, atol):
        err = h * np.tensordot(e, ks[:e.size], axes=1)
        scale = atol + rtol * np.maximum(np.abs(y), np.abs(y_new))
        return float(np.sqrt(np.mean(np.abs(err / scale) ** 2))), bool(np.all(np.isfinite(err)))


def test_controller_exponent_comes_from_the_order_of_the_error_estimate():
    ctrl = integrate.Controller.for_tableau(integrate.DOPRI5)
    assert integrate.DOPRI5.error_order == 4 and ctrl.exponent == -0.2
    assert integrate.Controller(2).exponent == pytest.approx(-1.0 / 3.0)
    # the factor aims at err = safety^(q + 1) and stays within [min_factor, max_factor]
    assert ctrl.factor(0.9 ** 5) == pytest.approx(1.0)
    assert ctrl.factor(0.0) == 5.0 and ctrl.factor(1e-30) == 5.0 and ctrl.factor(1e30) == 0.2
    assert ctrl.rejected(1.0, np.inf) == 0.2 and ctrl.rejected(1.0, 2.0 ** 5) == pytest.approx(0.45)
    with pytest.raises(ValueError, match="no error estimate"):
        integrate.Controller.for_tableau(integrate.RK4)


def test_controller_bounds_the_step_by_h_max_and_ends_below_h_min():
    bound = [0.5]
    ctrl = integrate.Controller(4, h_min=1e-3, h_max=lambda: bound[0])
    assert ctrl.accepted(1.0, 1.0, 1e-6, last=False) == 0.5
    bound[0] = 0.25  # a bound that changes with the state is read after every step
    assert ctrl.accepted(1.0, 1.0, 1e-6, last=False) == 0.25
    # a step cut short to land on the end time does not shrink the planned one
    assert integrate.Controller(4).accepted(0.3, 0.01, 0.9 ** 5, last=True) == 0.3
    assert ctrl.too_small(9e-4, 0.0) and not ctrl.too_small(1.1e-3, 0.0)
    assert integrate.Controller(4).too_small(1e-9, 1e7)  # below 4 eps t the time stands still


@pytest.mark.parametrize("kwargs, words", [
    (dict(error_order=0), "error_order"), (dict(error_order=4, safety=1.5), "safety"),
    (dict(error_order=4, min_factor=2.0), "min_factor"), (dict(error_order=4, h_min=-1.0), "h_min"),
])
def test_controller_refuses_bad_settings(kwargs, words):
    with pytest.raises(ValueError, match=words):
        integrate.Controller(**kwargs)


def test_tableau_error_order_goes_with_the_error_weights():
    with pytest.raises(ValueError, match="e and error_order go together"):
        integrate.ButcherTableau("x", a=((1.0,),), b=(0.5, 0.5), c=(0.0, 1.0), order=2,
                                 error_order=1)


def test_frame_loop_lands_on_every_frame_and_matches_frame_by_frame_advance():
    model, x0, xi = ue.experiments.setup("rope", n=16, seed=4)
    field = integrate.GaugeField(model.kernel(x0, xi).params)
    y0 = np.ascontiguousarray(model.kernel(x0, xi).y0)
    times = np.linspace(0.0, 4.0, 9)
    stepper, control = integrate.METHODS["dopri5"], integrate.Control(1e-9, 1e-11)
    seen, frames = [], []
    y = y0.copy()
    run = integrate.run_frames(y, times, 0.01, stepper, field, control,
                               on_frame=lambda f, state, res: seen.append((f, res.t))
                               or frames.append(state.copy()))
    assert run.outcome is integrate.Outcome.OK and run.frames == 9 and run.t == 4.0
    assert seen == [(f, times[f]) for f in range(1, 9)]
    # the same as calling advance frame by frame, carrying the proposed step
    z, h, n_rhs = y0.copy(), 0.01, 0
    for f in range(1, 9):
        res = stepper.advance(z, times[f - 1], times[f], h, field, control)
        h, n_rhs = res.h, n_rhs + res.n_rhs
        np.testing.assert_array_equal(z, frames[f - 1])
    assert run.n_rhs == n_rhs and run.h == h


def test_frame_loop_shares_one_step_budget_and_stops_when_asked():
    field = _Rotation()
    times = np.linspace(0.0, 10.0, 11)
    stepper = integrate.METHODS["dopri5"]
    y = np.ones((1, 4), dtype=complex)
    run = integrate.run_frames(y, times, 0.1, stepper, field, integrate.Control(max_steps=30))
    assert run.outcome is integrate.Outcome.MAX_STEPS and run.accepted + run.rejected == 30
    assert 1 < run.frames < 11 and run.t < 10.0
    y = np.ones((1, 4), dtype=complex)
    run = integrate.run_frames(y, times, 0.1, stepper, field, integrate.Control(),
                               on_frame=lambda f, state, res: f == 3)
    assert run.outcome is integrate.Outcome.STOPPED and run.frames == 4 and run.t == 3.0
    y = np.ones((1, 4), dtype=complex)
    run = integrate.run_frames(y, times, 0.1, stepper, field,
                               integrate.Control(report=lambda t: t > 2.5))
    assert run.outcome is integrate.Outcome.STOPPED and 2.5 < run.t < 3.0 and run.frames == 3


def test_identity_retraction_reuses_the_last_stage_and_changes_nothing_else():
    times = np.linspace(0.0, 2 * np.pi, 5)
    stepper, control = integrate.METHODS["dopri5"], integrate.Control(1e-10, 1e-12)
    runs = {}
    for reuse in (True, False):
        field = _Rotation(omega=3.0, reuse=reuse)
        y = np.array([[1.0 + 0j, 0.5j]])
        run = integrate.run_frames(y, times, 0.01, stepper, field, control)
        assert field.calls == run.n_rhs
        runs[reuse] = (y, run)
    (y_r, fast), (y_n, slow) = runs[True], runs[False]
    np.testing.assert_array_equal(y_r, y_n)
    trials = fast.accepted + fast.rejected
    assert (fast.accepted, fast.rejected) == (slow.accepted, slow.rejected)
    assert slow.n_rhs == 7 * trials and fast.n_rhs == 6 * trials + 1  # one first stage a run
    np.testing.assert_allclose(y_r, np.array([[1.0, 0.5j]]) * np.exp(3j * 2 * np.pi), atol=1e-8)
