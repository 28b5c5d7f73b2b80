"""``SphereView``: tokens on the unit sphere as a pythreejs scene.

The scene graph (names matter: the player's keyframe tracks address ``p{i}.position``)::

    Scene
    ├── camera (PerspectiveCamera) ── light, and the player's time bar (a heads-up display)
    ├── ambient light
    ├── sphere      translucent unit sphere
    ├── circles     equator and two meridians
    ├── tokens      Group of small sphere Meshes named p0, p1, ... (one per token)
    ├── trails      LineSegments, each token's path (optional)
    └── overlays    Group of curves and target points (latitude circles, orbits, targets)

Views never compute dynamics: they draw a frame of a ``Trajectory`` (or raw points).
"""
from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets
import numpy as np
import pythreejs as three

from . import _checks as c
from .colors import LABEL_KINDS, legend_entries, project_3d, token_colors

SPHERE_COLOR = "#9ec5e8"
CIRCLE_COLOR = "#8a8a8a"
OVERLAY_COLOR = "#111111"
#: page-state budget for trails, in bytes (fewer trail frames for many tokens)
TRAIL_BYTES = 350_000
#: CSS classes of a view's root, of its row of canvases (and legend), and of each canvas's
#: widget.  The book's stylesheet (_static/usaav-views.css) scales every canvas of class
#: ``VIEW_CANVAS_CLASS`` down to its column keeping its aspect ratio, and wraps a row whose
#: canvases and legend do not fit side by side (the legend, then a second canvas, go below).
VIEW_CLASS = "usaav-view"
VIEW_ROW_CLASS = "usaav-view-row"
VIEW_CANVAS_CLASS = "usaav-canvas"


def view_row(children) -> widgets.HBox:
    """An ``HBox`` of canvases and a legend that wraps onto further lines where the column is
    narrower than the row (``flex-flow: row wrap``), of class ``VIEW_ROW_CLASS``.

    Parameters
    ----------
    children : list of widgets
        The canvases (or boxes holding them) and the legend, left to right.

    Returns
    -------
    ipywidgets.HBox
    """
    row = widgets.HBox(list(children), layout=widgets.Layout(flex_flow="row wrap",
                                                             max_width="100%"))
    row.add_class(VIEW_ROW_CLASS)
    return row


def responsive(renderer):
    """``renderer`` marked as a canvas that the book's stylesheet scales to its column (CSS
    class ``VIEW_CANVAS_CLASS``; its drawing size stays ``width`` x ``height``).

    Parameters
    ----------
    renderer : pythreejs.Renderer
        A canvas.

    Returns
    -------
    pythreejs.Renderer
        The same renderer.
    """
    renderer.add_class(VIEW_CANVAS_CLASS)
    return renderer


def _unit_circle(normal_axis: int, height: float = 0.0, m: int = 128) -> np.ndarray:
    """(m+1, 3) closed circle on the sphere, perpendicular to ``normal_axis`` at ``height``."""
    s = np.linspace(0.0, 2.0 * np.pi, m + 1)
    r = np.sqrt(max(0.0, 1.0 - height ** 2))
    a, b = [k for k in range(3) if k != normal_axis]
    pts = np.zeros((m + 1, 3))
    pts[:, a] = r * np.cos(s)
    pts[:, b] = r * np.sin(s)
    pts[:, normal_axis] = height
    return pts


def polyline(points, color: str = OVERLAY_COLOR, closed: bool = False) -> three.Line:
    """A pythreejs Line through ``points`` of shape (m, 3).

    Parameters
    ----------
    points : array_like
        ``(m, 3)``.
    color : str
        CSS colour.
    closed : bool
        Join the last point to the first.

    Returns
    -------
    pythreejs.Line
    """
    color = c.color("color", color)
    pts = np.asarray(points, dtype=np.float32)
    if pts.ndim != 2 or pts.shape[1] != 3 or pts.shape[0] < 2:
        raise ValueError(f"points must have shape (m, 3) with m >= 2, got {pts.shape}")
    if not np.all(np.isfinite(pts)):
        raise ValueError("points must be finite")
    if closed:
        pts = np.concatenate([pts, pts[:1]], axis=0)
    geometry = three.BufferGeometry(
        attributes={"position": three.BufferAttribute(array=pts, normalized=False)})
    return three.Line(geometry=geometry, material=three.LineBasicMaterial(color=color))


