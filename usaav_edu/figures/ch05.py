"""Figures of chapter 5 (generalized RoPE: several frequencies), one call per figure.

Each function takes trajectories (and what the chapter computed from them: orbits, diameters)
and returns the Matplotlib figure or the widget; none of them integrates.  Titles and labels are
mathematics.
"""
from __future__ import annotations

import numpy as np

from ..widgets.mpl import plot_energy
from ..widgets.player import TrajectoryPlayer
from ..widgets.scene import SphereView


def torus_player(traj, orbit):
    """The ``d = 4`` run played in the coordinates ``(x1, x2, x3)``, with the orbit of its
    gauge point (``(m, 4)`` points, ``ue.maximizers.rope_orbit``) drawn in black."""
    player = TrajectoryPlayer(traj, duration=8.0, title="generalized RoPE (x1, x2, x3)")
    player.add_curve(orbit)
    return player


def wavy_view(traj, arc):
    """The last frame of the run on one period of positions, with the orbit arc of its gauge
    point (``(m, d)`` points) drawn in black: the wavy curve."""
    view = SphereView(traj, title="wavy curve (x1, x2, x3)")
    view.add_curve(arc)
    return view


def standard_view(traj, coords=(0, 1, 4)):
    """The last frame of the standard-RoPE run in ``d = 8``, seen in the coordinates
    ``coords`` (the fast plane and one axis of the slow third plane)."""
    return SphereView(traj, coords=coords, title=f"standard RoPE, d = {traj.x.shape[2]}")


def unrotated_player(traj):
    """The run of RoPE with unrotated values, played."""
    return TrajectoryPlayer(traj, duration=8.0, title="values not rotated")


def rotated_vs_unrotated(traj_grad, traj_qk, diam_grad, diam_qk, bound: float):
    """Left: the energies of the gradient flow (values rotated) and of the variant with
    unrotated values, with the bound ``e^beta / (2 beta)`` dashed.  Right: the diameters of the
    tokens (``diam_grad``, ``diam_qk``, one per frame, floored at ``1e-12``) on a log axis."""
    import matplotlib.pyplot as plt

    names = ("values rotated", "values not rotated")
    diams = [np.asarray(diam_grad, float), np.asarray(diam_qk, float)]
    for tr, dm, name in zip((traj_grad, traj_qk), diams, ("diam_grad", "diam_qk"), strict=True):
        if dm.shape != tr.t.shape:
            raise ValueError(f"{name} must hold one diameter per frame ({tr.t.size}), "
                             f"got shape {dm.shape}")
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    plot_energy(traj_grad, traj_qk, labels=["values rotated (gradient flow)", names[1]],
                ax=axes[0], bound=bound)
    for tr, dm, name in zip((traj_grad, traj_qk), diams, names, strict=True):
        axes[1].semilogy(tr.t, np.maximum(dm, 1e-12), label=name)
    axes[1].set_xlabel(r"$t$")
    axes[1].set_ylabel("diameter of the tokens")
    axes[1].legend(fontsize=8)
    omegas = getattr(traj_grad.model.gauge, "omegas", (1.0,))
    seed = "" if traj_grad.seed is None else f", seed {traj_grad.seed}"
    fig.suptitle(rf"RoPE, $d = {traj_grad.x.shape[2]}$, $n = {traj_grad.x.shape[1]}$, "
                 rf"$\beta = {traj_grad.model.beta:g}$, $\omega = {omegas[0]:g}${seed}",
                 fontsize=10)
    fig.tight_layout()
    return fig
