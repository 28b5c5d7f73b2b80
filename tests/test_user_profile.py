"""A profile of one's own: phi' as a Numba-compiled scalar function, summed over every pair."""

import numba
import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu.particles.plan import direct_field


@numba.njit
def gauss_dphi(s):
    return np.exp(2.0 * (s - 1.0))  # the Gaussian kernel exp(-|x - y|^2) up to a constant


@numba.njit
def poly_dphi(s):
    return 1.0 + s * s


@numba.njit
def poly_phi(s):
    return s + s * s * s / 3.0


def velocity(model, x, xi=None):
    kernel = model.kernel(x, xi)
    out = np.empty_like(kernel.y0)
    direct_field(kernel)(np.ascontiguousarray(x.T), out)
    return out.T


def reference(x, dphi, b=None, sa=False, G=None):
    n = len(x)
    y = x if G is None else np.einsum("nij,nj->ni", G, x)
    w = np.vectorize(dphi)(y @ y.T)
    if b is not None:
        w = w * b
    a = w @ y / (w.sum(axis=1) if sa else np.full(n, float(n)))[:, None]
    if G is not None:
        a = np.einsum("nji,nj->ni", G, a)
    return a - np.sum(a * x, axis=1, keepdims=True) * x


@pytest.mark.parametrize("norm", ["usa", "sa"])
def test_the_velocity_is_the_formula_with_ones_own_phi_prime(norm):
    x = ue.sphere.uniform(40, 3, seed=1)
    m = ue.Model(profile=ue.models.UserProfile(gauss_dphi), normalization=norm)
    assert np.max(np.abs(velocity(m, x) - reference(x, gauss_dphi, sa=norm == "sa"))) <= 1e-12


def test_the_exponential_written_by_hand_runs_as_the_built_in_profile():
    @numba.njit
    def exp_dphi(s):
        return np.exp(1.5 * s)

    @numba.njit
    def exp_phi(s):
        return np.exp(1.5 * s) / 1.5

    x0 = ue.sphere.uniform(32, 3, seed=4)
    xi = np.linspace(0.0, 3.0, 32)
    built_in = ue.models.rope(1.5, (0.8,), 3)
    own = ue.Model(gauge=built_in.gauge, profile=ue.models.UserProfile(exp_dphi, exp_phi))
    a = ue.simulate(built_in, x0, xi, t_max=2.0, dt=0.01, n_frames=3)
    b = ue.simulate(own, x0, xi, t_max=2.0, dt=0.01, n_frames=3)
    assert np.max(np.abs(a.x - b.x)) <= 1e-10
    assert np.max(np.abs(a.energy - b.energy)) <= 1e-10 * a.energy[-1]


def test_the_energy_is_phi_or_the_quadrature_of_phi_prime():
    x = ue.sphere.uniform(30, 3, seed=2)
    s = x @ x.T
    want = np.sum(s + s ** 3 / 3.0) / (2 * 30 ** 2)
    with_phi = ue.Model(profile=ue.models.UserProfile(poly_dphi, poly_phi))
    by_quadrature = ue.Model(profile=ue.models.UserProfile(poly_dphi))
    assert ue.energy(with_phi, x) == pytest.approx(want, rel=1e-13)
    assert ue.energy(by_quadrature, x) == pytest.approx(want, rel=1e-13)


def test_a_gradient_flow_of_ones_own_passes_the_energy_checks():
    x0 = ue.sphere.uniform(24, 3, seed=5)
    m = ue.Model(profile=ue.models.UserProfile(poly_dphi))
    traj = ue.simulate(m, x0, t_max=4.0, n_frames=5)  # the energy identity holds at each frame
    assert np.all(np.diff(traj.energy) > 0)
    assert traj.energy[-1] == pytest.approx(4.0 / 3.0 / 2.0, rel=1e-3)  # collapse: phi(1) / 2


def test_the_step_estimates_read_the_profiles_bounds():
    prof = ue.models.UserProfile(gauss_dphi)
    m0, m1 = prof.bounds
    assert m0 == pytest.approx(1.0) and m1 == pytest.approx(2.0, rel=1e-2)
    built_in = ue.particles.solver.default_dt(ue.models.usa(2.0), None)
    assert ue.particles.solver.default_dt(ue.Model(profile=prof), None) > built_in  # e^-2 the weights


def test_bad_profiles_are_named():
    with pytest.raises(TypeError, match="dphi must be a function compiled with numba.njit"):
        ue.models.UserProfile(lambda s: s)

    @numba.njit
    def pole(s):
        return np.log(1.0 + s)  # -inf at s = -1

    with pytest.raises(ValueError, match="finite on"):
        ue.models.UserProfile(pole)

    @numba.njit
    def divides(s):
        return 1.0 / s

    with pytest.raises(ValueError, match="failed on s in"):
        ue.models.UserProfile(divides)

    @numba.njit
    def sign_changing(s):
        return s

    with pytest.raises(ValueError, match="normalization 'sa' needs a profile"):
        ue.Model(profile=ue.models.UserProfile(sign_changing), normalization="sa")
    m = ue.Model(profile=ue.models.UserProfile(poly_dphi))
    with pytest.raises(TypeError, match="profile"):
        m.params()
    with pytest.raises(ValueError, match="of one's own"):
        ue.simulate(m, ue.sphere.uniform(8, 3, seed=0), t_max=0.1, summation="fast")
