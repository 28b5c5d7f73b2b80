"""Diagnostics and exact maximizers, read like the formulas they implement."""

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu import diagnostics as dg
from usaav_edu import maximizers as mx


def test_spread_and_dirac_distance_of_a_dirac_and_a_great_circle():
    dirac = np.tile([0.0, 0.0, 1.0], (10, 1))
    circle = mx.latitude_circle(0.0, 40)
    assert dg.spread(dirac) == 0.0 and dg.dirac_distance(dirac) == 0.0
    assert abs(dg.spread(circle) - 1.0) < 1e-12
    assert abs(dg.dirac_distance(circle) - np.sqrt(2.0)) < 1e-12


@pytest.mark.parametrize("n", [1, 7, 1000, 4096])
@pytest.mark.parametrize("seed", range(6))
def test_identical_points_have_spread_and_dirac_distance_exactly_zero(n, seed):
    x = np.repeat(ue.sphere.uniform(1, 3, seed=seed), n, axis=0)
    assert dg.spread(x) == 0.0 and dg.dirac_distance(x) == 0.0


@pytest.mark.parametrize("a", [1e-4, 1e-9, 1e-12])
def test_tiny_spreads_are_accurate(a):
    # two points at angles +-a from e_1: m = (cos a, 0, 0), spread sin a, W2 to e_1 2 sin(a/2)
    x = np.array([[np.cos(a), np.sin(a), 0.0], [np.cos(a), -np.sin(a), 0.0]])
    assert dg.spread(x) == pytest.approx(np.sin(a), rel=1e-12, abs=0.0)
    assert dg.dirac_distance(x) == pytest.approx(2.0 * np.sin(a / 2.0), rel=1e-12, abs=0.0)


def test_dirac_distance_is_the_minimum_over_the_sphere():
    x = ue.sphere.uniform(30, 3, seed=1)
    candidates = ue.sphere.uniform(20000, 3, seed=2)
    brute = np.sqrt(np.min(np.mean(np.sum((x[None] - candidates[:, None]) ** 2, axis=2), axis=1)))
    assert dg.dirac_distance(x) <= brute + 1e-12
    assert brute - dg.dirac_distance(x) < 1e-2


def test_cluster_count_finds_planted_clusters():
    centres = ue.sphere.uniform(4, 3, seed=3)
    rng = np.random.default_rng(0)
    pts = np.repeat(centres, 10, axis=0) + 1e-6 * rng.standard_normal((40, 3))
    pts /= np.linalg.norm(pts, axis=1, keepdims=True)
    assert dg.cluster_count(pts, cluster_tol=1e-3) == 4
    assert dg.cluster_count(pts, cluster_tol=1e-8) == 40
    labels = dg.clusters(pts, cluster_tol=1e-3)
    assert all(len(set(labels[10 * k:10 * k + 10])) == 1 for k in range(4))


def test_latitude_circle_is_the_rope_orbit_of_d3():
    model = ue.models.rope(1.0, (1.0,), 3)
    u = np.array([0.6, 0.0, 0.8])
    s = 2 * np.pi * np.arange(50) / 50
    orbit = mx.rope_orbit(model, u, s)
    assert np.allclose(orbit[:, 2], 0.8)
    circle = mx.latitude_circle(0.8, 50)
    assert np.allclose(orbit[:, :2], circle[(-np.arange(50)) % 50, :2])


def test_great_circle_energy_is_a_quarter():
    n = 64
    xi = 2 * np.pi * np.arange(n) / n
    x = mx.great_circle(xi, 1.0, [1, 0, 0], [0, 1, 0])
    model = ue.models.cosine_bias(omega=1.0)
    assert abs(ue.energy(model, x, xi) - 0.25) < 1e-12
    assert abs(mx.cosine_circle_energy(xi, 1.0) - 0.25) < 1e-12
    assert abs(ue.energy_bound(model, xi) - 0.25) < 1e-12


def test_frames_from_targets_realize_the_targets():
    targets = ue.sphere.uniform(7, 3, seed=5)
    u = np.array([0.0, 0.0, 1.0])
    model = ue.models.prefix_gauge_from_targets(targets=targets, u=u)
    x = mx.gauge_maximizer(model, np.arange(7), u)
    assert np.allclose(x, targets, atol=1e-14)
    assert abs(ue.energy(model, x, np.arange(7)) - np.e / 2) < 1e-12


def test_distance_bias_bound_is_attained_by_a_dirac():
    n = 20
    xi = np.linspace(0, 3, n)
    model = ue.models.distance_bias(1.0, lam=0.7)
    dirac = np.tile([1.0, 0.0, 0.0], (n, 1))
    assert abs(ue.energy(model, dirac, xi) - ue.energy_bound(model, xi)) < 1e-12
    assert ue.energy(model, ue.sphere.uniform(n, 3, seed=0), xi) < ue.energy_bound(model, xi)


def test_diameter_resolves_tiny_clusters():
    x = np.array([[1.0, 0.0, 0.0], [np.cos(1e-10), np.sin(1e-10), 0.0], [np.cos(3e-10), -np.sin(3e-10), 0.0]])
    assert abs(dg.diameter(x) - 4e-10) < 1e-15
    assert dg.diameter(x[:1]) == 0.0


