"""Diagnostics and exact maximizers, read like the formulas they implement."""

import numpy as np

import usaav_edu as ue
from usaav_edu import diagnostics as dg
from usaav_edu import maximizers as mx


def test_spread_and_dirac_distance_of_a_dirac_and_a_great_circle():
    dirac = np.tile([0.0, 0.0, 1.0], (10, 1))
    circle = mx.latitude_circle(0.0, 40)
    assert dg.spread(dirac) == 0.0 and dg.dirac_distance(dirac) == 0.0
    assert abs(dg.spread(circle) - 1.0) < 1e-12
    assert abs(dg.dirac_distance(circle) - np.sqrt(2.0)) < 1e-12


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
    assert dg.cluster_count(pts, tol=1e-3) == 4
    assert dg.cluster_count(pts, tol=1e-8) == 40
    labels = dg.clusters(pts, tol=1e-3)
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
    model = ue.models.cosine_bias(1.0)
    assert abs(ue.energy(model, x, xi) - 0.25) < 1e-12
    assert abs(mx.cosine_circle_energy(xi, 1.0) - 0.25) < 1e-12
    assert abs(ue.energy_bound(model, xi) - 0.25) < 1e-12


def test_frames_from_targets_realize_the_targets():
    targets = ue.sphere.uniform(7, 3, seed=5)
    u = np.array([0.0, 0.0, 1.0])
    model = ue.models.prefix_gauge_from_targets(targets, u=u)
    x = mx.gauge_maximizer(model, np.arange(7), u)
    assert np.allclose(x, targets, atol=1e-14)
    assert abs(ue.energy(model, x, np.arange(7)) - np.e / 2) < 1e-12


def test_distance_bias_bound_is_attained_by_a_dirac():
    n = 20
    xi = np.linspace(0, 3, n)
    model = ue.models.distance_bias(1.0, 0.7)
    dirac = np.tile([1.0, 0.0, 0.0], (n, 1))
    assert abs(ue.energy(model, dirac, xi) - ue.energy_bound(model, xi)) < 1e-12
    assert ue.energy(model, ue.sphere.uniform(n, 3, seed=0), xi) < ue.energy_bound(model, xi)


def test_diameter_resolves_tiny_clusters():
    x = np.array([[1.0, 0.0, 0.0], [np.cos(1e-10), np.sin(1e-10), 0.0], [np.cos(3e-10), -np.sin(3e-10), 0.0]])
    assert abs(dg.diameter(x) - 4e-10) < 1e-15
    assert dg.diameter(x[:1]) == 0.0
