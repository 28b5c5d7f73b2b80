"""Figures of chapter 4 (RoPE: rotation orbits), one call per figure.

Each function takes trajectories (and what the chapter measured on them) and returns the
Matplotlib figure or the widget; none of them integrates.  Titles and labels are mathematics
(``$\\beta = 1$``), and every title names the run it shows (tokens, beta, omega, seed).
"""
from __future__ import annotations

import numpy as np

from ..analysis.maximizers import latitude_circle
from ..widgets.explorer import Explorer
from ..widgets.mpl import plot_energy, plot_sphere
from ..widgets.player import TrajectoryPlayer
from ..widgets.scene import SphereView
from ..widgets.twin import TwinView

#: the pole e_3 of the rotation axis, drawn as a target
NORTH_POLE = np.array([[0.0, 0.0, 1.0]])


def _omega(traj) -> float:
    """The frequency of a RoPE run in d = 3 (its gauge has one frequency)."""
    omegas = getattr(traj.model.gauge, "omegas", None)
    if not omegas:
        raise TypeError("the trajectory is not a RoPE run: its model's gauge has no frequencies")
    return float(omegas[0])


def run_title(traj) -> str:
    """``RoPE, $n = 64$, $\\beta = 1$, $\\omega = 1$, seed 1``: the run a figure shows."""
    seed = "" if traj.seed is None else f", seed {traj.seed}"
    return (rf"RoPE, $n = {traj.x.shape[1]}$, $\beta = {traj.model.beta:g}$, "
            rf"$\omega = {_omega(traj):g}${seed}")


def twin_view(traj, *, max_bytes: int = 600_000):
    """The contents ``x_i`` and the gauge coordinates ``y_i = R_{xi_i} x_i`` of one run, side
    by side on one time bar (a :class:`~usaav_edu.widgets.TwinView`)."""
    return TwinView(traj, duration=8.0, max_bytes=max_bytes)


def latitude_player(traj, height: float, *, max_bytes: int = 450_000):
    """The run played on the sphere with the latitude circle ``x_3 = height`` of its gauge
    point drawn in black (``max_bytes`` of page state: the chapter's page holds the twin view
    and an explorer too)."""
    player = TrajectoryPlayer(traj, duration=8.0, max_bytes=max_bytes, title="RoPE, d = 3")
    player.add_latitude_circle(float(height))
    return player


def energy_to_bound(traj, bound: float):
    """The energy ``E(t)`` of the run rising to the bound ``e^beta / (2 beta)`` (dashed)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.6, 4.2))
    plot_energy(traj, bound=bound, ax=ax)
    ax.set_title(run_title(traj), fontsize=10)
    return fig


def omega_explorer(runs: dict, *, max_bytes: int = 1_600_000, max_tokens: int = 16):
    """An :class:`~usaav_edu.widgets.Explorer` over the frequencies ``{omega: run}`` (the
    slider lists them in increasing order), each run a player of at most ``max_tokens`` of its
    tokens.  The defaults hold eight runs of 24 tokens, 16 of them drawn (each token of its own
    colour costs about 3.6 kB of page state), within the chapter's 3 MB page with its twin view,
    its player and two views."""
    omegas = sorted(runs)
    n = runs[omegas[0]].x.shape[1]
    return Explorer({w: runs[w] for w in omegas}, "omega", max_bytes=max_bytes,
                    max_tokens=max_tokens,
                    caption=(f"RoPE with {n} tokens at positions 2 pi i/n ({min(n, max_tokens)} "
                             f"drawn): pick omega, then press play"))


def pole_view(traj):
    """The last frame of a run with its trails and the north pole ``e_3`` as a target."""
    view = SphereView(traj, trails=True, title="the pole exception")
    view.add_targets(NORTH_POLE)
    return view


def law_view(traj, height: float):
    """The last frame of the run of the two-bump law, with its latitude circle."""
    view = SphereView(traj, title="two-bump law on the orbit")
    view.add_latitude_circle(float(height))
    return view


def metastability(runs: dict, counts_y: dict, counts_x: dict, snapshots, *, shown: float):
    """Three snapshots of the run ``runs[shown]`` and the cluster staircase of every run.

    ``snapshots`` lists ``(frame, heights)``: a frame of ``runs[shown]`` and the heights of its
    gauge clusters (each drawn as a black latitude circle).  The last panel plots, against
    ``t`` on log axes, the number of gauge clusters ``counts_y[beta]`` (steps) and of distinct
    heights of the tokens ``counts_x[beta]`` (circles, at frames evenly spread in ``log t``).
    """
    import matplotlib.pyplot as plt

    snapshots = list(snapshots)
    betas = sorted(runs)
    if shown not in runs:
        raise ValueError(f"shown={shown!r} is not one of the runs' betas {betas}")
    tr = runs[shown]
    fig = plt.figure(figsize=(14, 3.8))
    for p, (frame, heights) in enumerate(snapshots):
        heights = np.atleast_1d(np.asarray(heights, dtype=float))
        k = len(heights)
        ax = fig.add_subplot(1, len(snapshots) + 1, p + 1, projection="3d")
        plot_sphere(tr, frame=frame, ax=ax, legend=False,
                    title=f"$t = {tr.t[frame]:g}$: {k} gauge cluster{'s' if k > 1 else ''}",
                    curves=[latitude_circle(h, 256) for h in heights])
    ax = fig.add_subplot(1, len(snapshots) + 1, len(snapshots) + 1)
    marks = np.unique(np.geomspace(1, len(tr.t) - 1, 40).astype(int))
    for k, b in enumerate(betas):
        t, color = runs[b].t, f"C{k}"
        ax.step(t[1:], counts_y[b][1:], where="post", color=color,
                label=rf"$\beta = {b:g}$: clusters of $y$")
        ax.plot(t[marks], counts_x[b][marks], "o", ms=3, mfc="none", color=color,
                label=rf"$\beta = {b:g}$: heights of $x$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"$t$ (log scale)")
    ax.set_ylabel("count")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.suptitle(rf"RoPE metastability, $n = {tr.x.shape[1]}$, $d = 3$, "
                 rf"$\omega = {_omega(tr):g}$, seed {tr.seed}; spheres: $\beta = {shown:g}$, "
                 "black circles at the heights of the gauge clusters", fontsize=10)
    fig.tight_layout()
    return fig


def phase_histograms(traj, phases_start, phases_end, law, ks):
    """Histograms of the tokens' phases along the orbit at ``t = 0`` and at the end, over the
    target density ``law.pdf``; ``ks`` gives the two Kolmogorov-Smirnov statistics shown in
    the titles."""
    import matplotlib.pyplot as plt

    grid = np.linspace(0, 2 * np.pi, 400)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2), sharey=True)
    whens = ("$t = 0$", f"$t = {traj.t[-1]:g}$")
    for ax, ph, when, stat in zip(axes, (phases_start, phases_end), whens, ks, strict=True):
        ax.hist(ph, bins=32, range=(0, 2 * np.pi), density=True, color="#9ec5e8",
                edgecolor="white", label="phases of the tokens")
        ax.plot(grid, law.pdf(grid), color="black", label="target density")
        ax.set_xlabel(r"phase $\theta$ along the orbit")
        ax.set_title(f"{when}: KS = {stat:.3f}", fontsize=10)
    axes[0].legend(fontsize=8)
    fig.suptitle(run_title(traj), fontsize=10)
    fig.tight_layout()
    return fig
