"""Widget state, checked headless (no browser): what the scene holds equals what was simulated."""
from __future__ import annotations

import asyncio

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu import widgets as W
from usaav_edu.widgets.colors import CYCLIC_STEPS, PLAIN_COLOR, PROMPT_PALETTE

T_MAX = 2.0  # short runs: the widgets are under test here, not the solver


@pytest.fixture(autouse=True)
def _live_kernel(monkeypatch):
    # these tests play the part of a live kernel, whatever the calling environment says
    monkeypatch.delenv("USAAV_EDU_STATIC_PAGE", raising=False)


def run(name, n=16, seed=0, **kw):
    model, x0, xi = ue.experiments.setup(name, n=n, seed=seed, **kw)
    return ue.simulate(model, x0, xi, t_max=T_MAX, n_frames=21, seed=seed)


def fake_trajectory(n=32, frames=101, d=3, name="rope", seed=0):
    """A Trajectory with made-up (but unit-norm) frames: fast, for payload and track checks."""
    model, x0, xi = ue.experiments.setup(name, n=n, d=d, seed=seed)
    rng = np.random.default_rng(seed)
    x = x0[None] + 0.3 * np.cumsum(rng.normal(size=(frames, n, d)), axis=0) / np.sqrt(frames)
    x /= np.linalg.norm(x, axis=2, keepdims=True)
    t = np.linspace(0.0, 20.0, frames)
    labels = np.zeros(n) if xi is None else xi
    return ue.Trajectory(t=t, x=x, xi=labels, energy=np.linspace(1.0, 1.3, frames), model=model,
                         method="rk4", dt=0.1)


# ------------------------------------------------------------------ colours and projection
def test_colors_follow_label_kind():
    xi = np.arange(8) * 2 * np.pi / 8
    assert W.token_colors(xi, "none") == [PLAIN_COLOR] * 8
    shades = W.token_colors(xi, "position")
    assert len(set(shades)) == 8 and shades[0] != shades[4]
    assert W.token_colors(np.array([0, 1, 2, 0]), "prompt") == \
        [PROMPT_PALETTE[0], PROMPT_PALETTE[1], PROMPT_PALETTE[2], PROMPT_PALETTE[0]]
    assert len(set(W.token_colors(np.linspace(0, 1, 1000), "position"))) == CYCLIC_STEPS
    with pytest.raises(ValueError, match="labels"):
        W.token_colors(xi, "color")
    with pytest.raises(ValueError, match="prompt"):
        W.token_colors(np.array([0.5, 1.0]), "prompt")


def test_projection_documented_cases():
    x2 = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert np.array_equal(W.project_3d(x2), [[1, 0, 0], [0, 1, 0]])
    x4 = np.array([[0.5, 0.5, 0.5, 0.5]])
    assert np.array_equal(W.project_3d(x4), [[0.5, 0.5, 0.5]])
    assert np.array_equal(W.project_3d(np.array([[1.0, 2, 3, 4]]), coords=(3, 0, 1)), [[4, 1, 2]])
    with pytest.raises(ValueError, match="coords"):
        W.project_3d(x4, coords=(0, 0, 1))
    with pytest.raises(ValueError):
        W.project_3d(np.ones((3, 1)))


def test_subsample_keeps_ends():
    idx = W.subsample(101, 7)
    assert idx[0] == 0 and idx[-1] == 100 and len(idx) == 7 and np.all(np.diff(idx) > 0)
    assert np.array_equal(W.subsample(5, 50), np.arange(5))


# ----------------------------------------------------------------------------- SphereView
def test_sphere_view_holds_the_trajectory_frame():
    traj = run("rope")
    view = W.SphereView(traj)
    assert np.allclose(view.token_positions, traj.x[-1])
    assert view.token_colors == W.token_colors(traj.xi, "position")
    assert [m.name for m in view.tokens.children] == [f"p{i}" for i in range(traj.n)]
    first = W.SphereView(traj, frame=0)
    assert np.allclose(first.token_positions, traj.x[0])


def test_sphere_view_overlays_trails_and_projection():
    traj = run("generalized_rope", n=12)              # d = 4
    view = W.SphereView(traj, trails=True, trail_frames=5)
    assert np.allclose(view.token_positions, traj.x[-1][:, :3])
    assert "projection onto coordinates (1, 2, 3)" in view.caption.value
    (trail,) = view.trails.children
    assert np.asarray(trail.geometry.attributes["position"].array).shape == (12 * 4 * 2, 3)
    v3 = W.SphereView(run("rope", n=8))
    circle = v3.add_latitude_circle(0.5)
    pts = np.asarray(circle.geometry.attributes["position"].array)
    assert np.allclose(pts[:, 2], 0.5) and np.allclose(np.linalg.norm(pts, axis=1), 1.0)
    v3.add_curve(ue.maximizers.latitude_circle(-0.2, n_points=16), closed=True)
    v3.add_targets(np.eye(3))
    assert len(v3.overlays.children) == 3
    v3.clear_overlays()
    assert v3.overlays.children == ()
    with pytest.raises(ValueError, match="height"):
        v3.add_latitude_circle(1.5)


