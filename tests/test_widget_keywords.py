"""A misspelt keyword of a widget is an error naming it, not a default drawn without a word.

ipywidgets only warns about a keyword it does not know and drops it, so ``width=`` misspelt
``widht=`` used to draw the default width.
"""
from __future__ import annotations

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu import widgets as W
from usaav_edu.widgets import _checks


@pytest.fixture(autouse=True)
def _live_kernel(monkeypatch):
    monkeypatch.delenv("USAAV_EDU_STATIC_PAGE", raising=False)


@pytest.fixture(scope="module")
def traj():
    model, x0, xi = ue.experiments.setup("rope", n=8, d=3, seed=0)
    return ue.simulate(model, x0, xi, t_max=1.0, n_frames=5, seed=0)


@pytest.fixture
def no_simulation(monkeypatch):
    def ran(*args, **kwargs):
        raise AssertionError("simulated before the keywords were checked")

    monkeypatch.setattr(ue.particles.solver, "simulate", ran)
    import usaav_edu.widgets.dashboard as dashboard

    if hasattr(dashboard, "simulate"):
        monkeypatch.setattr(dashboard, "simulate", ran)


MISSPELT = [
    ("SphereView", lambda t, **kw: W.SphereView(t, **kw), "widht", "width"),
    ("TrajectoryPlayer", lambda t, **kw: W.TrajectoryPlayer(t, **kw), "duraton", "duration"),
    ("TrajectoryPlayer", lambda t, **kw: W.TrajectoryPlayer(t, **kw), "trail", "trails"),
    ("DensityView", lambda t, **kw: W.DensityView(t, live=True, **kw), "colourmap", "colormap"),
    ("TwinView", lambda t, **kw: W.TwinView(t, **kw), "max_token", "max_tokens"),
    ("Explorer", lambda t, **kw: W.Explorer({1.0: t}, **kw), "captoin", "caption"),
]


@pytest.mark.parametrize("cls, make, wrong, right", MISSPELT, ids=[f"{c} {w}" for c, _, w, _ in MISSPELT])
def test_a_misspelt_keyword_is_a_type_error_naming_it_and_the_accepted_ones(traj, cls, make, wrong,
                                                                           right):
    with pytest.raises(TypeError) as info:
        make(traj, **{wrong: 3})
    message = str(info.value)
    assert message.startswith(f"{cls}() got an unexpected keyword argument {wrong!r} "
                              f"(did you mean {right!r}?); it accepts ")
    assert f" {right}," in message or f" {right} " in message
    assert "layout" in message


def test_the_dashboard_refuses_a_misspelt_keyword_before_it_simulates(no_simulation):
    with pytest.raises(TypeError, match="unexpected keyword argument 'betta' \\(did you mean 'beta'"):
        W.ExperimentDashboard("usa", betta=2.0, live=True)


def test_the_dashboard_refuses_a_misspelt_player_keyword_before_it_simulates(no_simulation):
    with pytest.raises(TypeError, match="player \\(TrajectoryPlayer keywords\\) got an unexpected "
                                        "keyword argument 'duraton'"):
        W.ExperimentDashboard("usa", player={"duraton": 2.0}, live=True)


def test_the_explorer_refuses_a_misspelt_keyword_before_it_simulates(no_simulation):
    with pytest.raises(TypeError, match="Explorer.from_experiment\\(\\) got an unexpected keyword "
                                        "argument 'widht'"):
        W.Explorer.from_experiment({"beta": [1.0, 2.0]}, fixed={"name": "usa"}, widht=300)


def test_widget_traits_and_the_parents_keywords_are_still_accepted(traj):
    import ipywidgets

    player = W.TrajectoryPlayer(traj, width=300, trails=True, layout=ipywidgets.Layout(width="50%"))
    assert player.layout.width == "50%"
    params, traits = _checks.accepted_keywords(W.TrajectoryPlayer)
    assert {"duration", "max_bytes", "width", "trails", "title"} <= params
    assert {"layout", "box_style"} <= traits and not any(t.startswith("_") for t in traits)


def test_accepted_keywords_read_every_constructor_up_to_ipywidgets():
    params, _ = _checks.accepted_keywords(W.DensityView)
    assert {"mode", "bandwidth", "trails", "max_tokens", "token_radius"} <= params
    assert not np.isin(["self", "kwargs"], list(params)).any()
