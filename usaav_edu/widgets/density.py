"""``DensityView``: many tokens (up to 100,000 and more) on the sphere.

Two ways to draw a large cloud, one class:

* ``mode="points"`` (a live kernel): one ``Points`` object, a single draw call, whose
  ``BufferGeometry`` holds every token's position (float32) and colour (one byte per channel).
  A frame slider and a play button under the sphere move through the frames by replacing the
  positions attribute from the kernel (a frame of 100,000 tokens is 1.2 MB sent as binary).
* ``mode="density"`` (the static book): the kernel density estimate of each kept frame
  (``usaav_edu.analysis.density``) at the vertices of an icosphere, drawn as a mesh whose vertex colours
  come from a perceptual colour map.  The meshes of all frames share one positions attribute and
  one index; each carries only its colours (3 bytes per vertex).  The page's animation mixer
  shows one mesh at a time: each mesh ``d{k}`` has a ``VectorKeyframeTrack`` on
  ``d{k}.position`` with discrete interpolation that keeps it at the centre while its frame is
  current and far behind the camera's far plane otherwise.  So it plays with no kernel, like
  ``TrajectoryPlayer``, with the same time bar and buttons.  On the circle (d = 2) the density
  is a coloured ring around the equator.
* ``mode="auto"`` picks "points" with a live kernel and "density" when the page is executed to
  be saved as a static page (``USAAV_EDU_STATIC_PAGE=1``, see ``live_kernel``); for d > 3 it
  picks "points" (drawn by projection, see ``project_3d``).

It also plays a density run of the solver on the sphere (:func:`usaav_edu.meanfield.solver.solve` with
``grid=sphere_grid(lmax)``, a ``DensityTrajectory``), in mode "density" (which "auto" picks for
such a run, with or without a kernel): the colour of a vertex ``x`` in frame ``k`` is then the
solver's own density ``f(t_k, x) = sum_{l <= lmax} sum_m f_lm(t_k) Y_lm(x)``, its coefficients
evaluated at the icosphere's vertices (``density_plots.sphere_density_at``), nothing estimated
or solved again: of a labelled run the content marginal ``sum_l rho_l f_l`` by default, or one
label's conditional density with ``label=k``.  A run has no tokens, so mode "points" refuses it;
a run on the circle is drawn by the functions of ``usaav_edu.widgets.density_plots``.

The view draws what the library computes: the density values come from
``usaav_edu.analysis.density.sphere_density`` (``circle_density`` for d = 2), or from the
coefficients of the solver's frames.
"""
from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets
import numpy as np
import pythreejs as three

from ..analysis import density as dens
from ..meanfield.solver import DensityTrajectory
from ..particles.trajectory import Trajectory
from . import _checks as c
from .colors import CYCLIC_STEPS, PLAIN_COLOR, PROMPT_PALETTE, _check_xi, cyclic_color, project_3d
from .density_plots import sphere_density_at, sphere_run, sphere_series
from .player import BUTTONS_TEXT, LOOPS, _frames_within, controls_row, time_bar, time_bar_tracks
from .scene import SphereView, _legend_html, subsample
from .state import live_kernel

MODES = ("auto", "points", "density")
SCALES = ("log", "linear")

#: where a density mesh waits while its frame is not shown: beyond the camera's far plane
HIDDEN_AT = (0.0, 0.0, 1000.0)

#: bytes of embedded state of a density view that do not depend on frames or mesh: the scene,
#: the time bar, the legend and the controls
DENSITY_FIXED = 90_000
#: bytes per frame besides its colours: its Mesh, BufferGeometry, colour attribute and track
DENSITY_PER_FRAME = 3_500
#: CSS class of a DensityView's root (the browser checks find density views by it)
DENSITY_CLASS = "usaav-density-view"
#: why a DensityView does not take another trajectory
_FIXED_TRAJECTORY = ("a DensityView draws the trajectory it was made with; "
                     "make a new DensityView(trajectory)")
#: colour ramp of the legend: number of stops
LEGEND_STOPS = 9


