r"""The mean-field limit on the sphere :math:`S^2`: a spherical-harmonic Galerkin solver (d = 3).

A density :math:`f(t, x)` of tokens on :math:`S^2` (:math:`\int f \, d\sigma = 1`) obeys,
for USA,

.. math::

    \partial_t f + \operatorname{div}(f\, \nabla U) = 0,

    U(x) = \int \varphi(\langle x, y \rangle) f(y)\, d\sigma(y),

(``div`` and :math:`\nabla` tangential): the token at ``x`` moves with
:math:`P_x \int \varphi'(\langle x, y\rangle) y f(y)\, dy = \nabla U(x)`.  By the
Funk-Hecke formula the convolution is diagonal in spherical harmonics,
:math:`U_{lm} = \lambda_l f_{lm}` with :math:`\lambda_l = 2\pi \int_{-1}^1 \varphi(s) P_l(s)\,
ds`: :math:`\lambda_l = 4\pi\, i_l(\beta) / \beta` for :math:`\varphi(s) = e^{\beta s}/\beta`
(:math:`i_l` the modified spherical Bessel functions) and :math:`\lambda_1 = 4\pi/3`, the
others 0, for the linear profile :math:`\varphi(s) = s`.  SA divides the velocity by
:math:`Z(x) = \int \varphi'(\langle x, y\rangle) f(y)\, dy`, whose coefficients are
:math:`\beta \lambda_l f_{lm}` (exp) or the mass (linear).  The energy
:math:`E[f] = \frac12 \iint \varphi(\langle x, y\rangle) f(x) f(y) = \frac12 \sum_{lm}
\lambda_l |f_{lm}|^2` never falls.

**Labels and gauges.**  As on the circle (:mod:`usaav_edu.meanfield.solver`), a model with
labels takes ``L`` label values with weights ``rho`` and one conditional density per label.
In gauge coordinates :math:`y = G(\xi_l) x` every model is USA (or SA) with the weights
:math:`a_{lj} = \rho_j b(\xi_l, \xi_j)` (Theorem 4.1, ch4-thm-conjugacy, of the book): the
gauge densities :math:`g_l(y) = f_l(G(\xi_l)^T y)` obey
:math:`\partial_t g_l + \operatorname{div}(g_l \nabla U_l / Z_l) = 0` with
:math:`U_l = \sum_j a_{lj}\, \varphi * g_j`.  The solver holds the gauge coefficients; the
rotation of coefficients is exact (:func:`usaav_edu.meanfield.harmonics.rotate`).  The
gauges: the identity, RoPE with one rotation plane (about ``e3``), prefix gauges (one frame
per prompt), and any gauge whose ``matrices`` are orthogonal ``3 x 3``.

**Numerics.**  The state is the coefficients of degree ``<= lmax``.  The flux
:math:`g \nabla U / Z` is formed on a Gauss-Legendre grid of ``3 lmax / 2 + 2`` rings and
at least ``3 lmax + 2`` longitudes (the 3/2 rule: for USA the projection
:math:`-\int g \nabla U \cdot \nabla \overline{Y_{lm}}` has degree ``3 lmax`` and is exact, so
no product aliases into the kept degrees) and its divergence is projected by the adjoint
spin-1 transform (:func:`usaav_edu.meanfield.harmonics.divergence`).  The degree 0 is never
changed: the mass is conserved to round-off.  Time: the Dormand-Prince 5(4) stepper,
controller and frame loop of the circle solver (and of the particle solver), with the step
bounded by ``STABILITY / (sqrt(lmax (lmax + 1)) max|w|)``; with noise the diffusion
:math:`(\sigma^2/2) \Delta f` adds :math:`-(\sigma^2/2)\, l(l+1) f_{lm}`.

**Collapse.**  After every step the **tail** (the share of the L2 norm in the top third of
the degrees, :math:`l \ge \lceil 2(L+1)/3 \rceil`) and the least grid value are measured, as
on the circle; a density that outgrows the grid stops the run
(:class:`~usaav_edu.errors.UnresolvedError`, or ``Status.UNRESOLVED``).

References
----------
The book's chapter on the mean-field limit; B. Geshkovski, C. Letrouit, Y. Polyanskiy,
P. Rigollet, "A mathematical perspective on Transformers" (2023) (the equation on the sphere);
C. Müller, *Spherical Harmonics*, Lecture Notes in Mathematics 17, Springer (1966) (the
Funk-Hecke formula); J. P. Boyd, *Chebyshev and Fourier Spectral Methods*, 2nd ed., Dover
(2001), chapter 18.
"""

