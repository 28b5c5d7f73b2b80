"""The density solver on the sphere S^2 (usaav_edu.meanfield, grid=sphere_grid(lmax)): the grid,
the transforms, the linear profile's exact family, the Funk-Hecke growth rates, the mass and the
energy, gauges and labels, particles against densities, collapse detection, bad input."""
import math

import numpy as np
import pytest
import scipy.special
from scipy.integrate import solve_ivp

import usaav_edu as ue
from usaav_edu.errors import UnresolvedError
from usaav_edu.meanfield import harmonics as H

FOUR_PI = 4 * np.pi
USA1 = ue.models.usa(beta=1.0)
LINEAR = ue.models.usa(beta=1.0, profile="linear")


def smooth(p):
    """A smooth density of degree 2 with no symmetry axis (mass 1 on S^2)."""
    return (1 + 0.6 * p[:, 2] + 0.4 * p[:, 0] * p[:, 1] + 0.3 * p[:, 0]) / FOUR_PI


def random_coefficients(lmax, seed):
    """Coefficients of a random real function of degree <= lmax."""
    rng = np.random.default_rng(seed)
    n = H.n_coefficients(lmax)
    a = rng.normal(size=n) + 1j * rng.normal(size=n)
    a[H.orders(lmax) == 0] = a[H.orders(lmax) == 0].real
    return a


# ---------------------------------------------------------------------- the grid and transforms
@pytest.mark.parametrize("lmax", [4, 9, 32])
def test_the_grid_integrates_every_polynomial_of_degree_up_to_2_lmax_plus_1(lmax):
    grid = ue.meanfield.sphere_grid(lmax)
    assert grid.points.shape == ((lmax + 1) * (2 * lmax + 2), 3)
    assert np.allclose(np.linalg.norm(grid.points, axis=1), 1.0, atol=1e-15)
    assert np.all(grid.weights > 0)
    x, y, z = grid.points.T
    k = 2 * lmax
    # int z^(2j) = 4 pi / (2j + 1); int x^2 y^2 z^(k-4) by the Beta integral
    assert grid.integrate(z ** k) == pytest.approx(FOUR_PI / (k + 1), rel=1e-13)
    assert abs(grid.integrate(z ** (k + 1))) < 1e-13
    a, b, c = 2, 2, k - 4
    exact = 2 * math.prod(math.gamma((e + 1) / 2) for e in (a, b, c)) / math.gamma(
        (a + b + c + 3) / 2)
    assert grid.integrate(x ** a * y ** b * z ** c) == pytest.approx(exact, rel=1e-12)
    if lmax < 10:  # one degree more is not integrated exactly any more
        assert grid.integrate(z ** (k + 2)) != pytest.approx(FOUR_PI / (k + 3), rel=1e-10)


def test_analysis_inverts_synthesis_and_evaluation_agrees_with_the_grid():
    lmax = 12
    grid = ue.meanfield.sphere_grid(lmax)
    a = random_coefficients(lmax, 0)
    values = H.synthesis(a, lmax, grid.ntheta, grid.nphi)
    assert np.max(np.abs(H.analysis(values, lmax) - a)) < 1e-12
    assert np.max(np.abs(H.evaluate(a, lmax, grid.points) - values.ravel())) < 1e-11
    # Y_10 = sqrt(3 / 4 pi) cos(theta)
    c = np.zeros(H.n_coefficients(lmax), complex)
    c[1] = 1.0
    assert np.allclose(H.evaluate(c, lmax, grid.points), math.sqrt(3 / FOUR_PI) * grid.points[:, 2])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rotated_coefficients_are_those_of_f_composed_with_the_transpose(seed):
    lmax = 10
    grid = ue.meanfield.sphere_grid(lmax)
    a = random_coefficients(lmax, seed)
    q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(3, 3)))
    for r in (q, -q, np.diag([1.0, 1.0, 1.0]), np.diag([-1.0, -1.0, 1.0])):
        y = grid.points
        moved = H.evaluate(H.rotate(a, lmax, r), lmax, y)
        assert np.max(np.abs(moved - H.evaluate(a, lmax, y @ r))) < 1e-11  # f(R^T y)


