"""The Dormand-Prince floor of a collapsed cluster's diameter, and the step cap that lifts it.

The error norm of Dormand-Prince is relative to the state, whose entries are of order 1 on the
sphere.  Once the tokens collapse, the step grows to the stability limit and the accepted local
errors (about ``rtol``) are not contracted away: the diameter floors near ``rtol``.  A cap
``dt_max`` inside the stability region (``h * rate < 3.3``, the rate ``e^beta`` for USA with
``b = 1``) keeps every mode contracting, and the diameter falls to round-off.
"""

import math

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu.dynamics.integrate import steppers as integrators
from usaav_edu.errors import WorkEstimateError

EPS = np.finfo(np.float64).eps
BETA = 1.0
RATE = math.exp(BETA)  # a collapsed USA cluster contracts at e^beta mean_j b_ij = e^beta


def diameter(x):
    """``max_{i,j} |x_i - x_j|``."""
    diff = x[:, None, :] - x[None, :, :]
    return float(np.sqrt((diff ** 2).sum(-1)).max())


@pytest.fixture(scope="module")
def x0():
    return ue.sphere.uniform(16, 3, seed=1)


def _final_diameter(x0, **kw):
    traj = ue.simulate(ue.models.usa(beta=BETA), x0, t_max=40.0, n_frames=3, method="dopri5",
                       rtol=1e-9, atol=1e-11, **kw)
    assert traj.status.name == "COMPLETED"
    return traj


def test_the_floor_exists_without_a_cap(x0):
    # measured 1.5e-9 (between 3e-10 and 3e-9 over t = 20 .. 80): far above round-off
    assert diameter(_final_diameter(x0).x[-1]) > 1e-12


def test_the_cap_reaches_round_off(x0):
    traj = _final_diameter(x0, dt_max=2.0 / RATE)
    assert diameter(traj.x[-1]) < 1e-13
    assert diameter(traj.x[-1]) < 100 * EPS
    # RK4 at its default step reaches the same round-off
    rk4 = ue.simulate(ue.models.usa(beta=BETA), x0, t_max=40.0, n_frames=3)
    assert diameter(rk4.x[-1]) < 100 * EPS


def test_the_adaptive_stepper_keeps_the_first_trial_step_within_h_max(x0):
    model = ue.models.usa(beta=BETA)
    kernel = model.kernel(x0, None)
    field = integrators.GaugeField(kernel.params)
    y = np.ascontiguousarray(kernel.y0).copy()
    times = [0.0]
    control = integrators.Control(1e-6, 1e-8, report=lambda t: times.append(t) and False)
    stepper = integrators.METHODS["dopri5"]
    ctrl = stepper.controller(h_max=0.1)
    res = stepper.advance(y, 0.0, 2.0, 1.0, field, control, ctrl)  # first trial h = 1.0
    assert res.outcome is integrators.Outcome.OK
    steps = np.diff(times)
    assert steps.max() <= 0.1 * (1 + 1e-12)
    assert res.h <= 0.1


def test_an_absurd_cap_is_refused_before_the_run(x0):
    # 100 / 1e-9 = 1e11 steps, far beyond max_steps = 10^6
    with pytest.raises(ValueError, match="dt_max"):
        ue.simulate(ue.models.usa(beta=BETA), x0, t_max=100.0, method="dopri5", dt_max=1e-9)
    # without a step cap the time estimate refuses it
    with pytest.raises(WorkEstimateError):
        ue.simulate(ue.models.usa(beta=BETA), x0, t_max=100.0, method="dopri5", dt_max=1e-9,
                    max_steps=None)


def test_the_estimate_counts_the_capped_steps():
    from usaav_edu.particles import solver
    p = solver._Rates(BETA, False, False, 1.0, False)
    free = solver._dopri5_steps(p, 100.0, 11)
    assert free == pytest.approx(10 + 100.0 * RATE / 3.3)
    assert solver._dopri5_steps(p, 100.0, 11, 1e-3) == pytest.approx(1e5)
    assert solver._dopri5_steps(p, 100.0, 11, 100.0) == pytest.approx(free)


@pytest.mark.parametrize("bad, error", [(-0.1, ValueError), (0.0, ValueError),
                                        (float("nan"), ValueError), (float("inf"), ValueError),
                                        ("0.1", TypeError), (True, TypeError)])
def test_bad_dt_max_is_refused(x0, bad, error):
    with pytest.raises(error, match="dt_max"):
        ue.simulate(ue.models.usa(beta=BETA), x0, t_max=1.0, method="dopri5", dt_max=bad)


def test_dt_max_with_rk4_is_refused(x0):
    with pytest.raises(ValueError, match="dt_max.*dopri5"):
        ue.simulate(ue.models.usa(beta=BETA), x0, t_max=1.0, dt_max=0.01)
