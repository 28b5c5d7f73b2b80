r"""Samples of a density on :math:`S^2` and their distance to it (kernel mean discrepancy).

A density ``f`` is given by its values at the points of a :class:`.harmonics.SphereGrid`, with
:math:`\sum_k w_k f_k = 1`; the law it stands for is its spherical-harmonic interpolant, of
degree at most ``grid.lmax`` (the coefficients of :func:`.harmonics.analysis`).

* :func:`sample_sphere`: independent points of that law, by rejection from the uniform law;
* :func:`sphere_distance`: the maximum mean discrepancy (MMD) between the empirical law of a
  point cloud and that law, for the Gaussian kernel of the sphere, summed exactly in spherical
  harmonics.

References
----------
A. Gretton, K. M. Borgwardt, M. J. Rasch, B. Schoelkopf and A. Smola, "A kernel two-sample
test", J. Mach. Learn. Res. 13 (2012) 723-773; B. K. Sriperumbudur, K. Fukumizu and
G. R. G. Lanckriet, "Universality, characteristic kernels and RKHS embedding of measures",
J. Mach. Learn. Res. 12 (2011) 2389-2410.
"""

import math

import numpy as np

from .. import _validate as v
from ..dynamics.fastsum.expansions import scaled_spherical_bessel_i
from . import harmonics as h
from .sphere import check_densities, check_grid

__all__ = ["sample_sphere", "sphere_distance"]

FOUR_PI = 4.0 * np.pi
MASS_TOL = 1e-10  # how far the mass sum_k w_k f_k of a density may be from 1
NEGATIVE_TOL = 1e-9  # how far below zero a density may go, relative to its maximum
UNIT_TOL = 1e-9  # how far from 1 the norm of a point may be
OVERSAMPLING = 4  # the envelope is the maximum on a grid this many times finer each way ...
ENVELOPE_MARGIN = 1.05  # ... times this margin
MAX_PROPOSALS = 5e7  # the largest expected number of proposals of a run of sample_sphere
BATCH_MAX = 1 << 20  # the largest batch of proposals
TAIL_TOL = 1e-16  # the kernel's series is cut where its tail is below this fraction of its sum
BANDWIDTH_MIN = 0.005
"""The least bandwidth of :func:`sphere_distance` (the series then stops near degree 1716)."""


def _density(grid, f):
    """Check ``grid`` and ``f`` (shape, finite, not negative on the grid, mass 1); return ``f``."""
    grid = check_grid(grid)
    return check_densities("f", f, grid, 1, False, MASS_TOL, NEGATIVE_TOL)[0]


def _envelope(alm, grid):
    """``ENVELOPE_MARGIN`` times the maximum of the interpolant on the finer grid, checked >= 0."""
    fine = h.synthesis(alm, grid.lmax, OVERSAMPLING * grid.ntheta, OVERSAMPLING * grid.nphi)
    top, low = float(np.max(fine)), float(np.min(fine))
    if low < -NEGATIVE_TOL * top:
        raise ValueError(f"f must be a density, >= 0: its interpolant of degree {grid.lmax} goes "
                         f"down to {low:.3g} (maximum {top:.3g}) on a {OVERSAMPLING} times finer "
                         "grid")
    return ENVELOPE_MARGIN * top


