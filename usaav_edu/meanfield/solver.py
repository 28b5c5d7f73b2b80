r"""The mean-field limit on the circle: a spectral solver of the density equation (d = 2).

As :math:`n \to \infty` the empirical law of the tokens obeys a continuity equation (the book's
chapter on the mean-field limit; arXiv:2605.30229).  On the circle, with a token
:math:`x = (\cos\theta, \sin\theta)` and a density :math:`f(t, \theta)` of the angle
(:math:`\int_0^{2\pi} f \, d\theta = 1`), USA reads

.. math::

    \partial_t f + \partial_\theta (f\, w[f]) = 0,

    w[f](\theta) = \int \varphi'(\cos(s - \theta)) \sin(s - \theta) f(s)\, ds
                 = \partial_\theta (\Phi * f)(\theta),

with :math:`\Phi(u) = \varphi(\cos u)` and :math:`*` the convolution on the circle: a particle
at :math:`\theta` moves with the velocity :math:`w` that ``n`` particles give it,
:math:`\frac{1}{n} \sum_j \varphi'(\cos(\theta_j - \theta)) \sin(\theta_j - \theta)`.  The
equation is the gradient ascent (in the Wasserstein metric) of the energy

.. math::

    E[f] = \frac{1}{2} \iint \varphi(\cos(s - t))\, f(s) f(t)\, ds\, dt,

which it never lowers.

**Labels.**  A model with labels takes ``L`` label values ``xi_1 .. xi_L`` with weights
``rho_1 .. rho_L`` (the law of the labels) and one conditional density :math:`f_l` per label,
each of mass 1.  In the gauge angle :math:`\psi = \theta + \omega \xi` (the RoPE gauge in d = 2
rotates the token by :math:`\omega \xi`; the identity gauge has :math:`\omega = 0`) the
conditional densities :math:`g_l(\psi) = f_l(\psi - \omega \xi_l)` obey

.. math::

    \partial_t g_l + \partial_\psi (g_l w_l) = 0,

    w_l(\psi) = \sum_j \rho_j\, b(\xi_l, \xi_j)
                \int \varphi'(\cos(s - \psi)) \sin(s - \psi)\, g_j(s)\, ds,

the limit of ``n_l = rho_l n`` tokens per label (Theorem 4.1 (ch4-thm-conjugacy) of the book:
in gauge coordinates every model is USA with the weights ``b``).  A token's content angle moves
with its gauge angle (its label is frozen), so the content velocity of label ``l`` at ``theta``
is ``w_l(theta + omega xi_l)``.  The input and the output are content densities ``f_l``;
:meth:`DensityTrajectory.in_gauge` gives the gauge densities.  If every conditional starts as
one ``g0`` shifted, ``f_l(0, theta) = g0(theta + omega xi_l)``, and ``b = 1``, all ``g_l`` solve
USA from ``g0``, so ``f_l(t, theta) = g(t, theta + omega xi_l)``.  The SA normalization divides
``w_l`` by the local weight ``sum_j rho_j b(xi_l, xi_j) int phi'(cos(s - psi)) g_j(s) ds``.

**Numerics.**  A density on the grid ``theta_k = 2 pi k / m`` (``m`` even, at least 16) is its
trigonometric interpolant of degree below ``m / 2`` (the mode ``m / 2``, which a grid cannot
shift or differentiate, is dropped), held as its Fourier coefficients
:math:`c_k = \int f(\theta) e^{-i k \theta} d\theta`, :math:`k = 0, \dots, m/2 - 1` (so
:math:`c_0` is the mass).  The velocity is exact in Fourier space: :math:`w_k = i k \Phi_k c_k`
with :math:`\Phi_k = 2 \pi I_k(\beta) / \beta` for :math:`\varphi(s) = e^{\beta s} / \beta`
(:math:`I_k` the modified Bessel functions, computed as :math:`e^{-|\beta|} I_k(|\beta|)` by
:func:`usaav_edu.dynamics.fastsum.expansions.scaled_bessel_i`, the function fast summation uses,
with :math:`I_k(-b) = (-1)^k I_k(b)` for :math:`\beta < 0`, and scaled back by
:math:`e^{|\beta|}`) and :math:`\Phi_{\pm 1} = \pi` for the linear profile.
The flux ``f w`` is formed on a grid of ``3m/2`` points (zero padding: no aliasing into the kept
modes) and differentiated in Fourier space, so the scheme is the Galerkin truncation of the
equation: the mass ``c_0`` is never changed (its time derivative is exactly ``0 * flux``) and, for
USA and ``f >= 0``, the energy cannot fall.  Time: Dormand-Prince 5(4)
(:data:`usaav_edu.dynamics.integrate.tableaus.DOPRI5`), the stepper, step-size controller and frame loop of
:mod:`usaav_edu.dynamics.integrate` that the particle solver uses, with error control on the grid
values, the identity as the retraction and the step bounded by stability (``STABILITY``).
With noise (``solve(..., noise=sigma)``) the diffusion :math:`(\sigma^2/2)\, \partial_\theta^2 f`
adds :math:`-(\sigma^2/2) k^2 c_k` to every mode, leaves the mass alone, and bounds the step
too (``DIFFUSION_STABILITY``).

**Collapse.**  USA concentrates the density (without labels it tends to a Dirac mass), and a
fixed grid resolves only so much.  After every step the solver measures the **tail**, the
fraction of the L2 norm of ``f`` carried by the top third of its modes

.. math::

    \mathrm{tail} = \Big(\sum_{k \ge \lceil m/3 \rceil} |c_k|^2 \Big/ \sum_k |c_k|^2\Big)^{1/2}

(the largest over the labels), and the least value of ``f`` on the grid.  A tail above ``tail_tol`` or a value below
``-negative_tol * max f`` means that the density has sharpened beyond what the grid resolves;
:func:`solve` then raises :class:`~usaav_edu.errors.UnresolvedError` (which carries the frames computed so far)
or, with ``on_failure="return"``, returns them with the status ``Status.UNRESOLVED``.

**Particles and densities.**  :func:`sample` draws angles from a density (randomly or at its
quantiles); :func:`empirical_distance` measures how far such angles (or those of a particle
run) are from a density, in W1, Kolmogorov-Smirnov or Kuiper distance on the circle.

Every function validates its input and raises TypeError or ValueError naming the argument.

References
----------
The book's chapter on the mean-field limit; F. Golse, "On the dynamics of large particle
systems in the mean field limit", in *Macroscopic and Large Scale Phenomena*, Springer (2016)
(stability of the limit); B. Geshkovski, C. Letrouit, Y. Polyanskiy, P. Rigollet, "A
mathematical perspective on Transformers" (2023) (the equation on the circle);
J. P. Boyd, *Chebyshev and Fourier Spectral Methods*, 2nd ed., Dover (2001), chapter 11
(dealiasing by zero padding).
"""

import math
import warnings
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from .. import _validate as v
from ..dynamics.fastsum.expansions import scaled_bessel_i
from ..dynamics.integrate import EPS, Control, Controller, Outcome, Workspace, run_frames
from ..dynamics.integrate import METHODS as _STEPPERS
from ..dynamics.integrate.loop import Status
from ..errors import IntegrationError, UnresolvedError
from ..models.model import Model, require_model
from .harmonics import analysis as _sphere_analysis
from .sphere import (
    SphereOperator,
    check_densities,
    check_grid,
    rotations,
    sphere_model,
    sphere_tail,
)

__all__ = [
    "solve", "DensityTrajectory", "Status", "grid", "energy", "velocity",
    "sample", "empirical_distance",
]

TWO_PI = 2.0 * np.pi
M_MIN = 16
TAIL_TOL = 1e-6
"""Default largest tail (the top third of the modes' share of the L2 norm) of a resolved density.

When the modes of a smooth density decay geometrically, a tail of 1e-6 in the top third leaves
about 1e-9 of the norm beyond the grid."""
NEGATIVE_TOL = 1e-6
"""Default largest depth of a negative value of a resolved density (relative to its maximum)."""
MASS_TOL = 1e-10
"""How far the mass of an input density, ``(2 pi / m) sum_k f(theta_k)``, may be from 1."""
INPUT_NEGATIVE_TOL = 1e-12
"""How negative an input density may be, relative to its largest value (round-off of a frame)."""
DEFAULT_MAX_STEPS = 10 ** 5
"""The default cap on the Dormand-Prince trial steps of one :func:`solve` call."""
ENERGY_RTOL = 1e-10
"""The relative fall of the energy between two frames that :func:`solve` tolerates (plus rtol)."""
STABILITY = 0.95
"""The largest ``h (m/2 - 1) max|w|`` of a step (see :func:`solve`).

The fastest Fourier mode ``k = m/2 - 1`` has eigenvalues up to about ``i k max|w|``, and
Dormand-Prince 5(4) damps ``y' = i lambda y`` only for ``|h lambda|`` up to about 1
(``|R(i)| = 1 + 1.4e-6``, ``|R(2 i)| = 1.03``).  Larger steps, which its error control would
accept, let the top modes grow to the size of the tolerance: noise that looks like a
density sharpening beyond the grid."""
DIFFUSION_STABILITY = 3.3
"""The largest ``h (noise^2 / 2) (m/2 - 1)^2`` of a step with diffusion (see :func:`solve`).

Dormand-Prince 5(4) damps ``y' = -a y`` for ``h a`` up to about 3.3 (``|R(-3.3)| = 0.988``),
and every ``h lambda`` in the triangle with the corners ``0``, ``+-0.95 i`` and ``-3.3``
(``|R| <= 1`` there, checked on a grid): a step with
``h ((m/2 - 1) max|w| / STABILITY + (noise^2/2) (m/2 - 1)^2 / DIFFUSION_STABILITY) <= 1``
is stable for the fastest mode, advected and diffused at once."""
METHODS = ("dopri5",)
"""The values of ``solve(method=...)``."""
STEPPERS = {name: _STEPPERS[name] for name in METHODS}
ON_FAILURE = ("raise", "return")
HOW = ("random", "quantile")
METRICS = ("w1", "ks", "kuiper")