def test_sphere_view_raw_points_and_validation():
    x = ue.sphere.uniform(5, 3, seed=1)
    view = W.SphereView(x=x, xi=np.arange(5) % 2, labels="prompt")
    assert np.allclose(view.token_positions, x)
    assert view.token_colors == [PROMPT_PALETTE[i % 2] for i in range(5)]
    with pytest.raises(ValueError, match="xi"):
        view.set_points(x, np.arange(4), "prompt")
    with pytest.raises(ValueError, match="x must"):
        view.set_points(np.ones(3), np.arange(3), "none")


def test_large_n_draws_a_documented_subset():
    traj = fake_trajectory(n=300, frames=11)
    view = W.SphereView(traj, max_tokens=100)
    assert len(view.tokens.children) == 100
    assert np.allclose(view.token_positions, traj.x[-1][view.token_index])
    assert "showing 100 of 300 tokens" in view.caption.value


# ------------------------------------------------------------------------ TrajectoryPlayer
def test_player_tracks_hold_the_subsampled_frames():
    traj = fake_trajectory(n=24, frames=101)
    player = W.TrajectoryPlayer(traj, max_frames=30)
    idx = player.frame_indices
    assert len(idx) == 30 and idx[0] == 0 and idx[-1] == 100
    assert np.allclose(player.keyframes, traj.x[idx], atol=1e-6)
    assert np.allclose(player.keyframe_times, traj.t[idx], atol=1e-5)
    names = [tr.name for tr in player.tracks]
    assert names[:24] == [f"p{i}.position" for i in range(24)]
    assert names[24:] == ["clock.position", "tclock.scale"]          # the bead, the time label
    assert player.action.localRoot is player.scene
    assert player.action.clip.tracks == tuple(player.tracks)
    assert np.isclose(player.action.timeScale, 20.0 / player.duration)
    assert np.allclose(player.token_positions, traj.x[0])   # starts at t = 0: press play


@pytest.mark.parametrize("n,trails", [(64, False), (256, False), (128, True), (256, True)])
def test_payload_stays_under_one_megabyte(n, trails):
    traj = fake_trajectory(n=n, frames=201)
    player = W.TrajectoryPlayer(traj, trails=trails)
    size = W.embedded_state_bytes(player)
    assert size < 1_000_000, size
    # 256 tokens with trails: the trails take a third of what is left, and the time bar with
    # its label (in BYTES_FIXED) one frame's worth of what remains
    assert len(player.frame_indices) >= (29 if (n, trails) == (256, True) else 30)
    assert W.embedded_state_bytes(W.SphereView(traj, trails=trails)) < 1_000_000


def test_player_show_replaces_the_animation():
    player = W.TrajectoryPlayer(fake_trajectory(n=10, seed=0))
    old_action = player.action
    new = fake_trajectory(n=14, seed=1, name="prefix_gauge")
    player.show(new)
    assert player.action is not old_action and old_action.comm is None   # closed
    assert np.allclose(player.keyframes, new.x[player.frame_indices], atol=1e-6)
    assert player.token_colors == W.token_colors(new.xi, "prompt")


# ------------------------------------------------------------------------- dashboards
def test_dashboard_slider_change_redraws_new_trajectory():
    dash = W.ExperimentDashboard("rope", n=16, t_max=T_MAX, n_frames=21, debounce=0)
    dash.beta.value = 2.5
    model, x0, xi = ue.experiments.setup("rope", n=16, beta=2.5, seed=0)
    expected = ue.simulate(model, x0, xi, t_max=T_MAX, n_frames=21, **W.ExperimentDashboard.SOLVER)
    assert dash.updates == 1
    assert np.allclose(dash.trajectory.x, expected.x)
    assert np.allclose(dash.player.token_positions, expected.x[-1])
    assert np.allclose(dash.player.keyframes, expected.x[dash.player.frame_indices], atol=1e-6)
    assert dash.player.token_colors == W.token_colors(expected.xi, "position")
    assert set(dash.last_timing) == {"simulate", "draw", "total", "animation"}

    dash.model.value = "prefix_gauge"
    assert dash.player.token_colors == W.token_colors(dash.trajectory.xi, "prompt")
    assert not dash.n_prompts.disabled and dash.omega.disabled
    dash.n_prompts.value = 2
    assert sorted(set(dash.player.token_colors)) == sorted(PROMPT_PALETTE[:2])
    dash.n.value = 24
    assert len(dash.player.tokens.children) == 24
    assert np.allclose(dash.player.token_positions, dash.trajectory.x[-1])
    dash.seed.value = 3
    model, x0, xi = ue.experiments.setup("prefix_gauge", n=24, n_prompts=2, beta=2.5, seed=3)
    assert np.allclose(dash.player.token_positions,
                       ue.simulate(model, x0, xi, t_max=T_MAX, n_frames=21,
                                   **W.ExperimentDashboard.SOLVER).x[-1])
    assert dash.updates == 5
    # the energy plot shows the new run
    assert np.allclose(dash.energy.energy, dash.trajectory.energy)
    assert "<polyline" in dash.energy.html.value


def test_dashboard_debounces_bursts_of_changes():
    async def burst():
        dash = W.ExperimentDashboard("usa", n=8, t_max=T_MAX, n_frames=11, debounce=0.2)
        for b in (1.5, 2.0, 2.5):
            dash.beta.value = b
        await asyncio.sleep(0.05)
        assert dash.updates == 0
        await asyncio.sleep(0.5)
        return dash

    dash = asyncio.run(burst())
    assert dash.updates == 1
    assert dash.trajectory.model.beta == 2.5