def _legend_html(xi, labels: str, title: str | None) -> str:
    rows = []
    if title:
        rows.append(f"<div style='font-weight:600;margin-bottom:4px'>{html.escape(title)}</div>")
    for entry in legend_entries(xi, labels):
        rows.append(
            "<div style='display:flex;align-items:center;gap:6px;line-height:1.4'>"
            f"<span style='display:inline-block;width:12px;height:12px;border-radius:6px;"
            f"background:{entry.color}'></span>{html.escape(entry.text)}</div>")
    return "<div style='font-size:12px'>" + "".join(rows) + "</div>"


class SphereView(widgets.VBox):
    """Tokens on the unit sphere, coloured by their auxiliary variable, with orbit controls.

    Parameters
    ----------
    trajectory : Trajectory, optional
        Draw frame ``frame`` of it (default the last).  Its ``model.labels`` ("none",
        "position" or "prompt") picks the colouring; ``xi`` gives the labels.  Its frames must
        be finite unit vectors.
    x : array (n, d), optional
        Raw points of the unit sphere to draw instead of a trajectory (with ``xi`` and
        ``labels``; give either ``trajectory`` or ``x``).
    trails : bool
        Draw each token's path over the trajectory, subsampled to ``trail_frames`` (>= 2)
        frames, or fewer so that the trails stay within ``TRAIL_BYTES`` of page state.
    coords : three ints
        For d > 3, the coordinates kept by the orthogonal projection (see ``project_3d``).
    width, height : int
        Canvas size in pixels (>= 1).
    token_radius : float, optional
        Radius of a token's sphere, in (0, 1]; by default ``0.4 / sqrt(n)`` kept within
        [0.02, 0.06].
    title : str, optional
        Shown above the legend.
    max_tokens : int
        At most this many tokens are drawn (evenly spaced in index, first and last included);
        the caption says so when tokens are left out.  Each drawn token costs about 1.2 kB of
        page state.
    """

    def __init__(self, trajectory=None, *, x=None, xi=None, labels: str | None = None,
                 frame: int = -1, trails: bool = False, trail_frames: int = 40,
                 coords=(0, 1, 2), width: int = 460, height: int = 400,
                 token_radius: float | None = None, title: str | None = None,
                 max_tokens: int = 256, **kwargs):
        c.keywords(type(self), kwargs)
        if trajectory is not None and x is not None:
            raise ValueError("give either trajectory or x (raw points), not both")
        if trajectory is not None and (xi is not None or labels is not None):
            raise ValueError("xi and labels go with raw points x; a trajectory brings its own")
        if labels is not None and labels not in LABEL_KINDS:
            raise ValueError(f"labels must be one of {LABEL_KINDS}, got {c.shown(labels)}")
        # every argument is checked before any widget is made
        if trajectory is not None:
            c.trajectory(trajectory)
            c.frame(frame, np.shape(trajectory.x)[0])
        elif x is not None:
            x = c.points("x", x)
        width = c.integer("width", width, minimum=1)
        height = c.integer("height", height, minimum=1)
        if token_radius is not None:
            token_radius = c.real("token_radius", token_radius, minimum=0.0, strict=True, maximum=1.0)
        max_tokens = c.integer("max_tokens", max_tokens, minimum=1)
        coords = c.coords(coords)
        trail_frames = c.integer("trail_frames", trail_frames, minimum=2)
        trails = c.flag("trails", trails)
        title = c.text("title", title, optional=True)
        super().__init__(**kwargs)
        self.max_tokens = max_tokens
        self.token_index = np.array([], dtype=int)
        self.coords = coords
        self.trail_frames = trail_frames
        self.show_trails = trails
        self.title = title
        self._token_radius = token_radius
        self._d = None
        self._materials: dict[str, three.MeshLambertMaterial] = {}
        self._token_geometry = None
        self._colors: list[str] = []
        self.trajectory: Any = None       # the run on display; None before the first show
        #: index (from 0) of the frame of ``trajectory`` on display
        self.shown_frame = 0
        self.trail_bytes = 0

        self._build_scene(width, height)
        self.legend = widgets.HTML(layout=widgets.Layout(min_width="150px", margin="0 0 0 8px"))
        self.caption = widgets.HTML()
        self.add_class(VIEW_CLASS)
        self.children = [view_row([self.renderer, self.legend]), self.caption]

        if trajectory is not None:
            self.show(trajectory, frame=frame)
        elif x is not None:
            xi = np.zeros(x.shape[0]) if xi is None else xi
            self.set_points(x, xi, labels or "none")

    def _build_scene(self, width: int, height: int) -> None:
        """The camera, the unit sphere with its great circles, the (empty) groups of tokens,
        trails and overlays, and the renderer of the scene."""
        self.camera = three.PerspectiveCamera(position=[2.6, 1.5, 2.2], up=[0, 0, 1], fov=40,
                                              aspect=width / height, near=0.05, far=50)
        self.camera.children = [three.DirectionalLight(color="white", intensity=0.55,
                                                       position=[1, 2, 3])]
        self.sphere = three.Mesh(
            three.SphereGeometry(radius=1.0, widthSegments=48, heightSegments=32),
            three.MeshPhongMaterial(color=SPHERE_COLOR, transparent=True, opacity=0.22,
                                    depthWrite=False, shininess=20),
            name="sphere")
        circles = [polyline(_unit_circle(2), CIRCLE_COLOR), polyline(_unit_circle(0), CIRCLE_COLOR),
                   polyline(_unit_circle(1), CIRCLE_COLOR)]
        self.circles = three.Group(children=circles, name="circles")
        self.tokens = three.Group(name="tokens")
        self.trails = three.Group(name="trails")
        self.overlays = three.Group(name="overlays")
        self.scene = three.Scene(
            children=[self.camera, three.AmbientLight(color="white", intensity=0.6), self.sphere,
                      self.circles, self.tokens, self.trails, self.overlays],
            background="white")
        self.controls = three.OrbitControls(controlling=self.camera)
        self.renderer = responsive(three.Renderer(camera=self.camera, scene=self.scene,
                                                  controls=[self.controls], width=width,
                                                  height=height, antialias=True))

    # ------------------------------------------------------------------ tokens
    def _radius(self, n: int) -> float:
        if self._token_radius is not None:
            return float(self._token_radius)
        return float(np.clip(0.4 / np.sqrt(max(n, 1)), 0.02, 0.06))

    def _material(self, color: str) -> three.MeshLambertMaterial:
        mat = self._materials.get(color)
        if mat is None:
            mat = three.MeshLambertMaterial(color=color)
            self._materials[color] = mat
        return mat

    def _ensure_tokens(self, n: int):
        meshes = list(self.tokens.children)
        radius = self._radius(n)
        if self._token_geometry is None or self._token_geometry.radius != radius:
            old = self._token_geometry
            self._token_geometry = three.SphereGeometry(radius=radius, widthSegments=10,
                                                        heightSegments=8)
            for mesh in meshes:
                mesh.geometry = self._token_geometry
            if old is not None:
                old.close()
        if len(meshes) == n:
            return meshes
        if len(meshes) > n:
            for mesh in meshes[n:]:
                mesh.close()
            meshes = meshes[:n]
        for i in range(len(meshes), n):
            meshes.append(three.Mesh(self._token_geometry, self._material("#000000"),
                                     name=f"p{i}"))
        self.tokens.children = meshes
        return meshes

    def set_points(self, x, xi, labels: str):
        """Draw tokens at ``x`` (n, d), points of the unit sphere, coloured by ``xi`` of kind
        ``labels``.

        Parameters
        ----------
        x : array_like
            ``(n, d)`` unit vectors.
        xi : array_like or None
            ``(n,)`` labels.
        labels : {"none", "position", "prompt"}
            What the labels mean.
        """
        x = c.points("x", x)
        all_colors = token_colors(xi, labels)
        if len(all_colors) != x.shape[0]:
            raise ValueError(f"xi must have shape ({x.shape[0]},), got {np.shape(xi)}")
        p = project_3d(x, self.coords)                      # checks coords against d
        self.token_index = subsample(x.shape[0], self.max_tokens)
        p = p[self.token_index]
        colors = [all_colors[i] for i in self.token_index]
        meshes = self._ensure_tokens(len(self.token_index))
        for mesh, pos, color in zip(meshes, p, colors, strict=True):
            mesh.position = tuple(float(q) for q in pos)
            mesh.material = self._material(color)
        self._colors = colors
        self._d = x.shape[1]
        self.legend.value = _legend_html(xi, labels, self.title)

    @property
    def token_positions(self) -> np.ndarray:
        """(n, 3) positions of the drawn tokens, as held in the widget state."""
        return np.array([m.position for m in self.tokens.children], dtype=float).reshape(-1, 3)

    @property
    def token_colors(self) -> list[str]:
        """Colours of the drawn tokens, as held in the widget state."""
        return [m.material.color for m in self.tokens.children]

    # -------------------------------------------------------------- trajectory
    def show(self, trajectory, frame: int = -1):
        """Draw frame ``frame`` of ``trajectory`` (and its trails when enabled).

        Parameters
        ----------
        trajectory : Trajectory
            The run.
        frame : int
            The frame drawn.
        """
        c.trajectory(trajectory)
        x = np.asarray(trajectory.x, dtype=float)
        frame = c.frame(frame, x.shape[0])
        self.trajectory = trajectory
        self.shown_frame = frame % x.shape[0]
        labels = getattr(trajectory.model, "labels", "none")
        self.set_points(x[frame], trajectory.xi, labels)
        self.caption.value = self._caption(trajectory, frame)
        self._draw_trails()

    def _caption(self, trajectory, frame) -> str:
        model = trajectory.model
        t = np.asarray(trajectory.t)
        n, d = np.asarray(trajectory.x).shape[1:]
        proj = "" if d <= 3 else f"; d = {d} shown by projection onto coordinates " \
            f"{tuple(c + 1 for c in self.coords)}"
        if len(self.token_index) < n:
            proj += f"; showing {len(self.token_index)} of {n} tokens"
        return (f"<span style='font-size:12px'>model {html.escape(str(getattr(model, 'name', '?')))}, "
                f"beta = {getattr(model, 'beta', float('nan')):g}, n = {n}, d = {d}, "
                f"t = {t[frame]:.3g}{proj}</span>")

    def _draw_trails(self):
        for child in self.trails.children:
            child.close()
        self.trails.children = []
        self.trail_bytes = 0
        traj = self.trajectory
        if not self.show_trails or traj is None:
            return
        x = np.asarray(traj.x)
        m = len(self.token_index)
        # two float32 xyz vertices per segment, positions and colours, base64: 64 bytes
        k = min(self.trail_frames, 1 + int(self._trail_budget(m) // (64 * m)))
        idx = subsample(x.shape[0], max(k, 2))
        self.trail_bytes = 64 * m * (len(idx) - 1)
        p = project_3d(x[idx][:, self.token_index], self.coords).astype(np.float32)  # (k, m, 3)
        seg = np.stack([p[:-1], p[1:]], axis=2)                        # (k-1, n, 2, 3)
        seg = seg.transpose(1, 0, 2, 3).reshape(-1, 3)
        rgb = np.array([[int(col[i:i + 2], 16) / 255 for i in (1, 3, 5)] for col in self._colors],
                       dtype=np.float32)                               # (n, 3)
        col = np.repeat(rgb, 2 * (len(idx) - 1), axis=0)
        geometry = three.BufferGeometry(attributes={
            "position": three.BufferAttribute(array=seg, normalized=False),
            "color": three.BufferAttribute(array=col, normalized=False)})
        lines = three.LineSegments(geometry=geometry, material=three.LineBasicMaterial(
            vertexColors="VertexColors", transparent=True, opacity=0.5), name="trail")
        self.trails.children = [lines]

    def _trail_budget(self, m: int) -> float:
        """Bytes of page state the trails of ``m`` tokens may use."""
        return TRAIL_BYTES

    # ---------------------------------------------------------------- overlays
    def add_curve(self, points, color: str = OVERLAY_COLOR, closed: bool = False):
        """Overlay a curve through ``points`` (m, d), m >= 2 points of the unit sphere in the
        tokens' dimension, projected like the tokens.

        ``color`` is a CSS colour, ``closed`` joins the last point to the first; returns the
        ``pythreejs.Line``.
        """
        points = c.points("points", points, minimum=2, d=self._d)
        color = c.color("color", color)
        line = polyline(project_3d(points, self.coords), color, c.flag("closed", closed))
        self.overlays.children = list(self.overlays.children) + [line]
        return line

    def add_latitude_circle(self, height: float, color: str = OVERLAY_COLOR):
        """Overlay the circle {x3 = height} of the sphere (the RoPE orbit in d = 3).

        Parameters
        ----------
        height : float
            In ``[-1, 1]``.
        color : str
            CSS colour.

        Returns
        -------
        pythreejs.Line
        """
        height = c.bounded_real("height", height, -1.0, 1.0)
        color = c.color("color", color)
        circle = _unit_circle(2, height)
        line = polyline(circle, color)
        self.overlays.children = list(self.overlays.children) + [line]
        return line

    def add_targets(self, points, color: str = OVERLAY_COLOR, radius: float | None = None):
        """Overlay target points (m, d) of the unit sphere, in the tokens' dimension, as small
        dark spheres (e.g. gauge maximizers); ``radius`` in (0, 1] or None.

        Parameters
        ----------
        points : array_like
            ``(m, d)`` unit vectors.
        color : str
            CSS colour.
        radius : float or None
            Radius of the markers.

        Returns
        -------
        pythreejs.Group
        """
        p = project_3d(c.points("points", points, d=self._d), self.coords)
        color = c.color("color", color)
        if radius is not None:
            radius = c.real("radius", radius, minimum=0.0, strict=True, maximum=1.0)
        geometry = three.SphereGeometry(radius=radius or 1.6 * self._radius(len(self.tokens.children)),
                                        widthSegments=12, heightSegments=8)
        material = three.MeshBasicMaterial(color=color, transparent=True, opacity=0.6)
        group = three.Group(children=[three.Mesh(geometry, material, position=tuple(map(float, q)))
                                      for q in p], name="targets")
        self.overlays.children = list(self.overlays.children) + [group]
        return group

    def clear_overlays(self):
        """Remove every overlay."""
        self.overlays.children = []


def subsample(n_frames: int, k: int) -> np.ndarray:
    """``min(k, n_frames)`` evenly spaced frame indices, always the first and the last (the
    last alone when ``k = 1``).

    Parameters
    ----------
    n_frames : int
        Frames available, >= 1.
    k : int
        Frames wanted, >= 1.

    Returns
    -------
    ndarray
        Frame indices.
    """
    n_frames = c.integer("n_frames", n_frames, minimum=1)
    k = min(c.integer("k", k, minimum=1), n_frames)
    if k == 1:
        return np.array([n_frames - 1])
    return np.unique(np.linspace(0, n_frames - 1, k).round().astype(int))
