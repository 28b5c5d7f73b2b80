r"""Spherical harmonics on Gauss-Legendre grids of :math:`S^2`: the transforms of the sphere solver.

A real function of degree at most ``lmax`` is :math:`f = \sum_{l \le L} \sum_{|m| \le l}
a_{lm} Y_{lm}` with the orthonormal harmonics :math:`Y_{lm}` (:math:`\int Y_{lm}
\overline{Y_{l'm'}} \, d\sigma = \delta_{ll'} \delta_{mm'}`) and
:math:`a_{l,-m} = (-1)^m \overline{a_{lm}}`; only :math:`m \ge 0` is stored, in the order of
healpy and ducc0 (``m = 0`` for ``l = 0 .. L``, then ``m = 1``, ...).  The transforms are
those of the ducc0 library (``ducc0.sht``):

* :func:`synthesis`: grid values of coefficients;
* :func:`analysis`: coefficients of grid values by Gauss-Legendre quadrature,
  :math:`a_{lm} = \sum_k w_k f(x_k) \overline{Y_{lm}(x_k)}`, exact for degree up to ``lmax``
  on a grid of ``lmax + 1`` rings;
* :func:`gradient`: the components :math:`(\partial_\theta f, \partial_\varphi f / \sin\theta)`
  of the tangential gradient;
* :func:`divergence`: the Galerkin projection
  :math:`\int \operatorname{div}(V)\, \overline{Y_{lm}} \, d\sigma
  = -\int V \cdot \nabla \overline{Y_{lm}} \, d\sigma`, by the adjoint of the spin-1 synthesis,
  :math:`-\sqrt{l(l+1)}\, E_{lm}`;
* :func:`rotate`: the coefficients of :math:`f(R^T x)` for a rotation or reflection ``R``.

References
----------
M. Reinecke, ducc0 (Distinctly Useful Code Collection), https://gitlab.mpcdf.mpg.de/mtr/ducc;
M. Reinecke and D. S. Seljebotn, "Libsharp: spherical harmonic transforms revisited",
Astron. Astrophys. 554 (2013) A112; J. P. Boyd, *Chebyshev and Fourier Spectral Methods*,
2nd ed., Dover (2001), chapter 18 (spherical harmonics, the 3/2 rule).
"""

from dataclasses import dataclass, field

import numpy as np

from .. import _validate as v

__all__ = ["SphereGrid", "sphere_grid", "degrees", "orders", "n_coefficients", "synthesis",
           "analysis", "gradient", "divergence", "rotate", "evaluate", "power", "LMAX_MIN",
           "LMAX_MAX"]

LMAX_MIN = 4
"""The least degree of a sphere grid."""
LMAX_MAX = 1024
"""The largest degree of a sphere grid (``(L + 1) (2 L + 2)`` points: about 2.1 million)."""
FOUR_PI = 4.0 * np.pi


def _sht():
    import ducc0.sht  # loaded on first use: the circle solver does not need it
    return ducc0.sht


def n_coefficients(lmax):
    """``(lmax + 1) (lmax + 2) / 2``: the stored coefficients (``m >= 0``) of degree ``<= lmax``."""
    return (lmax + 1) * (lmax + 2) // 2


def degrees(lmax):
    """``(n_coefficients(lmax),)`` the degree ``l`` of every stored coefficient."""
    return np.concatenate([np.arange(m, lmax + 1) for m in range(lmax + 1)])


def orders(lmax):
    """``(n_coefficients(lmax),)`` the order ``m >= 0`` of every stored coefficient."""
    return np.concatenate([np.full(lmax + 1 - m, m) for m in range(lmax + 1)])


@dataclass(frozen=True, eq=False)
class SphereGrid:
    """A Gauss-Legendre grid of the sphere, exact for the products of the solver.

    ``ntheta = lmax + 1`` rings at the Gauss-Legendre nodes of :math:`\\cos\\theta` (north to
    south) times ``nphi = 2 lmax + 2`` equispaced longitudes from 0: the quadrature
    :math:`\\sum_k w_k f(x_k)` is exact for every polynomial of degree up to ``2 lmax + 1``, so
    analysis recovers the coefficients of a function of degree ``<= lmax`` exactly.

    Attributes
    ----------
    lmax : int
        The largest degree of a density on the grid.
    theta : ndarray
        ``(ntheta,)`` the colatitudes of the rings, increasing.
    phi : ndarray
        ``(nphi,)`` the longitudes ``2 pi j / nphi``.
    points : ndarray
        ``(M,)`` by 3: the unit vectors
        ``(sin theta cos phi, sin theta sin phi, cos theta)``, ring by ring (``M = ntheta nphi``).
    weights : ndarray
        ``(M,)`` the quadrature weights, positive, summing to ``4 pi``.
    """

    lmax: int
    theta: np.ndarray = field(repr=False)
    phi: np.ndarray = field(repr=False)
    points: np.ndarray = field(repr=False)
    weights: np.ndarray = field(repr=False)

    @property
    def ntheta(self):
        """The number of rings."""
        return self.theta.size

    @property
    def nphi(self):
        """The number of points per ring."""
        return self.phi.size

    @property
    def size(self):
        """The number of points ``M``."""
        return self.weights.size

    def integrate(self, values):
        """``sum_k w_k values[..., k]``: the integral over the sphere of grid values ``(..., M)``."""
        return np.asarray(values, dtype=np.float64) @ self.weights


