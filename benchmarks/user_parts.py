"""A gauge or bias of one's own against the built-in part it stands beside.

    python benchmarks/user_parts.py

The solver integrates the gauge coordinates ``y_i = G(xi_i) x_i`` with one kernel, so a
user-defined gauge costs what a built-in one costs for the same ``n``: the part is consulted once
per run (its matrices or its bias matrix), not once per step.  This prints, for n = 512 tokens
on S^2, the best of five RK4 runs (t_max = 1, dt = 0.02, 50 steps) of RoPE against a wavy gauge
written in a few lines, and of the distance bias against a Gaussian bias, and their ratios.
"""

import sys
import time

import numpy as np

import usaav_edu as ue


class WavyGauge:
    """G(xi): the rotation by sin(2 xi) about the axis (cos xi, sin xi, 1/2) / norm."""

    def matrices(self, xi):
        a = np.stack([np.cos(xi), np.sin(xi), np.full_like(xi, 0.5)], axis=1)
        a /= np.linalg.norm(a, axis=1, keepdims=True)
        k = np.zeros((len(xi), 3, 3))
        k[:, 0, 1], k[:, 0, 2], k[:, 1, 2] = -a[:, 2], a[:, 1], -a[:, 0]
        k -= k.transpose(0, 2, 1)
        t = np.sin(2 * xi)[:, None, None]
        return np.eye(3) + np.sin(t) * k + (1 - np.cos(t)) * k @ k


class GaussianBias:
    """b(xi, zeta) = exp(-(xi - zeta)^2)."""

    def matrix(self, xi):
        return np.exp(-(xi[:, None] - xi[None, :]) ** 2)


def best_time(model, x0, xi, repeat=5):
    """The shortest of ``repeat`` runs of ``simulate`` (after one run that compiles)."""
    ue.simulate(model, x0, xi, t_max=0.1, dt=0.05, n_frames=2)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        ue.simulate(model, x0, xi, t_max=1.0, dt=0.02, n_frames=3)
        times.append(time.perf_counter() - t0)
    return min(times)


def report(n=512):
    x0, xi = ue.sphere.uniform(n, 3, seed=1), np.linspace(0.0, 8.0, n)
    pairs = [("RoPE gauge", ue.models.rope(1.0, (1.0,), 3),
              "wavy gauge", ue.Model(gauge=WavyGauge())),
             ("distance bias", ue.models.distance_bias(1.0, lam=1.0),
              "Gaussian bias", ue.Model(bias=GaussianBias()))]
    lines = [f"n = {n}, d = 3, RK4, 50 steps (best of 5):"]
    for name, built_in, own_name, own in pairs:
        a, b = best_time(built_in, x0, xi), best_time(own, x0, xi)
        lines.append(f"  {name:>13}: {1e3 * a:7.1f} ms   {own_name:>13}: {1e3 * b:7.1f} ms"
                     f"   ratio {b / a:.2f}")
    return "\n".join(lines)


if __name__ == "__main__":
    try:
        print(report())
    except KeyboardInterrupt:  # Ctrl-C: one line, no traceback
        print("user_parts.py: interrupted", file=sys.stderr)
        sys.exit(130)
