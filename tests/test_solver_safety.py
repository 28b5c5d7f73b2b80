"""The solver fails loudly: work estimated up front, progress within a frame, the energy never falls,
Dormand-Prince rejects non-finite trial steps, the energy does not overflow, errors name their argument."""

import math
import re

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu.dynamics.integrate import steppers as integrators
from usaav_edu.particles import solver

X32 = ue.sphere.uniform(32, 3, seed=0)


@pytest.fixture
def no_integration(monkeypatch):
    """Make any started integration fail the test: a refusal must come before it."""
    def started(*args, **kwargs):
        raise AssertionError("the integration started")
    for stepper in integrators.METHODS.values():
        monkeypatch.setattr(stepper, "advance", started)


# ---------------------------------------------------------------- the work is estimated before integrating
def test_stiff_default_step_is_refused_up_front(no_integration):
    # RK4's default step is 0.25 / ((1 + beta) e^beta): at beta = 50 one time unit takes 204 e^50 steps
    steps = 204 * math.exp(50.0)
    with pytest.raises(ValueError, match="max_steps") as err:
        ue.simulate(ue.models.usa(50.0), X32, None, 1.0)
    msg = str(err.value)
    assert f"{steps:.2g}" in msg
    for advice in ("t_max", "beta", "method='dopri5'", "models.sa", "max_steps=None"):
        assert advice in msg


def test_dopri5_stiff_run_is_refused_with_its_estimate(no_integration):
    # clusters contract at rate e^beta, and Dormand-Prince is stable for steps below 3.3 e^-beta
    estimate = 100 + 20.0 * math.exp(22.0) / 3.3
    with pytest.raises(ValueError, match="Dormand-Prince steps") as err:
        ue.simulate(ue.models.usa(22.0), X32, t_max=20.0, method="dopri5")
    assert f"{estimate:.2g}" in str(err.value)


@pytest.mark.parametrize("method", ["rk4", "dopri5"])
def test_endless_run_is_refused_even_without_a_cap(no_integration, method):
    for cap in (10 ** 6, None):
        with pytest.raises(ValueError, match="steps"):
            ue.simulate(ue.models.usa(1.0), X32, t_max=1e300, method=method, max_steps=cap)


def test_rk4_step_count_is_exact():
    # frames 0.5 apart with dt = 0.1: 5 steps per frame, 2 frames
    run = dict(t_max=1.0, dt=0.1, n_frames=3)
    traj = ue.simulate(ue.models.usa(1.0), X32, max_steps=10, **run)
    assert traj.n_rhs == 4 * 10
    with pytest.raises(ValueError, match="about 10 RK4 steps, more than max_steps = 9"):
        ue.simulate(ue.models.usa(1.0), X32, max_steps=9, **run)


def test_dopri5_stops_at_the_cap():
    # the estimate (one step per frame + t_max e^beta / 3.3 = 12) is below the cap, the run is not
    with pytest.raises(ue.IntegrationError, match="used all max_steps = 20"):
        ue.simulate(ue.models.usa(2.0), X32, t_max=5.0, method="dopri5", n_frames=2, max_steps=20)


@pytest.mark.parametrize("value,exc", [(0, ValueError), (-5, ValueError), (1.5, TypeError), ("many", TypeError),
                                       (True, TypeError)])
def test_max_steps_is_validated(value, exc):
    with pytest.raises(exc, match="max_steps must"):
        ue.simulate(ue.models.usa(1.0), X32, t_max=1.0, max_steps=value)


# ---------------------------------------------------------------- progress within a frame
@pytest.fixture
def no_delay(monkeypatch):
    """Show the bar at once and redraw it at every update."""
    from usaav_edu import progress

    monkeypatch.setattr(progress, "DELAY", 0.0)
    monkeypatch.setattr(progress, "INTERVAL", 0.0)


@pytest.mark.parametrize("method", ["rk4", "dopri5"])
def test_progress_is_reported_within_a_single_frame(no_delay, capsys, method):
    ue.simulate(ue.models.usa(1.0), X32, t_max=4.0, dt=0.01, method=method, n_frames=2, progress=True)
    shown = [float(p) for p in re.findall(r"(\d+\.\d)%", capsys.readouterr().err)]
    assert any(0.0 < p < 100.0 for p in shown), shown


