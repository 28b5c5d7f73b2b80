r"""Matplotlib views of a density run (:func:`usaav_edu.meanfield.solver.solve`).

On the circle (``grid=None``):

* :func:`plot_density_image`: ``f(t, theta)`` as a space-time image (time up, angle across);
* :func:`plot_density_curves`: ``f(t, .)`` as curves at chosen times;
* :func:`plot_conditionals`: the conditional densities of a labelled run at one time, one
  curve per label, with the content marginal.

On the sphere (``grid=sphere_grid(lmax)``), for print and handouts (the book's interactive view
of such a run is :class:`usaav_edu.widgets.DensityView`):

* :func:`sphere_density_map`: small multiples of ``f(t, .)`` at a few frames, as an equal-area
  map in (longitude, cos colatitude) or in orthographic projection, with one colour bar;
* :func:`sphere_density_at`: the values of a run's frames at any unit vectors.

A run on the sphere is drawn from its coefficients: the density of frame ``k`` at a unit vector
:math:`x = (\sin\theta\cos\varphi, \sin\theta\sin\varphi, \cos\theta)` is

.. math::

    f(t_k, x) = \sum_{l \le L} \sum_{|m| \le l} f_{lm}(t_k)\, Y_{lm}(\theta, \varphi),

evaluated by :func:`usaav_edu.meanfield.harmonics.evaluate` (ducc0), exactly the function the
solver holds (a band-limited expansion may dip slightly below 0 near a sharp peak; the views
show such values as they are, or clipped on a log scale).  For labels the content marginal
:math:`\bar f = \sum_l \rho_l f_l` has the coefficients :math:`\sum_l \rho_l f_{l,lm}`.

Images are one raster each (``imshow``), so an SVG or PDF of them stays small; curves are vector
lines.  Axis labels are typeset as mathematics (``$\theta$``, ``$t$``, ``$f(t, \theta)$``).
Views draw what they are given and integrate nothing.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate as v
from ..meanfield import harmonics
from ..meanfield.solver import DensityTrajectory
from . import _checks as c

__all__ = ["plot_density_image", "plot_density_curves", "plot_conditionals",
           "sphere_density_map", "sphere_density_at"]

#: the functions that draw a run on the circle (named where a sphere view refuses one)
CIRCLE_VIEWS = ("usaav_edu.widgets.density_plots (plot_density_image, plot_density_curves, "
                "plot_conditionals)")
PROJECTIONS = ("map", "orthographic")
#: a log-scale map clips the density at this fraction of its largest value
LOG_FLOOR = 1e-4


def _run(traj):
    """``traj`` checked: a run on the circle (a run on the sphere is named to its views)."""
    if not isinstance(traj, DensityTrajectory):
        raise TypeError(f"traj must be a DensityTrajectory (usaav_edu.meanfield.solver.solve), got "
                        f"{type(traj).__name__}")
    if traj.on_sphere:
        raise ValueError("traj is a run on the sphere (grid=sphere_grid(lmax)): draw it with "
                         "sphere_density_map (print) or usaav_edu.widgets.DensityView")
    return traj


def _series(traj, label):
    """``(F, m)`` densities of one label, the marginal, or the run without labels."""
    if not traj.labelled:
        if label is not None:
            raise ValueError("label must be None for a run without labels")
        return traj.f, "f"
    if label is None or label == "marginal":
        return traj.marginal, r"\bar f"
    n_labels = traj.f.shape[1]
    label = c.bounded_integer("label", label, 0, n_labels - 1)
    return traj.f[:, label], f"f_{{{label}}}"


def _axes(ax, size=(5.2, 3.4)):
    import matplotlib.pyplot as plt
    from matplotlib.axes import Axes

    if ax is None:
        return plt.figure(figsize=size).add_subplot()
    if not isinstance(ax, Axes):
        raise TypeError(f"ax must be matplotlib axes, got {type(ax).__name__}")
    return ax


def _angle_ticks(ax, axis="x"):
    ticks = np.pi * np.arange(5) / 2
    names = ["$0$", r"$\pi/2$", r"$\pi$", r"$3\pi/2$", r"$2\pi$"]
    if axis == "x":
        ax.set_xticks(ticks, names)
        ax.set_xlabel(r"$\theta$")
    else:
        ax.set_yticks(ticks, names)
        ax.set_ylabel(r"$\theta$")


def _closed(traj, values):
    """Angles and values with the point ``2 pi`` appended (the curve closes on the circle)."""
    theta = np.append(traj.theta, 2 * np.pi)
    return theta, np.concatenate([values, values[..., :1]], axis=-1)


def plot_density_image(traj, *, label=None, ax=None, cmap="viridis", log=False, title=None,
                       colorbar=True):
    """Draw ``f(t, theta)`` as an image: angle across, time up.

    Parameters
    ----------
    traj : DensityTrajectory
        A run of :func:`usaav_edu.meanfield.solver.solve`.
    label : int, "marginal" or None
        For a labelled run: the index of the conditional density to draw, or the content
        marginal ``sum_l rho_l f_l`` (None or "marginal"); None without labels.
    ax : matplotlib axes or None
        Where to draw (None: a new figure).
    cmap : str
        A matplotlib colour map.
    log : bool
        Colour by ``log10 f`` (values below ``1e-12 max f`` are clipped), to show the tails.
    title : str or None
        The title (None: a default naming the model and the density).
    colorbar : bool
        Add a colour bar.

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    TypeError, ValueError
        For a bad argument, naming it.
    """
    traj = _run(traj)
    values, name = _series(traj, label)
    log, colorbar = c.flag("log", log), c.flag("colorbar", colorbar)
    title = c.text("title", title, optional=True)
    cmap = c.text("cmap", cmap)
    ax = _axes(ax)
    shown = values
    if log:
        floor = 1e-12 * float(np.max(values))
        shown = np.log10(np.maximum(values, floor))
    t = traj.t
    half = 0.5 * (t[1] - t[0]) if t.size > 1 else 0.5
    image = ax.imshow(shown, origin="lower", aspect="auto", interpolation="nearest", cmap=cmap,
                      extent=(0.0, 2 * np.pi, t[0] - half, t[-1] + half))
    _angle_ticks(ax)
    ax.set_ylabel("$t$")
    if colorbar:
        bar = ax.figure.colorbar(image, ax=ax)
        bar.set_label(rf"$\log_{{10}} {name}$" if log else f"${name}(t, \\theta)$")
    ax.set_title(title if title is not None else f"{traj.model.name}: ${name}(t, \\theta)$")
    return ax


def plot_density_curves(traj, times=None, *, label=None, ax=None, title=None, legend=True):
    """Draw ``f(t, .)`` as curves at chosen times, darker for later times.

    Parameters
    ----------
    traj : DensityTrajectory
        A run of :func:`usaav_edu.meanfield.solver.solve`.
    times : sequence of float or None
        Times in ``[0, traj.t[-1]]``; each is drawn at the nearest frame.  None: five frames
        from the first to the last.
    label, ax, title
        As for :func:`plot_density_image`.
    legend : bool
        Add a legend of the times.

    Returns the axes drawn on; a bad argument raises TypeError or ValueError naming it.
    """
    import matplotlib

    traj = _run(traj)
    values, name = _series(traj, label)
    legend = c.flag("legend", legend)
    title = c.text("title", title, optional=True)
    if times is None:
        frames = np.unique(np.linspace(0, traj.t.size - 1, min(5, traj.t.size)).round().astype(int))
    else:
        if isinstance(times, (str, bytes)) or np.ndim(times) != 1 or len(times) < 1:
            raise TypeError("times must be a non-empty sequence of times or None")
        frames = [traj.frame(v.real_scalar(f"times[{k}]", s)) for k, s in enumerate(times)]
    ax = _axes(ax)
    shades = matplotlib.colormaps["viridis"](np.linspace(0.85, 0.0, len(frames)))
    for shade, frame in zip(shades, frames, strict=True):
        theta, y = _closed(traj, values[frame])
        ax.plot(theta, y, color=shade, lw=1.6, label=f"$t = {traj.t[frame]:.3g}$")
    _angle_ticks(ax)
    ax.set_ylabel(f"${name}(t, \\theta)$")
    ax.set_xlim(0, 2 * np.pi)
    ax.set_ylim(bottom=min(0.0, float(np.min(values))))
    if legend:
        ax.legend(frameon=False, fontsize="small")
    ax.set_title(title if title is not None else f"{traj.model.name}: ${name}$ at chosen times")
    return ax


def plot_conditionals(traj, time=None, *, ax=None, marginal=True, gauge=False, title=None,
                      legend=True):
    """Draw the conditional densities of a labelled run at one time, one colour per label.

    Parameters
    ----------
    traj : DensityTrajectory
        A run of :func:`usaav_edu.meanfield.solver.solve` with labels.
    time : float or None
        A time in ``[0, traj.t[-1]]`` (the nearest frame is drawn); None: the last frame.
    ax : matplotlib axes or None
        Where to draw (None: a new figure).
    marginal : bool
        Also draw the content marginal ``sum_l rho_l f_l`` (black, dashed).
    gauge : bool
        Draw the densities of the gauge angle ``theta + omega xi_l`` instead of the content
        angle (where, for RoPE, every conditional collapses to the same point).
    title : str or None
        The title (None: a default).
    legend : bool
        Add a legend naming the labels ``xi_l``.

    Returns the axes drawn on; a bad argument, or a run without labels, raises TypeError or
    ValueError naming it.
    """
    import matplotlib

    traj = _run(traj)
    if not traj.labelled:
        raise ValueError("traj must be a run with labels (use plot_density_curves otherwise)")
    marginal, gauge = c.flag("marginal", marginal), c.flag("gauge", gauge)
    legend = c.flag("legend", legend)
    title = c.text("title", title, optional=True)
    frame = traj.t.size - 1 if time is None else traj.frame(time)
    dens = traj.in_gauge()[frame] if gauge else traj.f[frame]
    ax = _axes(ax)
    colors = matplotlib.colormaps["twilight"](np.linspace(0.05, 0.95, dens.shape[0]))
    for ell, (color, row) in enumerate(zip(colors, dens, strict=True)):
        theta, y = _closed(traj, row)
        ax.plot(theta, y, color=color, lw=1.3, label=rf"$\xi = {traj.xi[ell]:.3g}$")
    if marginal:
        mix = np.einsum("l,lm->m", traj.rho, dens)
        theta, y = _closed(traj, mix)
        ax.plot(theta, y, color="black", lw=1.8, ls="--",
                label="gauge mixture" if gauge else "content marginal")
    _angle_ticks(ax)
    if gauge:
        ax.set_xlabel(r"gauge angle $\theta + \omega \xi$")
    ax.set_ylabel(r"$f_\xi$")
    ax.set_xlim(0, 2 * np.pi)
    if legend:
        ax.legend(frameon=False, fontsize="x-small", ncol=2 if dens.shape[0] > 6 else 1)
    where = "gauge" if gauge else "content"
    ax.set_title(title if title is not None
                 else f"{traj.model.name}: conditionals in the {where} angle, "
                      f"$t = {traj.t[frame]:.3g}$")
    return ax


# ---------------------------------------------------------------------- the sphere
def sphere_run(traj, name: str = "traj", what: str = "this view"):
    """``traj`` checked: a :class:`DensityTrajectory` on the sphere whose coefficients have the
    degree of its grid.  A run on the circle is a ValueError naming the circle's views."""
    if not isinstance(traj, DensityTrajectory):
        raise TypeError(f"{name} must be a DensityTrajectory (usaav_edu.meanfield.solve), got "
                        f"{type(traj).__name__}")
    if not traj.on_sphere:
        raise ValueError(f"{name} is a density run on the circle (grid=None), and {what} draws "
                         f"runs on the sphere (solve(..., grid=sphere_grid(lmax))); draw a run on "
                         f"the circle with {CIRCLE_VIEWS}")
    grid: Any = traj.grid                       # a SphereGrid on the sphere
    lmax = int(grid.lmax)
    labels = () if traj.xi is None else (traj.xi.size,)
    shape = (traj.t.size, *labels, harmonics.n_coefficients(lmax))
    if np.shape(traj.coefficients) != shape:
        raise ValueError(f"{name}.coefficients must have shape {shape} (frames, labels, the "
                         f"coefficients of degree <= lmax = {lmax}), got "
                         f"{np.shape(traj.coefficients)}")
    if traj.t.size < 1:
        raise ValueError(f"{name} has no frames")
    return traj