def density_frames_for_budget(n_vertices: int, n_faces: int, n_frames: int,
                              max_bytes: int = 900_000, max_frames: int | None = None) -> int:
    """How many frames a density view of a mesh can embed within ``max_bytes``.

    The page holds the mesh once (float32 positions and the triangle indices, base64: about
    ``16 V + 4 * 3 F * s / 3`` bytes, with ``s`` = 2 or 4 bytes per index) and, per frame, the
    vertex colours (3 bytes per vertex, base64: ``4 V``) plus ``DENSITY_PER_FRAME`` bytes of
    widgets (the frame's mesh, geometry, attribute and keyframe track), besides
    ``DENSITY_FIXED`` bytes for the rest of the scene.  ``n_vertices`` and ``n_faces`` are
    the mesh's size (``sphere_mesh(4)``: 2562 and 5120); ``n_frames``, ``max_bytes``,
    ``max_frames``, the result and the error are as for
    :func:`usaav_edu.widgets.frames_for_budget`.
    """
    n_vertices = c.integer("n_vertices", n_vertices, minimum=3)
    n_faces = c.integer("n_faces", n_faces, minimum=1)
    index_bytes = 2 if n_vertices < 65536 else 4
    mesh = 16 * n_vertices + 4 * n_faces * index_bytes
    per_frame = 4 * n_vertices + DENSITY_PER_FRAME
    return _frames_within(DENSITY_FIXED + mesh, per_frame, n_frames, max_bytes, max_frames,
                         f"a mesh of {n_vertices} vertices",
                         "; use a coarser mesh (a lower level)")


def label_rgb(xi, labels: str) -> np.ndarray:
    """``(n, 3)`` uint8 colours of tokens, the same as ``token_colors`` gives, computed once per
    distinct colour (fast for 100,000 tokens).

    Parameters
    ----------
    xi : array_like
        ``(n,)`` labels.
    labels : {"none", "position", "prompt"}
        What the labels mean.

    Returns
    -------
    ndarray
        ``(n, 3)`` uint8 sRGB.
    """
    xi = _check_xi(xi, labels)
    if labels == "none":
        table, which = [PLAIN_COLOR], np.zeros(len(xi), dtype=int)
    elif labels == "prompt":
        table = list(PROMPT_PALETTE)
        which = xi.astype(np.int64) % len(PROMPT_PALETTE)
    else:
        values = np.unique(xi.astype(float))
        rank = np.searchsorted(values, xi.astype(float))
        # token_colors rounds the phase rank / len(values) to CYCLIC_STEPS steps
        which = np.round(rank / len(values) % 1.0 * CYCLIC_STEPS).astype(np.int64) % CYCLIC_STEPS
        table = [cyclic_color(k / CYCLIC_STEPS) for k in range(CYCLIC_STEPS)]
    rgb = np.array([[int(h[i:i + 2], 16) for i in (1, 3, 5)] for h in table], dtype=np.uint8)
    return rgb[which]


def _colormap(name: str):
    import matplotlib

    if not isinstance(name, str):
        raise TypeError(f"colormap must be the name of a matplotlib colour map, "
                        f"got {type(name).__name__}")
    try:
        return matplotlib.colormaps[name]
    except KeyError:
        raise ValueError(f"colormap must be the name of a matplotlib colour map such as "
                         f"'viridis', got {name!r}") from None


def _hex_color(value) -> str:
    """``"#rrggbb"`` of an HTML colour given as ``#rrggbb``, ``#rgb`` or a colour name."""
    from matplotlib.colors import to_hex

    value = c.color("color", value)
    try:
        return to_hex(value)
    except ValueError:
        raise ValueError(f"color must be '#rrggbb', '#rgb' or a colour name such as 'black', "
                         f"got {c.shown(value)}") from None


def _ring(mesh: dens.SphereMesh, width: float = 0.06) -> tuple[np.ndarray, np.ndarray]:
    """A flat ring around the equator for the circle's density: vertex 2k (inner) and 2k+1
    (outer) sit at angle k of ``mesh``; returns (positions (2m, 3), triangles (2m, 3))."""
    m = len(mesh.vertices)
    p = np.zeros((2 * m, 3))
    p[0::2, :2] = (1.0 - width) * mesh.vertices
    p[1::2, :2] = (1.0 + width) * mesh.vertices
    k = np.arange(m)
    nxt = (k + 1) % m
    tri = np.concatenate([np.stack([2 * k, 2 * nxt, 2 * k + 1], axis=1),
                          np.stack([2 * k + 1, 2 * nxt, 2 * nxt + 1], axis=1)])
    return p, tri