def test_no_progress_output_unless_asked(no_delay, capsys):
    ue.simulate(ue.models.usa(1.0), X32, t_max=4.0, n_frames=3)
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------------- the energy of a gradient ascent never falls
def test_unstable_rk4_step_raises_instead_of_returning_garbage():
    # e^6 = 403: RK4 near a cluster needs dt * 403 below 2.8; dt = 0.05 (used: 0.02) is far beyond
    with pytest.raises(ue.IntegrationError, match="energy fell") as err:
        _unguarded_simulate(ue.models.usa(6.0), ue.sphere.uniform(32, 3, seed=0), t_max=2.0, dt=0.05)
    assert "smaller dt" in str(err.value) and "method='dopri5'" in str(err.value)


def _unguarded_simulate(*args, **kwargs):
    """simulate without the refusal of RK4 steps beyond the stability bound: what the checks
    after each frame catch when a step gets through."""
    mp = pytest.MonkeyPatch()
    mp.setattr(solver, "_check_rk4_step", lambda *a, **k: None, raising=False)
    try:
        return ue.simulate(*args, **kwargs)
    finally:
        mp.undo()


# ---------------------------------------------------------------- RK4 steps within the stability bound
def _spectral_bound(model, xi=None, x=X32):
    return solver._spectral_bound(solver._rates(model, model.kernel(x, xi).facts))


def test_step_beyond_the_stability_bound_is_refused_before_the_run(no_integration):
    # USA at beta = 8: Lambda = 2 (1 + beta) e^beta = 18 e^8, RK4 stable for h Lambda <= 2.785
    bound = solver.RK4_STABILITY / (18.0 * math.exp(8.0))
    x0 = ue.sphere.uniform(512, 3, seed=7)
    with pytest.raises(ValueError, match=r"dt = 0\.01 is beyond RK4's stability bound") as err:
        ue.simulate(ue.models.usa(8.0), x0, None, t_max=0.02, dt=0.01, n_frames=2)
    assert isinstance(err.value, ue.IntegrationError)  # as the failed run always was reported
    msg = str(err.value)
    assert f"dt <= {bound:.3g}" in msg and "dt=None gives" in msg and "method='dopri5'" in msg


def test_the_refused_step_returns_a_wrong_state_whose_energy_rises():
    # without the refusal: the energy rises (no fall to see), but it does not match the speeds
    x0 = ue.sphere.uniform(512, 3, seed=7)
    with pytest.raises(ue.IntegrationError, match="energy identity") as err:
        _unguarded_simulate(ue.models.usa(8.0), x0, None, t_max=0.02, dt=0.01, n_frames=2)
    assert "the energy rose by" in str(err.value)


@pytest.mark.parametrize("model,xi", [
    (ue.models.usa(8.0), None),
    (ue.models.distance_bias(8.0, lam=0.5), np.arange(32.0)),
    (ue.models.rope(8.0, (1.0,), 3), np.arange(32.0)),
], ids=["usa", "distance", "rope"])
def test_large_beta_within_the_bound_runs_and_beyond_it_is_refused(model, xi):
    bound = solver.RK4_STABILITY / _spectral_bound(model, xi)
    accurate = ue.simulate(model, X32, xi, t_max=0.5, dt=0.99 * bound, n_frames=11, max_steps=None)
    reference = ue.simulate(model, X32, xi, t_max=0.5, method="dopri5", rtol=1e-10, atol=1e-12,
                            n_frames=11)
    assert np.max(np.abs(accurate.final - reference.final)) < 1e-6
    with pytest.raises(solver.StepTooLargeError, match="stability bound"):
        ue.simulate(model, X32, xi, t_max=0.5, dt=1.01 * bound, n_frames=11, max_steps=None)


def test_defaults_and_the_book_steps_are_within_the_bound():
    for model in (ue.models.usa(1.0), ue.models.usa(8.0), ue.models.sa(6.0),
                  ue.models.usa(profile="linear")):
        assert ue.particles.solver.default_dt(model, None) * _spectral_bound(model) <= solver.RK4_STABILITY / 5
    # chapter 9 runs RoPE at beta = 1 with dt = 0.1
    assert 0.1 * _spectral_bound(ue.models.rope(1.0, (1.0,), 3), np.arange(32.0)) < solver.RK4_STABILITY


# ---------------------------------------------------------------- the energy identity after every frame
def _overshooting(monkeypatch, excess):
    """RK4 that moves every token ``1 + excess`` times as far as it should: a tangent error."""
    rk4 = integrators.METHODS["rk4"]
    exact = rk4.advance
    default = integrators.Control()

    def advance(yt, t, t_end, h, field, control=default, controller=None, work=None):
        start = yt.copy()
        res = exact(yt, t, t_end, h, field, control, controller, work)
        yt += excess * (yt - start)
        yt /= np.linalg.norm(yt, axis=0)
        return res

    monkeypatch.setattr(rk4, "advance", advance)


