r"""Designing laws on RoPE orbits and on the sphere (chapters 4 to 6 of the book).

The anti-collapse theorems say *which* laws are maximizing content marginals:
every law on a RoPE orbit (orbitwise universality) and every law :math:`T_\# \rho` on
the sphere (gauge-level universality).  This module holds the small pieces
needed to *pick* such a law and realize it with the package's models:

* laws of an angle on the circle (:class:`CircleLaw`, von Mises mixtures such
  as a two-bump law), with their density, CDF and inverse CDF;
* positions :math:`\xi_i = F^{-1}\big((i + 1/2) / n\big) / \omega` that make a RoPE orbit
  carry a chosen law (:func:`rope_positions`), and the phase of a token along
  the orbit (:func:`orbit_phase`);
* the Kolmogorov-Smirnov statistic between a sample and a target CDF
  (:func:`ks_statistic`) and its asymptotic critical value (:func:`ks_threshold`);
* target maps for prefix gauges on S^2: points tracing a curve
  (:func:`seam_curve`), a density with several bumps (:func:`vmf_mixture_sample`,
  :func:`vmf_mixture_pdf`), and an initial state whose gauge coordinates are
  symmetric about an axis (:func:`symmetric_cap`), which makes the collapse point
  of the gauge coordinates known in advance.

Every function validates its input and raises TypeError or ValueError naming
the argument.  Nothing here integrates the dynamics.
"""

import math
from dataclasses import dataclass

import numpy as np

from .. import _validate as v
from ..sphere import make_rng

TWO_PI = 2.0 * np.pi
KAPPA_MAX = 500.0

__all__ = [
    "CircleLaw", "wrap_angle", "von_mises_mixture", "two_bump_law", "uniform_circle_law",
    "quantile_points", "rope_positions", "orbit_phase", "ks_statistic", "ks_threshold",
    "seam_curve", "vmf_mixture_pdf", "vmf_mixture_sample", "symmetric_cap",
]


def wrap_angle(theta):
    """Angles reduced to ``[0, 2 pi)``.

    Parameters
    ----------
    theta : array_like
        Angles.

    Returns
    -------
    ndarray
    """
    theta = v.float_array("theta", theta)
    out = np.mod(theta, TWO_PI)
    # np.mod can return 2 pi for a tiny negative input
    return np.where(out >= TWO_PI, 0.0, out)


def _mixture_args(centers, kappas, weights, name_centers="centers"):
    c = v.float_array(name_centers, centers, ndim=1)
    k = v.float_array("kappas", kappas, ndim=1)
    w = v.float_array("weights", weights, ndim=1)
    if c.shape[0] < 1:
        raise ValueError(f"{name_centers} must hold at least one bump, got shape {c.shape}")
    if k.shape != c.shape[:1] or w.shape != c.shape[:1]:
        raise ValueError(f"kappas and weights must have one entry per bump ({c.shape[0]}), "
                         f"got shapes {k.shape} and {w.shape}")
    if np.any(k < 0) or np.any(k > KAPPA_MAX):
        raise ValueError(f"kappas must lie in [0, {KAPPA_MAX}], got {k.tolist()}")
    if np.any(w < 0) or w.sum() <= 0:
        raise ValueError(f"weights must be non-negative with a positive sum, got {w.tolist()}")
    return c, k, w / w.sum()


