"""Measures of collapse for a configuration ``x`` of n points on S^{d-1}.

All functions take an ``(n, d)`` array of unit vectors (one frame); the
``*_series`` helpers apply them to every frame of a Trajectory.
"""

import numpy as np

from . import _validate as v


def spread(x):
    """RMS distance to the centroid: ``sqrt((1/n) sum |x_i - m|^2) = sqrt(1 - |m|^2)``, m the mean.

    0 exactly for a Dirac mass, 1 when the mean is 0 (e.g. a uniform great circle).
    """
    x = v.points_on_sphere("x", x)
    m = x.mean(axis=0)
    return float(np.sqrt(max(0.0, 1.0 - m @ m)))


def diameter(x):
    """``max_ij |x_i - x_j|``."""
    x = v.points_on_sphere("x", x)
    # differences, not sqrt(2 - 2 <x_i, x_j>): that loses all digits below ~1e-8
    best = 0.0
    for i in range(x.shape[0] - 1):
        best = max(best, float(np.max(np.linalg.norm(x[i + 1:] - x[i], axis=1))))
    return best


def dirac_distance(x):
    """Wasserstein-2 distance from the empirical measure to the nearest Dirac on the sphere.

    ``min_u sqrt((1/n) sum |x_i - u|^2) = sqrt(2 - 2|m|)``, attained at ``u = m/|m|``.
    """
    x = v.points_on_sphere("x", x)
    m = np.linalg.norm(x.mean(axis=0))
    return float(np.sqrt(max(0.0, 2.0 - 2.0 * m)))


def clusters(x, tol=1e-3):
    """Cluster labels: i and j share a cluster when a chain of points links them with steps < tol.

    (Single linkage: the connected components of the graph ``|x_i - x_j| < tol``.)
    Returns an (n,) int array with labels 0..k-1 in order of first appearance.
    """
    x = v.points_on_sphere("x", x)
    tol = v.real_scalar("tol", tol, minimum=0.0, strict=True)
    n = x.shape[0]
    d2 = np.maximum(0.0, 2.0 - 2.0 * (x @ x.T))
    adj = d2 < tol * tol
    labels = -np.ones(n, dtype=np.int64)
    k = 0
    for i in range(n):
        if labels[i] >= 0:
            continue
        stack = [i]
        labels[i] = k
        while stack:
            j = stack.pop()
            for nb in np.flatnonzero(adj[j] & (labels < 0)):
                labels[nb] = k
                stack.append(nb)
        k += 1
    return labels


def cluster_count(x, tol=1e-3):
    """Number of clusters of :func:`clusters` at tolerance ``tol``."""
    return int(clusters(x, tol).max() + 1)


def orbit_residual(model, x, xi):
    """How far the gauge coordinates ``y_i = G(xi_i) x_i`` are from one common point.

    ``max_i |y_i - u|`` with ``u`` the normalized mean of the ``y_i``; it is 0 exactly
    on the gauge maximizers ``x_i = G(xi_i)^T u`` (RoPE orbits, gauge targets).
    """
    x = v.points_on_sphere("x", x)
    y = model.to_gauge(x, model.check_labels(xi, x.shape[0]))
    m = y.mean(axis=0)
    nm = np.linalg.norm(m)
    if nm == 0.0:
        return 2.0
    return float(np.max(np.linalg.norm(y - m / nm, axis=1)))


def series(traj, fn, *args, **kwargs):
    """``fn`` applied to every frame of a Trajectory, as an array."""
    return np.array([fn(xf, *args, **kwargs) for xf in traj.x])


def summary(traj, tol=1e-3):
    """Final-frame diagnostics of a Trajectory as a dict (energy, bound, spread, ...)."""
    from .solver import energy_bound

    xf = traj.final
    return {
        "energy": float(traj.energy[-1]),
        "energy_bound": energy_bound(traj.model, traj.xi),
        "spread": spread(xf),
        "dirac_distance": dirac_distance(xf),
        "clusters": cluster_count(xf, tol),
        "orbit_residual": orbit_residual(traj.model, xf, traj.xi),
    }
