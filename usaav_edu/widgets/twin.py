"""``TwinView``: the contents ``x`` and the gauge coordinates ``y`` of one run, played together.

A gauge model moves the tokens ``x_i`` on the sphere while their gauge coordinates
``y_i = G(xi_i) x_i`` (``traj.y``) follow plain USA.  The twin view shows both, side by side, on
one time bar, client-side (it plays in the static book with no kernel):

* one pythreejs ``Scene`` holds two unit spheres far apart: the contents in the group ``xview``
  at the origin, the gauge coordinates in the group ``yview``, ``SEPARATION`` away, farther than
  either camera sees;
* two ``Renderer`` canvases draw that scene, each through its own camera aimed at its sphere, so
  each canvas shows one sphere and can be turned on its own.  The x camera sits at ``c`` and
  looks at the origin.  A camera's orbit controls aim it at the origin when the page opens, so
  the y camera sits on the same line, at ``-(SEPARATION + |c|) c/|c|``, looking at the origin
  through the centre ``-SEPARATION c/|c|`` of its sphere; the ``yview`` group is the point
  reflection ``p -> -p`` about that centre and the y camera's up is ``-e3``, so in the group's
  own coordinates the y camera sees its sphere exactly as the x camera sees the contents;
* ONE ``AnimationClip`` holds the keyframe tracks of both: ``x{i}.position`` for the contents,
  ``y{i}.position`` for the gauge coordinates, and a bead on each canvas's time bar; ONE
  ``AnimationAction`` (one play / pause / stop button row) runs it.  Both views read the same
  clip at the same time, so they cannot drift apart.

Frames are subsampled so that the embedded state stays under ``max_bytes``: the clip carries
two tokens per token of the run (see ``_twin_bytes``).  Where even two frames of every token do
not fit, a live kernel draws fewer tokens and says so in one line under the caption; a static
page (``USAAV_EDU_STATIC_PAGE=1``) refuses, so that a published page never shows less than its
author chose without a word (see ``player._tokens_within``).
"""
from __future__ import annotations

import html

import ipywidgets as widgets
import numpy as np
import pythreejs as three

from . import _checks as c
from .colors import project_3d, token_colors
from .player import (
    BUTTONS_TEXT,
    BYTES_PER_TOKEN_FRAME,
    LOOPS,
    _tokens_within,
    controls_row,
    time_bar,
    time_bar_tracks,
)
from .scene import (
    CIRCLE_COLOR,
    SPHERE_COLOR,
    VIEW_CLASS,
    _legend_html,
    _unit_circle,
    polyline,
    responsive,
    subsample,
    view_row,
)

#: distance between the two spheres' centres (the cameras see no farther than ``FAR``)
SEPARATION = 40.0
FAR = 12.0
#: embedded bytes of the twin view besides its tokens and keyframes (two spheres, circles,
#: cameras, controls, time bars, layout), and per token of the run (its two Meshes, two tracks,
#: a material and a legend row); keyframes cost ``BYTES_PER_TOKEN_FRAME`` per token, view and frame
BYTES_FIXED_TWIN = 160_000
BYTES_PER_TWIN_TOKEN = 5_400
TITLES = ("contents x", "gauge coordinates y")
#: CSS class of a twin view's root (the browser checks find twin views by it)
TWIN_CLASS = "usaav-twin"

_CAMERA = np.array([2.6, 1.5, 2.2])


def _twin_bytes(m: int) -> tuple[int, int]:
    """Embedded bytes ``(fixed, per_frame)`` of a twin view of ``m`` drawn tokens: the view
    once (``BYTES_FIXED_TWIN + BYTES_PER_TWIN_TOKEN m``) and each keyframe of its 2 m token
    tracks and 2 beads (``BYTES_PER_TOKEN_FRAME (2 m + 2)``)."""
    return BYTES_FIXED_TWIN + BYTES_PER_TWIN_TOKEN * m, BYTES_PER_TOKEN_FRAME * (2 * m + 2)