@dataclass(frozen=True, eq=False)
class CircleLaw:
    """A probability law of an angle on ``[0, 2 pi)`` with a continuous density.

    The CDF ``F(theta) = int_0^theta p`` is tabulated on ``grid`` equally spaced
    nodes by composite Simpson sums on each cell (exact for the uniform law,
    error ``O(h^4)`` for a smooth density); between nodes it is the cubic Hermite
    interpolant of (F, p), so ``F' = p`` at the nodes.  The inverse CDF is found
    by bisection on the table and polished by Newton steps.
    Build one with :func:`von_mises_mixture`, :func:`two_bump_law`,
    :func:`uniform_circle_law` or :meth:`from_density`.
    """

    density: object
    name: str
    nodes: np.ndarray
    values: np.ndarray
    table: np.ndarray

    @classmethod
    def from_density(cls, density, name="law", grid=4096):
        """A law from a density on the circle (normalized here; it need not integrate to 1).

        ``density`` is a callable taking an array of angles and returning
        non-negative finite values of the same shape.

        Parameters
        ----------
        density : callable
            Non-negative density of angles.
        name : str
            The argument named in messages.
        grid : int
            Points of the tabulated CDF.

        Returns
        -------
        CircleLaw
        """
        if not callable(density):
            raise TypeError(f"density must be a callable of an array of angles, got {type(density).__name__}")
        grid = v.integer("grid", grid, minimum=16)
        nodes = np.linspace(0.0, TWO_PI, grid + 1)
        mids = 0.5 * (nodes[:-1] + nodes[1:])
        pv = np.asarray(density(nodes), dtype=np.float64)
        pm = np.asarray(density(mids), dtype=np.float64)
        if pv.shape != nodes.shape or pm.shape != mids.shape:
            raise ValueError("density must return an array of the same shape as its argument")
        if not (np.all(np.isfinite(pv)) and np.all(np.isfinite(pm))):
            raise ValueError("density must be finite")
        if np.any(pv < 0) or np.any(pm < 0):
            raise ValueError("density must be non-negative")
        h = nodes[1] - nodes[0]
        cells = h / 6.0 * (pv[:-1] + 4.0 * pm + pv[1:])
        table = np.concatenate([[0.0], np.cumsum(cells)])
        total = table[-1]
        if not total > 0:
            raise ValueError("density must have a positive integral over the circle")
        scale = 1.0 / total
        return cls(density=lambda t, _f=density, _s=scale: _s * np.asarray(_f(t), dtype=np.float64),
                   name=str(name), nodes=nodes, values=pv * scale, table=table * scale)

    def pdf(self, theta):
        """The density, an ndarray, at the angles ``theta`` (any real ones; reduced mod 2 pi)."""
        return self.density(wrap_angle(theta))

    def cdf(self, theta):
        """``F(theta)``, an ndarray, for the angles ``theta`` reduced to ``[0, 2 pi)``; ``F`` rises from 0 to 1."""
        t = wrap_angle(theta)
        h = self.nodes[1] - self.nodes[0]
        k = np.minimum((t / h).astype(np.int64), self.nodes.shape[0] - 2)
        s = (t - self.nodes[k]) / h
        f0, f1 = self.table[k], self.table[k + 1]
        p0, p1 = self.values[k] * h, self.values[k + 1] * h
        h00 = 2 * s ** 3 - 3 * s ** 2 + 1
        h10 = s ** 3 - 2 * s ** 2 + s
        h01 = -2 * s ** 3 + 3 * s ** 2
        h11 = s ** 3 - s ** 2
        return np.clip(h00 * f0 + h10 * p0 + h01 * f1 + h11 * p1, 0.0, 1.0)

    def ppf(self, q):
        """The inverse CDF: the smallest angles in ``[0, 2 pi]`` with ``F(theta) >= q``, ``q`` in [0, 1]."""
        q = v.float_array("q", q)
        if np.any(q < 0) or np.any(q > 1):
            raise ValueError("q must lie in [0, 1]")
        lo = np.zeros_like(q)
        hi = np.full_like(q, TWO_PI)
        k = np.clip(np.searchsorted(self.table, q, side="left") - 1, 0, self.nodes.shape[0] - 2)
        lo, hi = self.nodes[k], self.nodes[k + 1]
        for _ in range(60):  # bisection inside one cell of the table: 60 halvings reach rounding
            mid = 0.5 * (lo + hi)
            below = self.cdf(mid) < q
            lo = np.where(below, mid, lo)
            hi = np.where(below, hi, mid)
        return 0.5 * (lo + hi)

    def mean_direction(self):
        """The circular mean ``arg E[e^{i theta}]`` (NaN when it is 0)."""
        t = self.nodes[:-1]
        z = np.sum(self.values[:-1] * np.exp(1j * t)) * (self.nodes[1] - self.nodes[0])
        return float(np.angle(z) % TWO_PI) if abs(z) > 1e-12 else float("nan")


