"""The solver fails loudly: work estimated up front, progress within a frame, the energy never falls,
Dormand-Prince rejects non-finite trial steps, the energy does not overflow, errors name their argument."""

import math
import re

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu.dynamics import integrators

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
        ue.simulate(ue.models.usa(6.0), ue.sphere.uniform(32, 3, seed=0), t_max=2.0, dt=0.05)
    assert "smaller dt" in str(err.value) and "method='dopri5'" in str(err.value)


@pytest.mark.parametrize("model", [ue.models.usa(2.0), ue.models.sa(2.0), ue.models.sa(6.0),
                                   ue.models.cosine_bias(1.0)], ids=lambda m: f"{m.name}-{m.beta:g}")
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
    assert ue.energy(ue.models.distance_bias(700.0, 0.01), x, xi) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("model", [ue.models.usa(3.0), ue.models.distance_bias(2.0, 0.5),
                                   ue.models.cosine_bias(1.0, 2.0, profile="exp")], ids=lambda m: m.name)
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