def sample_sphere(grid, f, n, seed=None):
    r"""``n`` independent points of the density with values ``f`` on ``grid``.

    The density is the interpolant :math:`\tilde f = \sum_{l \le L} \sum_m a_{lm} Y_{lm}` of
    :func:`.harmonics.analysis` (``L = grid.lmax``).  Rejection from the uniform law: a
    proposal ``x`` (a normalized standard normal vector) is kept with probability
    :math:`\tilde f(x) / E`, with the envelope :math:`E = 1.05 \max \tilde f` over a grid 4
    times finer each way; a run takes about :math:`4 \pi n E` proposals.  A proposal above
    ``E`` (the envelope too low) is an error, never a silently biased sample.

    Parameters
    ----------
    grid : SphereGrid
        The grid of ``f`` (:func:`.harmonics.sphere_grid`).
    f : array_like
        ``(M,)`` the density at ``grid.points``: ``>= 0`` (to ``1e-9`` of its maximum, also on
        the finer grid) with ``sum(grid.weights * f) = 1`` within ``1e-10``.
    n : int
        The number of points, ``>= 1``.
    seed : int or None
        The seed of ``numpy.random.default_rng``, ``>= 0``.

    Returns
    -------
    ndarray
        ``(n, 3)`` unit vectors.

    Raises
    ------
    TypeError, ValueError
        If an argument is not as above, if the run would take more than ``5e7`` proposals
        (expected), or if the envelope proves too low.

    Examples
    --------
    >>> import numpy as np
    >>> from usaav_edu.meanfield.harmonics import sphere_grid
    >>> from usaav_edu.meanfield.sphere_samples import sample_sphere
    >>> grid = sphere_grid(8)
    >>> f = (1.0 + 0.9 * grid.points[:, 2]) / (4.0 * np.pi)
    >>> x = sample_sphere(grid, f, 20000, seed=0)
    >>> x.shape, bool(abs(x[:, 2].mean() - 0.3) < 0.02)
    ((20000, 3), True)
    """
    f = _density(grid, f)
    n = v.integer("n", n, minimum=1)
    if seed is not None:
        seed = v.integer("seed", seed, minimum=0)
    alm = h.analysis(f.reshape(grid.ntheta, grid.nphi), grid.lmax)
    envelope = _envelope(alm, grid)
    per_point = FOUR_PI * envelope  # expected proposals per accepted point
    if n * per_point > MAX_PROPOSALS:
        raise ValueError(f"n = {n} points of this density would take about {n * per_point:.3g} "
                         f"proposals (envelope {envelope:.3g}), more than {MAX_PROPOSALS:g}: "
                         "ask for fewer points")
    rng = np.random.default_rng(seed)
    kept, have = [], 0
    while have < n:
        size = int(min(BATCH_MAX, max(1024, math.ceil(1.1 * (n - have) * per_point))))
        x = rng.standard_normal((size, 3))
        x /= np.linalg.norm(x, axis=1)[:, None]
        values = h.evaluate(alm, grid.lmax, x)
        keep = rng.random(size) * envelope < values
        if np.any(values[keep] > envelope):
            raise ValueError(f"the envelope {envelope:.6g} of the rejection was too low: the "
                             f"density reaches {float(np.max(values)):.6g}; no sample returned")
        kept.append(x[keep])
        have += int(np.count_nonzero(keep))
    return np.concatenate(kept)[:n]


def _kernel_series(kappa):
    """``(L, lam)``: the cut degree and ``lam_l = 4 pi e^{-kappa} i_l(kappa)``, ``l <= L``."""
    count = 2 * math.ceil(kappa) + 64  # beyond 2 kappa the terms more than halve at each step
    scaled = scaled_spherical_bessel_i(count, kappa)
    terms = (2.0 * np.arange(count) + 1.0) * scaled
    tails = np.cumsum(terms[::-1])[::-1] + terms[-1]  # tails[l] >= sum_{k >= l} terms[k]
    below = np.nonzero(tails[1:] < TAIL_TOL * math.fsum(terms))[0]
    degree = max(int(below[0]) if below.size else count - 1, 2)
    return degree, FOUR_PI * scaled[:degree + 1]