def sphere_series(traj, label):
    """``(F, nc)`` coefficients of one label, the marginal, or the run without labels, and the
    name of the density in TeX."""
    coefs = np.asarray(traj.coefficients)
    if not traj.labelled:
        if label is not None:
            raise ValueError("label must be None for a run without labels")
        return coefs, "f"
    if isinstance(label, str) and label != "marginal":
        raise ValueError(f"label must be the index of a label (0 to {traj.xi.size - 1}), "
                         f"'marginal' or None, got {label!r}")
    if label is None or label == "marginal":
        return np.einsum("l,flk->fk", np.asarray(traj.rho, dtype=float), coefs), r"\bar f"
    label = c.bounded_integer("label", label, 0, traj.xi.size - 1)
    return coefs[:, label], f"f_{{{label}}}"


def _frame_list(traj, frames, times, default: int):
    """Frame indices (from 0) of ``frames`` (indices) or ``times`` (nearest frames)."""
    n_frames = traj.t.size
    if frames is not None and times is not None:
        raise ValueError("give frames (indices) or times, not both")
    if frames is None and times is None:
        return np.unique(np.linspace(0, n_frames - 1, min(default, n_frames)).round()
                         ).astype(int)
    chosen = frames if frames is not None else times
    what = "frames" if frames is not None else "times"
    if isinstance(chosen, (str, bytes)) or np.ndim(chosen) != 1 or len(chosen) < 1:
        raise TypeError(f"{what} must be a non-empty sequence of "
                        f"{'frame indices' if frames is not None else 'times'} or None")
    if frames is not None:
        return np.array([c.frame(f, n_frames) % n_frames for f in chosen], dtype=int)
    return np.array([traj.frame(v.real_scalar(f"times[{k}]", s)) for k, s in enumerate(chosen)],
                    dtype=int)


