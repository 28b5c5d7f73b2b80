"""Matplotlib views of a density run on the circle (:func:`usaav_edu.meanfield.solver.solve`).

* :func:`plot_density_image`: ``f(t, theta)`` as a space-time image (time up, angle across);
* :func:`plot_density_curves`: ``f(t, .)`` as curves at chosen times;
* :func:`plot_conditionals`: the conditional densities of a labelled run at one time, one
  curve per label, with the content marginal.

The image is one raster (``imshow``), so an SVG or PDF of it stays small; curves are vector
lines.  Axis labels are typeset as mathematics (``$\\theta$``, ``$t$``, ``$f(t, \\theta)$``).
Views draw what they are given and integrate nothing.
"""
from __future__ import annotations

import numpy as np

from .. import _validate as v
from ..meanfield.solver import DensityTrajectory
from . import _checks as c

__all__ = ["plot_density_image", "plot_density_curves", "plot_conditionals"]


def _run(traj):
    if not isinstance(traj, DensityTrajectory):
        raise TypeError(f"traj must be a DensityTrajectory (usaav_edu.meanfield.solver.solve), got "
                        f"{type(traj).__name__}")
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