def von_mises_mixture(centers, kappas, weights, grid=4096):
    """A mixture of von Mises laws: ``p(theta) = sum_k w_k e^{kappa_k cos(theta - c_k)} / (2 pi I_0(kappa_k))``.

    ``weights`` are normalized to sum to 1; ``kappas`` in [0, 500] (0 is the uniform law).

    Parameters
    ----------
    centers, kappas, weights : array_like
        One entry per bump.
    grid : int
        Points of the tabulated CDF.

    Returns
    -------
    CircleLaw
    """
    c, k, w = _mixture_args(centers, kappas, weights)

    def density(theta):
        theta = np.asarray(theta, dtype=np.float64)
        out = np.zeros_like(theta)
        for ck, kk, wk in zip(c, k, w, strict=True):
            # e^{kappa (cos - 1)} / (2 pi e^{-kappa} I_0(kappa)) avoids overflow
            out += wk * np.exp(kk * (np.cos(theta - ck) - 1.0)) / (TWO_PI * np.exp(-kk) * np.i0(kk))
        return out

    label = "von Mises mixture, centers " + ", ".join(f"{x:.3g}" for x in c)
    return CircleLaw.from_density(density, name=label, grid=grid)


def two_bump_law(center=0.5 * np.pi, separation=np.pi, kappa=4.0, weight=0.65, grid=4096):
    """Two von Mises bumps, at ``center`` and ``center + separation``, of weights ``weight``
    and ``1 - weight``.

    Parameters
    ----------
    center, separation : float
        Angles.
    kappa : float
        Concentration of both bumps.
    weight : float
        Weight of the first bump, in ``[0, 1]``.
    grid : int
        Points of the tabulated CDF.

    Returns
    -------
    CircleLaw
    """
    center = v.real_scalar("center", center)
    separation = v.real_scalar("separation", separation)
    kappa = v.real_scalar("kappa", kappa, minimum=0.0, maximum=KAPPA_MAX)
    weight = v.real_scalar("weight", weight, minimum=0.0, maximum=1.0)
    law = von_mises_mixture([center, center + separation], [kappa, kappa], [weight, 1.0 - weight], grid)
    return CircleLaw(density=law.density, name=f"two bumps (kappa = {kappa:g}, weights {weight:g}/{1 - weight:g})",
                     nodes=law.nodes, values=law.values, table=law.table)


def uniform_circle_law():
    """The uniform law on the circle, ``p = 1/(2 pi)``."""
    return CircleLaw.from_density(lambda t: np.full(np.shape(t), 1.0 / TWO_PI), name="uniform", grid=16)


def quantile_points(law, n):
    """The ``n`` quantiles ``F^{-1}((i + 1/2) / n)``, i = 0..n-1: a sample at KS distance
    1/(2n) of F.

    Parameters
    ----------
    law : CircleLaw
        The law.
    n : int
        Number of points, >= 1.

    Returns
    -------
    ndarray
        ``(n,)`` angles.

    References
    ----------
    The book's chapter 4: Theorem 4.3 (ch4-thm-universality).
    """
    if not isinstance(law, CircleLaw):
        raise TypeError(f"law must be a CircleLaw, got {type(law).__name__}")
    n = v.integer("n", n, minimum=1)
    return law.ppf((np.arange(n) + 0.5) / n)


