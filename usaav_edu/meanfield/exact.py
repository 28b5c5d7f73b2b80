r"""Closed forms of the density equation on the sphere S^2: the linear profile's exact family and
the growth rates of the uniform density.

**Dilations.**  Under the linear profile :math:`\varphi(s) = s` every token moves with the same
field :math:`P_x m`, :math:`m = \int y f(y)\, dy` the mean of the law.  With :math:`m = c\, u`
(:math:`|u| = 1`) and :math:`h = \langle x, u \rangle`, :math:`\dot h = c (1 - h^2)`, so in the
stereographic coordinate :math:`\tau = \tan(\vartheta / 2)` from ``u``
(:math:`\vartheta` the angle to ``u``) :math:`\dot \tau = -c\, \tau`: the flow is a dilation.
The pushforward of the uniform law by the dilation :math:`\tau \mapsto k \tau` is the density

.. math::

    f_r(x) = \frac{1}{4\pi}
             \left(\frac{1 - r^2}{1 - 2 r \langle x, u\rangle + r^2}\right)^2,

    r = \frac{1 - k}{1 + k},

whose mean is :math:`c(r)\, u` with

.. math::

    c(r) = \frac{1 + r^2}{2r} - \frac{(1 - r^2)^2}{4 r^2} \log\frac{1 + r}{1 - r},

    c(r) = \frac{4r}{3} + O(r^3).

Dilations along one axis compose, so the family is invariant: :math:`\dot k = -c(r)\, k`, that is

.. math::

    \dot r = \frac{c(r)\, (1 - r^2)}{2}

(on the circle the same argument gives the wrapped Cauchy laws, :math:`c(r) = r`).  SA with the
linear profile divides by the mass, 1: the same flow.

**Growth rates.**  About the uniform density :math:`1/(4\pi)` a perturbation
:math:`\epsilon Y_{lm}` moves by :math:`\partial_t \epsilon = \frac{l(l+1)\lambda_l}{4\pi Z_0}\,
\epsilon - \frac{\sigma^2}{2} l(l+1)\, \epsilon` (Funk-Hecke: :math:`\varphi * Y_{lm} =
\lambda_l Y_{lm}`, and :math:`\Delta Y_{lm} = -l(l+1) Y_{lm}`), with :math:`Z_0 = 1` for USA and
:math:`Z_0 = i_0(\beta) = \sinh\beta / \beta` for SA.

References
----------
The book's chapter on the mean-field limit; C. Müller, *Spherical Harmonics*, Lecture Notes in
Mathematics 17, Springer (1966) (Funk-Hecke); L. V. Ahlfors, *Möbius Transformations in Several
Dimensions*, University of Minnesota (1981) (the dilations of the sphere).
"""

import math

import numpy as np

from .. import _validate as v
from ..dynamics.fastsum.expansions import scaled_spherical_bessel_i
from ..models.model import require_model
from .sphere import funk_hecke

__all__ = ["moebius_density", "moebius_mean", "moebius_radius", "growth_rates"]

FOUR_PI = 4.0 * np.pi
RADIUS_STEPS = 2000
"""RK4 steps per unit of time (and at least 200 per call) of :func:`moebius_radius`."""


def _radius(name, r):
    return v.real_scalar(name, r, minimum=0.0, strict=True, maximum=1.0 - 1e-12)


def moebius_mean(r):
    r"""The mean :math:`c(r) = \int \langle x, u\rangle f_r(x)\, dx` of the dilated law (module
    docstring), with its series :math:`4r/3 + 4r^3/15 + \dots` below ``r = 1e-3``.

    Parameters
    ----------
    r : float
        The parameter, in ``(0, 1)``.

    Returns
    -------
    float

    Examples
    --------
    >>> from usaav_edu.meanfield import exact
    >>> round(exact.moebius_mean(0.5), 6)
    0.632031
    """
    r = _radius("r", r)
    if r < 1e-3:  # the closed form cancels; its series: 4r/3 + 4r^3/15 + 4r^5/35
        return 4 * r / 3 + 4 * r ** 3 / 15 + 4 * r ** 5 / 35
    return (1 + r * r) / (2 * r) - (1 - r * r) ** 2 / (4 * r * r) * math.log((1 + r) / (1 - r))