def _gauge_frames(trajectory) -> np.ndarray:
    """``trajectory.y``, checked: (F, n, d) finite unit vectors like ``trajectory.x``."""
    try:
        y = np.asarray(trajectory.y, dtype=float)
    except Exception as err:  # the model cannot map to gauge coordinates
        raise ValueError(f"trajectory.y (the gauge coordinates) cannot be computed: {err}") from err
    if y.shape != np.shape(trajectory.x):
        raise ValueError(f"trajectory.y must have the shape of trajectory.x {np.shape(trajectory.x)}, "
                         f"got {y.shape}")
    if not np.all(np.isfinite(y)):
        raise ValueError("trajectory.y must be finite (no NaN or inf)")
    deviation = float(np.max(np.abs(np.linalg.norm(y, axis=2) - 1.0)))
    if deviation > c.v.UNIT_TOL:
        raise ValueError(f"trajectory.y must hold unit vectors (|y_i| = 1 within {c.v.UNIT_TOL:g}); "
                         f"the largest deviation is {deviation:.3g}")
    return y


def _titles(titles) -> tuple[str, str]:
    """``titles`` checked: exactly two strings."""
    if isinstance(titles, str) or not hasattr(titles, "__len__") or len(titles) != 2:
        raise TypeError(f"titles must be two strings, got {c.shown(titles)}")
    first, second = (c.text("titles", s) for s in titles)
    return first, second


def _sphere_group(prefix: str, side: int, centre: np.ndarray, meshes: list, geometry,
                  material) -> three.Group:
    """The group ``{prefix}view`` of one side: its sphere, great circles and token meshes,
    centred at ``centre`` and, for the y side (``side`` 1), reflected through it."""
    sign = 1.0 - 2.0 * side
    circles = [polyline(_unit_circle(a), CIRCLE_COLOR) for a in (2, 0, 1)]
    return three.Group(children=[three.Mesh(geometry, material),
                                 three.Group(children=circles),
                                 three.Group(children=meshes, name=f"{prefix}tokens")],
                       name=f"{prefix}view", position=tuple(float(q) for q in centre),
                       scale=(sign, sign, sign))


def _camera(prefix: str, side: int, centre: np.ndarray, hud: list,
            aspect: float) -> three.PerspectiveCamera:
    """The camera of one side, at ``centre + sign _CAMERA`` with up ``sign e3`` (see the module
    docstring for the placement of the y side), carrying its light and time bar."""
    sign = 1.0 - 2.0 * side
    return three.PerspectiveCamera(
        position=tuple(float(q) for q in centre + sign * _CAMERA), up=[0, 0, sign], fov=40,
        aspect=aspect, near=0.05, far=FAR,
        children=[three.DirectionalLight(color="white", intensity=0.55, position=[1, 2, 3]),
                  three.Group(children=hud, name=f"hud{prefix}")])


