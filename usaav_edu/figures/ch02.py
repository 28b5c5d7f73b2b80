"""Figures of chapter 2 (clusters that linger: metastability), one call per figure.

Each function takes the runs or the measurements the chapter made and returns the Matplotlib
figure or the widget; none of them integrates.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ..widgets.explorer import Explorer

#: the explorer's planned share of the page's widget state (planned costs run high: 9 runs of 32
#: tokens embed about 1.5 MB; with the ~0.9 MB player of the first run the page stays under 3 MB)
EXPLORER_BYTES = 2_200_000


def explorer(runs: dict):
    """The explorer over ``beta``: ``runs`` maps each ``beta`` to its trajectory (one model,
    one start, one ``t_max``); the whole explorer stays within :data:`EXPLORER_BYTES` of
    embedded state."""
    runs = dict(sorted(runs.items()))  # the slider runs left to right in increasing beta
    first = next(iter(runs.values()))
    caption = (f"{first.model.name.upper()}, {first.n} tokens: pick beta; at large beta "
               f"several clusters are still waiting at t = {first.t[-1]:g}")
    return Explorer(runs, "beta", max_bytes=EXPLORER_BYTES, caption=caption)


def staircases(runs: dict, betas, seed):
    """Cluster count (left) and energy over its maximum (right) against ``log t``, one curve
    per ``beta`` in ``betas``, for the start ``seed``.  ``runs`` maps ``(beta, seed)`` to
    ``(traj, counts)``."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    traj = None
    for k, beta in enumerate(betas):
        traj, counts = runs[beta, seed]
        label = rf"$\beta = {beta:g}$"
        axes[0].step(traj.t[1:], np.asarray(counts)[1:], where="post", color=f"C{k}",
                     label=label)
        axes[1].plot(traj.t[1:], traj.energy[1:] / (np.exp(beta) / (2 * beta)), color=f"C{k}",
                     label=label)
    if traj is None:
        raise ValueError(f"betas must name at least one beta, got {betas!r}")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel(r"$t$ (log scale)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("number of clusters")
    axes[0].set_yscale("log")
    axes[1].set_ylabel(r"$E(t) \,/\, (e^\beta / 2\beta)$")
    fig.suptitle(f"staircases, SA, $n = {traj.n}$, $d = {traj.d}$, seed {seed}", fontsize=10)
    fig.tight_layout()
    return fig


def _against_beta(ax, ylabel: str, title: str):
    """Label a plot against ``beta``: axis labels, legend, grid and a small title."""
    ax.set_xlabel(r"$\beta$")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    ax.set_title(title, fontsize=10)


def merge_times(merge: dict, n: int, d: int = 2):
    """Merging time of two clusters against ``beta`` on a log scale: particles (dots), the
    scalar reduction (line) and ``e^beta / (2 beta)`` (dashed).  ``merge`` maps ``beta`` to
    ``(t_particles, t_reduction)``."""
    bs = np.array(sorted(merge))
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.semilogy(bs, [merge[b][0] for b in bs], "o", label="particles (SA)")
    ax.semilogy(bs, [merge[b][1] for b in bs], "-", label="scalar reduction")
    ax.semilogy(bs, np.exp(bs) / (2 * bs), "--", label=r"$e^\beta / 2\beta$")
    _against_beta(ax, r"merging time $T$ (log scale)",
                  f"two clusters at a right angle, $n = {n}$, $d = {d}$")
    return fig


def lifetimes(betas, collapse, seeds, fit, fit_all, n: int, d: int = 2):
    """``log T_1`` against ``beta``, one colour per seed (``collapse``: beta by seed), with the
    two straight-line fits ``fit`` (metastable betas, dashed) and ``fit_all`` (dotted)."""
    betas = np.asarray(betas, dtype=float)
    collapse = np.asarray(collapse, dtype=float)
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for j, s in enumerate(seeds):
        ax.plot(betas, np.log(collapse[:, j]), "o", ms=4, label=f"seed {s}")
    ax.plot(betas, np.polyval(fit, betas), "k--",
            label=rf"fit over $\beta = 3, \dots, 5$: slope {fit[0]:.2f}")
    ax.plot(betas, np.polyval(fit_all, betas), "k:",
            label=rf"fit over $\beta = {betas[0]:g}, \dots, {betas[-1]:g}$: slope {fit_all[0]:.2f}")
    _against_beta(ax, r"$\log T_1$ ($T_1$: time to one cluster)",
                  f"SA, $n = {n}$, $d = {d}$, $x_0$ uniform, seeds {tuple(seeds)}")
    return fig


def lifetimes_sweep(betas, t_one, median, low, high, fit, coverage: float, n: int, d: int = 2):
    """``T_1`` of every seed (grey, censored runs left out) with the median and its interval
    ``[low, high]`` per ``beta``, and the fit of ``log median`` (dashed)."""
    betas = np.asarray(betas, dtype=float)
    t_one, median = np.asarray(t_one, dtype=float), np.asarray(median, dtype=float)
    low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    n_seeds = t_one.shape[1]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for i, b in enumerate(betas):
        done = np.isfinite(t_one[i])
        ax.plot((b + np.linspace(-0.15, 0.15, n_seeds))[done], t_one[i][done], ".",
                color="0.7", ms=3)
    ax.errorbar(betas, median, yerr=[median - low, high - median], fmt="o", color="C0",
                capsize=3, label=f"median, {100 * coverage:.0f}% interval")
    ax.plot(betas, np.exp(np.polyval(fit, betas)), "k--",
            label=rf"fit over $\beta = 3, 4, 5$: slope {fit[0]:.2f}")
    ax.set_yscale("log")
    _against_beta(ax, r"$T_1$ (log scale)",
                  f"SA, $n = {n}$, $d = {d}$, {n_seeds} seeds (grey: one seed)")
    return fig
