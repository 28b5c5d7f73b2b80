"""Matplotlib fallback views for print and PDF: ``plot_sphere`` and ``plot_energy``.

They use the same colours and the same 3-D projection as the pythreejs views.  Axis labels and
default titles are typeset as mathematics (matplotlib's mathtext): ``$t$``, ``$E(t)$``,
``$x_1$``, ``$\\beta = 1$``.
"""
from __future__ import annotations

import numpy as np

from . import _checks as c
from .colors import legend_entries, project_3d, token_colors


def _new_axes(ax, projection=None):
    import matplotlib.pyplot as plt
    from matplotlib.axes import Axes

    if ax is not None:
        if projection == "3d":
            from mpl_toolkits.mplot3d import Axes3D

            if not isinstance(ax, Axes3D):
                raise TypeError("ax must be 3-D matplotlib axes (projection='3d'), "
                                f"got {type(ax).__name__}")
        elif not isinstance(ax, Axes):
            raise TypeError(f"ax must be matplotlib axes, got {type(ax).__name__}")
        return ax
    fig = plt.figure(figsize=(4.6, 4.2))
    return fig.add_subplot(projection=projection)


def _points_to_draw(trajectory, x, xi, labels, frame, trails: bool):
    """``(frames, points, xi, labels, frame)`` of ``plot_sphere``: from a trajectory (its frame
    ``frame``) or from raw points ``x`` (``frames`` None)."""
    xs = None
    if trajectory is not None:
        if x is not None or xi is not None or labels is not None:
            raise ValueError("give either trajectory or raw points x (with xi, labels), not both")
        c.trajectory(trajectory)
        xs = np.asarray(trajectory.x, dtype=float)
        frame = c.frame(frame, xs.shape[0])
        pts, xi = xs[frame], np.asarray(trajectory.xi)
        labels = getattr(trajectory.model, "labels", "none")
    elif x is not None:
        pts = c.points("x", x)
        xi = np.zeros(pts.shape[0]) if xi is None else xi
        labels = labels or "none"
        if trails:
            raise ValueError("trails need a trajectory; raw points x have no path")
    else:
        raise TypeError("plot_sphere needs a trajectory or points x")
    return xs, pts, xi, labels, frame


def _draw_sphere(ax) -> None:
    """The wireframe unit sphere."""
    u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 37), np.linspace(0, np.pi, 19))
    ax.plot_wireframe(np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v),
                      color="#b0c4de", linewidth=0.4, alpha=0.6)


def _draw_trails(ax, xs: np.ndarray, colors: list, coords, trail_frames: int) -> None:
    """Each token's path through ``trail_frames`` evenly spaced frames of ``xs``."""
    from .scene import subsample

    idx = subsample(xs.shape[0], trail_frames)
    path = project_3d(xs[idx], coords)
    for i, color in enumerate(colors):
        ax.plot(path[:, i, 0], path[:, i, 1], path[:, i, 2], color=color, linewidth=0.6,
                alpha=0.5)


def _draw_marks(ax, curves: list, targets, coords) -> None:
    """``curves`` as black lines and ``targets`` as black crosses."""
    for curve in curves:
        q = project_3d(curve, coords)
        ax.plot(q[:, 0], q[:, 1], q[:, 2], color="black", linewidth=1.2)
    if targets is not None:
        q = project_3d(targets, coords)
        ax.scatter(q[:, 0], q[:, 1], q[:, 2], color="black", marker="x", s=40, depthshade=False)


