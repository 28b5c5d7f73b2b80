"""Tests of usaav_edu.analysis.laws: laws on RoPE orbits and targets on the sphere."""

import math

import numpy as np
import pytest

from usaav_edu import laws


# ------------------------------------------------------------------ circle laws
def test_uniform_law_cdf_and_ppf_are_exact():
    law = laws.uniform_circle_law()
    t = np.linspace(0, 2 * np.pi, 50, endpoint=False)
    assert np.allclose(law.cdf(t), t / (2 * np.pi), atol=1e-14)
    q = np.linspace(0, 1, 11)
    assert np.allclose(law.ppf(q), 2 * np.pi * q, atol=1e-12)


def test_von_mises_mixture_normalized_and_cdf_matches_quadrature():
    law = laws.von_mises_mixture([1.0, 4.0], [6.0, 2.0], [3.0, 1.0])
    # the density integrates to one
    t = np.linspace(0, 2 * np.pi, 200001)
    p = law.pdf(t)
    assert abs(np.trapezoid(p, t) - 1.0) < 1e-9
    # cdf against an independent fine trapezoid rule at a few angles
    for a in (0.3, 1.0, 2.5, 4.0, 6.0):
        tt = np.linspace(0, a, 100001)
        assert abs(law.cdf(a) - np.trapezoid(law.pdf(tt), tt)) < 1e-8
    # F' = p (finite differences)
    a, h = 2.2, 1e-5
    assert abs((law.cdf(a + h) - law.cdf(a - h)) / (2 * h) - law.pdf(a)) < 1e-5


def test_von_mises_single_bump_has_known_mean_direction_and_symmetry():
    law = laws.von_mises_mixture([2.0], [3.0], [1.0])
    assert abs(law.mean_direction() - 2.0) < 1e-9
    # symmetric about the center: F(c + s) - F(c) = F(c) - F(c - s)
    c = 2.0
    for s in (0.2, 0.9, 1.7):
        assert abs((law.cdf(c + s) - law.cdf(c)) - (law.cdf(c) - law.cdf(c - s))) < 1e-10


def test_ppf_inverts_cdf():
    law = laws.two_bump_law(kappa=8.0, weight=0.7)
    q = np.linspace(0.001, 0.999, 97)
    assert np.max(np.abs(law.cdf(law.ppf(q)) - q)) < 1e-12
    th = law.ppf(q)
    assert np.all(np.diff(th) > 0)


def test_two_bump_weights():
    law = laws.two_bump_law(center=np.pi / 2, separation=np.pi, kappa=20.0, weight=0.65)
    # with sharp bumps at pi/2 and 3pi/2, the mass of [0, pi) is the first weight
    assert abs(law.cdf(np.pi - 1e-12) - 0.65) < 1e-6


def test_quantile_points_have_ks_distance_half_over_n():
    law = laws.two_bump_law()
    for n in (1, 7, 64):
        pts = laws.quantile_points(law, n)
        assert abs(laws.ks_statistic(pts, law.cdf) - 0.5 / n) < 1e-9


def test_rope_positions_scale_with_omega():
    law = laws.two_bump_law()
    p1 = laws.rope_positions(law, 16, 1.0)
    p2 = laws.rope_positions(law, 16, 2.0)
    assert np.allclose(p2, p1 / 2)
    with pytest.raises(ValueError, match="omega"):
        laws.rope_positions(law, 16, 0.0)


def test_orbit_phase_reads_rotation_angle():
    s = np.array([0.0, 0.5, 2.0, 5.0])
    u = np.array([0.6, 0.0, 0.8])
    x = np.stack([0.6 * np.cos(-s), 0.6 * np.sin(-s), np.full(4, 0.8)], axis=1)  # R_{-s} u
    assert np.allclose(laws.orbit_phase(x, u), s, atol=1e-12)


def test_ks_statistic_known_values():
    def cdf(t):  # uniform on [0, 2]
        return np.clip(np.asarray(t) / 2.0, 0, 1)

    assert abs(laws.ks_statistic([1.0], cdf) - 0.5) < 1e-15
    assert abs(laws.ks_statistic([0.0, 0.0], cdf) - 1.0) < 1e-15
    # an iid sample stays under the 5% threshold most of the time; a wrong law does not
    rng = np.random.default_rng(0)
    s = 2.0 * rng.random(400)
    assert laws.ks_statistic(s, cdf) < laws.ks_threshold(400, 0.01)
    assert laws.ks_statistic(s ** 2 / 2.0, cdf) > laws.ks_threshold(400, 0.01)


def test_ks_threshold_value():
    assert abs(laws.ks_threshold(1, 0.05) - 1.3581015) < 1e-6
    assert abs(laws.ks_threshold(100, 0.05) - 0.13581015) < 1e-7


# ------------------------------------------------------------------ sphere targets
def test_seam_curve_on_sphere_and_closed():
    pts = laws.seam_curve(200, b=0.25)
    assert pts.shape == (200, 3)
    assert np.allclose(np.linalg.norm(pts, axis=1), 1.0, atol=1e-14)
    # neighbouring points are close, the curve closes
    steps = np.linalg.norm(np.diff(np.vstack([pts, pts[:1]]), axis=0), axis=1)
    assert steps.max() < 0.1


