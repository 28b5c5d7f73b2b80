"""TwinView, checked headless: one clip plays the contents x and the gauge coordinates y of one run."""
from __future__ import annotations

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu.widgets import embedded_state_bytes, project_3d
from usaav_edu.widgets.twin import TITLES, TwinView


def gauge_run(name="rope", n=16, frames=61, seed=0, **kw):
    """A short simulated run of a gauge model (its y = G(xi) x differs from x)."""
    model, x0, xi = ue.experiments.setup(name, n=n, seed=seed, **kw)
    return ue.simulate(model, x0, xi, t_max=3.0, n_frames=frames, seed=seed)


@pytest.fixture(scope="module")
def rope_run():
    return gauge_run("rope", n=16)


def state_of(widget):
    from ipywidgets.embed import dependency_state

    return dependency_state(widget, drop_defaults=False)


def test_both_views_hold_x_and_y_at_the_same_frame_times(rope_run):
    tw = TwinView(rope_run, max_frames=20)
    idx = tw.frame_indices
    assert len(idx) == 20 and idx[0] == 0 and idx[-1] == len(rope_run.t) - 1
    x_k = project_3d(rope_run.x[idx])
    y_k = project_3d(rope_run.model.to_gauge(rope_run.x, rope_run.xi)[idx])
    assert np.max(np.abs(tw.keyframes_x - x_k)) < 1e-6          # float32 keyframes
    assert np.max(np.abs(tw.keyframes_y - y_k)) < 1e-6
    # the two views really differ (RoPE rotates each token by its own angle)
    assert np.max(np.abs(tw.keyframes_x - tw.keyframes_y)) > 0.1
    # every track of the clip, x, y and both time beads, has the same keyframe times; the time
    # labels, linear in the clip time, hold its two ends
    expected = (rope_run.t[idx] - rope_run.t[0]).astype(np.float32)
    for track in tw.tracks:
        want = expected[[0, -1]] if track.name.startswith("tclock") else expected
        assert np.array_equal(np.asarray(track.times), want), track.name
    names = {tr.name for tr in tw.tracks}
    assert {f"x{i}.position" for i in range(16)} <= names
    assert {f"y{i}.position" for i in range(16)} <= names
    assert {"clockx.position", "clocky.position", "tclockx.scale", "tclocky.scale"} <= names


def test_one_clip_one_action_drives_both_canvases(rope_run):
    tw = TwinView(rope_run, max_frames=10)
    state = state_of(tw)
    kinds = [m["model_name"] for m in state.values()]
    assert kinds.count("AnimationActionModel") == 1, kinds.count("AnimationActionModel")
    assert kinds.count("AnimationClipModel") == 1
    assert kinds.count("RendererModel") == 2
    assert kinds.count("SceneModel") == 1
    # both renderers draw the scene the action animates, through different cameras
    assert tw.renderers[0].scene is tw.scene and tw.renderers[1].scene is tw.scene
    assert tw.action.localRoot is tw.scene and tw.action.clip is tw.clip
    assert tw.renderers[0].camera is not tw.renderers[1].camera
    assert "usaav-twin" in tw._dom_classes           # the browser checks find twin views by it
    # each track addresses exactly one object of that scene by name
    objects = {}

    def walk(obj):
        if getattr(obj, "name", ""):
            objects.setdefault(obj.name, []).append(obj)
        for child in getattr(obj, "children", ()):
            walk(child)

    walk(tw.scene)
    for track in tw.tracks:
        target = track.name.split(".")[0]
        assert len(objects.get(target, [])) == 1, f"{track.name} addresses {len(objects.get(target, []))} objects"
    # the views are titled
    text = " ".join(str(s["state"].get("value", "")) for s in state.values())
    for title in TITLES:
        assert title in text


def test_each_camera_sees_its_own_sphere_only(rope_run):
    from usaav_edu.widgets.twin import FAR

    tw = TwinView(rope_run, max_frames=4)
    centres = [np.asarray(g.position) for g in tw.groups]
    for camera, own, other in zip(tw.cameras, centres, centres[::-1], strict=True):
        pos = np.asarray(camera.position)
        assert np.linalg.norm(pos - own) + 1.0 < FAR            # its sphere is within reach
        assert np.linalg.norm(pos - other) - 1.0 > FAR          # the other is beyond the far plane
    # in its group's own coordinates (p -> scale * (p - centre)) each camera sits at the same
    # place with the same up, so the two spheres are seen from the same side
    local = [np.asarray(g.scale) * (np.asarray(cam.position) - np.asarray(g.position))
             for cam, g in zip(tw.cameras, tw.groups, strict=True)]
    ups = [np.asarray(g.scale) * np.asarray(cam.up) for cam, g in zip(tw.cameras, tw.groups, strict=True)]
    assert np.allclose(local[0], local[1]) and np.allclose(ups[0], ups[1]), (local, ups)
    # the orbit controls aim each camera at its own sphere, on the line through the origin
    # (where the controls aim a camera before the reader touches it)
    for camera, controls, centre in zip(tw.cameras, tw.controls, centres, strict=True):
        assert np.allclose(controls.target, centre)
        pos = np.asarray(camera.position)
        # the centre lies between the camera and the origin: pos = s * centre with s > 1
        assert np.allclose(centre, 0) or (np.linalg.norm(np.cross(pos, centre)) < 1e-9
                                          and pos @ centre > centre @ centre)


