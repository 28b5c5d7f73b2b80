"""Densities of many tokens: kernel density estimates on the sphere S^2 and the circle S^1.

A cloud of 100,000 tokens is easier to read as a density than as points.  This module turns the
points of a frame into values of a density at the vertices of a fixed mesh, which a view then
colours (see ``usaav_edu.widgets.DensityView``).

* ``sphere_mesh(level)``: the icosphere, a regular icosahedron whose faces are split ``level``
  times into four and whose vertices are pushed onto the unit sphere, with the area of the
  sphere that belongs to each vertex (quadrature weights summing to ``4 pi``).
* ``sphere_density(x, mesh, bandwidth)``: the von Mises-Fisher kernel density estimate of
  points of S^2 at the vertices of the mesh.
* ``circle_mesh(m)`` and ``circle_density(x, mesh, bandwidth)``: the same on the circle S^1
  (d = 2) with the von Mises kernel.

The estimates are plain sums over the points, ``O(n * vertices)`` operations, in a compiled loop
(Numba, parallel over the vertices, with the package's vectorizable exponential) that needs no
memory beyond the points and the result.  Nothing here draws.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from .. import _validate as v
from ..dynamics.fastexp import fexp
from ..dynamics.fastsum.expansions import scaled_bessel_i

#: finest icosphere offered (10 * 4**7 + 2 = 163,842 vertices)
MAX_LEVEL = 7


@dataclass(frozen=True, eq=False)
class SphereMesh:
    """A triangle mesh of the unit sphere S^2 (``sphere_mesh``) or of the circle S^1
    (``circle_mesh``, where the "faces" are the arcs between neighbouring points).

    Attributes
    ----------
    vertices : ndarray
        ``(V, d)`` unit vectors (d = 3 for the sphere, 2 for the circle).
    faces : ndarray
        ``(F, 3)`` vertex indices of each triangle, counter-clockwise seen from outside
        (sphere), or ``(F, 2)`` the ends of each arc (circle).
    weights : ndarray
        ``(V,)`` the measure of the part of the sphere (area) or circle (length) that belongs to
        each vertex: a third of the area of every spherical triangle at the vertex (half the
        length of each arc); they sum to ``4 pi`` (``2 pi``), so ``sum(f * weights)``
        approximates the integral of ``f``.
    level : int
        Subdivision level (sphere) or number of points (circle).
    spacing : float
        The mean distance between neighbouring vertices (edge length), in radians.
    """

    vertices: np.ndarray
    faces: np.ndarray
    weights: np.ndarray
    level: int
    spacing: float

    @property
    def d(self) -> int:
        """Dimension of the ambient space, 3 for the sphere S^2 and 2 for the circle S^1."""
        return int(self.vertices.shape[1])

    def integrate(self, values) -> float:
        """Quadrature of a function given by its ``values`` at the vertices:
        ``sum_k values_k * weights_k``.

        Parameters
        ----------
        values : array_like
            ``(V,)`` finite values at the vertices.

        Returns
        -------
        float
        """
        values = v.float_array("values", values)
        if values.shape != self.weights.shape:
            raise ValueError(f"values must have shape {self.weights.shape}, got {values.shape}")
        if not np.all(np.isfinite(values)):
            raise ValueError("values must be finite")
        return float(values @ self.weights)


def _icosahedron() -> tuple[np.ndarray, np.ndarray]:
    g = (1.0 + math.sqrt(5.0)) / 2.0
    verts = np.array([[-1, g, 0], [1, g, 0], [-1, -g, 0], [1, -g, 0],
                      [0, -1, g], [0, 1, g], [0, -1, -g], [0, 1, -g],
                      [g, 0, -1], [g, 0, 1], [-g, 0, -1], [-g, 0, 1]], dtype=float)
    faces = np.array([[0, 11, 5], [0, 5, 1], [0, 1, 7], [0, 7, 10], [0, 10, 11],
                      [1, 5, 9], [5, 11, 4], [11, 10, 2], [10, 7, 6], [7, 1, 8],
                      [3, 9, 4], [3, 4, 2], [3, 2, 6], [3, 6, 8], [3, 8, 9],
                      [4, 9, 5], [2, 4, 11], [6, 2, 10], [8, 6, 7], [9, 8, 1]], dtype=np.int64)
    return verts / np.linalg.norm(verts, axis=1, keepdims=True), faces


def _subdivide(verts: np.ndarray, faces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Split every triangle into four at its edge midpoints (pushed onto the sphere)."""
    edges = np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]), axis=1)
    unique, inverse = np.unique(edges, axis=0, return_inverse=True)
    mid = verts[unique[:, 0]] + verts[unique[:, 1]]
    mid /= np.linalg.norm(mid, axis=1, keepdims=True)
    m = len(faces)
    ab, bc, ca = (len(verts) + inverse.reshape(-1)[k * m:(k + 1) * m] for k in range(3))
    a, b, c = faces.T
    new = np.concatenate([np.stack([a, ab, ca], axis=1), np.stack([ab, b, bc], axis=1),
                          np.stack([ca, bc, c], axis=1), np.stack([ab, bc, ca], axis=1)])
    return np.concatenate([verts, mid]), new