def test_the_divergence_of_a_product_is_its_exact_galerkin_projection():
    # div(f grad U) = (1/2) (Lap(f U) + f Lap U - U Lap f), formed with products of degree 2L
    lmax = 10
    f_c, u_c = random_coefficients(lmax, 4), random_coefficients(lmax, 5)
    nt, nph = 3 * lmax // 2 + 2, 3 * lmax + 2
    w = np.polynomial.legendre.leggauss(nt)[1][::-1] * (2 * np.pi / nph)
    f = H.synthesis(f_c, lmax, nt, nph)
    grad = H.gradient(u_c, lmax, nt, nph)
    got = H.divergence(f[None] * grad, w, lmax)
    big = 2 * lmax
    nt2, np2 = big + 2, 2 * big + 2

    def pad(c):
        out = np.zeros(H.n_coefficients(big), complex)
        index = {(el, m): i for i, (el, m) in enumerate(zip(H.degrees(big), H.orders(big),
                                                            strict=True))}
        for i, (el, m) in enumerate(zip(H.degrees(lmax), H.orders(lmax), strict=True)):
            out[index[(el, m)]] = c[i]
        return out, index

    (fb, index), (ub, _) = pad(f_c), pad(u_c)
    lap = -H.degrees(big) * (H.degrees(big) + 1.0)
    fv, uv = H.synthesis(fb, big, nt2, np2), H.synthesis(ub, big, nt2, np2)
    lfv, luv = H.synthesis(lap * fb, big, nt2, np2), H.synthesis(lap * ub, big, nt2, np2)
    exact = 0.5 * (lap * H.analysis(fv * uv, big) + H.analysis(fv * luv, big)
                   - H.analysis(uv * lfv, big))
    keep = [index[(el, m)] for el, m in zip(H.degrees(lmax), H.orders(lmax), strict=True)]
    assert np.max(np.abs(got - exact[keep])) < 1e-11 * np.max(np.abs(exact))
    assert abs(got[0]) < 1e-12 * np.max(np.abs(exact))  # no degree 0: the mass is kept


# ---------------------------------------------------------------------- exact solutions
def moebius(points, u, r):
    """The pushforward of the uniform law by the dilation of S^2 towards u with parameter r."""
    h = points @ u
    return ((1 - r * r) / (1 - 2 * r * h + r * r)) ** 2 / FOUR_PI


def moebius_mean(r):
    """c(r) = int <x, u> f_r(x) dx."""
    return (1 + r * r) / (2 * r) - (1 - r * r) ** 2 / (4 * r * r) * math.log((1 + r) / (1 - r))


def moebius_r(times, r0):
    """r(t) of the exact family under the linear profile: dr/dt = c(r) (1 - r^2) / 2."""
    sol = solve_ivp(lambda t, r: [moebius_mean(r[0]) * (1 - r[0] ** 2) / 2], [0, times[-1]],
                    [r0], t_eval=times, rtol=1e-13, atol=1e-15)
    return sol.y[0]


def test_the_moebius_family_has_mass_one_and_the_mean_c_r():
    grid = ue.meanfield.sphere_grid(64)
    u = np.array([0.0, 0.6, 0.8])
    for r in (0.05, 0.3, 0.5):
        f = moebius(grid.points, u, r)
        assert grid.integrate(f) == pytest.approx(1.0, abs=1e-13)
        assert grid.integrate(f * (grid.points @ u)) == pytest.approx(moebius_mean(r), rel=1e-12)
    assert moebius_mean(1e-2) == pytest.approx(4e-2 / 3, rel=1e-3)  # c(r) = 4r/3 + O(r^3)


