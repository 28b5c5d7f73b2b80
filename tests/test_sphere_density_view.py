"""A density run of the solver on the sphere in the views: DensityView (the book's animation) and
the matplotlib helpers of usaav_edu.widgets.density_plots (sphere_density_map, sphere_density_at).

The values drawn are checked against the run's coefficients evaluated independently
(usaav_edu.meanfield.harmonics.evaluate) and, at t = 0, against the closed form of the initial
density; the colours against the colour map applied to those values; the labelled marginal
against the rho-weighted sum of the conditionals.  The view is checked headless, by what its
widget state holds.
"""
from __future__ import annotations

import re

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure

import usaav_edu as ue
from usaav_edu import widgets as W
from usaav_edu.analysis import density as dens
from usaav_edu.meanfield import harmonics as H
from usaav_edu.widgets.density_plots import sphere_density_at, sphere_density_map

FOUR_PI = 4.0 * np.pi
XI = np.array([0.0, 1.0, 2.0])
RHO = np.array([0.5, 0.3, 0.2])


@pytest.fixture(autouse=True)
def _live_kernel(monkeypatch):
    # a live kernel unless a test says otherwise
    monkeypatch.delenv("USAAV_EDU_STATIC_PAGE", raising=False)


def tilted(points):
    """The initial density (1 + z / 2) / (4 pi) of mass 1, of degree 1."""
    return (1.0 + 0.5 * points[:, 2]) / FOUR_PI


@pytest.fixture(scope="module")
def short_run():
    grid = ue.meanfield.sphere_grid(12)
    return ue.meanfield.solve(ue.models.usa(beta=1.0), tilted(grid.points), 0.1, grid=grid,
                              n_frames=5)


@pytest.fixture(scope="module")
def collapsing_run():
    # USA at beta = 1 sharpens the tilt towards the north pole: the peak grows from 1.5 to 2.7
    grid = ue.meanfield.sphere_grid(16)
    return ue.meanfield.solve(ue.models.usa(beta=1.0), tilted(grid.points), 1.0, grid=grid,
                              n_frames=4)


@pytest.fixture(scope="module")
def labelled_run():
    grid = ue.meanfield.sphere_grid(8)
    p = grid.points
    f0 = np.stack([tilted(p), (1.0 + 0.5 * p[:, 0]) / FOUR_PI, (1.0 - 0.4 * p[:, 1]) / FOUR_PI])
    return ue.meanfield.solve(ue.models.distance_bias(beta=1.0, lam=0.5), f0, 0.3, xi=XI,
                              rho=RHO, grid=grid, n_frames=3)


def evaluated(coefficients, lmax, points):
    """``(F, n)`` values of a series of coefficients at ``points`` (the independent check)."""
    return np.stack([H.evaluate(a, lmax, points) for a in coefficients])


def text(widget):
    return re.sub("<[^>]+>", "", widget.value)


# ---------------------------------------------------------------------- the values drawn
def test_vertex_colours_are_the_colour_map_of_the_solvers_density(short_run):
    run = short_run
    view = W.DensityView(run, mode="density", level=3, scale="linear", colormap="magma")
    vertices = dens.sphere_mesh(3).vertices
    shared = view.meshes[0].geometry.attributes["position"].array
    np.testing.assert_array_equal(shared, vertices.astype(np.float32))
    np.testing.assert_array_equal(view.frame_indices, np.arange(run.t.size))
    values = evaluated(run.coefficients[view.frame_indices], 12, vertices)
    assert np.max(np.abs(view.densities - values)) < 1e-12
    # at t = 0 the solver holds the initial density exactly (it has degree 1 <= lmax)
    assert run.t[0] == 0.0
    assert np.max(np.abs(view.densities[0] - tilted(vertices))) < 1e-12
    # linear scale: the colour map at f / max f over the frames drawn
    u = values / values.max()
    expected = np.round(255 * matplotlib.colormaps["magma"](u)[..., :3]).astype(np.uint8)
    colours = view.frame_colors
    assert colours.shape == (run.t.size, len(vertices), 3)
    assert np.max(np.abs(colours.astype(int) - expected.astype(int))) <= 1
    assert np.mean(colours == expected) > 0.999
    assert view.color_range == (0.0, pytest.approx(float(values.max()), abs=1e-15))


