"""Figures of chapter 10, beyond the paper's model: one call per figure.

Each function takes runs (:func:`usaav_edu.simulate`, ``usaav_edu.meanfield.solve``) or the
numbers measured on them and returns the Matplotlib figure; none of them simulates anything.
"""
from __future__ import annotations

import numpy as np


def _pyplot():
    import matplotlib.pyplot as plt

    return plt


def _angles(x):
    """Angles in [0, 2 pi) of points on the circle, ``(..., 2)``."""
    return np.mod(np.arctan2(x[..., 1], x[..., 0]), 2 * np.pi)


def unstable_modes(k, rate, traj, *, beta: float, seed: int, k_star: int):
    r"""The most unstable mode and the clusters it makes.

    Left, the predicted growth rates ``rate`` of the Fourier modes ``k`` of the uniform density
    (bars, the largest at ``k_star`` marked).  Right, the angles of the particles of ``traj``
    (a run on the circle) against time, one dot per particle and frame.  Returns the figure.
    """
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    ax = axes[0]
    colors = ["C3" if kk == k_star else "C0" for kk in k]
    ax.bar(k, rate, color=colors)
    ax.set_xlabel(r"Fourier mode $k$")
    ax.set_ylabel(r"growth rate $\lambda_k$")
    ax.set_title(rf"most unstable: $k^* = {k_star}$", fontsize=10)
    ax = axes[1]
    theta = _angles(traj.x)
    times = np.repeat(traj.t[:, None], theta.shape[1], axis=1)
    ax.plot(times.ravel(), theta.ravel(), ",", color="black", alpha=0.5)
    ax.set_xlabel(r"$t$")
    ax.set_ylabel(r"$\theta_i$")
    ax.set_ylim(0, 2 * np.pi)
    ax.set_title(rf"{traj.x.shape[1]} particles", fontsize=10)
    fig.suptitle(rf"SA on the circle, $\beta = {beta:g}$, seed {seed}", fontsize=10)
    fig.tight_layout()
    return fig


def mode_growth(t, amplitudes, k_star: int, rate: float):
    r"""The Fourier amplitudes of a density run against time (log scale), each mode a thin
    line, mode ``k_star`` thick with its predicted growth ``exp(rate t)`` dashed.

    ``amplitudes[f, k - 1]`` is the amplitude of mode ``k`` at time ``t[f]``.  Returns the
    figure."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for j in range(amplitudes.shape[1]):
        if j + 1 != k_star:
            ax.semilogy(t, amplitudes[:, j], color="0.6", lw=0.8)
    ax.semilogy(t, amplitudes[:, k_star - 1], color="C3", lw=2, label=rf"mode $k^* = {k_star}$")
    ax.semilogy(t, amplitudes[0, k_star - 1] * np.exp(rate * (t - t[0])), "--", color="black",
                lw=1, label=rf"$e^{{\lambda_{{k^*}} t}}$, $\lambda_{{k^*}} = {rate:.4f}$")
    ax.set_xlabel(r"$t$")
    ax.set_ylabel(r"$|\hat f_k(t)|$")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig


def causal_runs(runs: dict, *, beta: float):
    r"""Causal attention on the circle: for each decay ``lam`` of ``runs`` (a dict
    ``{lam: trajectory}``), the angles of the tokens against time, each token coloured by its
    position, the first token in black.  Returns the figure."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(runs), figsize=(3.4 * len(runs), 3.4), sharey=True)
    axes = np.atleast_1d(axes)
    for ax, (lam, traj) in zip(axes, runs.items(), strict=True):
        theta = np.unwrap(_angles(traj.x), axis=0)
        n = theta.shape[1]
        for i in range(n - 1, 0, -1):
            ax.plot(traj.t, theta[:, i], color=plt.cm.viridis(i / n), lw=0.7)
        ax.plot(traj.t, theta[:, 0], color="black", lw=2)
        ax.set_title(rf"$\lambda = {lam:g}$", fontsize=10)
        ax.set_xlabel(r"$t$")
    axes[0].set_ylabel(r"$\theta_i$ (unwrapped)")
    fig.suptitle(rf"causal SA on the circle, $\beta = {beta:g}$", fontsize=10)
    fig.tight_layout()
    return fig