def test_the_packages_closed_forms_agree_with_these():
    grid = ue.meanfield.sphere_grid(40)
    u = np.array([0.0, 0.6, 0.8])
    for r in (1e-5, 5e-4, 0.002, 0.3, 0.7):
        assert ue.meanfield.exact.moebius_mean(r) == pytest.approx(
            moebius_mean(r) if r > 1e-3 else 4 * r / 3 + 4 * r ** 3 / 15, rel=1e-12)
    assert np.allclose(ue.meanfield.exact.moebius_density(grid.points, u, 0.4),
                       moebius(grid.points, u, 0.4), rtol=1e-14)
    times = np.array([0.0, 0.5, 2.0, 6.0])
    assert np.allclose(ue.meanfield.exact.moebius_radius(times, 0.1), moebius_r(times, 0.1),
                       rtol=1e-11, atol=0)
    for model in (ue.models.usa(beta=2.0), ue.models.sa(beta=2.0), ue.models.usa(beta=-1.5),
                  LINEAR):
        got = ue.meanfield.exact.growth_rates(model, 9, noise=0.3)
        want = [funk_hecke_rate(model, ell) - 0.045 * ell * (ell + 1) for ell in range(10)]
        assert np.allclose(got, want, rtol=1e-12, atol=1e-14), model.name
    with pytest.raises(ValueError, match="no labels"):
        ue.meanfield.exact.growth_rates(ue.models.rope(beta=1.0, omegas=(1.0,), d=3), 4)


@pytest.mark.parametrize("model", [LINEAR, ue.models.Model(profile=ue.models.LinearProfile(),
                                                            normalization="sa")],
                         ids=["usa", "sa"])
def test_the_linear_profile_keeps_the_moebius_family_with_the_ode_of_its_parameter(model):
    # phi' = 1: every token moves along P_x m, a conformal field, so the dilations of the
    # uniform law stay dilations; with mass 1 the SA normalizer is 1 and SA is USA
    grid = ue.meanfield.sphere_grid(48)
    u = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    r0 = 0.15
    run = ue.meanfield.solve(model, moebius(grid.points, u, r0), 2.0, n_frames=5, grid=grid,
                             rtol=1e-10, atol=1e-12)
    r = moebius_r(run.t, r0)
    assert r[-1] > 3 * r0  # it concentrated
    for k in range(run.t.size):
        exact = moebius(grid.points, u, r[k])
        err = np.max(np.abs(run.f[k] - exact)) / np.max(exact)
        assert err < 1e-9, f"t = {run.t[k]}: error {err:.3g} from the exact family"


def funk_hecke_rate(model, ell):
    """The growth rate of degree l about the uniform density: l (l + 1) lambda_l / (4 pi Z0)."""
    beta = model.beta
    if model.linear:
        lam = FOUR_PI / 3 if ell == 1 else 0.0
        z0 = 1.0
    else:
        lam = FOUR_PI * scipy.special.spherical_in(ell, beta) / beta
        z0 = scipy.special.spherical_in(0, beta) if model.normalization == "sa" else 1.0
    return ell * (ell + 1) * lam / (FOUR_PI * z0)


@pytest.mark.parametrize("model", [ue.models.usa(beta=2.0), ue.models.sa(beta=2.0),
                                   ue.models.usa(beta=-1.5)], ids=["usa", "sa", "usa-negative"])
def test_each_degree_grows_at_the_funk_hecke_rate_about_the_uniform_density(model):
    lmax = 12
    grid = ue.meanfield.sphere_grid(lmax)
    eps, t = 1e-7, 0.4
    for ell, m in [(1, 0), (2, 1), (3, 3), (5, 2), (8, 4)]:
        c = np.zeros(H.n_coefficients(lmax), complex)
        index = int(np.flatnonzero((H.degrees(lmax) == ell) & (H.orders(lmax) == m))[0])
        c[0] = 1 / math.sqrt(FOUR_PI)
        c[index] = eps * (1 + 0.5j if m else 1)
        f0 = H.synthesis(c, lmax, grid.ntheta, grid.nphi).ravel()
        run = ue.meanfield.solve(model, f0, t, n_frames=2, grid=grid, rtol=1e-12, atol=1e-16)
        ratio = run.coefficients[-1, index] / run.coefficients[0, index]
        measured = math.log(abs(ratio)) / t
        expected = funk_hecke_rate(model, ell)
        assert measured == pytest.approx(expected, rel=1e-5, abs=1e-9), (ell, m)
        assert abs(np.angle(ratio)) < 1e-6  # the uniform density moves nothing sideways