def test_log_colours_follow_the_log_of_the_density(short_run):
    view = W.DensityView(short_run, level=2)
    lo, hi = view.color_range
    assert lo <= 1.0 / (8.0 * np.pi) and hi >= 2.0 / FOUR_PI    # the uniform density inside
    values = evaluated(short_run.coefficients, 12, dens.sphere_mesh(2).vertices)
    u = (np.log(np.maximum(values, lo)) - np.log(lo)) / (np.log(hi) - np.log(lo))
    expected = np.round(255 * matplotlib.colormaps["viridis"](u)[..., :3]).astype(int)
    assert np.max(np.abs(view.frame_colors.astype(int) - expected)) <= 1


def test_the_frames_of_a_run_that_concentrates_differ_and_play_at_their_times(collapsing_run):
    run = collapsing_run
    view = W.DensityView(run, level=3)
    peaks = view.densities.max(axis=1)
    assert np.all(np.diff(peaks) > 0.05 / FOUR_PI)           # the peak rises frame by frame
    assert peaks[-1] * FOUR_PI > 2.5
    north = np.argmax(view.mesh.vertices[:, 2])
    assert np.argmax(view.densities[-1]) == north              # where the tilt points
    colours = view.frame_colors
    for j in range(1, len(colours)):
        changed = np.any(colours[j] != colours[j - 1], axis=1)
        assert changed.mean() > 0.3
    np.testing.assert_allclose(view.keyframe_times, run.t - run.t[0], atol=1e-6)
    for j, time in enumerate(run.t):
        assert view.shown_mesh(float(time) + 1e-4) == j
    assert view.action is not None and len(view.children) == 3   # scene, controls, caption


def test_the_labelled_marginal_is_the_rho_weighted_sum_of_the_conditionals(labelled_run):
    run = labelled_run
    marginal = W.DensityView(run, level=2)
    named = W.DensityView(run, level=2, label="marginal")
    labels = [W.DensityView(run, level=2, label=k) for k in range(len(XI))]
    mix = np.einsum("l,lfv->fv", RHO, np.stack([view.densities for view in labels]))
    assert np.max(np.abs(marginal.densities - mix)) < 1e-14
    np.testing.assert_array_equal(named.densities, marginal.densities)
    vertices = dens.sphere_mesh(2).vertices
    for k, view in enumerate(labels):
        values = evaluated(run.coefficients[:, k], 8, vertices)
        assert np.max(np.abs(view.densities - values)) < 1e-12
        assert f"label {k} (xi = {XI[k]:g})" in text(view.caption)
    # the labels part, so the views differ
    assert np.max(np.abs(labels[0].densities[-1] - labels[1].densities[-1])) > 1e-3
    assert "content marginal of its 3 labels" in text(marginal.caption)
    # and the marginal at the solver's grid is the run's own marginal
    at_grid = sphere_density_at(run, run.grid.points)
    assert np.max(np.abs(at_grid - run.marginal)) < 1e-12


# ---------------------------------------------------------------------- modes, captions
def test_auto_draws_a_density_run_as_its_density_with_or_without_a_kernel(short_run):
    for live in (True, False, None):
        view = W.DensityView(short_run, live=live, level=2)
        assert view.mode == "density" and view.run is short_run
        assert view.points is None and view.token_positions.shape == (0, 3)
    caption = text(view.caption)
    assert "the solver's density of degree lmax = 12" in caption
    assert "icosphere of 162 vertices" in caption and "5 of 5 frames" in caption
    assert "kernel" not in caption and view.bandwidth is None
    assert "uniform = 1/(4" in text(view.legend)
    assert "Press" in text(view.time_info)
    assert W.DensityView(short_run, mode="density", level=2).mode == "density"


def test_a_run_that_stopped_unresolved_says_so():
    grid = ue.meanfield.sphere_grid(12)
    run = ue.meanfield.solve(ue.models.usa(beta=1.0), tilted(grid.points), 1.0, grid=grid,
                             n_frames=4, on_failure="return")
    assert run.t_unresolved is not None
    caption = text(W.DensityView(run, level=1).caption)
    assert f"the grid stopped resolving it after time {run.t_unresolved:g}" in caption
    # the printed book names each picture's time as "t = ..." in its caption (tools/print_pdf)
    assert "t = " not in caption


def test_the_page_budget_holds_for_a_density_run(short_run):
    coarser = W.DensityView(short_run, level=5, max_bytes=300_000, live=True)
    assert coarser.level < 5 and "max_bytes=300000" in coarser.budget_note
    with pytest.raises(ValueError, match="max_bytes"):
        W.DensityView(short_run, level=5, max_bytes=300_000, live=False)
    few = W.DensityView(short_run, level=2, max_frames=2)
    np.testing.assert_array_equal(few.frame_indices, [0, 4])
    assert len(few.meshes) == 2