@pytest.mark.parametrize("max_bytes", [450_000, 600_000])
def test_budget_is_respected(max_bytes):
    run = gauge_run("prefix_gauge", n=24, frames=601)
    tw = TwinView(run, max_bytes=max_bytes)
    size = embedded_state_bytes(tw)
    assert size <= max_bytes, f"{size} bytes of state for a budget of {max_bytes}"
    assert 2 <= len(tw.frame_indices) < 601, len(tw.frame_indices)


def test_a_budget_too_small_is_refused_before_any_widget(rope_run):
    from ipywidgets.widgets import widget as registry

    before = len(registry._instances)
    with pytest.raises(ValueError, match="max_bytes"):
        TwinView(rope_run, max_bytes=100_000)
    assert len(registry._instances) == before


def test_gauge_coordinates_come_from_the_model():
    run = gauge_run("prefix_gauge", n=12, frames=11)
    tw = TwinView(run, max_frames=11)
    y = project_3d(run.model.to_gauge(run.x, run.xi))
    assert np.max(np.abs(tw.keyframes_y - y)) < 1e-6
    assert np.max(np.abs(tw.keyframes_x - project_3d(run.x))) < 1e-6


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(duration=0.0), ValueError, "duration"),
    (dict(duration=float("nan")), ValueError, "duration"),
    (dict(max_frames=1), ValueError, "max_frames"),
    (dict(loop="forever"), ValueError, "loop"),
    (dict(width=0), ValueError, "width"),
    (dict(max_tokens=0), ValueError, "max_tokens"),
    (dict(coords=(0, 0, 1)), ValueError, "coords"),
    (dict(titles="contents"), TypeError, "titles"),
    (dict(titles=("a", 3)), TypeError, "titles"),
])
def test_bad_arguments_are_refused(rope_run, kwargs, error, match):
    with pytest.raises(error, match=match):
        TwinView(rope_run, **kwargs)


def test_a_trajectory_is_required_and_must_be_drawable(rope_run):
    with pytest.raises(TypeError, match="trajectory"):
        TwinView(rope_run.x)
    bad = ue.Trajectory(t=rope_run.t, x=rope_run.x * 1.01, xi=rope_run.xi, energy=rope_run.energy,
                        model=rope_run.model, method="rk4", dt=0.1)
    with pytest.raises(ValueError, match="unit vectors"):
        TwinView(bad)


# ---------------------------------------------------------------------------------------------
# the page budget belongs to the static page: a live kernel drops tokens to fit, and says so

@pytest.fixture(scope="module")
def rope_128():
    """Chapter 4's run with a learner's n = 128: two frames of 128 tokens' twin view need
    862,552 bytes, over the chapter's max_bytes = 750,000."""
    return gauge_run("rope", n=128, frames=201)


def test_a_live_kernel_draws_fewer_tokens_to_fit_and_says_so(rope_128, monkeypatch):
    monkeypatch.delenv("USAAV_EDU_STATIC_PAGE", raising=False)
    tw = TwinView(rope_128, duration=8.0, max_bytes=750_000)
    m, k = len(tw.token_index), len(tw.frame_indices)
    assert 2 <= m < 128 and k >= 2
    assert embedded_state_bytes(tw) <= 750_000
    # the most tokens that fit with LIVE_MIN_FRAMES frames: one more token would not fit
    from usaav_edu.widgets.player import LIVE_MIN_FRAMES
    from usaav_edu.widgets.twin import _twin_bytes
    assert k >= LIVE_MIN_FRAMES
    fixed, per_frame = _twin_bytes(m + 1)
    assert fixed + LIVE_MIN_FRAMES * per_frame > 750_000
    # one line, shown in the view, naming the budget and what was dropped
    assert tw.budget_note == (f"max_bytes=750000 holds {m} of the 128 tokens with {k} frames: "
                              f"the view draws those (raise max_bytes to see all)")
    assert tw.budget_label in tw.children and tw.budget_note in tw.budget_label.value
    assert "\n" not in tw.budget_note
    assert f"showing {m} of 128 tokens" in tw.caption.value
    # the tokens drawn are evenly spaced in index, the same in both views
    assert tw.keyframes_x.shape[1] == tw.keyframes_y.shape[1] == m


def test_a_static_page_refuses_what_its_budget_cannot_hold(rope_128, monkeypatch):
    monkeypatch.setenv("USAAV_EDU_STATIC_PAGE", "1")
    with pytest.raises(ValueError, match=r"max_bytes=750000 is too small for a twin view of "
                                         r"128 tokens \(two frames need 862552\)"):
        TwinView(rope_128, max_bytes=750_000)


def test_a_view_that_fits_drops_nothing_and_says_nothing(rope_run, monkeypatch):
    monkeypatch.delenv("USAAV_EDU_STATIC_PAGE", raising=False)
    tw = TwinView(rope_run, max_bytes=750_000)
    assert len(tw.token_index) == 16 and tw.budget_note == "" and tw.budget_label is None
    assert len(tw.children) == 3