def test_with_noise_each_degree_decays_by_the_heat_term():
    model, sigma = ue.models.usa(beta=1.0), 0.9
    lmax = 10
    grid = ue.meanfield.sphere_grid(lmax)
    for ell in (1, 3, 6):
        c = np.zeros(H.n_coefficients(lmax), complex)
        c[0], c[ell] = 1 / math.sqrt(FOUR_PI), 1e-6
        f0 = H.synthesis(c, lmax, grid.ntheta, grid.nphi).ravel()
        run = ue.meanfield.solve(model, f0, 0.3, n_frames=2, grid=grid, rtol=1e-12, atol=1e-16,
                                 noise=sigma)
        measured = math.log(run.coefficients[-1, ell].real / 1e-6) / 0.3
        expected = funk_hecke_rate(model, ell) - sigma ** 2 / 2 * ell * (ell + 1)
        assert measured == pytest.approx(expected, rel=2e-5), ell


# ---------------------------------------------------------------------- mass, energy
def test_the_mass_is_kept_to_round_off_and_the_energy_rises():
    grid = ue.meanfield.sphere_grid(32)
    run = ue.meanfield.solve(ue.models.usa(beta=1.0), smooth(grid.points), 1.0, n_frames=6,
                             grid=grid)
    assert run.completed and run.on_sphere and run.f.shape == (6, grid.size)
    assert np.max(np.abs(run.mass - 1.0)) < 1e-14
    assert np.max(np.abs(grid.integrate(run.f) - 1.0)) < 1e-13
    assert np.all(np.diff(run.energy) > 0)


def test_the_energy_is_the_double_integral_of_phi():
    # E = (1/2) iint phi(<x, y>) f(x) f(y): by quadrature on a grid exact for its degree
    model = ue.models.usa(beta=1.5)
    lmax = 8
    grid = ue.meanfield.sphere_grid(lmax)
    f = smooth(grid.points)
    fine = ue.meanfield.sphere_grid(40)
    ff = smooth(fine.points)
    kernel = np.exp(1.5 * (fine.points @ fine.points.T)) / 1.5
    direct = 0.5 * (fine.weights * ff) @ kernel @ (fine.weights * ff)
    run = ue.meanfield.solve(model, f, 1e-6, n_frames=2, grid=grid)
    assert run.energy[0] == pytest.approx(direct, rel=1e-12)


# ---------------------------------------------------------------------- gauges and labels
def rotated_copies(grid, mats):
    """Conditional densities f_l(x) = g0(G_l x) in content coordinates."""
    return np.stack([smooth(grid.points @ g.T) for g in mats])


@pytest.mark.parametrize("kind", ["rope", "prefix"])
def test_in_gauge_coordinates_every_label_follows_usa(kind):
    # Theorem 4.1: if every conditional is one g0 seen through its gauge, f_l(t, x) = g(t, G_l x)
    grid = ue.meanfield.sphere_grid(24)
    if kind == "rope":
        model = ue.models.rope(beta=1.0, omegas=(1.3,), d=3)
        xi = np.array([0.0, 0.7, 2.0, 4.1])
    else:
        q, _ = np.linalg.qr(np.random.default_rng(7).normal(size=(3, 3)))
        frames = np.stack([np.eye(3), q, np.diag([1.0, -1.0, 1.0])])
        model = ue.models.prefix_gauge(beta=1.0, frames=frames)
        xi = np.array([0, 1, 2])
    mats = model.gauge_matrices(xi, 3)
    run = ue.meanfield.solve(model, rotated_copies(grid, mats), 1.0, xi=xi, n_frames=3,
                             grid=grid)
    ref = ue.meanfield.solve(USA1, smooth(grid.points), 1.0, n_frames=3, grid=grid)
    assert run.f.shape == (3, xi.size, grid.size)
    for ell, g in enumerate(mats):
        expected = H.evaluate(ref.coefficients[-1], grid.lmax, grid.points @ g.T)
        assert np.max(np.abs(run.f[-1, ell] - expected)) < 1e-12
        if not np.allclose(g, np.eye(3)):  # the labels differ
            assert not np.allclose(run.f[-1, ell], ref.f[-1], atol=1e-3)
    assert np.max(np.abs(run.in_gauge()[-1] - ref.f[-1][None])) < 1e-12