def rope_positions(law, n, omega=1.0):
    """Positions ``xi_i = F^{-1}((i + 1/2)/n) / omega`` whose phases ``omega xi_i`` follow ``law``.

    With these positions the RoPE maximizer ``x*(xi) = R_{-xi} u`` spreads the
    tokens along the orbit of ``u`` with the law ``law`` of the phase.

    Parameters
    ----------
    law, n
        As in :func:`quantile_points`: the law of the phases and the number of positions.
    omega : float
        Rotation frequency, nonzero.

    Returns
    -------
    ndarray
        ``(n,)`` positions, ``quantile_points(law, n) / omega``.

    References
    ----------
    The book's chapter 4: Theorem 4.3 (ch4-thm-universality).
    """
    omega = v.real_scalar("omega", omega)
    if omega == 0.0:
        raise ValueError("omega must be nonzero (a zero frequency does not rotate)")
    with np.errstate(over="ignore"):  # an overflow is reported below
        xi = quantile_points(law, n) / omega
    if not np.all(np.isfinite(xi)):
        raise ValueError(f"omega = {omega:g} is too small: the positions phase / omega overflow")
    return xi


def orbit_phase(x, u, plane=(0, 1)):
    """The angle ``s_i`` in ``[0, 2 pi)`` of the rotation in ``plane`` that takes ``u`` to ``x_i``, reversed.

    For ``x_i = R_{-s} u`` (rotation by ``-s`` in the plane ``plane``) it returns
    ``s mod 2 pi``: ``arg(u) - arg(x_i)`` measured in that plane.  This reads off
    the phase of each token along a RoPE orbit from the common gauge point ``u``.

    Parameters
    ----------
    x : array_like
        ``(n, d)`` unit vectors.
    u : array_like
        ``(d,)`` unit vector.
    plane : tuple of int
        The two coordinates of the rotation plane.

    Returns
    -------
    ndarray
        ``(n,)`` phases.
    """
    x = v.float_array("x", x, ndim=2)
    u = v.float_array("u", u, ndim=1)
    if x.shape[1] != u.shape[0]:
        raise ValueError(f"u must have dimension {x.shape[1]} to match x, got {u.shape[0]}")
    if (not isinstance(plane, (tuple, list)) or len(plane) != 2
            or not all(isinstance(a, (int, np.integer)) for a in plane)):
        raise TypeError(f"plane must be a pair of coordinate indices, got {plane!r}")
    a, b = int(plane[0]), int(plane[1])
    d = u.shape[0]
    if not (0 <= a < d and 0 <= b < d and a != b):
        raise ValueError(f"plane must be two distinct indices in 0..{d - 1}, got {plane!r}")
    if math.hypot(u[a], u[b]) < 1e-12:
        raise ValueError("u must have a nonzero component in plane (its orbit is a single point)")
    return wrap_angle(np.arctan2(u[b], u[a]) - np.arctan2(x[:, b], x[:, a]))


def ks_statistic(sample, cdf):
    """Kolmogorov-Smirnov distance ``sup_t |F_n(t) - F(t)|`` between a sample and a continuous CDF.

    With the sorted sample ``t_(1) <= ... <= t_(n)`` it is
    ``max_i max(i/n - F(t_(i)), F(t_(i)) - (i-1)/n)``.

    Parameters
    ----------
    sample : array_like
        ``(n,)`` values.
    cdf : callable
        The CDF F, vectorized, with values in [0, 1].

    Returns
    -------
    float
    """
    s = v.float_array("sample", sample, ndim=1)
    if s.shape[0] < 1:
        raise ValueError("sample must hold at least one value")
    if not callable(cdf):
        raise TypeError(f"cdf must be a callable, got {type(cdf).__name__}")
    s = np.sort(s)
    f = np.asarray(cdf(s), dtype=np.float64)
    if f.shape != s.shape or not np.all(np.isfinite(f)) or np.any(f < -1e-12) or np.any(f > 1 + 1e-12):
        raise ValueError("cdf must return finite values in [0, 1] of the same shape as the sample")
    n = s.shape[0]
    i = np.arange(1, n + 1)
    return float(max(np.max(i / n - f), np.max(f - (i - 1) / n)))