def test_dashboard_reports_bad_input_instead_of_raising():
    dash = W.ExperimentDashboard("usa", n=8, t_max=T_MAX, n_frames=11, debounce=0, d=5)
    dash.model.value = "rope"        # rope in odd d > 3 is refused by experiments.setup
    assert dash.updates == 0 and "color:#b00" in dash.status.value
    assert "rope: n = 8, beta = 1, omega = 1, seed = 0 failed" in dash.status.value
    assert dash.trajectory.model.name == "usa"
    # the controls go back to the run on display, so they never disagree with the picture
    assert dash.model.value == "usa" and dash.omega.disabled
    assert "usa: n = 8, beta = 1, seed = 0" in dash.energy.html.value


def test_dashboard_title_names_the_run_its_controls_describe():
    dash = W.ExperimentDashboard("prefix_gauge", n=16, t_max=0.5, n_frames=5, debounce=0)
    assert dash.run_title() == "prefix_gauge: n = 16, beta = 1, n_prompts = 3, seed = 0"
    dash.beta.value = 2.5
    dash.n_prompts.value = 2
    title = "prefix_gauge: n = 16, beta = 2.5, n_prompts = 2, seed = 0"
    assert dash.run_title() == title and title in dash.energy.html.value
    assert dash.trajectory.model.beta == 2.5 and len(np.unique(dash.trajectory.xi)) == 2


def _controls(widget):
    """Every ipywidgets control (a widget with a value the reader can set) under ``widget``."""
    import ipywidgets

    found = []
    if isinstance(widget, (ipywidgets.widgets.ValueWidget,)) and not isinstance(
            widget, (ipywidgets.HTML, ipywidgets.Label, ipywidgets.Image)):
        found.append(widget)
    for child in getattr(widget, "children", ()) or ():
        if isinstance(child, ipywidgets.Widget):
            found += _controls(child)
    return found


def test_dashboard_without_a_kernel_is_visibly_disabled():
    dash = W.ExperimentDashboard("rope", n=8, t_max=0.5, n_frames=5, live=False)
    controls = _controls(dash)
    assert len(controls) >= len(dash.controls)
    assert all(control.disabled for control in dash.controls)
    assert dash.note.layout.display != "none" and dash.note in dash.children
    assert "need a running Python kernel" in dash.note.value
    assert "href='widgets.html#running-notebooks'" in dash.note.value
    assert "Running the notebooks" in dash.note.value
    # the saved picture, title and (disabled) controls describe one run
    assert "rope: n = 8, beta = 1, omega = 1, seed = 0" in dash.energy.html.value
    assert dash.trajectory.model.beta == dash.beta.value and dash.trajectory.x.shape[1] == dash.n.value


def test_dashboard_with_a_kernel_enables_its_controls_and_hides_the_note():
    dash = W.ExperimentDashboard("rope", n=8, t_max=0.5, n_frames=5, live=True)
    assert not any(control.disabled for control in dash.controls if control is not dash.n_prompts)
    assert dash.n_prompts.disabled                     # rope does not read it
    assert dash.note.layout.display == "none" and dash.note.value == ""


def test_dashboard_reads_static_page_from_the_environment(monkeypatch):
    monkeypatch.setenv("USAAV_EDU_STATIC_PAGE", "1")
    assert not W.dashboard.live_kernel()
    dash = W.ExperimentDashboard("usa", n=8, t_max=0.5, n_frames=5)
    assert not dash.live and dash.model.disabled and dash.note.layout.display != "none"
    assert W.dashboard.live_kernel(True)               # an explicit choice wins
    monkeypatch.setenv("USAAV_EDU_STATIC_PAGE", "0")
    assert W.dashboard.live_kernel()
    monkeypatch.setenv("USAAV_EDU_STATIC_PAGE", "yes")
    with pytest.raises(ValueError, match="USAAV_EDU_STATIC_PAGE must be unset, '0' or '1'"):
        W.dashboard.live_kernel()
    with pytest.raises(TypeError, match="live must be True, False or None"):
        W.ExperimentDashboard("usa", n=8, t_max=0.5, n_frames=5, live="no")


def test_every_control_has_a_label_and_a_tooltip():
    dash = W.ExperimentDashboard("rope", n=8, t_max=0.5, n_frames=5, live=True)
    controls = _controls(dash)
    assert len(controls) == len(dash.controls)            # the time is read on the canvas
    for control in controls:
        assert control.description and control.tooltip, f"{type(control).__name__} unlabelled"
    # the animation buttons (pythreejs, icons only) are named by the text beside them
    row = dash.player.children[1]
    assert row.children[0] is dash.player.action and row.children[1] is dash.player.time_info
    assert "buttons: play, pause, stop, repeat" in dash.player.time_info.value


# ----------------------------------------------------------------------- matplotlib fallback
def test_plot_sphere_and_energy():
    import matplotlib.pyplot as plt

    traj = run("prefix_gauge", n=12)
    ax = W.plot_sphere(traj, trails=True, curves=[ue.maximizers.latitude_circle(0.3, 32)],
                       targets=np.eye(3))
    offsets = np.array(ax.collections[-1]._offsets3d).T
    assert np.allclose(offsets, traj.x[-1])
    assert ax.get_legend() is not None
    ax2 = W.plot_energy(traj, run("usa", n=12), bound=1.5)
    assert len(ax2.lines) == 3
    assert np.allclose(ax2.lines[0].get_ydata(), traj.energy)
    with pytest.raises(TypeError):
        W.plot_sphere()
    with pytest.raises(TypeError):
        W.plot_energy()
    plt.close("all")


