"""Figures of chapter 7, the spectral dichotomy: one call per figure.

Each function takes trajectories or diagnostics computed by the chapter and returns the
Matplotlib figure or the widget; none of them integrates anything.
"""
from __future__ import annotations

import numpy as np

from ..analysis.spectral import top_frequency
from ..widgets import TrajectoryPlayer, plot_energy

#: colours of the phases of the phase diagram
PHASE_COLORS = {"collapse": "#d95f02", "great circle": "#1b9e77", "other": "#bdbdbd"}


def _pyplot():
    import matplotlib.pyplot as plt

    return plt


def energy_to_bound(traj, bound: float, *, beta: float, lam: float, seed: int):
    r"""The energy $E(t)$ of the distance-bias run ``traj`` against the bound of Theorem 7.1
    (dashed), on a time axis linear up to $t = 1$ and logarithmic after it; the title names
    $n$, $\beta$, $\lambda$ and the seed.  Returns the figure."""
    plt = _pyplot()
    title = (rf"distance bias, $n = {traj.n}$, $\beta = {beta:g}$, $\lambda = {lam:g}$,"
             f" seed {seed}")
    fig, ax = plt.subplots()
    plot_energy(traj, bound=bound, ax=ax)
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlim(0.0, float(traj.t[-1]))
    ax.set_title(title, fontsize=10)
    return fig


def great_circle_through(x, m: int = 200) -> np.ndarray:
    r"""``m`` points of the great circle in the plane of the two leading right singular
    vectors $v_1, v_2$ of the token matrix ``x`` (n, d): $\cos s\,v_1 + \sin s\,v_2$."""
    _, _, vt = np.linalg.svd(np.asarray(x, dtype=float))
    s = np.linspace(0.0, 2 * np.pi, m)
    return np.outer(np.cos(s), vt[0]) + np.outer(np.sin(s), vt[1])


def player_with_plane(traj, *, title: str = "", duration: float = 8.0, **kwargs):
    """A ``TrajectoryPlayer`` of ``traj`` with the great circle in the plane of its final
    state drawn in black (see :func:`great_circle_through`)."""
    player = TrajectoryPlayer(traj, duration=duration, title=title, **kwargs)
    player.add_curve(great_circle_through(traj.final))
    return player


def bias_coefficients(coefficients: dict, *, n: int):
    r"""Stem plots of the Fourier coefficients $\hat b(k)$ of several biases, one panel each.

    ``coefficients`` maps a bias's name (mathtext) to ``(k, bhat)``, the frequencies and the
    coefficients (``spectral.bias_fourier``); each panel's title names the top frequency
    $k^*$ and $\hat b(k^*)$ (``spectral.top_frequency``).  Returns the figure."""
    plt = _pyplot()
    if not coefficients:
        raise ValueError("coefficients must name at least one bias")
    fig, axes = plt.subplots(1, len(coefficients), figsize=(11, 3), sharey=True, squeeze=False)
    axes = axes[0]
    for ax, (name, (k, bhat)) in zip(axes, coefficients.items(), strict=True):
        k_star, top = top_frequency(k, bhat)
        ax.stem(k, bhat, basefmt=" ")
        ax.set_title(f"{name}\ntop frequency $k^* = {k_star}$, "
                     rf"$\hat b(k^*) = {top:.3f}$", fontsize=9)
        ax.set_xlabel(r"$k$")
    axes[0].set_ylabel(r"$\hat b(k)$")
    fig.suptitle(f"Fourier coefficients of {len(coefficients)} biases on $n = {n}$ equally "
                 "spaced positions", fontsize=10)
    fig.tight_layout()
    return fig


def mean_profile(pos, m, *, t: float, seed: int, title: str = "cosine bias, linear kernel"):
    r"""The coordinates $m_r(\xi)$ of the mean profile (``spectral.mean_profile``) against the
    position $\xi$, one line each, at time ``t``.  Returns the figure."""
    plt = _pyplot()
    m = np.asarray(m, dtype=float)
    fig, ax = plt.subplots(figsize=(6.5, 3))
    for r in range(m.shape[1]):
        ax.plot(pos, m[:, r], marker=".", label=f"$m_{r + 1}(\\xi)$")
    ax.set_xlabel(r"position $\xi$")
    ax.set_title(f"mean profile at $t = {t:g}$ ({title}, $n = {m.shape[0]}$, seed {seed})",
                 fontsize=10)
    ax.legend(fontsize=8)
    return fig


def phase_diagram(rows, params: dict):
    r"""The phase diagram: one panel per bias type, one square per cell (coloured by its
    phase, labelled with its spread and "$b<0$" when some weight is negative).

    ``rows`` are the cells as dicts with ``bias``, ``omega``, ``beta``, ``phase``, ``spread``
    and ``b_negative``; ``params`` the grid's parameters (``biases``, ``omegas``, ``betas``,
    ``t_max``, ``n``, ``seed``).  The horizontal axis is the decay rate $\lambda$ for the distance bias
    and the frequency $\omega$ for the cosine bias.  Returns the figure."""
    plt = _pyplot()
    biases, omegas, betas = params["biases"], list(params["omegas"]), list(params["betas"])
    fig, axes = plt.subplots(1, len(biases), figsize=(10, 3.4), sharey=True, squeeze=False)
    axes = axes[0]
    for ax, bias in zip(axes, biases, strict=True):
        for r in (r for r in rows if r["bias"] == bias):
            i, j = omegas.index(r["omega"]), betas.index(r["beta"])
            ax.add_patch(plt.Rectangle((i - 0.5, j - 0.5), 1, 1,
                                       color=PHASE_COLORS[r["phase"]]))
            ax.text(i, j, f"{r['spread']:.2f}" + ("\n$b<0$" if r["b_negative"] else ""),
                    ha="center", va="center", fontsize=8)
        ax.set_xlim(-0.5, len(omegas) - 0.5)
        ax.set_ylim(-0.5, len(betas) - 0.5)
        ax.set_xticks(range(len(omegas)), [f"{w:g}" for w in omegas])
        ax.set_yticks(range(len(betas)), [f"{b:g}" for b in betas])
        ax.set_xlabel(r"decay rate $\lambda$" if bias == "distance" else r"frequency $\omega$")
        ax.set_title(f"{bias} bias", fontsize=10)
    axes[0].set_ylabel(r"$\beta$  (0 = linear kernel)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in PHASE_COLORS.values()]
    fig.legend(handles, list(PHASE_COLORS), loc="upper center", ncol=3, fontsize=8,
               frameon=False)
    fig.suptitle(f"final shape at $t = {params['t_max']:g}$, $n = {params['n']}$, "
                 f"seed {params['seed']} (numbers: spread; $b<0$: some pair has a negative "
                 "weight)", fontsize=9, y=0.02)
    fig.tight_layout(rect=(0, 0.05, 1, 0.92))
    return fig
