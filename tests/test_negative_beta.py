r"""Negative beta: the exponential profile :math:`\varphi'(s) = e^{\beta s}` with :math:`\beta < 0`.

The weights stay positive, so every pair still attracts and the flow is still the gradient
ascent of :math:`E = \frac{1}{2 n^2} \sum_{ij} b_{ij} e^{\beta s_{ij}} / \beta` (negative,
increasing and concave in :math:`s`): collapse is still its maximum, reached from a uniform
start at :math:`\beta = -2`; the farthest tokens weigh most.
"""

import math

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu.dynamics import energy as energy_mod
from usaav_edu.dynamics.fastsum.kernel import FastKernel
from usaav_edu.dynamics.rhs import velocity as kernel_velocity
from usaav_edu.meanfield import solver as mf
from usaav_edu.particles import solver

BETA = -2.0


def numpy_velocity(x, beta, b=None, sa=False):
    """``v_i = P_{x_i}((1/N_i) sum_j b_ij e^{beta <x_i, x_j>} x_j)``, ``N_i = n`` or ``Z_i``."""
    n = len(x)
    w = np.exp(beta * (x @ x.T)) * (1.0 if b is None else b)
    a = w @ x / (w.sum(axis=1, keepdims=True) if sa else n)
    return a - np.sum(a * x, axis=1, keepdims=True) * x


def numpy_energy(x, beta, b=None):
    """``E = (1/(2 n^2)) sum_ij b_ij e^{beta <x_i, x_j>} / beta``."""
    w = np.exp(beta * (x @ x.T)) * (1.0 if b is None else b)
    return float(w.sum()) / (2.0 * beta * len(x) ** 2)


def package_velocity(model, x, xi=None):
    kernel = model.kernel(x, xi)
    out = np.empty_like(kernel.y0)
    kernel_velocity(kernel.y0, kernel.params, out)
    return out.T


@pytest.fixture(scope="module")
def x32():
    return ue.sphere.uniform(32, 3, seed=0)


# ------------------------------------------------------------------ the range of beta
@pytest.mark.parametrize("beta", [-700.0, -2.0, -1e-300])
def test_negative_beta_is_accepted(beta):
    assert ue.models.usa(beta).beta == beta
    assert ue.models.ExpProfile(beta).beta == beta


@pytest.mark.parametrize("beta, match", [(-700.5, "beta must be >= -700"),
                                         (-1e-301, "at least 1e-300 in absolute value")])
def test_beta_beyond_the_mirrored_range_is_refused(beta, match):
    with pytest.raises(ValueError, match=match):
        ue.models.usa(beta)


# ------------------------------------------------------------------ velocity and energy
@pytest.mark.parametrize("sa", [False, True])
def test_velocity_at_beta_minus_2_against_numpy(x32, sa):
    model = ue.models.sa(BETA) if sa else ue.models.usa(BETA)
    want = numpy_velocity(x32, BETA, sa=sa)
    assert np.max(np.abs(package_velocity(model, x32) - want)) < 1e-12


def test_velocity_with_the_distance_bias_against_numpy(x32):
    xi = np.linspace(0.0, 3.0, 32)
    b = np.exp(-0.7 * np.abs(xi[:, None] - xi[None, :]))
    model = ue.models.distance_bias(BETA, lam=0.7)
    want = numpy_velocity(x32, BETA, b=b)
    assert np.max(np.abs(package_velocity(model, x32, xi) - want)) < 1e-12


def test_energy_at_beta_minus_2_against_numpy(x32):
    want = numpy_energy(x32, BETA)
    assert want < 0.0
    assert ue.energy(ue.models.usa(BETA), x32, summation="direct") == pytest.approx(want,
                                                                                   rel=1e-13)


def test_the_velocity_is_n_times_the_gradient_of_the_energy(x32):
    # a central difference of E along the tangent field v: dE/dt = (1/n) sum |v_i|^2
    v = numpy_velocity(x32, BETA)
    eps = 1e-5

    def moved(t):
        y = x32 + t * v
        return y / np.linalg.norm(y, axis=1, keepdims=True)

    slope = (numpy_energy(moved(eps), BETA) - numpy_energy(moved(-eps), BETA)) / (2 * eps)
    assert slope == pytest.approx(np.sum(v * v) / len(x32), rel=1e-8)
    assert slope > 0.0