# ----------------------------------------------------------------------- refusing bad input
def tampered(traj, **fields):
    """``traj`` with some arrays replaced after the fact (bypassing any constructor check)."""
    import copy

    bad = copy.copy(traj)
    for key, value in fields.items():
        object.__setattr__(bad, key, value)
    return bad


def with_nan_frame(traj, frame):
    x = np.array(traj.x, copy=True)
    x[frame, 0, 0] = np.nan
    return tampered(traj, x=x)


def test_views_refuse_nan_states():
    traj = fake_trajectory(n=8, frames=11)
    with pytest.raises(ValueError, match=r"trajectory.x must be finite .*frames \[10\]"):
        W.SphereView(with_nan_frame(traj, -1))
    # the player draws every frame, so a NaN in the middle is refused too
    with pytest.raises(ValueError, match=r"trajectory.x must be finite .*frames \[5\]"):
        W.TrajectoryPlayer(with_nan_frame(traj, 5))
    view = W.SphereView(traj)
    with pytest.raises(ValueError, match=r"trajectory.x must be finite"):
        view.show(with_nan_frame(traj, 0), frame=-1)
    x = ue.sphere.uniform(4, 3, seed=0)
    x[2, 1] = np.nan
    with pytest.raises(ValueError, match="x must be finite"):
        W.SphereView(x=x)
    with pytest.raises(ValueError, match="x must be finite"):
        W.plot_sphere(x=x)
    with pytest.raises(ValueError, match="trajectory.x must be finite"):
        W.plot_sphere(with_nan_frame(traj, -1))


def test_views_refuse_points_off_the_sphere():
    traj = fake_trajectory(n=8, frames=11)
    with pytest.raises(ValueError, match="trajectory.x must hold unit vectors"):
        W.TrajectoryPlayer(tampered(traj, x=2.0 * traj.x))
    with pytest.raises(ValueError, match="x must hold unit vectors"):
        W.SphereView(x=np.ones((3, 3)))
    view = W.SphereView(traj)
    with pytest.raises(ValueError, match="points must hold unit vectors"):
        view.add_targets(np.array([[0.0, 0.0, 2.0]]))
    with pytest.raises(ValueError, match="points must be finite"):
        view.add_curve(np.array([[1.0, 0.0, 0.0], [np.nan, 1.0, 0.0]]))
    with pytest.raises(ValueError, match="points must have dimension d = 3"):
        view.add_targets(np.array([[0.0, 0.0, 0.0, 1.0]]))     # would be projected silently
    with pytest.raises(ValueError, match="x must hold unit vectors"):
        view.set_points(np.ones((3, 3)), np.zeros(3), "none")


@pytest.mark.parametrize("duration", [np.nan, np.inf, 0.0, -1.0])
def test_player_refuses_a_duration_that_is_not_a_positive_number(duration):
    with pytest.raises(ValueError, match="duration must be"):
        W.TrajectoryPlayer(fake_trajectory(n=6, frames=11), duration=duration)


def test_frames_that_do_not_exist_are_named():
    traj = fake_trajectory(n=6, frames=11)
    with pytest.raises(ValueError, match=r"frame must lie in \[-11, 10\]"):
        W.SphereView(traj, frame=11)
    with pytest.raises(ValueError, match="frame must lie in"):
        W.plot_sphere(traj, frame=-12)
    with pytest.raises(TypeError, match="frame must be an integer"):
        W.TrajectoryPlayer(traj, frame=1.5)


@pytest.mark.parametrize("kw,name", [
    (dict(max_tokens=2.7), "max_tokens"),          # was truncated to 2
    (dict(trail_frames=1, trails=True), "trail_frames"),   # was raised to 2
    (dict(coords=(0, 1.7, 3)), "coords"),          # was truncated to (0, 1, 3)
    (dict(width=0), "width"),
    (dict(token_radius=np.nan), "token_radius"),
    (dict(trails="yes"), "trails"),
])
def test_sphere_view_refuses_arguments_it_used_to_adjust(kw, name):
    traj = fake_trajectory(n=6, frames=11, d=4, name="generalized_rope")
    with pytest.raises((TypeError, ValueError), match=name):
        W.SphereView(traj, **kw)


def test_sphere_view_takes_a_trajectory_or_points_not_both():
    traj = fake_trajectory(n=6, frames=11)
    with pytest.raises(ValueError, match="either trajectory or x"):
        W.SphereView(traj, x=ue.sphere.uniform(6, 3, seed=1))     # x was ignored
    with pytest.raises(ValueError, match="xi and labels go with raw points"):
        W.SphereView(traj, xi=np.arange(6), labels="prompt")      # ignored as well