# ---------------------------------------------------------------------- checks
def _check_m(m, name="m"):
    m = v.integer(name, m, minimum=M_MIN)
    if m % 2:
        raise ValueError(f"{name} must be even (the grid has m / 2 Fourier modes), got {m}")
    return m


def grid(m):
    r"""The uniform grid :math:`\theta_k = 2 \pi k / m` (:math:`k = 0, \dots, m - 1`) of the circle.

    Parameters
    ----------
    m : int
        The number of points: even, at least 16.

    Returns
    -------
    ndarray
        ``(m,)`` angles.

    Raises
    ------
    TypeError, ValueError
        If ``m`` is not an even integer >= 16.

    Examples
    --------
    >>> import usaav_edu as ue
    >>> theta = ue.meanfield.grid(16)
    >>> theta.shape, float(theta[0]), round(float(theta[4]), 4)  # pi / 2
    ((16,), 0.0, 1.5708)
    """
    m = _check_m(m)
    return TWO_PI * np.arange(m) / m


def _circle_model(model, name="model"):
    """``(model, omega)`` if the model acts on the circle; ValueError or TypeError otherwise."""
    model = require_model(model, name)
    g = model.gauge
    circle = getattr(g, "circle_frequency", None)
    if circle is None:
        raise ValueError(f"{name}: the density solver takes the identity gauge or the RoPE gauge "
                         f"in d = 2, got the gauge {type(g).__name__} ({model.name!r})")
    omega = circle(name)
    if not model.rotate_values:
        raise ValueError(f"{name}: the variant with unrotated values (rotate_values=False) is not "
                         f"a gradient flow and has no density solver here")
    if model.layer_norm != "post":
        raise ValueError(f"{name}: pre-LN (layer_norm={model.layer_norm!r}) moves tokens off the "
                         f"sphere and has no density solver here; simulate its particles")
    return model, omega


def _labels(model, xi, rho):
    """``(xi, rho, A)`` with ``A = B diag(rho)``, or ``(None, None, [[1]])`` without labels."""
    if model.labels == "none":
        if xi is not None or rho is not None:
            raise ValueError(f"xi and rho must be None for model {model.name!r}, which has no "
                             f"labels (give f as one density of shape (m,))")
        return None, None, np.ones((1, 1))
    if xi is None:
        raise ValueError(f"xi must be given for model {model.name!r} ({model.labels} labels): "
                         f"the L label values of the conditional densities")
    if model.labels == "prompt":  # prompt ids stay integers (the model checks them)
        arr = v.as_array("xi", xi, "a one-dimensional array of prompt ids")
        if arr.ndim != 1:
            raise ValueError(f"xi must be one-dimensional (one prompt id per label), got shape "
                             f"{arr.shape}")
    else:
        arr = v.float_array("xi", xi, ndim=1)
    if arr.size < 1:
        raise ValueError("xi must hold at least one label value")
    xi = model.check_labels(arr, arr.size)
    n_labels = xi.size
    if rho is None:
        rho = np.full(n_labels, 1.0 / n_labels)
    else:
        rho = v.float_array("rho", rho, ndim=1)
        if rho.shape != (n_labels,):
            raise ValueError(f"rho must have shape ({n_labels},) (one weight per label of xi), got "
                             f"{rho.shape}")
        if np.any(rho < 0.0):
            raise ValueError(f"rho must be non-negative weights, got a smallest weight "
                             f"{rho.min():.3g}")
        if abs(rho.sum() - 1.0) > MASS_TOL:
            raise ValueError(f"rho must sum to 1 within {MASS_TOL:g} (it is not renormalized), got "
                             f"a sum of {rho.sum():.16g}")
    bias = model.bias_matrix(xi)
    b = np.ones((n_labels, n_labels)) if bias is None else np.asarray(bias, dtype=np.float64)
    if model.normalization == "sa" and np.any(b < 0.0):
        raise ValueError(f"the SA normalization needs a non-negative bias; model {model.name!r} "
                         f"gives negative b(xi, zeta) for these xi")
    return xi, rho, b * rho[None, :]


def _check_normalizer(model, xi, rho, a):
    """Refuse labels whose SA normalizer vanishes.

    SA divides the velocity of label ``l`` by ``z_l(psi) = sum_j rho_j b(xi_l, xi_j)
    int phi'(cos(s - psi)) g_j(s) ds``.  With ``phi' > 0`` and densities of mass 1,
    ``z_l > 0`` exactly when some ``a_lj = rho_j b(xi_l, xi_j)`` is positive; when every one is
    0 (or below the smallest normal double, where the quotient loses its digits) the velocity
    is 0 / 0.
    """
    if model.normalization != "sa" or xi is None:
        return
    tiny = np.finfo(np.float64).tiny
    for ell in np.flatnonzero(a.max(axis=1) < tiny):
        bias = model.bias_matrix(xi)
        b = np.ones_like(a) if bias is None else np.asarray(bias, dtype=np.float64)
        seen = [j for j in range(a.shape[0]) if rho[j] > 0.0]
        raise ValueError(
            f"rho and the bias leave label {ell} (xi = {xi[ell]:g}) nothing to attend to: the SA "
            f"normalization of model {model.name!r} divides its velocity by "
            f"sum_j rho_j b(xi_l, xi_j) int phi'(cos(s - psi)) g_j(s) ds, and rho_j b(xi_{ell}, "
            f"xi_j) = 0 for every j (rho > 0 only for labels {seen}, where b(xi_{ell}, xi_j) = "
            f"{', '.join(f'{b[ell, j]:.3g}' for j in seen)}), so the velocity would be 0 / 0. "
            f"Give weight in rho to a label it attends to, a bias that does not vanish between "
            f"them, or leave label {ell} out.")


def _density(name, f, n_labels, labelled):
    """``f`` as an ``(L, m)`` float array of densities: finite, non-negative, mass 1 each."""
    arr = v.float_array(name, f)
    if labelled:
        if arr.ndim != 2 or arr.shape[0] != n_labels:
            raise ValueError(f"{name} must have shape ({n_labels}, m): one density per label of "
                             f"xi, got shape {arr.shape}")
    else:
        if arr.ndim != 1:
            raise ValueError(f"{name} must have shape (m,) (one density on the grid), got shape "
                             f"{arr.shape}")
        arr = arr[None, :]
    m = arr.shape[1]
    if m < M_MIN or m % 2:
        raise ValueError(f"{name} must have an even number m >= {M_MIN} of grid values per "
                         f"density, got m = {m}")
    top = float(np.max(arr))
    low = float(np.min(arr))
    if low < -INPUT_NEGATIVE_TOL * max(top, 0.0) or top <= 0.0:
        raise ValueError(f"{name} must be a non-negative density (values >= 0), got a smallest "
                         f"value {low:.3g} (largest {top:.3g})")
    mass = TWO_PI / m * arr.sum(axis=1)
    bad = np.abs(mass - 1.0) > MASS_TOL
    if np.any(bad):
        k = int(np.argmax(np.abs(mass - 1.0)))
        which = f"{name}[{k}]" if labelled else name
        raise ValueError(f"{which} must integrate to 1 within {MASS_TOL:g} ((2 pi / m) sum f = "
                         f"{mass[k]:.16g}); it is not renormalized: divide it by its mass "
                         f"yourself if that is what you mean")
    return arr