# ---------------------------------------------------------------------- refusals
def test_points_mode_refuses_a_density_run(short_run):
    with pytest.raises(ValueError, match=r"mode='points' draws the tokens.*mode='density'"):
        W.DensityView(short_run, mode="points")
    view = W.DensityView(short_run, level=1)
    with pytest.raises(ValueError, match="mode='points'"):
        view.show_frame(0)
    with pytest.raises(NotImplementedError, match="make a new DensityView"):
        view.show(short_run)


def test_a_run_on_the_circle_is_refused_naming_the_circle_views():
    f0 = np.full(32, 1.0 / (2.0 * np.pi))
    circle = ue.meanfield.solve(ue.models.usa(beta=1.0), f0, 0.1, n_frames=2)
    for mode in ("auto", "density", "points"):
        with pytest.raises(ValueError, match=r"on the circle.*density_plots.*plot_density_image"):
            W.DensityView(circle, mode=mode)
    with pytest.raises(ValueError, match="plot_density_curves"):
        sphere_density_map(circle)
    with pytest.raises(ValueError, match="plot_conditionals"):
        sphere_density_at(circle, [[0.0, 0.0, 1.0]])


@pytest.mark.parametrize("label, kind, match", [
    (3, ValueError, r"label must lie in \[0, 2\]"),
    (-1, ValueError, r"label must lie in \[0, 2\]"),
    ("content", ValueError, "label must be the index of a label"),
    (1.5, TypeError, "label must be an integer"),
    (True, TypeError, "label must be an integer"),
])
def test_a_bad_label_is_refused(labelled_run, label, kind, match):
    with pytest.raises(kind, match=match):
        W.DensityView(labelled_run, label=label)
    with pytest.raises(kind, match=match):
        sphere_density_map(labelled_run, label=label)


def test_label_and_bandwidth_are_refused_where_they_mean_nothing(short_run):
    with pytest.raises(ValueError, match="label must be None for a run without labels"):
        W.DensityView(short_run, label=0)
    with pytest.raises(ValueError, match="bandwidth"):
        W.DensityView(short_run, bandwidth=0.2)
    x = ue.sphere.uniform(20, 3, seed=1)[None]
    tokens = ue.Trajectory(t=np.zeros(1), x=x, xi=np.arange(20.0), energy=np.zeros(1),
                           model=ue.models.usa(beta=1.0), method="rk4", dt=0.1)
    with pytest.raises(ValueError, match="label picks one label of a labelled density run"):
        W.DensityView(tokens, label=0)
    with pytest.raises(TypeError, match="trajectory must be a usaav_edu Trajectory"):
        W.DensityView(short_run.coefficients)


# ---------------------------------------------------------------------- matplotlib
def test_the_map_has_one_axes_per_frame_and_a_colour_bar_and_shows_the_density(short_run):
    fig = sphere_density_map(short_run, resolution=24)
    try:
        assert isinstance(fig, Figure)
        assert len(fig.axes) == 4 + 1                     # four frames of five, the colour bar
        image = np.asarray(fig.axes[0].images[0].get_array())
        assert image.shape == (24, round(np.pi * 24))
        # pixel rows sit at z = -1 + (i + 1/2) 2 / 24, and at t = 0 the density is (1 + z/2)/(4 pi)
        z = -1.0 + (np.arange(24) + 0.5) * (2.0 / 24)
        expected = (1.0 + 0.5 * z[:, None]) / FOUR_PI
        assert np.max(np.abs(image - expected)) < 1e-12
        assert [ax.get_title() for ax in fig.axes[:4]] == [
            f"$t = {t:.3g}$" for t in short_run.t[[0, 1, 3, 4]]]
    finally:
        plt.close(fig)


def test_the_orthographic_panels_follow_the_frames_chosen(labelled_run):
    fig = sphere_density_map(labelled_run, frames=[0, 1, 2, -1, 0], projection="orthographic",
                             resolution=20, colorbar=False, label=1, log=True)
    try:
        assert len(fig.axes) == 5
        first, last = (np.asarray(fig.axes[j].images[0].get_array()) for j in (0, 3))
        assert np.isnan(first[0, 0]) and np.isfinite(first[10, 10])   # outside / inside the disk
        assert np.nanmax(np.abs(first - last)) > 1e-3
    finally:
        plt.close(fig)
    two = sphere_density_map(labelled_run, times=[0.0, 0.3], ncols=1)
    try:
        assert len(two.axes) == 3
    finally:
        plt.close(two)