def sphere_density_at(traj, points, *, frames=None, label=None):
    r"""The density of frames of a run on the sphere at unit vectors, from its coefficients.

    .. math::

        f(t_k, x_j) = \sum_{l \le L} \sum_{|m| \le l} f_{lm}(t_k)\, Y_{lm}(x_j)

    by :func:`usaav_edu.meanfield.harmonics.evaluate`, so nothing is solved again: these are
    the values of the function the solver holds, at any points (not only those of its grid).

    Parameters
    ----------
    traj : DensityTrajectory
        A run of :func:`usaav_edu.meanfield.solver.solve` on the sphere (``grid=sphere_grid(lmax)``).
    points : array_like
        ``(n, 3)`` unit vectors, in content coordinates.
    frames : sequence of int or None
        Frame indices (negative counts from the end); None: every frame.
    label : int, "marginal" or None
        For a labelled run: the index of the conditional density, or the content marginal
        :math:`\bar f = \sum_l \rho_l f_l` (None or "marginal"); None without labels.

    Returns
    -------
    ndarray
        ``(k, n)`` real values, one row per frame.

    Raises
    ------
    TypeError, ValueError
        For a bad argument, naming it; a run on the circle (its views are named).

    Examples
    --------
    >>> import numpy as np
    >>> import usaav_edu as ue
    >>> from usaav_edu.widgets.density_plots import sphere_density_at
    >>> grid = ue.meanfield.sphere_grid(8)
    >>> f0 = (1.0 + 0.5 * grid.points[:, 2]) / (4.0 * np.pi)
    >>> usa = ue.models.usa(beta=1.0)
    >>> run = ue.meanfield.solve(usa, f0, 0.01, grid=grid, n_frames=2)
    >>> values = sphere_density_at(run, [[0.0, 0.0, 1.0]], frames=[0])
    >>> round(float(values[0, 0] * 4.0 * np.pi), 12)
    1.5
    """
    traj = sphere_run(traj, what="sphere_density_at")
    coefs, _ = sphere_series(traj, label)
    points = c.points("points", points, d=3)
    idx = (np.arange(traj.t.size) if frames is None
           else _frame_list(traj, frames, None, traj.t.size))
    lmax = traj.grid.lmax
    return np.stack([harmonics.evaluate(coefs[i], lmax, points) for i in idx])


