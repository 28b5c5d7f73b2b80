"""The figures of chapter 6 draw what they are given, from tiny prefix-gauge runs.

Each figure of :mod:`usaav_edu.figures.ch06` is built from a run of a few tokens; the tests read
back what was drawn (the data of the curves, the overlays, the slider's values) and compare it
with the input.
"""
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu import laws
from usaav_edu.figures import ch06 as figs


def prefix_run(n=6, k=2, beta=1.0, t_max=1.0, frames=5, seed=0):
    model = ue.models.prefix_gauge(beta=beta, frames=ue.sphere.random_frames(k, 3, seed=1))
    return ue.simulate(model, ue.sphere.uniform(n, 3, seed=seed), np.arange(n) % k,
                       t_max=t_max, n_frames=frames, seed=seed)


def shared_run(n=5, t_max=1.0, frames=6, seed=2):
    p = np.array([1.0, 0.0, 0.0])
    frozen = np.zeros(n + 1, dtype=bool)
    frozen[-1] = True
    x0 = np.vstack([ue.sphere.uniform(n, 3, seed=seed), p])
    return ue.simulate(ue.models.usa(beta=1.0), x0, t_max=t_max, frozen=frozen,
                       n_frames=frames, seed=seed), p


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_shared_collapse_plots_the_diameter_and_the_distance_to_the_prompt():
    traj, p = shared_run()
    mobile = traj.x[:, :5]
    diam = np.array([ue.diagnostics.diameter(xf) for xf in mobile])
    to_p = np.array([np.max(np.linalg.norm(xf - p, axis=1)) for xf in mobile])
    diam[-1] = 0.0   # a collapsed frame stays on the log axis
    fig = figs.shared_collapse(traj, diam, to_p, n_moving=5)
    (ax,) = fig.axes
    first, second = ax.get_lines()
    np.testing.assert_array_equal(first.get_xdata(), traj.t)
    np.testing.assert_array_equal(first.get_ydata(), np.maximum(diam, 1e-12))
    np.testing.assert_array_equal(second.get_ydata(), to_p)
    assert ax.get_yscale() == "log"
    assert ax.get_title() == r"shared prompt, $n = 5 + 1$, $\beta = 1$, seed 2"
    assert not re.search(r"\bbeta\b", re.sub(r"\$[^$]*\$", " ", ax.get_title()))


def test_shared_collapse_refuses_series_of_another_length():
    traj, _ = shared_run()
    with pytest.raises(ValueError, match="one value per frame"):
        figs.shared_collapse(traj, np.ones(3), np.ones(traj.t.size), n_moving=5)


def test_the_players_carry_their_overlays():
    traj = prefix_run(k=3)
    centres = np.eye(3)
    player = figs.prompt_player(traj, centres)
    (group,) = player.overlays.children
    assert group.name == "targets" and len(group.children) == 3
    assert "3 prompts" in str(player.title)  # the title counts the prompts
    curve = figs.curve_player(traj, laws.seam_curve(50, b=0.3))
    assert len(curve.overlays.children) == 1
    shared, p = shared_run()
    (marker,) = figs.shared_player(shared, p).overlays.children
    assert len(marker.children) == 1
    bumps = figs.bumps_view(traj, np.eye(3)[:2])
    assert len(bumps.overlays.children[0].children) == 2


def test_the_twin_view_plays_the_gauge_coordinates():
    traj = prefix_run()
    twin = figs.twin_view(traj, max_bytes=400_000)
    np.testing.assert_allclose(twin.keyframes_y[-1], traj.y[twin.frame_indices[-1]], atol=1e-6)


def test_the_prompts_explorer_lists_k_in_increasing_order():
    runs = {k: prefix_run(n=4, k=k, frames=3) for k in (3, 1, 2)}
    explorer = figs.prompts_explorer(runs, max_bytes=600_000)
    assert explorer.axes == [[1, 2, 3]]
    (slider,) = explorer.sliders
    assert slider.description == "K"
    assert [label for label, _ in slider.options] == ["1", "2", "3"]
