"""The reductions of usaav_edu.analysis.reductions against closed forms and the particle solver."""

import math

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu import reductions as rd


def test_equiangular_rk4_matches_closed_form_at_beta_zero():
    t = np.linspace(0.0, 4.0, 41)
    for n in (2, 5, 16):
        exact = rd.equiangular_closed_form(t, n)
        assert np.max(np.abs(rd.equiangular_solution(t, n, 0.0) - exact)) < 1e-10
        assert np.max(np.abs(rd.equiangular_solution(t, n, 0.0, normalization="sa") - exact)) < 1e-10


def test_closed_form_solves_the_equation():
    t = np.linspace(0.0, 3.0, 301)
    r = rd.equiangular_closed_form(t, 7, r0=0.2)
    drdt = np.gradient(r, t, edge_order=2)
    assert np.max(np.abs(drdt - rd.equiangular_rate(r, 7, 0.0))) < 1e-3
    assert abs(r[0] - 0.2) < 1e-15 and np.all(np.diff(r) > 0) and r[-1] < 1


@pytest.mark.parametrize("normalization,beta", [("usa", 1.0), ("usa", 2.5), ("sa", 2.0)])
def test_equiangular_reduction_matches_the_particle_solver(normalization, beta):
    n = 6
    model = ue.models.usa(beta) if normalization == "usa" else ue.models.sa(beta)
    traj = ue.simulate(model, ue.sphere.equiangular(n, n), t_max=2.0, n_frames=21)
    r_sim = np.array([rd.pairwise_inner(x)[0] for x in traj.x])
    r_ode = rd.equiangular_solution(traj.t, n, beta, normalization=normalization)
    assert np.max(np.abs(r_sim - r_ode)) < 1e-6
    mean, lo, hi = rd.pairwise_inner(traj.final)
    assert hi - lo < 1e-12


def test_equiangular_energy_is_the_particle_energy():
    n, beta = 5, 1.5
    x = ue.sphere.equiangular(n, n)
    assert abs(rd.equiangular_energy(0.0, n, beta) - ue.energy(ue.models.usa(beta), x)) < 1e-12
    assert abs(rd.equiangular_energy(1.0, n, beta) - math.exp(beta) / (2 * beta)) < 1e-12


def test_circle_velocity_is_kuramoto_at_beta_zero():
    theta = np.random.default_rng(0).uniform(0, 2 * np.pi, 9)
    z = np.mean(np.exp(1j * theta))
    kuramoto = abs(z) * np.sin(np.angle(z) - theta)
    assert np.max(np.abs(rd.circle_velocity(theta, 0.0) - kuramoto)) < 1e-14


def test_circle_flow_matches_the_particle_solver():
    theta0 = np.random.default_rng(1).uniform(0, 2 * np.pi, 12)
    for beta in (0.0, 1.5):
        traj = ue.simulate(ue.models.usa(beta), ue.sphere.circle(theta0), t_max=5.0, n_frames=11)
        theta = rd.circle_flow(theta0, beta, traj.t)
        assert rd.angle_distance(rd.angles(traj.x), theta) < 1e-6


def test_order_parameter_bounds():
    assert abs(rd.order_parameter(np.zeros(5)) - 1.0) < 1e-15
    assert rd.order_parameter(2 * np.pi * np.arange(8) / 8) < 1e-15


def test_plateaus_and_durations():
    t = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    counts = np.array([5, 3, 3, 2, 2, 1])
    runs = rd.plateaus(t, counts)
    assert runs == [(5, 0.0, 1.0), (3, 1.0, 3.0), (2, 3.0, 5.0), (1, 5.0, 5.0)]
    assert sum(b - a for _, a, b in runs) == t[-1] - t[0]
    assert rd.time_with_clusters(t, counts, 3) == 2.0
    assert rd.first_time_at_most(t, counts, 2) == 3.0
    assert rd.first_time_at_most(t, np.full(6, 4), 1) == math.inf


def test_cluster_staircase_counts_planted_clusters():
    traj = ue.simulate(ue.models.usa(1.0), ue.sphere.uniform(20, 3, seed=2), t_max=40.0, n_frames=5)
    counts = rd.cluster_staircase(traj, 1e-3)
    assert counts[0] == 20 and counts[-1] == 1 and np.all(np.diff(counts) <= 0)


def test_validation_names_the_argument():
    with pytest.raises(ValueError, match="n"):
        rd.equiangular_rate(0.0, 1, 1.0)
    with pytest.raises(ValueError, match="beta"):
        rd.equiangular_solution([0.0, 1.0], 4, -1.0)
    with pytest.raises(ValueError, match="normalization"):
        rd.equiangular_rate(0.0, 4, 1.0, normalization="softmax")
    with pytest.raises(ValueError, match="t must"):
        rd.equiangular_solution([1.0, 0.5], 4, 1.0)
    with pytest.raises(ValueError, match="x must"):
        rd.angles(np.zeros((3, 3)))
    with pytest.raises(TypeError, match="traj"):
        rd.cluster_staircase(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="counts"):
        rd.plateaus([0.0, 1.0], [1, 2, 3])
    with pytest.raises(TypeError, match="counts"):
        rd.plateaus([0.0, 1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="r0"):
        rd.equiangular_closed_form([0.0], 4, r0=1.5)


def test_two_cluster_rate_and_merge_time():
    th = np.linspace(0.1, 3.0, 7)
    # equal masses, beta = 0: SA and USA both give -sin(theta)
    assert np.max(np.abs(rd.two_cluster_rate(th, 0.5, 0.0, "sa") + np.sin(th))) < 1e-14
    assert np.max(np.abs(rd.two_cluster_rate(th, 0.3, 0.0, "usa") + np.sin(th))) < 1e-14
    # beta = 0: T = log(tan(theta0/2) / tan(theta_end/2))
    exact = np.log(np.tan(np.pi / 4) / np.tan(0.005))
    assert abs(rd.two_cluster_merge_time(np.pi / 2, 0.01, 0.5, 0.0, "sa") - exact) < 1e-9
    # large beta: T ~ e^{beta (1 - cos theta0)} / (2 beta sin^2 theta0) for SA, equal masses
    beta = 40.0
    t = rd.two_cluster_merge_time(np.pi / 2, 0.01, 0.5, beta, "sa")
    assert abs(t * 2 * beta * np.exp(-beta) - 1) < 0.06


def test_two_cluster_reduction_matches_the_particle_solver():
    n, th0, beta = 8, 2.0, 3.0
    x0 = ue.sphere.circle(np.r_[np.zeros(n // 2), np.full(n // 2, th0)])
    for model, norm in [(ue.models.usa(beta), "usa"), (ue.models.sa(beta), "sa")]:
        t_half = rd.two_cluster_merge_time(th0, 1.0, 0.5, beta, norm)
        traj = ue.simulate(model, x0, t_max=t_half, method="dopri5", n_frames=2)
        a = rd.angles(traj.final)
        assert abs(abs(np.angle(np.exp(1j * (a[-1] - a[0])))) - 1.0) < 1e-5
    with pytest.raises(ValueError, match="theta_end"):
        rd.two_cluster_merge_time(1.0, 2.0, 0.5, 1.0)
    with pytest.raises(ValueError, match="p"):
        rd.two_cluster_rate(1.0, 1.5, 1.0)
