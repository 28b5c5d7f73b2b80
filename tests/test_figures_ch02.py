"""Chapter 2's figures draw the data they are given, from tiny runs; its explorer offers every
value of beta, in order, labelled beta, within its share of the page."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu import reductions
from usaav_edu.figures import ch02 as figs
from usaav_edu.widgets import embedded_state_bytes


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def sa_run(beta, n=6, d=2, t_max=2.0, seed=0, n_frames=9):
    return ue.simulate(ue.models.sa(beta), ue.sphere.uniform(n, d, seed=seed), t_max=t_max,
                       n_frames=n_frames, seed=seed)


def test_explorer_holds_nine_values_of_beta_in_order_within_its_budget():
    betas = tuple(np.arange(1.0, 10.0))
    runs = {b: sa_run(b, n=8, d=3, t_max=1.0) for b in reversed(betas)}
    ex = figs.explorer(runs)
    (slider,) = ex.sliders
    assert slider.description == "beta"
    labels = [label for label, _ in slider.options]
    assert [float(v) for v in labels] == list(betas)
    assert embedded_state_bytes(ex) <= figs.EXPLORER_BYTES


def test_staircases_draw_the_counts_and_the_energies_of_the_chosen_betas():
    runs = {}
    for b in (1.0, 3.0):
        tr = sa_run(b)
        runs[b, 0] = (tr, reductions.cluster_staircase(tr, 2e-2))
    fig = figs.staircases(runs, betas=(1.0, 3.0), seed=0)
    left, right = fig.axes
    assert len(left.get_lines()) == 2 and len(right.get_lines()) == 2
    tr, counts = runs[3.0, 0]
    assert np.array_equal(left.get_lines()[1].get_ydata(), counts[1:])
    assert np.allclose(right.get_lines()[1].get_ydata(), tr.energy[1:] / (np.exp(3) / 6))
    assert "seed 0" in fig._suptitle.get_text()


def test_merge_times_plot_particles_reduction_and_the_asymptote():
    merge = {2.0: (3.0, 3.1), 4.0: (9.0, 9.2), 3.0: (5.0, 5.1)}
    ax = figs.merge_times(merge, n=32).axes[0]
    dots, line, asym = ax.get_lines()
    assert np.array_equal(dots.get_xdata(), [2.0, 3.0, 4.0])
    assert np.array_equal(dots.get_ydata(), [3.0, 5.0, 9.0])
    assert np.array_equal(line.get_ydata(), [3.1, 5.1, 9.2])
    assert "$n = 32$" in ax.get_title()


def test_lifetimes_draw_one_series_per_seed_and_both_fits():
    betas = (1.0, 2.0, 3.0)
    collapse = np.array([[2.0, 3.0], [5.0, 6.0], [20.0, 30.0]])
    fit = np.polyfit(betas, np.log(collapse).mean(axis=1), 1)
    ax = figs.lifetimes(betas, collapse, (0, 1), fit=fit, fit_all=fit, n=16).axes[0]
    lines = ax.get_lines()
    assert len(lines) == 4
    assert np.allclose(lines[1].get_ydata(), np.log(collapse[:, 1]))
    assert f"slope {fit[0]:.2f}" in lines[2].get_label()


def test_the_sweep_figure_leaves_out_censored_runs():
    betas = (1.0, 2.0)
    t_one = np.array([[1.0, 2.0, 3.0], [4.0, np.inf, 6.0]])
    median = np.array([2.0, 6.0])
    fig = figs.lifetimes_sweep(betas, t_one, median, median / 2, median * 2,
                               np.array([1.0, 0.0]), 0.95, n=8)
    ax = fig.axes[0]
    seeds_1, seeds_2 = ax.get_lines()[:2]
    assert np.array_equal(seeds_2.get_ydata(), [4.0, 6.0])
    assert "3 seeds" in ax.get_title()
