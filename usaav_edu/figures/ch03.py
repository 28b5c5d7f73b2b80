"""Figures of chapter 3 (auxiliary variables and conditional Diracization), one call per figure.

Each function takes a trajectory and the series the chapter measured on it and returns the
Matplotlib figure; none of them integrates.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ..widgets.mpl import plot_energy


def slices(traj, slice_diameter, spread, bound: float):
    """Slices collapse, contents spread: the largest slice diameter and the spread of all
    contents on a log scale (left), and the energy with the bound dashed (right).

    ``slice_diameter`` and ``spread`` are series with one value per frame of ``traj``.
    """
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    axes[0].semilogy(traj.t, slice_diameter, label="largest slice diameter")
    axes[0].semilogy(traj.t, spread, label="spread of all contents")
    axes[0].set_xlabel(r"$t$")
    axes[0].legend(fontsize=8)
    axes[0].grid(alpha=0.3)
    plot_energy(traj, bound=bound, ax=axes[1])
    labels = np.unique(traj.xi)
    per = traj.n // len(labels)
    name = traj.model.name.replace("rope", "RoPE")
    seed = "" if traj.seed is None else f", seed {traj.seed}"
    fig.suptitle(rf"{name}, $n = {traj.n}$ ({len(labels)} labels $\times$ {per}),"
                 rf" $\beta = {traj.model.beta:g}${seed}", fontsize=10)
    fig.tight_layout()
    return fig
