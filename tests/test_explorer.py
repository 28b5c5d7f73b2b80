"""The Explorer, checked headless: its page state switches runs by widget links alone.

What the static page can do is what its embedded state says: one Stack child per run, the
slider's ``index`` linked to the Stack's ``selected_index`` by a Link model, and in child k the
title, sphere and energy of the k-th value on the slider.
"""
from __future__ import annotations

import json

import ipywidgets
import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from ipywidgets.embed import dependency_state
from ipywidgets.widgets import widget as registry

import usaav_edu as ue
from usaav_edu import widgets as W

BETAS = (0.5, 1.0, 2.0, 4.0)


def fake_run(n=12, frames=21, name="rope", seed=0, beta=1.0):
    """A Trajectory with made-up unit-norm frames (fast: the widget is under test, not the solver)."""
    model, x0, xi = ue.experiments.setup(name, n=n, beta=beta, seed=seed)
    rng = np.random.default_rng(seed)
    x = x0[None] + 0.3 * np.cumsum(rng.normal(size=(frames, n, 3)), axis=0) / np.sqrt(frames)
    x /= np.linalg.norm(x, axis=2, keepdims=True)
    t = np.linspace(0.0, 5.0, frames)
    energy = np.linspace(1.0, 1.0 + 0.1 * (seed + 1), frames)
    labels = np.zeros(n) if xi is None else xi
    return ue.Trajectory(t=t, x=x, xi=labels, energy=energy, model=model, method="rk4", dt=0.1)


@pytest.fixture(scope="module")
def beta_runs():
    return {b: fake_run(seed=k, beta=b) for k, b in enumerate(BETAS)}


@pytest.fixture(scope="module")
def beta_explorer(beta_runs):
    return W.Explorer(beta_runs, "beta", max_bytes=1_500_000)


def page_state(widget) -> dict:
    """model id -> state, as the static page embeds it (links included)."""
    return json.loads(json.dumps(dependency_state(widget, drop_defaults=False)))


def ref(widget) -> str:
    return f"IPY_MODEL_{widget.model_id}"


def links_in(state: dict) -> set[tuple]:
    """(source id, source trait, target id, target trait) of every Link model in the state.

    A link first copies its source to its target; the Stack is the source, as its
    ``selected_index`` is always in the page state (a slider's default index 0 may be left out).
    """
    out = set()
    for s in state.values():
        if s["model_name"] == "LinkModel":
            (a, ta), (b, tb) = s["state"]["source"], s["state"]["target"]
            out.add((a, ta, b, tb))
    return out


def title_of(explorer, key) -> str:
    return explorer.parts[key]["title"].value


# --------------------------------------------------------------------- one parameter
def test_one_stack_child_per_run_in_slider_order(beta_explorer, beta_runs):
    state = page_state(beta_explorer)
    stack = beta_explorer.stack
    assert state[stack.model_id]["model_name"] == "StackModel"
    children = state[stack.model_id]["state"]["children"]
    assert len(children) == len(beta_runs)
    slider = beta_explorer.sliders[0]
    assert list(slider.options) == [(f"{b:g}", k) for k, b in enumerate(BETAS)]
    for k, beta in enumerate(BETAS):
        view = beta_explorer.views[k]
        assert children[k] == ref(view)
        # the k-th child draws the k-th run: its sphere holds that run's last frame
        sphere = beta_explorer.parts[beta]["sphere"]
        assert sphere in view.children[1].children
        assert np.allclose(sphere.token_positions, beta_runs[beta].x[-1], atol=1e-6)


def test_slider_index_is_linked_to_the_stack_in_the_page(beta_explorer):
    state = page_state(beta_explorer)
    slider, stack = beta_explorer.sliders[0], beta_explorer.stack
    assert (ref(stack), "selected_index", ref(slider), "index") in links_in(state)
    assert state[slider.model_id]["model_name"] == "SelectionSliderModel"
    assert state[stack.model_id]["state"]["selected_index"] == 0
    # no Python callback: the link runs in the page (in a live kernel too, where the front end
    # runs it), so the choice works with no kernel behind the page
    def observers(w):
        return len(w._trait_notifiers.get("index", {}).get("change", []))

    assert observers(slider) == observers(ipywidgets.SelectionSlider(options=["a", "b"]))


