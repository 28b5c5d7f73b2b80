"""Noise: the stochastic Heun scheme on spheres (particles) and the diffusion of the density.

Particles: ``dy_i = v_i dt + sigma P_{y_i} o dW_i`` (Stratonovich); on the circle one scalar
Brownian motion per token, ``dy_i = v_i dt + sigma J y_i o dB_i``.  Densities on the circle:
``d_t f + d_theta (f w) = (sigma^2 / 2) d_theta^2 f``.
"""

import json

import numpy as np
import pytest
from scipy.special import iv

import usaav_edu as ue
from usaav_edu.dynamics.integrate import steppers
from usaav_edu.errors import IntegrationError

HEUN = steppers.METHODS["heun"]


# ---------------------------------------------------------------- an independent NumPy model
def usa_velocity(y, beta, blocks=1):
    """USA's velocity ``v_i = (1/n) P_{y_i} sum_j e^{beta <y_i, y_j>} y_j`` for ``(d, B n)``
    states holding ``blocks`` independent systems of ``n`` tokens side by side."""
    d = y.shape[0]
    z = y.reshape(d, blocks, -1)
    n = z.shape[2]
    gram = np.einsum("kpi,kpj->pij", z, z)
    a = np.einsum("pij,kpj->kpi", np.exp(beta * gram), z) / n
    v = a - np.einsum("kpi,kpi->pi", z, a)[None] * z
    return v.reshape(d, -1)


class NumpyField:
    """``field(y, out)``: the NumPy USA velocity of ``blocks`` independent systems."""

    has_frozen = False

    def __init__(self, beta, blocks=1, d=3, n=1):
        self.beta, self.blocks = beta, blocks
        self.mobile = np.ones(blocks * n, dtype=bool)

    def __call__(self, y, out):
        out[...] = usa_velocity(y, self.beta, self.blocks)
        return out


class ZeroField(NumpyField):
    def __call__(self, y, out):
        out[...] = 0.0
        return out


class GivenIncrements:
    """A noise source that hands out given increments, one array per step."""

    def __init__(self, sigma, increments):
        self.sigma, self.increments, self.k = sigma, increments, 0

    def draw(self, h):
        dw = self.increments[self.k]
        self.k += 1
        return dw


def noise_term(y, dw):
    """``P_y dW`` (rows of ``dw`` as ``y``) or, for one row, ``J y dB`` on the circle."""
    if dw.shape[0] == 1:
        return np.vstack([-y[1], y[0]]) * dw
    return dw - np.sum(y * dw, axis=0) * y


def heun_reference(y, h, sigma, dw, f):
    """One stochastic Heun step with the retracted predictor, written out in NumPy."""
    k0 = f(y)
    pred = y + h * k0 + sigma * noise_term(y, dw)
    pred /= np.linalg.norm(pred, axis=0)
    new = y + 0.5 * h * (k0 + f(pred)) + 0.5 * sigma * (noise_term(y, dw) + noise_term(pred, dw))
    return new / np.linalg.norm(new, axis=0)


def unit_columns(rng, d, n):
    y = rng.standard_normal((d, n))
    return y / np.linalg.norm(y, axis=0)


# ---------------------------------------------------------------- one step
@pytest.mark.parametrize("d", [2, 3, 5])
def test_one_heun_step_is_the_predictor_corrector_with_the_same_increments(d):
    rng = np.random.default_rng(d)
    n, beta, h, sigma = 7, 1.3, 0.05, 0.7
    y = unit_columns(rng, d, n)
    dw = rng.standard_normal((1 if d == 2 else d, n)) * np.sqrt(h)
    expected = heun_reference(y, h, sigma, dw, lambda z: usa_velocity(z, beta))
    field = steppers.GaugeField(ue.dynamics.rhs.kernel_params(beta=beta))
    got = y.copy()
    res = HEUN.advance(got, 0.0, h, h, field, steppers.Control(noise=GivenIncrements(sigma, [dw])))
    assert res.outcome is steppers.Outcome.OK and res.n_rhs == 2
    assert np.max(np.abs(got - expected)) < 1e-12