import math

import numpy as np

from .. import _validate as v
from ..dynamics.fastsum.expansions import scaled_spherical_bessel_i
from ..models.model import require_model
from . import harmonics as H

FOUR_PI = 4.0 * np.pi


def _good_size(n):
    """The least length ``>= n`` whose FFT ducc0 computes fast (small prime factors)."""
    import ducc0.fft  # loaded on first use, as the transforms
    return int(ducc0.fft.good_size(n))


def check_grid(grid):
    """``grid`` checked: a :class:`~usaav_edu.meanfield.harmonics.SphereGrid`."""
    if not isinstance(grid, H.SphereGrid):
        raise TypeError(f"grid must be a SphereGrid (usaav_edu.meanfield.sphere_grid(lmax)), got "
                        f"{type(grid).__name__}")
    return grid


def sphere_model(model, name="model"):
    """``model`` checked for the sphere solver (d = 3, post-LN, the book's kernels)."""
    model = require_model(model, name)
    if model.general:
        raise ValueError(f"{name}: the sphere solver takes the book's kernels (exp or linear "
                         f"profile, symmetric bias, no projections); model {model.name!r} needs "
                         f"the general kernel: simulate its particles")
    if not model.rotate_values:
        raise ValueError(f"{name}: the variant with unrotated values (rotate_values=False) is not "
                         f"a gradient flow and has no density solver here")
    if model.layer_norm != "post":
        raise ValueError(f"{name}: pre-LN (layer_norm={model.layer_norm!r}) moves tokens off the "
                         f"sphere and has no density solver here; simulate its particles")
    gauge_d = getattr(model.gauge, "d", None)
    fits = getattr(model.gauge, "fits", None)
    if (gauge_d not in (None, 3)) or (fits is not None and not fits(3)):
        raise ValueError(f"{name}: the sphere solver works in d = 3; the gauge of model "
                         f"{model.name!r} ({type(model.gauge).__name__}) does not act on R^3")
    return model


def rotations(model, xi):
    """``(L, 3, 3)`` the gauge matrices ``G(xi_l)``, or None for the identity gauge."""
    if xi is None or getattr(model.gauge, "identity", False):
        return None
    mats = np.asarray(model.gauge_matrices(xi, 3), dtype=np.float64)
    if mats.shape != (xi.size, 3, 3):
        raise ValueError(f"model: the gauge gave matrices of shape {mats.shape} for {xi.size} "
                         f"labels in d = 3, expected ({xi.size}, 3, 3)")
    return mats


def check_densities(name, f, grid, n_labels, labelled, mass_tol, negative_tol):
    """``f`` as ``(L, M)`` grid values: finite, non-negative, each of mass 1 within ``mass_tol``."""
    arr = v.float_array(name, f)
    size = grid.size
    if labelled:
        if arr.shape != (n_labels, size):
            raise ValueError(f"{name} must have shape ({n_labels}, {size}): one density per label "
                             f"of xi at the {size} points of the grid, got shape {arr.shape}")
    else:
        if arr.shape != (size,):
            raise ValueError(f"{name} must have shape ({size},) (one value per point of the grid "
                             f"of lmax = {grid.lmax}), got shape {arr.shape}")
        arr = arr[None, :]
    top, low = float(np.max(arr)), float(np.min(arr))
    if low < -negative_tol * max(top, 0.0) or top <= 0.0:
        raise ValueError(f"{name} must be a non-negative density (values >= 0), got a smallest "
                         f"value {low:.3g} (largest {top:.3g})")
    mass = arr @ grid.weights
    bad = np.abs(mass - 1.0) > mass_tol
    if np.any(bad):
        k = int(np.argmax(np.abs(mass - 1.0)))
        which = f"{name}[{k}]" if labelled else name
        raise ValueError(f"{which} must integrate to 1 within {mass_tol:g} (sum of the grid "
                         f"weights times the values = {mass[k]:.16g}); it is not renormalized: "
                         f"divide it by its mass yourself if that is what you mean")
    return arr


