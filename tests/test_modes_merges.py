"""Mode amplitudes, clusters without stragglers and merge times (usaav_edu.analysis.diagnostics).

Each quantity is checked against an independent formula: the Fourier amplitudes against the
pair sum of cosines, the degree powers on S^2 against the pair sum of Legendre polynomials
(numpy.polynomial.legendre), the merge times against counts built into a hand-made run.
"""
import numpy as np
import pytest
from numpy.polynomial import legendre

import usaav_edu as ue
from usaav_edu.analysis import diagnostics as dg


def circle(theta):
    theta = np.asarray(theta, dtype=float)
    return np.stack([np.cos(theta), np.sin(theta)], axis=1)


def legendre_pair_power(x, l):
    """(1/n^2) sum_ij P_l(<x_i, x_j>), the degree power written as its definition."""
    s = np.clip(x @ x.T, -1.0, 1.0)
    return float(legendre.legval(s, np.eye(l + 1)[l]).mean())


# ---------------------------------------------------------------------------------- modes
def test_fourier_amplitudes_square_to_the_pair_sum_of_cosines():
    theta = np.random.default_rng(0).uniform(0, 2 * np.pi, 37)
    r = dg.modes(circle(theta), 6)
    for k in range(1, 7):
        pair = np.cos(k * (theta[:, None] - theta[None, :])).mean()
        assert r[k - 1] ** 2 == pytest.approx(pair, abs=1e-13)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_degree_powers_on_the_sphere_are_the_legendre_pair_sums(seed):
    x = ue.sphere.uniform(41, 3, seed=seed)
    p = dg.modes(x, 12)
    want = [legendre_pair_power(x, l) for l in range(1, 13)]
    np.testing.assert_allclose(p, want, rtol=0, atol=1e-12)