def test_energy_scaled_does_not_overflow_at_beta_minus_700():
    # 200 tokens, half at the north pole and half at the south pole: s = -1 across
    n = 200
    x = np.zeros((n, 3))
    x[: n // 2, 2], x[n // 2:, 2] = 1.0, -1.0
    beta = -700.0
    # E = (1/(2 n^2 beta)) (n^2/2 e^{700} + n^2/2 e^{-700}) = (e^700 + e^-700) / (4 beta)
    want = (math.exp(700.0) + math.exp(-700.0)) / (4.0 * beta)
    assert ue.energy(ue.models.usa(beta), x, summation="direct") == pytest.approx(want, rel=1e-12)
    yt = np.ascontiguousarray(x.T)
    assert energy_mod.energy_scaled(yt, None, beta) == pytest.approx(want, rel=1e-12)


# ------------------------------------------------------------------ runs
@pytest.mark.parametrize("method", ["rk4", "dopri5"])
def test_a_run_at_beta_minus_2_raises_the_energy_and_collapses(x32, method):
    # simulate checks after every frame that E does not fall and that
    # E(t1) - E(t0) = int (1/n) sum |v_i|^2 dt; a failure raises IntegrationError
    traj = ue.simulate(ue.models.usa(BETA), x32, t_max=40.0, n_frames=9, method=method)
    assert traj.status.name == "COMPLETED"
    assert np.all(np.diff(traj.energy) >= -1e-12)
    for k in (0, -1):
        assert traj.energy[k] == pytest.approx(numpy_energy(traj.x[k], BETA), rel=1e-12)
    order = np.linalg.norm(traj.x.mean(axis=1), axis=1)
    assert order[0] < 0.3 and order[-1] > 1.0 - 1e-4  # contracting at the rate e^beta
    # the maximum of E is collapse, e^beta / (2 beta) (phi increases for every beta)
    assert traj.energy[-1] == pytest.approx(math.exp(BETA) / (2 * BETA), rel=1e-4)


TETRAHEDRON = np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]], float) / math.sqrt(3)


def perturbed_tetrahedron():
    x = TETRAHEDRON + 1e-3 * np.random.default_rng(0).normal(size=(4, 3))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("beta, how", [(-8.0, dict(method="dopri5", rtol=1e-10, dt_max=0.05)),
                                       (-2.0, dict(method="rk4"))])
def test_negative_beta_spreads_a_perturbed_tetrahedron_back(beta, how):
    # phi = e^{beta s} / beta is concave for beta < 0: four tokens at the vertices of a regular
    # tetrahedron (s = -1/3 for every pair) are a local maximum of E; the run returns to it, the
    # energy rising and the order parameter |mean_i x_i| falling back to round-off
    x0 = perturbed_tetrahedron()
    # (Dormand-Prince with a step cap: RK4's default step at beta = -8 is 9e-6, from the
    # Lipschitz bound 9 e^8 of the stiffest state, two antipodal clusters)
    traj = ue.simulate(ue.models.usa(beta), x0, t_max=100.0, n_frames=5, **how)
    order = np.linalg.norm(traj.x.mean(axis=1), axis=1)
    assert order[0] > 1e-4 and order[-1] < 1e-12
    assert traj.energy[1] > traj.energy[0] and np.all(np.diff(traj.energy) >= -1e-15)
    gram = traj.x[-1] @ traj.x[-1].T
    assert np.max(np.abs(gram[~np.eye(4, dtype=bool)] + 1.0 / 3.0)) < 1e-8
    # E of the tetrahedron: (4 e^beta + 12 e^{-beta/3}) / (2 beta 16)
    want = (4 * math.exp(beta) + 12 * math.exp(-beta / 3)) / (32 * beta)
    assert traj.energy[-1] == pytest.approx(want, rel=1e-12)


