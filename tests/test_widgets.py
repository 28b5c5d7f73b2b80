"""Widget state, checked headless (no browser): what the scene holds equals what was simulated."""
from __future__ import annotations

import asyncio

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import usaav_edu as ue  # noqa: E402
from usaav_edu import widgets as W  # noqa: E402
from usaav_edu.widgets.colors import HUE_STEPS, PLAIN_COLOR, PROMPT_PALETTE  # noqa: E402

T_MAX = 2.0  # short runs: the widgets are under test here, not the solver


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
    hues = W.token_colors(xi, "position")
    assert len(set(hues)) == 8 and hues[0] != hues[4]
    assert W.token_colors(np.array([0, 1, 2, 0]), "prompt") == \
        [PROMPT_PALETTE[0], PROMPT_PALETTE[1], PROMPT_PALETTE[2], PROMPT_PALETTE[0]]
    assert len(set(W.token_colors(np.linspace(0, 1, 1000), "position"))) == HUE_STEPS
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
    assert names[:24] == [f"p{i}.position" for i in range(24)] and names[-1] == "clock.position"
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
    assert len(player.frame_indices) >= 30
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
    assert dash.trajectory.model.name == "usa"


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