def _map_points(resolution: int):
    """Pixel centres of the equal-area map: ``(nz, nphi, 3)`` unit vectors for ``nz`` rows of
    ``cos theta`` (south up to north) and ``nphi ~ pi nz`` longitudes from 0."""
    nz = resolution
    nphi = int(round(np.pi * nz))
    z = -1.0 + (np.arange(nz) + 0.5) * (2.0 / nz)
    phi = (np.arange(nphi) + 0.5) * (2.0 * np.pi / nphi)
    r = np.sqrt(1.0 - z ** 2)[:, None]
    return np.stack([r * np.cos(phi)[None], r * np.sin(phi)[None],
                     np.broadcast_to(z[:, None], (nz, nphi))], axis=-1)


def _view_frame(centre):
    """Unit vectors ``(e1, e2, centre)``: east and north on the disk seen from ``centre``."""
    north = np.array([0.0, 0.0, 1.0])
    east = np.cross(north, centre)
    if np.linalg.norm(east) < 1e-9:            # seen from a pole: x to the right
        east = np.array([1.0, 0.0, 0.0])
    east /= np.linalg.norm(east)
    return east, np.cross(centre, east), centre


def _disk_points(resolution: int, frame):
    """Pixel centres of the orthographic disk: ``(r, r, 3)`` points (NaN outside the disk)."""
    e1, e2, centre = frame
    u = -1.0 + (np.arange(resolution) + 0.5) * (2.0 / resolution)
    uu, vv = np.meshgrid(u, u)                 # rows: v from bottom (-1) to top (+1)
    rr = uu ** 2 + vv ** 2
    h = np.sqrt(np.clip(1.0 - rr, 0.0, None))
    pts = uu[..., None] * e1 + vv[..., None] * e2 + h[..., None] * centre
    pts[rr > 1.0] = np.nan
    return pts