def _resized(alm, lmax, new):
    """The coefficients ``alm`` of degree ``<= lmax`` in the layout of degree ``new``."""
    ell, m = h.degrees(lmax), h.orders(lmax)
    keep = ell <= new
    out = np.zeros(h.n_coefficients(new), dtype=np.complex128)
    out[m[keep] * (2 * new + 1 - m[keep]) // 2 + ell[keep]] = alm[keep]
    return out


def _empirical(x, lmax):
    r""":math:`\mu_{lm} = \frac1n \sum_i \overline{Y_{lm}(x_i)}`, ``l <= lmax``."""
    loc = np.empty((x.shape[0], 2))
    loc[:, 0] = np.arccos(np.clip(x[:, 2], -1.0, 1.0))
    loc[:, 1] = np.mod(np.arctan2(x[:, 1], x[:, 0]), 2.0 * np.pi)
    weights = np.full((1, x.shape[0]), 1.0 / x.shape[0])
    return h._sht().adjoint_synthesis_general(map=weights, spin=0, lmax=lmax, loc=loc,
                                              epsilon=1e-13)[0]


def _points(points):
    """``points`` checked: ``(n, 3)``, ``n >= 1``, finite, unit vectors to ``UNIT_TOL``."""
    x = v.float_array("points", points, ndim=2)
    if x.shape[0] < 1 or x.shape[1] != 3:
        raise ValueError(f"points must have shape (n, 3) with n >= 1, got shape {x.shape}")
    err = float(np.max(np.abs(np.linalg.norm(x, axis=1) - 1.0)))
    if err > UNIT_TOL:
        raise ValueError(f"points must be unit vectors (|x_i| = 1 within {UNIT_TOL:g}); the "
                         f"largest deviation is {err:.3g}")
    return x


def sphere_distance(points, grid, f, bandwidth=0.5):
    r"""The kernel mean discrepancy between the points and the density ``f`` on ``grid``.

    With the Gaussian kernel of the sphere,
    :math:`k(x, y) = e^{-|x - y|^2 / (2 s^2)} = e^{-\kappa} e^{\kappa \langle x, y \rangle}`,
    :math:`\kappa = 1 / s^2` (characteristic: the MMD is a metric on probability laws), and the
    Funk-Hecke expansion :math:`e^{\kappa \langle x, y \rangle} = \sum_l 4 \pi i_l(\kappa)
    \sum_{|m| \le l} Y_{lm}(x) \overline{Y_{lm}(y)}`,

    .. math::

        \mathrm{MMD}^2 = \sum_{l \le L} 4 \pi e^{-\kappa} i_l(\kappa)
                         \sum_{|m| \le l} |\mu_{lm} - \nu_{lm}|^2,

        \mu_{lm} = \frac1n \sum_i \overline{Y_{lm}(x_i)},

    with :math:`\nu_{lm}` the coefficients of ``f`` (:func:`.harmonics.analysis`; zero beyond
    ``grid.lmax``) and :math:`\mu_{lm}` from ducc0's ``adjoint_synthesis_general``
    (:math:`O(n + L^2)`).  The cut ``L`` is the least degree with
    :math:`\sum_{l > L} (2l + 1) e^{-\kappa} i_l(\kappa) < 10^{-16}` times the whole sum
    (which is :math:`k(x, x) = 1`); as :math:`\sum_m |Y_{lm}(x)|^2 = (2l + 1) / (4 \pi)`, the
    terms left out have :math:`\sum_m |\mu_{lm} - \nu_{lm}|^2 \le (2l + 1) / \pi`, and
    change :math:`\mathrm{MMD}^2` by at most :math:`4 \times 10^{-16}`.

    Parameters
    ----------
    points : array_like
        ``(n, 3)`` unit vectors (within ``1e-9``), ``n >= 1``.
    grid : SphereGrid
        The grid of ``f``.
    f : array_like
        ``(M,)`` the density at ``grid.points``, as in :func:`sample_sphere` (here checked >= 0
        on ``grid`` alone).
    bandwidth : float
        ``s``, finite, ``>= 0.005`` (below, the series would pass degree 1716).

    Returns
    -------
    float
        The MMD, :math:`\ge 0`.

    Examples
    --------
    One point against the uniform law:
    :math:`\mathrm{MMD}^2 = 1 - (1 - e^{-2\kappa}) / (2 \kappa)`.

    >>> import numpy as np
    >>> from usaav_edu.meanfield.harmonics import sphere_grid
    >>> from usaav_edu.meanfield.sphere_samples import sphere_distance
    >>> grid = sphere_grid(4)
    >>> uniform = np.full(grid.size, 1.0 / (4.0 * np.pi))
    >>> d = sphere_distance([[0.0, 0.0, 1.0]], grid, uniform)
    >>> exact = 1.0 - (1.0 - np.exp(-8.0)) / 8.0  # kappa = 4
    >>> bool(np.isclose(d ** 2, exact, rtol=0.0, atol=1e-13))
    True
    """
    x = _points(points)
    f = _density(grid, f)
    s = v.real_scalar("bandwidth", bandwidth, minimum=0.0, strict=True)
    if s < BANDWIDTH_MIN:
        raise ValueError(f"bandwidth must be >= {BANDWIDTH_MIN} (the kernel's series would need "
                         f"degrees beyond about {8.6 / s:.0f}), got {s}")
    degree, lam = _kernel_series(1.0 / s ** 2)
    nu = h.analysis(f.reshape(grid.ntheta, grid.nphi), grid.lmax)
    diff = _empirical(x, degree) - _resized(nu, grid.lmax, degree)
    mmd2 = math.fsum(lam * h.power(diff, degree))
    if mmd2 < 0.0:  # a sum of terms >= 0: only round-off
        if mmd2 < -1e-14:
            raise ValueError(f"the squared discrepancy came out negative, {mmd2:.3g}")
        mmd2 = 0.0
    return math.sqrt(mmd2)