def test_vmf_pdf_integrates_to_one():
    c = np.array([[0, 0, 1.0], [1.0, 0, 0]])
    # integrate over the sphere in (theta, phi)
    th = np.linspace(0, np.pi, 801)
    ph = np.linspace(0, 2 * np.pi, 1601)
    T, P = np.meshgrid(th, ph, indexing="ij")
    x = np.stack([np.sin(T) * np.cos(P), np.sin(T) * np.sin(P), np.cos(T)], axis=-1).reshape(-1, 3)
    f = laws.vmf_mixture_pdf(x, c, [5.0, 0.0], [1.0, 1.0]).reshape(T.shape) * np.sin(T)
    total = np.trapezoid(np.trapezoid(f, ph, axis=1), th)
    assert abs(total - 1.0) < 1e-4


def test_vmf_sample_height_law():
    # the height <c, x> of a vMF sample has mean coth(kappa) - 1/kappa
    kappa = 4.0
    pts, comp = laws.vmf_mixture_sample(20000, [[0, 0, 1.0]], [kappa], [1.0], seed=1)
    assert np.allclose(np.linalg.norm(pts, axis=1), 1.0)
    assert np.all(comp == 0)
    mean = 1 / math.tanh(kappa) - 1 / kappa
    assert abs(pts[:, 2].mean() - mean) < 0.01
    # same seed, same points
    again, _ = laws.vmf_mixture_sample(20000, [[0, 0, 1.0]], [kappa], [1.0], seed=1)
    assert np.array_equal(pts, again)


def test_vmf_sample_mixture_weights():
    c = [[0, 0, 1.0], [0, 0, -1.0]]
    _, comp = laws.vmf_mixture_sample(10000, c, [10.0, 10.0], [3.0, 1.0], seed=2)
    assert abs(np.mean(comp == 0) - 0.75) < 0.02


def test_symmetric_cap_symmetry_and_heights():
    axis = np.array([1.0, 2.0, 2.0]) / 3.0
    pts = laws.symmetric_cap(24, axis=axis, m=3, heights=(0.3, 0.8), seed=0)
    assert np.allclose(np.linalg.norm(pts, axis=1), 1.0)
    h = pts @ axis
    assert np.all(h >= 0.3 - 1e-12) and np.all(h <= 0.8 + 1e-12)
    # invariant under the rotation by 2 pi / 3 about the axis: the mean lies on the axis
    m = pts.mean(axis=0)
    assert np.linalg.norm(m - (m @ axis) * axis) < 1e-12


# ------------------------------------------------------------------ validation
@pytest.mark.parametrize("call, exc, word", [
    (lambda: laws.von_mises_mixture([0.0], [-1.0], [1.0]), ValueError, "kappas"),
    (lambda: laws.von_mises_mixture([0.0, 1.0], [1.0], [1.0, 1.0]), ValueError, "kappas"),
    (lambda: laws.von_mises_mixture([0.0], [1.0], [-1.0]), ValueError, "weights"),
    (lambda: laws.von_mises_mixture("a", [1.0], [1.0]), TypeError, "centers"),
    (lambda: laws.two_bump_law(weight=1.5), ValueError, "weight"),
    (lambda: laws.CircleLaw.from_density(3.0), TypeError, "density"),
    (lambda: laws.CircleLaw.from_density(lambda t: -np.ones_like(t)), ValueError, "non-negative"),
    (lambda: laws.CircleLaw.from_density(lambda t: np.zeros_like(t)), ValueError, "positive"),
    (lambda: laws.uniform_circle_law().ppf([1.5]), ValueError, "q"),
    (lambda: laws.quantile_points("law", 3), TypeError, "law"),
    (lambda: laws.quantile_points(laws.uniform_circle_law(), 0), ValueError, "n"),
    (lambda: laws.ks_statistic([], lambda t: t), ValueError, "sample"),
    (lambda: laws.ks_statistic([0.5], 3), TypeError, "cdf"),
    (lambda: laws.ks_statistic([0.5], lambda t: 2 + 0 * t), ValueError, "cdf"),
    (lambda: laws.ks_threshold(10, 0.0), ValueError, "alpha"),
    (lambda: laws.orbit_phase(np.ones((2, 3)), [0, 0, 1.0]), ValueError, "u"),
    (lambda: laws.orbit_phase(np.ones((2, 3)), [1.0, 0]), ValueError, "u"),
    (lambda: laws.orbit_phase(np.ones((2, 3)), [1.0, 0, 0], plane=(0, 0)), ValueError, "plane"),
    (lambda: laws.seam_curve(10, b=0.7), ValueError, "b"),
    (lambda: laws.vmf_mixture_sample(5, [[1.0, 1.0, 0]], [1.0], [1.0]), ValueError, "centers"),
    (lambda: laws.vmf_mixture_sample(5, [[1.0, 0]], [1.0], [1.0]), ValueError, "centers"),
    (lambda: laws.vmf_mixture_pdf([[0, 0, 2.0]], [[1.0, 0, 0]], [1.0], [1.0]), ValueError, "x"),
    (lambda: laws.symmetric_cap(10, m=4), ValueError, "multiple"),
    (lambda: laws.symmetric_cap(8, m=1), ValueError, "m"),
    (lambda: laws.symmetric_cap(8, heights=(0.5, 1.0)), ValueError, "heights"),
    (lambda: laws.symmetric_cap(8, axis=(1.0, 0.0)), ValueError, "axis"),
    (lambda: laws.wrap_angle([np.nan]), ValueError, "theta"),
])
def test_validation(call, exc, word):
    with pytest.raises(exc, match=word):
        call()
