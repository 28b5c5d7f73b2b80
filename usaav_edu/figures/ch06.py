"""Figures of chapter 6 (prefix tokens and gauges), one call per figure.

Each function takes trajectories (and what the chapter measured on them) and returns the
Matplotlib figure or the widget; none of them integrates.  Titles and labels are mathematics.
"""
from __future__ import annotations

import numpy as np

from ..widgets.explorer import Explorer
from ..widgets.player import TrajectoryPlayer
from ..widgets.scene import SphereView
from ..widgets.twin import TwinView


def _points(name, points):
    pts = np.atleast_2d(np.asarray(points, dtype=float))
    if pts.ndim != 2 or pts.shape[0] < 1:
        raise ValueError(f"{name} must be an (m, d) array of points, got shape {pts.shape}")
    return pts


def prompt_player(traj, centres, *, max_bytes: int = 330_000):
    """The run of ``K`` prompts played on the sphere, with the predicted cluster centres
    ``G_k^T u`` (``centres``, one row per prompt) as dark points."""
    centres = _points("centres", centres)
    player = TrajectoryPlayer(traj, duration=8.0, max_bytes=max_bytes,
                              title=f"{centres.shape[0]} prompts")
    player.add_targets(centres)
    return player


def twin_view(traj, *, max_bytes: int = 340_000):
    """The contents ``x_i`` and the gauge coordinates ``y_i = G(xi_i) x_i`` of one run, side by
    side on one time bar (a :class:`~usaav_edu.widgets.TwinView`)."""
    return TwinView(traj, duration=8.0, max_bytes=max_bytes)


def prompts_explorer(runs: dict, *, max_bytes: int = 1_500_000):
    """An :class:`~usaav_edu.widgets.Explorer` over the number of prompts ``{K: run}`` (the
    slider lists them in increasing order), each run a player of its tokens.  The default
    budget holds eight runs of 16 tokens in up to 8 colours, whatever their length, within the
    chapter's 3 MB page."""
    ks = sorted(runs)
    n = runs[ks[0]].x.shape[1]
    return Explorer({k: runs[k] for k in ks}, "K", max_bytes=max_bytes,
                    caption=(f"prefix gauge with {n} tokens: pick the number of prompts K, then "
                             "press play"))


def curve_player(traj, curve, *, max_bytes: int = 330_000):
    """The run whose prompts draw a closed curve, played with the curve (``(m, d)`` points)
    drawn in black."""
    player = TrajectoryPlayer(traj, duration=8.0, max_bytes=max_bytes,
                              title="a curve drawn by prompts")
    player.add_curve(_points("curve", curve), closed=True)
    return player


def bumps_view(traj, centers):
    """The last frame of the three-bump run with its trails and the bumps' centres."""
    view = SphereView(traj, trails=True, title="three bumps")
    view.add_targets(_points("centers", centers))
    return view


def shared_player(traj, prompt, *, max_bytes: int = 300_000):
    """The run with one shared frozen prompt token, played with the prompt ``p`` marked."""
    player = TrajectoryPlayer(traj, duration=8.0, max_bytes=max_bytes,
                              title="shared prompt at e1")
    player.add_targets(_points("prompt", prompt))
    return player


def shared_collapse(traj, diameter, to_prompt, *, n_moving: int):
    """Log-scale curves against ``t``: the diameter of the moving tokens (floored at
    ``1e-12`` to stay on the log axis) and their largest distance to the prompt."""
    import matplotlib.pyplot as plt

    diameter, to_prompt = np.asarray(diameter, float), np.asarray(to_prompt, float)
    if diameter.shape != traj.t.shape or to_prompt.shape != traj.t.shape:
        raise ValueError(f"diameter and to_prompt must hold one value per frame ({traj.t.size}), "
                         f"got {diameter.shape} and {to_prompt.shape}")
    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    ax.semilogy(traj.t, np.maximum(diameter, 1e-12), label="diameter of the moving tokens")
    ax.semilogy(traj.t, to_prompt, label=r"max distance to the prompt $p$")
    ax.set_xlabel(r"$t$")
    ax.legend(fontsize=8)
    seed = "" if traj.seed is None else f", seed {traj.seed}"
    ax.set_title(rf"shared prompt, $n = {n_moving} + 1$, $\beta = {traj.model.beta:g}${seed}",
                 fontsize=10)
    return fig