def test_frame_budget_and_subsampling_refuse_instead_of_clamping():
    with pytest.raises(ValueError, match="k must be >= 1"):
        W.subsample(10, 0)                                        # was read as 1
    with pytest.raises(ValueError, match="max_frames must be >= 2"):
        W.frames_for_budget(10, 50, max_frames=1)                 # was read as 2
    with pytest.raises(ValueError, match="max_frames must be >= 2"):
        W.TrajectoryPlayer(fake_trajectory(n=6, frames=11), max_frames=0)
    assert W.frames_for_budget(10, 1) == 1                        # not 2 frames out of 1
    assert W.frames_for_budget(10, 50, max_frames=7) == 7
    with pytest.raises(ValueError, match="loop must be one of"):
        W.TrajectoryPlayer(fake_trajectory(n=6, frames=11), loop="LoopForever")


@pytest.mark.parametrize("kw,message", [
    (dict(n=1000), r"n must lie in \[8, 256\]"),        # the slider used to show 256
    (dict(n=4), r"n must lie in \[8, 256\]"),
    (dict(beta=20.0), r"beta must lie in \[0.1, 8\]"),
    (dict(beta=np.nan), "beta must be finite"),
    (dict(omega=10.0), r"omega must lie in \[0.25, 4\]"),
    (dict(n_prompts=20), r"n_prompts must lie in \[1, 8\]"),
    (dict(seed=-1), r"seed must lie in \[0, 10000\]"),
    (dict(seed=20_000), r"seed must lie in \[0, 10000\]"),
    (dict(t_max=np.nan), "t_max must be finite"),
    (dict(debounce=np.nan), "debounce must be finite"),
    (dict(n_frames=1), "n_frames must be >= 2"),
    (dict(d=3.5), "d must be an integer"),
])
def test_dashboard_refuses_out_of_range_arguments(kw, message):
    args = dict(n=8, t_max=0.5, n_frames=5, debounce=0)
    args.update(kw)
    with pytest.raises((ValueError, TypeError), match=message):
        W.ExperimentDashboard("usa", **args)


def test_energy_views_refuse_nan_energies_and_bounds():
    from usaav_edu.widgets.dashboard import EnergyPlot

    traj = fake_trajectory(n=6, frames=11)
    energy = np.array(traj.energy, copy=True)
    energy[3] = np.nan
    with pytest.raises(ValueError, match="energy must be finite"):
        EnergyPlot().draw(traj.t, energy)                         # the NaN used to be left out
    with pytest.raises(ValueError, match="bound must be finite"):
        EnergyPlot().draw(traj.t, traj.energy, bound=np.nan)
    with pytest.raises(ValueError, match="energy must hold 11 finite values"):
        W.plot_energy(tampered(traj, energy=energy))
    with pytest.raises(ValueError, match="bound must be finite"):
        W.plot_energy(traj, bound=np.nan)                         # used to draw nothing
    with pytest.raises(TypeError, match="labels must be a sequence of names"):
        W.plot_energy(traj, traj, labels="ab")


def test_colours_refuse_nan_labels():
    with pytest.raises(ValueError, match="position labels xi must be finite"):
        W.token_colors(np.array([0.0, np.nan, 1.0]), "position")
    with pytest.raises(ValueError, match="phase must be finite"):
        W.colors.cyclic_color(np.nan)
    with pytest.raises(ValueError, match="max_rows must be >= 1"):
        W.legend_entries(np.arange(3), "prompt", max_rows=0)
    rows = W.legend_entries(np.arange(12), "prompt", max_rows=4)
    assert len(rows) == 4 and rows[-1].text == "... and 9 more prompts"


def test_colours_axes_and_widgets_are_checked_by_name():
    import matplotlib.pyplot as plt

    traj = fake_trajectory(n=6, frames=11)
    view = W.SphereView(traj)
    with pytest.raises(ValueError, match="color must be an HTML colour"):
        view.add_targets(np.eye(3), color="notacolor")
    with pytest.raises(TypeError, match="color must be an HTML colour"):
        view.add_curve(ue.maximizers.latitude_circle(0.2, 8), color=None)
    with pytest.raises(TypeError, match="ax must be 3-D matplotlib axes"):
        W.plot_sphere(traj, ax=plt.figure().add_subplot())       # 2-D axes
    with pytest.raises(TypeError, match="ax must be matplotlib axes"):
        W.plot_energy(traj, ax="left")
    with pytest.raises(TypeError, match="widget must be an ipywidgets Widget"):
        W.embedded_state_bytes(None)                              # used to report a size
    plt.close("all")


def test_dashboard_greys_out_controls_the_experiment_does_not_read():
    dash = W.ExperimentDashboard("cosine_bias", n=8, t_max=0.5, n_frames=5, debounce=0)
    assert dash.beta.disabled and not dash.omega.disabled and dash.n_prompts.disabled  # linear profile
    dash.model.value = "generalized_rope"
    assert not dash.beta.disabled and dash.params()["d"] == 4 == dash.trajectory.d


# ---------------------------------------------------------------------------------------------
# the page budget belongs to the static page: in a live kernel a view never raises over it

def _cost(m):
    """A view of m tokens: 100 kB once, 5 kB a token, 50 bytes a token and frame."""
    return 100_000 + 5_000 * m, 50 * (m + 1)