def test_without_noise_heun_is_the_trapezoidal_rule_of_order_two():
    rng = np.random.default_rng(0)
    y0 = unit_columns(rng, 3, 6)
    field = NumpyField(1.0, n=6)

    def run(h):
        y = y0.copy()
        HEUN.advance(y, 0.0, 1.0, h, field)
        return y

    ref = y0.copy()
    steppers.METHODS["rk4"].advance(ref, 0.0, 1.0, 1e-3, field)
    errors = [np.max(np.abs(run(h) - ref)) for h in (0.1, 0.05, 0.025)]
    slopes = np.log2(np.array(errors[:-1]) / errors[1:])
    assert np.all(np.abs(slopes - 2.0) < 0.15), slopes


# ---------------------------------------------------------------- strong order
def strong_errors(d, sigma, beta, paths, n, fine_exponent, coarse_exponents, seed):
    """RMS errors at T = 1 of coarse runs against a fine run driven by the same path."""
    rng = np.random.default_rng(seed)
    rows = 1 if d == 2 else d
    y0 = unit_columns(rng, d, paths * n)
    fine = 2 ** fine_exponent
    h_f = 1.0 / fine
    dws = rng.standard_normal((fine, rows, paths * n)) * np.sqrt(h_f)
    field = NumpyField(beta, paths, d, n)

    def run(steps):
        incs = dws.reshape(steps, fine // steps, rows, -1).sum(axis=1)
        y = y0.copy()
        res = HEUN.advance(y, 0.0, 1.0, 1.0 / steps, field,
                           steppers.Control(noise=GivenIncrements(sigma, incs)))
        assert res.outcome is steppers.Outcome.OK
        return y

    ref = run(fine)
    hs, errs = [], []
    for e in coarse_exponents:
        y = run(2 ** e)
        per_path = np.sum((y - ref) ** 2, axis=0).reshape(paths, n).sum(axis=1)
        hs.append(2.0 ** -e)
        errs.append(np.sqrt(np.mean(per_path)))
    return np.array(hs), np.array(errs)


def fitted_order(hs, errs):
    return np.polyfit(np.log(hs), np.log(errs), 1)[0]


def test_strong_order_one_half_on_the_sphere_s2():
    """Non-commuting noise fields P_y e_k: strong order 1/2 (stated in StochasticHeun)."""
    hs, errs = strong_errors(d=3, sigma=0.8, beta=1.0, paths=64, n=4, fine_exponent=14,
                             coarse_exponents=range(4, 9), seed=3)
    assert abs(fitted_order(hs, errs) - 0.5) < 0.1, (hs, errs)


def test_strong_order_one_on_the_circle():
    """One scalar Brownian motion per token on the circle (commutative): strong order 1."""
    hs, errs = strong_errors(d=2, sigma=0.8, beta=1.0, paths=64, n=4, fine_exponent=14,
                             coarse_exponents=range(4, 9), seed=4)
    assert abs(fitted_order(hs, errs) - 1.0) < 0.1, (hs, errs)


# ---------------------------------------------------------------- weak check: Brownian motion
def mean_cosine(d, n, sigma, t, h, seed):
    """The sample mean and its standard error of <y(t), y(0)> under the noise alone."""
    y0 = unit_columns(np.random.default_rng(seed), d, n)
    y = y0.copy()
    noise = steppers.BrownianIncrements(sigma, np.random.default_rng(seed + 1), d, n)
    HEUN.advance(y, 0.0, t, h, ZeroField(0.0, 1, d, n), steppers.Control(noise=noise))
    dots = np.sum(y * y0, axis=0)
    return dots.mean(), dots.std() / np.sqrt(n)


@pytest.mark.parametrize("d", [2, 3, 4])
def test_noise_alone_is_brownian_motion_on_the_sphere(d):
    """E <x(t), x(0)> = exp(-sigma^2 (d - 1) t / 2) for Brownian motion on S^{d-1}
    (generator (sigma^2 / 2) Laplacian, whose eigenvalue on <x, a> is -(d - 1)); the
    scheme's weak error is O(h) (measured 0.55 h at sigma = 0.9, t = 1, d = 3)."""
    sigma, t, h = 0.9, 1.0, 0.005
    mean, err = mean_cosine(d, 50_000, sigma, t, h, seed=10 * d)
    exact = np.exp(-sigma ** 2 * (d - 1) * t / 2)
    assert abs(mean - exact) < 5 * err + h, (mean, exact, err)


def test_the_weak_error_is_of_order_one():
    """The bias of E <x(t), x(0)> halves with the step (common random numbers)."""
    sigma, t = 0.9, 1.0
    exact = np.exp(-sigma ** 2 * t)
    biases = [mean_cosine(3, 100_000, sigma, t, h, seed=1)[0] - exact for h in (0.04, 0.02)]
    assert biases[1] > 0 and 1.6 < biases[0] / biases[1] < 2.4, biases


def test_simulate_noise_without_interaction_is_brownian_motion():
    """Tokens that do not see each other (b_ij = e^{-1000 |i - j|} = 0): only the noise moves
    them, in gauge coordinates as in contents."""
    n, sigma = 3000, 0.7
    model = ue.models.distance_bias(1.0, lam=1000.0)
    x0 = ue.sphere.uniform(n, 3, seed=0)
    traj = ue.simulate(model, x0, np.arange(n, dtype=float), t_max=1.0, dt=0.01,
                       method="heun", noise=sigma, seed=1, n_frames=3)
    for f, t in enumerate(traj.t):
        dots = np.sum(traj.x[f] * x0, axis=1)
        exact = np.exp(-sigma ** 2 * t)
        assert abs(dots.mean() - exact) < 5 * dots.std() / np.sqrt(n) + 3e-3


# ---------------------------------------------------------------- simulate with noise
@pytest.fixture(scope="module")
def noisy():
    x0 = ue.sphere.uniform(12, 3, seed=0)
    return x0, ue.simulate(ue.models.usa(1.0), x0, t_max=1.0, method="heun", noise=0.4,
                           seed=7, n_frames=3)


def test_noisy_run_records_noise_seed_and_method(noisy):
    _, traj = noisy
    assert traj.method == "heun" and traj.noise == 0.4 and traj.seed == 7
    assert traj.provenance.noise == 0.4 and traj.dt is not None
    assert np.max(np.abs(np.linalg.norm(traj.x, axis=2) - 1.0)) < 1e-14


def test_the_seed_repeats_the_path_and_another_seed_does_not(noisy):
    x0, traj = noisy
    again = ue.simulate(ue.models.usa(1.0), x0, t_max=1.0, method="heun", noise=0.4, seed=7,
                        n_frames=3)
    other = ue.simulate(ue.models.usa(1.0), x0, t_max=1.0, method="heun", noise=0.4, seed=8,
                        n_frames=3)
    assert np.array_equal(again.x, traj.x)
    assert np.max(np.abs(other.x[-1] - traj.x[-1])) > 1e-3


def test_without_a_seed_a_fresh_one_is_drawn_and_recorded():
    x0 = ue.sphere.uniform(6, 3, seed=0)
    m = ue.models.usa(1.0)
    first = ue.simulate(m, x0, t_max=0.5, method="heun", noise=0.4, n_frames=2)
    assert isinstance(first.seed, int)
    again = ue.simulate(m, x0, t_max=0.5, method="heun", noise=0.4, n_frames=2, seed=first.seed)
    assert np.array_equal(first.x, again.x)


def test_the_noise_is_not_the_stream_that_drew_x0():
    """seed=0 drew x0 = uniform(n, d, seed=0); the noise of seed=0 is another stream."""
    x0 = ue.sphere.uniform(6, 3, seed=0)
    z = np.random.default_rng(0).standard_normal((6, 3))
    noise = ue.particles.solver.brownian_rng(0).standard_normal((3, 6))
    assert not np.allclose(np.abs(noise.T), np.abs(z))
    assert np.allclose(x0, z / np.linalg.norm(z, axis=1, keepdims=True))


def test_frozen_tokens_get_no_noise():
    x0 = ue.sphere.uniform(8, 3, seed=2)
    frozen = np.arange(8) < 3
    traj = ue.simulate(ue.models.usa(1.0), x0, t_max=1.0, method="heun", noise=0.8, seed=1,
                       frozen=frozen, n_frames=2)
    assert np.max(np.abs(traj.x[-1, :3] - x0[:3])) < 1e-15
    assert np.min(np.linalg.norm(traj.x[-1, 3:] - x0[3:], axis=1)) > 1e-3


def test_the_energy_checks_are_off_with_noise():
    """Strong noise spreads a cluster: the energy falls, and the run is not refused."""
    x0 = np.tile([0.0, 0.0, 1.0], (16, 1))
    traj = ue.simulate(ue.models.usa(1.0), x0, t_max=1.0, method="heun", noise=2.0, seed=0,
                       n_frames=3)
    assert traj.energy[-1] < traj.energy[0] - 0.1


def test_heun_without_noise_keeps_the_energy_checks(monkeypatch):
    x0 = ue.sphere.uniform(10, 3, seed=0)
    traj = ue.simulate(ue.models.usa(1.0), x0, t_max=4.0, method="heun", n_frames=5)
    assert traj.noise == 0.0 and np.all(np.diff(traj.energy) > 0)
    exact = HEUN.advance
    spread = np.ascontiguousarray(ue.sphere.uniform(10, 3, seed=5).T)

    def spreading(yt, *args, **kwargs):
        """The exact step, then the tokens moved apart: the energy falls."""
        res = exact(yt, *args, **kwargs)
        yt[:] = spread
        return res

    monkeypatch.setattr(HEUN, "advance", spreading)
    with pytest.raises(IntegrationError, match="the energy fell"):
        ue.simulate(ue.models.usa(1.0), np.tile([0.0, 0.0, 1.0], (10, 1)), t_max=1.0,
                    method="heun", n_frames=3)


@pytest.mark.parametrize("model, d", [
    (ue.models.sa(2.0), 3),
    (ue.models.rope(1.0, (1.0,), 3), 3),
    (ue.models.rope(1.0, (1.0,), 3, rotate_values=False), 3),
    (ue.models.rope(1.0, (1.0,), 2), 2),
    (ue.models.usa(1.0, profile="linear"), 4),
])
def test_noise_runs_for_every_kind_of_model_and_keeps_the_tokens_on_the_sphere(model, d):
    x0 = ue.sphere.uniform(10, d, seed=1)
    xi = None if model.labels is None else np.arange(10.0)
    traj = ue.simulate(model, x0, xi, t_max=0.5, method="heun", noise=0.6, seed=2, n_frames=3)
    assert traj.completed and traj.noise == 0.6
    assert np.max(np.abs(np.linalg.norm(traj.x, axis=2) - 1.0)) < 1e-14
    assert np.min(np.linalg.norm(traj.x[-1] - x0, axis=1)) > 1e-3


def test_noise_works_with_fast_summation():
    x0 = ue.sphere.uniform(64, 3, seed=0)
    m = ue.models.usa(1.0)
    kw = dict(t_max=0.5, method="heun", noise=0.3, seed=3, n_frames=2)
    fast = ue.simulate(m, x0, summation="fast", **kw)
    direct = ue.simulate(m, x0, summation="direct", **kw)
    assert fast.summation == "fast" and fast.noise == 0.3
    assert np.max(np.abs(fast.x - direct.x)) < 1e-8


def test_the_work_estimate_counts_two_evaluations_per_heun_step():
    x0 = ue.sphere.uniform(8, 3, seed=0)
    with pytest.raises(ValueError, match="Heun steps"):
        ue.simulate(ue.models.usa(1.0), x0, t_max=100.0, dt=0.01, method="heun", noise=0.1,
                    max_steps=1000)
    traj = ue.simulate(ue.models.usa(1.0), x0, t_max=1.0, dt=0.1, method="heun", noise=0.1,
                       n_frames=2, seed=0)
    assert traj.steps_accepted == 10 and traj.n_rhs == 20
    # the time estimate: 2 evaluations a step and one energy a frame, 2 * 10 + 2
    with pytest.raises(ue.errors.WorkEstimateError, match="about 22 velocity evaluations"):
        ue.simulate(ue.models.usa(1.0), x0, t_max=1.0, dt=0.1, method="heun", noise=0.1,
                    n_frames=2, seed=0, max_seconds=1e-12)


def test_a_heun_step_beyond_its_stability_bound_is_refused():
    x0 = ue.sphere.uniform(8, 3, seed=0)
    with pytest.raises(ue.errors.StepTooLargeError, match="Heun's stability bound"):
        ue.simulate(ue.models.usa(1.0), x0, t_max=1.0, dt=0.3, method="heun", noise=0.1,
                    n_frames=2)


def test_save_and_load_keep_the_noise_and_old_files_load_without_it(tmp_path, noisy):
    _, traj = noisy
    path = tmp_path / "noisy.npz"
    traj.save(path)
    back = ue.Trajectory.load(path)
    assert back.noise == 0.4 and back.seed == 7 and back.method == "heun"
    assert np.array_equal(back.x, traj.x)
    meta = json.loads(json.dumps(traj.metadata()))
    del meta["noise"]
    old = tmp_path / "old.npz"
    frozen = np.zeros(traj.n, dtype=bool)
    np.savez(old, t=traj.t, x=traj.x, xi=traj.xi, energy=traj.energy, frozen=frozen,
             metadata=np.array(json.dumps(meta)))
    assert ue.Trajectory.load(old).noise == 0.0
    meta["noise"] = -1.0
    np.savez(old, t=traj.t, x=traj.x, xi=traj.xi, energy=traj.energy, frozen=frozen,
             metadata=np.array(json.dumps(meta)))
    with pytest.raises(ValueError, match="noise"):
        ue.Trajectory.load(old)


@pytest.mark.parametrize("kw, error, match", [
    (dict(noise=-0.1, method="heun"), ValueError, "noise must be >= 0"),
    (dict(noise=float("nan"), method="heun"), ValueError, "noise must be finite"),
    (dict(noise=float("inf"), method="heun"), ValueError, "noise must be finite"),
    (dict(noise="0.1", method="heun"), TypeError, "noise must be a real number"),
    (dict(noise=0.1, method="heun", seed=1.5), TypeError, "seed must be an int"),
    (dict(noise=0.1), ValueError, "noise > 0 needs method='heun'"),
    (dict(noise=0.1, method="dopri5"), ValueError, "noise > 0 needs method='heun'"),
])
def test_simulate_refuses_bad_noise(kw, error, match):
    x0 = ue.sphere.uniform(4, 3, seed=0)
    with pytest.raises(error, match=match):
        ue.simulate(ue.models.usa(1.0), x0, t_max=0.1, n_frames=2, **kw)


# ---------------------------------------------------------------- the density with diffusion
def mode_density(m, k, eps):
    """``(1 + 2 eps cos(k theta)) / (2 pi)``, whose coefficient ``c_k`` is ``eps``."""
    theta = ue.meanfield.grid(m)
    return (1.0 + 2.0 * eps * np.cos(k * theta)) / (2.0 * np.pi)


def measured_rate(run, k):
    c = np.abs(run.coefficients[:, k])
    return np.log(c[-1] / c[0]) / run.t[-1]


@pytest.mark.parametrize("sigma", [0.5, 1.5])
def test_mode_one_of_kuramoto_grows_or_decays_at_the_exact_rate(sigma):
    """Linear profile, Phi_1 = pi: about the uniform density
    dc_1/dt = (Phi_1 / (2 pi)) c_1 - (sigma^2 / 2) c_1 = ((1 - sigma^2) / 2) c_1,
    so the uniform density is stable iff sigma^2 > 1."""
    eps = 1e-5
    run = ue.meanfield.solve(ue.models.usa(profile="linear"), mode_density(32, 1, eps), 2.0,
                             n_frames=3, rtol=1e-11, atol=1e-14, noise=sigma)
    rate = (1.0 - sigma ** 2) / 2.0
    assert abs(measured_rate(run, 1) - rate) < 1e-6
    assert run.noise == sigma


def test_mode_two_of_kuramoto_obeys_the_heat_equation():
    """The linear profile has no mode 2 (Phi_2 = 0): c_2 decays at 2 sigma^2 (heat equation)."""
    sigma = 0.6
    run = ue.meanfield.solve(ue.models.usa(profile="linear"), mode_density(32, 2, 1e-5), 1.0,
                             n_frames=3, rtol=1e-11, atol=1e-14, noise=sigma)
    assert abs(measured_rate(run, 2) + 2.0 * sigma ** 2) < 1e-6


@pytest.mark.parametrize("k", [1, 3])
def test_mode_k_of_usa_grows_at_k_ik_over_beta_minus_the_heat_rate(k):
    """Exp profile, Phi_k = 2 pi I_k(beta) / beta: with w_k = i k Phi_k c_k about the uniform
    density, dc_k/dt = -i k w_k / (2 pi) - (sigma^2 / 2) k^2 c_k
    = k^2 (I_k(beta) / beta - sigma^2 / 2) c_k."""
    beta, sigma = 2.0, 0.4
    run = ue.meanfield.solve(ue.models.usa(beta), mode_density(48, k, 1e-5), 1.0, n_frames=3,
                             rtol=1e-11, atol=1e-14, noise=sigma)
    rate = k ** 2 * (iv(k, beta) / beta - sigma ** 2 / 2.0)
    assert abs(measured_rate(run, k) - rate) < 1e-6


def test_mass_is_conserved_to_round_off_and_the_energy_may_fall():
    theta = ue.meanfield.grid(64)
    f0 = np.exp(2.0 * np.cos(theta))
    f0 /= f0.mean() * 2.0 * np.pi
    run = ue.meanfield.solve(ue.models.usa(profile="linear"), f0, 2.0, n_frames=5, noise=1.5)
    assert np.max(np.abs(run.mass - 1.0)) < 1e-14
    assert run.energy[-1] < run.energy[0]  # the density spreads (sigma^2 > 1)


def test_mass_is_conserved_per_label_with_noise():
    model = ue.models.rope(1.0, (1.0,), 2)
    theta = ue.meanfield.grid(32)
    f0 = np.array([(1.0 + 0.5 * np.cos(theta - s)) / (2 * np.pi) for s in (0.0, 1.0)])
    run = ue.meanfield.solve(model, f0, 1.0, xi=[0.0, 1.0], n_frames=3, noise=0.7)
    assert np.max(np.abs(run.mass - 1.0)) < 1e-14


def test_the_density_work_estimate_counts_the_diffusion():
    f0 = mode_density(256, 1, 0.1)
    model = ue.models.usa(profile="linear")
    # (m/2 - 1)^2 sigma^2 / 2 / 3.3 = 127^2 * 2 / 3.3: about 9800 steps per unit time
    with pytest.raises(ValueError, match="diffusion of noise = 2"):
        ue.meanfield.solve(model, f0, 1.0, noise=2.0, max_steps=5000)
    run = ue.meanfield.solve(model, f0, 0.05, noise=2.0, n_frames=2)
    assert run.steps_accepted >= 0.05 * 127 ** 2 * 2.0 / 3.3 * 0.5


@pytest.mark.parametrize("noise, error", [(-1.0, ValueError), (float("nan"), ValueError),
                                          ("a", TypeError)])
def test_solve_refuses_bad_noise(noise, error):
    with pytest.raises(error, match="noise"):
        ue.meanfield.solve(ue.models.usa(1.0), mode_density(16, 1, 0.1), 1.0, noise=noise)


def test_noise_with_pre_ln_is_refused():
    with pytest.raises(ValueError, match="layer_norm='pre'"):
        ue.simulate(ue.models.usa(1.0, layer_norm="pre"), ue.sphere.uniform(8, 3, seed=0),
                    t_max=0.1, method="heun", noise=0.1, seed=0)
