"""Initial conditions on the unit sphere S^{d-1}."""

import numpy as np

from . import _validate as v


def uniform(n, d, seed=None):
    """``n`` independent points uniform on ``S^{d-1}``: x = g / |g|, g standard normal.

    ``seed`` is passed to ``numpy.random.default_rng``; the same seed gives the
    same points bit for bit.
    """
    n = v.integer("n", n, minimum=1)
    d = v.integer("d", d, minimum=2)
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((n, d))
    return g / np.linalg.norm(g, axis=1, keepdims=True)


def random_frames(k, d, seed=None):
    """``k`` orthogonal ``d x d`` matrices, Haar-distributed (QR of a Gaussian matrix)."""
    k = v.integer("k", k, minimum=1)
    d = v.integer("d", d, minimum=2)
    rng = np.random.default_rng(seed)
    frames = np.empty((k, d, d))
    for i in range(k):
        q, r = np.linalg.qr(rng.standard_normal((d, d)))
        frames[i] = q * np.sign(np.diag(r))
    return frames


def equiangular(n, d):
    """The first ``n`` standard basis vectors of R^d (pairwise inner product 0); needs d >= n."""
    n = v.integer("n", n, minimum=1)
    d = v.integer("d", d, minimum=2)
    if d < n:
        raise ValueError(f"d must be >= n for an orthonormal start, got n = {n}, d = {d}")
    return np.eye(n, d)


def circle(theta):
    """Points ``(cos theta_i, sin theta_i)`` on S^1."""
    theta = v.float_array("theta", theta, ndim=1)
    return np.stack([np.cos(theta), np.sin(theta)], axis=1)