def test_the_budget_rule_drops_tokens_in_a_live_kernel_only(monkeypatch):
    from usaav_edu.widgets.player import LIVE_MIN_FRAMES, _tokens_within

    # everything fits: all tokens, the frames that fit, no note (live or static)
    for static in ("0", "1"):
        monkeypatch.setenv("USAAV_EDU_STATIC_PAGE", static)
        assert _tokens_within(_cost, 10, 50, 200_000, None, "10 tokens") == (10, 50, "")
    # two frames of 100 tokens need 610,100 bytes: a static page refuses ...
    monkeypatch.setenv("USAAV_EDU_STATIC_PAGE", "1")
    with pytest.raises(ValueError, match=r"max_bytes=400000 is too small for 100 tokens"):
        _tokens_within(_cost, 100, 500, 400_000, None, "100 tokens")
    # ... a live kernel draws the most tokens m with 100e3 + 5e3 m + 24 * 50 (m + 1) <= 400e3
    monkeypatch.delenv("USAAV_EDU_STATIC_PAGE")
    m, k, note = _tokens_within(_cost, 100, 500, 400_000, None, "100 tokens")
    assert m == (400_000 - 100_000 - LIVE_MIN_FRAMES * 50) // (5_000 + LIVE_MIN_FRAMES * 50)
    fixed, per_frame = _cost(m)
    assert k == (400_000 - fixed) // per_frame and fixed + k * per_frame <= 400_000
    assert note == (f"max_bytes=400000 holds {m} of the 100 tokens with {k} frames: the view "
                    f"draws those (raise max_bytes to see all)")
    # fewer frames than LIVE_MIN_FRAMES wanted where the trajectory has fewer
    m3, k3, _ = _tokens_within(_cost, 100, 3, 400_000, None, "100 tokens")
    assert k3 == 3 and m3 == (400_000 - 100_000 - 3 * 50) // (5_000 + 3 * 50)
    # below the cost of a single token: refused in a live kernel too, naming max_bytes
    with pytest.raises(ValueError, match=r"max_bytes=100000 is too small for 100 tokens: not "
                                         r"even one token fits \(two frames need 105200\)"):
        _tokens_within(_cost, 100, 500, 100_000, None, "100 tokens")


def test_a_player_in_a_live_kernel_draws_fewer_tokens_to_fit(monkeypatch):
    # two frames of 300 tokens need 114,000 + 2,100 * 300 + 2 * 22 * 301 = 757,244 bytes
    traj = fake_trajectory(n=300, frames=41)
    player = W.TrajectoryPlayer(traj, max_bytes=600_000, max_tokens=300)
    m = len(player.token_index)
    assert m < 300 and player.keyframes.shape[1] == m
    # within the budget by the player's own estimate of its size (``_player_bytes``), which the
    # measured size follows to a few per cent (test_payload_stays_under_one_megabyte)
    from usaav_edu.widgets.player import _player_bytes
    fixed, per_frame = _player_bytes(m)
    assert fixed + len(player.frame_indices) * per_frame <= 600_000
    assert W.embedded_state_bytes(player) <= 1.03 * 600_000
    assert player.budget_note.startswith(f"max_bytes=600000 holds {m} of the 300 tokens with ")
    assert player.budget_label in player.children
    monkeypatch.setenv("USAAV_EDU_STATIC_PAGE", "1")
    with pytest.raises(ValueError, match=r"max_bytes=600000 is too small for 300 tokens \(two "
                                         r"frames need 773644\)"):
        W.TrajectoryPlayer(traj, max_bytes=600_000, max_tokens=300)


# ------------------------------------------------------------------ time bar and readout
def _bead_clip_time(player):
    """The clip time at which the bead stands, read from its position on the bar (which runs
    from -0.32 at t = 0 to +0.32 at the end of the clip)."""
    span = float(np.asarray(player.tracks[0].times)[-1])
    return (player.clock.position[0] + 0.32) / 0.64 * span


def _state_at(player, time):
    """(n, 3) token positions the keyframe tracks give at clip time ``time`` (linear
    interpolation, as the browser's animation mixer does)."""
    out = []
    for track in player.tracks:
        if not track.name.startswith("p"):
            continue
        times = np.asarray(track.times, dtype=float)
        v = np.asarray(track.values, dtype=float).reshape(-1, 3)
        out.append([np.interp(time, times, v[:, a]) for a in range(3)])
    return np.array(out)


@pytest.mark.parametrize("frame", [0, -1, 40, 77])
def test_a_player_shows_the_state_at_its_bead(frame):
    traj = fake_trajectory(n=12, frames=101)
    player = W.TrajectoryPlayer(traj, frame=frame, max_frames=30)
    t_bead = _bead_clip_time(player)
    # the bead stands at the time of the frame drawn ...
    assert t_bead == pytest.approx(traj.t[frame] - traj.t[0], abs=1e-5)
    # ... the tokens stand where the clip puts them at that time (and where the frame is) ...
    assert np.allclose(player.token_positions, W.project_3d(traj.x[frame]), atol=1e-6)
    if frame in (0, -1):          # keyframes: the clip holds that very frame
        assert np.allclose(_state_at(player, t_bead), player.token_positions, atol=1e-5)
    # ... and the animation's clock and the time label (before play, after stop) read it
    assert player.action.time == pytest.approx(t_bead, abs=1e-5)
    assert W.player.label_time(player.label.scale) == pytest.approx(t_bead, abs=1e-5)
    assert player.bead_time == pytest.approx(t_bead, abs=1e-5)