class TwinView(widgets.VBox):
    """Play the contents ``x`` and the gauge coordinates ``y = traj.y`` of one run side by side.

    Parameters
    ----------
    trajectory : Trajectory
        The run.  Its ``y`` (``model.to_gauge(x, xi)``) must be unit vectors like ``x``.
    duration : float
        Seconds of wall time for the whole run (finite, > 0).
    max_bytes : int
        Budget for the embedded state of the whole twin view; frames are subsampled to fit,
        and in a live kernel tokens too when two frames of all of them do not (``budget_note``
        then says so).
    max_frames : int, optional
        Upper bound (>= 2) on the number of keyframes.
    loop : {"LoopRepeat", "LoopOnce", "LoopPingPong"}
    coords : three ints
        For d > 3, the coordinates kept by the projection (see ``project_3d``), in both views.
    width, height : int
        Size of each canvas, in pixels.
    max_tokens : int
        At most this many tokens are drawn (evenly spaced in index), in both views.
    titles : two strings
        Titles of the two views (default "contents x" and "gauge coordinates y").
    """

    def __init__(self, trajectory, *, duration: float = 8.0, max_bytes: int = 1_000_000,
                 max_frames: int | None = None, loop: str = "LoopRepeat", coords=(0, 1, 2),
                 width: int = 330, height: int = 310, max_tokens: int = 256,
                 titles=TITLES, **kwargs):
        c.keywords(type(self), kwargs)
        c.trajectory(trajectory)
        y = _gauge_frames(trajectory)
        self.duration = c.real("duration", duration, minimum=0.0, strict=True)
        self.max_bytes = c.integer("max_bytes", max_bytes, minimum=1)
        self.max_frames = None if max_frames is None else c.integer("max_frames", max_frames, minimum=2)
        if loop not in LOOPS:
            raise ValueError(f"loop must be one of {LOOPS}, got {c.shown(loop)}")
        self.coords = c.coords(coords)
        width = c.integer("width", width, minimum=1)
        height = c.integer("height", height, minimum=1)
        max_tokens = c.integer("max_tokens", max_tokens, minimum=1)
        titles = _titles(titles)
        x = np.asarray(trajectory.x, dtype=float)
        project_3d(x[0], self.coords)                      # checks coords against d
        self._plan(x.shape[0], x.shape[1], max_tokens)
        self.trajectory = trajectory
        self.titles = titles
        super().__init__(**kwargs)
        self.add_class(TWIN_CLASS)
        t = np.asarray(trajectory.t, dtype=float)
        times = (t[self.frame_indices] - t[0]).astype(np.float32)
        span = float(times[-1]) if times[-1] > 0 else 1.0
        self._build_scene(self._keyframes(x), self._keyframes(y), times, span, width / height)
        self.renderers = [responsive(three.Renderer(
            camera=camera, scene=self.scene, controls=[controls], width=width, height=height,
            antialias=True)) for camera, controls in zip(self.cameras, self.controls, strict=True)]
        self.clip = three.AnimationClip(tracks=self.tracks, duration=span)
        self.mixer = three.AnimationMixer(self.scene)
        self.action = three.AnimationAction(self.mixer, self.clip, self.scene, loop=loop,
                                            timeScale=span / self.duration, clampWhenFinished=True)
        self._build_page(t, x.shape)

    def _plan(self, n_frames: int, n: int, max_tokens: int) -> None:
        """Choose the drawn tokens and the keyframes within ``max_bytes`` (``budget_note``
        says what was left out)."""
        m = len(subsample(n, max_tokens))
        m, k, self.budget_note = _tokens_within(_twin_bytes, m, n_frames, self.max_bytes,
                                                self.max_frames, f"a twin view of {m} tokens")
        self.token_index = subsample(n, m)
        self.frame_indices = subsample(n_frames, k)

    def _keyframes(self, frames: np.ndarray) -> np.ndarray:
        """(k, m, 3) float32 projected positions of the drawn tokens at the keyframes."""
        drawn = frames[self.frame_indices][:, self.token_index]
        return project_3d(drawn, self.coords).astype(np.float32)

    def _build_scene(self, px: np.ndarray, py: np.ndarray, times: np.ndarray, span: float,
                     aspect: float) -> None:
        """The scene of both spheres, their cameras and controls, and the clip's tracks."""
        labels = getattr(self.trajectory.model, "labels", "none")
        colors = [token_colors(self.trajectory.xi, labels)[i] for i in self.token_index]
        radius = float(np.clip(0.4 / np.sqrt(len(colors)), 0.02, 0.06))
        look = {
            "token": three.SphereGeometry(radius=radius, widthSegments=10, heightSegments=8),
            "sphere": three.SphereGeometry(radius=1.0, widthSegments=48, heightSegments=32),
            "glass": three.MeshPhongMaterial(color=SPHERE_COLOR, transparent=True, opacity=0.22,
                                             depthWrite=False, shininess=20),
        }
        materials = {col: three.MeshLambertMaterial(color=col) for col in dict.fromkeys(colors)}
        self.cameras, self.groups, self.controls, self.tracks = [], [], [], []
        scene_children = [three.AmbientLight(color="white", intensity=0.6)]
        shared = None
        for side, (prefix, p) in enumerate((("x", px), ("y", py))):
            centre = -SEPARATION * side * _CAMERA / np.linalg.norm(_CAMERA)
            meshes = [three.Mesh(look["token"], materials[col], name=f"{prefix}{j}",
                                 position=tuple(float(q) for q in p[0, j]))
                      for j, col in enumerate(colors)]
            group = _sphere_group(prefix, side, centre, meshes, look["sphere"], look["glass"])
            self.tracks += [three.VectorKeyframeTrack(name=f"{prefix}{j}.position", times=times,
                                                      values=np.ascontiguousarray(p[:, j, :]).ravel())
                            for j in range(len(colors))]
            # both bars read the same clip: the second shares the first's label shader
            hud, clock = time_bar(span, f"clock{prefix}", label_material=shared)
            shared = next(o for o in hud if o.name == f"tclock{prefix}").material
            self.tracks += time_bar_tracks(times, span, f"clock{prefix}")
            camera = _camera(prefix, side, centre, hud, aspect)
            self.controls.append(three.OrbitControls(controlling=camera,
                                                     target=tuple(float(q) for q in centre)))
            scene_children += [camera, group]
            self.cameras.append(camera)
            self.groups.append(group)
        self.scene = three.Scene(children=scene_children, background="white")

    def _build_page(self, t: np.ndarray, shape: tuple) -> None:
        """The canvases with their titles, the legend, the controls and the caption."""
        n_frames, n, d = shape
        m = len(self.token_index)
        self.time_info = widgets.HTML(
            f"<span style='font-size:12px'>{BUTTONS_TEXT} Press &#9654; to play both views, t = {t[0]:g} to "
            f"{t[-1]:g} ({len(self.frame_indices)} of {n_frames} frames, {self.duration:g} s); the red beads and "
            f"the labels above them mark the time</span>")
        heads = [widgets.HTML(f"<div style='font-weight:600;text-align:center'>{html.escape(s)}</div>")
                 for s in self.titles]
        panes = [widgets.VBox([head, r], layout=widgets.Layout(min_width="0", max_width="100%"))
                 for head, r in zip(heads, self.renderers, strict=True)]
        labels = getattr(self.trajectory.model, "labels", "none")
        self.legend = widgets.HTML(_legend_html(self.trajectory.xi, labels, None),
                                   layout=widgets.Layout(min_width="140px", margin="0 0 0 8px"))
        model = self.trajectory.model
        proj = "" if d <= 3 else f"; d = {d} shown by projection onto coordinates " \
            f"{tuple(q + 1 for q in self.coords)}"
        if m < n:
            proj += f"; showing {m} of {n} tokens"
        self.caption = widgets.HTML(
            f"<span style='font-size:12px'>one run of model "
            f"{html.escape(str(getattr(model, 'name', '?')))}, beta = "
            f"{getattr(model, 'beta', float('nan')):g}, n = {n}, d = {d}: left the contents x_i, "
            f"right the gauge coordinates y_i = G(xi_i) x_i{proj}</span>")
        #: one line, shown under the caption, when the budget made the view drop tokens
        self.budget_label = None if not self.budget_note else widgets.HTML(
            f"<span style='font-size:12px;color:#8a4b00'>{html.escape(self.budget_note)}</span>")
        self.add_class(VIEW_CLASS)
        self.children = [view_row([*panes, self.legend]),
                         controls_row(self.action, self.time_info),
                         self.caption] + ([self.budget_label] if self.budget_label else [])

    def _track_values(self, prefix: str) -> np.ndarray:
        vals = [np.asarray(tr.values, dtype=float).reshape(-1, 3) for tr in self.tracks
                if tr.name.startswith(prefix) and tr.name[len(prefix):].split(".")[0].isdigit()]
        return np.stack(vals, axis=1)

    @property
    def keyframes_x(self) -> np.ndarray:
        """(k, m, 3) positions of the contents held by the clip, frame by frame."""
        return self._track_values("x")

    @property
    def keyframes_y(self) -> np.ndarray:
        """(k, m, 3) positions of the gauge coordinates held by the clip, frame by frame."""
        return self._track_values("y")

    @property
    def keyframe_times(self) -> np.ndarray:
        """Times of the keyframes (model time from 0), shared by every track of the clip."""
        return np.asarray(self.tracks[0].times, dtype=float)