@pytest.mark.parametrize("model,xi", [(ue.models.usa(1.0), None),
                                      (ue.models.distance_bias(4.0, lam=0.5), np.arange(32.0)),
                                      (ue.models.rope(4.0, (1.0,), 3), np.arange(32.0))],
                         ids=["usa", "distance", "rope"])
def test_the_energy_identity_catches_a_stepper_that_errs(monkeypatch, model, xi):
    kw = dict(t_max=1.0, n_frames=11)
    exact = ue.simulate(model, X32, xi, **kw)
    _overshooting(monkeypatch, 0.02)
    # the state is off the flow, yet its energy rises at every frame: monotonicity sees nothing
    wrong = _unguarded_identity(model, X32, xi, **kw)
    assert np.all(np.diff(wrong.energy) > 0.0)
    assert np.max(np.abs(wrong.final - exact.final)) > 1e-4
    with pytest.raises(ue.IntegrationError, match="energy identity"):
        ue.simulate(model, X32, xi, **kw)


def _unguarded_identity(*args, **kwargs):
    """simulate with the energy identity not checked."""
    mp = pytest.MonkeyPatch()
    mp.setattr(solver, "_check_identity", lambda *a, **k: None, raising=False)
    try:
        return ue.simulate(*args, **kwargs)
    finally:
        mp.undo()


@pytest.mark.parametrize("method", ["rk4", "dopri5"])
def test_the_speeds_integrate_to_the_energy_gain(method):
    # E(t1) - E(t0) = int (1/n) sum |v_i|^2 dt, the speeds by the stepper's own quadrature
    model = ue.models.usa(1.0)
    y = np.ascontiguousarray(X32.T)
    field = integrators.GaugeField(model.kernel(X32).params)
    e0 = ue.energy(model, X32)
    res = integrators.METHODS[method].advance(y, 0.0, 1.0, 0.01, field, integrators.Control())
    gain = ue.energy(model, y.T) - e0
    assert gain > 0.05
    assert abs(res.speed_integral / 32 - gain) < 1e-8 * gain


def test_dopri5_loose_tolerance_fails_with_an_integration_error():
    # the energy check's message names atol (it was an undefined name there)
    with pytest.raises(ue.IntegrationError, match=r"rtol = 0\.1, atol = 0\.1"):
        ue.simulate(ue.models.usa(12.0), ue.sphere.uniform(64, 3, seed=1), None, t_max=5.0,
                    method="dopri5", rtol=0.1, atol=0.1, n_frames=200)


# ---------------------------------------------------------------- frames that coincide
@pytest.mark.parametrize("t_max,n_frames", [(5e-324, 101), (5e-324, 2), (1e-306, 101)])
def test_frames_that_coincide_are_refused(no_integration, t_max, n_frames):
    with pytest.raises(ValueError, match=f"t_max = {t_max:g} is too small for n_frames = {n_frames}"):
        ue.simulate(ue.models.usa(1.0), X32, t_max=t_max, n_frames=n_frames)


def test_a_short_run_with_normal_frame_times_runs():
    traj = ue.simulate(ue.models.usa(1.0), X32, t_max=1e-300, n_frames=3)
    assert np.all(np.diff(traj.t) > 0) and np.allclose(traj.final, X32, atol=1e-15)


# ---------------------------------------------------------------- time and memory estimated on every path
def test_direct_summation_of_many_tokens_is_refused_with_its_estimate(no_integration):
    x0 = ue.sphere.uniform(100_000, 3, seed=0)
    model = ue.models.usa(1.0)
    steps = math.ceil(20.0 / 100 / solver.default_dt(model, None)) * 100
    per_eval = ue.dynamics.fastsum.estimated_seconds("direct", 100_000, 3, 1.0, 1e-10)
    with pytest.raises(ValueError, match="max_seconds = 3600") as err:
        ue.simulate(model, x0, None, t_max=20.0, summation="direct")
    msg = str(err.value)
    assert f"about {(4 * steps + 101) * per_eval:.2g} s" in msg
    assert "summation='fast'" in msg and "max_seconds=None" in msg


def test_fast_summation_is_refused_beyond_the_time_cap_too(no_integration):
    x0 = ue.sphere.uniform(100_000, 3, seed=0)
    with pytest.raises(ValueError, match="fast summation of n = 100000 tokens"):
        ue.simulate(ue.models.usa(1.0), x0, None, t_max=2e4, summation="fast", max_steps=None)