class DensityView(SphereView):
    """Many tokens on the sphere: a point cloud (live) or a density per frame (static book).

    Parameters
    ----------
    trajectory : Trajectory or DensityTrajectory
        What to draw: tokens (any n; frames must be finite unit vectors), or a density run of
        :func:`usaav_edu.meanfield.solver.solve` on the sphere (``grid=sphere_grid(lmax)``), whose
        frames are drawn from their coefficients (see the module).
    mode : {"auto", "points", "density"}
        "points": every token as a point of one ``Points`` object, with a frame slider and a
        play button that need a live kernel.  "density": the kernel density estimate of each
        kept frame (for a density run: the solver's density), as a coloured mesh, played in
        the browser with no kernel (d = 2 or 3).  "auto": "density" for a density run, and for
        a static page and d <= 3; else "points" (see the module).
    live : bool, optional
        Whether a kernel runs (None: read ``USAAV_EDU_STATIC_PAGE``, see ``live_kernel``).
        Without one, "points" draws the frame ``frame`` and no controls.
    frame : int
        The frame drawn first in "points" mode (the density animation starts at t = 0).
    level : int
        Icosphere subdivision level of the density mesh (d = 3): 3 has 642 vertices, 4 (the
        default) 2562, 5 10242.  For d = 2 the ring has ``64 * 2**level`` points round.
    bandwidth : float, optional
        Kernel width in radians (see ``usaav_edu.analysis.density.sphere_density``); by default
        ``usaav_edu.analysis.density.default_bandwidth``.  Tokens only: a density run has no
        kernel.
    label : int, "marginal" or None
        For a labelled density run: the index of the conditional density drawn, or the content
        marginal ``sum_l rho_l f_l`` (None, the default, or "marginal"); None otherwise.
    colormap : str
        A matplotlib colour map for the density (default "viridis", perceptually uniform).
    scale : {"log", "linear"}
        Colour scale of the density; "log" shows both the spread start and a collapsed end.
    color : str, optional
        One HTML colour for every point ("points" mode); by default the colours of the labels,
        as ``SphereView`` draws them.
    point_size : float, optional
        Diameter of a point in scene units, in (0, 0.2]; by default ``0.5 / sqrt(n)`` kept in
        [0.005, 0.03].
    max_points : int
        At most this many tokens are drawn as points (evenly spaced in index); the caption
        says so when some are left out.
    duration : float
        Seconds of wall time for the whole density animation (or the points' play button).
    max_bytes : int
        Budget of the embedded state of a density view; frames are subsampled to fit (see
        ``density_frames_for_budget``).  Where two frames of the mesh do not fit, a live kernel
        draws a coarser mesh and says so in the caption (``budget_note``); a static page refuses.
    max_frames : int, optional
        Upper bound (>= 2) on the frames kept.
    loop : {"LoopRepeat", "LoopOnce", "LoopPingPong"}
        What the density animation does at its end.
    coords, width, height, title
        As for ``SphereView``.

    Raises
    ------
    TypeError, ValueError
        For an argument of the wrong kind or value, named in the message; "density" mode for
        d > 3; "points" mode for a density run; a density run on the circle (the message
        names its views in ``usaav_edu.widgets.density_plots``).
    """

    def __init__(self, trajectory, *, mode: str = "auto", live: bool | None = None,
                 frame: int = 0, level: int = 4, bandwidth: float | None = None,
                 label: int | str | None = None, colormap: str = "viridis", scale: str = "log",
                 color: str | None = None, point_size: float | None = None,
                 max_points: int = 100_000,
                 duration: float = 8.0, max_bytes: int = 900_000, max_frames: int | None = None,
                 loop: str = "LoopRepeat", coords=(0, 1, 2), width: int = 460,
                 height: int = 400, title: str | None = None, **kwargs):
        c.keywords(type(self), kwargs)
        n_frames, d = self._source(trajectory, label)
        if not isinstance(mode, str) or mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {c.shown(mode)}")
        self.live = live_kernel(live)
        self.frame = c.frame(frame, n_frames)
        level = c.integer("level", level, minimum=0)
        if level > dens.MAX_LEVEL:
            raise ValueError(f"level must be at most {dens.MAX_LEVEL}, got {level}")
        bandwidth = self._bandwidth(bandwidth)
        self.cmap = _colormap(colormap)
        self.colormap = colormap
        if not isinstance(scale, str) or scale not in SCALES:
            raise ValueError(f"scale must be one of {SCALES}, got {c.shown(scale)}")
        self.scale = scale
        self.point_color = None if color is None else _hex_color(color)
        if point_size is not None:
            point_size = c.real("point_size", point_size, minimum=0.0, strict=True, maximum=0.2)
        self.max_points = c.integer("max_points", max_points, minimum=1)
        self.duration = c.real("duration", duration, minimum=0.0, strict=True)
        self.max_bytes = c.integer("max_bytes", max_bytes, minimum=1)
        self.max_frames = None if max_frames is None else c.integer("max_frames", max_frames,
                                                                    minimum=2)
        if loop not in LOOPS:
            raise ValueError(f"loop must be one of {LOOPS}, got {c.shown(loop)}")
        self.loop = loop
        self.mode = mode = self._pick_mode(mode, d)
        self.level = level
        self.budget_note = ""     # one line, when a live kernel's budget made the mesh coarser
        self._point_size = point_size
        super().__init__(None, coords=coords, width=width, height=height, title=title, **kwargs)
        self.coords = c.coords(coords)
        project_3d(np.zeros((1, 1, d)), self.coords)          # checks coords against d
        self.add_class(DENSITY_CLASS)
        self.trajectory = trajectory
        self._d = d
        self.labels = getattr(trajectory.model, "labels", "none")
        # filled by the mode's builder
        self.points: three.Points | None = None
        self.meshes: list[three.Mesh] = []
        self.tracks: list[three.VectorKeyframeTrack] = []
        self.action = None
        self.frame_indices = np.array([], dtype=int)
        self.densities = np.zeros((0, 0))
        self.mesh: dens.SphereMesh | None = None
        self.bandwidth: float | None = None
        self.color_range = (np.nan, np.nan)
        if mode == "points":
            self._build_points()
        else:
            self._build_density(bandwidth)

    def _source(self, trajectory, label) -> tuple[int, int]:
        """Check what is drawn (tokens, or a density run on the sphere, and ``label``), set
        ``run`` and ``label``; returns the number of frames and the dimension."""
        if isinstance(trajectory, DensityTrajectory):
            self.run: DensityTrajectory | None = sphere_run(trajectory, "trajectory",
                                                            "a DensityView")
            sphere_series(trajectory, label)                  # checks the label
            self.label = None if label is None or isinstance(label, str) else int(label)
            return trajectory.t.size, 3
        if not isinstance(trajectory, Trajectory):
            raise TypeError(f"trajectory must be a usaav_edu Trajectory (tokens) or a "
                            f"DensityTrajectory on the sphere (usaav_edu.meanfield.solve), got "
                            f"{type(trajectory).__name__}")
        c.trajectory(trajectory)
        if label is not None:
            raise ValueError(f"label picks one label of a labelled density run "
                             f"(usaav_edu.meanfield.solve); a Trajectory of tokens is drawn "
                             f"whole: leave label None, got {c.shown(label)}")
        self.run, self.label = None, None
        x_shape = np.shape(trajectory.x)
        return x_shape[0], x_shape[2]

    def _bandwidth(self, bandwidth):
        """``bandwidth`` checked (None, or a kernel width for tokens)."""
        if bandwidth is None:
            return None
        if self.run is not None:
            raise ValueError("bandwidth is the width of the kernel that estimates the density "
                             "of tokens; a density run is drawn from the solver's coefficients: "
                             "leave bandwidth None")
        return c.real("bandwidth", bandwidth, minimum=0.0, strict=True, maximum=np.pi)

    def _pick_mode(self, mode: str, d: int) -> str:
        """The mode drawn: ``mode`` with "auto" resolved, refused where it cannot draw."""
        if self.run is not None:
            if mode == "points":
                raise ValueError("mode='points' draws the tokens of a Trajectory, and a density "
                                 "run (usaav_edu.meanfield.solve) has none: draw it with "
                                 "mode='density' (or 'auto'), the solver's density on a mesh")
            return "density"
        if mode == "auto":
            mode = "density" if not self.live and d <= 3 else "points"
        if mode == "density" and d > 3:
            raise ValueError(f"mode='density' draws d = 2 or 3 (a density on the circle or the "
                             f"sphere), got d = {d}; use mode='points' (a projection)")
        return mode

    # ---------------------------------------------------------- what is drawn
    def show(self, trajectory, frame: int = -1):
        """Not offered: a ``DensityView`` draws the trajectory it was made with (its mesh,
        frames and colour scale are fixed then); make a new ``DensityView``.  Raises
        NotImplementedError.
        """
        raise NotImplementedError(_FIXED_TRAJECTORY)

    def set_points(self, x, xi, labels: str):
        """Not offered (see ``show``): raises NotImplementedError."""
        raise NotImplementedError(_FIXED_TRAJECTORY)

    @property
    def token_positions(self) -> np.ndarray:
        """``(m, 3)`` positions of the drawn points ("points" mode; ``(0, 3)`` for a density)."""
        if self.points is None:
            return np.zeros((0, 3))
        return self.point_positions

    @property
    def token_colors(self) -> list[str]:
        """Hex colours of the drawn points ("points" mode; empty for a density)."""
        if self.points is None:
            return []
        return ["#{:02x}{:02x}{:02x}".format(*map(int, rgb)) for rgb in self.point_colors]

    # ------------------------------------------------------------------- points
    def _build_points(self):
        traj = self.trajectory
        x = np.asarray(traj.x)
        n_frames, n, _ = x.shape
        self.token_index = subsample(n, self.max_points)
        m = len(self.token_index)
        size = self._point_size
        if size is None:
            size = float(np.clip(0.5 / np.sqrt(m), 0.005, 0.03))
        attributes = {"position": three.BufferAttribute(array=self._frame_positions(self.frame),
                                                        normalized=False)}
        if self.point_color is None:
            rgb = label_rgb(np.asarray(traj.xi)[self.token_index], self.labels)
            attributes["color"] = three.BufferAttribute(array=rgb, normalized=True)
            material = three.PointsMaterial(size=size, vertexColors="VertexColors")
            self.legend.value = _legend_html(traj.xi, self.labels, self.title)
        else:
            material = three.PointsMaterial(size=size, color=self.point_color)
            self.legend.value = _legend_html(np.zeros(n), "none", self.title).replace(
                PLAIN_COLOR, html.escape(self.point_color))
        self.points = three.Points(geometry=three.BufferGeometry(attributes=attributes),
                                   material=material, name="cloud")
        self.tokens.children = [self.points]
        rows = [self.children[0]]
        if self.live and n_frames > 1:
            self.slider = widgets.IntSlider(
                value=self.frame % n_frames, min=0, max=n_frames - 1, description="frame",
                tooltip="frame of the trajectory drawn (needs a running kernel)",
                continuous_update=True, layout=widgets.Layout(width="300px", max_width="100%"))
            interval = max(20, int(1000 * self.duration / n_frames))
            self.play = widgets.Play(value=self.slider.value, min=0, max=n_frames - 1,
                                     interval=interval, description="play the frames",
                                     tooltip="play the frames (needs a running kernel)")
            widgets.jslink((self.play, "value"), (self.slider, "value"))
            self.slider.observe(self._on_frame, names="value")
            rows.append(widgets.HBox([self.play, self.slider],
                                     layout=widgets.Layout(align_items="center")))
        else:
            self.slider = self.play = None
        self.caption.value = self._points_caption()
        rows.append(self.caption)
        self.children = rows

    def _frame_positions(self, frame: int) -> np.ndarray:
        x = np.asarray(self.trajectory.x)[frame][self.token_index]
        return np.ascontiguousarray(project_3d(x, self.coords), dtype=np.float32)

    def _on_frame(self, change):
        self.show_frame(change["new"])

    def show_frame(self, frame: int):
        """Draw frame ``frame`` in "points" mode (replaces the positions attribute; the frame
        slider calls this).

        Parameters
        ----------
        frame : int
            The frame, in ``[-F, F)``.
        """
        if self.mode != "points":
            raise ValueError("show_frame draws a frame of the point cloud (mode='points'); "
                             "a density view plays its frames in the browser")
        self.frame = c.frame(frame, np.shape(self.trajectory.x)[0])
        self._drawn_points("show_frame").geometry.attributes["position"].array = \
            self._frame_positions(self.frame)
        self.caption.value = self._points_caption()

    def _points_caption(self) -> str:
        # SphereView's caption says how many tokens are drawn when some are left out
        extra = "" if self.live else "; the frame slider needs a running kernel"
        return self._caption(self.trajectory, self.frame).replace(
            "</span>", f"{html.escape(extra)}</span>")

    def _drawn_points(self, what: str):
        """The ``Points`` of "points" mode; AttributeError naming ``what`` for a density."""
        if self.points is None:
            raise AttributeError(f"{what} belongs to mode='points'; this DensityView draws "
                                 f"a density (mode={self.mode!r})")
        return self.points

    @property
    def point_positions(self) -> np.ndarray:
        """``(m, 3)`` positions of the drawn points, as held in the widget state."""
        points = self._drawn_points("point_positions")
        return np.asarray(points.geometry.attributes["position"].array, dtype=float)

    @property
    def point_colors(self) -> np.ndarray:
        """``(m, 3)`` uint8 colours of the drawn points, as held in the widget state."""
        attributes = self._drawn_points("point_colors").geometry.attributes
        if self.point_color is not None:      # one colour for all, no colour attribute
            rgb = [int(self.point_color[i:i + 2], 16) for i in (1, 3, 5)]
            return np.tile(np.array(rgb, dtype=np.uint8), (len(self.token_index), 1))
        return np.asarray(attributes["color"].array)

    # ------------------------------------------------------------------ density
    def _build_density(self, bandwidth):
        t = np.asarray(self.trajectory.t, dtype=float)
        n_frames, d = t.size, self._d
        level = self.level
        while True:
            mesh, positions, faces = self._mesh(level, d)
            try:
                k = density_frames_for_budget(len(positions), len(faces), n_frames,
                                              self.max_bytes, self.max_frames)
                break
            except ValueError:
                # the page budget belongs to the static page: a live kernel draws a coarser
                # mesh and says so; a static page refuses (its author chooses the mesh)
                if not self.live or level == 0:
                    raise
                level -= 1
        if level < self.level:
            self.budget_note = (f"max_bytes={self.max_bytes} holds the density on a mesh of level "
                                f"{level}, not {self.level}: the view draws that (raise max_bytes "
                                f"for the finer mesh)")
            self.level = level
        uniform = 1.0 / (4.0 * np.pi) if d == 3 else 1.0 / (2.0 * np.pi)
        self.mesh = mesh
        idx = subsample(n_frames, k)
        self.frame_indices = idx
        self.densities = self._frame_values(mesh, idx, bandwidth)
        lo, hi = self._range(self.densities, uniform)
        self.color_range = (lo, hi)
        rgb = self._rgb(self.densities, lo, hi)                       # (k, V, 3) uint8
        if d == 2:
            rgb = np.repeat(rgb, 2, axis=1)                           # inner and outer ring
        else:
            self.sphere.visible = False                               # the mesh is the sphere
        index_type = np.uint16 if len(positions) < 65536 else np.uint32
        shared = {"position": three.BufferAttribute(array=positions.astype(np.float32),
                                                    normalized=False)}
        index = three.BufferAttribute(array=faces.astype(index_type).ravel(), normalized=False)
        material = three.MeshBasicMaterial(vertexColors="VertexColors", side="DoubleSide")
        self.meshes = []
        for j in range(len(idx)):
            attrs = dict(shared, color=three.BufferAttribute(array=rgb[j], normalized=True))
            geometry = three.BufferGeometry(attributes=attrs, index=index)
            self.meshes.append(three.Mesh(geometry, material, name=f"d{j}",
                                          position=(0.0, 0.0, 0.0) if j == 0 else HIDDEN_AT))
        self.tokens.children = self.meshes
        self.legend.value = self._colorbar_html(lo, hi, uniform, d)
        if len(idx) > 1:
            self._build_animation(t[idx] - t[0])
        else:                                     # one frame: nothing to play
            self.children = [self.children[0], self.caption]
        self.caption.value = self._density_caption()

    def _frame_values(self, mesh: dens.SphereMesh, idx: np.ndarray, bandwidth) -> np.ndarray:
        """``(k, V)`` densities of the frames ``idx`` at the vertices of ``mesh``: of a density
        run the solver's density, its coefficients evaluated there (``label`` chooses what);
        of tokens the kernel density estimate (sets ``bandwidth``)."""
        if self.run is not None:
            return sphere_density_at(self.run, mesh.vertices, frames=idx, label=self.label)
        x = np.asarray(self.trajectory.x, dtype=float)
        n, d = x.shape[1:]
        estimate = dens.sphere_density if d == 3 else dens.circle_density
        self.bandwidth = dens.default_bandwidth(n, mesh) if bandwidth is None else bandwidth
        return np.stack([estimate(x[i], mesh, self.bandwidth) for i in idx])

    @staticmethod
    def _mesh(level: int, d: int):
        """The density mesh of ``level`` for d = 3 (an icosphere) or d = 2 (a ring), with the
        vertex positions and triangles drawn."""
        if d == 3:
            mesh = dens.sphere_mesh(level)
            return mesh, mesh.vertices, mesh.faces
        mesh = dens.circle_mesh(64 * 2 ** level)
        return (mesh, *_ring(mesh))

    def _range(self, values: np.ndarray, uniform: float) -> tuple[float, float]:
        hi = float(values.max())
        if self.scale == "linear":
            return 0.0, hi
        # log scale: from the smallest value shown, but over at most four decades, and with
        # the uniform density inside the range
        lo = max(float(values.min()), hi * 1e-4)
        return min(lo, uniform / 2.0), max(hi, 2.0 * uniform)

    def _rgb(self, values: np.ndarray, lo: float, hi: float) -> np.ndarray:
        if self.scale == "log":
            u = (np.log(np.maximum(values, lo)) - np.log(lo)) / (np.log(hi) - np.log(lo))
        else:
            u = values / hi if hi > 0 else np.zeros_like(values)
        rgba = self.cmap(np.clip(u, 0.0, 1.0))
        return np.round(255 * rgba[..., :3]).astype(np.uint8)

    def _colorbar_html(self, lo: float, hi: float, uniform: float, d: int) -> str:
        u = np.linspace(0.0, 1.0, LEGEND_STOPS)
        stops = ", ".join(
            "#{:02x}{:02x}{:02x}".format(*(int(round(255 * q)) for q in self.cmap(s)[:3]))
            for s in u)
        if self.scale == "log":
            ticks = np.exp(np.log(lo) + u[[0, 4, 8]] * (np.log(hi) - np.log(lo)))
        else:
            ticks = hi * u[[0, 4, 8]]
        unit = "uniform = 1/(4\u03c0)" if d == 3 else "uniform = 1/(2\u03c0)"
        labels = "".join(f"<div>{q / uniform:.3g}</div>" for q in ticks[::-1])
        title = f"<div style='font-weight:600;margin-bottom:4px'>{html.escape(self.title)}</div>" \
            if self.title else ""
        return (f"<div style='font-size:12px'>{title}"
                f"<div>density ({self.scale} scale),<br>in units of the {unit}</div>"
                "<div style='display:flex;gap:6px;margin-top:4px'>"
                f"<div style='width:14px;height:140px;background:linear-gradient(to top, {stops})'>"
                "</div><div style='display:flex;flex-direction:column;"
                f"justify-content:space-between;height:140px'>{labels}</div></div></div>")

    def _density_caption(self) -> str:
        traj = self.trajectory
        model = traj.model
        if self.mesh is None:
            raise RuntimeError("the density caption describes the mesh: build the density first")
        n_frames, d = len(traj.t), self._d
        where = f"icosphere of {len(self.mesh.vertices)} vertices" if d == 3 else \
            f"ring of {len(self.mesh.vertices)} points"
        if self.run is None:
            what = (f", n = {np.shape(traj.x)[1]}, d = {d}: density of the tokens (von "
                    f"Mises-Fisher kernel, bandwidth {self.bandwidth:.3g} rad) on an {where}")
        else:
            what = self._run_caption(where)
        return (f"<span style='font-size:12px'>model "
                f"{html.escape(str(getattr(model, 'name', '?')))}, "
                f"beta = {getattr(model, 'beta', float('nan')):g}{what}, "
                f"{len(self.frame_indices)} of {n_frames} frames</span>"
                ).replace("on an ring", "on a ring") + (
                    f"<br><span style='font-size:12px;color:#8a4b00'>{self.budget_note}</span>"
                    if self.budget_note else "")

    def _run_caption(self, where: str) -> str:
        """What a density run's caption says of the density drawn (before its frame count)."""
        run = self.run
        if run is None:
            raise RuntimeError("the caption of a density run needs the run")
        grid: Any = run.grid                   # a SphereGrid (sphere_run checked it)
        lmax = int(grid.lmax)
        if run.xi is None:
            which = ""
        elif self.label is None:
            which = f", the content marginal of its {run.xi.size} labels"
        else:
            which = f", the density of label {self.label} (xi = {run.xi[self.label]:g})"
        # no "t = ...": a printed pair of pictures names the time of each in its caption
        stopped = "" if run.t_unresolved is None else \
            f"; the grid stopped resolving it after time {run.t_unresolved:g}"
        return (f": the solver's density of degree lmax = {lmax} (usaav_edu.meanfield.solve"
                f"{which}{stopped}), from its coefficients at the vertices of an {where}")

    def _build_clock(self, span: float):
        hud, self.clock = time_bar(span, "clock")
        self.hud = three.Group(children=hud, name="hud")
        self.camera.children = list(self.camera.children) + [self.hud]

    def _build_animation(self, times: np.ndarray):
        times = np.asarray(times, dtype=np.float32)
        k = len(times)
        if np.any(np.diff(times) <= 0):           # float32 ties: play the frames evenly
            times = np.linspace(0.0, max(float(times[-1]), 1.0), k, dtype=np.float32)
        here, away = np.zeros(3, np.float32), np.asarray(HIDDEN_AT, np.float32)
        tracks = []
        for j in range(k):
            # discrete keys: away until the frame's time, here until the next frame's, away after
            key_t, key_v = [], []
            if j > 0:
                key_t.append(0.0)
                key_v.append(away)
            key_t.append(times[j])
            key_v.append(here)
            if j < k - 1:
                key_t.append(times[j + 1])
                key_v.append(away)
            tracks.append(three.VectorKeyframeTrack(
                name=f"d{j}.position", times=np.array(key_t, dtype=np.float32),
                values=np.concatenate(key_v).astype(np.float32),
                interpolation="InterpolateDiscrete"))
        span = float(times[-1])
        self._build_clock(span)
        tracks += time_bar_tracks(times, span, "clock")
        clip = three.AnimationClip(tracks=tracks, duration=float(times[-1]))
        mixer = three.AnimationMixer(self.scene)
        self.action = three.AnimationAction(mixer, clip, self.scene, loop=self.loop,
                                            timeScale=float(times[-1]) / self.duration,
                                            clampWhenFinished=True)
        self.tracks = tracks
        t = np.asarray(self.trajectory.t, dtype=float)
        self.time_info = widgets.HTML(
            f"<span style='font-size:12px'>{BUTTONS_TEXT} "
            f"Press &#9654; to play t = {t[0]:g} to {t[-1]:g} "
            f"({len(self.frame_indices)} of {len(t)} frames, {self.duration:g} s); the red bead "
            f"on the bar and the label above it mark the time</span>")
        self.children = [self.children[0],
                         controls_row(self.action, self.time_info),
                         self.caption]

    @property
    def frame_colors(self) -> np.ndarray:
        """``(k, V, 3)`` uint8 vertex colours of the density meshes, as held in the widget
        state (V counts the ring's inner and outer points for d = 2)."""
        return np.stack([np.asarray(m.geometry.attributes["color"].array) for m in self.meshes])

    @property
    def keyframe_times(self) -> np.ndarray:
        """The clip time of each kept frame (one per density mesh), that is the model time
        since the first frame, as the page stores it (float32)."""
        if not self.tracks:
            return np.zeros(len(self.meshes))
        clock = next(tr for tr in self.tracks if tr.name == "clock.position")
        return np.asarray(clock.times, dtype=float)

    def shown_mesh(self, time: float) -> int:
        """Index of the density mesh the animation shows at clip time ``time`` (model time
        since the first frame), read from the keyframe tracks as the browser's discrete
        interpolation reads them: the value of the last key at or before ``time``.

        Parameters
        ----------
        time : float
            Clip time, in ``[0, duration of the clip]``.

        Returns
        -------
        int
        """
        if self.mode != "density":
            raise ValueError("shown_mesh reads the tracks of a density view (mode='density')")
        time = c.real("time", time, minimum=0.0)
        shown = []
        for j, track in enumerate(self.tracks[:len(self.meshes)]):
            times = np.asarray(track.times, dtype=float)
            values = np.asarray(track.values, dtype=float).reshape(-1, 3)
            key = max(int(np.searchsorted(times, time, side="right")) - 1, 0)
            if np.allclose(values[key], 0.0):
                shown.append(j)
        if len(shown) != 1:
            raise RuntimeError(f"the tracks show {len(shown)} meshes at time {time:g}")
        return shown[0]
