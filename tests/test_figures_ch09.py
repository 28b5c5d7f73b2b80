"""Chapter 9's figures draw what they are given: each is built from a tiny density run."""
import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu.figures import ch09 as figs
from usaav_edu.meanfield import solver as mf

M = 32


@pytest.fixture(scope="module")
def run():
    th = mf.grid(M)
    return mf.solve(ue.models.usa(1.0), (1 + 0.5 * np.cos(th)) / (2 * np.pi), 0.2, n_frames=5)


def test_density_run_draws_the_image_and_the_snapshots(run):
    fig = figs.density_run(run, beta=1.0, n_snapshots=3)
    image_ax, curves_ax = fig.axes[:2]
    assert r"$\beta = 1$" in image_ax.get_title()
    assert len(curves_ax.lines) == 3
    assert np.allclose(curves_ax.lines[0].get_ydata()[:M], run.f[0][:M])


def test_rates_draws_every_draw_and_the_fitted_slopes(run):
    w1 = {"random": {10: [0.3, 0.25], 100: [0.1]}, "quantile": {10: [0.05], 100: [0.005]}}
    slope = {"random": -0.51, "quantile": -1.0}
    angles = np.linspace(0, 2 * np.pi, 50, endpoint=False)
    fig = figs.rates(w1, slope, theta=mf.grid(M), f_end=run.f[-1], angles=angles, beta=1.0,
                     t_end=0.2, seed=3)
    hist_ax, rates_ax = fig.axes
    assert np.isclose(sum(p.get_height() * p.get_width() for p in hist_ax.patches), 1.0)
    labels = [line.get_label() for line in rates_ax.lines]
    assert "random: fitted slope $-0.51$" in labels and "quantile: fitted slope $-1.00$" in labels
    dots = [line for line in rates_ax.lines if line.get_linestyle() == "None"]
    assert sum(len(line.get_ydata()) for line in dots) == 5  # every draw, once
    assert "seed 3" in fig._suptitle.get_text()


def test_conditional_diracization_plots_the_peaks():
    th = mf.grid(M)
    start = np.exp(np.cos(th)) / (2 * np.pi * np.i0(1.0))
    rope2 = ue.models.rope(beta=1.0, omegas=(1.0,), d=2)
    cond = mf.solve(rope2, np.tile(start, (2, 1)), 0.2, xi=np.array([0.0, 1.0]), n_frames=3)
    plain = mf.solve(ue.models.usa(1.0), start, 0.2, n_frames=3)
    fig = figs.conditional_diracization(cond, plain)
    peaks = fig.axes[2].lines
    assert len(peaks) == 3
    assert np.allclose(peaks[1].get_ydata(), cond.marginal.max(axis=1))
    assert np.allclose(peaks[2].get_ydata(), plain.f.max(axis=1))
