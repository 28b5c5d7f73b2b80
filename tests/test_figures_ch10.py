"""Chapter 10's figures draw what they are given: each is built from a tiny run."""
import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu.figures import ch10 as figs


@pytest.fixture(scope="module")
def circle_run():
    x0 = ue.sphere.uniform(12, 2, seed=0)
    return ue.simulate(ue.models.sa(2.0), x0, t_max=1.0, n_frames=5)


def test_unstable_modes_marks_the_most_unstable_mode(circle_run):
    k = np.arange(1, 6)
    rate = np.array([0.1, 0.3, 0.5, 0.2, 0.1])
    fig = figs.unstable_modes(k, rate, circle_run, beta=2.0, seed=4, k_star=3)
    bars, dots = fig.axes
    heights = [p.get_height() for p in bars.patches]
    assert np.allclose(heights, rate)
    red = [j for j, p in enumerate(bars.patches) if p.get_facecolor() != bars.patches[0].get_facecolor()]
    assert red == [2]  # the bar of k = 3 alone
    assert "$k^* = 3$" in bars.get_title()
    theta = np.mod(np.arctan2(circle_run.x[..., 1], circle_run.x[..., 0]), 2 * np.pi)
    assert np.allclose(np.sort(dots.lines[0].get_ydata()), np.sort(theta.ravel()))
    assert "seed 4" in fig._suptitle.get_text()


def test_mode_growth_draws_the_predicted_line():
    t = np.linspace(0, 2, 5)
    amplitudes = np.exp(np.outer(t, [0.1, 0.4, 0.2])) * 1e-6
    fig = figs.mode_growth(t, amplitudes, 2, 0.4)
    ax = fig.axes[0]
    thick = [line for line in ax.lines if line.get_label().startswith("mode")]
    dashed = [line for line in ax.lines if line.get_linestyle() == "--"]
    assert len(ax.lines) == 4 and len(thick) == 1 and len(dashed) == 1
    assert np.allclose(thick[0].get_ydata(), amplitudes[:, 1])
    assert np.allclose(dashed[0].get_ydata(), 1e-6 * np.exp(0.4 * t))


def test_causal_runs_draws_one_panel_per_decay_with_the_first_token_in_black(circle_run):
    fig = figs.causal_runs({0.0: circle_run, 1.0: circle_run}, beta=1.0)
    assert [ax.get_title() for ax in fig.axes] == [r"$\lambda = 0$", r"$\lambda = 1$"]
    for ax in fig.axes:
        assert len(ax.lines) == 12
        first = ax.lines[-1]
        assert first.get_color() == "black"
        theta0 = np.arctan2(circle_run.x[:, 0, 1], circle_run.x[:, 0, 0])
        assert np.allclose(np.cos(first.get_ydata()), np.cos(theta0))


def test_value_limits_projects_on_the_first_and_third_coordinates():
    x0 = ue.sphere.uniform(10, 3, seed=1)
    xf = ue.sphere.uniform(10, 3, seed=2)
    fig = figs.value_limits({"a": (x0, xf), "b": (xf, x0)})
    ax = fig.axes[0]
    start, end = ax.lines[1], ax.lines[2]
    assert np.allclose(start.get_xdata(), x0[:, 0]) and np.allclose(start.get_ydata(), x0[:, 2])
    assert np.allclose(end.get_xdata(), xf[:, 0]) and np.allclose(end.get_ydata(), xf[:, 2])
    assert [a.get_title() for a in fig.axes] == ["a", "b"]


def test_layer_norms_draws_both_placements_and_the_slope():
    t = np.linspace(1, 10, 10)
    post, pre = np.exp(-t), 1 / t**2
    fig = figs.layer_norms(t, {"post-LN": (t, post, post), "pre-LN": (t, pre, pre)}, beta=1.0,
                           n=8)
    semilog, loglog = fig.axes
    assert len(semilog.lines) == 4 and len(loglog.lines) == 5
    slope = loglog.lines[-1]
    x, y = slope.get_xdata(), slope.get_ydata()
    assert np.allclose(np.diff(np.log(y)) / np.diff(np.log(x)), -2.0)
    assert "$n = 8$" in fig._suptitle.get_text()


def test_noisy_kuramoto_draws_the_curve_and_both_kinds_of_points():
    theory = {0.5: 0.9, 1.2: 0.0}
    particles = {0.5: 0.88, 1.2: 0.1}
    density = {0.5: 0.9, 1.2: 1e-8}
    fig = figs.noisy_kuramoto(theory, particles, density, lambda s: max(0.0, 1.0 - s))
    ax = fig.axes[0]
    curve, dots, crosses = ax.lines[:3]
    assert np.allclose(curve.get_ydata(), np.maximum(0.0, 1.0 - curve.get_xdata()))
    assert list(dots.get_xdata()) == [0.5, 1.2] and list(dots.get_ydata()) == [0.88, 0.1]
    assert list(crosses.get_ydata()) == [0.9, 1e-8]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "self-consistency", "512 particles", "density solver"]
