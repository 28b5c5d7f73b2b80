r"""A profile of one's own: :math:`\varphi'` as a Numba-compiled scalar function.

The built-in profiles are the exponential and the linear one (:mod:`.profiles`).  Others appear
in the literature: the interaction functions of the circle's counterexamples (Criscitiello,
Rebjock, McRae and Boumal, "Synchronization on circles and spheres with nonlinear
interactions", arXiv:2405.18273) or a Gaussian kernel.  :class:`UserProfile` takes
:math:`\varphi'` as a function compiled with ``numba.njit`` (one float in, one float out) and,
optionally, :math:`\varphi` for the energy; without it the energy uses

.. math::

    \varphi(s) = \int_0^s \varphi'(t)\, dt = s \sum_{k=1}^{10} w_k\, \varphi'(s\, t_k)

(10-point Gauss-Legendre on :math:`[0, 1]`, exact for polynomials of degree 19; the constant
:math:`\varphi(0)` does not enter the dynamics).  The run is summed directly, every pair
(:mod:`usaav_edu.dynamics.general`).

The step estimates of :func:`usaav_edu.simulate` read the profile's bounds on :math:`[-1, 1]`
(from 2,001 samples, :math:`s_k = -1 + k / 1000`): :math:`M_0 = \max |\varphi'|` and
:math:`M_1 = \max |\varphi''|` (by differences), as the exponential profile's
:math:`e^\beta` and :math:`\beta e^\beta`.  A profile whose inner products leave
:math:`[-1, 1]` (with projections) is estimated there too: give ``dt`` yourself then.
"""

from dataclasses import dataclass

import numpy as np

from .. import _validate as v

__all__ = ["UserProfile", "is_compiled"]

_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(10)
GL_NODES = tuple(float(t) for t in 0.5 * (_NODES + 1.0))
GL_WEIGHTS = tuple(float(w) for w in 0.5 * _WEIGHTS)
SAMPLES = np.linspace(-1.0, 1.0, 2001)


def is_compiled(f):
    """Whether ``f`` is a Numba dispatcher (a function decorated with ``numba.njit``)."""
    return callable(f) and hasattr(f, "py_func") and hasattr(f, "signatures")


def _check_function(name, f):
    if not is_compiled(f):
        raise TypeError(f"{name} must be a function compiled with numba.njit (one float in, one "
                        f"float out), got {v.shown(f)}")
    try:
        values = np.array([float(f(float(s))) for s in SAMPLES])
    except Exception as exc:  # the user's function: any failure is a bad argument
        raise ValueError(f"{name}(s) failed on s in [-1, 1]: {type(exc).__name__}: {exc}") from None
    if not np.all(np.isfinite(values)):
        bad = float(SAMPLES[np.argmax(~np.isfinite(values))])
        raise ValueError(f"{name}(s) must be finite on [-1, 1]; {name}({bad:g}) is not")
    return values


@dataclass(frozen=True, eq=False)
class UserProfile:
    r"""The profile with :math:`\varphi' =` ``dphi`` (and :math:`\varphi =` ``phi``).

    Parameters
    ----------
    dphi : numba dispatcher
        :math:`\varphi'(s)`, compiled with ``numba.njit``, finite on :math:`[-1, 1]`.
    phi : numba dispatcher or None
        :math:`\varphi(s)`, likewise; None: the quadrature of the module docstring.
    name : str
        A label for messages (default ``"user"``).

    Raises
    ------
    TypeError
        If a function is not compiled with ``numba.njit``.
    ValueError
        If it fails or is not finite on :math:`[-1, 1]`.

    Examples
    --------
    >>> import numba
    >>> import usaav_edu as ue
    >>> @numba.njit
    ... def dphi(s):
    ...     return 1.0 + s * s
    >>> prof = ue.models.UserProfile(dphi)
    >>> round(float(prof.phi(1.0)), 12), round(float(prof.dphi(1.0)), 12)
    (1.333333333333, 2.0)
    """

    dphi_function: object
    phi_function: object = None
    name: str = "user"

    kind = "user"
    linear = False

    def __post_init__(self):
        values = _check_function("dphi", self.dphi_function)
        if self.phi_function is not None:
            _check_function("phi", self.phi_function)
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"name must be a non-empty string, got {v.shown(self.name)}")
        m0 = max(float(np.max(np.abs(values))), 1e-300)
        m1 = float(np.max(np.abs(np.diff(values)))) / float(SAMPLES[1] - SAMPLES[0])
        object.__setattr__(self, "bounds", (m0, m1))
        object.__setattr__(self, "positive", bool(np.all(values > 0.0)))

    @property
    def beta(self):
        r""":math:`M_1 / M_0`, the rate the step estimates read as the exponential's beta."""
        m0, m1 = self.bounds
        return m1 / m0

    @property
    def scale(self):
        r""":math:`M_0 e^{-M_1 / M_0}`: the factor that makes :math:`e^\beta` read :math:`M_0`."""
        m0, _ = self.bounds
        return m0 * float(np.exp(-self.beta))

    def dphi(self, s):
        r""":math:`\varphi'(s)` elementwise (an ndarray of the shape of ``s``)."""
        s = np.asarray(s, dtype=np.float64)
        f = self.dphi_function
        return np.vectorize(lambda t: float(f(float(t))), otypes=[np.float64])(s)

    def phi(self, s):
        r""":math:`\varphi(s)` elementwise: ``phi``, or the quadrature of :math:`\varphi'`."""
        s = np.asarray(s, dtype=np.float64)
        if self.phi_function is not None:
            f = self.phi_function
            return np.vectorize(lambda t: float(f(float(t))), otypes=[np.float64])(s)
        total = np.zeros_like(s)
        for t, w in zip(GL_NODES, GL_WEIGHTS, strict=True):
            total += w * self.dphi(s * t)
        return s * total

    def params(self):
        """Refused: a compiled function has no description a file could hold (TypeError)."""
        raise TypeError(f"profile {self.name!r} is a function of one's own, which cannot be "
                        f"saved: only ExpProfile and LinearProfile have parameters")

    def __repr__(self):
        return f"UserProfile({getattr(self.dphi_function, '__name__', 'dphi')})"