def ks_threshold(n, alpha=0.05):
    """Asymptotic critical value of the KS statistic: ``sqrt(-ln(alpha / 2) / 2) / sqrt(n)``.

    An i.i.d. sample of size n from F exceeds it with probability about ``alpha``
    (1.358 / sqrt(n) at alpha = 0.05).

    Parameters
    ----------
    n : int
        Sample size, >= 1.
    alpha : float
        Level, in ``(0, 1)``.

    Returns
    -------
    float
    """
    n = v.integer("n", n, minimum=1)
    alpha = v.real_scalar("alpha", alpha, minimum=0.0, strict=True, maximum=1.0)
    return math.sqrt(-math.log(alpha / 2.0) / 2.0) / math.sqrt(n)


# ---------------------------------------------------------------------- targets on S^2
def seam_curve(k, b=0.3):
    """``k`` points tracing the closed 'tennis-ball seam' on S^2, equally spaced in the parameter.

    ``x = a cos t + b cos 3t, y = a sin t - b sin 3t, z = 2 sqrt(a b) sin 2t`` with
    ``a = 1 - b``; ``|x| = 1`` exactly since ``(a + b)^2 = 1``.  ``b`` in (0, 1/2].

    Parameters
    ----------
    k : int
        Number of points.
    b : float
        Shape, in ``(0, 1/2]``.

    Returns
    -------
    ndarray
        ``(k, 3)`` unit vectors.
    """
    k = v.integer("k", k, minimum=1)
    b = v.real_scalar("b", b, minimum=0.0, strict=True, maximum=0.5)
    a = 1.0 - b
    t = TWO_PI * np.arange(k) / k
    pts = np.stack([a * np.cos(t) + b * np.cos(3 * t), a * np.sin(t) - b * np.sin(3 * t),
                    2.0 * np.sqrt(a * b) * np.sin(2 * t)], axis=1)
    return pts / np.linalg.norm(pts, axis=1, keepdims=True)


def _centers_on_sphere(centers):
    c = v.points_on_sphere("centers", centers)
    if c.shape[1] != 3:
        raise ValueError(f"centers must be points of S^2 (shape (m, 3)), got {c.shape}")
    return c


def vmf_mixture_pdf(x, centers, kappas, weights):
    """Density on S^2 (w.r.t. area) of a von Mises-Fisher mixture.

    ``f(x) = sum_k w_k kappa_k e^{kappa_k (<c_k, x> - 1)} / (2 pi (1 - e^{-2 kappa_k}))``
    (``1 / (4 pi)`` for ``kappa_k = 0``); weights are normalized.

    Parameters
    ----------
    x : array_like
        ``(m, 3)`` unit vectors.
    centers : array_like
        ``(K, 3)`` unit vectors.
    kappas, weights : array_like
        ``(K,)``.

    Returns
    -------
    ndarray
        ``(m,)`` densities.
    """
    x = v.points_on_sphere("x", x)
    c = _centers_on_sphere(centers)
    _, k, w = _mixture_args(np.zeros(c.shape[0]), kappas, weights)
    if x.shape[1] != 3:
        raise ValueError(f"x must be points of S^2 (shape (n, 3)), got {x.shape}")
    out = np.zeros(x.shape[0])
    for ck, kk, wk in zip(c, k, w, strict=True):
        if kk == 0.0:
            out += wk / (4.0 * np.pi)
        else:
            out += wk * kk * np.exp(kk * (x @ ck - 1.0)) / (TWO_PI * (1.0 - np.exp(-2.0 * kk)))
    return out


