"""Chapter 8's figures draw what they are given: each is built from tiny runs of the four systems."""
import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu.figures import ch08 as figs

NAMES = tuple(figs.TITLES)
PARAMS = dict(d=3, beta=1.0, omega=1.0, n_prompts=4, seed=0)


@pytest.fixture(scope="module")
def runs():
    out = {}
    for name in NAMES:
        model, x0, xi = ue.experiments.setup(name, n=8, **PARAMS)
        out[name, 8] = ue.simulate(model, x0, xi, t_max=0.5, n_frames=3)
    return out


def gauge_point(traj):
    y = traj.y[-1].mean(axis=0)
    return y / np.linalg.norm(y)


def test_overlays_are_the_exact_maximizers(runs):
    u = gauge_point(runs["rope", 8])
    (circle,) = figs.overlays("rope", runs["rope", 8], u)["curves"]
    assert np.allclose(circle[:, 2], u[2])
    assert np.allclose(figs.overlays("usa", runs["usa", 8], u)["targets"], u[None, :])
    prefix = runs["prefix_gauge", 8]
    targets = figs.overlays("prefix_gauge", prefix, gauge_point(prefix))["targets"]
    assert targets.shape == (4, 3)
    with pytest.raises(ValueError, match="name must be one of"):
        figs.overlays("alibi", prefix, u)


def test_final_states_one_panel_per_run(runs):
    points = {key: gauge_point(tr) for key, tr in runs.items()}
    fig = figs.final_states(runs, points, ns=(8,), beta=1.0, seed=0, method="rk4", tau=0.5)
    assert len(fig.axes) == 4
    assert [ax.get_title() for ax in fig.axes] == [f"{figs.TITLES[k]}, $n = 8$" for k in NAMES]


def test_energy_curves_draws_each_run_and_the_bound(runs):
    fig = figs.energy_curves(runs, n=8, beta=1.0, seed=0, method="rk4")
    lines = fig.axes[0].lines
    assert len(lines) == 5
    for line, name in zip(lines[:-1], NAMES, strict=True):  # the last line: the bound e^beta / 2
        assert np.array_equal(line.get_ydata(), runs[name, 8].energy)
    assert set(lines[-1].get_ydata()) == {np.exp(1.0) / 2}


def test_player_draws_the_run_with_its_maximizer(runs):
    rope, prefix = runs["rope", 8], runs["prefix_gauge", 8]
    circle = figs.player(rope, "rope", gauge_point(rope)).overlays.children
    assert len(circle) == 1                       # the latitude circle
    (targets,) = figs.player(prefix, "prefix_gauge", gauge_point(prefix)).overlays.children
    assert targets.name == "targets" and len(targets.children) == 4   # the K = 4 centres