def test_ropes_conditionals_collapse_while_their_marginal_keeps_to_a_latitude_band():
    # eight labels a turn apart: the marginal is invariant under rotations by 2 pi / 8 about e3
    grid = ue.meanfield.sphere_grid(24)
    model = ue.models.rope(beta=1.0, omegas=(1.0,), d=3)
    xi = 2 * np.pi * np.arange(8) / 8
    run = ue.meanfield.solve(model, rotated_copies(grid, model.gauge_matrices(xi, 3)), 1.0,
                             xi=xi, n_frames=4, grid=grid)
    z = grid.points[:, 2]
    marginal = run.marginal
    coef = H.analysis(marginal.reshape(-1, grid.ntheta, grid.nphi), grid.lmax)
    off = H.orders(grid.lmax) % 8 != 0
    assert np.max(np.abs(coef[:, off])) < 1e-13  # symmetric under the 8 rotations
    peaks = run.f.max(axis=-1)
    assert np.all(np.diff(peaks, axis=0) > 0)  # every conditional sharpens
    var_z = grid.integrate(marginal * z ** 2) - grid.integrate(marginal * z) ** 2
    assert np.all(np.diff(var_z) < 0)  # the marginal gathers on a latitude band
    spread = np.hypot(grid.integrate(marginal * grid.points[:, 0]),
                      grid.integrate(marginal * grid.points[:, 1]))
    assert np.max(spread) < 1e-12  # and stays spread around it: its mean lies on the axis


def test_biases_over_labels_keep_the_masses_and_raise_the_energy():
    grid = ue.meanfield.sphere_grid(20)
    xi = np.array([0.0, 1.0, 2.0])
    f0 = np.stack([smooth(grid.points)] * 3)
    for model in (ue.models.distance_bias(beta=1.0, lam=0.5),
                  ue.models.cosine_bias(beta=1.0, omega=1.0)):
        run = ue.meanfield.solve(model, f0, 0.6, xi=xi, rho=[0.5, 0.3, 0.2], n_frames=4,
                                 grid=grid)
        assert np.max(np.abs(run.mass - 1.0)) < 1e-14
        assert np.all(np.diff(run.energy) > 0)
        # the labels see different weights, so they part
        assert np.max(np.abs(run.f[-1, 0] - run.f[-1, 2])) > 1e-4


# ---------------------------------------------------------------------- particles and densities
def test_particles_approach_the_density_at_the_rate_n_to_the_minus_one_half():
    # up to 100,000 tokens by fast summation; the kernel MMD of independent samples decays like
    # n^(-1/2), and the flow for a time 1/2 keeps that rate
    grid = ue.meanfield.sphere_grid(32)
    f0 = smooth(grid.points)
    run = ue.meanfield.solve(USA1, f0, 0.5, n_frames=2, grid=grid)
    sizes, seeds = [1562, 6250, 25000, 100000], [6, 4, 2, 1]
    means = []
    for n, count in zip(sizes, seeds, strict=True):
        ds = []
        for seed in range(count):
            x0 = ue.meanfield.sample_sphere(grid, f0, n, seed=seed)
            tr = ue.simulate(USA1, x0, t_max=0.5, n_frames=2, method="dopri5",
                             summation="fast")
            ds.append(ue.meanfield.sphere_distance(tr.x[-1], grid, run.f[-1]))
        means.append(np.mean(ds))
    slope = np.polyfit(np.log(sizes), np.log(means), 1)[0]
    assert -0.65 < slope < -0.35, f"MMD {np.round(means, 5)} at n = {sizes}: slope {slope:.3f}"
    assert means[-1] < 0.005, means