def test_positive_beta_collapses_the_same_tetrahedron():
    traj = ue.simulate(ue.models.usa(2.0), perturbed_tetrahedron(), t_max=100.0, n_frames=5)
    assert np.linalg.norm(traj.x[-1].mean(axis=0)) > 1.0 - 1e-9


def test_sa_at_negative_beta_passes_the_energy_check(x32):
    traj = ue.simulate(ue.models.sa(-8.0), x32, t_max=10.0, n_frames=6, method="dopri5")
    assert traj.status.name == "COMPLETED" and np.all(np.diff(traj.energy) > 0.0)


def test_fast_summation_at_negative_beta_within_its_bound(x32):
    for sa in (False, True):
        fk = FastKernel(3, BETA, False, sa, tol=1e-10)
        yt = np.ascontiguousarray(x32.T)
        out = np.empty_like(yt)
        fk(yt, out)
        want = numpy_velocity(x32, BETA, sa=sa)
        # the bound is relative to the largest row mass (1/N_i) sum_j e^{beta s_ij}
        w = np.exp(BETA * (x32 @ x32.T))
        mass = (w.sum(axis=1) / (w.sum(axis=1) if sa else len(x32))).max()
        assert np.max(np.linalg.norm(out.T - want, axis=1)) <= fk.bound * mass
        assert fk.bound <= 1e-10
    traj_f = ue.simulate(ue.models.usa(BETA), x32, t_max=1.0, n_frames=3, summation="fast")
    traj_d = ue.simulate(ue.models.usa(BETA), x32, t_max=1.0, n_frames=3, summation="direct")
    assert traj_f.summation == "fast"
    assert np.max(np.abs(traj_f.x - traj_d.x)) < 1e-8


# ------------------------------------------------------------------ step and bound estimates
def rates(beta, sa=False, linear=False, bmax=1.0):
    return solver._Rates(beta, linear, sa, bmax, False)


@pytest.mark.parametrize("beta", [0.5, 3.0])
def test_the_estimates_are_even_in_beta(beta):
    # e^{beta s} <= e^{|beta|} on [-1, 1]: the bounds of beta and -beta coincide
    for sa in (False, True):
        assert solver._lipschitz(rates(-beta, sa)) == solver._lipschitz(rates(beta, sa))
        assert solver._stiffness(rates(-beta, sa)) == solver._stiffness(rates(beta, sa))
    assert solver._lipschitz(rates(beta)) == (1 + beta) * math.exp(beta)


