"""Figures of chapter 8, the four experiments side by side: one call per figure.

Each function takes the chapter's trajectories (and the gauge point read off each run) and
returns the Matplotlib figure or the widget; none of them integrates anything.  The exact
maximizers drawn over the runs come from :mod:`usaav_edu.analysis.maximizers`.
"""
from __future__ import annotations

import numpy as np

from ..analysis import maximizers
from ..widgets import TrajectoryPlayer, plot_energy, plot_sphere

#: the four systems, in the chapter's order, with their names on the figures
TITLES = {
    "usa": "baseline USA",
    "rope": "RoPE, one plane",
    "generalized_rope": "generalized RoPE",
    "prefix_gauge": "prefix tokens",
}


def _pyplot():
    import matplotlib.pyplot as plt

    return plt


def overlays(name: str, traj, u) -> dict:
    r"""The support of the exact maximizer $x_i = G(\xi_i)^\top u$ of the system ``name`` for
    the gauge point ``u``, as ``curves`` and ``targets`` for the views: the point $u$
    (baseline), the latitude circle at height $u_3$ (RoPE), one turn $s\mapsto R_{-s}u$,
    $s\in[0, 2\pi]$, of the torus curve (generalized RoPE), the $K$ centres $G_k^\top u$
    (prefix tokens)."""
    u = np.asarray(u, dtype=float)
    if name == "usa":
        return dict(curves=(), targets=u[None, :])
    if name == "rope":
        return dict(curves=(maximizers.latitude_circle(u[2], 256),), targets=None)
    if name == "generalized_rope":
        s = np.linspace(0.0, 2 * np.pi, 400)
        return dict(curves=(maximizers.rope_orbit(traj.model, u, s),), targets=None)
    if name == "prefix_gauge":
        k = np.arange(traj.model.gauge.frames.shape[0])
        return dict(curves=(), targets=maximizers.gauge_maximizer(traj.model, k, u))
    raise ValueError(f"name must be one of {', '.join(TITLES)}, got {name!r}")


def final_states(runs: dict, points: dict, *, ns, names=tuple(TITLES), beta: float, seed: int,
                 method: str, tau: float):
    r"""The grid of final states, one row per $n$ in ``ns`` and one column per system, with the
    exact maximizer of each run drawn in black.

    ``runs[name, n]`` is the trajectory, ``points[name, n]`` its gauge point $u$.  Returns the
    figure."""
    plt = _pyplot()
    fig = plt.figure(figsize=(13, 3.2 * len(ns)))
    for r, n in enumerate(ns):
        for c, name in enumerate(names):
            traj = runs[name, n]
            ax = fig.add_subplot(len(ns), len(names), r * len(names) + c + 1, projection="3d")
            plot_sphere(traj, ax=ax, legend=False, title=f"{TITLES[name]}, $n = {n}$",
                        **overlays(name, traj, points[name, n]))
    fig.suptitle(rf"final states at $\tau = {tau:g}$: $\beta = {beta:g}$, $d = 3$ (generalized "
                 rf"RoPE: $d = 4$, coordinates 1 to 3), $x_0$ uniform, seed {seed}, {method}",
                 fontsize=11)
    fig.tight_layout()
    return fig


def player(traj, name: str, u, *, max_bytes: int = 450_000):
    """A ``TrajectoryPlayer`` of the run of the system ``name``, with the exact maximizer for
    its gauge point ``u`` in black."""
    view = TrajectoryPlayer(traj, duration=8.0, max_bytes=max_bytes, title=TITLES[name])
    extra = overlays(name, traj, u)
    for curve in extra["curves"]:
        view.add_curve(curve)
    if extra["targets"] is not None:
        view.add_targets(extra["targets"])
    return view


def energy_curves(runs: dict, *, n: int, names=tuple(TITLES), beta: float, seed: int,
                  method: str):
    r"""The energies of the runs ``runs[name, n]`` of the four systems against time, with the
    common bound $e^\beta/(2\beta)$ dashed.  Returns the figure."""
    plt = _pyplot()
    fig, ax = plt.subplots()
    plot_energy(*[runs[name, n] for name in names], labels=[TITLES[name] for name in names],
                bound=float(np.exp(beta) / (2 * beta)), ax=ax)
    ax.set_title(rf"energy, $n = {n}$, $\beta = {beta:g}$, seed {seed}, {method}", fontsize=10)
    return fig
