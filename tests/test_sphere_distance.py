"""Samples of a density on S^2 and their kernel mean discrepancy (meanfield.sphere_samples).

The discrepancy summed in spherical harmonics is checked against the direct sum over pairs of
points, on a fine grid where the density is band-limited; its decay as n^{-1/2} for samples of
the density itself, and its size between different laws.  The sampler is checked on moments
(E z, and E xy, which a mirrored longitude would flip), on its determinism and on its refusals.
"""

import numpy as np
import pytest

from usaav_edu.meanfield import harmonics as h
from usaav_edu.meanfield import sphere_samples as ss
from usaav_edu.meanfield.sphere_samples import sample_sphere, sphere_distance

FOUR_PI = 4.0 * np.pi


def tilted(points):
    """``(1 + 0.5 z + 0.3 x y) / (4 pi)``: a density of degree 2, positive."""
    x, y, z = points.T
    return (1.0 + 0.5 * z + 0.3 * x * y) / FOUR_PI


def skewed(points):
    """``(1 + 0.4 x - 0.3 z + 0.2 x^3 + 0.25 y z^2) / (4 pi)``: degree 3, positive."""
    x, y, z = points.T
    return (1.0 + 0.4 * x - 0.3 * z + 0.2 * x ** 3 + 0.25 * y * z ** 2) / FOUR_PI


def kernel(a, b, s):
    """``exp(-|a_i - b_j|^2 / (2 s^2))`` for unit vectors, as ``exp((<a, b> - 1) / s^2)``."""
    return np.exp((a @ b.T - 1.0) / s ** 2)


def direct_mmd(x, fine, values, s):
    """The MMD by pairs: points ``x`` against the density ``values`` on the grid ``fine``."""
    wf = fine.weights * values
    yy = fine.points
    mmd2 = (kernel(x, x, s).mean() - 2.0 * (kernel(x, yy, s) @ wf).mean()
            + wf @ kernel(yy, yy, s) @ wf)
    return float(np.sqrt(mmd2))


def uniform_points(n, seed):
    x = np.random.default_rng(seed).standard_normal((n, 3))
    return x / np.linalg.norm(x, axis=1)[:, None]


@pytest.mark.parametrize("s", [0.25, 0.5, 2.0])
@pytest.mark.parametrize("density", [tilted, skewed])
def test_the_discrepancy_is_the_sum_over_pairs(density, s):
    grid, fine = h.sphere_grid(12), h.sphere_grid(36)
    for x in (uniform_points(50, 1), sample_sphere(grid, density(grid.points), 50, seed=2)):
        got = sphere_distance(x, grid, density(grid.points), bandwidth=s)
        want = direct_mmd(x, fine, density(fine.points), s)
        assert got == pytest.approx(want, rel=0.0, abs=1e-10)
        assert got > 1e-3


def test_the_law_of_grid_values_is_their_interpolant():
    grid, fine = h.sphere_grid(6), h.sphere_grid(40)
    values = np.random.default_rng(3).uniform(0.5, 1.5, grid.size)
    values /= grid.integrate(values)
    alm = h.analysis(values.reshape(grid.ntheta, grid.nphi), grid.lmax)
    interpolant = h.synthesis(alm, grid.lmax, fine.ntheta, fine.nphi).reshape(-1)
    x = uniform_points(40, 4)
    got = sphere_distance(x, grid, values, bandwidth=0.4)
    assert got == pytest.approx(direct_mmd(x, fine, interpolant, 0.4), rel=0.0, abs=1e-10)


def test_one_point_against_the_uniform_law_has_the_closed_form():
    grid = h.sphere_grid(4)
    uniform = np.full(grid.size, 1.0 / FOUR_PI)
    for s in (0.1, 0.5, 3.0):
        kappa = 1.0 / s ** 2
        want = 1.0 - (1.0 - np.exp(-2.0 * kappa)) / (2.0 * kappa)
        got = sphere_distance(uniform_points(1, 5), grid, uniform, bandwidth=s)
        assert got ** 2 == pytest.approx(want, rel=0.0, abs=1e-12)


def test_samples_of_the_density_itself_approach_it_as_one_over_root_n():
    grid = h.sphere_grid(8)
    f = tilted(grid.points)
    means = {}
    for n in (2000, 8000):
        d = [sphere_distance(sample_sphere(grid, f, n, seed=seed), grid, f) for seed in range(6)]
        assert min(d) > 0.0
        means[n] = np.mean(d)
    assert 1.6 < means[2000] / means[8000] < 2.5
    assert means[8000] < 0.02


def test_different_laws_are_far_above_the_sampling_level():
    grid = h.sphere_grid(8)
    f, g = tilted(grid.points), skewed(grid.points)
    uniform = np.full(grid.size, 1.0 / FOUR_PI)
    for seed in range(3):
        x = sample_sphere(grid, f, 8000, seed=seed)
        own = sphere_distance(x, grid, f)
        assert sphere_distance(x, grid, g) > 4.0 * own
        assert sphere_distance(x, grid, uniform) > 4.0 * own