def _rule(ntheta, nphi):
    """Colatitudes, longitudes, points and weights of the ``ntheta`` by ``nphi`` grid."""
    nodes, w = np.polynomial.legendre.leggauss(ntheta)
    theta = np.arccos(nodes[::-1])
    w = w[::-1] * (2.0 * np.pi / nphi)
    phi = 2.0 * np.pi * np.arange(nphi) / nphi
    st = np.sin(theta)[:, None]
    points = np.stack([st * np.cos(phi)[None, :], st * np.sin(phi)[None, :],
                       np.broadcast_to(np.cos(theta)[:, None], (ntheta, nphi))], axis=-1)
    return theta, phi, points.reshape(-1, 3), np.repeat(w, nphi)


def sphere_grid(lmax):
    r"""The Gauss-Legendre grid of :math:`S^2` for densities of degree at most ``lmax``.

    ``lmax + 1`` rings at the roots of :math:`P_{L+1}(\cos\theta)` times ``2 lmax + 2``
    equispaced longitudes, with the weights :math:`w_k = (2\pi / n_\varphi)\, w^{GL}_j` of
    the ring ``j`` of the point ``k``: :math:`\sum_k w_k = 4\pi`, and
    :math:`\sum_k w_k f(x_k) = \int_{S^2} f \, d\sigma` for every polynomial ``f`` of degree up
    to ``2 lmax + 1``.

    Parameters
    ----------
    lmax : int
        The largest degree, from ``LMAX_MIN`` (4) to ``LMAX_MAX`` (1024).

    Returns
    -------
    SphereGrid

    Raises
    ------
    TypeError, ValueError
        If ``lmax`` is not an integer in that range.

    Examples
    --------
    >>> import numpy as np
    >>> import usaav_edu as ue
    >>> grid = ue.meanfield.sphere_grid(8)
    >>> grid.points.shape, round(float(grid.weights.sum() / np.pi), 12)
    ((162, 3), 4.0)
    >>> z = grid.points[:, 2]
    >>> bool(np.isclose(grid.integrate(z ** 2), 4 * np.pi / 3))
    True
    """
    lmax = v.integer("lmax", lmax, minimum=LMAX_MIN)
    if lmax > LMAX_MAX:
        raise ValueError(f"lmax must be <= {LMAX_MAX} (a grid of (lmax + 1) (2 lmax + 2) points), "
                         f"got {lmax}")
    theta, phi, points, weights = _rule(lmax + 1, 2 * lmax + 2)
    for arr in (theta, phi, points, weights):
        arr.flags.writeable = False
    return SphereGrid(lmax, theta, phi, points, weights)


def synthesis(alm, lmax, ntheta, nphi):
    """Grid values ``(..., ntheta, nphi)`` of coefficients ``(..., n_coefficients(lmax))``."""
    sht = _sht()
    alm = np.asarray(alm, dtype=np.complex128)
    flat = alm.reshape(-1, alm.shape[-1])
    out = np.empty((flat.shape[0], ntheta, nphi))
    for i, a in enumerate(flat):
        sht.synthesis_2d(alm=a[None], spin=0, lmax=lmax, geometry="GL", ntheta=ntheta, nphi=nphi,
                         map=out[i:i + 1])
    return out.reshape(alm.shape[:-1] + (ntheta, nphi))


def analysis(maps, lmax):
    """Coefficients ``(..., n_coefficients(lmax))`` of grid values ``(..., ntheta, nphi)``."""
    sht = _sht()
    maps = np.asarray(maps, dtype=np.float64)
    flat = maps.reshape((-1,) + maps.shape[-2:])
    out = np.empty((flat.shape[0], n_coefficients(lmax)), dtype=np.complex128)
    for i, mp in enumerate(flat):
        out[i] = sht.analysis_2d(map=np.ascontiguousarray(mp)[None], spin=0, lmax=lmax,
                                 geometry="GL")[0]
    return out.reshape(maps.shape[:-2] + (out.shape[-1],))


def gradient(alm, lmax, ntheta, nphi):
    r"""``(..., 2, ntheta, nphi)``: :math:`(\partial_\theta f, \partial_\varphi f / \sin\theta)`."""
    sht = _sht()
    alm = np.asarray(alm, dtype=np.complex128)
    flat = alm.reshape(-1, alm.shape[-1])
    out = np.empty((flat.shape[0], 2, ntheta, nphi))
    for i, a in enumerate(flat):
        sht.synthesis_2d_deriv1(alm=a[None], lmax=lmax, geometry="GL", ntheta=ntheta, nphi=nphi,
                                map=out[i])
    return out.reshape(alm.shape[:-1] + (2, ntheta, nphi))