# ----------------------------------------------------------------------------- input checks
def test_orbit_residual_checks_the_dimension_of_x():
    rope3 = ue.models.rope(1.0, (1.0,), 3)             # one rotation plane: d = 2 or 3
    x4 = ue.sphere.uniform(5, 4, seed=0)
    with pytest.raises(ValueError, match="x has dimension d = 4"):
        dg.orbit_residual(rope3, x4, np.arange(5.0))
    rope4 = ue.models.rope(1.0, (1.0, 2.0), 4)
    with pytest.raises(ValueError, match="x has dimension d = 3"):
        dg.orbit_residual(rope4, ue.sphere.uniform(5, 3, seed=0), np.arange(5.0))
    prompts = ue.models.prefix_gauge(1.0, ue.sphere.random_frames(2, 3, seed=1))
    with pytest.raises(ValueError, match="x has dimension d = 4"):
        dg.orbit_residual(prompts, x4, np.arange(5) % 2)
    with pytest.raises(TypeError, match="model"):
        dg.orbit_residual(None, x4, np.arange(5.0))


def test_trajectory_helpers_refuse_what_is_not_a_trajectory():
    with pytest.raises(TypeError, match="traj must be"):
        dg.summary(ue.sphere.uniform(5, 3, seed=0))
    with pytest.raises(TypeError, match="traj must be"):
        dg.series(None, dg.spread)


# ---------------------------------------------------------------- summaries without n x n matrices
def single_linkage_by_matrix(x, tol):
    """Connected components of the full graph |x_i - x_j| < tol, labelled by first appearance."""
    adj = np.maximum(0.0, 2.0 - 2.0 * (x @ x.T)) < tol * tol
    labels = -np.ones(len(x), dtype=np.int64)
    k = 0
    for i in range(len(x)):
        if labels[i] < 0:
            reached, new = {i}, [i]
            while new:
                new = [j for j in np.flatnonzero(adj[new].any(axis=0)) if j not in reached]
                reached.update(new)
            labels[sorted(reached)] = k
            k += 1
    return labels


def planted_clusters(n, d, k, width, seed):
    rng = np.random.default_rng(seed)
    centres = ue.sphere.uniform(k, d, seed=seed)
    x = centres[rng.integers(0, k, n)] + width * rng.standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("block", [64, 2 ** 21])            # many small blocks; one block
@pytest.mark.parametrize("seed", range(4))
def test_blocked_clusters_and_diameter_equal_the_pairwise_matrix(seed, block, monkeypatch):
    monkeypatch.setattr(dg, "BLOCK_ENTRIES", block)
    x = planted_clusters(150, 3 + seed, 5, 10.0 ** -(seed + 1), seed)
    for tol in (1e-3, 1e-2, 0.2):
        assert np.array_equal(dg.clusters(x, tol), single_linkage_by_matrix(x, tol))
    dist = np.linalg.norm(x[:, None, :] - x[None, :, :], axis=2)
    assert dg.diameter(x) == pytest.approx(dist.max(), rel=1e-15)


def near_quarter_period():
    # a cosine bias with every phase omega xi_i in [0, 1]: all b_ij >= 0, the mean bound applies
    return ue.models.cosine_bias(omega=1.0), ue.sphere.uniform(40, 3, seed=1), np.linspace(0.0, 1.0, 40)


@pytest.mark.parametrize("name", ["usa", "rope", "prefix_gauge", "distance_bias", "cosine_bias",
                                  "cosine_bias near a quarter period"])
def test_summary_equals_the_pairwise_formulas(name, monkeypatch):
    monkeypatch.setattr(dg, "BLOCK_ENTRIES", 100)
    if name == "cosine_bias near a quarter period":
        model, x0, xi = near_quarter_period()
        assert np.all(model.bias_matrix(xi) >= 0.0)
    else:
        model, x0, xi = ue.experiments.setup(name, n=40, seed=1)
    traj = ue.simulate(model, x0, xi, t_max=1.0, n_frames=3)
    s = dg.summary(traj, cluster_tol=0.05)
    xf = traj.final
    assert s["energy"] == traj.energy[-1]
    assert s["energy_bound"] == pytest.approx(ue.energy_bound(traj.model, traj.xi), rel=1e-13)
    assert s["clusters"] == single_linkage_by_matrix(xf, 0.05).max() + 1
    assert s["spread"] == dg.spread(xf) and s["dirac_distance"] == dg.dirac_distance(xf)
    assert s["orbit_residual"] == dg.orbit_residual(traj.model, xf, traj.xi)


def test_summary_of_a_large_run_holds_no_n_by_n_matrix():
    import tracemalloc

    n = 20_000
    x = planted_clusters(n, 3, 3, 1e-6, seed=0)
    model = ue.models.usa(1.0)
    e_max = ue.maximizers.gauge_max_energy(model)       # a stand-in: the energy is not under test
    traj = ue.Trajectory(t=np.array([0.0, 1.0]), x=np.stack([x, x]), xi=np.zeros(n),
                         energy=np.array([e_max, e_max]), model=model, method="rk4", dt=0.1)
    tracemalloc.start()
    try:
        s = dg.summary(traj)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert s["clusters"] == 3
    assert peak < 200e6, f"summary used {peak / 1e6:.0f} MB; an n x n matrix is {8 * n * n / 1e9:.1f} GB"