def test_the_samples_have_the_moments_of_the_density():
    grid, n = h.sphere_grid(8), 40000
    z = grid.points[:, 2]
    x = sample_sphere(grid, (1.0 + 0.9 * z) / FOUR_PI, n, seed=7)
    assert x.shape == (n, 3)
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, rtol=0.0, atol=1e-14)
    se = np.sqrt((1.0 / 3.0 - 0.3 ** 2) / n)  # E z = 0.9 / 3, E z^2 = 1 / 3
    assert abs(x[:, 2].mean() - 0.3) < 5.0 * se
    # E xy = 0.9 E_uniform(x^2 y^2) = 0.9 / 15 for (1 + 0.5 z + 0.9 x y) / (4 pi)
    px, py, pz = grid.points.T
    x = sample_sphere(grid, (1.0 + 0.5 * pz + 0.9 * px * py) / FOUR_PI, n, seed=8)
    xy = x[:, 0] * x[:, 1]
    assert abs(xy.mean() - 0.06) < 5.0 * xy.std() / np.sqrt(n)
    assert abs(x[:, 2].mean() - 0.5 / 3.0) < 5.0 * x[:, 2].std() / np.sqrt(n)


def test_the_same_seed_gives_the_same_points():
    grid = h.sphere_grid(6)
    f = tilted(grid.points)
    a, b = sample_sphere(grid, f, 500, seed=11), sample_sphere(grid, f, 500, seed=11)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, sample_sphere(grid, f, 500, seed=12))


def test_an_envelope_too_low_is_an_error(monkeypatch):
    grid = h.sphere_grid(6)
    monkeypatch.setattr(ss, "ENVELOPE_MARGIN", 0.8)
    with pytest.raises(ValueError, match="envelope .* too low"):
        sample_sphere(grid, tilted(grid.points), 2000, seed=0)


def test_the_sampler_refuses_bad_input():
    grid = h.sphere_grid(8)
    z = grid.points[:, 2]
    f = tilted(grid.points)
    with pytest.raises(ValueError, match="f must integrate to 1 within 1e-10"):
        sample_sphere(grid, 2.0 * f, 10)
    with pytest.raises(ValueError, match=r"f must have shape \(162,\)"):
        sample_sphere(grid, f[:-1], 10)
    with pytest.raises(ValueError, match=r"f must have shape \(162,\).*got shape \(9, 18\)"):
        sample_sphere(grid, f.reshape(grid.ntheta, grid.nphi), 10)
    with pytest.raises(ValueError, match="f must be a non-negative density"):
        sample_sphere(grid, (1.0 + 1.5 * z) / FOUR_PI, 10)
    # >= 0 on the grid's rings, negative near the south pole between them
    dip = (1.0 + z - 0.01) / (FOUR_PI * 0.99)
    assert dip.min() > 0.0
    with pytest.raises(ValueError, match="f must be a density.*interpolant"):
        sample_sphere(grid, dip, 10)
    with pytest.raises(ValueError, match="n must be >= 1"):
        sample_sphere(grid, f, 0)
    with pytest.raises(TypeError, match="seed must be an integer"):
        sample_sphere(grid, f, 10, seed=1.5)
    with pytest.raises(TypeError, match="grid must be a SphereGrid"):
        sample_sphere(grid.points, f, 10)
    peaked = (1.0 + z) ** 8 * 9.0 / (2.0 * np.pi * 2.0 ** 9)  # maximum 9 / (4 pi)
    with pytest.raises(ValueError, match=r"about 5\.6\de\+07 proposals"):
        sample_sphere(grid, peaked, 6_000_000)


def test_the_distance_refuses_bad_input():
    grid = h.sphere_grid(6)
    f = tilted(grid.points)
    x = uniform_points(10, 0)
    with pytest.raises(ValueError, match="points must be unit vectors"):
        sphere_distance(1.001 * x, grid, f)
    with pytest.raises(ValueError, match=r"points must have shape \(n, 3\)"):
        sphere_distance(x[:, :2], grid, f)
    with pytest.raises(ValueError, match=r"points must have shape \(n, 3\) with n >= 1"):
        sphere_distance(np.zeros((0, 3)), grid, f)
    with pytest.raises(ValueError, match="points must be finite"):
        sphere_distance(np.full((2, 3), np.nan), grid, f)
    with pytest.raises(ValueError, match="bandwidth must be > 0"):
        sphere_distance(x, grid, f, bandwidth=0.0)
    with pytest.raises(ValueError, match="bandwidth must be finite"):
        sphere_distance(x, grid, f, bandwidth=np.inf)
    with pytest.raises(ValueError, match="bandwidth must be >= 0.005"):
        sphere_distance(x, grid, f, bandwidth=0.001)
    with pytest.raises(ValueError, match="f must integrate to 1 within 1e-10"):
        sphere_distance(x, grid, 1.01 * f)
    assert sphere_distance(x * (1.0 + 5e-10), grid, f) > 0.0  # within the unit tolerance
