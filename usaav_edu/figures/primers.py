"""Figures of the primers (attention, laws, gradients on the sphere), one call per figure.

Each function takes the arrays its primer computed and returns the Matplotlib figure; none of
them integrates.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np


def attention_layers(weights, angles, beta: float):
    """Attention as particles: the softmax weights ``A_ij`` of tokens on the circle (left,
    ``(n, n)``) and the angle of every token against the layer index (right, ``(L + 1, n)``)
    as the same layer is applied again and again."""
    weights, angles = np.asarray(weights, dtype=float), np.asarray(angles, dtype=float)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.4),
                                      gridspec_kw={"width_ratios": [1, 1.6]})
    image = left.imshow(weights, cmap="viridis")
    fig.colorbar(image, ax=left, shrink=0.8)
    left.set_xlabel("token $j$")
    left.set_ylabel("token $i$")
    left.set_title(rf"weights $A_{{ij}}$, $\beta = {beta:g}$", fontsize=10)
    right.plot(np.arange(len(angles)), np.unwrap(angles, axis=0), lw=0.9)
    right.set_xlabel("layer $k$ (depth = time)")
    right.set_ylabel(r"angle $\theta_i$ of token $i$")
    right.set_title(f"{angles.shape[1]} tokens through {len(angles) - 1} layers", fontsize=10)
    right.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def graph_law(labels, spread_contents, graph_contents):
    """Two joint laws of (label, content) on the circle: slices spread (left) and a graph law,
    every slice a single point (right); each dot is one token, content angle against label."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
    for ax, contents, title in [(axes[0], spread_contents, "slices spread"),
                                (axes[1], graph_contents,
                                 r"graph law $\Gamma[x^*]$: every slice a Dirac mass")]:
        ax.plot(labels, contents, "o", ms=3, alpha=0.6)
        ax.set_xlabel(r"label $\xi$")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(r"content angle $\varphi$")
    fig.tight_layout()
    return fig


def sphere_ascent(path, a):
    """Retracted gradient ascent of ``f(x) = <a, x>`` on the sphere: the iterates ``path``
    (``(m, 3)``), the tangent gradients ``P_x a`` at them as arrows, and the maximum
    ``a/|a|``."""
    path, a = np.asarray(path, dtype=float), np.asarray(a, dtype=float)
    fig = plt.figure(figsize=(5.2, 4.8))
    ax = fig.add_subplot(projection="3d")
    s, t = np.meshgrid(np.linspace(0, np.pi, 13), np.linspace(0, 2 * np.pi, 25))
    ax.plot_wireframe(np.sin(s) * np.cos(t), np.sin(s) * np.sin(t), np.cos(s), color="0.85",
                      lw=0.5)
    ax.plot(*path.T, "o-", color="C0", ms=3, label="iterates $x_k$")
    grads = a - (path @ a)[:, None] * path
    ax.quiver(*path.T, *(0.1 * grads).T, color="C1", label=r"$P_x a$ (tangent)")
    top = a / np.linalg.norm(a)
    ax.plot(*top[:, None], "*", color="k", ms=12, label=r"maximum $a/|a|$")
    ax.set_box_aspect((1, 1, 1))
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title(r"ascent of $f(x) = \langle a, x\rangle$ on $S^2$", fontsize=10)
    return fig