def test_titles_state_each_runs_parameter(beta_explorer):
    for beta in BETAS:
        title = title_of(beta_explorer, beta)
        assert f"beta = {beta:g}" in title
        assert all(f"beta = {other:g}<" not in title for other in BETAS if other != beta)


def test_energy_plot_is_each_runs_own_png(beta_explorer, beta_runs):
    images = [beta_explorer.parts[b]["energy"].value for b in BETAS]
    assert all(img[:8] == b"\x89PNG\r\n\x1a\n" for img in images)
    assert len(set(images)) == len(BETAS)      # the highlighted curve differs from run to run


def test_controls_have_accessible_labels(beta_explorer):
    slider = beta_explorer.sliders[0]
    assert slider.description == "beta"
    assert "beta" in slider.tooltip and "0.5, 1, 2, 4" in slider.tooltip


def test_explorer_draws_and_never_simulates(beta_runs, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the Explorer called simulate")

    monkeypatch.setattr(ue, "simulate", refuse)
    monkeypatch.setattr(ue.particles.solver, "simulate", refuse)
    explorer = W.Explorer(beta_runs, "beta", play=False, max_bytes=1_500_000)
    assert len(explorer.views) == len(beta_runs)


# --------------------------------------------------------------------- two parameters
def test_two_parameters_nest_stacks_and_link_the_second_slider_to_every_inner_stack():
    omegas = ("distance", "cosine")
    runs = {(b, o): fake_run(n=8, seed=3 * i + j, beta=b)
            for i, b in enumerate(BETAS[:3]) for j, o in enumerate(omegas)}
    explorer = W.Explorer(runs, ("beta", "bias"), max_bytes=2_000_000)
    state = page_state(explorer)
    outer, inner = explorer.stacks[0], explorer.stacks[1:]
    assert state[outer.model_id]["state"]["children"] == [ref(s) for s in inner]
    assert len(inner) == 3 and all(len(s.children) == 2 for s in inner)
    first, second = explorer.sliders
    links = links_in(state)
    assert (ref(outer), "selected_index", ref(first), "index") in links
    for s in inner:
        assert (ref(s), "selected_index", ref(second), "index") in links
    for i, b in enumerate(BETAS[:3]):
        for j, o in enumerate(omegas):
            assert explorer.views[i][j] is inner[i].children[j]
            assert f"beta = {b:g}, bias = {o}" in title_of(explorer, (b, o))
            sphere = explorer.parts[(b, o)]["sphere"]
            assert np.allclose(sphere.token_positions, runs[(b, o)].x[-1], atol=1e-6)


# --------------------------------------------------------------------- page budget
@pytest.mark.parametrize("max_bytes", [900_000, 1_400_000])
def test_embedded_state_stays_within_max_bytes(beta_runs, max_bytes):
    explorer = W.Explorer(beta_runs, "beta", max_bytes=max_bytes)
    size = W.embedded_state_bytes(explorer)
    assert size <= max_bytes, (size, max_bytes)
    assert sum(explorer.run_bytes.values()) <= max_bytes


def test_a_smaller_budget_keeps_fewer_frames():
    runs = {b: fake_run(n=24, frames=201, seed=k) for k, b in enumerate(BETAS)}
    big = W.Explorer(runs, "beta", max_bytes=2_500_000)
    small = W.Explorer(runs, "beta", max_bytes=1_000_000)
    frames = [len(e.parts[BETAS[0]]["sphere"].frame_indices) for e in (big, small)]
    assert frames[0] > frames[1] >= 2, frames
    assert W.embedded_state_bytes(small) <= 1_000_000


def test_refuses_a_budget_too_small_for_two_frames_and_leaves_no_widgets(beta_runs):
    before = len(registry._instances)
    with pytest.raises(ValueError, match=r"max_bytes=400000 is too small for 4 runs"):
        W.Explorer(beta_runs, "beta", max_bytes=400_000)
    assert len(registry._instances) == before      # nothing half-built stays in the page


def test_no_widget_is_made_on_trial():
    """A saved notebook embeds every widget the kernel ever made, closed or not: the Explorer
    makes only the widgets it shows (rope colours by position: the case where a player's own
    size estimate falls shortest)."""
    runs = {b: fake_run(n=32, frames=201, seed=k, beta=b) for k, b in enumerate(BETAS)}
    before = set(registry._instances)
    explorer = W.Explorer(runs, "beta", max_bytes=1_200_000)
    made = set(registry._instances) - before
    shown = set(dependency_state(explorer))
    assert shown <= made
    # SphereView makes its token meshes with a black placeholder material, then colours them
    extra = [registry._instances[k] for k in made - shown]
    assert all(type(w).__name__ == "MeshLambertMaterial" and w.color == "#000000" for w in extra), extra
    assert len(extra) <= len(runs)
    assert W.embedded_state_bytes(explorer) <= 1_200_000


# --------------------------------------------------------------------- bad input
@pytest.mark.parametrize("runs,parameters,error,message", [
    ([1, 2], "beta", TypeError, "runs must be a dict"),
    ({}, "beta", ValueError, "at least two values of beta"),
    ({1.0: None}, "beta", ValueError, "at least two values of beta"),
    ("one", "beta", TypeError, "runs must be a dict"),
    (None, ("beta", "beta"), TypeError, "runs must be a dict"),
])
def test_bad_runs_are_named(runs, parameters, error, message):
    with pytest.raises(error, match=message):
        W.Explorer(runs, parameters)


def test_bad_grids_are_named():
    a, b = fake_run(seed=0), fake_run(seed=1)
    with pytest.raises(TypeError, match=r"runs\[2\.0\] must be a usaav_edu Trajectory"):
        W.Explorer({1.0: a, 2.0: "run"})
    with pytest.raises(ValueError, match="at least two values of beta"):
        W.Explorer({1.0: a})
    with pytest.raises(ValueError, match="full grid of beta x omega; missing"):
        W.Explorer({(1.0, 1.0): a, (2.0, 2.0): b}, ("beta", "omega"))
    with pytest.raises(TypeError, match=r"runs keys must be pairs \(beta, omega\)"):
        W.Explorer({1.0: a, 2.0: b}, ("beta", "omega"))
    with pytest.raises(TypeError, match="runs keys must be single values of beta"):
        W.Explorer({(1.0, 1.0): a, (2.0, 1.0): b}, "beta")
    with pytest.raises(TypeError, match="must be a number or a string, got bool"):
        W.Explorer({True: a, False: b})
    with pytest.raises(ValueError, match="must be finite"):
        W.Explorer({float("nan"): a, 1.0: b})
    with pytest.raises(ValueError, match="must read differently on the slider"):
        W.Explorer({1.0: a, 1.0000001: b})
    with pytest.raises(ValueError, match="parameters must be two different names"):
        W.Explorer({(1.0, 1.0): a, (2.0, 1.0): b}, ("beta", "beta"))
    with pytest.raises(TypeError, match="parameters must be one name or a tuple of two names"):
        W.Explorer({1.0: a, 2.0: b}, ("beta", "omega", "n"))


@pytest.mark.parametrize("kw,error,message", [
    ({"max_bytes": 0}, ValueError, "max_bytes"),
    ({"max_bytes": 2.5e6}, TypeError, "max_bytes"),
    ({"play": 1}, TypeError, "play must be True or False"),
    ({"duration": 0.0}, ValueError, "duration"),
    ({"duration": float("nan")}, ValueError, "duration"),
    ({"width": 0}, ValueError, "width"),
    ({"caption": 3}, TypeError, "caption must be a string"),
])
def test_bad_options_are_named(beta_runs, kw, error, message):
    with pytest.raises(error, match=message):
        W.Explorer(beta_runs, "beta", **kw)


def test_runs_with_nan_energies_are_refused(beta_runs):
    good = fake_run(seed=9)
    energy = good.energy.copy()
    energy[3] = np.nan
    bad = ue.Trajectory(t=good.t, x=good.x, xi=good.xi, energy=energy, model=good.model,
                        method="rk4", dt=0.1)
    with pytest.raises(ValueError, match=r"runs\[8\.0\]\.energy must hold 21 finite values"):
        W.Explorer({**beta_runs, 8.0: bad}, "beta")


# --------------------------------------------------------------------- constructor over a grid
def test_from_experiment_holds_exactly_what_simulate_returns():
    explorer = W.Explorer.from_experiment({"beta": [0.5, 2.0]}, fixed={"name": "usa", "n": 8},
                                          t_max=1.0, n_frames=6, play=False)
    for beta in (0.5, 2.0):
        model, x0, xi = ue.experiments.setup("usa", n=8, beta=beta)
        expected = ue.simulate(model, x0, xi, t_max=1.0, n_frames=6, seed=0)
        run = explorer.runs[beta]
        assert run.model.beta == beta
        assert np.array_equal(run.x, expected.x)
        assert f"beta = {beta:g}" in title_of(explorer, beta)


@pytest.mark.parametrize("grid,fixed,error,message", [
    ({"beta": [1, 2]}, {}, ValueError, "give the experiment's name"),
    ({"beta": [1, 2]}, {"name": "cosine_bias"}, ValueError, "cosine_bias experiment does not read 'beta'"),
    ({"beta": [1, 2]}, {"name": "usa", "beta": 1}, ValueError, r"\['beta'\] appear both"),
    ({"temperature": [1, 2]}, {"name": "usa"}, ValueError, "grid keys must be among"),
    ({"beta": 2.0}, {"name": "usa"}, TypeError, r"grid\['beta'\] must be a list"),
    ({}, {"name": "usa"}, TypeError, "grid must be a dict of one or two"),
    ({"beta": [1, 2]}, {"name": "nope"}, ValueError, "name must be one of"),
    ({"beta": [1, 1.0]}, {"name": "usa"}, ValueError, r"grid\['beta'\] must list distinct values"),
    ({"beta": [2.0]}, {"name": "usa"}, ValueError, r"grid\['beta'\] must list at least two values"),
    ({"beta": [1, None]}, {"name": "usa"}, TypeError, "must be a number or a string"),
])
def test_from_experiment_refuses_bad_grids_before_simulating(grid, fixed, error, message, monkeypatch):
    def fail(*args, **kwargs):
        pytest.fail("simulated before checking")

    monkeypatch.setattr(ue, "simulate", fail)
    monkeypatch.setattr(ue.particles.solver, "simulate", fail)
    with pytest.raises(error, match=message):
        W.Explorer.from_experiment(grid, fixed=fixed, t_max=1.0, n_frames=6)


@pytest.mark.slow
def test_a_live_kernel_draws_fewer_tokens_where_a_share_cannot_hold_them(monkeypatch):
    # each of 4 runs of 256 tokens gets about 400 kB; two frames of 256 tokens need 659 kB
    runs = {b: fake_run(n=256, frames=101, seed=k, beta=b) for k, b in enumerate(BETAS)}
    monkeypatch.delenv("USAAV_EDU_STATIC_PAGE", raising=False)
    explorer = W.Explorer(runs, "beta", max_bytes=1_600_000)
    assert W.embedded_state_bytes(explorer) <= 1_600_000
    for b in BETAS:
        player = explorer.parts[b]["sphere"]
        m = len(player.token_index)
        assert m < 256 and player.budget_note.startswith("max_bytes=")
        assert f"of the 256 tokens with {len(player.frame_indices)} frames" in player.budget_note
    monkeypatch.setenv("USAAV_EDU_STATIC_PAGE", "1")
    before = len(registry._instances)
    with pytest.raises(ValueError, match=r"max_bytes=1600000 is too small for 4 runs of 256 "
                                         r"tokens"):
        W.Explorer(runs, "beta", max_bytes=1_600_000)
    assert len(registry._instances) == before


# ------------------------------------------------------------------ order, names, first state
def test_sliders_increase_left_to_right_and_keep_each_run_with_its_value():
    values = (1.0, 0.5, 0.2)                       # listed decreasing, as a chapter may
    runs = {v: fake_run(seed=k, beta=v) for k, v in enumerate(values)}
    ex = W.Explorer(runs, "omega", max_bytes=1_500_000)
    assert ex.axes == [[0.2, 0.5, 1.0]]
    assert [lab for lab, _ in ex.sliders[0].options] == ["0.2", "0.5", "1"]
    for k, v in enumerate(ex.axes[0]):
        assert ex.views[k] is ex.stack.children[k]
        assert ex.parts[v]["sphere"].trajectory is runs[v], f"slider step {k} shows another run"
        assert f"omega = {v:g}" in ex.parts[v]["title"].value


def test_string_values_keep_their_order():
    runs = {(b, w): fake_run(seed=k) for k, (b, w) in enumerate(
        [("distance", 1.0), ("distance", 0.2), ("cosine", 1.0), ("cosine", 0.2)])}
    ex = W.Explorer(runs, ("bias", "omega"), max_bytes=1_500_000, play=False)
    assert ex.axes == [["distance", "cosine"], [0.2, 1.0]]
    assert ex.parts[("cosine", 0.2)]["sphere"] is ex.views[1][0].children[1].children[0]


def test_each_slider_names_the_parameter_it_moves():
    runs = {(b, w): fake_run(seed=k) for k, (b, w) in enumerate(
        [("distance", 1.0), ("distance", 0.2), ("cosine", 1.0), ("cosine", 0.2)])}
    ex = W.Explorer(runs, ("bias", "omega"), max_bytes=1_500_000, play=False,
                    labels={"omega": "λ (decay rate)"})
    assert [s.description for s in ex.sliders] == ["bias", "λ (decay rate)"]
    assert "λ (decay rate) = 0.2" in ex.parts[("cosine", 0.2)]["title"].value
    with pytest.raises(ValueError, match="labels names 'lam'"):
        W.Explorer(runs, ("bias", "omega"), labels={"lam": "λ"})
    with pytest.raises(TypeError, match="labels must be"):
        W.Explorer(runs, ("bias", "omega"), labels=("λ",))


def test_an_explorer_draws_the_state_at_its_bead(beta_explorer, beta_runs):
    for beta, part in beta_explorer.parts.items():
        player, traj = part["sphere"], beta_runs[beta]
        span = float(np.asarray(player.tracks[0].times)[-1])
        bead = (player.clock.position[0] + 0.32) / 0.64 * span      # clip time at the bead
        frame = int(np.argmin(np.abs((traj.t - traj.t[0]) - bead)))
        assert np.allclose(player.token_positions, W.project_3d(traj.x[frame]), atol=1e-6), \
            f"beta = {beta}: the sphere shows another state than the one at the bead (t = {bead:g})"
        assert player.action.time == pytest.approx(bead, abs=1e-5)


def test_eight_values_per_slider_fit_three_megabytes(monkeypatch):
    monkeypatch.setenv("USAAV_EDU_STATIC_PAGE", "1")      # the page budget: refuse, never drop
    values = (0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0)
    runs = {v: fake_run(n=24, frames=81, seed=k, beta=v) for k, v in enumerate(values)}
    ex = W.Explorer(runs, "beta", max_bytes=3_000_000)
    assert len(ex.sliders[0].options) == 8
    assert W.embedded_state_bytes(ex) <= 3_000_000
    assert all(len(p["sphere"].token_index) == 24 for p in ex.parts.values())
    assert min(len(p["sphere"].frame_indices) for p in ex.parts.values()) >= 20


def test_an_explorer_draws_at_most_max_tokens_of_each_run():
    runs = {b: fake_run(n=12, seed=k, beta=b) for k, b in enumerate((1.0, 2.0))}
    ex = W.Explorer(runs, "beta", max_bytes=1_500_000, max_tokens=5)
    for part in ex.parts.values():
        assert len(part["sphere"].token_index) == 5
        assert "showing 5 of 12 tokens" in part["sphere"].caption.value
    with pytest.raises(ValueError, match="max_tokens"):
        W.Explorer(runs, "beta", max_tokens=0)