def test_a_dashboard_player_opens_with_its_bead_at_the_end():
    dash = W.ExperimentDashboard("usa", n=8, t_max=T_MAX, n_frames=11, live=False)
    player = dash.player
    span = float(np.asarray(player.tracks[0].times)[-1])
    assert _bead_clip_time(player) == pytest.approx(span, abs=1e-5)
    assert np.allclose(_state_at(player, span), player.token_positions, atol=1e-5)


@pytest.mark.parametrize("span, fmt, shown", [(8.0, ".2f", "1.25"), (20.0, ".1f", "12.5"),
                                              (0.5, ".3f", "0.125"), (150.0, ".0f", "125")])
def test_the_time_label_has_three_significant_digits(span, fmt, shown):
    assert W.player.readout_format(span) == fmt
    assert f"{1.25 * 10 ** np.floor(np.log10(span)):{fmt}}" == shown
    assert W.player.time_label_text(1.25 * 10 ** np.floor(np.log10(span)), span) == f"t = {shown}"
    assert W.player.time_label_text(0.00024999, span) == f"t = {0:{fmt}}"   # not 0.00024999
    # the label's shader has one character per character of the longest text, t = span
    label = W.player.time_label(span)
    defines = label.material.defines
    assert float(defines["CELLS"]) == len(W.player.time_label_text(span, span))
    assert float(defines["DECIMALS"]) == int(fmt[1:-1])
    assert float(defines["INT_DIGITS"]) == len(f"{span:{fmt}}".split(".")[0])


# ------------------------------------------------------------------------ the time label
def _label_reads(track, time):
    """The clip time the time label reads at clip time ``time``: its scale track interpolated
    linearly (as the browser's animation mixer does), minus the 1 its z scale starts from."""
    z = np.asarray(track.values, dtype=float).reshape(-1, 3)[:, 2]
    return float(np.interp(time, np.asarray(track.times, dtype=float), z)) - 1.0


def _bead_reads(track, time, span):
    """The clip time at which the bead's track puts the bead at clip time ``time``."""
    x = np.asarray(track.values, dtype=float).reshape(-1, 3)[:, 0]
    return (float(np.interp(time, np.asarray(track.times, dtype=float), x)) + 0.32) / 0.64 * span


def _label_track(action, name="tclock"):
    tracks = [tr for tr in action.clip.tracks if tr.name == f"{name}.scale"]
    assert len(tracks) == 1, f"the clip holds {len(tracks)} tracks of the label {name}"
    return tracks[0]


@pytest.mark.parametrize("frames, max_frames", [(41, None), (101, 30), (7, None)])
def test_the_time_label_reads_the_clip_time_while_it_plays(frames, max_frames):
    player = W.TrajectoryPlayer(fake_trajectory(n=6, frames=frames), max_frames=max_frames)
    span = float(player.keyframe_times[-1])                    # t from 0 to 20
    assert span == pytest.approx(20.0)
    track = _label_track(player.action)
    # the label plays with the clip: its track lasts what the action plays
    assert float(track.times[0]) == 0.0
    assert float(track.times[-1]) == pytest.approx(player.action.clip.duration)
    assert player.action.clip.duration == pytest.approx(span)
    bead = next(tr for tr in player.action.clip.tracks if tr.name == "clock.position")
    # at every time of the play, on the keyframes and between them, the label reads that time,
    # written as "t = 12.3", and the bead stands at the same time
    for time in np.r_[player.keyframe_times, np.linspace(0.03, span - 0.03, 57)]:
        assert _label_reads(track, time) == pytest.approx(time, abs=1e-4)
        assert W.player.time_label_text(_label_reads(track, time), span) == f"t = {time:.1f}"
        assert player.label_text(time) == f"t = {time:.1f}"
        assert _bead_reads(bead, time, span) == pytest.approx(time, abs=1e-4)
    assert player.label_text(0.0) == "t = 0.0" and player.label_text(span) == "t = 20.0"


def test_the_time_label_follows_a_new_run_and_leaves_no_readout_behind():
    player = W.TrajectoryPlayer(fake_trajectory(n=6, frames=41))
    new = fake_trajectory(n=6, frames=21)
    new.t[:] = np.linspace(0.0, 8.0, 21)
    player.show(new)
    assert player.label.material.defines["DECIMALS"] == "2.0"          # t = 1.25
    assert player.label_text(1.25) == "t = 1.25" and player.label_text(8.0) == "t = 8.00"
    assert float(_label_track(player.action).times[-1]) == pytest.approx(8.0)
    # the number field that read the time only when paused is gone from the controls
    row = player.children[1]
    assert not [w for w in row.children if isinstance(w, W.player.widgets.FloatSlider)]


def test_every_time_bar_has_a_label_that_plays_with_its_clip():
    twin = W.TwinView(run("rope", n=8), max_frames=5)
    span = float(twin.keyframe_times[-1])
    labels = []
    for prefix, camera in zip("xy", twin.cameras, strict=True):
        hud = [g for g in camera.children if g.name.startswith("hud")][0]
        label = next(o for o in hud.children if o.name == f"tclock{prefix}")
        labels.append(label)
        assert W.player.label_time(label.scale) == 0.0
        track = _label_track(twin.action, f"tclock{prefix}")
        assert float(track.times[-1]) == pytest.approx(twin.action.clip.duration) == span
        for time in np.linspace(0.0, span, 9):
            assert _label_reads(track, time) == pytest.approx(time, abs=1e-4)
    assert labels[0].material is labels[1].material           # the page holds the shader once
    density = W.DensityView(fake_trajectory(n=40, frames=9), mode="density", level=2)
    track = _label_track(density.action)
    span = float(density.keyframe_times[-1])
    assert float(track.times[-1]) == pytest.approx(density.action.clip.duration) == span
    for time in np.linspace(0.0, span, 9):
        assert _label_reads(track, time) == pytest.approx(time, abs=1e-4)