def vmf_mixture_sample(k, centers, kappas, weights, seed=None):
    """``k`` independent points of S^2 from a von Mises-Fisher mixture (exact sampling).

    The bump is chosen with probability ``w``; the height ``s = <c, x>`` about its
    center has the exact inverse CDF ``s = 1 + log(U + (1 - U) e^{-2 kappa}) / kappa``
    (uniform in [-1, 1] at kappa = 0) and the azimuth about c is uniform.

    Parameters
    ----------
    k : int
        Number of points.
    centers : array_like
        ``(K, 3)`` unit vectors.
    kappas, weights : array_like
        ``(K,)``.
    seed : see :func:`usaav_edu.sphere.make_rng`
        The seed.

    Returns
    -------
    points : ndarray
        ``(k, 3)`` unit vectors.
    bump : ndarray
        ``(k,)`` int, the index of the bump each point was drawn from.
    """
    k = v.integer("k", k, minimum=1)
    c = _centers_on_sphere(centers)
    _, kap, w = _mixture_args(np.zeros(c.shape[0]), kappas, weights)
    rng = make_rng(seed)
    comp = rng.choice(c.shape[0], size=k, p=w)
    u = rng.random(k)
    kk = kap[comp]
    safe = np.where(kk > 0, kk, 1.0)
    s = np.where(kk > 0, 1.0 + np.log(u + (1.0 - u) * np.exp(-2.0 * safe)) / safe, 2.0 * u - 1.0)
    s = np.clip(s, -1.0, 1.0)
    phi = TWO_PI * rng.random(k)
    r = np.sqrt(np.maximum(0.0, 1.0 - s * s))
    pts = np.empty((k, 3))
    for i in range(k):
        e3 = c[comp[i]]
        e1, e2 = _orthonormal_pair(e3)
        pts[i] = s[i] * e3 + r[i] * (np.cos(phi[i]) * e1 + np.sin(phi[i]) * e2)
    pts /= np.linalg.norm(pts, axis=1, keepdims=True)
    return pts, comp


def _orthonormal_pair(u):
    """Two unit vectors completing ``u`` (unit, in R^3) to a right-handed orthonormal basis."""
    a = np.eye(3)[int(np.argmin(np.abs(u)))]
    e1 = a - (a @ u) * u
    e1 /= np.linalg.norm(e1)
    return e1, np.cross(u, e1)


def symmetric_cap(n, axis=(0.0, 0.0, 1.0), m=4, heights=(0.2, 0.9), seed=None):
    """``n`` points of S^2 in the cap ``<x, axis> in heights``, invariant under rotation by ``2 pi / m`` about ``axis``.

    ``n / m`` seed points (random height in ``heights`` and random azimuth) are
    copied by the m rotations; n must be a multiple of m, m >= 2.  Started from
    these points as gauge coordinates, plain USA keeps them in the open
    hemisphere of ``axis`` and symmetric, so they collapse exactly onto ``axis``.

    Parameters
    ----------
    n : int
        Number of points, a multiple of ``m``.
    axis : array_like
        Unit vector of the symmetry axis.
    m : int
        Order of the rotation symmetry, >= 2.
    heights : tuple of float
        Range of ``<x, axis>``.
    seed : see :func:`usaav_edu.sphere.make_rng`
        The seed.

    Returns
    -------
    ndarray
        ``(n, 3)`` unit vectors.
    """
    n = v.integer("n", n, minimum=1)
    m = v.integer("m", m, minimum=2)
    if n % m != 0:
        raise ValueError(f"n must be a multiple of m = {m}, got n = {n}")
    ax = v.points_on_sphere("axis", np.reshape(v.float_array("axis", axis, ndim=1), (1, -1)))[0]
    if ax.shape[0] != 3:
        raise ValueError(f"axis must be a point of S^2 (3 coordinates), got {ax.shape[0]}")
    h = v.float_array("heights", heights, ndim=1)
    if h.shape != (2,) or not (0.0 < h[0] <= h[1] < 1.0):
        raise ValueError(f"heights must be (low, high) with 0 < low <= high < 1, got {h.tolist()}")
    rng = make_rng(seed)
    q = n // m
    s = rng.uniform(h[0], h[1], q)
    phi = TWO_PI * rng.random(q)
    e1, e2 = _orthonormal_pair(ax)
    r = np.sqrt(1.0 - s * s)
    pts = np.empty((n, 3))
    for j in range(m):
        a = phi + TWO_PI * j / m
        pts[j * q:(j + 1) * q] = (s[:, None] * ax + r[:, None] * (np.cos(a)[:, None] * e1
                                                                   + np.sin(a)[:, None] * e2))
    return pts / np.linalg.norm(pts, axis=1, keepdims=True)
