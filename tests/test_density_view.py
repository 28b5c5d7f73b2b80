"""Densities of many tokens (usaav_edu.analysis.density) and the view that draws them (DensityView).

The estimates are checked against what a density must do (integrate to 1, be flat for uniform
points within the sampling error, peak where the points are) and against the formula written
out independently; the view is checked headless: what its widget state holds (points, colours,
keyframe tracks) and what it costs in page bytes.
"""
from __future__ import annotations

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu import density as D
from usaav_edu import widgets as W
from usaav_edu.widgets.density import HIDDEN_AT, label_rgb


@pytest.fixture(autouse=True)
def _live_kernel(monkeypatch):
    # these tests play the part of a live kernel unless they say otherwise
    monkeypatch.delenv("USAAV_EDU_STATIC_PAGE", raising=False)


def cloud(n, d=3, frames=5, seed=0, name="usa", labels=None):
    """A made-up Trajectory: uniform points that gather around two centres over the frames."""
    model, _, xi = ue.experiments.setup(name, n=8, d=d, seed=seed)
    rng = np.random.default_rng(seed)
    x0 = ue.sphere.uniform(n, d, seed=seed)
    centres = np.eye(d)[[0, d - 1]]
    which = rng.integers(0, 2, n)
    s = np.linspace(0.0, 1.0, frames)[:, None, None]
    x = (1 - s) * x0[None] + s * (centres[which][None] + 0.05 * rng.normal(size=(1, n, d)))
    x /= np.linalg.norm(x, axis=2, keepdims=True)
    xi = np.arange(n, dtype=float) if labels is None else labels
    return ue.Trajectory(t=np.linspace(0.0, 10.0, frames), x=x, xi=xi,
                         energy=np.linspace(1.0, 2.0, frames), model=model, method="rk4", dt=0.1)