def test_a_time_cap_of_none_lifts_it(monkeypatch):
    monkeypatch.setattr(ue.dynamics.fastsum, "estimated_seconds", lambda *a, **k: 1e6)
    with pytest.raises(ValueError, match="max_seconds"):
        ue.simulate(ue.models.usa(1.0), X32, t_max=0.1)
    assert ue.simulate(ue.models.usa(1.0), X32, t_max=0.1, max_seconds=None).n_rhs > 0


class _RecordedBias:
    """A user-defined bias ``b = 1`` that records when its matrix is built."""

    def __init__(self):
        self.built = 0

    def matrix(self, xi):
        self.built += 1
        return np.ones((len(xi), len(xi)))


@pytest.mark.parametrize("user", [False, True], ids=["distance", "user"])
def test_a_bias_matrix_beyond_memory_is_refused_before_it_is_built(no_integration, monkeypatch, user):
    monkeypatch.setattr(solver, "_physical_memory", lambda: 2 ** 30)
    n = 20_000  # the dense bias alone: 3.2 GB
    bias = _RecordedBias()
    model = ue.Model(bias=bias) if user else ue.models.distance_bias(1.0, lam=1.0)
    built = []
    monkeypatch.setattr(type(model), "bias_matrix", lambda self, xi: built.append(1))
    with pytest.raises(ValueError, match=r"about 3\.2\d* GB .*memory"):
        ue.simulate(model, ue.sphere.uniform(n, 3, seed=0), np.arange(float(n)), t_max=1.0,
                    summation="direct")
    assert not built and not bias.built


@pytest.mark.parametrize("value,exc", [(0, ValueError), (-1.0, ValueError), ("long", TypeError)])
def test_max_seconds_is_validated(value, exc):
    with pytest.raises(exc, match="max_seconds must"):
        ue.simulate(ue.models.usa(1.0), X32, t_max=1.0, max_seconds=value)


@pytest.mark.parametrize("model", [ue.models.usa(2.0), ue.models.sa(2.0), ue.models.sa(6.0),
                                   ue.models.cosine_bias(omega=1.0)], ids=lambda m: f"{m.name}-{m.beta:g}")
@pytest.mark.parametrize("method", ["rk4", "dopri5"])
def test_usa_and_sa_raise_the_energy(model, method):
    xi = None if model.labels == "none" else np.linspace(0.0, 6.0, 32)
    traj = ue.simulate(model, X32, xi, t_max=10.0, method=method, n_frames=41)
    assert np.all(np.diff(traj.energy) >= -1e-10 * np.max(np.abs(traj.energy)))
    assert traj.energy[-1] > traj.energy[0]


def test_unrotated_values_variant_is_not_checked():
    # the variant is not a gradient flow: its energy does fall, and that is no error
    model = ue.models.rope(3.0, (1.0,), 3, rotate_values=False)
    traj = ue.simulate(model, ue.sphere.uniform(16, 3, seed=0), np.arange(16.0), t_max=20.0, n_frames=41)
    assert np.min(np.diff(traj.energy)) < -1e-3


# ---------------------------------------------------------------- Dormand-Prince rejects non-finite trial steps
def test_dopri5_rejects_a_non_finite_trial_step():
    # the first trial step, 0.5 at rate e^5 = 148, overflows; the solver must shrink it, not give up
    traj = ue.simulate(ue.models.usa(5.0), X32, t_max=20.0, dt=0.5, method="dopri5", n_frames=11)
    assert np.all(np.isfinite(traj.x))
    assert ue.diagnostics.diameter(traj.final) < 1e-3


class _NaNFirst:
    """A zero velocity field that is NaN on its first ``bad`` evaluations."""

    def __init__(self, bad):
        self.calls, self.bad = 0, bad
        self.mobile, self.has_frozen = np.ones(1, dtype=bool), False

    def __call__(self, yt, out):
        self.calls += 1
        out[:] = np.nan if self.calls <= self.bad else 0.0
        return out