# ---------------------------------------------------------------------- the discrete operator
class _Operator:
    """The discretized equation on ``m`` points: coefficients computed once per run."""

    def __init__(self, model, omega, xi, a, m, noise=0.0):
        self.model, self.omega, self.xi, self.a = model, omega, xi, a
        self.m, self.N = m, m // 2
        self.M = 3 * self.N + (3 * self.N) % 2
        self.k = np.arange(self.N)
        self.ik = 1j * self.k
        self.noise = noise
        # the diffusion (noise^2 / 2) f'' in Fourier space: -(noise^2 / 2) k^2 c_k
        self.heat = 0.5 * noise * noise * self.k.astype(float) ** 2
        self.heat_rate = float(self.heat[-1])
        self.sa = model.normalization == "sa"
        beta = model.beta
        if model.linear:
            phi = np.zeros(self.N)
            phi[1] = np.pi
            self.phi_hat = phi
            self.scaled = None
            self.k_max = 1.0  # max |phi'(cos u) sin u|
            self.phi_bound = 1.0
            self.factor = 1.0
        else:
            # e^{-|beta|} I_k(beta), with I_k(-b) = (-1)^k I_k(b); scaled back by e^{|beta|}
            size, top = abs(beta), (1.0 if beta > 0.0 else -1.0)
            ive = scaled_bessel_i(self.N, size)
            if beta < 0.0:
                ive = ive * (-1.0) ** self.k
            self.scaled = ive
            self.factor = math.exp(size)
            self.phi_hat = TWO_PI * math.exp(size) / beta * ive
            u = np.linspace(0.0, np.pi, 2001)
            peak = float(np.max(np.exp(beta * (np.cos(u) - top)) * np.sin(u)))
            self.k_max = peak * math.exp(size)
            self.phi_bound = max(1.0, math.exp(size) / size)
        self.ik_phi = self.ik * self.phi_hat
        self.shift = (np.ones((1, self.N), dtype=complex) if xi is None
                      else np.exp(-1j * np.outer(omega * xi, self.k)))
        self.bad = None  # why the last velocity that was not finite was not (see rhs)
        self.degree = self.N - 1  # the fastest mode, for the stability bound

    modes = "Fourier modes"

    @staticmethod
    def tail(c):
        """The resolution monitor: the top third of the modes' share of the L2 norm."""
        return _tail(c)

    @staticmethod
    def mass(c):
        """``c_0``: the mass of the density with coefficients ``c``."""
        return c[..., 0].real

    # state <-> grid
    def coefficients(self, f):
        """Gauge coefficients ``(L, N)`` of content densities ``f`` ``(L, m)``."""
        c = np.fft.rfft(f, axis=-1)[:, :self.N] * (TWO_PI / self.m)
        return c * self.shift

    def content(self, g):
        """Content coefficients of gauge coefficients ``g`` (``(..., L, N)``)."""
        return g * np.conj(self.shift)

    def values(self, c, size=None):
        """Grid values on ``size`` points (default ``m``) of coefficients ``c``."""
        size = self.m if size is None else size
        return np.fft.irfft(c * (size / TWO_PI), n=size, axis=-1)

    def max_speed(self):
        """A bound of ``|w|``: the largest row sum of ``|A|`` times ``max |phi'(cos u) sin u|``."""
        if self.sa:
            return 1.0
        return float(np.max(np.abs(self.a).sum(axis=1))) * self.k_max

    def velocity_gauge(self, g, size):
        """The velocity ``w_l`` on ``size`` points of the gauge angle."""
        mix = _mix(self.a, g)
        w = self.values(self.ik_phi * mix, size)
        if self.sa:
            if self.scaled is None:
                z = mix[:, :1].real
            else:
                z = self.values(TWO_PI * self.factor * self.scaled * mix, size)
            w = self.normalized(w, z)
        return w

    def normalized(self, w, z):
        """``w / z``, the SA quotient (0 / 0 and x / 0 left as NaN and inf for ``why_not_finite``)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return w / z

    def why_not_finite(self, g, w):
        """Why the velocity ``w`` of the gauge coefficients ``g`` holds NaN or inf (one line)."""
        f = self.values(g)
        rows = np.flatnonzero(~np.all(np.isfinite(w), axis=-1))
        ell = int(rows[0]) if rows.size else 0
        label = "" if self.xi is None else f" of label {ell} (xi = {self.xi[ell]:g})"
        kind = "NaN" if np.isnan(w[ell]).any() else "inf"
        if not np.all(np.isfinite(g)) or not np.all(np.isfinite(f)):
            return (f"the velocity{label} is {kind} because the density itself holds NaN or inf "
                    f"values")
        if self.sa:
            mix = _mix(self.a, g)
            z = (mix[:, :1].real if self.scaled is None
                 else self.values(TWO_PI * self.factor * self.scaled * mix))
            return (f"the velocity{label} is {kind} where its SA normalizer sum_j rho_j "
                    f"b(xi_l, xi_j) int phi'(cos(s - psi)) g_j(s) ds comes to "
                    f"{float(np.min(z[ell])):.3g}: rho and the bias leave that label (almost) "
                    f"nothing to attend to")
        return (f"the velocity{label} is {kind}: the attention field overflowed (model "
                f"{self.model.name}, beta = {self.model.beta:g})")

    def rhs(self, g):
        """``dg/dt = -i k (g w)_k - (noise^2 / 2) k^2 g_k`` with the product formed on ``M``
        points (the diffusion commutes with the gauge shift: the same term in gauge and
        content coefficients).

        A velocity that is not finite sets ``bad`` to its cause (``why_not_finite``).
        """
        f = self.values(g, self.M)
        w = self.velocity_gauge(g, self.M)
        if not np.all(np.isfinite(w)):
            self.bad = self.why_not_finite(g, w)
        self.speed = float(np.max(np.abs(w)))
        flux = np.fft.rfft(f * w, axis=-1)[:, :self.N] * (TWO_PI / self.M)
        if self.noise == 0.0:
            return -self.ik * flux
        return -self.ik * flux - self.heat * g

    def energy(self, g, rho):
        """``1/2 sum_lj rho_l rho_j b_lj iint Phi(s - t) g_l(s) g_j(t)`` by Parseval."""
        mix = _mix(self.a, g)
        weights = np.full(self.N, 2.0)
        weights[0] = 1.0
        per = (weights * self.phi_hat * (g * np.conj(mix)).real).sum(axis=1) / (2.0 * TWO_PI)
        r = np.ones(1) if rho is None else rho
        return float(r @ per)


def _mix(a, g):
    """``a @ g`` for the small ``(L, L)`` bias matrix, without BLAS.

    A matrix product of these sizes is dispatched to BLAS, whose worker threads, started next to
    Numba's in one process, slowed a labelled solve tenfold; ``einsum`` without ``optimize``
    stays in NumPy's own loops.
    """
    return np.einsum("lj,jk->lk", a, g)


def _tail(c):
    """The largest over the rows of the top third of the modes' share of the L2 norm."""
    n_modes = c.shape[-1]
    kc = -(-2 * n_modes // 3)
    power = np.abs(c) ** 2
    power[..., 1:] *= 2.0
    total = power.sum(axis=-1)
    return float(np.max(np.sqrt(power[..., kc:].sum(axis=-1) / total)))


# ---------------------------------------------------------------------- result
@dataclass(frozen=True, eq=False)
class DensityTrajectory:
    """Frames of a density run (:func:`solve`).

    Attributes
    ----------
    t : ndarray
        ``(F,)`` frame times from 0 (fewer than ``n_frames`` if the run stopped unresolved).
    theta : ndarray or None
        ``(m,)`` the grid ``2 pi k / m`` on the circle; None on the sphere (see ``grid``).
    f : ndarray
        ``(F, m)`` densities, or ``(F, L, m)`` conditional densities for a model with labels,
        in content angles (on the sphere: values at the ``m = M`` points of ``grid``, in
        content coordinates).
    coefficients : ndarray
        ``(F, m/2)`` or ``(F, L, m/2)`` complex Fourier coefficients
        ``c_k = int f e^{-i k theta} dtheta`` of ``f``, ``k = 0 .. m/2 - 1``; on the sphere
        the ``(lmax + 1) (lmax + 2) / 2`` coefficients ``f_lm`` (``m >= 0``) of the orthonormal
        harmonics (:mod:`usaav_edu.meanfield.harmonics`).
    energy : ndarray
        ``(F,)`` the energy ``E[f]`` (of the mixture, for labels).
    mass : ndarray
        ``(F,)`` or ``(F, L)``: ``c_0`` (on the sphere ``sqrt(4 pi) Re f_00``), which the
        solver never changes.
    min_density : ndarray
        ``(F,)`` the least grid value of ``f`` (over the labels): the positivity monitor.
    tail : ndarray
        ``(F,)`` the resolution monitor (module docstring), largest over the labels.
    status : Status
        ``Status.COMPLETED`` or ``Status.UNRESOLVED``.
    message : str
        What happened, in a sentence or two (where and why a run stopped).
    model : Model
        The model.
    xi, rho : ndarray or None
        ``(L,)`` label values and weights; None without labels.
    rtol, atol : float
        The tolerances of the run.
    t_unresolved : float or None
        The time at which the run stopped unresolved (None if it completed).
    steps_accepted, steps_rejected, n_rhs : int
        Dormand-Prince's statistics (``n_rhs`` counts evaluations of the right-hand side).
    noise : float
        The noise of the run: the diffusion ``(noise^2 / 2) d^2 f / d theta^2`` (0: none), or
        ``(noise^2 / 2)`` times the Laplacian on the sphere.
    grid : SphereGrid or None
        The grid of a run on the sphere (:func:`usaav_edu.meanfield.harmonics.sphere_grid`); None on the
        circle.
    """

    t: np.ndarray
    theta: np.ndarray | None
    f: np.ndarray
    coefficients: np.ndarray = field(repr=False)
    energy: np.ndarray
    mass: np.ndarray
    min_density: np.ndarray
    tail: np.ndarray
    status: Status
    message: str
    model: Model
    xi: np.ndarray | None = None
    rho: np.ndarray | None = None
    rtol: float | None = None
    atol: float | None = None
    t_unresolved: float | None = None
    steps_accepted: int = 0
    steps_rejected: int = 0
    n_rhs: int = 0
    noise: float = 0.0
    grid: object = None

    @property
    def m(self):
        """The number of grid points."""
        return self.f.shape[-1]

    @property
    def on_sphere(self):
        """True for a run on the sphere (``grid`` a SphereGrid), False on the circle."""
        return self.grid is not None

    @property
    def labelled(self):
        """True for a model with labels (``f`` has shape ``(F, L, m)``)."""
        return self.xi is not None

    @property
    def completed(self):
        """True if the run reached ``t_max``."""
        return self.status is Status.COMPLETED

    @property
    def marginal(self):
        """``(F, m)`` the content marginal ``sum_l rho_l f_l`` (``f`` itself without labels)."""
        if not self.labelled:
            return self.f
        return np.einsum("l,flm->fm", self.rho, self.f)

    def in_gauge(self):
        """The densities in the gauge angle, ``g_l(psi) = f_l(psi - omega xi_l)``.

        Returns
        -------
        ndarray
            Same shape as ``f``: the conditional densities of ``psi = theta + omega xi_l`` on
            the grid (``f`` itself for the identity gauge).
        """
        if not self.labelled:
            return self.f
        if self.grid is not None:
            rot = rotations(self.model, self.xi)
            if rot is None:
                return self.f
            op = SphereOperator(self.model, self.grid, self.xi, np.eye(self.xi.size), rot)
            return op.values(op.gauge(self.coefficients))
        _, omega = _circle_model(self.model)
        k = np.arange(self.coefficients.shape[-1])
        g = self.coefficients * np.exp(-1j * np.outer(omega * self.xi, k))[None]
        return np.fft.irfft(g * (self.m / TWO_PI), n=self.m, axis=-1)

    def frame(self, t):
        """The index of the frame nearest to the time ``t``.

        Parameters
        ----------
        t : float
            A time in ``[0, t[-1]]``.

        Returns
        -------
        int

        Raises
        ------
        TypeError, ValueError
            If ``t`` is not a real number in that range.
        """
        t = v.real_scalar("t", t, minimum=0.0, maximum=float(self.t[-1]) * (1 + 1e-12))
        return int(np.argmin(np.abs(self.t - t)))


# ---------------------------------------------------------------------- time stepping
def _combine(coefs, ks):
    """``sum_j coefs[j] ks[j]`` (a loop: a BLAS product of a short real row with complex stages
    is slow and competes for threads)."""
    acc = coefs[0] * ks[0]
    for j in range(1, len(coefs)):
        if coefs[j] != 0.0:
            acc += coefs[j] * ks[j]
    return acc


def _grid_norm(values, scale):
    return float(np.sqrt(np.mean((values / scale) ** 2)))


class _DensityField:
    """The Galerkin right-hand side as a stepper's field (:mod:`usaav_edu.dynamics.integrate`).

    The state is the gauge coefficients ``g`` (``(L, N)`` complex); its retraction is the
    identity, so the velocity at an accepted state is the last stage of its step.  The error
    of a trial step is measured on the grid values,
    ``sqrt(mean((e / (atol + rtol max(|f|, |f_new|)))^2))``, and the grid values ``grid`` of the
    current state are kept for the monitors.  ``bad`` is why the last trial's velocity was not
    finite (None if it was), ``max_step()`` the stability bound ``STABILITY / ((N - 1) max|w|)``
    at the last evaluation.
    """

    reuse_last_stage = True
    stage_speed = None

    def __init__(self, op, grid):
        self.op, self.grid, self.bad, self._trial = op, grid, None, None

    def __call__(self, g, out):
        out[...] = self.op.rhs(g)
        return out

    def retract(self, g):
        """The identity; the grid values of the accepted state become ``grid``."""
        if self._trial is None:
            self.grid = self.op.values(g)
            return bool(np.all(np.isfinite(self.grid)))
        self.grid, self._trial = self._trial, None
        return True

    def error_norm(self, g, g_new, h, e, ks, rtol, atol):
        """The scaled error of a trial step on the grid, and whether the trial is finite."""
        op = self.op
        self.bad, op.bad = op.bad, None
        f_new = op.values(g_new)
        e_grid = op.values(h * _combine(e, ks))
        self._trial = f_new
        if not (np.all(np.isfinite(f_new)) and np.all(np.isfinite(e_grid))):
            return np.inf, False
        scale = atol + rtol * np.maximum(np.abs(self.grid), np.abs(f_new))
        return _grid_norm(e_grid, scale), True

    def max_step(self):
        """The largest stable step at the last velocity (see ``STABILITY`` and
        ``DIFFUSION_STABILITY``)."""
        op = self.op
        rate = op.degree * op.speed / STABILITY + op.heat_rate / DIFFUSION_STABILITY
        return 1.0 / max(rate, 1e-300)


def _first_step(op, g, f_grid, k1, rtol, atol, dt):
    """A first trial step: ``0.01 |f| / |df/dt|`` in the error norm, at most one frame."""
    scale = atol + rtol * np.abs(f_grid)
    rate = _grid_norm(op.values(k1), scale)
    if rate == 0.0:
        return dt
    return min(dt, 0.01 * max(_grid_norm(f_grid, scale), 1e-5) / rate)


def _unresolved(op, g, f_grid, tail_tol, negative_tol):
    """Why the state ``g`` (grid values ``f_grid``) is not resolved, or None."""
    tail = op.tail(g)
    low, top = float(np.min(f_grid)), float(np.max(f_grid))
    if not np.isfinite(tail) or tail > tail_tol:
        return (f"the top third of the {op.modes} carries {tail:.2g} of the norm of "
                f"the density (tail_tol = {tail_tol:g})")
    if low < -negative_tol * top:
        return (f"the density has a value {low:.3g} below -negative_tol * max f "
                f"(negative_tol = {negative_tol:g}, max f = {top:.3g})")
    return None


@dataclass(frozen=True, eq=False)
class _Settings:
    """The checked arguments of a :func:`solve` call."""

    model: Model
    omega: float
    xi: np.ndarray
    rho: np.ndarray
    a: np.ndarray
    f0: np.ndarray
    times: np.ndarray
    rtol: float
    atol: float
    max_steps: int
    method: str
    on_failure: str
    tail_tol: float
    negative_tol: float
    noise: float = 0.0
    grid: object = None
    rotations: object = None

    @property
    def m(self):
        return self.f0.shape[1]

    def operator(self):
        """The discrete operator of the run: on the circle, or on the sphere's ``grid``."""
        if self.grid is None:
            return _Operator(self.model, self.omega, self.xi, self.a, self.m, self.noise)
        return SphereOperator(self.model, self.grid, self.xi, self.a, self.rotations, self.noise)

    @property
    def t_max(self):
        return float(self.times[-1])

    @property
    def where(self):
        if self.grid is not None:
            return f"model {self.model.name}, lmax = {self.grid.lmax}"
        return f"model {self.model.name}, m = {self.m}"


def _method(method):
    """``method`` checked: "dopri5" (the only one; a fixed step is refused with the reason)."""
    if method == "rk4":
        raise ValueError(
            "method='rk4' is not available for the density solver: a fixed step has no control "
            "of the error of the fastest Fourier modes, whose growth the solver reads as the "
            "density outgrowing its grid; use method='dopri5' (the choices: "
            f"{', '.join(map(repr, METHODS))})")
    return v.choice("method", method, METHODS)


def _on_failure(on_failure, on_unresolved):
    """``on_failure`` checked, taking the deprecated ``on_unresolved`` ("stop" is "return")."""
    if on_unresolved is not None:
        if on_failure is not None:
            raise TypeError("give on_failure or the deprecated on_unresolved, not both")
        warnings.warn("solve(on_unresolved=...) is deprecated: use on_failure='raise' or "
                      "on_failure='return' (on_unresolved='stop' is on_failure='return')",
                      DeprecationWarning, stacklevel=3)
        on_unresolved = v.choice("on_unresolved", on_unresolved, ("raise", "stop"))
        return "return" if on_unresolved == "stop" else "raise"
    return v.choice("on_failure", "raise" if on_failure is None else on_failure, ON_FAILURE)


def _frame_times(t_max, n_frames):
    """``n_frames`` equally spaced times on ``[0, t_max]``, refused if two coincide."""
    times = np.linspace(0.0, t_max, n_frames)
    if not np.all(np.diff(times) > 0.0):
        raise ValueError(
            f"t_max = {float(t_max)!r} is too short for n_frames = {n_frames}: the frame times "
            f"k t_max / (n_frames - 1) are not strictly increasing in floating point (some "
            f"coincide), so there is nothing to integrate between them; give a larger t_max or "
            f"fewer n_frames")
    return times


def _check_resolved(f_in, tail_tol):
    """Refuse an initial density whose tail is above ``tail_tol``."""
    m = f_in.shape[1]
    full = np.fft.rfft(f_in, axis=-1) * (TWO_PI / m)
    full[:, -1] *= 0.5  # the mode m/2 is cos(m theta / 2): half of it sits at +-m/2
    tail0 = _tail(full)
    if tail0 > tail_tol:
        raise ValueError(f"f0 is not resolved by the grid of m = {m} points: the top third of its "
                         f"Fourier modes carries {tail0:.2g} of its norm (tail_tol = "
                         f"{tail_tol:g}); use a finer grid (larger m) or a smoother f0")


def _check_resolved_sphere(f_in, grid, tail_tol):
    """Refuse an initial density on the sphere whose tail is above ``tail_tol``."""
    c = _sphere_analysis(f_in.reshape(f_in.shape[0], grid.ntheta, grid.nphi), grid.lmax)
    tail0 = sphere_tail(c, grid.lmax)
    if tail0 > tail_tol:
        raise ValueError(f"f0 is not resolved by the grid of lmax = {grid.lmax}: the top third of "
                         f"its degrees carries {tail0:.2g} of its norm (tail_tol = "
                         f"{tail_tol:g}); use a finer grid (larger lmax) or a smoother f0")


def _settings(model, f0, t_max, xi, rho, n_frames, rtol, atol, max_steps, method, on_failure,
              on_unresolved, tail_tol, negative_tol, noise=0.0, grid=None):
    """Every argument of :func:`solve` checked, before any work (TypeError, ValueError)."""
    if grid is None:
        model, omega = _circle_model(model)
    else:
        grid, model, omega = check_grid(grid), sphere_model(model), 0.0
    xi, rho, a = _labels(model, xi, rho)
    _check_normalizer(model, xi, rho, a)
    n_labels = 1 if xi is None else xi.size
    if grid is None:
        f_in = _density("f0", f0, n_labels, xi is not None)
    else:
        f_in = check_densities("f0", f0, grid, n_labels, xi is not None, MASS_TOL,
                               INPUT_NEGATIVE_TOL)
    t_max = v.real_scalar("t_max", t_max, minimum=0.0, strict=True)
    n_frames = v.integer("n_frames", n_frames, minimum=2)
    rtol = v.real_scalar("rtol", rtol, minimum=0.0, strict=True)
    atol = v.real_scalar("atol", atol, minimum=0.0, strict=True)
    if max_steps is not None:
        max_steps = v.integer("max_steps", max_steps, minimum=1)
    method = _method(method)
    on_failure = _on_failure(on_failure, on_unresolved)
    tail_tol = v.real_scalar("tail_tol", tail_tol, minimum=0.0, strict=True, maximum=1.0)
    negative_tol = v.real_scalar("negative_tol", negative_tol, minimum=0.0)
    noise = v.real_scalar("noise", noise, minimum=0.0)
    if grid is None:
        _check_resolved(f_in, tail_tol)
        rot = None
    else:
        _check_resolved_sphere(f_in, grid, tail_tol)
        rot = rotations(model, xi)
    return _Settings(model, omega, xi, rho, a, f_in, _frame_times(t_max, n_frames), rtol, atol,
                     max_steps, method, on_failure, tail_tol, negative_tol, noise, grid, rot)


def _budget(op, s):
    """Refuse a run estimated beyond ``max_steps``: the step is bounded by stability,
    ``1 / h = (m/2 - 1) max|w| / 0.95 + (noise^2 / 2) (m/2 - 1)^2 / 3.3``."""
    rate = op.degree * op.max_speed()
    inverse = rate / STABILITY + op.heat_rate / DIFFUSION_STABILITY
    estimate = (s.times.size - 1) + s.t_max * inverse
    cap = s.max_steps if s.max_steps is not None else 2.0 ** 63
    if estimate > cap:
        heat = ("" if op.noise == 0.0 else
                f" + (noise^2/2) K^2 / 3.3 = {op.heat_rate / DIFFUSION_STABILITY:.3g} "
                f"(the diffusion of noise = {op.noise:g})")
        raise ValueError(
            f"solve would take about {estimate:.2g} Dormand-Prince steps, more than "
            f"max_steps = {s.max_steps}: the stable step is about 1 / h with 1 / h = "
            f"K max|w| / 0.95 = {rate / STABILITY:.3g}{heat}, h = "
            f"{1.0 / max(inverse, 1e-300):.3g} (K = {op.degree:.4g} the fastest mode; "
            f"{s.where}, max|w| <= {op.max_speed():.3g}). "
            f"Choose a coarser grid, a smaller t_max, beta or noise, or a larger max_steps "
            f"(None: no cap).")


class _Plan(NamedTuple):
    """How a run is integrated: the operator, its field, the stepper, controller and buffers."""

    op: _Operator
    field: _DensityField
    stepper: object
    controller: Controller
    work: Workspace
    g: np.ndarray
    h: float


def _plan(s):
    """The operator and the stepper of a run, and its first step (the velocity at ``f0``, which
    the first trial step reuses, counts as one evaluation)."""
    op = s.operator()
    _budget(op, s)
    g = op.coefficients(s.f0)
    field = _DensityField(op, op.values(g))
    stepper = STEPPERS[s.method]
    work = Workspace(stepper.tableau, g)
    field(g, work.ks[0])
    if op.bad is not None:
        raise IntegrationError(f"solve cannot start ({s.where}): {op.bad}")
    work.fresh = True
    op.bad = None
    controller = stepper.controller(h_min=4.0 * EPS * 1e-3 * s.t_max, h_max=field.max_step)
    h = min(_first_step(op, g, field.grid, work.ks[0], s.rtol, s.atol, s.times[1]),
            field.max_step())
    return _Plan(op, field, stepper, controller, work, g, h)


class _Frames:
    """The frames of a run as the frame loop reaches them, and the monitors after every step."""

    def __init__(self, s, plan):
        self.s, self.op, self.field, self.g = s, plan.op, plan.field, plan.g
        self.gs = [plan.g.copy()]
        self.energies = [plan.op.energy(plan.g, s.rho)]
        self.tails = [plan.op.tail(plan.g)]
        self.status, self.message, self.t_bad = Status.COMPLETED, Status.COMPLETED.message, None

    def after_step(self, t):
        """After every accepted step: True (stop) if the density is no longer resolved."""
        s = self.s
        why = _unresolved(self.op, self.g, self.field.grid, s.tail_tol, s.negative_tol)
        if why is None:
            return False
        self.status, self.t_bad = Status.UNRESOLVED, t
        grid = f"m = {s.m} points" if s.grid is None else f"lmax = {s.grid.lmax}"
        finer = "larger m" if s.grid is None else "larger lmax"
        self.message = (f"the density sharpened beyond what the grid of {grid} "
                        f"resolves (collapse) at t = {t:.4g}: {why}. The frames end at "
                        f"t = {s.times[len(self.gs) - 1]:.4g}; use a finer grid ({finer}) or a "
                        f"shorter t_max.")
        return True

    def after_frame(self, fr, g, res):
        """Keep frame ``fr`` and check that the energy did not fall."""
        self.gs.append(g.copy())
        self.energies.append(self.op.energy(g, self.s.rho))
        self.tails.append(self.op.tail(g))
        if self.s.noise == 0.0:  # with diffusion E is not monotone (the free energy is)
            _check_energy(self.s.model, self.op, self.energies, self.s.times, fr, self.s.rtol)


def _failure(run, field, s):
    """The IntegrationError for a frame loop that ended other than OK or by the monitors."""
    t = run.t
    if run.outcome is Outcome.MAX_STEPS:
        return IntegrationError(
            f"solve used all max_steps = {s.max_steps} trial steps and stopped at t = {t:.6g}, "
            f"before t_max = {s.t_max:g} ({s.where}): raise max_steps (None: no cap), shorten "
            f"t_max, use a coarser grid or loosen rtol/atol")
    if run.outcome is Outcome.NONFINITE_TRIALS and field.bad is not None:
        return IntegrationError(f"solve stopped at t = {t:.6g} ({s.where}): {field.bad}, however "
                                f"small the step (not a matter of rtol and atol)")
    return IntegrationError(
        f"solve could not meet its tolerances at t = {t:.6g} ({s.where}, rtol = {s.rtol:g}, "
        f"atol = {s.atol:g}): the step underflowed to {run.h:.3g}; loosen rtol and atol")


def _result(s, plan, frames, run):
    """The :class:`DensityTrajectory` of the frames reached."""
    op = plan.op
    f_count = len(frames.gs)
    cs = op.content(np.array(frames.gs))
    f_out = op.values(cs)
    if s.xi is None:
        cs, f_out = cs[:, 0], f_out[:, 0]
    theta = TWO_PI * np.arange(s.m) / s.m if s.grid is None else None
    return DensityTrajectory(
        t=s.times[:f_count].copy(), theta=theta, f=f_out, grid=s.grid,
        coefficients=cs, energy=np.array(frames.energies), mass=op.mass(cs).copy(),
        min_density=f_out.reshape(f_count, -1).min(axis=1), tail=np.array(frames.tails),
        status=frames.status, message=frames.message, model=s.model, xi=s.xi, rho=s.rho,
        rtol=s.rtol, atol=s.atol, t_unresolved=frames.t_bad, steps_accepted=run.accepted,
        steps_rejected=run.rejected, n_rhs=run.n_rhs + 1, noise=s.noise)


def solve(model, f0, t_max, *, xi=None, rho=None, n_frames=101, rtol=1e-8, atol=1e-10,
          max_steps=DEFAULT_MAX_STEPS, method="dopri5", on_failure=None, tail_tol=TAIL_TOL,
          negative_tol=NEGATIVE_TOL, on_unresolved=None, noise=0.0, grid=None):
    r"""Solve the density equation on the circle from ``f0`` up to ``t_max``.

    .. math::

        \partial_t f_l + \partial_\theta (f_l w_l) = 0,

        w_l(\theta) = \sum_j \rho_j\, b(\xi_l, \xi_j)
                      \int \varphi'(\cos(s - \psi)) \sin(s - \psi)\, g_j(s)\, ds,

        \psi = \theta + \omega \xi_l, \qquad g_j(s) = f_j(s - \omega \xi_j)

    (module docstring; without labels :math:`L = 1` and :math:`\rho_1 b = 1`), by the Fourier
    Galerkin method on ``m`` points and Dormand-Prince 5(4) in time.  With ``noise``
    :math:`\sigma > 0` every density also diffuses, the limit of particles with the noise
    :math:`d\theta_i = \dots dt + \sigma\, dB_i` (:func:`usaav_edu.simulate`):

    .. math::

        \partial_t f_l + \partial_\theta (f_l w_l)
            = \frac{\sigma^2}{2} \partial_\theta^2 f_l,
        \qquad \text{in Fourier: } -\frac{\sigma^2}{2} k^2 c_k.

    About the uniform density :math:`1 / (2\pi)` (without labels) mode ``k`` then grows at the
    rate :math:`k^2 (\Phi_k / (2\pi) - \sigma^2 / 2)` (from :math:`w_k = i k \Phi_k c_k`):
    :math:`(1 - \sigma^2) / 2` for mode 1
    of the linear profile (:math:`\Phi_1 = \pi`), so the uniform density is stable exactly
    when :math:`\sigma^2 > 1`.

    Parameters
    ----------
    model : Model
        A model on the circle: the identity gauge or a RoPE gauge with one frequency
        (``d`` None or 2); any bias; the exp or linear profile; USA or SA.
    f0 : array_like
        The initial density on the grid ``theta_k = 2 pi k / m`` (:func:`grid`), ``(m,)``, or
        for a model with labels the conditional densities ``(L, m)`` in content angles.  Finite,
        non-negative, each integrating to 1 (``(2 pi / m) sum_k f0[k]``) within ``MASS_TOL``
        (never renormalized), ``m`` even and at least 16, and resolved (its tail at most
        ``tail_tol``).
    t_max : float
        The final time, > 0, long enough that the ``n_frames`` frame times differ in floating
        point.
    xi : array_like or None
        ``(L,)`` label values (positions) for a model with labels; None otherwise.
    rho : array_like or None
        ``(L,)`` the weights of the labels, non-negative, summing to 1 within ``MASS_TOL``;
        None: ``1 / L`` each.
    n_frames : int
        Frames stored, equally spaced on ``[0, t_max]``, >= 2.
    rtol, atol : float
        Tolerances of the local error on the grid values (the error norm
        ``sqrt(mean((e / (atol + rtol max(|f|, |f_new|)))^2))`` over every grid value).
    max_steps : int or None
        The most trial steps (None: no cap).  A run estimated beyond it is refused before it
        starts: the step is bounded by about ``3.3 / ((m / 2) max|w|)`` (the fastest Fourier
        mode is advected at ``(m / 2) max|w|``).
    method : {"dopri5"}
        The time stepper: Dormand-Prince 5(4) with error control
        (:data:`usaav_edu.dynamics.integrate.steppers.METHODS`, as for :func:`usaav_edu.simulate`);
        ``"rk4"`` is refused (a fixed step would not control the fastest modes).
    on_failure : {"raise", "return"} or None
        When the density outgrows the grid: raise :class:`~usaav_edu.errors.UnresolvedError`
        (None, the default, is "raise"), or return the frames computed so far with ``status``
        ``Status.UNRESOLVED``.  Errors that mean the integration itself is wrong (below) are
        raised either way.
    tail_tol : float
        The largest tail (module docstring) of a resolved density, in ``(0, 1)``.
    negative_tol : float
        A grid value below ``-negative_tol * max f`` means unresolved; >= 0.
    on_unresolved : {"raise", "stop"} or None
        Deprecated: ``on_failure`` ("stop" is "return"); a DeprecationWarning, and a TypeError
        if both are given.
    noise : float
        The noise amplitude :math:`\sigma \ge 0` (finite) of the diffusion
        :math:`(\sigma^2 / 2)\, \partial_\theta^2 f` (default 0: none).  The diffusion is
        stiff: the fastest mode decays at :math:`(\sigma^2/2) (m/2 - 1)^2`, so the step is
        bounded by :math:`1 / h = (m/2 - 1) \max|w| / 0.95 + (\sigma^2/2) (m/2 - 1)^2 / 3.3`
        (``STABILITY``, ``DIFFUSION_STABILITY``), and the work estimate against
        ``max_steps`` counts both terms.  The mass is conserved as without noise (the
        diffusion does not touch ``c_0``); the energy check is off with noise, since
        :math:`E[f]` is not monotone then (the free energy
        :math:`E[f] - (\sigma^2/2) \int f \log f` is, for USA without labels, but is not
        checked).

    Returns
    -------
    DensityTrajectory

    Raises
    ------
    TypeError, ValueError
        For bad input (naming the argument), a model off the circle, an unresolved ``f0``, a
        ``t_max`` too short for ``n_frames`` distinct frame times, an SA label whose weights
        ``rho_j b(xi_l, xi_j)`` all vanish (its velocity would be 0 / 0), or a run estimated
        beyond ``max_steps``; all before any step.
    UnresolvedError
        With ``on_failure="raise"``, when the density sharpens beyond the grid: the message
        gives the time and what to change; ``.partial`` holds the frames before it.
    IntegrationError
        When the velocity is not finite (naming why), the step underflows, the step budget runs
        out, or (without noise) the energy falls between two frames beyond
        ``(1e-10 + rtol)`` times its scale.

    References
    ----------
    The book's chapter on the mean-field limit; J. R. Dormand and P. J. Prince, "A family of
    embedded Runge-Kutta formulae", J. Comput. Appl. Math. 6 (1980) 19-26.

    Examples
    --------
    >>> import numpy as np
    >>> import usaav_edu as ue
    >>> theta = ue.meanfield.grid(64)
    >>> f0 = (1.0 + 0.5 * np.cos(theta)) / (2.0 * np.pi)
    >>> model = ue.models.usa(beta=1.0)
    >>> run = ue.meanfield.solve(model, f0, 1.0, n_frames=3)
    >>> run.status.name, run.t.tolist(), run.f.shape
    ('COMPLETED', [0.0, 0.5, 1.0], (3, 64))
    >>> run.energy.round(4).tolist()  # it rises: f concentrates
    [0.6684, 0.6951, 0.7417]
    """
    s = _settings(model, f0, t_max, xi, rho, n_frames, rtol, atol, max_steps, method, on_failure,
                  on_unresolved, tail_tol, negative_tol, noise, grid)
    plan = _plan(s)
    frames = _Frames(s, plan)
    control = Control(s.rtol, s.atol, plan.controller.h_min, s.max_steps, frames.after_step)
    run = run_frames(plan.g, s.times, plan.h, plan.stepper, plan.field, control, plan.controller,
                     frames.after_frame, plan.work)
    if run.outcome is not Outcome.OK and frames.status is Status.COMPLETED:
        raise _failure(run, plan.field, s)
    result = _result(s, plan, frames, run)
    if frames.status is Status.UNRESOLVED and s.on_failure == "raise":
        raise UnresolvedError(frames.message + " (on_failure='return' returns the frames instead)",
                              frames.t_bad, result)
    return result


def _check_energy(model, op, energies, times, fr, rtol):
    """Raise IntegrationError if the energy fell from frame ``fr - 1`` to ``fr`` beyond its
    tolerance ``(ENERGY_RTOL + rtol) * S``, ``S`` a bound of ``|E|``."""
    e_prev, e_now = energies[fr - 1], energies[fr]
    scale = max(abs(e_prev), abs(e_now), 0.5 * float(np.max(np.abs(op.a))) * op.phi_bound)
    if e_now >= e_prev - (ENERGY_RTOL + rtol) * scale:
        return
    raise IntegrationError(
        f"the energy fell from {e_prev:.12g} to {e_now:.12g} between t = {times[fr - 1]:g} and "
        f"t = {times[fr]:g} (model {model.name}), but the equation only raises it: the density "
        f"is not resolved or the steps are too large; use a finer grid or tighten rtol and atol")


# ---------------------------------------------------------------------- helpers on a density
def _prepare(model, f, xi, rho, name="f"):
    model, omega = _circle_model(model)
    xi, rho, a = _labels(model, xi, rho)
    arr = _density(name, f, 1 if xi is None else xi.size, xi is not None)
    op = _Operator(model, omega, xi, a, arr.shape[1])
    return op, op.coefficients(arr), rho, xi is not None


def energy(model, f, xi=None, rho=None):
    """The mean-field energy of a density on the circle.

    ::

        E = 1/2 sum_lj rho_l rho_j b(xi_l, xi_j)
                iint phi(cos(s - t)) g_l(s) g_j(t) ds dt
          = 1/(4 pi) sum_lj rho_l rho_j b_lj sum_k Phi_k Re(c_lk conj(c_jk))

    (``g_l`` the gauge densities, ``c_lk`` their Fourier coefficients, ``Phi_k`` those of
    ``phi(cos u)``), the limit of ``(1 / (2 n^2)) sum_ij b_ij phi(<y_i, y_j>)``.

    Parameters
    ----------
    model : Model
        A model on the circle (as for :func:`solve`).
    f : array_like
        ``(m,)`` a density on the grid, or ``(L, m)`` conditional densities (content angles),
        each of mass 1 within ``MASS_TOL``.
    xi, rho : array_like or None
        Labels and weights, as for :func:`solve`.

    Returns
    -------
    float
        ``E``, from the Fourier coefficients (the last line, by Parseval).

    Raises
    ------
    TypeError, ValueError
        For bad input, naming the argument.
    """
    op, g, rho, _ = _prepare(model, f, xi, rho)
    return op.energy(g, rho)


def velocity(model, f, xi=None, rho=None):
    """The velocity field ``w`` of a density, on the grid of content angles.

    ``w_l(theta)`` is the velocity of a token of label ``l`` at the content angle ``theta``:
    the field of the module docstring at the gauge angle ``theta + omega xi_l``.

    Parameters
    ----------
    model : Model
        A model on the circle (as for :func:`solve`).
    f : array_like
        ``(m,)`` a density, or ``(L, m)`` conditional densities (content angles).
    xi, rho : array_like or None
        Labels and weights, as for :func:`solve`.

    Returns
    -------
    ndarray
        ``(m,)`` or ``(L, m)``.

    Raises
    ------
    TypeError, ValueError
        For bad input, naming the argument; for a velocity that would not be finite (under SA,
        a label whose weights ``rho_j b(xi_l, xi_j)`` all vanish), naming the cause.
    """
    op, g, rho, labelled = _prepare(model, f, xi, rho)
    _check_normalizer(op.model, op.xi, rho, op.a)
    mix = op.content(_mix(op.a, g))
    w = op.values(op.ik_phi * mix)
    if op.sa:
        z = (mix[:, :1].real if op.scaled is None
             else op.values(TWO_PI * op.factor * op.scaled * mix))
        w = op.normalized(w, z)
    if not np.all(np.isfinite(w)):
        raise ValueError(op.why_not_finite(g, op.velocity_gauge(g, op.m)))
    return w if labelled else w[0]


# ---------------------------------------------------------------------- particles and densities
class _Cdf:
    """The CDF of a density's trigonometric interpolant, piecewise cubic Hermite on a fine grid.

    On ``K`` points ``x_j = 2 pi j / K`` the CDF ``F`` and the density are exact (spectral);
    between them ``F`` is the cubic Hermite interpolant of these values and slopes (error
    ``O(h^4 max|f'''|)``, ``h = 2 pi / K``).  ``F`` is divided by the mass.
    """

    def __init__(self, f, name="f"):
        arr = _density(name, f, 1, False)[0]
        m = arr.size
        c = np.fft.rfft(arr) * (TWO_PI / m)
        c[-1] *= 0.5
        mass = c[0].real
        k = np.arange(c.size)
        self.K = K = max(4 * m, 1024)
        self.h = TWO_PI / K
        x = TWO_PI * np.arange(K + 1) / K
        dens = np.fft.irfft(c * (K / TWO_PI), n=K)
        integ = np.zeros_like(c)
        integ[1:] = c[1:] / (1j * k[1:])
        s = np.fft.irfft(integ * (K / TWO_PI), n=K)
        cdf = mass * x[:K] / TWO_PI + s - s[0]
        top = float(dens.max())
        if dens.min() < -1e-9 * top:
            raise ValueError(f"{name}: its trigonometric interpolant is negative (down to "
                             f"{dens.min():.3g}, max {top:.3g}); the density is not resolved "
                             f"by its grid")
        self.F = np.append(cdf, mass) / mass
        self.F = np.maximum.accumulate(self.F)
        self.f = np.append(np.maximum(dens, 0.0), max(dens[0], 0.0)) / mass

    def _cell(self, j, t):
        """F at local coordinates ``t`` in cells ``j``, and dF/dt."""
        h = self.h
        p0, p1 = self.F[j], self.F[j + 1]
        m0, m1 = h * self.f[j], h * self.f[j + 1]
        t2, t3 = t * t, t * t * t
        val = ((2 * t3 - 3 * t2 + 1) * p0 + (t3 - 2 * t2 + t) * m0 + (-2 * t3 + 3 * t2) * p1
               + (t3 - t2) * m1)
        der = ((6 * t2 - 6 * t) * p0 + (3 * t2 - 4 * t + 1) * m0 + (-6 * t2 + 6 * t) * p1
               + (3 * t2 - 2 * t) * m1)
        return val, der

    def _integral(self, j, t):
        """``int_0^t F(x_j + h s) ds`` in cells ``j`` (times ``h``: the integral over theta)."""
        h = self.h
        p0, p1 = self.F[j], self.F[j + 1]
        m0, m1 = h * self.f[j], h * self.f[j + 1]
        t2, t3, t4 = t * t, t ** 3, t ** 4
        return h * ((t4 / 2 - t3 + t) * p0 + (t4 / 4 - 2 * t3 / 3 + t2 / 2) * m0
                    + (-t4 / 2 + t3) * p1 + (t4 / 4 - t3 / 3) * m1)

    def at(self, theta):
        """F at angles in ``[0, 2 pi]``."""
        j = np.minimum((theta / self.h).astype(np.int64), self.K - 1)
        return self._cell(j, theta / self.h - j)[0]

    def solve_in(self, j, target, lo, hi):
        """``t`` in ``[lo, hi]`` with ``F(x_j + h t) = target`` (safeguarded Newton)."""
        t = 0.5 * (lo + hi)
        lo, hi = lo.copy(), hi.copy()
        for _ in range(60):
            val, der = self._cell(j, t)
            r = val - target
            lo = np.where(r < 0, t, lo)
            hi = np.where(r >= 0, t, hi)
            with np.errstate(divide="ignore", invalid="ignore"):
                nt = t - r / der
            bad = ~np.isfinite(nt) | (nt <= lo) | (nt >= hi)
            nt = np.where(bad, 0.5 * (lo + hi), nt)
            if np.all(np.abs(nt - t) <= 1e-15):
                t = nt
                break
            t = nt
        return t

    def inverse(self, u):
        """Angles ``theta`` in ``[0, 2 pi)`` with ``F(theta) = u``."""
        j = np.clip(np.searchsorted(self.F, u, side="right") - 1, 0, self.K - 1)
        t = self.solve_in(j, u, np.zeros_like(u), np.ones_like(u))
        return np.mod((j + t) * self.h, TWO_PI)


def sample(f, n, how="random", seed=None):
    r"""Angles drawn from a density on the circle: random, or at its quantiles.

    The CDF ``F`` is that of the density's trigonometric interpolant (exact at the points of
    a grid 4 times finer, cubic Hermite between them) and is inverted by safeguarded Newton
    iterations:

    .. math::

        \theta_i = F^{-1}(u_i),

        u_i \sim U(0, 1) \ (\texttt{"random"}) \quad \text{or} \quad
        u_i = (i + 1/2) / n \ (\texttt{"quantile"}),

    with :math:`F(0) = 0` at :math:`\theta = 0`.

    Parameters
    ----------
    f : array_like
        ``(m,)`` a density on the grid :func:`grid` (non-negative, mass 1 within ``MASS_TOL``).
    n : int
        The number of angles, >= 1.
    how : {"random", "quantile"}
        Independent draws, or the ``n`` quantiles at ``(i + 1/2) / n`` (sorted).
    seed : int or None
        The seed of ``numpy.random.default_rng`` ("random" only).

    Returns
    -------
    ndarray
        ``(n,)`` angles in ``[0, 2 pi)``.

    Raises
    ------
    TypeError, ValueError
        For bad input, naming the argument, or a density whose interpolant is negative.

    Examples
    --------
    >>> import numpy as np
    >>> import usaav_edu as ue
    >>> theta = ue.meanfield.grid(64)
    >>> f = (1.0 + 0.5 * np.cos(theta)) / (2.0 * np.pi)
    >>> ue.meanfield.sample(f, 5, how="quantile").round(3)
    array([0.423, 1.393, 3.142, 4.89 , 5.86 ])
    >>> ue.meanfield.sample(f, 1000, seed=0).shape
    (1000,)
    """
    cdf = _Cdf(f)
    n = v.integer("n", n, minimum=1)
    how = v.choice("how", how, HOW)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
        raise TypeError(f"seed must be an int or None, got {type(seed).__name__}")
    if how == "quantile":
        if seed is not None:
            raise ValueError("seed must be None for how='quantile' (the quantiles are not random)")
        u = (np.arange(n) + 0.5) / n
    else:
        u = np.random.default_rng(seed).random(n)
    return cdf.inverse(u)


def empirical_distance(theta, f, metric="w1"):
    """The distance on the circle between the empirical law of angles and a density.

    With ``F_n`` the empirical CDF of the angles and ``F`` the CDF of the density (both from
    ``theta = 0``, as for :func:`sample`), ``D = F_n - F``:

    * ``"w1"``: the Wasserstein-1 distance on the circle (arc length), ::

          W1 = min_c int_0^{2 pi} |D(theta) - c| dtheta,

      the minimum at a median of ``D`` (computed exactly between the angles and the points of
      a grid 4 times finer, where ``F`` is a cubic);
    * ``"kuiper"``: ``sup D - inf D``, the Kolmogorov-Smirnov distance made independent of the
      origin (Kuiper's statistic);
    * ``"ks"``: ``sup |D|`` on ``[0, 2 pi)`` (depends on the origin 0).

    For independent samples all three decay like ``n^{-1/2}``; for the quantile samples of
    :func:`sample`, ``"ks"`` is ``1 / (2n)``, ``"kuiper"`` ``1 / n`` and ``"w1"`` of order
    ``1 / n`` (``pi / (2n)`` for the uniform density).

    Parameters
    ----------
    theta : array_like
        ``(n,)`` angles (any real values; taken modulo ``2 pi``), ``n >= 1``.
    f : array_like
        ``(m,)`` a density on the grid :func:`grid`.
    metric : {"w1", "kuiper", "ks"}
        The distance.

    Returns
    -------
    float
        ``W1``, Kuiper's statistic or ``sup |D|``, as ``metric`` names.

    Raises
    ------
    TypeError, ValueError
        For bad input, naming the argument.

    References
    ----------
    M. Werman, S. Peleg, A. Rosenfeld, "A distance metric for multidimensional histograms",
    Computer Vision, Graphics and Image Processing 32 (1985) 328-336 (W1 on the circle);
    N. H. Kuiper, "Tests concerning random points on a circle", Proc. Koninklijke Nederlandse
    Akademie van Wetenschappen A 63 (1960) 38-47.
    """
    s = v.float_array("theta", theta, ndim=1)
    if s.size < 1:
        raise ValueError("theta must hold at least one angle")
    cdf = _Cdf(f)
    metric = v.choice("metric", metric, METRICS)
    s = np.sort(np.mod(s, TWO_PI))
    s = np.where(s >= TWO_PI, 0.0, s)
    n = s.size
    fs = cdf.at(s)
    after = np.arange(1, n + 1) / n - fs    # D just after each angle
    before = np.arange(n) / n - fs          # D just before
    if metric == "ks":
        return float(max(np.max(np.abs(after)), np.max(np.abs(before)), 0.0))
    if metric == "kuiper":
        return float(max(np.max(after), 0.0) + max(np.max(-before), 0.0))
    return _w1(cdf, s)


class _Pieces:
    """The pieces between the sorted angles ``s`` and the fine grid of ``cdf``, on each of which
    ``F_n`` is a constant ``alpha`` and ``F`` a cubic (one cell ``j``, local ``ta .. tb``)."""

    def __init__(self, cdf, s):
        n, K, h = s.size, cdf.K, cdf.h
        self.cdf = cdf
        nodes = TWO_PI * np.arange(K + 1) / K
        points = np.concatenate([nodes, s])
        kind = np.concatenate([np.zeros(K + 1, dtype=np.int64), np.ones(n, dtype=np.int64)])
        order = np.lexsort((kind, points))
        points, kind = points[order], kind[order]
        count = np.cumsum(kind)            # angles at or before each point
        cell = np.cumsum(1 - kind) - 1     # the fine cell [x_j, x_{j+1}] that starts at or before
        a, b = points[:-1], points[1:]
        alpha = count[:-1] / n             # F_n on (a, b)
        keep = b > a
        self.a, self.b, self.alpha = a[keep], b[keep], alpha[keep]
        self.j = j = np.clip(cell[:-1][keep], 0, K - 1)
        self.ta = np.clip((self.a - nodes[j]) / h, 0.0, 1.0)
        self.tb = np.clip((self.b - nodes[j]) / h, 0.0, 1.0)
        self.fa, _ = cdf._cell(j, self.ta)
        self.fb, _ = cdf._cell(j, self.tb)
        self.ia = cdf._integral(j, self.ta)
        self.total = cdf._integral(j, self.tb) - self.ia  # int_a^b F
        self.length = self.b - self.a
        self.rise = np.where(self.fb > self.fa, self.fb - self.fa, 1.0)

    def split(self, c):
        """``beta = F_n - c`` on each piece and the local coordinate where ``F = beta``."""
        beta = self.alpha - c              # D - c = beta - F on (a, b)
        inside = (beta > self.fa) & (beta < self.fb)
        t = np.where(beta <= self.fa, self.ta, self.tb)
        if np.any(inside):
            t_in = self.cdf.solve_in(self.j[inside], beta[inside], self.ta[inside],
                                     self.tb[inside])
            t = t.copy()
            t[inside] = t_in
        return beta, t

    def below(self, c):
        """The length where ``D < c``, i.e. ``F > beta``, with ``F`` taken linear on each piece.

        A cheap bisection for the median, off by about the curvature of ``F`` over a piece (at
        most one cell of the fine grid), which the Newton steps of :func:`_w1_median` remove
        with the exact (cubic) ``F``.
        """
        cut = np.clip((self.alpha - c - self.fa) / self.rise, 0.0, 1.0)
        return float(np.sum(self.length * (1.0 - cut)))


def _w1_median(p):
    """A median ``c`` of ``D = F_n - F``: the length where ``D < c`` is ``pi``."""
    lo, hi = float(np.min(p.alpha - p.fb)), float(np.max(p.alpha - p.fa))
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if p.below(mid) < np.pi:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * max(1.0, abs(lo)):
            break
    c = 0.5 * (lo + hi)
    # then Newton steps on the exact length (F cubic), with the linear model's slope
    h = p.cdf.h
    for _ in range(4):
        beta, t = p.split(c)
        g = float(np.sum(p.b - (p.j + t) * h * (beta > p.fa) - p.a * (beta <= p.fa))) - np.pi
        inside = (beta > p.fa) & (beta < p.fb)
        slope = float(np.sum(p.length[inside] / p.rise[inside]))
        if abs(g) <= 1e-15 * TWO_PI or slope <= 0.0:
            break
        c -= g / slope
    return c


def _w1(cdf, s):
    """``min_c int |F_n - F - c|`` over the pieces between the angles and the fine grid."""
    p = _Pieces(cdf, s)
    beta, t = p.split(_w1_median(p))
    theta_star = (p.j + t) * cdf.h
    left = cdf._integral(p.j, t) - p.ia    # int_a^theta* F
    value = beta * (2 * theta_star - p.a - p.b) - 2 * left + p.total
    value = np.where(beta <= p.fa, p.total - beta * p.length, value)
    value = np.where(beta >= p.fb, beta * p.length - p.total, value)
    return float(np.sum(value))