def test_the_lipschitz_estimate_bounds_the_velocity_s_rate_at_negative_beta():
    # two antipodal clusters, the stiffest state for beta < 0: a tangent perturbation of
    # one token; |dv| / |dx| must stay below L
    n, beta = 20, -3.0
    x = np.zeros((n, 3))
    x[: n // 2, 2], x[n // 2:, 2] = 1.0, -1.0
    lip = solver._lipschitz(rates(beta))
    rng = np.random.default_rng(1)
    for _ in range(5):
        d = rng.normal(size=(n, 3))
        d -= np.sum(d * x, axis=1, keepdims=True) * x
        d *= 1e-6 / np.abs(d).max()
        y = x + d
        y /= np.linalg.norm(y, axis=1, keepdims=True)
        dv = numpy_velocity(y, beta) - numpy_velocity(x, beta)
        ratio = np.linalg.norm(dv, axis=1).max() / np.linalg.norm(y - x, axis=1).max()
        assert ratio <= lip
    # the collapse rate e^beta would be far below the rate here
    assert ratio > math.exp(beta)
    assert ratio > solver._stiffness(rates(beta)) / 4  # e^|beta| is the right order


def test_energy_bound_at_negative_beta():
    n = 16
    # b >= 0: phi(1) mean(B) / 2 = e^beta / (2 beta), attained by collapse
    assert ue.energy_bound(ue.models.usa(BETA), None, n) == pytest.approx(
        math.exp(BETA) / (2 * BETA))
    pole = np.tile([0.0, 0.0, 1.0], (n, 1))
    assert ue.energy(ue.models.usa(BETA), pole) == pytest.approx(math.exp(BETA) / (2 * BETA))
    # a bias of either sign: max|b| e^|beta| / (2 |beta|), above every state's energy
    model = ue.models.cosine_bias(BETA, omega=1.0, profile="exp")
    xi = np.linspace(0.0, 2 * np.pi, n, endpoint=False)
    bound = ue.energy_bound(model, xi)
    assert bound == pytest.approx(math.exp(2.0) / 4.0)
    b = np.cos(xi[:, None] - xi[None, :])
    for seed in range(20):
        x = ue.sphere.uniform(n, 3, seed=seed)
        assert numpy_energy(x, BETA, b) <= bound


# ------------------------------------------------------------------ mean field
@pytest.mark.parametrize("beta", [-3.0, -0.5, 2.0])
def test_mean_field_phi_k_against_quadrature(beta):
    # Phi_k = int_0^{2 pi} (e^{beta cos u} / beta) e^{-i k u} du = 2 pi I_k(beta) / beta
    m = 32
    op = mf._Operator(ue.models.usa(beta), 0.0, None, np.ones((1, 1)), m)
    u = np.linspace(0.0, 2 * np.pi, 4096, endpoint=False)
    k = np.arange(m // 2)
    quad = (np.exp(beta * np.cos(u))[None, :] / beta * np.cos(np.outer(k, u))).mean(axis=1)
    quad *= 2 * np.pi
    assert np.max(np.abs(op.phi_hat - quad)) < 1e-12 * np.max(np.abs(quad))
    if beta < 0:
        assert np.all(np.sign(op.phi_hat[1::2]) == 1.0)  # (-1)^k / beta > 0 for odd k


@pytest.mark.parametrize("model", [ue.models.usa(BETA), ue.models.sa(BETA)])
def test_mean_field_velocity_and_energy_at_negative_beta_against_quadrature(model):
    m = 64
    theta = mf.grid(m)
    f = (1.0 + 0.5 * np.cos(theta) + 0.3 * np.sin(2 * theta)) / (2 * np.pi)
    # w(theta) = (1/N) int e^{beta cos(psi - theta)} sin(psi - theta) f(psi) dpsi
    diff = theta[None, :] - theta[:, None]
    kern = np.exp(BETA * np.cos(diff))
    h = 2 * np.pi / m
    w = (kern * np.sin(diff) * f[None, :]).sum(axis=1) * h
    if model.normalization == "sa":
        w /= (kern * f[None, :]).sum(axis=1) * h
    assert np.max(np.abs(mf.velocity(model, f) - w)) < 1e-12
    e = 0.5 * (kern / BETA * np.outer(f, f)).sum() * h * h
    assert mf.energy(model, f) == pytest.approx(e, rel=1e-12)


def test_mean_field_solve_at_negative_beta_raises_the_energy():
    theta = mf.grid(256)
    f = (1.0 + 0.5 * np.cos(theta) + 0.2 * np.sin(3 * theta)) / (2 * np.pi)
    traj = ue.meanfield.solve(ue.models.usa(BETA), f, t_max=3.0, n_frames=4)
    assert traj.status.name == "COMPLETED"
    assert np.all(np.diff(traj.energy) > 0.0)
    assert traj.energy[0] == pytest.approx(mf.energy(ue.models.usa(BETA), f), rel=1e-12)
    # below the maximum, collapse: e^beta / (2 beta)
    assert traj.energy[-1] < math.exp(BETA) / (2 * BETA)


@pytest.mark.parametrize("make", [lambda: ue.models.rope(BETA, (1.0,), 3),
                                  lambda: ue.models.cosine_bias(BETA, omega=0.5, profile="exp"),
                                  lambda: ue.models.distance_bias(BETA, lam=0.3)])
def test_fast_summation_with_gauges_and_biases_at_negative_beta(make):
    model = make()
    x = ue.sphere.uniform(64, 3, seed=2)
    xi = np.linspace(0.0, 6.0, 64)
    fast = ue.simulate(model, x, xi, t_max=1.0, n_frames=3, summation="fast")
    direct = ue.simulate(model, x, xi, t_max=1.0, n_frames=3, summation="direct")
    assert fast.summation == "fast" and fast.error_bound <= 1e-10
    assert np.max(np.abs(fast.x - direct.x)) < 1e-9