def test_dopri5_status_after_non_finite_trials():
    y = np.ascontiguousarray(X32[:4].T)
    dopri5 = integrators.METHODS["dopri5"]
    control = integrators.Control(rtol=1e-8, atol=1e-10, h_min=1e-6)
    res = dopri5.advance(y.copy(), 0.0, 1.0, 0.5, _NaNFirst(bad=7), control)
    assert res.outcome is integrators.Outcome.OK and res.t == 1.0 and res.rejected == 1
    assert res.accepted >= 1 and res.n_rhs == 7 * (res.accepted + res.rejected)
    res = dopri5.advance(y.copy(), 0.0, 1.0, 0.5, _NaNFirst(bad=10 ** 9), control)
    assert res.outcome is integrators.Outcome.NONFINITE_TRIALS
    assert res.accepted == 0 and res.h < 1e-6
    assert "non-finite" in res.outcome.message


def test_dopri5_minimum_step_is_checked_on_rejections_only():
    # a tiny first step is the user's choice; accepted steps grow it by up to 5 each
    traj = ue.simulate(ue.models.usa(1.0), X32, t_max=100.0, dt=1e-12, method="dopri5", n_frames=2)
    assert ue.diagnostics.diameter(traj.final) < 1e-6


def test_dopri5_failure_messages_are_specific_to_the_method():
    with pytest.raises(ue.IntegrationError) as err:
        ue.simulate(ue.models.usa(5.0), X32[:16], t_max=1.0, method="dopri5", rtol=1e-300, atol=1e-300,
                    n_frames=2)
    msg = str(err.value)
    assert "Dormand-Prince could not meet its tolerances" in msg and "loosen rtol and atol" in msg
    assert "dopri5" not in msg


# ---------------------------------------------------------------- the energy does not overflow
def test_energy_of_a_collapsed_state_at_beta_700():
    # n^2 e^700 overflows for n > 133; E = e^700 / (2 * 700) does not
    x = np.tile([0.0, 0.6, 0.8], (200, 1))
    assert ue.energy(ue.models.usa(700.0), x) == pytest.approx(math.exp(700.0) / 1400.0, rel=1e-12)
    xi = np.arange(200.0)
    b = np.exp(-0.01 * np.abs(xi[:, None] - xi[None, :]))
    expected = math.exp(700.0) / 1400.0 * b.mean()
    assert ue.energy(ue.models.distance_bias(700.0, lam=0.01), x, xi) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("model", [ue.models.usa(3.0), ue.models.distance_bias(2.0, lam=0.5),
                                   ue.models.cosine_bias(2.0, omega=1.0, profile="exp")], ids=lambda m: m.name)
def test_scaled_energy_agrees_with_the_reference(model):
    from usaav_edu.dynamics.energy import energy_scaled

    xi = None if model.labels == "none" else np.linspace(0.0, 8.0, 32)
    prepared = model.kernel(X32, xi)
    expected = ue.dynamics.energy_reference(model, X32, prepared.xi)
    got = energy_scaled(prepared.y0, prepared.bias, model.beta)
    assert got == pytest.approx(expected, rel=1e-13)


def test_energy_beyond_the_double_range_raises():
    from usaav_edu.dynamics.energy import energy_scaled

    # e^720 / 1440 = 2.4e309 > 1.8e308
    y = np.tile([[1.0], [0.0], [0.0]], (1, 4))
    with pytest.raises(OverflowError, match="exceeds the largest double"):
        energy_scaled(y, None, 720.0)


# ---------------------------------------------------------------- energy_bound names its argument
def test_energy_bound_with_a_scalar_xi_names_xi():
    rope = ue.models.rope(1.0, (1.0,), 3)
    with pytest.raises(TypeError, match="xi must be a 1-D array"):
        ue.energy_bound(rope, 5.0)
    with pytest.raises(ValueError, match="n must equal the number of labels"):
        ue.energy_bound(rope, np.arange(4.0), n=5)


# ---------------------------------------------------------------- on_failure="return": the frames so far
def test_a_run_beyond_max_steps_returns_its_frames_so_far_on_request():
    kw = {"t_max": 2.0, "n_frames": 5, "method": "dopri5", "rtol": 1e-12, "atol": 1e-14}
    full = ue.simulate(ue.models.usa(1.0), X32, None, max_steps=None, **kw)
    with pytest.raises(ue.IntegrationError, match="used all max_steps = 30 steps") as err:
        ue.simulate(ue.models.usa(1.0), X32, None, max_steps=30, **kw)
    part = ue.simulate(ue.models.usa(1.0), X32, None, max_steps=30, on_failure="return", **kw)
    assert part.status is ue.particles.Status.MAX_STEPS and not part.completed
    assert part.message == str(err.value)
    f = len(part.t)
    assert 1 <= f < 5 and part.x.shape == (f, 32, 3) and part.energy.shape == (f,)
    assert np.array_equal(part.t, full.t[:f]) and np.array_equal(part.x, full.x[:f])
    assert part.steps_accepted + part.steps_rejected == 30
    assert full.status is ue.particles.Status.COMPLETED and full.completed
    assert full.message == ue.particles.Status.COMPLETED.message