def vmf_points(n, centre, kappa, seed=0):
    """n points of the von Mises-Fisher distribution on S^2 (Wood's method for S^2)."""
    rng = np.random.default_rng(seed)
    u = rng.random(n)
    w = 1.0 + np.log(u + (1.0 - u) * np.exp(-2.0 * kappa)) / kappa      # cos of the angle
    phi = 2.0 * np.pi * rng.random(n)
    r = np.sqrt(np.clip(1.0 - w ** 2, 0.0, None))
    local = np.stack([r * np.cos(phi), r * np.sin(phi), w], axis=1)
    c = np.asarray(centre, float) / np.linalg.norm(centre)
    a = np.array([1.0, 0.0, 0.0]) if abs(c[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    e1 = np.cross(c, a)
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(c, e1)
    x = local @ np.stack([e1, e2, c])
    return x / np.linalg.norm(x, axis=1, keepdims=True)


# ------------------------------------------------------------------------------------ meshes
@pytest.mark.parametrize("level", [0, 2, 4])
def test_icosphere_counts_areas_and_orientation(level):
    mesh = D.sphere_mesh(level)
    V, F = len(mesh.vertices), len(mesh.faces)
    assert (V, F) == (10 * 4 ** level + 2, 20 * 4 ** level)
    edges = {tuple(sorted(e)) for f in mesh.faces for e in ((f[0], f[1]), (f[1], f[2]),
                                                            (f[2], f[0]))}
    assert V - len(edges) + F == 2                                   # a sphere's Euler number
    assert np.allclose(np.linalg.norm(mesh.vertices, axis=1), 1.0, atol=1e-14)
    assert abs(mesh.weights.sum() - 4 * np.pi) < 1e-12
    a, b, c = (mesh.vertices[mesh.faces[:, k]] for k in range(3))
    assert np.all(np.einsum("ij,ij->i", np.cross(b - a, c - a), a + b + c) > 0)   # outward
    assert 1.1 < mesh.spacing * 2 ** level < 1.22           # as the docstring says


def test_meshes_refuse_bad_sizes():
    for bad, kind in [(-1, ValueError), (8, ValueError), (2.5, TypeError), (True, TypeError)]:
        with pytest.raises(kind, match="level"):
            D.sphere_mesh(bad)
    with pytest.raises(ValueError, match="m must be >= 3"):
        D.circle_mesh(2)


# ------------------------------------------------------------------------- sphere densities
def test_uniform_points_give_the_uniform_density_within_sampling_error():
    n, h = 20_000, 0.3
    mesh = D.sphere_mesh(3)
    f = D.sphere_density(ue.sphere.uniform(n, 3, seed=1), mesh, h)
    # the estimate is unbiased for a constant density; its standard deviation at a vertex is
    # about sqrt(kappa / n) / (4 pi) for kappa = 1 / h^2
    sigma = np.sqrt(1.0 / h ** 2 / n)
    rel = 4 * np.pi * f - 1.0
    assert np.max(np.abs(rel)) < 5 * sigma, (np.max(np.abs(rel)), sigma)
    assert abs(np.mean(rel)) < sigma
    assert abs(mesh.integrate(f) - 1.0) < 1e-3


@pytest.mark.parametrize("h", [0.08, 0.2, 1.0, 3.0])
def test_sphere_density_integrates_to_one(h):
    mesh = D.sphere_mesh(5)
    x = vmf_points(3000, [1.0, 2.0, 2.0], kappa=30.0, seed=2)
    assert abs(mesh.integrate(D.sphere_density(x, mesh, h)) - 1.0) < 2e-3


def test_concentrated_cloud_peaks_at_its_centre():
    mesh = D.sphere_mesh(4)
    centre = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    x = vmf_points(5000, centre, kappa=200.0, seed=3)
    f = D.sphere_density(x, mesh, 0.1)
    peak = mesh.vertices[np.argmax(f)]
    assert np.degrees(np.arccos(min(1.0, peak @ centre))) < np.degrees(mesh.spacing)
    assert f.max() > 100 / (4 * np.pi)                 # far above the uniform density
    assert f[np.argmin(mesh.vertices @ centre)] < 1e-6  # and nothing on the far side


def test_sphere_density_is_the_von_mises_fisher_formula():
    rng = np.random.default_rng(4)
    x = ue.sphere.uniform(50, 3, seed=4)
    nodes = D.sphere_mesh(1)
    w = rng.random(50)
    for h in (0.4, 1.5):
        k = 1 / h ** 2
        kernel = k / (4 * np.pi * np.sinh(k)) * np.exp(k * nodes.vertices @ x.T)   # (V, n)
        assert np.allclose(D.sphere_density(x, nodes, h), kernel.mean(axis=1), rtol=1e-12)
        assert np.allclose(D.sphere_density(x, nodes, h, weights=w), kernel @ w / w.sum(),
                           rtol=1e-12)


def test_default_bandwidth_follows_n_and_the_mesh():
    mesh = D.sphere_mesh(4)
    assert D.default_bandwidth(100_000, D.sphere_mesh(5)) == pytest.approx(100_000 ** (-1 / 6))
    assert D.default_bandwidth(100_000, mesh) == pytest.approx(2 * mesh.spacing)
    assert D.default_bandwidth(1000, D.circle_mesh(64)) == pytest.approx(1000 ** (-1 / 5))
    x = ue.sphere.uniform(64, 3, seed=0)
    assert np.array_equal(D.sphere_density(x, mesh),
                          D.sphere_density(x, mesh, D.default_bandwidth(64, mesh)))


# ------------------------------------------------------------------------- circle densities
def test_circle_density_uniform_normalized_and_formula():
    mesh = D.circle_mesh(512)
    f = D.circle_density(ue.sphere.uniform(20_000, 2, seed=5), mesh, 0.3)
    assert np.max(np.abs(2 * np.pi * f - 1.0)) < 0.1
    theta = np.array([0.2, 2.0, 2.1])
    x = np.stack([np.cos(theta), np.sin(theta)], axis=1)
    for h in (0.1, 0.5, 2.0):
        g = D.circle_density(x, mesh, h)
        assert abs(mesh.integrate(g) - 1.0) < 1e-9
        k = 1 / h ** 2
        direct = np.exp(k * mesh.vertices @ x.T).mean(axis=1) / (2 * np.pi * np.i0(k))
        assert np.allclose(g, direct, rtol=1e-10)
    assert np.argmax(D.circle_density(x[:1], mesh, 0.1)) == round(0.2 / (2 * np.pi) * 512)


@pytest.mark.parametrize("call,kind,match", [
    (lambda m, x: D.sphere_density(x, m, 0.0), ValueError, "bandwidth"),
    (lambda m, x: D.sphere_density(x, m, np.nan), ValueError, "bandwidth"),
    (lambda m, x: D.sphere_density(x, m, 4.0), ValueError, "bandwidth must be at most pi"),
    (lambda m, x: D.sphere_density(2 * x, m), ValueError, "x must hold unit vectors"),
    (lambda m, x: D.sphere_density(x[:, :2] / np.linalg.norm(x[:, :2], axis=1, keepdims=True),
                                   m), ValueError, r"x must hold points of the sphere"),
    (lambda m, x: D.sphere_density(x, "mesh"),  # type: ignore[arg-type]  # the bad input
     TypeError, "mesh must be a SphereMesh"),
    (lambda m, x: D.sphere_density(x, D.circle_mesh(8)), ValueError, "mesh must be a mesh of "
                                                                     "the sphere"),
    (lambda m, x: D.circle_density(x, m), ValueError, "mesh must be a mesh of the circle"),
    (lambda m, x: D.sphere_density(x, m, weights=-np.ones(len(x))), ValueError, "weights"),
    (lambda m, x: D.sphere_density(x, m, weights=np.ones(3)), ValueError, "weights"),
])
def test_densities_refuse_bad_input(call, kind, match):
    with pytest.raises(kind, match=match):
        call(D.sphere_mesh(1), ue.sphere.uniform(10, 3, seed=0))


# --------------------------------------------------------------------------- density view
def test_density_view_plays_the_library_densities_one_mesh_at_a_time():
    traj = cloud(3000, frames=9)
    view = W.DensityView(traj, mode="density", level=3)
    idx = view.frame_indices
    assert view.mode == "density" and list(idx) == list(range(9))
    mesh = D.sphere_mesh(3)
    for j, i in enumerate(idx):
        assert np.allclose(view.densities[j], D.sphere_density(traj.x[i], mesh, view.bandwidth))
    # the colour map runs from the lowest to the highest density of the run
    import matplotlib

    top = np.round(255 * np.array(matplotlib.colormaps["viridis"](1.0)[:3])).astype(np.uint8)
    last = view.frame_colors[-1]
    assert np.array_equal(last[np.argmax(view.densities[-1])], top)
    assert len({tuple(c) for c in view.frame_colors[0]}) < len({tuple(c) for c in last})
    # one shared mesh; one colour set per frame
    pos = {id(m.geometry.attributes["position"]) for m in view.meshes}
    assert len(pos) == 1 and len({id(m.geometry.attributes["color"]) for m in view.meshes}) == 9
    assert not view.sphere.visible
    # the tracks: each keyframe time shows its own mesh, in between the previous one
    times = view.keyframe_times
    assert np.allclose(times, traj.t[idx] - traj.t[0], atol=1e-6)
    for j, t in enumerate(times):
        assert view.shown_mesh(float(t)) == j
        if j + 1 < len(times):
            assert view.shown_mesh(float(t + 0.6 * (times[j + 1] - t))) == j
    assert [tr.name for tr in view.tracks[:-2]] == [f"d{j}.position" for j in range(9)]
    assert [tr.name for tr in view.tracks[-2:]] == ["clock.position", "tclock.scale"]
    assert {tr.interpolation for tr in view.tracks[:-2]} == {"InterpolateDiscrete"}
    assert view.meshes[0].position == (0.0, 0.0, 0.0)
    assert all(m.position == HIDDEN_AT for m in view.meshes[1:])
    assert view.action.clip.tracks == tuple(view.tracks)
    assert np.isclose(view.action.timeScale, 10.0 / view.duration)
    assert "buttons: play, pause, stop, repeat" in view.time_info.value


@pytest.mark.parametrize("level,max_bytes", [(3, 300_000), (4, 900_000), (5, 900_000)])
def test_density_view_fits_its_budget(level, max_bytes):
    traj = cloud(500, frames=120)
    view = W.DensityView(traj, mode="density", level=level, max_bytes=max_bytes)
    size = W.embedded_state_bytes(view)
    k = len(view.frame_indices)
    assert size < max_bytes, size
    # the budget is used, not wasted: one more frame would not have fitted by much
    per_frame = 4 * len(view.mesh.vertices) + 3_500
    assert size > max_bytes - 3 * per_frame - 40_000, (size, k)
    assert k == W.density_frames_for_budget(len(view.mesh.vertices), len(view.mesh.faces), 120,
                                            max_bytes)


def test_a_live_kernel_draws_a_coarser_mesh_where_the_finer_one_does_not_fit():
    # two frames on the level-5 icosphere need 90,000 + 327,712 + 2 * 44,468 = 506,648 bytes
    traj = cloud(500, frames=40)
    view = W.DensityView(traj, mode="density", level=5, max_bytes=300_000, live=True)
    assert view.level == 4 and len(view.mesh.vertices) == 2562
    assert W.embedded_state_bytes(view) < 300_000
    assert view.budget_note == ("max_bytes=300000 holds the density on a mesh of level 4, not "
                                "5: the view draws that (raise max_bytes for the finer mesh)")
    assert view.budget_note in view.caption.value
    with pytest.raises(ValueError, match=r"max_bytes=300000 is too small for a mesh of 10242 "
                                         r"vertices"):
        W.DensityView(traj, mode="density", level=5, max_bytes=300_000, live=False)
    fits = W.DensityView(traj, mode="density", level=4, max_bytes=300_000, live=True)
    assert fits.level == 4 and fits.budget_note == "" and "level" not in fits.caption.value


def test_density_on_the_circle_is_a_ring():
    traj = cloud(2000, d=2, frames=4)
    view = W.DensityView(traj, mode="density", level=2)
    m = len(view.mesh.vertices)
    assert m == 256 and view.frame_colors.shape == (4, 2 * m, 3)
    assert abs(view.mesh.integrate(view.densities[-1]) - 1.0) < 1e-9
    pts = np.asarray(view.meshes[0].geometry.attributes["position"].array)
    assert np.allclose(pts[:, 2], 0.0) and np.allclose(np.linalg.norm(pts[0::2], axis=1), 0.94)


def test_auto_mode_picks_points_live_and_density_for_a_static_page(monkeypatch):
    traj = cloud(400, frames=3)
    assert W.DensityView(traj).mode == "points"
    assert W.DensityView(traj, live=False, level=2).mode == "density"
    monkeypatch.setenv("USAAV_EDU_STATIC_PAGE", "1")
    assert W.DensityView(traj, level=2).mode == "density"
    assert W.DensityView(cloud(400, d=4, frames=3)).mode == "points"     # no density in d = 4


# ----------------------------------------------------------------------------- point cloud
def test_point_cloud_holds_the_frame_and_the_label_colours():
    traj = cloud(600, frames=6)
    view = W.DensityView(traj, mode="points", frame=2)
    assert np.allclose(view.point_positions, traj.x[2], atol=1e-6)
    assert view.point_positions.dtype == np.float64 and len(view.tokens.children) == 1
    assert view.token_colors == W.token_colors(traj.xi, "none")
    view.slider.value = 5                                  # what the play button does
    assert np.allclose(view.point_positions, traj.x[5], atol=1e-6)
    assert "t = 10" in view.caption.value
    with pytest.raises(ValueError, match="frame must lie in"):
        view.show_frame(6)
    one = W.DensityView(traj, mode="points", color="#ff0000", live=False)
    assert one.slider is None and "needs a running kernel" in one.caption.value
    assert set(one.token_colors) == {"#ff0000"}
    assert set(W.DensityView(traj, mode="points", color="navy").token_colors) == {"#000080"}


@pytest.mark.parametrize("name,labels", [("rope", "position"), ("prefix_gauge", "prompt")])
def test_point_colours_are_the_token_colours(name, labels):
    model, _, xi = ue.experiments.setup(name, n=300, seed=0)
    assert np.array_equal(label_rgb(xi, labels),
                          [[int(h[i:i + 2], 16) for i in (1, 3, 5)]
                           for h in W.token_colors(xi, labels)])


def test_a_hundred_thousand_tokens():
    traj = cloud(100_000, frames=3)
    points = W.DensityView(traj, mode="points")
    assert points.point_positions.shape == (100_000, 3)
    assert np.allclose(points.point_positions, traj.x[0], atol=1e-6)
    view = W.DensityView(traj, mode="density", level=3)
    assert view.densities.shape == (3, 642)
    assert W.embedded_state_bytes(view) < 300_000 < W.embedded_state_bytes(points)
    capped = W.DensityView(traj, mode="points", max_points=1000, live=False)
    assert len(capped.token_positions) == 1000 and "showing 1000 of 100000" in \
        capped.caption.value


@pytest.mark.parametrize("kw,kind,match", [
    (dict(mode="cloud"), ValueError, "mode must be one of"),
    (dict(mode="density", level=8), ValueError, "level must be at most"),
    (dict(mode="density", level=1.5), TypeError, "level"),
    (dict(colormap="no-such-map"), ValueError, "colormap must be the name"),
    (dict(scale="cubic"), ValueError, "scale must be one of"),
    (dict(point_size=0.0), ValueError, "point_size"),
    (dict(bandwidth=-0.1), ValueError, "bandwidth"),
    (dict(mode="density", max_bytes=50_000), ValueError, "max_bytes=50000 is too small"),
    (dict(loop="LoopForever"), ValueError, "loop must be one of"),
    (dict(frame=7), ValueError, "frame must lie in"),
    (dict(color="notacolour"), ValueError, "color must be an HTML colour"),
    (dict(color="rgb(1, 2, 3)"), ValueError, "color must be '#rrggbb'"),
    (dict(live="yes"), TypeError, "live must be True, False or None"),
])
def test_density_view_refuses_bad_arguments(kw, kind, match):
    with pytest.raises(kind, match=match):
        W.DensityView(cloud(50, frames=4), **kw)


def test_density_view_refuses_what_it_cannot_draw():
    with pytest.raises(ValueError, match="mode='density' draws d = 2 or 3"):
        W.DensityView(cloud(50, d=4, frames=3), mode="density")
    with pytest.raises(TypeError, match="trajectory must be a usaav_edu Trajectory"):
        W.DensityView(np.zeros((3, 5, 3)))
    view = W.DensityView(cloud(50, frames=3), mode="density", level=1)
    with pytest.raises(NotImplementedError, match="make a new DensityView"):
        view.show(cloud(50, frames=3))
    with pytest.raises(ValueError, match="mode='points'"):
        view.show_frame(0)
