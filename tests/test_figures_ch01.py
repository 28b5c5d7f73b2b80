"""Chapter 1's figures draw the data they are given, from tiny runs."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu import reductions
from usaav_edu.figures import ch01 as figs


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def tiny(model, n=6, d=3, t_max=1.0, seed=0):
    return ue.simulate(model, ue.sphere.uniform(n, d, seed=seed), t_max=t_max, n_frames=9,
                       seed=seed)


def test_energy_plots_the_energy_and_the_bound():
    traj = tiny(ue.models.usa(1.0))
    fig = figs.energy(traj, bound=np.e / 2)
    ax = fig.axes[0]
    curve, bound = ax.get_lines()
    assert np.array_equal(curve.get_ydata(), traj.energy)
    assert np.allclose(bound.get_ydata(), np.e / 2)
    assert r"$\beta = 1$" in ax.get_title() and "$n = 6$" in ax.get_title()


def test_equiangular_draws_a_line_and_dots_per_beta():
    runs = {}
    x = ue.sphere.equiangular(4, 4)
    for b in (0.0, 2.0):
        tr = ue.simulate(ue.models.usa(b), x, t_max=0.5, n_frames=9)
        inner = np.array([reductions.pairwise_inner(xf) for xf in tr.x])
        runs[b] = (tr, inner, reductions.equiangular_solution(tr.t, 4, b))
    ax = figs.equiangular(runs).axes[0]
    lines = ax.get_lines()
    assert len(lines) == 4
    assert np.array_equal(lines[1].get_ydata(), runs[0.0][1][::4, 0])
    assert np.array_equal(lines[2].get_ydata(), runs[2.0][2])
    assert "$n = d = 4$" in ax.get_title()


def test_circle_draws_the_order_parameter_and_every_angle():
    theta0 = np.linspace(0.0, 1.0, 5)
    tr = ue.simulate(ue.models.usa(0.0), ue.sphere.circle(theta0), t_max=0.5, n_frames=9)
    theta = reductions.circle_flow(theta0, 0.0, tr.t)
    fig = figs.circle({0.0: (tr, theta)}, seed=3)
    left, right = fig.axes
    assert np.allclose(left.get_lines()[0].get_ydata(), reductions.order_parameter(theta))
    assert len(right.get_lines()) == 5
    assert "seed 3" in fig._suptitle.get_text()


def test_paths_draws_every_token_of_every_flow():
    x0 = ue.sphere.uniform(5, 3, seed=1)
    runs = {name: ue.simulate(flow(1.0), x0, t_max=0.5, n_frames=9, seed=1)
            for name, flow in [("USA", ue.models.usa), ("SA", ue.models.sa)]}
    ax = figs.paths(runs).axes[0]
    # 5 paths and an end point per flow, and the start
    assert len(ax.get_lines()) == 2 * (5 + 1) + 1
    xs, ys, zs = ax.get_lines()[0].get_data_3d()
    assert np.allclose(np.stack([xs, ys, zs], axis=1), runs["USA"].x[:, 0])
    assert "seed 1" in ax.get_title()


def test_contraction_plots_the_deviation_and_the_energies():
    x0 = ue.sphere.uniform(5, 3, seed=2)
    runs = {name: ue.simulate(flow(1.0), x0, t_max=0.5, n_frames=9, seed=2)
            for name, flow in [("USA", ue.models.usa), ("SA", ue.models.sa)]}
    dev = {name: np.linspace(1.0, 0.1, 9) * (k + 1) for k, name in enumerate(runs)}
    left, right = figs.contraction(runs, dev, bound=1.5).axes
    assert np.array_equal(left.get_lines()[1].get_ydata(), dev["SA"])
    assert np.array_equal(right.get_lines()[0].get_ydata(), runs["USA"].energy)
    assert np.allclose(right.get_lines()[-1].get_ydata(), 1.5)


def test_beta_explorer_offers_the_betas_in_increasing_order_within_its_budget():
    from usaav_edu.widgets import embedded_state_bytes

    betas = (0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0)
    runs = {b: tiny(ue.models.usa(b), n=8) for b in reversed(betas)}
    ex = figs.beta_explorer(runs)
    (slider,) = ex.sliders
    assert slider.description == "beta"
    assert [float(label) for label, _ in slider.options] == list(betas)
    assert embedded_state_bytes(ex) <= figs.EXPLORER_BYTES
