"""Figures of chapter 9, the mean-field limit: one call per figure.

Each function takes density runs (``usaav_edu.meanfield.solver.solve``) or measured distances and
returns the Matplotlib figure; none of them solves or simulates anything.
"""
from __future__ import annotations

import numpy as np

from ..widgets.density_plots import plot_conditionals, plot_density_curves, plot_density_image


def _pyplot():
    import matplotlib.pyplot as plt

    return plt


def density_run(run, *, beta: float, n_snapshots: int = 5):
    r"""A density run on the circle: $f(t,\theta)$ as an image (angle across, time up) and
    ``n_snapshots`` curves at equally spaced times.  Returns the figure."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    plot_density_image(run, ax=axes[0], title=rf"USA, $\beta = {beta:g}$")
    plot_density_curves(run, times=np.linspace(run.t[0], run.t[-1], n_snapshots), ax=axes[1],
                        title="snapshots")
    fig.tight_layout()
    return fig


def rates(w1: dict, slope: dict, *, theta, f_end, angles, beta: float, t_end: float,
          seed: int):
    r"""Particles against the density: left, the histogram of ``angles`` (the largest
    quantile run) over the density ``f_end`` on the grid ``theta``; right, $W_1$ against $n$
    on log-log axes, every draw as a dot, the means joined, with the fitted ``slope`` of
    each kind and the theory's slopes ($-\frac12$ random, $-1$ quantile) dashed.

    ``w1[kind][n]`` is the list of distances measured for ``n`` particles of ``kind``
    (``"random"`` or ``"quantile"``).  Returns the figure."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    ax = axes[0]
    ax.hist(np.mod(angles, 2 * np.pi), bins=64, range=(0, 2 * np.pi), density=True,
            color="#9ec5e8", label=rf"${len(angles)}$ particles (quantile start)")
    ax.plot(theta, f_end, color="black", label=r"density $f(t_{\rm end})$")
    ax.set_xlabel(r"$\theta$")
    ax.set_title(rf"$t = {t_end:g}$", fontsize=10)
    ax.legend(fontsize=8)
    ax = axes[1]
    for kind, color, theory in (("random", "C0", -0.5), ("quantile", "C1", -1)):
        n_k = np.array(sorted(w1[kind]))
        means = np.array([np.mean(w1[kind][n]) for n in n_k])
        for n in n_k:
            ax.loglog([n] * len(w1[kind][n]), w1[kind][n], ".", color=color, alpha=0.4)
        ax.loglog(n_k, means, "o-", color=color,
                  label=rf"{kind}: fitted slope ${slope[kind]:.2f}$")
        ax.loglog(n_k, means[0] * (n_k / n_k[0]) ** theory, "--", color=color, lw=1,
                  label=rf"theory: slope ${theory:g}$")
    ax.set_xlabel(r"$n$")
    ax.set_ylabel(r"$W_1(\mu_n(t), f(t))$")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    fig.suptitle(rf"USA on the circle, $\beta = {beta:g}$, $t = {t_end:g}$, seed {seed}",
                 fontsize=10)
    fig.tight_layout()
    return fig


def conditional_diracization(cond, plain):
    r"""Left, the conditional densities $f_l$ of the labelled run ``cond`` and its marginal
    $\bar f$ at its last frame; middle, snapshots of the unlabelled run ``plain``; right, the
    peaks $\max_\theta$ of the smallest conditional, of the marginal and of the plain density
    against time (log scale).  Returns the figure."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    plot_conditionals(cond, ax=axes[0], legend=False,
                      title=rf"RoPE, $t = {cond.t[-1]:.2f}$: $f_l$ and $\bar f$")
    plot_density_curves(plain, times=np.linspace(0, plain.t[-1], 4), ax=axes[1],
                        title=rf"plain USA, $t \leq {plain.t[-1]:.2f}$")
    ax = axes[2]
    ax.semilogy(cond.t, cond.f.max(axis=2).min(axis=1), color="C0",
                label=r"RoPE: smallest peak of an $f_l$")
    ax.semilogy(cond.t, cond.marginal.max(axis=1), color="black", ls="--",
                label=r"RoPE: peak of the marginal $\bar f$")
    ax.semilogy(plain.t, plain.f.max(axis=1), color="C3", label="plain USA: peak of $f$")
    ax.set_xlabel(r"$t$")
    ax.set_ylabel(r"$\max_\theta$ of the density")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