def value_limits(finals: dict):
    r"""The last frames of runs on :math:`S^2` under several value matrices: ``finals`` maps
    a title to ``(x0, x_final)``; each panel shows the start (grey) and the end (red) projected
    on the plane of the first and third coordinates.  Returns the figure."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(finals), figsize=(3.4 * len(finals), 3.4))
    axes = np.atleast_1d(axes)
    circle = np.linspace(0, 2 * np.pi, 200)
    for ax, (title, (x0, xf)) in zip(axes, finals.items(), strict=True):
        ax.plot(np.cos(circle), np.sin(circle), color="0.8", lw=0.8)
        ax.plot(x0[:, 0], x0[:, 2], ".", color="0.6", ms=3, label="start")
        ax.plot(xf[:, 0], xf[:, 2], "o", color="C3", ms=5, label="end")
        ax.set_aspect("equal")
        ax.set_xlabel(r"$x_1$")
        ax.set_title(title, fontsize=10)
    axes[0].set_ylabel(r"$x_3$")
    axes[0].legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    return fig


def layer_norms(t, gaps: dict, *, beta: float, n: int):
    r"""Post-LN against pre-LN: ``gaps`` maps a label to ``(t_sim, gap_sim, gap_red)``, the
    measured :math:`1 - r` of a simulation at its frame times and that of the equiangular
    reduction at the times ``t``; left on semi-log axes, right on log-log axes with the
    slope :math:`-2` drawn.  Returns the figure."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for j, (label, (t_sim, gap_sim, gap_red)) in enumerate(gaps.items()):
        color = f"C{j}"
        for ax, plot in ((axes[0], "semilogy"), (axes[1], "loglog")):
            keep = gap_sim > 0
            getattr(ax, plot)(t_sim[keep], gap_sim[keep], "o", color=color, ms=3,
                              label=f"{label}: simulate")
            getattr(ax, plot)(t, gap_red, "-", color=color, lw=1,
                              label=f"{label}: reduction")
    late = t > 0.25 * t[-1]
    pre = list(gaps.values())[-1][2]
    axes[1].loglog(t[late], pre[late][0] * (t[late] / t[late][0]) ** -2.0, "--", color="black",
                   lw=1, label=r"slope $-2$")
    for ax in axes:
        ax.set_xlabel(r"$t$")
        ax.set_ylabel(r"$1 - r(t)$")
        ax.grid(alpha=0.3, which="both")
    axes[0].legend(fontsize=8)
    axes[1].legend(fontsize=8)
    fig.suptitle(rf"USA, equiangular start, $n = {n}$, $\beta = {beta:g}$", fontsize=10)
    fig.tight_layout()
    return fig


def noisy_kuramoto(r_theory, r_particles, r_density, r_of_sigma):
    """The order parameter against the noise: self-consistency, particles and density.

    Parameters
    ----------
    r_theory, r_particles, r_density : dict
        ``sigma -> r`` of the self-consistency equation, of the particles and of the density.
    r_of_sigma : callable
        ``sigma -> r``, the root of the self-consistency equation, drawn as a curve.

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    grid = np.linspace(0.05, 1.4, 200)
    ax.plot(grid, [r_of_sigma(s) for s in grid], color="0.3", lw=1.5,
            label="self-consistency")
    s = sorted(r_particles)
    ax.plot(s, [r_particles[k] for k in s], "o", ms=7, label="512 particles")
    ax.plot(s, [r_density[k] for k in s], "x", ms=9, mew=2, label="density solver")
    ax.axvline(1.0, color="0.6", ls=":", lw=1)
    ax.set_xlabel(r"noise $\sigma$")
    ax.set_ylabel(r"order parameter $r$")
    ax.set_title("noisy Kuramoto transition on the circle")
    ax.legend(frameon=False)
    fig.tight_layout()
    return fig