def test_points_at_the_poles_and_on_the_equator():
    x = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, -1.0], [1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
    want = [legendre_pair_power(x, l) for l in range(1, 9)]
    np.testing.assert_allclose(dg.modes(x, 8), want, rtol=0, atol=1e-13)


def test_a_dirac_mass_has_every_mode_and_antipodes_the_even_ones():
    one = np.tile([[0.6, 0.0, 0.8]], (5, 1))
    np.testing.assert_allclose(dg.modes(one, 10), np.ones(10), atol=1e-12)
    two = np.array([[0.6, 0.0, 0.8], [-0.6, 0.0, -0.8]])
    np.testing.assert_allclose(dg.modes(two, 6), [0, 1, 0, 1, 0, 1], atol=1e-12)
    np.testing.assert_allclose(dg.modes(circle([0.3, 0.3 + np.pi]), 4), [0, 1, 0, 1], atol=1e-12)


def test_uniform_points_have_powers_near_one_over_n():
    # E[p_l] = 1/n for independent uniform points (the diagonal of the pair sum); n p_l is a
    # chi-square of 2l + 1 degrees of freedom over 2l + 1, so the mean of 200 draws is within
    # 0.06 (l = 1) of 1 in one standard deviation: 0.25 is four
    n = 100
    p = np.mean([dg.modes(ue.sphere.uniform(n, 3, seed=s), 6) for s in range(200)], axis=0)
    np.testing.assert_allclose(n * p, np.ones(6), rtol=0.25)


def test_modes_of_a_run_are_one_row_per_frame_and_grow_as_it_collapses():
    model, x0, xi = ue.experiments.setup("usa", n=24, d=3, beta=1.0, seed=3)
    traj = ue.simulate(model, x0, xi, t_max=20.0, n_frames=5)
    m = dg.modes(traj, 3)
    assert m.shape == (5, 3)
    np.testing.assert_allclose(m[2], dg.modes(traj.x[2], 3), rtol=0, atol=0)
    assert m[0, 0] < 0.5 < m[-1, 0] and m[-1] == pytest.approx(np.ones(3), abs=1e-3)


def test_modes_refuse_other_dimensions_and_bad_kmax():
    with pytest.raises(ValueError, match=r"circle \(d = 2\) and on S\^2 \(d = 3\), got d = 4"):
        dg.modes(ue.sphere.uniform(5, 4, seed=0), 3)
    with pytest.raises(ValueError, match="kmax must be >= 1"):
        dg.modes(ue.sphere.uniform(5, 3, seed=0), 0)
    with pytest.raises(TypeError, match="kmax must be an integer"):
        dg.modes(ue.sphere.uniform(5, 3, seed=0), 2.0)
    with pytest.raises(ValueError, match="traj"):
        dg.modes(np.ones((3, 3)), 2)


# ------------------------------------------------------------------ clusters and stragglers
def groups(sizes, d=3, spread=1e-6, seed=0):
    """Points in tight groups of the given sizes around far-apart centres, in that order."""
    rng = np.random.default_rng(seed)
    centres = np.eye(d)[: len(sizes)]
    x = np.concatenate([c + spread * rng.standard_normal((k, d))
                        for c, k in zip(centres, sizes, strict=True)])
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_stragglers_get_minus_one_and_are_not_counted():
    x = groups([5, 1, 3])
    assert dg.clusters(x).tolist() == [0] * 5 + [1] + [2] * 3
    assert dg.clusters(x, min_size=2).tolist() == [0] * 5 + [-1] + [1] * 3
    assert dg.cluster_count(x) == 3 and dg.cluster_count(x, min_size=2) == 2
    assert dg.cluster_count(x, min_size=4) == 1 and dg.cluster_count(x, min_size=6) == 0
    assert dg.clusters(x, min_size=6).tolist() == [-1] * 9


def test_min_size_is_checked():
    x = groups([2, 2])
    with pytest.raises(ValueError, match="min_size must be >= 1"):
        dg.clusters(x, min_size=0)
    with pytest.raises(TypeError, match="min_size must be an integer"):
        dg.cluster_count(x, min_size=1.5)


# ------------------------------------------------------------------------------ merge times
def hand_made_run(frames):
    x = np.stack(frames)
    t = np.arange(len(frames), dtype=float) * 0.5
    return ue.Trajectory(t=t, x=x, xi=np.zeros(x.shape[1]), energy=np.zeros(len(frames)),
                         model=ue.models.usa(1.0), method="rk4")


def test_merge_times_are_the_frames_where_the_count_falls():
    a, b, c = np.eye(3)
    mid = (a + b) / np.linalg.norm(a + b)
    # counts 3, 3, 2, 2, 3 (a straggler drifts away: a rise, not a merge), 1
    frames = [np.array([a, a, b, b, c, c]), np.array([a, a, b, b, c, c]),
              np.array([mid, mid, mid, mid, c, c]), np.array([mid, mid, mid, mid, c, c]),
              np.array([mid, mid, mid, a, c, c]), np.array([c, c, c, c, c, c])]
    m = dg.merge_times(hand_made_run(frames))
    assert m.t.tolist() == [1.0, 2.5] and m.t_before.tolist() == [0.5, 2.0]
    assert m.before.tolist() == [3, 3] and m.after.tolist() == [2, 1]
    # with min_size 2 the lone token of frame 4 is a straggler: the count stays at 2 there
    m2 = dg.merge_times(hand_made_run(frames), min_size=2)
    assert m2.t.tolist() == [1.0, 2.5] and m2.before.tolist() == [3, 2]


def test_a_run_that_collapses_merges_down_to_one_cluster():
    model, x0, xi = ue.experiments.setup("usa", n=12, d=2, beta=1.0, seed=4)
    traj = ue.simulate(model, x0, xi, t_max=30.0, n_frames=61)
    m = dg.merge_times(traj)
    counts = [dg.cluster_count(x) for x in traj.x]
    assert counts[-1] == 1 and len(m.t) >= 1 and m.after[-1] == 1
    assert np.all(np.diff(m.t) > 0) and np.all(m.before > m.after)
    assert sum(m.before - m.after) >= counts[0] - 1