def test_labelled_particles_follow_their_conditional_densities():
    grid = ue.meanfield.sphere_grid(24)
    model = ue.models.rope(beta=1.0, omegas=(1.0,), d=3)
    xi = np.array([0.0, 2.0, 4.0])
    f0 = rotated_copies(grid, model.gauge_matrices(xi, 3))
    run = ue.meanfield.solve(model, f0, 1.0, xi=xi, n_frames=2, grid=grid)
    n = 6000
    x0 = np.concatenate([ue.meanfield.sample_sphere(grid, f0[k], n, seed=k) for k in range(3)])
    labels = np.repeat(xi, n)
    tr = ue.simulate(model, x0, labels, t_max=1.0, n_frames=2, method="dopri5")
    for k in range(3):
        d_own = ue.meanfield.sphere_distance(tr.x[-1][k * n:(k + 1) * n], grid, run.f[-1, k])
        d_other = ue.meanfield.sphere_distance(tr.x[-1][k * n:(k + 1) * n], grid,
                                               run.f[-1, (k + 1) % 3])
        assert d_own < 0.02 < d_other, (k, d_own, d_other)


# ---------------------------------------------------------------------- collapse, bad input
def test_a_collapse_the_grid_cannot_resolve_stops_the_run():
    grid = ue.meanfield.sphere_grid(16)
    model = ue.models.usa(beta=4.0)
    with pytest.raises(UnresolvedError, match="lmax = 16") as info:
        ue.meanfield.solve(model, smooth(grid.points), 10.0, n_frames=11, grid=grid)
    part = info.value.partial
    assert part.status is ue.meanfield.Status.UNRESOLVED and part.t[-1] < 10.0
    run = ue.meanfield.solve(model, smooth(grid.points), 10.0, n_frames=11, grid=grid,
                             on_failure="return")
    assert run.status is ue.meanfield.Status.UNRESOLVED
    assert run.t_unresolved is not None and run.t[-1] <= run.t_unresolved < 10.0
    assert np.all(run.tail <= ue.meanfield.TAIL_TOL)  # the frames kept are the resolved ones
    assert "lmax = 16" in run.message


def test_bad_input_is_refused_naming_the_argument():
    grid = ue.meanfield.sphere_grid(8)
    f = smooth(grid.points)
    with pytest.raises(TypeError, match="grid must be a SphereGrid"):
        ue.meanfield.solve(USA1, f, 1.0, grid=8)
    with pytest.raises(ValueError, match=r"f0 must have shape \(162,\)"):
        ue.meanfield.solve(USA1, f[:-1], 1.0, grid=grid)
    with pytest.raises(ValueError, match="integrate to 1"):
        ue.meanfield.solve(USA1, 2 * f, 1.0, grid=grid)
    with pytest.raises(ValueError, match="non-negative"):
        ue.meanfield.solve(USA1, f - 0.2, 1.0, grid=grid)
    with pytest.raises(ValueError, match="d = 3"):
        ue.meanfield.solve(ue.models.rope(beta=1.0, omegas=(1.0,), d=2), np.stack([f]),
                           1.0, xi=[0.0], grid=grid)
    with pytest.raises(ValueError, match="pre-LN"):
        ue.meanfield.solve(ue.models.usa(beta=1.0, layer_norm="pre"), f, 1.0, grid=grid)
    with pytest.raises(ValueError, match="general kernel"):
        ue.meanfield.solve(ue.models.causal(beta=1.0), f, 1.0, xi=[0.0], grid=grid)
    sharp = moebius(grid.points, np.array([0.0, 0.0, 1.0]), 0.9)
    sharp = sharp / grid.integrate(sharp)
    with pytest.raises(ValueError, match="not resolved by the grid of lmax = 8"):
        ue.meanfield.solve(USA1, sharp, 1.0, grid=grid)
    with pytest.raises(ValueError, match="lmax must be >= 4"):
        ue.meanfield.sphere_grid(2)
    with pytest.raises(ValueError, match="Dormand-Prince steps"):
        ue.meanfield.solve(ue.models.usa(beta=1.0), f, 1e4, grid=grid, max_steps=100)