def moebius_density(points, u, r):
    r"""The density :math:`f_r(x) = \frac{1}{4\pi}\big(\frac{1 - r^2}{1 - 2r\langle x, u\rangle
    + r^2}\big)^2` at unit vectors ``points``.

    Parameters
    ----------
    points : array_like
        ``(M, 3)`` unit vectors.
    u : array_like
        ``(3,)`` the unit vector of the axis.
    r : float
        The parameter in ``[0, 1)`` (0: the uniform density).

    Returns
    -------
    ndarray
        ``(M,)``.
    """
    p = v.float_array("points", points, ndim=2)
    if p.shape[1] != 3:
        raise ValueError(f"points must have shape (M, 3), got {p.shape}")
    axis = v.float_array("u", u, ndim=1)
    if axis.shape != (3,) or abs(np.linalg.norm(axis) - 1.0) > 1e-9:
        raise ValueError(f"u must be a unit vector of R^3, got {axis}")
    r = v.real_scalar("r", r, minimum=0.0, maximum=1.0 - 1e-12)
    h = p @ axis
    return ((1 - r * r) / (1 - 2 * r * h + r * r)) ** 2 / FOUR_PI


def moebius_radius(t, r0):
    r"""The parameter :math:`r(t)` of the exact family from ``r0``: :math:`\dot r = c(r)(1 - r^2)/2`.

    Integrated in the variable :math:`s = \operatorname{artanh} r` (where the equation is
    smooth up to ``r = 1``) by RK4 with ``RADIUS_STEPS`` steps per unit time: the error is below
    1e-13 for times up to 10.

    Parameters
    ----------
    t : array_like
        Times ``>= 0``, increasing.
    r0 : float
        The parameter at time 0, in ``(0, 1)``.

    Returns
    -------
    ndarray
        ``r`` at the times ``t``.

    Examples
    --------
    >>> from usaav_edu.meanfield import exact
    >>> exact.moebius_radius([0.0, 1.0, 2.0], 0.15).round(6)
    array([0.15    , 0.281801, 0.489014])
    """
    times = v.float_array("t", t, ndim=1)
    if times.size and (np.any(times < 0) or np.any(np.diff(times) < 0)):
        raise ValueError("t must be non-negative and increasing")
    r0 = _radius("r0", r0)

    def rate(s):  # ds/dt = c(r) / 2 with r = tanh(s): dr/dt = (1 - r^2) ds/dt
        return 0.5 * moebius_mean(math.tanh(s))

    out, s, now = np.empty(times.size), math.atanh(r0), 0.0
    for i, target in enumerate(times):
        steps = max(1, math.ceil((target - now) * RADIUS_STEPS))
        h = (target - now) / steps
        for _ in range(steps if target > now else 0):
            k1 = rate(s)
            k2 = rate(s + 0.5 * h * k1)
            k3 = rate(s + 0.5 * h * k2)
            k4 = rate(s + h * k3)
            s += h * (k1 + 2 * k2 + 2 * k3 + k4) / 6
        now = target
        out[i] = math.tanh(s)
    return out


def growth_rates(model, lmax, noise=0.0):
    r"""``(lmax + 1,)`` the growth rates of the degrees ``l`` about the uniform density on S^2.

    .. math::

        \gamma_l = \frac{l (l + 1) \lambda_l}{4\pi Z_0} - \frac{\sigma^2}{2} l (l + 1),

        \lambda_l = 2\pi \int_{-1}^1 \varphi(s) P_l(s)\, ds

    (module docstring; :math:`\lambda_l = 4\pi i_l(\beta)/\beta` for the exp profile,
    :math:`Z_0 = \sinh(\beta)/\beta` under SA and 1 under USA).

    Parameters
    ----------
    model : Model
        A model without labels on S^2 (USA or SA, exp or linear profile).
    lmax : int
        The largest degree, >= 0.
    noise : float
        The noise amplitude :math:`\sigma \ge 0`.

    Returns
    -------
    ndarray

    Examples
    --------
    >>> import usaav_edu as ue
    >>> from usaav_edu.meanfield import exact
    >>> linear = ue.models.usa(beta=1.0, profile="linear")
    >>> exact.growth_rates(linear, 2).round(4)
    array([0.    , 0.6667, 0.    ])
    """
    model = require_model(model)
    if model.labels != "none":
        raise ValueError(f"model must have no labels (the uniform density of one law), got "
                         f"{model.name!r} with {model.labels} labels")
    lmax = v.integer("lmax", lmax, minimum=0)
    noise = v.real_scalar("noise", noise, minimum=0.0)
    lam, _ = funk_hecke(model, lmax)
    ell = np.arange(lmax + 1.0)
    z0 = 1.0
    if model.normalization == "sa" and not model.linear:
        b = abs(model.beta)
        z0 = float(scaled_spherical_bessel_i(1, b)[0]) * math.exp(b)
    return ell * (ell + 1) * (lam / (FOUR_PI * z0) - 0.5 * noise * noise)