def _guides(ax, frame):
    """The equator and the meridian of longitude 0 on the visible half of the disk."""
    from matplotlib.patches import Circle

    e1, e2, centre = frame
    s = np.linspace(0.0, 2.0 * np.pi, 361)
    equator = np.stack([np.cos(s), np.sin(s), 0.0 * s], axis=1)
    meridian = np.stack([np.sin(s), 0.0 * s, np.cos(s)], axis=1)[:181]
    for curve in (equator, meridian):
        seen = np.where(curve @ centre >= 0.0, 1.0, np.nan)
        ax.plot(seen * (curve @ e1), seen * (curve @ e2), color="white", lw=0.6, alpha=0.7)
    ax.add_patch(Circle((0.0, 0.0), 1.0, fill=False, lw=0.8, color="0.3"))


def _centre(traj, label, centre, last):
    """The direction the orthographic disks are seen from: ``centre`` checked, or the grid
    point of the largest value of the frame ``last``."""
    if centre is None:
        coefs, _ = sphere_series(traj, label)
        values = harmonics.evaluate(coefs[last], traj.grid.lmax, traj.grid.points)
        return np.array(traj.grid.points[int(np.argmax(values))], dtype=float)
    vec = v.float_array("centre", centre)
    if vec.shape != (3,) or not np.all(np.isfinite(vec)) or np.linalg.norm(vec) == 0.0:
        raise ValueError(f"centre must be a finite non-zero vector of R^3 (the direction the "
                         f"sphere is seen from), got {c.shown(centre)}")
    return vec / np.linalg.norm(vec)