def _nonfinite_after(monkeypatch, t_bad):
    """RK4 that reaches a state that is not finite in the first frame ending after ``t_bad``."""
    rk4 = integrators.METHODS["rk4"]
    exact = rk4.advance

    def advance(yt, t, t_end, h, field, control, controller=None, work=None):
        res = exact(yt, t, t_end, h, field, control, controller, work)
        if t_end <= t_bad:
            return res
        yt[...] = np.nan
        return res._replace(outcome=integrators.Outcome.NONFINITE)

    monkeypatch.setattr(rk4, "advance", advance)


def test_a_state_that_is_not_finite_returns_the_frames_before_it_on_request(monkeypatch):
    kw = {"t_max": 1.0, "n_frames": 11}
    full = ue.simulate(ue.models.usa(1.0), X32, None, **kw)
    _nonfinite_after(monkeypatch, 0.45)
    with pytest.raises(ue.IntegrationError, match="RK4 reached a non-finite state"):
        ue.simulate(ue.models.usa(1.0), X32, None, **kw)
    part = ue.simulate(ue.models.usa(1.0), X32, None, on_failure="return", **kw)
    assert part.status is ue.particles.Status.FAILED
    assert part.message.startswith("RK4 reached a non-finite state between t = 0.4 and t = 0.5")
    assert np.array_equal(part.t, full.t[:5]) and np.array_equal(part.x, full.x[:5])
    assert np.all(np.isfinite(part.x)) and np.array_equal(part.energy, full.energy[:5])


def test_an_energy_identity_that_fails_returns_the_frames_before_it_on_request(monkeypatch):
    _overshooting(monkeypatch, 0.02)
    part = ue.simulate(ue.models.usa(1.0), X32, None, t_max=1.0, n_frames=11, on_failure="return")
    assert part.status is ue.particles.Status.FAILED and "energy identity" in part.message
    assert len(part.t) == len(part.x) == len(part.energy) < 11


def test_on_failure_is_checked_and_refusals_before_the_run_still_raise(no_integration):
    with pytest.raises(ValueError, match="on_failure must be one of"):
        ue.simulate(ue.models.usa(1.0), X32, None, t_max=1.0, on_failure="ignore")
    with pytest.raises(ue.errors.StepTooLargeError):
        ue.simulate(ue.models.usa(1.0), X32, None, t_max=10.0, dt=1.0, n_frames=2,
                    on_failure="return")


# ---------------------------------------------------------------- tol, the old name of summation_tol
def test_tol_still_sets_the_summation_tolerance_with_a_warning():
    model, x0 = ue.models.usa(1.0), ue.sphere.uniform(64, 3, seed=0)
    kw = {"t_max": 0.1, "n_frames": 2, "summation": "fast"}
    new = ue.simulate(model, x0, None, summation_tol=1e-4, **kw)
    with pytest.warns(DeprecationWarning, match=r"simulate\(\.\.\., tol=\.\.\.\) is deprecated.*summation_tol"):
        old = ue.simulate(model, x0, None, tol=1e-4, **kw)
    assert np.array_equal(old.x, new.x) and old.error_bound == new.error_bound
    assert new.error_bound > ue.simulate(model, x0, None, **kw).error_bound  # the value is read
    with pytest.warns(DeprecationWarning, match=r"energy\(\.\.\., tol=\.\.\.\) is deprecated"):
        e_old = ue.energy(model, x0, summation="fast", tol=1e-4)
    assert e_old == ue.energy(model, x0, summation="fast", summation_tol=1e-4)


def test_a_bad_tol_is_refused_under_its_own_name():
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="^tol must be > 0"):
        ue.simulate(ue.models.usa(1.0), X32, None, t_max=0.1, tol=0.0)


@pytest.mark.parametrize("call", [
    lambda: ue.simulate(ue.models.usa(1.0), X32, None, t_max=0.1, summation_tol=1e-6, tol=1e-6),
    lambda: ue.energy(ue.models.usa(1.0), X32, summation_tol=1e-6, tol=1e-6)],
    ids=["simulate", "energy"])
def test_summation_tol_and_tol_together_are_a_type_error_naming_both(call):
    with pytest.raises(TypeError, match="got both summation_tol and tol"):
        call()
