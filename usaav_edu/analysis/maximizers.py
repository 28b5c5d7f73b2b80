r"""Exact maximizers of :math:`E_h` (chapters 3 to 7 of the book), to put beside simulations.

* Gauge maximizers (RoPE, prefix frames, identity): :math:`x^*(\xi) = G(\xi)^\top u` for
  any unit :math:`u`: all gauge coordinates equal :math:`u`, so every
  :math:`\langle y_i, y_j \rangle = 1` and :math:`E_h = e^\beta / (2 \beta)` (:math:`b = 1`),
  the largest value possible.
* RoPE orbits: the content marginal lies on :math:`\{R_{-s} u\}`; in d = 3 with one
  plane this is the latitude circle at height :math:`u_3`.
* Cosine bias, linear profile: uniform great circles
  :math:`x(\xi) = a \cos(k \xi) + c \sin(k \xi)`, :math:`a \perp c`, with
  :math:`E = \hat b(k) / 2`.
"""

import numpy as np

from .. import _validate as v
from ..models.gauges import RopeGauge
from ..models.model import require_model


def _labels(model, xi):
    """The labels of a list of tokens, one per token: a 1-D array (positions or prompt ids)."""
    what = f"a 1-D array of labels, one per token (positions or prompt ids for model {model.name!r})"
    shape = v.as_array("xi", xi, what).shape
    if len(shape) != 1:
        raise ValueError(f"xi must be {what}, got shape {shape}")
    return model.check_labels(xi, len(xi))


def _unit(name, u, d=None):
    u = np.reshape(v.float_array(name, u, ndim=1), (1, -1))
    u = v.points_on_sphere(name, u)[0]
    if d is not None and u.shape[0] != d:
        raise ValueError(f"{name} must have dimension {d}, got {u.shape[0]}")
    return u


def gauge_maximizer(model, xi, u):
    """``x*_i = G(xi_i)^T u`` for every token: the graph-law maximizer of a gauge model.

    ``xi`` holds one label per token (for a model without labels, any 1-D array of the
    right length, e.g. ``np.zeros(n)``), ``u`` is a unit vector of R^d.

    Parameters
    ----------
    model : Model
        A model (its gauge is used).
    xi : array_like
        ``(n,)`` labels.
    u : array_like
        ``(d,)`` unit vector.

    Returns
    -------
    ndarray
        ``(n, d)`` contents whose gauge coordinates ``G(xi_i) x*_i`` all equal ``u``.

    References
    ----------
    Theorem 4.2 (ch4-thm-max) and Theorem 6.1 (ch6-thm-gauge) of the book.
    """
    model = require_model(model)
    u = _unit("u", u)
    xi = _labels(model, xi)
    model.check_dimension(u.shape[0], "u")
    return model.from_gauge(np.broadcast_to(u, (len(xi), u.shape[0])), xi)


def rope_orbit(model, u, s):
    """Points ``R_{-s} u`` of the RoPE orbit of ``u``, one per value of ``s``, shape (len(s), d).

    Parameters
    ----------
    model : Model
        A model with a :class:`usaav_edu.models.gauges.RopeGauge`.
    u : array_like
        ``(d,)`` unit vector.
    s : array_like
        ``(m,)`` positions.

    Returns
    -------
    ndarray
        ``(m, d)``.

    Raises
    ------
    ValueError
        If the model's gauge is not RoPE.
    """
    model = require_model(model)
    # the one dispatch on a concrete part outside its module: the orbit R_{-s} u is the
    # one-parameter group exp(-s Omega) of this gauge's frequencies, a fact of RoPE alone
    if not isinstance(model.gauge, RopeGauge):
        raise ValueError(f"model must have the rope gauge, got {model.gauge!r}")
    u = _unit("u", u)
    model.check_dimension(u.shape[0], "u")
    s = v.float_array("s", s, ndim=1)
    return model.from_gauge(np.broadcast_to(u, (s.shape[0], u.shape[0])), s)


def latitude_circle(height, n_points=128):
    """``n_points`` equally spaced points of the circle ``x_3 = height`` on S^2, shape (n_points, 3).

    Parameters
    ----------
    height : float
        In ``[-1, 1]``.
    n_points : int
        >= 1.

    Returns
    -------
    ndarray
    """
    height = v.real_scalar("height", height, minimum=-1.0, maximum=1.0)
    n_points = v.integer("n_points", n_points, minimum=1)
    r = np.sqrt(1.0 - height * height)
    a = 2.0 * np.pi * np.arange(n_points) / n_points
    return np.stack([r * np.cos(a), r * np.sin(a), np.full(n_points, height)], axis=1)


def great_circle(xi, k, a, c):
    """``x(xi_i) = a cos(k xi_i) + c sin(k xi_i)`` for orthonormal a, c.

    Parameters
    ----------
    xi : array_like
        ``(n,)`` positions.
    k : float
        The winding.
    a, c : array_like
        Orthonormal vectors.

    Returns
    -------
    ndarray
        ``(n, d)``, row i the point at position ``xi_i``.

    References
    ----------
    Theorem 7.3 (ch7-thm-circle) of the book.
    """
    xi = v.float_array("xi", xi, ndim=1)
    k = v.real_scalar("k", k)
    a = _unit("a", a)
    c = _unit("c", c, a.shape[0])
    if abs(a @ c) > 1e-10:
        raise ValueError(f"a and c must be orthogonal, got <a, c> = {a @ c:.3g}")
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported below
        phase = k * xi
    if not np.all(np.isfinite(phase)):
        raise ValueError(f"k * xi overflows for k = {k:g} and positions up to {np.max(np.abs(xi)):g}")
    return np.outer(np.cos(phase), a) + np.outer(np.sin(phase), c)


def gauge_max_energy(model):
    """The maximal energy of a gauge model without bias: ``phi(1) / 2`` (``e^beta / (2 beta)``).

    Parameters
    ----------
    model : Model
        A model without bias.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If the model has a bias.
    """
    model = require_model(model)
    if not getattr(model.bias, "constant", False):
        raise ValueError(f"model must have no bias for this formula, got bias {model.bias!r}")
    return float(model.phi(1.0)) / 2.0


def cosine_circle_energy(xi, omega):
    """``lambda_max(B) / (2 n)`` for ``B_ij = cos(omega (xi_i - xi_j))``: the linear-profile maximum.

    For equally spaced positions covering whole periods it equals ``hat b(1) / 2 = 1/4``.

    Parameters
    ----------
    xi : array_like
        ``(n,)`` positions.
    omega : float
        Frequency.

    Returns
    -------
    float

    References
    ----------
    Theorem 7.3 (ch7-thm-circle) of the book.
    """
    xi = v.float_array("xi", xi, ndim=1)
    if xi.shape[0] < 1:
        raise ValueError("xi must hold at least one position, got none")
    omega = v.real_scalar("omega", omega)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported below
        phase = omega * (xi[:, None] - xi[None, :])
    if not np.all(np.isfinite(phase)):
        raise ValueError(f"omega * (xi_i - xi_j) overflows for omega = {omega:g} and positions up to "
                         f"{np.max(np.abs(xi)):g}; use a smaller omega or smaller positions")
    b = np.cos(phase)
    return float(np.linalg.eigvalsh(b)[-1]) / (2.0 * xi.shape[0])
