r"""Measures of collapse for a configuration ``x`` of n points on :math:`S^{d-1}`.

All functions take an ``(n, d)`` array of unit vectors (one frame); the
``*_series`` helpers apply them to every frame of a Trajectory.

Nothing here builds an ``n x n`` matrix larger than one block of ``BLOCK_ENTRIES``
numbers: pairwise quantities (diameter, clusters, the energy bound of a biased
model) are computed a block of rows at a time or by sorting, in ``O(n)`` memory plus
one block, so that a summary of a run of tens of thousands of tokens costs
megabytes, not gigabytes.
"""

from typing import NamedTuple

import numpy as np

from .. import _validate as v
from ..dynamics.energy import energy_bound
from ..models.model import require_model
from ..particles.trajectory import Trajectory

#: entries of a block of pairwise values held at once (2**21 float64, 16 MB)
BLOCK_ENTRIES = 2 ** 21


def _rows_per_block(n, width=1):
    """Rows of a block of ``n`` columns, each ``width`` numbers wide, within BLOCK_ENTRIES."""
    return max(1, BLOCK_ENTRIES // max(1, n * width))


def _trajectory(traj):
    if not isinstance(traj, Trajectory):
        raise TypeError(f"traj must be a usaav_edu Trajectory, got {type(traj).__name__}")
    return traj


def _centered(x):
    """``(c_i - cbar, m)``: the points about their centroid ``m``, from the differences
    ``c_i = x_i - x_1``.

    ``x_i - m = c_i - cbar`` with ``cbar = (1/n) sum_i c_i``: identical points give
    ``c_i = 0`` exactly, hence exactly 0, and a small spread keeps its digits (``1 - |m|^2``
    loses every digit below about ``1e-8``).
    """
    c = x - x[0]
    cbar = c.mean(axis=0)
    return c - cbar, x[0] + cbar


def _mean_square_spread(x):
    """``(s^2, |m|)`` with ``s^2 = (1/n) sum_i |x_i - m|^2`` (centered, see :func:`_centered`)."""
    dev, m = _centered(x)
    return float(np.mean(np.einsum("ij,ij->i", dev, dev))), float(np.linalg.norm(m))


def spread(x):
    r"""RMS distance to the centroid :math:`m = \frac{1}{n} \sum_i x_i`.

    .. math::

        s = \Big(\frac{1}{n} \sum_{i=1}^n |x_i - m|^2\Big)^{1/2} = \sqrt{1 - |m|^2}.

    0 exactly for a Dirac mass, 1 when the mean is 0 (e.g. a uniform great circle).  Computed
    from the centered points ``x_i - m`` (not from ``1 - |m|^2``, which cancels to rounding
    error below about ``1e-8``), so that ``n`` identical points give exactly 0 and a spread of
    ``1e-12`` is accurate to rounding.

    Parameters
    ----------
    x : array_like
        ``(n, d)`` unit vectors, one frame.

    Returns
    -------
    float
        In ``[0, 1]``.
    """
    x = v.points_on_sphere("x", x)
    return float(np.sqrt(_mean_square_spread(x)[0]))


def diameter(x):
    r"""The largest distance between two points, :math:`\max_{i,j} |x_i - x_j|`.

    Computed from the differences, :math:`|x_i - x_j|^2 = \sum_k (x_{ik} - x_{jk})^2`, a block of
    rows at a time (not from :math:`2 - 2 \langle x_i, x_j \rangle`, which loses every digit
    below about ``1e-8``).  ``x`` is one frame, as in :func:`spread`.

    Returns
    -------
    float
        In ``[0, 2]``: 0 for a Dirac mass, 2 when two points are antipodal.

    Examples
    --------
    >>> import numpy as np
    >>> import usaav_edu as ue
    >>> x = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])
    >>> ue.diagnostics.diameter(x)
    2.0
    >>> x = ue.sphere.uniform(100, 3, seed=0)
    >>> round(ue.diagnostics.diameter(x), 3)
    1.999
    """
    x = v.points_on_sphere("x", x)
    n, d = x.shape
    # differences, not sqrt(2 - 2 <x_i, x_j>): that loses all digits below ~1e-8
    rows = _rows_per_block(n)
    best = 0.0
    for a in range(0, n - 1, rows):
        b = min(a + rows, n - 1)
        # rows a..b-1 against every later point (pairs inside the block are counted twice: harmless)
        sq = np.zeros((b - a, n - a - 1))
        for k in range(d):
            diff = x[a + 1:, k][None, :] - x[a:b, k][:, None]
            sq += diff * diff
        best = max(best, float(np.sqrt(sq.max())))
    return best


def dirac_distance(x):
    r"""Wasserstein-2 distance from the empirical measure to the nearest Dirac on the sphere.

    .. math::

        \min_{u \in S^{d-1}} \Big(\frac{1}{n} \sum_{i=1}^n |x_i - u|^2\Big)^{1/2}
        = \sqrt{2 - 2 |m|} = \sqrt{\frac{2 s^2}{1 + |m|}},

    attained at :math:`u = m / |m|`, with :math:`m` the mean and :math:`s^2 = 1 - |m|^2` the
    squared :func:`spread`.  Computed from :math:`s^2` of the centered points, so that
    identical points give exactly 0 and small distances keep their digits.  ``x`` is one frame,
    as in :func:`spread`.

    Returns
    -------
    float
        In ``[0, sqrt(2)]``; :math:`\sqrt{2}` when the mean is 0.

    References
    ----------
    The book's Theorem 1.2 (ch1-thm-dirac) and Theorem 3.1 (ch3-thm-diracization): collapse is
    convergence to a Dirac mass.
    """
    x = v.points_on_sphere("x", x)
    s2, m = _mean_square_spread(x)
    return float(np.sqrt(2.0 * s2 / (1.0 + m)))


@v.renamed_keywords(tol="cluster_tol")
def clusters(x, cluster_tol=1e-3, *, min_size=1):
    r"""Cluster labels: i and j share a cluster when a chain of points links them with steps < tol.

    (Single linkage: the connected components of the graph :math:`|x_i - x_j| < \mathrm{tol}`,
    with :math:`|x_i - x_j|^2 = \max(0, 2 - 2 \langle x_i, x_j \rangle)`.)  Returns an (n,) int
    array with labels 0..k-1 in order of first appearance.

    A breadth-first search.  When the ``n x n`` graph fits in one block
    (``n^2 <= BLOCK_ENTRIES``) it is built at once.  Otherwise it is never held: the points are
    sorted by their projection :math:`p_i = \langle x_i, e \rangle` on the principal axis
    :math:`e` of the configuration; since :math:`|p_i - p_j| \le |x_i - x_j|`, a block of reached
    points is compared only with the points not yet reached whose projections lie within ``tol``
    (plus a rounding margin) of the block's (a block's points are split into groups of nearby
    projections, each with its own window, and the search stops once every point is reached).
    Memory ``O(n)`` plus one block; time close to ``O(n log n)`` for clusters far apart, points
    spread out, or a chain along a curve (100,000 points on a RoPE orbit: seconds),
    ``O(n^2 d)`` at worst.

    Parameters
    ----------
    x : array_like
        ``(n, d)`` unit vectors, one frame.
    cluster_tol : float
        Link distance ``tol``, > 0 (the keyword ``tol=`` is deprecated).
    min_size : int
        The fewest points a cluster holds, >= 1: the points of a smaller group (stragglers)
        get the label -1 and the clusters left are numbered 0..k-1 in order of first
        appearance.  1 (the default): every group is a cluster.

    Returns
    -------
    ndarray
        ``(n,)`` int labels.

    Examples
    --------
    >>> import numpy as np
    >>> import usaav_edu as ue
    >>> x = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0],
    ...               [1.0, 1e-4, 0.0], [0.0, 1.0, 1e-4]])
    >>> x /= np.linalg.norm(x, axis=1, keepdims=True)
    >>> ue.diagnostics.clusters(x, cluster_tol=1e-3).tolist()
    [0, 1, 0, 1]
    """
    x = v.points_on_sphere("x", x)
    tol = v.real_scalar("cluster_tol", cluster_tol, minimum=0.0, strict=True)
    min_size = v.integer("min_size", min_size, minimum=1)
    return _without_stragglers(_linked(x, tol), min_size)


def _without_stragglers(labels, min_size):
    """``labels`` with the groups of fewer than ``min_size`` points set to -1 and the others
    renumbered 0..k-1 in order of first appearance."""
    if min_size == 1:
        return labels
    sizes = np.bincount(labels)
    kept = sizes >= min_size
    new = np.full(sizes.size, -1, dtype=np.int64)
    new[kept] = np.arange(int(kept.sum()))   # labels are in order of first appearance already
    return new[labels]


def _linked(x, tol):
    """The single-linkage labels of :func:`clusters` (checked ``x`` and ``tol``)."""
    n, d = x.shape
    if n * n <= BLOCK_ENTRIES:
        return _clusters_of_graph(np.maximum(0.0, 2.0 - 2.0 * (x @ x.T)) < tol * tol)
    _, axes = np.linalg.eigh(x.T @ x)
    p = x @ axes[:, -1]
    order = np.argsort(p, kind="stable")
    ps, xs = p[order], x[order]
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    # a pair the test below can accept is closer than sqrt(tol^2 + delta) (norms off 1 by up to
    # UNIT_TOL, rounding in the inner product), and its projections differ by at most that
    eps = np.finfo(np.float64).eps
    reach = (np.sqrt(tol * tol + 5.0 * v.UNIT_TOL + 4.0 * (d + 2) * eps) + 4.0 * d * eps) * (1.0 + 1e-12)
    rows = _rows_per_block(n)
    free = np.ones(n, dtype=bool)          # in sorted order: not yet in a cluster
    n_free = n
    labels = -np.ones(n, dtype=np.int64)
    k = 0
    for i in range(n):
        if labels[i] >= 0:
            continue
        labels[i] = k
        free[rank[i]] = False
        frontier = [int(rank[i])]
        n_free -= 1
        while frontier and n_free:
            take = np.sort(np.array(frontier[-rows:]))
            del frontier[-rows:]
            # one window per group of projections within 2 reach of each other: a block that
            # holds two far apart fronts of the search (the two ends of a chain along a
            # circle) would otherwise scan every point between them
            pt = ps[take]
            for group in np.split(take, np.flatnonzero(np.diff(pt) > 2.0 * reach) + 1):
                lo = np.searchsorted(ps, ps[group[0]] - reach, side="left")
                hi = np.searchsorted(ps, ps[group[-1]] + reach, side="right")
                cand = lo + np.flatnonzero(free[lo:hi])
                if cand.size == 0:
                    continue
                # |x_i - x_j|^2 = max(0, 2 - 2 <x_i, x_j>) < tol^2, computed in place
                d2 = xs[group] @ xs[cand].T
                d2 *= -2.0
                d2 += 2.0
                hit = cand[np.any(d2 < tol * tol, axis=0)]
                free[hit] = False
                n_free -= hit.size
                labels[order[hit]] = k
                frontier.extend(hit.tolist())
        k += 1
    return labels


def _clusters_of_graph(adj):
    """Connected components of the graph with adjacency matrix ``adj``, labelled in order of
    first appearance."""
    n = adj.shape[0]
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


@v.renamed_keywords(tol="cluster_tol")
def cluster_count(x, cluster_tol=1e-3, *, min_size=1):
    """Number of clusters of :func:`clusters` at link distance ``cluster_tol`` that hold at
    least ``min_size`` points (stragglers in smaller groups are not counted; 0 when no group
    is that large).

    ``x``, ``cluster_tol`` and ``min_size`` as for :func:`clusters`; returns an int.
    """
    return int(clusters(x, cluster_tol, min_size=min_size).max() + 1)


def orbit_residual(model, x, xi):
    r"""How far the gauge coordinates :math:`y_i = G(\xi_i) x_i` are from one common point.

    .. math::

        \max_i |y_i - u|, \qquad u = \frac{\sum_i y_i}{|\sum_i y_i|};

    it is 0 exactly on the gauge maximizers :math:`x_i = G(\xi_i)^\top u` (RoPE orbits, gauge
    targets).

    Parameters
    ----------
    model : Model
        The model whose gauge defines ``y``.
    x : array_like
        ``(n, d)`` unit vectors.
    xi : array_like or None
        ``(n,)`` labels.

    Returns
    -------
    float
        In ``[0, 2]``.

    References
    ----------
    Theorem 4.2 (ch4-thm-max) and Theorem 6.1 (ch6-thm-gauge) of the book: the maximizers.
    """
    model = require_model(model)
    x = v.points_on_sphere("x", x)
    model.check_dimension(x.shape[1], "x")
    y = model.to_gauge(x, model.check_labels(xi, x.shape[0]))
    m = y.mean(axis=0)
    nm = np.linalg.norm(m)
    if nm == 0.0:
        return 2.0
    return float(np.max(np.linalg.norm(y - m / nm, axis=1)))


class Merges(NamedTuple):
    """The frames at which the cluster count of a run falls (:func:`merge_times`): merge ``m``
    happened in ``(t_before[m], t[m]]``, the count going from ``before[m]`` to ``after[m]``."""

    t: np.ndarray
    t_before: np.ndarray
    before: np.ndarray
    after: np.ndarray


def merge_times(traj, cluster_tol=1e-3, *, min_size=1):
    r"""When clusters merge: the frames at which :func:`cluster_count` falls.

    With :math:`c_f` the count of frame :math:`f` (link distance ``cluster_tol``, groups of
    fewer than ``min_size`` points not counted), every :math:`f` with :math:`c_f < c_{f-1}` is
    a merge in :math:`(t_{f-1}, t_f]`: the times are known to the frame spacing, so store
    frames densely where merges are expected (``n_frames``, or a log-spaced series of runs).
    A count that rises (a straggler group reaching ``min_size``, or points drifting apart
    beyond ``cluster_tol``) is not a merge and is not listed.

    Parameters
    ----------
    traj : Trajectory
        The run.
    cluster_tol, min_size
        As for :func:`clusters`.

    Returns
    -------
    Merges
        ``t``, ``t_before``, ``before`` and ``after``, one entry per merge, in time order.

    Examples
    --------
    >>> import usaav_edu as ue
    >>> model, x0, xi = ue.experiments.setup("usa", n=16, d=2, beta=4.0,
    ...                                      seed=0)
    >>> traj = ue.simulate(model, x0, xi, t_max=200.0, n_frames=201)
    >>> m = ue.diagnostics.merge_times(traj)
    >>> int(m.before[0]) > int(m.after[-1]) == 1
    True
    """
    traj = _trajectory(traj)
    tol = v.real_scalar("cluster_tol", cluster_tol, minimum=0.0, strict=True)
    min_size = v.integer("min_size", min_size, minimum=1)
    counts = np.array([cluster_count(xf, tol, min_size=min_size) for xf in traj.x],
                      dtype=np.int64)
    f = 1 + np.flatnonzero(counts[1:] < counts[:-1])
    return Merges(traj.t[f].copy(), traj.t[f - 1].copy(), counts[f - 1], counts[f])


def modes(traj, kmax):
    r"""Mode amplitudes of the empirical measure: Fourier on the circle, degree powers on S^2.

    On the circle (``d = 2``, :math:`x_j = (\cos\theta_j, \sin\theta_j)`), the amplitudes of
    the Fourier modes (the Kuramoto-Daido order parameters)

    .. math::

        r_k = \Big| \frac{1}{n} \sum_{j=1}^n e^{i k \theta_j} \Big|, \qquad k = 1, \dots,
        k_{\max};

    on :math:`S^2` (``d = 3``), the power of degree :math:`l` of the spherical-harmonic
    expansion, by the addition theorem

    .. math::

        p_l = \frac{1}{n^2} \sum_{i,j} P_l(\langle x_i, x_j \rangle),

        p_l = \sum_{m=0}^{l} \Big| \frac{1}{n} \sum_j S_l^m(\cos\vartheta_j)\,
              e^{i m \varphi_j} \Big|^2, \qquad l = 1, \dots, k_{\max},

    with :math:`P_l` the Legendre polynomials and :math:`S_l^m` the Schmidt semi-normalized
    associated Legendre functions, computed in :math:`O(n\, k_{\max}^2)` per frame (no pair
    sum).  Both lie in :math:`[0, 1]`, are 1 for every mode at a Dirac mass and about
    :math:`1/\sqrt{n}` (:math:`r_k`) or :math:`1/n` (:math:`p_l`) for independent uniform
    points; :math:`r_k^2` is the circle's degree power, the same sum with
    :math:`\cos(k\,\cdot)` in place of :math:`P_l`.  Other dimensions are refused.

    Parameters
    ----------
    traj : Trajectory or array_like
        A run (every frame), or one ``(n, d)`` frame of unit vectors.
    kmax : int
        The highest mode, >= 1.

    Returns
    -------
    ndarray
        ``(F, kmax)`` for a run (column ``k - 1`` holds mode ``k``), ``(kmax,)`` for a frame.

    Examples
    --------
    >>> import numpy as np
    >>> import usaav_edu as ue
    >>> theta = np.array([0.0, np.pi])   # antipodes: even modes only
    >>> x = np.stack([np.cos(theta), np.sin(theta)], axis=1)
    >>> np.round(ue.diagnostics.modes(x, 4), 12).tolist()
    [0.0, 1.0, 0.0, 1.0]
    """
    kmax = v.integer("kmax", kmax, minimum=1)
    if isinstance(traj, Trajectory):
        frames, one = traj.x, False
    else:
        frames, one = v.points_on_sphere("traj", traj)[None], True
    d = frames.shape[2]
    if d not in (2, 3):
        raise ValueError(f"modes are defined here on the circle (d = 2) and on S^2 (d = 3), "
                         f"got d = {d}")
    out = np.array([_fourier_amplitudes(x, kmax) if d == 2 else _degree_powers(x, kmax)
                    for x in frames])
    return out[0] if one else out


def _fourier_amplitudes(x, kmax):
    r""":math:`|(1/n) \sum_j z_j^k|`, ``k = 1..kmax``, with :math:`z_j = x_{j1} + i x_{j2}`."""
    z = x[:, 0] + 1j * x[:, 1]
    return np.abs(np.mean(z[None, :] ** np.arange(1, kmax + 1)[:, None], axis=1))


def _degree_powers(x, lmax):
    r""":math:`p_l` of :func:`modes` on S^2 from the Schmidt semi-normalized functions:
    :math:`S_0^0 = 1`, :math:`S_1^1 = s`, :math:`S_m^m = \sqrt{(2m-1)/(2m)}\, s\, S_{m-1}^{m-1}`
    and :math:`S_l^m = ((2l-1) z S_{l-1}^m - \sqrt{(l-1)^2 - m^2}\, S_{l-2}^m) /
    \sqrt{l^2 - m^2}` (:math:`z = \cos\vartheta`, :math:`s = \sin\vartheta`)."""
    z = np.clip(x[:, 2], -1.0, 1.0)
    s = np.hypot(x[:, 0], x[:, 1])
    e = np.where(s > 0, (x[:, 0] + 1j * x[:, 1]) / np.where(s > 0, s, 1.0), 1.0)
    power = np.zeros(lmax + 1)
    smm = np.ones_like(z)
    em = np.ones_like(e)
    for m in range(lmax + 1):
        if m == 1:
            smm = s.copy()
        elif m > 1:
            smm = np.sqrt((2 * m - 1) / (2 * m)) * s * smm
        if m > 0:
            em = em * e
        prev, cur = np.zeros_like(z), smm
        for l in range(m, lmax + 1):
            if l > m:
                prev, cur = cur, (((2 * l - 1) * z * cur - np.sqrt((l - 1) ** 2 - m * m) * prev)
                                  / np.sqrt(l * l - m * m))
            power[l] += abs(np.mean(cur * em)) ** 2
    return power[1:]


def series(traj, fn, *args, **kwargs):
    """``fn`` applied to every frame of a Trajectory, as an array.

    Parameters
    ----------
    traj : Trajectory
        The run.
    fn : callable
        ``fn(x, *args, **kwargs)`` of one ``(n, d)`` frame.
    *args, **kwargs
        Passed to ``fn``.

    Returns
    -------
    ndarray
        One value per frame.

    Raises
    ------
    TypeError
        If ``traj`` is not a Trajectory or ``fn`` not callable.
    """
    traj = _trajectory(traj)
    if not callable(fn):
        raise TypeError(f"fn must be a callable of one frame x, got {type(fn).__name__}")
    return np.array([fn(xf, *args, **kwargs) for xf in traj.x])


@v.renamed_keywords(tol="cluster_tol")
def summary(traj, cluster_tol=1e-3):
    """Final-frame diagnostics of a Trajectory as a dict (energy, bound, spread, ...).

    Memory ``O(n)`` plus one block of pairwise values: no ``n x n`` matrix is built.

    Parameters
    ----------
    traj : Trajectory
        The run.
    cluster_tol : float
        Cluster tolerance (the link distance of :func:`clusters`), > 0; the keyword ``tol=``
        is deprecated.

    Returns
    -------
    dict
        ``energy``, ``energy_bound``, ``spread``, ``dirac_distance``, ``clusters`` and
        ``orbit_residual`` of the final frame.

    Raises
    ------
    TypeError, ValueError
        For a bad ``traj`` or ``cluster_tol``.

    Examples
    --------
    >>> import usaav_edu as ue
    >>> model, x0, xi = ue.experiments.setup("usa", n=32, seed=0)
    >>> traj = ue.simulate(model, x0, xi, t_max=10.0, n_frames=2)
    >>> s = ue.diagnostics.summary(traj)
    >>> for key in sorted(s):
    ...     print(key)
    clusters
    dirac_distance
    energy
    energy_bound
    orbit_residual
    spread
    >>> s["clusters"], round(s["energy"], 4), round(s["energy_bound"], 4)
    (1, 1.3591, 1.3591)
    """
    traj = _trajectory(traj)
    tol = v.real_scalar("cluster_tol", cluster_tol, minimum=0.0, strict=True)
    xf = traj.final
    return {
        "energy": float(traj.energy[-1]),
        "energy_bound": energy_bound(traj.model, traj.xi, xf.shape[0]),
        "spread": spread(xf),
        "dirac_distance": dirac_distance(xf),
        "clusters": cluster_count(xf, tol),
        "orbit_residual": orbit_residual(traj.model, xf, traj.xi),
    }
