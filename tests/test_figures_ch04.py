"""The figures of chapter 4 draw what they are given, from tiny RoPE runs.

Each figure of :mod:`usaav_edu.figures.ch04` is built from a run of a few tokens; the tests
read back what was drawn (the data of the lines, the number of panels and circles, the slider's
values) and compare it with the input, and check that titles and labels are mathematics.
"""
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu import laws
from usaav_edu.figures import ch04 as figs

#: symbols written out in words outside $...$ (as tests/test_book_layout.py reads labels)
WORDS = re.compile(r"\b(beta|omega|theta|xi|t_max)\b")


def plain(text):
    return WORDS.findall(re.sub(r"\$[^$]*\$", " ", text))


def rope_run(n=6, beta=1.0, omega=1.0, t_max=1.0, frames=5, seed=0):
    model = ue.models.rope(beta=beta, omegas=(omega,), d=3)
    return ue.simulate(model, ue.sphere.uniform(n, 3, seed=seed),
                       ue.experiments.positions(n, omega), t_max=t_max, n_frames=frames,
                       seed=seed)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_run_title_names_the_run_in_mathematics():
    title = figs.run_title(rope_run(n=6, beta=2.0, omega=0.5, seed=3))
    assert title == r"RoPE, $n = 6$, $\beta = 2$, $\omega = 0.5$, seed 3"


def test_run_title_refuses_a_run_without_frequencies():
    traj = ue.simulate(ue.models.usa(1.0), ue.sphere.uniform(4, 3, seed=0), t_max=0.5,
                       n_frames=3)
    with pytest.raises(TypeError, match="not a RoPE run"):
        figs.run_title(traj)


def test_energy_to_bound_draws_the_energy_and_the_bound():
    traj = rope_run()
    fig = figs.energy_to_bound(traj, 1.3)
    (ax,) = fig.axes
    energy, bound = ax.get_lines()
    np.testing.assert_array_equal(energy.get_xdata(), traj.t)
    np.testing.assert_array_equal(energy.get_ydata(), traj.energy)
    assert set(bound.get_ydata()) == {1.3} and bound.get_linestyle() == "--"
    assert ax.get_title() == figs.run_title(traj)
    assert not plain(ax.get_title() + ax.get_xlabel() + ax.get_ylabel())


def test_metastability_draws_one_panel_per_snapshot_and_one_staircase_per_beta():
    runs = {b: rope_run(beta=b, frames=9) for b in (2.0, 1.0)}
    counts_y = {b: np.arange(9)[::-1] % 4 + 1 for b in runs}
    counts_x = {b: np.full(9, 2) for b in runs}
    snapshots = [(1, [0.3, -0.2]), (8, [0.5])]
    fig = figs.metastability(runs, counts_y, counts_x, snapshots, shown=2.0)
    spheres, counts = fig.axes[:-1], fig.axes[-1]
    assert len(spheres) == 2
    # one black circle per gauge cluster's height, drawn at that height
    for ax, (_, heights) in zip(spheres, snapshots, strict=True):
        circles = [ln for ln in ax.get_lines() if ln.get_color() in ("black", "k")]
        assert sorted(round(float(np.mean(ln.get_data_3d()[2])), 6) for ln in circles) == \
            sorted(heights)
    assert spheres[0].get_title() == "$t = 0.125$: 2 gauge clusters"
    assert spheres[1].get_title() == "$t = 1$: 1 gauge cluster"
    steps = [ln for ln in counts.get_lines() if ln.get_marker() in ("None", "", None)]
    marks = [ln for ln in counts.get_lines() if ln.get_marker() == "o"]
    assert len(steps) == len(marks) == 2
    # the betas in increasing order, each staircase its counts from the second frame on
    labels = [t.get_text() for t in counts.get_legend().get_texts()]
    assert labels[0].startswith(r"$\beta = 1$") and labels[2].startswith(r"$\beta = 2$")
    np.testing.assert_array_equal(steps[0].get_ydata(), counts_y[1.0][1:])
    assert not plain(fig._suptitle.get_text())


def test_metastability_refuses_a_beta_it_was_not_given():
    runs = {1.0: rope_run(frames=5)}
    with pytest.raises(ValueError, match="shown=3.0"):
        figs.metastability(runs, {1.0: np.ones(5)}, {1.0: np.ones(5)}, [(1, [0.0])], shown=3.0)


def test_phase_histograms_draw_the_target_density_and_both_samples():
    traj = rope_run(n=8)
    law = laws.two_bump_law(center=np.pi / 2, separation=np.pi, kappa=6.0, weight=0.7)
    rng = np.random.default_rng(0)
    start, end = rng.uniform(0, 2 * np.pi, 50), rng.uniform(0, 2 * np.pi, 50)
    fig = figs.phase_histograms(traj, start, end, law, (0.25, 0.0625))
    left, right = fig.axes
    for ax, sample in ((left, start), (right, end)):
        heights = [p.get_height() for p in ax.patches]
        counts, edges = np.histogram(sample, bins=32, range=(0, 2 * np.pi), density=True)
        np.testing.assert_allclose(heights, counts)
        (curve,) = ax.get_lines()
        np.testing.assert_allclose(curve.get_ydata(), law.pdf(curve.get_xdata()))
    assert left.get_title() == "$t = 0$: KS = 0.250"
    assert right.get_title() == "$t = 1$: KS = 0.062"
    assert not plain(left.get_xlabel())


def test_the_views_show_the_run_and_its_overlays():
    traj = rope_run(n=6)
    player = figs.latitude_player(traj, 0.25)
    assert len(player.overlays.children) == 1
    pole = figs.pole_view(traj)
    assert [g.name for g in pole.overlays.children] == ["targets"]
    law = figs.law_view(traj, -0.5)
    assert len(law.overlays.children) == 1
    twin = figs.twin_view(traj, max_bytes=400_000)
    np.testing.assert_allclose(twin.keyframes_y[-1], traj.y[twin.frame_indices[-1]], atol=1e-6)


def test_the_omega_explorer_lists_the_frequencies_in_increasing_order():
    runs = {w: rope_run(n=4, omega=w, frames=3) for w in (2.0, 0.5, 1.0)}
    explorer = figs.omega_explorer(runs, max_bytes=600_000)
    assert explorer.axes == [[0.5, 1.0, 2.0]]
    (slider,) = explorer.sliders
    assert slider.description == "omega"
    assert [label for label, _ in slider.options] == ["0.5", "1", "2"]