def plot_sphere(trajectory=None, *, x=None, xi=None, labels: str | None = None, frame: int = -1,
                trails: bool = False, trail_frames: int = 40, coords=(0, 1, 2), ax=None,
                elev: float = 20.0, azim: float = 35.0, title: str | None = None,
                legend: bool = True, curves=(), targets=None):
    """Draw one frame of a trajectory (or raw points ``x`` of the unit sphere, with ``xi`` and
    ``labels``) on a wireframe unit sphere.

    ``curves`` is a sequence of (m, d) arrays of points of the sphere drawn as black lines
    (e.g. a latitude circle), ``targets`` an (m, d) array of points of the sphere drawn as
    black crosses; both in the tokens' dimension.  ``trails`` (trajectory only) draws each
    token's path through ``trail_frames`` (>= 2) frames.  Returns the axes.
    """
    trails = c.flag("trails", trails)
    xs, pts, xi, labels, frame = _points_to_draw(trajectory, x, xi, labels, frame, trails)
    d = pts.shape[1]
    coords = c.coords(coords)
    trail_frames = c.integer("trail_frames", trail_frames, minimum=2)
    elev, azim = c.real("elev", elev), c.real("azim", azim)
    title = c.text("title", title, optional=True)
    legend = c.flag("legend", legend)
    if isinstance(curves, np.ndarray) or not hasattr(curves, "__iter__"):
        raise TypeError("curves must be a sequence of (m, d) point arrays "
                        "(wrap a single curve in a list)")
    curves = [c.points(f"curves[{k}]", q, minimum=2, d=d) for k, q in enumerate(curves)]
    if targets is not None:
        targets = c.points("targets", targets, d=d)
    colors = token_colors(xi, labels)
    if len(colors) != pts.shape[0]:
        raise ValueError(f"xi must have shape ({pts.shape[0]},), got {np.shape(xi)}")
    p = project_3d(pts, coords)
    ax = _new_axes(ax, "3d")
    _draw_sphere(ax)
    if trails:
        _draw_trails(ax, xs, colors, coords, trail_frames)
    _draw_marks(ax, curves, targets, coords)
    ax.scatter(p[:, 0], p[:, 1], p[:, 2], c=colors, s=14, depthshade=False)
    ax.set_box_aspect((1, 1, 1))
    ax.set_xlim(-1, 1), ax.set_ylim(-1, 1), ax.set_zlim(-1, 1)
    ax.view_init(elev=elev, azim=azim)
    ax.set_xlabel(f"$x_{{{coords[0] + 1}}}$")
    ax.set_ylabel(f"$x_{{{coords[1] + 1}}}$")
    ax.set_zlabel(f"$x_{{{coords[2] + 1}}}$")
    if title is None and trajectory is not None:
        model = trajectory.model
        beta = getattr(model, "beta", float("nan"))
        title = (f"{getattr(model, 'name', '?')}, $\\beta = {beta:g}$, $n = {pts.shape[0]}$, "
                 f"$t = {np.asarray(trajectory.t)[frame]:.3g}$")
    if title:
        ax.set_title(title, fontsize=10)
    if legend and labels != "none":
        from matplotlib.lines import Line2D

        handles = [Line2D([], [], marker="o", linestyle="", color=e.color, label=e.text)
                   for e in legend_entries(xi, labels)]
        ax.legend(handles=handles, loc="upper left", fontsize=7, frameon=False)
    return ax


def plot_energy(*trajectories, labels=None, ax=None, bound: float | None = None):
    """Energy against time for one or more trajectories; ``bound`` (a finite number) draws a
    dashed line.  ``labels`` gives one name per trajectory.  Returns the axes.
    """
    if not trajectories:
        raise TypeError("plot_energy needs at least one trajectory")
    series = [c.energy_series(traj, f"trajectories[{k}]") for k, traj in enumerate(trajectories)]
    if labels is not None:
        if isinstance(labels, (str, bytes)) or not hasattr(labels, "__len__"):
            raise TypeError("labels must be a sequence of names, one per trajectory, "
                            f"got {c.shown(labels)}")
        if len(labels) != len(trajectories):
            raise ValueError(f"labels must give one name per trajectory ({len(trajectories)}), "
                             f"got {len(labels)}")
    if bound is not None:
        bound = c.real("bound", bound)
    ax = _new_axes(ax)
    for k, (traj, (t, e)) in enumerate(zip(trajectories, series, strict=True)):
        name = labels[k] if labels is not None else getattr(traj.model, "name", f"run {k}")
        ax.plot(t, e, label=str(name))
    if bound is not None:
        ax.axhline(bound, color="black", linestyle="--", linewidth=0.8, label="maximal energy")
    ax.set_xlabel("$t$")
    ax.set_ylabel("energy $E(t)$")
    ax.grid(alpha=0.3)
    if len(trajectories) > 1 or bound is not None:
        ax.legend(fontsize=8)
    return ax