def funk_hecke(model, lmax):
    r"""``(lmax + 1,)`` the Funk-Hecke eigenvalues :math:`\lambda_l` of :math:`\varphi` on S^2.

    :math:`\lambda_l = 2\pi \int_{-1}^1 \varphi(s) P_l(s)\, ds`: :math:`4\pi i_l(\beta)/\beta`
    for :math:`\varphi(s) = e^{\beta s}/\beta` (with :math:`i_l(-b) = (-1)^l i_l(b)`), and
    :math:`4\pi/3` at ``l = 1`` (0 elsewhere) for the linear profile.

    Returns
    -------
    tuple
        ``(lam, scaled)``: the eigenvalues, and :math:`e^{-|\beta|} i_l(|\beta|)` with the
        signs of :math:`i_l(\beta)` (None for the linear profile).
    """
    if model.linear:
        lam = np.zeros(lmax + 1)
        lam[1] = FOUR_PI / 3.0
        return lam, None
    beta = model.beta
    size = abs(beta)
    scaled = scaled_spherical_bessel_i(lmax + 1, size)
    if beta < 0.0:
        scaled = scaled * (-1.0) ** np.arange(lmax + 1)
    return FOUR_PI * math.exp(size) / beta * scaled, scaled


def sphere_tail(c, lmax):
    """The largest over the rows of the share of the L2 norm in degrees ``>= ceil(2 (lmax+1)/3)``."""
    p = H.power(c, lmax)
    kc = -(-2 * (lmax + 1) // 3)
    total = p.sum(axis=-1)
    return float(np.max(np.sqrt(p[..., kc:].sum(axis=-1) / total)))


class SphereOperator:
    """The discretized equation on S^2 (the interface of the circle's ``_Operator``)."""

    def __init__(self, model, grid, xi, a, rotations=None, noise=0.0):
        self.model, self.grid, self.xi, self.a = model, grid, xi, a
        self.lmax = L = grid.lmax
        self.rotations = rotations
        self.ntheta, self.nphi = grid.ntheta, grid.nphi
        # 3 lmax + 2 longitudes at least, rounded up to a length of small prime factors (an FFT
        # of 2 x 97 points costs three times one of 196)
        self.fine = (3 * L) // 2 + 2, _good_size(3 * L + 2)
        nodes, w = np.polynomial.legendre.leggauss(self.fine[0])
        self.fine_weights = w[::-1] * (2.0 * np.pi / self.fine[1])
        ell = H.degrees(L)
        self.degree = math.sqrt(L * (L + 1.0))
        self.sa = model.normalization == "sa"
        lam, scaled = funk_hecke(model, L)
        self.lam = lam[ell]
        self.z_coef = None if scaled is None else (model.beta * lam)[ell]
        self.noise = noise
        self.heat = 0.5 * noise * noise * ell * (ell + 1.0)
        self.heat_rate = 0.5 * noise * noise * L * (L + 1.0)
        self.m_weight = np.where(H.orders(L) > 0, 2.0, 1.0)
        if model.linear:
            self.k_max, self.phi_bound = 1.0, 1.0
        else:
            beta = model.beta
            size, top = abs(beta), (1.0 if beta > 0.0 else -1.0)
            u = np.linspace(0.0, np.pi, 2001)
            peak = float(np.max(np.exp(beta * (np.cos(u) - top)) * np.sin(u)))
            self.k_max = peak * math.exp(size)
            self.phi_bound = max(1.0, math.exp(size) / size)
        self.bad = None
        self.speed = 0.0

    # state <-> grid
    def coefficients(self, f):
        """Gauge coefficients ``(L, nc)`` of content densities ``f`` ``(L, M)``."""
        c = H.analysis(f.reshape(f.shape[0], self.ntheta, self.nphi), self.lmax)
        return self._rotate(c, inverse=False)

    def _rotate(self, c, inverse):
        if self.rotations is None:
            return c
        out = np.empty_like(c)
        for index in np.ndindex(c.shape[:-1]):
            r = self.rotations[index[-1]]
            out[index] = H.rotate(c[index], self.lmax, r.T if inverse else r)
        return out

    def gauge(self, c):
        """Gauge coefficients of content coefficients ``c`` (``(..., L, nc)``)."""
        return self._rotate(c, inverse=False)

    def content(self, g):
        """Content coefficients of gauge coefficients ``g`` (``(..., L, nc)``)."""
        return self._rotate(g, inverse=True)

    def values(self, c):
        """Grid values ``(..., M)`` on the solver's grid of coefficients ``c``."""
        maps = H.synthesis(c, self.lmax, self.ntheta, self.nphi)
        return maps.reshape(maps.shape[:-2] + (-1,))

    def max_speed(self):
        """A bound of ``|w|``: the largest row sum of ``|A|`` times ``max |phi'(cos u) sin u|``."""
        if self.sa:
            return 1.0
        return float(np.max(np.abs(self.a).sum(axis=1))) * self.k_max

    def _mix(self, g):
        return np.einsum("lj,jk->lk", self.a, g)

    def _normalizer(self, mix, shape):
        """``Z_l`` on the grid of ``shape`` (rings, longitudes)."""
        if self.z_coef is None:  # linear: phi' = 1, Z = sum_j a_lj mass_j
            return (math.sqrt(FOUR_PI) * mix[:, 0].real)[:, None, None]
        return H.synthesis(self.z_coef * mix, self.lmax, *shape)

    def velocity_gauge(self, g, shape):
        """``(L, 2, rings, longitudes)``: the velocity ``grad U_l / Z_l`` of each label."""
        mix = self._mix(g)
        w = H.gradient(self.lam * mix, self.lmax, *shape)
        if self.sa:
            z = self._normalizer(mix, shape)
            with np.errstate(divide="ignore", invalid="ignore"):
                w = w / z[:, None]
        return w

    def why_not_finite(self, g, w):
        """Why the velocity ``w`` of the gauge coefficients ``g`` holds NaN or inf (one line)."""
        rows = np.flatnonzero(~np.all(np.isfinite(w.reshape(w.shape[0], -1)), axis=-1))
        ell = int(rows[0]) if rows.size else 0
        label = "" if self.xi is None else f" of label {ell} (xi = {self.xi[ell]:g})"
        kind = "NaN" if np.isnan(w[ell]).any() else "inf"
        if not np.all(np.isfinite(g)):
            return (f"the velocity{label} is {kind} because the density itself holds NaN or inf "
                    f"values")
        if self.sa:
            z = self._normalizer(self._mix(g), self.fine)
            return (f"the velocity{label} is {kind} where its SA normalizer comes to "
                    f"{float(np.min(z[ell])):.3g}: rho and the bias leave that label (almost) "
                    f"nothing to attend to")
        return (f"the velocity{label} is {kind}: the attention field overflowed (model "
                f"{self.model.name}, beta = {self.model.beta:g})")

    def rhs(self, g):
        """``dg/dt = -P(div(g w)) - (noise^2 / 2) l (l + 1) g`` with the flux on the fine grid."""
        f = H.synthesis(g, self.lmax, *self.fine)
        w = self.velocity_gauge(g, self.fine)
        if not np.all(np.isfinite(w)):
            self.bad = self.why_not_finite(g, w)
        self.speed = float(np.sqrt(np.max(np.sum(w * w, axis=1))))
        out = -H.divergence(f[:, None] * w, self.fine_weights, self.lmax)
        if self.noise == 0.0:
            return out
        return out - self.heat * g

    def energy(self, g, rho):
        """``1/2 sum_l rho_l sum_j a_lj <g_l, phi * g_j>``, by Parseval in the harmonics."""
        mix = self._mix(g)
        per = 0.5 * (self.m_weight * self.lam * (g * np.conj(mix)).real).sum(axis=1)
        r = np.ones(1) if rho is None else rho
        return float(r @ per)

    def tail(self, g):
        """The resolution monitor: :func:`sphere_tail`."""
        return sphere_tail(g, self.lmax)

    def mass(self, c):
        """``sqrt(4 pi) Re c_00``: the integral of the density with coefficients ``c``."""
        return math.sqrt(FOUR_PI) * c[..., 0].real

    modes = "degrees of the spherical harmonics"