def _panel_images(traj, coefs, idx, projection, resolution, frame):
    """``(k, rows, cols)`` values of the panels (NaN outside the orthographic disk)."""
    pts = _map_points(resolution) if projection == "map" else _disk_points(resolution, frame)
    flat = pts.reshape(-1, 3)
    inside = np.all(np.isfinite(flat), axis=1)
    out = np.full((len(idx), flat.shape[0]), np.nan)
    for j, i in enumerate(idx):
        out[j, inside] = harmonics.evaluate(coefs[i], traj.grid.lmax, flat[inside])
    return out.reshape((len(idx),) + pts.shape[:2])


def _map_axes(ax, row: bool, first: bool):
    ticks = np.pi * np.arange(5) / 2
    names = ["$0$", r"$\pi/2$", r"$\pi$", r"$3\pi/2$", r"$2\pi$"]
    ax.set_xticks(ticks, names if row else [])
    ax.set_yticks([-1.0, 0.0, 1.0], ["$-1$", "$0$", "$1$"] if first else [])
    if row:
        ax.set_xlabel(r"longitude $\varphi$")
    if first:
        ax.set_ylabel(r"$\cos\theta$")


def sphere_density_map(traj, frames=None, *, times=None, label=None, projection="map",
                       centre=None, resolution=120, cmap="viridis", log=False, ncols=None,
                       title=None, colorbar=True):
    r"""Small multiples of a density run on the sphere at a few frames, with one colour bar.

    Each panel is the density :math:`f(t_k, \cdot)` of one frame, evaluated from the run's
    coefficients at the centres of its pixels (:func:`sphere_density_at`; nothing is solved
    again), as one raster image, on a colour scale shared by all panels:

    * ``projection="map"``: the equal-area cylindrical map
      :math:`(\varphi, \cos\theta)`, longitude :math:`\varphi \in [0, 2\pi)` across and
      :math:`z = \cos\theta \in [-1, 1]` up, at equal scales; since
      :math:`d\sigma = d\varphi\, dz`, equal areas of the sphere are equal areas of the map
      (a cluster's size is read truly, wherever it sits);
    * ``projection="orthographic"``: the hemisphere seen from far along ``centre``, north up,
      with the visible equator and meridian of longitude 0 drawn as thin white lines.

    Parameters
    ----------
    traj : DensityTrajectory
        A run of :func:`usaav_edu.meanfield.solver.solve` on the sphere (``grid=sphere_grid(lmax)``).
    frames : sequence of int or None
        Frame indices to draw, one panel each; None: four frames (fewer for a shorter run)
        equally spaced from the first to the last.
    times : sequence of float or None
        Instead of ``frames``: times in ``[0, traj.t[-1]]``, each drawn at the nearest frame.
    label : int, "marginal" or None
        For a labelled run: the index of the conditional density, or the content marginal
        :math:`\bar f = \sum_l \rho_l f_l` (None or "marginal"); None without labels.
    projection : {"map", "orthographic"}
        How the sphere is laid flat (above).
    centre : array_like or None
        ``(3,)`` the direction the orthographic panels are seen from (any length); None: the
        point of the solver's grid where the last panel's density is largest.
    resolution : int
        Pixels of a panel from bottom to top (16 to 1024); a map is about ``pi`` times as wide.
    cmap : str
        A matplotlib colour map.
    log : bool
        Colour by :math:`\log_{10} f`, clipped at ``LOG_FLOOR`` (1e-4) times the largest value
        shown, to show both a spread start and a collapsed end.
    ncols : int or None
        Panels per row (None: up to 4 disks, or 2 maps, per row).
    title : str or None
        The figure's title (None: a default naming the model and the density).
    colorbar : bool
        Add one colour bar for all panels.

    Returns
    -------
    matplotlib.figure.Figure
        One axes per panel (titled with its time), plus the colour bar's.

    Raises
    ------
    TypeError, ValueError
        For a bad argument, naming it; a run on the circle (its views are named).

    Examples
    --------
    >>> import numpy as np
    >>> import usaav_edu as ue
    >>> grid = ue.meanfield.sphere_grid(8)
    >>> f0 = (1.0 + 0.5 * grid.points[:, 2]) / (4.0 * np.pi)
    >>> usa = ue.models.usa(beta=1.0)
    >>> run = ue.meanfield.solve(usa, f0, 0.2, grid=grid, n_frames=3)
    >>> fig = ue.widgets.sphere_density_map(run, resolution=24)
    >>> len(fig.axes)   # three panels and the colour bar
    4
    """
    import matplotlib
    import matplotlib.pyplot as plt

    traj = sphere_run(traj, what="sphere_density_map")
    coefs, name = sphere_series(traj, label)
    idx = _frame_list(traj, frames, times, 4)
    if not isinstance(projection, str) or projection not in PROJECTIONS:
        raise ValueError(f"projection must be one of {PROJECTIONS}, got {c.shown(projection)}")
    resolution = c.bounded_integer("resolution", resolution, 16, 1024)
    cmap = c.text("cmap", cmap)
    if cmap not in matplotlib.colormaps:
        raise ValueError(f"cmap must be the name of a matplotlib colour map such as 'viridis', "
                         f"got {cmap!r}")
    log, colorbar = c.flag("log", log), c.flag("colorbar", colorbar)
    title = c.text("title", title, optional=True)
    is_map = projection == "map"
    per_row = min(len(idx), 2 if is_map else 4)
    ncols = per_row if ncols is None else c.bounded_integer("ncols", ncols, 1, len(idx))
    frame = None if is_map else _view_frame(_centre(traj, label, centre, idx[-1]))
    images = _panel_images(traj, coefs, idx, projection, resolution, frame)
    shown = images
    if log:
        floor = LOG_FLOOR * float(np.nanmax(images))
        shown = np.log10(np.maximum(images, floor))
    nrows = -(-len(idx) // ncols)
    width, height = (3.6, 3.6 / np.pi + 0.55) if is_map else (2.3, 2.45)
    fig = plt.figure(figsize=(width * ncols + (0.9 if colorbar else 0.0), height * nrows + 0.5),
                     layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax in axes.ravel()[len(idx):]:
        fig.delaxes(ax)
    panels = list(axes.ravel()[:len(idx)])
    limits = dict(vmin=float(np.nanmin(shown)), vmax=float(np.nanmax(shown)))
    for j, (ax, i) in enumerate(zip(panels, idx, strict=True)):
        extent = (0.0, 2 * np.pi, -1.0, 1.0) if is_map else (-1.0, 1.0, -1.0, 1.0)
        image = ax.imshow(shown[j], origin="lower", extent=extent, cmap=cmap,
                          interpolation="nearest", aspect="equal", **limits)
        ax.set_title(f"$t = {traj.t[i]:.3g}$", fontsize="medium")
        if is_map:
            _map_axes(ax, row=j >= len(idx) - ncols, first=j % ncols == 0)
        else:
            _guides(ax, frame)
            ax.set_axis_off()
    if colorbar:
        bar = fig.colorbar(image, ax=panels, shrink=0.9)
        bar.set_label(rf"$\log_{{10}} {name}$" if log else f"${name}(t, x)$")
    fig.suptitle(title if title is not None else
                 f"{traj.model.name}: ${name}$ on $S^2$ ({projection}, $L = {traj.grid.lmax}$)")
    return fig