def test_a_players_fixed_bytes_hold_its_time_bar():
    """``BYTES_FIXED`` is what a player embeds besides its tokens, their materials and its
    keyframes (the time bar and its label included): measured, within a few per cent, on runs
    of two frames (a keyframe's estimate is generous, and many frames would hide the rest)."""
    from usaav_edu.widgets.player import (
        BYTES_FIXED,
        BYTES_PER_COLOUR,
        BYTES_PER_TOKEN,
        BYTES_PER_TOKEN_FRAME,
    )
    for n in (1, 8):
        player = W.TrajectoryPlayer(fake_trajectory(n=n, frames=2))
        k = len(player.frame_indices)
        colours = len(set(player.token_colors))
        fixed = (W.embedded_state_bytes(player) - BYTES_PER_TOKEN * n
                 - BYTES_PER_COLOUR * colours - BYTES_PER_TOKEN_FRAME * (n + 1) * k)
        assert 0.85 * BYTES_FIXED <= fixed <= 1.02 * BYTES_FIXED, (n, fixed)


def _tick_numbers(hud):
    sprites = [o for o in hud.children if isinstance(o, W.player.three.Sprite)]
    assert len(sprites) == 1, "the time bar's numbers are one text sprite"
    return sprites[0].material.map.string.split()


def test_the_time_bar_is_numbered():
    assert W.player.tick_labels(10.0) == ["0", "2.5", "5", "7.5", "10"]
    assert W.player.tick_labels(80.0) == ["0", "20", "40", "60", "80"]
    traj = fake_trajectory(n=8, frames=41)
    player = W.TrajectoryPlayer(traj)
    assert _tick_numbers(player.hud) == ["0", "5", "10", "15", "20"]
    twin = W.TwinView(run("rope", n=8), max_frames=5)
    for camera in twin.cameras:
        hud = [g for g in camera.children if g.name.startswith("hud")][0]
        assert _tick_numbers(hud) == W.player.tick_labels(float(twin.keyframe_times[-1]))


def test_views_carry_the_classes_that_fit_them_to_the_column():
    traj = fake_trajectory(n=8, frames=21)
    player = W.TrajectoryPlayer(traj)
    assert "usaav-view" in player._dom_classes
    row = player.children[0]
    assert "usaav-view-row" in row._dom_classes and row.layout.flex_flow == "row wrap"
    assert "usaav-canvas" in player.renderer._dom_classes
    twin = W.TwinView(run("rope", n=8), max_frames=5)
    row = twin.children[0]
    assert row.layout.flex_flow == "row wrap", "the twin view's spheres stack in a narrow column"
    assert all("usaav-canvas" in r._dom_classes for r in twin.renderers)


def test_the_time_bars_numbers_need_no_mipmaps():
    """The numbers under the time bar are a text texture whose size is not a power of two:
    WebGL warns unless it is filtered without mipmaps."""
    import usaav_edu as ue
    from usaav_edu.widgets import TrajectoryPlayer
    traj = ue.simulate(ue.models.usa(1.0), ue.sphere.uniform(8, 3, seed=0), t_max=1.0, n_frames=5)
    player = TrajectoryPlayer(traj)
    found = []

    def walk(w, seen):
        if id(w) in seen:
            return
        seen.add(id(w))
        if type(w).__name__ == "TextTexture":
            found.append(w)
        for name in getattr(w, "keys", []):
            v = getattr(w, name, None)
            for x in (v if isinstance(v, (list, tuple)) else [v]):
                if hasattr(x, "keys") and hasattr(x, "model_id"):
                    walk(x, seen)
    walk(player, set())
    assert found and all(t.minFilter == "LinearFilter" and not t.generateMipmaps for t in found)


@pytest.mark.parametrize("name", ["usa", "rope"])
@pytest.mark.parametrize("n", [1, 8, 24, 64])
def test_the_player_estimate_bounds_its_size_and_stays_close(monkeypatch, name, n):
    """The budget rule plans with ``_player_bytes``: it must never be below a player's real
    size (a page would go over its budget), nor far above (runs would be refused that fit).
    Tokens of one colour (USA) share one material; RoPE's positions take up to 32 colours."""
    from usaav_edu.widgets.player import _player_bytes

    monkeypatch.setenv("USAAV_EDU_STATIC_PAGE", "1")
    model, x0, xi = ue.experiments.setup(name, n=n, seed=0)
    traj = ue.simulate(model, x0, xi, t_max=1.0, n_frames=2)
    player = W.TrajectoryPlayer(traj, max_bytes=3_000_000)
    colours = len(set(player.token_colors))
    assert colours == (1 if name == "usa" or n == 1 else min(n, CYCLIC_STEPS))
    fixed, per_frame = _player_bytes(n, colours)
    estimate = fixed + per_frame * len(player.frame_indices)
    size = W.embedded_state_bytes(player)
    assert size <= estimate <= 1.2 * size, (size, estimate)