def _spherical_triangle_areas(verts: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Area of each spherical triangle (a, b, c): ``E = 2 atan2(|a . (b x c)|,
    1 + a.b + b.c + c.a)`` (the solid angle of the triangle seen from the centre)."""
    a, b, c = verts[faces[:, 0]], verts[faces[:, 1]], verts[faces[:, 2]]
    triple = np.abs(np.einsum("ij,ij->i", a, np.cross(b, c)))
    denom = 1.0 + np.einsum("ij,ij->i", a, b) + np.einsum("ij,ij->i", b, c) \
        + np.einsum("ij,ij->i", c, a)
    return 2.0 * np.arctan2(triple, denom)


def sphere_mesh(level: int = 4) -> SphereMesh:
    """The icosphere of subdivision ``level``: a triangle mesh of the unit sphere S^2.

    Start from the regular icosahedron (12 vertices, 20 faces) and split every face ``level``
    times into four at its edge midpoints, pushing each new vertex onto the sphere.  The mesh
    has ``V = 10 * 4**level + 2`` vertices and ``F = 20 * 4**level`` faces (level 3: 642 and
    1280, level 4: 2562 and 5120); its edges are on average 1.1 to 1.2 times ``1 / 2**level``
    radians long (``spacing``).  The weight of a vertex is a third of the area of each
    spherical triangle at it, the area of the triangle (a, b, c) being
    ``2 atan2(|a . (b x c)|, 1 + a.b + b.c + c.a)``.

    Parameters
    ----------
    level : int
        Subdivisions, 0 to ``MAX_LEVEL`` (7).

    Returns
    -------
    SphereMesh

    Raises
    ------
    TypeError, ValueError
        If ``level`` is not an integer in ``[0, MAX_LEVEL]``.
    """
    level = v.integer("level", level, minimum=0)
    if level > MAX_LEVEL:
        raise ValueError(f"level must be at most {MAX_LEVEL} ({10 * 4 ** MAX_LEVEL + 2} vertices), "
                         f"got {level}")
    verts, faces = _icosahedron()
    for _ in range(level):
        verts, faces = _subdivide(verts, faces)
    area = _spherical_triangle_areas(verts, faces)
    weights = np.zeros(len(verts))
    for k in range(3):
        np.add.at(weights, faces[:, k], area / 3.0)
    edges = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    cos = np.clip(np.einsum("ij,ij->i", verts[edges[:, 0]], verts[edges[:, 1]]), -1.0, 1.0)
    return SphereMesh(vertices=verts, faces=faces.astype(np.int64), weights=weights,
                      level=level, spacing=float(np.mean(np.arccos(cos))))


def circle_mesh(m: int = 256) -> SphereMesh:
    """``m`` equally spaced points of the unit circle S^1, ``(cos(2 pi k / m), sin(2 pi k / m))``,
    each with weight ``2 pi / m`` (the arcs are the "faces").

    Parameters
    ----------
    m : int
        Number of points, at least 3.

    Returns
    -------
    SphereMesh
        With ``level = m`` and ``spacing = 2 pi / m``.

    Raises
    ------
    TypeError, ValueError
        If ``m`` is not an integer >= 3.
    """
    m = v.integer("m", m, minimum=3)
    theta = 2.0 * np.pi * np.arange(m) / m
    verts = np.stack([np.cos(theta), np.sin(theta)], axis=1)
    faces = np.stack([np.arange(m), (np.arange(m) + 1) % m], axis=1).astype(np.int64)
    return SphereMesh(vertices=verts, faces=faces, weights=np.full(m, 2.0 * np.pi / m),
                      level=m, spacing=2.0 * np.pi / m)


def default_bandwidth(n: int, mesh: SphereMesh) -> float:
    """The bandwidth ``sphere_density`` and ``circle_density`` use when given none:
    ``h = max(n**(-1/6), 2 * mesh.spacing)`` on the sphere and ``max(n**(-1/5), 2 *
    mesh.spacing)`` on the circle, in radians.

    ``n**(-1/(k+4))`` is the rate at which the best bandwidth of a kernel estimate of a smooth
    density on a k-dimensional space shrinks with ``n`` (k = 2 for the sphere, 1 for the
    circle); twice the mesh spacing keeps the narrowest peak wider than the mesh can show.

    Parameters
    ----------
    n : int
        Number of points, >= 1.
    mesh : SphereMesh
        The mesh the density is evaluated on.

    Returns
    -------
    float
    """
    n = v.integer("n", n, minimum=1)
    _check_mesh(mesh)
    rate = -1.0 / 6.0 if mesh.d == 3 else -1.0 / 5.0
    return float(max(n ** rate, 2.0 * mesh.spacing))


def _check_mesh(mesh) -> SphereMesh:
    if not isinstance(mesh, SphereMesh):
        raise TypeError(f"mesh must be a SphereMesh (from sphere_mesh or circle_mesh), "
                        f"got {type(mesh).__name__}")
    return mesh


def _kappa(bandwidth, n: int, mesh: SphereMesh) -> tuple[float, float]:
    if bandwidth is None:
        h = default_bandwidth(n, mesh)
    else:
        h = v.real_scalar("bandwidth", bandwidth, minimum=0.0, strict=True)
        if h > math.pi:
            raise ValueError(f"bandwidth must be at most pi (an angle in radians), got {h:g}")
    return h, 1.0 / h ** 2


@njit(cache=True, fastmath=True, parallel=True)
def _kernel_sums_nb(xt, w, nodes, kappa, out):  # pragma: no cover (compiled)
    n = xt.shape[1]
    for k in prange(nodes.shape[0]):
        a, b, c = nodes[k, 0], nodes[k, 1], nodes[k, 2]
        s = 0.0
        for i in range(n):
            s += w[i] * fexp(kappa * (a * xt[0, i] + b * xt[1, i] + c * xt[2, i] - 1.0))
        out[k] = s


def _kernel_sums(x: np.ndarray, nodes: np.ndarray, kappa: float, w: np.ndarray) -> np.ndarray:
    """``sum_i w_i exp(kappa (<nodes_k, x_i> - 1))`` for every node k (a compiled loop, in
    parallel over the nodes; the circle's 2-vectors get a zero third coordinate)."""
    pad = 3 - x.shape[1]
    xt = np.ascontiguousarray(np.pad(x, ((0, 0), (0, pad))).T)
    nodes3 = np.ascontiguousarray(np.pad(nodes, ((0, 0), (0, pad))))
    out = np.empty(len(nodes3))
    _kernel_sums_nb(xt, np.ascontiguousarray(w, dtype=np.float64), nodes3, float(kappa), out)
    return out


def _points(x, d: int, what: str) -> np.ndarray:
    x = v.points_on_sphere("x", x)
    if x.shape[1] != d:
        raise ValueError(f"x must hold points of {what} (shape (n, {d})), got shape {x.shape}")
    return x


def _weights(weights, n: int) -> np.ndarray:
    if weights is None:
        return np.full(n, 1.0 / n)
    w = v.float_array("weights", weights)
    if w.shape != (n,):
        raise ValueError(f"weights must have shape ({n},), one per point, got {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0) or not w.sum() > 0:
        raise ValueError("weights must be finite, non-negative and not all zero")
    return w / w.sum()


_SPACES = {3: ("sphere", "the sphere S^2", "circle"), 2: ("circle", "the circle S^1", "sphere")}


def _density_args(x, mesh, bandwidth, weights, d):
    """``(x, w, kappa)`` of a density of points of ``S^{d-1}`` (``d`` = 3 or 2), checked."""
    _check_mesh(mesh)
    space, name, other = _SPACES[d]
    if mesh.d != d:
        raise ValueError(f"mesh must be a mesh of the {space} ({space}_mesh); for points of the "
                         f"{other} use {other}_density with {other}_mesh")
    x = _points(x, d, name)
    w = _weights(weights, len(x))
    _, kappa = _kappa(bandwidth, len(x), mesh)
    return x, w, kappa


def sphere_density(x, mesh: SphereMesh, bandwidth: float | None = None, *,
                   weights=None) -> np.ndarray:
    """Kernel density estimate of points of S^2 at the vertices of a mesh (von Mises-Fisher).

    With ``kappa = 1 / h**2`` (``h = bandwidth``, an angle in radians)::

        f(v) = (1/n) sum_i C(kappa) exp(kappa <v, x_i>),
        C(kappa) = kappa / (4 pi sinh kappa),

    computed as ``kappa / (2 pi (1 - exp(-2 kappa))) * exp(kappa (<v, x_i> - 1))`` so that no
    exponential overflows.  Each kernel is the von Mises-Fisher density with mean direction
    ``x_i``, which integrates to 1 over the sphere; so does ``f``, whatever the points.  Near
    its centre the kernel is a Gaussian of standard deviation ``h`` in each direction.  With
    ``weights`` the mean ``1/n sum_i`` becomes ``sum_i w_i / sum_i w_i``.  Cost:
    ``O(n * V)`` operations for ``V`` vertices.

    Parameters
    ----------
    x : array_like
        ``(n, 3)`` unit vectors.
    mesh : SphereMesh
        From ``sphere_mesh``.
    bandwidth : float, optional
        ``h`` in ``(0, pi]``; by default ``default_bandwidth(n, mesh)``.
    weights : array_like, optional
        ``(n,)`` non-negative weights of the points.

    Returns
    -------
    ndarray
        ``(V,)`` density values (per unit area; the uniform density is ``1 / (4 pi)``).

    Raises
    ------
    TypeError, ValueError
        For points that are not finite unit vectors of R^3, a mesh that is not a sphere mesh,
        or a bandwidth outside ``(0, pi]``.
    """
    x, w, kappa = _density_args(x, mesh, bandwidth, weights, 3)
    norm = kappa / (2.0 * math.pi * -math.expm1(-2.0 * kappa))
    return norm * _kernel_sums(x, mesh.vertices, kappa, w)


def circle_density(x, mesh: SphereMesh, bandwidth: float | None = None, *,
                   weights=None) -> np.ndarray:
    """Kernel density estimate of points of the circle S^1 at the points of a mesh (von Mises).

    With ``kappa = 1 / h**2`` (``h = bandwidth``, radians)::

        f(v) = (1/n) sum_i exp(kappa <v, x_i>) / (2 pi I_0(kappa)),

    computed as ``exp(kappa (<v, x_i> - 1)) / (2 pi e^{-kappa} I_0(kappa))``; each kernel is the
    von Mises density around ``x_i`` and integrates to 1 over the circle, and so does ``f``.
    ``e^{-kappa} I_0(kappa)`` is the package's scaled Bessel function
    (:func:`usaav_edu.dynamics.fastsum.expansions.scaled_bessel_i`).  ``weights`` as in
    ``sphere_density``.

    Parameters
    ----------
    x : array_like
        ``(n, 2)`` unit vectors.
    mesh : SphereMesh
        From :func:`circle_mesh`.
    bandwidth, weights
        As in :func:`sphere_density`.

    Returns
    -------
    ndarray
        ``(m,)`` density values (per unit length; the uniform density is ``1 / (2 pi)``).

    Raises
    ------
    TypeError, ValueError
        As ``sphere_density``.
    """
    x, w, kappa = _density_args(x, mesh, bandwidth, weights, 2)
    norm = 1.0 / (2.0 * math.pi * scaled_bessel_i(1, kappa)[0])
    return norm * _kernel_sums(x, mesh.vertices, kappa, w)