def divergence(field_values, weights, lmax):
    r"""The coefficients of :math:`\operatorname{div} V` projected on degrees ``<= lmax``.

    ``field_values`` ``(..., 2, ntheta, nphi)`` holds the :math:`(\theta, \varphi)`
    components of ``V`` on a Gauss-Legendre grid and ``weights`` ``(ntheta,)`` the weights of
    its rings (per point).  The result is
    :math:`-\sum_k w_k V(x_k) \cdot \nabla \overline{Y_{lm}}(x_k)`, the Galerkin projection
    :math:`\int \operatorname{div}(V) \overline{Y_{lm}}` whenever the quadrature is exact for
    the integrand; it has no degree-0 part (the integral of a divergence vanishes).
    """
    sht = _sht()
    vals = np.asarray(field_values, dtype=np.float64)
    flat = vals.reshape((-1,) + vals.shape[-3:])
    ell = degrees(lmax).astype(np.float64)
    root = np.sqrt(ell * (ell + 1.0))
    out = np.empty((flat.shape[0], n_coefficients(lmax)), dtype=np.complex128)
    w = np.asarray(weights, dtype=np.float64)[None, :, None]
    for i, vec in enumerate(flat):
        e = sht.adjoint_synthesis_2d(map=np.ascontiguousarray(vec * w), spin=1, lmax=lmax,
                                     geometry="GL")
        out[i] = -root * e[0]
    return out.reshape(vals.shape[:-3] + (out.shape[-1],))


def _euler_zyz(r):
    """Angles ``(psi, theta, phi)`` with ``r = Rz(phi) Ry(theta) Rz(psi)`` for a rotation ``r``."""
    theta = float(np.arccos(np.clip(r[2, 2], -1.0, 1.0)))
    if abs(np.sin(theta)) > 1e-12:
        phi = float(np.arctan2(r[1, 2], r[0, 2]))
        psi = float(np.arctan2(r[2, 1], -r[2, 0]))
    elif r[2, 2] > 0.0:  # a rotation about z by phi + psi
        phi, psi = float(np.arctan2(r[1, 0], r[0, 0])), 0.0
    else:  # Ry(pi) then z: r = Rz(phi) Ry(pi), Ry(pi) maps e1 to -e1
        phi, psi = float(np.arctan2(-r[1, 0], -r[0, 0])), 0.0
    return psi, theta, phi


def rotate(alm, lmax, r):
    r"""The coefficients of :math:`f(R^T x)` from those of ``f``, for an orthogonal ``R``.

    A rotation goes through ducc0's ``rotate_alm`` with the ZYZ Euler angles of ``R``; a
    reflection (:math:`\det R = -1`) is :math:`-R'` with ``R'`` a rotation, and
    :math:`f(-x)` has the coefficients :math:`(-1)^l a_{lm}`.
    """
    sht = _sht()
    r = np.asarray(r, dtype=np.float64)
    alm = np.asarray(alm, dtype=np.complex128)
    sign = 1.0
    if np.linalg.det(r) < 0.0:
        r, sign = -r, -1.0
    psi, theta, phi = _euler_zyz(r)
    out = sht.rotate_alm(alm.copy(), lmax, psi, theta, phi)
    if sign < 0.0:
        out = out * (-1.0) ** degrees(lmax)
    return out


def evaluate(alm, lmax, points):
    """Values ``(n,)`` at unit vectors ``points`` ``(n, 3)`` of the function with coefficients ``alm``."""
    sht = _sht()
    p = np.asarray(points, dtype=np.float64)
    loc = np.empty((p.shape[0], 2))
    loc[:, 0] = np.arccos(np.clip(p[:, 2], -1.0, 1.0))
    loc[:, 1] = np.mod(np.arctan2(p[:, 1], p[:, 0]), 2.0 * np.pi)
    a = np.asarray(alm, dtype=np.complex128)[None]
    return sht.synthesis_general(alm=a, spin=0, lmax=lmax, loc=loc, epsilon=1e-13)[0]


def power(alm, lmax):
    """``(..., lmax + 1)``: ``sum_m |a_lm|^2`` over ``-l <= m <= l`` for every degree ``l``."""
    a = np.asarray(alm)
    sq = np.abs(a) ** 2 * np.where(orders(lmax) > 0, 2.0, 1.0)
    ell = degrees(lmax)
    flat = sq.reshape(-1, sq.shape[-1])
    out = np.stack([np.bincount(ell, weights=row, minlength=lmax + 1) for row in flat])
    return out.reshape(a.shape[:-1] + (lmax + 1,))
