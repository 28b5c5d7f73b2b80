"""Initial conditions on the unit sphere S^{d-1}."""

import numbers

import numpy as np

from . import _validate as v

_RNG_TYPES = (np.random.Generator, np.random.BitGenerator, np.random.SeedSequence)


def make_rng(seed, name="seed"):
    """``numpy.random.default_rng(seed)`` for a checked ``seed``.

    ``seed`` is None (fresh entropy), a non-negative integer, a non-empty sequence of
    non-negative integers, or a NumPy ``Generator``, ``BitGenerator`` or ``SeedSequence``.
    Anything else raises TypeError or ValueError naming ``name``.

    Parameters
    ----------
    seed : None, int, sequence of int, or numpy Generator / BitGenerator / SeedSequence
        The seed.
    name : str
        The argument named in messages.

    Returns
    -------
    numpy.random.Generator
    """
    if seed is None or isinstance(seed, _RNG_TYPES):
        return np.random.default_rng(seed)
    expected = "None, a non-negative integer, a sequence of them, or a numpy Generator"
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        if seed < 0:
            raise ValueError(f"{name} must be a non-negative integer (or None), got {seed}")
        return np.random.default_rng(int(seed))
    if isinstance(seed, (list, tuple, np.ndarray)):
        arr = v.as_array(name, seed, expected)
        if arr.ndim != 1 or arr.size == 0 or arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(f"{name} must be {expected}, got {seed!r}")
        if np.any(arr < 0):
            raise ValueError(f"{name} must hold non-negative integers, got {arr.tolist()}")
        return np.random.default_rng([int(a) for a in arr])
    raise TypeError(f"{name} must be {expected}, got {type(seed).__name__} {v.shown(seed)}")


def uniform(n, d, seed=None):
    r"""``n`` independent points uniform on :math:`S^{d-1}`: :math:`x = g / |g|`, g standard normal.

    ``seed`` (see :func:`make_rng`) is passed to ``numpy.random.default_rng``; the same
    seed gives the same points bit for bit.

    Parameters
    ----------
    n : int
        Number of points, >= 1.
    d : int
        Ambient dimension, >= 2.
    seed : see :func:`make_rng`
        The seed.

    Returns
    -------
    ndarray
        ``(n, d)`` unit vectors.

    Examples
    --------
    >>> import numpy as np
    >>> import usaav_edu as ue
    >>> x = ue.sphere.uniform(5, 3, seed=0)
    >>> x.shape, bool(np.allclose(np.linalg.norm(x, axis=1), 1.0))
    ((5, 3), True)
    >>> bool((ue.sphere.uniform(5, 3, seed=0) == x).all())
    True
    """
    n = v.integer("n", n, minimum=1)
    d = v.integer("d", d, minimum=2)
    rng = make_rng(seed)
    g = rng.standard_normal((n, d))
    return g / np.linalg.norm(g, axis=1, keepdims=True)


def random_frames(k, d, seed=None):
    """``k`` orthogonal ``d x d`` matrices, Haar-distributed (QR of a Gaussian matrix).

    Parameters
    ----------
    k : int
        Number of frames, >= 1.
    d : int
        Dimension, >= 2.
    seed : see :func:`make_rng`
        The seed.

    Returns
    -------
    ndarray
        ``(k, d, d)`` orthogonal matrices.
    """
    k = v.integer("k", k, minimum=1)
    d = v.integer("d", d, minimum=2)
    rng = make_rng(seed)
    frames = np.empty((k, d, d))
    for i in range(k):
        q, r = np.linalg.qr(rng.standard_normal((d, d)))
        frames[i] = q * np.sign(np.diag(r))
    return frames


def equiangular(n, d):
    """The first ``n`` standard basis vectors of R^d (pairwise inner product 0); needs d >= n.

    Parameters
    ----------
    n : int
        Number of points, >= 1.
    d : int
        Dimension, >= n.

    Returns
    -------
    ndarray
        ``(n, d)``.

    Raises
    ------
    ValueError
        If ``d < n``.
    """
    n = v.integer("n", n, minimum=1)
    d = v.integer("d", d, minimum=2)
    if d < n:
        raise ValueError(f"d must be >= n for an orthonormal start, got n = {n}, d = {d}")
    return np.eye(n, d)


def circle(theta):
    """Points ``(cos theta_i, sin theta_i)`` on S^1.

    Parameters
    ----------
    theta : array_like
        ``(n,)`` angles.

    Returns
    -------
    ndarray
        ``(n, 2)`` unit vectors.
    """
    theta = v.float_array("theta", theta, ndim=1)
    return np.stack([np.cos(theta), np.sin(theta)], axis=1)
