"""Figures of chapter 1 (tokens as particles on the sphere), one call per figure.

Each function takes trajectories or the series the chapter computed from them and returns the
Matplotlib figure; none of them integrates.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ..analysis.reductions import order_parameter
from ..widgets.explorer import Explorer
from ..widgets.mpl import plot_energy

#: the beta explorer's planned share of the page's widget state (planned costs run high: 8 runs
#: of 32 tokens embed about 1.6 MB; with the ~1.1 MB of the page's other views the page stays
#: under the 3 MB a page may carry)
EXPLORER_BYTES = 1_900_000


#: the names of Matplotlib's first colours C0, C1, ... as a caption calls them
_COLOR_NAMES = ("blue", "orange", "green", "red", "purple", "brown")


def _subtitle(traj) -> str:
    seed = "" if traj.seed is None else f", seed {traj.seed}"
    return rf"$n = {traj.n}$, $d = {traj.d}$, $\beta = {traj.model.beta:g}${seed}"


def beta_explorer(runs: dict):
    """The explorer over ``beta``: ``runs`` maps each ``beta`` to its trajectory (one model, one
    start, one ``t_max``), shown with the slider increasing left to right."""
    runs = dict(sorted(runs.items()))
    first = next(iter(runs.values()))
    caption = (f"{first.model.name.upper()}, {first.n} tokens from one start: pick beta, then "
               f"press play; every run ends collapsed by t = {first.t[-1]:g}")
    return Explorer(runs, "beta", max_bytes=EXPLORER_BYTES, caption=caption)


def energy(traj, bound: float):
    """The energy ``E_beta(t)`` of one run against time, with the bound ``e^beta/(2 beta)``
    dashed."""
    ax = plot_energy(traj, bound=bound)
    ax.set_title(f"{traj.model.name.upper()}, " + _subtitle(traj), fontsize=10)
    return ax.figure


def equiangular(runs: dict):
    """The common inner product ``r(t)``: particles (dots) against the scalar equation (lines).

    ``runs`` maps ``beta`` to ``(traj, inner, r_ode)``: the particle run, its ``(mean, min,
    max)`` inner products per frame (``(F, 3)``) and the scalar solution at the frame times.
    """
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    n = None
    for k, (beta, (traj, inner, r_ode)) in enumerate(runs.items()):
        color, n = f"C{k}", traj.n
        ax.plot(traj.t, r_ode, color=color, lw=2, alpha=0.5,
                label=rf"scalar ODE, $\beta = {beta:g}$")
        ax.plot(traj.t[::4], np.asarray(inner)[::4, 0], "o", ms=3, color=color,
                label=rf"particles, $\beta = {beta:g}$")
    ax.set_xlabel(r"$t$")
    ax.set_ylabel(r"common inner product $r(t)$")
    ax.set_title(f"equiangular reduction, $n = d = {n}$", fontsize=10)
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    return fig


def circle(runs: dict, seed=None):
    """Tokens on the circle: the order parameter ``R(t)`` (left) and the unwrapped angles
    ``theta_i(t)`` (right).  ``runs`` maps ``beta`` to ``(traj, theta)``, the run and the
    angles ``(F, n)`` at its frame times."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    n = None
    for k, (beta, (traj, theta)) in enumerate(runs.items()):
        t, n = traj.t, np.shape(theta)[1]
        axes[0].plot(t, order_parameter(theta), color=f"C{k}", label=rf"$\beta = {beta:g}$")
        axes[1].plot(t, np.unwrap(theta, axis=0), lw=0.7, color=f"C{k}")
    axes[0].set_xlabel(r"$t$")
    axes[0].set_ylabel(r"order parameter $R(t)$")
    axes[0].legend(fontsize=8)
    axes[1].set_xlabel(r"$t$")
    axes[1].set_ylabel(r"$\theta_i(t)$ (unwrapped)")
    names = ", ".join(rf"$\beta = {b:g}$ ({_COLOR_NAMES[k]})" for k, b in enumerate(runs))
    axes[1].set_title("angles: " + names, fontsize=9)
    fig.suptitle(f"circle, $n = {n}$" + ("" if seed is None else f", seed {seed}"), fontsize=10)
    fig.tight_layout()
    return fig


def paths(runs: dict):
    """The path of every token on the sphere under each flow of ``runs`` (name -> trajectory,
    all from one start): solid for the first, dashed for the others, the start as black dots
    and each flow's collapse point as a large dot."""
    fig = plt.figure(figsize=(5.6, 5.2))
    ax = fig.add_subplot(projection="3d")
    first = next(iter(runs.values()))
    for k, (name, traj) in enumerate(runs.items()):
        color, ls = f"C{k}", "-" if k == 0 else "--"
        for i in range(traj.n):
            ax.plot(*traj.x[:, i].T, color=color, ls=ls, lw=1.0, label=name if i == 0 else None)
        ax.plot(*traj.final[:1].T, "o", color=color, ms=7)
    ax.plot(*first.x[0].T, "k.", ms=5, label="start")
    ax.set_box_aspect((1, 1, 1))
    ax.legend(fontsize=8)
    seed = "" if first.seed is None else f", seed {first.seed}"
    ax.set_title(rf"paths of {first.n} tokens under {' and '.join(runs)}, "
                 rf"$\beta = {first.model.beta:g}${seed}", fontsize=10)
    return fig


def contraction(runs: dict, deviation: dict, bound: float):
    """Two flows side by side: the largest distance of a token to the mean direction on a log
    scale (left) and the energies with the bound dashed (right).  ``runs`` maps a name to its
    trajectory, ``deviation`` the same name to the series of distances (one per frame)."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for name, traj in runs.items():
        axes[0].semilogy(traj.t, deviation[name], label=name)
        axes[1].plot(traj.t, traj.energy, label=name)
    axes[0].set_xlabel(r"$t$")
    axes[0].set_ylabel(r"$\max_i |x_i - \bar{x}|$ ($\bar{x}$: mean direction)")
    axes[0].legend(fontsize=8)
    axes[1].set_xlabel(r"$t$")
    axes[1].set_ylabel(r"energy $E_\beta(t)$")
    axes[1].legend(fontsize=8)
    axes[1].axhline(bound, color="k", ls="--", lw=0.8)
    first = next(iter(runs.values()))
    fig.suptitle(" vs ".join(runs) + ", " + _subtitle(first), fontsize=10)
    fig.tight_layout()
    return fig
