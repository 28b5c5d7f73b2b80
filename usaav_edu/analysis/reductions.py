r"""Exact reductions of the particle system and measurements of its staircases.

Small pure functions that the first chapters put beside full simulations:

* the **equiangular reduction** (chapter 1 of the book): if every pair of tokens has the same
  inner product :math:`r`, it stays so, and

  .. math::

      \text{USA:}\quad \dot r = \frac{2}{n}\, e^{\beta r} (1 - r) \big((n - 1) r + 1\big),

      \text{SA:}\quad \dot r = \frac{2\, e^{\beta r} (1 - r) \big((n - 1) r + 1\big)}
      {e^\beta + (n - 1)\, e^{\beta r}},

  solved here by RK4 on the scalar (closed form at :math:`\beta = 0`); with layer
  normalization before attention (pre-LN, :mod:`usaav_edu.dynamics.prenorm`) the common
  radius :math:`R` joins it, :math:`\dot r = \dot r_{\text{post}} / R`,
  :math:`\dot R = g(r)` (:func:`equiangular_radius_rate`, :func:`equiangular_solution`);
* the **circle form** (d = 2, :math:`x = (\cos\theta, \sin\theta)`):

  .. math::

      \dot\theta_i = \frac{1}{n} \sum_j e^{\beta \cos(\theta_j - \theta_i)}
      \sin(\theta_j - \theta_i),

  the Kuramoto model with identical oscillators at :math:`\beta = 0`, integrated in angles;
* the **two-cluster reduction**: two point clusters at angle :math:`\theta` merge along a scalar
  ODE, with a merge time computed by quadrature;
* **staircases**: cluster counts frame by frame, the maximal runs of constant count
  (plateaus), and the time a trajectory spends with k clusters.

These functions never call the particle solver: they are independent of it, which is what
makes a comparison with :func:`usaav_edu.simulate` a check.
"""

import math

import numpy as np

from .. import _validate as v
from .diagnostics import cluster_count

NORMALIZATIONS = ("usa", "sa")
LAYER_NORMS = ("post", "pre")


# ---------------------------------------------------------------------- equiangular reduction
def _equiangular_args(n, beta, normalization):
    n = v.integer("n", n, minimum=2)
    beta = v.real_scalar("beta", beta, minimum=0.0, maximum=700.0)
    normalization = v.choice("normalization", normalization, NORMALIZATIONS)
    return n, beta, normalization


def _inner_product(r):
    """``r`` as an array of inner products of unit vectors: finite, in [-1, 1] (up to 1e-6,
    the overshoot of an integrator's stage)."""
    r = v.float_array("r", r)
    if np.any(np.abs(r) > 1.0 + 1e-6):
        raise ValueError(f"r must be an inner product of unit vectors, in [-1, 1]; got values up to "
                         f"{np.max(np.abs(r)):g} in absolute value")
    return r


def equiangular_rate(r, n, beta, normalization="usa"):
    """The right-hand side ``dr/dt`` of the equiangular reduction.

    ``r`` is the common inner product ``<x_i, x_j>`` (i != j) of ``n`` tokens, a scalar or
    array with values in ``[-1/(n-1), 1]``.  USA: ``(2/n) e^{beta r} (1 - r)((n-1) r + 1)``;
    SA: ``2 e^{beta r} (1 - r)((n-1) r + 1) / (e^beta + (n-1) e^{beta r})``.

    Parameters
    ----------
    r : float or array_like
        Common inner product(s).
    n : int
        Number of tokens, >= 2.
    beta : float
        Inverse temperature, >= 0.
    normalization : {"usa", "sa"}
        The normalization.

    Returns
    -------
    float or ndarray

    References
    ----------
    The book's chapter 1: Proposition 1.1 (ch1-prop-equiangular).
    """
    n, beta, normalization = _equiangular_args(n, beta, normalization)
    r = _inner_product(r)
    core = np.exp(beta * r) * (1.0 - r) * ((n - 1) * r + 1.0)
    if normalization == "usa":
        return 2.0 * core / n
    return 2.0 * core / (math.exp(beta) + (n - 1) * np.exp(beta * r))


def equiangular_radius_rate(r, n, beta, normalization="usa"):
    r"""The growth ``dR/dt`` of the common radius of ``n`` equiangular pre-LN tokens.

    For tokens :math:`z_i = R\, \theta_i` with :math:`\langle \theta_i, \theta_j \rangle = r`
    (:math:`i \ne j`), the attention before projection is
    :math:`A_i = (e^\beta \theta_i + e^{\beta r} \sum_{j \ne i} \theta_j) / N` and

    .. math::

        \dot R = \langle \theta_i, A_i \rangle
        = \frac{e^\beta + (n - 1)\, r\, e^{\beta r}}{N},

        N = n \text{ (USA) or } e^\beta + (n - 1)\, e^{\beta r} \text{ (SA)}.

    It is ``>= 0`` on ``[-1/(n-1), 1]`` (for ``r < 0``, ``(n-1) |r| e^{beta r} <= 1 <=
    e^beta``): the radius never shrinks.

    Parameters
    ----------
    r : float or array_like
        Common inner product(s) of the directions.
    n : int
        Number of tokens, >= 2.
    beta : float
        Inverse temperature, >= 0.
    normalization : {"usa", "sa"}
        The normalization.

    Returns
    -------
    float or ndarray

    References
    ----------
    N. Karagodin, S. Ge, Y. Polyanskiy, P. Rigollet, "Normalization in Attention Dynamics",
    arXiv:2510.22026: Pre-LN's radial part :math:`\dot r_k = \langle \theta_k, A_k \rangle`.
    """
    n, beta, normalization = _equiangular_args(n, beta, normalization)
    r = _inner_product(r)
    core = math.exp(beta) + (n - 1) * r * np.exp(beta * r)
    if normalization == "usa":
        return core / n
    return core / (math.exp(beta) + (n - 1) * np.exp(beta * r))


def equiangular_closed_form(t, n, r0=0.0):
    """The exact solution at ``beta = 0`` (USA and SA coincide there).

    With ``a = n - 1`` the equation ``dr/dt = (2/n)(1 - r)(a r + 1)`` separates:
    ``(a r + 1)/(1 - r) = K e^{2t}``, ``K = (a r0 + 1)/(1 - r0)``, hence ::

        r(t) = (K e^{2t} - 1) / (a + K e^{2t}).

    Parameters
    ----------
    t : float or array_like
        Times, >= 0.
    n : int
        As in :func:`equiangular_rate`.
    r0 : float
        Initial inner product, in ``[-1/(n-1), 1]``.

    Returns
    -------
    float or ndarray

    References
    ----------
    The book's chapter 1: Proposition 1.1 (ch1-prop-equiangular) at ``beta = 0``.
    """
    n = v.integer("n", n, minimum=2)
    t = v.float_array("t", t)
    r0 = v.real_scalar("r0", r0, minimum=-1.0 / (n - 1), maximum=1.0)
    if np.any(t < 0):
        raise ValueError("t must be >= 0")
    if r0 == 1.0:
        return np.ones_like(t)
    a = n - 1
    k = (a * r0 + 1.0) / (1.0 - r0)
    # divide by e^{2t} to avoid overflow: r = (K - e^{-2t}) / (a e^{-2t} + K)
    e = np.exp(-2.0 * t)
    return (k - e) / (a * e + k)


def equiangular_solution(t, n, beta, r0=0.0, normalization="usa", max_step=None, *,
                         layer_norm="post"):
    r"""``r(t)`` of the equiangular reduction at the times ``t`` (increasing, starting at >= 0).

    Classical RK4 on the scalar equation from ``r(0) = r0``, with at most ``max_step`` per
    step (default ``min(0.01, 0.02 / L)`` with ``L`` a bound of the Lipschitz constant of the
    right-hand side), so the error is far below any particle integrator's.  At ``beta = 0``
    use :func:`equiangular_closed_form` for the exact value.

    **Pre-LN** (``layer_norm="pre"``): the tokens are :math:`z_i = R_i \theta_i`,
    :math:`\dot z_i = A_i(\theta)` from :math:`z_i(0) = \theta_i(0)`
    (:mod:`usaav_edu.dynamics.prenorm`).  An equiangular start stays equiangular with one
    radius :math:`R` (the dynamics commutes with the rotations that permute the tokens), and
    with :math:`f` the post-LN rate (:func:`equiangular_rate`) and :math:`g` the radial rate
    (:func:`equiangular_radius_rate`):

    .. math::

        \dot r = \frac{f(r)}{R}, \qquad \dot R = g(r), \qquad r(0) = r_0, \quad R(0) = 1.

    Derivation: :math:`\dot\theta_i = P_{\theta_i} A_i / R`, and
    :math:`\dot r = \langle \dot\theta_i, \theta_j \rangle + \langle \theta_i,
    \dot\theta_j \rangle = 2 \langle P_{\theta_i} A_i, \theta_j \rangle / R` with
    :math:`\langle P_{\theta_i} A_i, \theta_j \rangle = e^{\beta r} (1 - r)(1 + (n - 1) r)
    / N`, the post-LN computation divided by :math:`R`; :math:`\dot R = \langle \theta_i,
    A_i \rangle`.  At :math:`\beta = 0`, :math:`dr / dR = 2 (1 - r) / R`, so
    :math:`1 - r = (1 - r_0) R^{-2}` and :math:`\dot R = 1 - k R^{-2}` with
    :math:`k = (n - 1)(1 - r_0) / n \le 1`; for :math:`k < 1`

    .. math::

        t = R - 1 + \frac{\sqrt k}{2} \log \frac{(R - \sqrt k)(1 + \sqrt k)}
        {(R + \sqrt k)(1 - \sqrt k)}.

    The directions move like post-LN's on the clock :math:`\int dt / R`.  Near :math:`r = 1`,
    :math:`f(r) / g(r) \to 2 (1 - r)` and :math:`g \to e^\beta` (USA) or 1 (SA), so
    :math:`R` grows linearly and :math:`1 - r \propto R^{-2} \propto t^{-2}`: a power of
    :math:`t`, where post-LN's :math:`1 - r` decays exponentially.

    Parameters
    ----------
    t : array_like
        Increasing times, from >= 0.
    n : int
        Number of tokens, >= 2.
    beta : float
        Inverse temperature.
    r0 : float
        Initial inner product.
    normalization : {"usa", "sa"}
        The normalization.
    max_step : float or None
        Largest RK4 step.
    layer_norm : {"post", "pre"}
        Where layer normalization sits (keyword).

    Returns
    -------
    ndarray or tuple of ndarray
        ``r`` at the times ``t``; for ``layer_norm="pre"`` the pair ``(r, R)``.

    References
    ----------
    The book's chapter 1: Proposition 1.1 (ch1-prop-equiangular).  Pre-LN: N. Karagodin,
    S. Ge, Y. Polyanskiy, P. Rigollet, "Normalization in Attention Dynamics",
    arXiv:2510.22026 (the decomposition :math:`x_k = r_k \theta_k`, Pre-LN's speed
    :math:`1 / r_k`); the reduction is derived above.
    """
    n, beta, normalization = _equiangular_args(n, beta, normalization)
    layer_norm = v.choice("layer_norm", layer_norm, LAYER_NORMS)
    t = v.float_array("t", t, ndim=1)
    r0 = v.real_scalar("r0", r0, minimum=-1.0 / (n - 1), maximum=1.0)
    if t.size == 0:
        raise ValueError("t must hold at least one time")
    if t[0] < 0 or np.any(np.diff(t) < 0):
        raise ValueError("t must be non-decreasing and start at a time >= 0")
    if max_step is None:
        if normalization == "usa":
            lip = 2.0 * math.exp(beta) * (beta + 2.0)
        else:
            lip = 2.0 * (beta + 2.0) * n
        max_step = min(0.01, 0.02 / lip)
    max_step = v.real_scalar("max_step", max_step, minimum=0.0, strict=True)

    if layer_norm == "pre":
        return _pre_ln_solution(t, n, beta, r0, normalization, max_step)

    def f(r):
        return float(equiangular_rate(r, n, beta, normalization))

    out = np.empty_like(t)
    r, now = r0, 0.0
    for k, target in enumerate(t):
        span = target - now
        if span > 0:
            steps = max(1, math.ceil(span / max_step))
            h = span / steps
            for _ in range(steps):
                k1 = f(r)
                k2 = f(r + 0.5 * h * k1)
                k3 = f(r + 0.5 * h * k2)
                k4 = f(r + h * k3)
                r = min(1.0, r + h * (k1 + 2 * k2 + 2 * k3 + k4) / 6.0)
            now = target
        out[k] = r
    return out


def _pre_ln_solution(t, n, beta, r0, normalization, max_step):
    """``(r, R)`` at the times ``t``: RK4 on ``r' = f(r) / R``, ``R' = g(r)`` (checked args)."""

    def f(state):
        r, big_r = state
        return np.array([float(equiangular_rate(r, n, beta, normalization)) / big_r,
                         float(equiangular_radius_rate(r, n, beta, normalization))])

    out = np.empty((2, t.size))
    state, now = np.array([r0, 1.0]), 0.0
    for k, target in enumerate(t):
        span = target - now
        if span > 0:
            steps = max(1, math.ceil(span / max_step))
            h = span / steps
            for _ in range(steps):
                k1 = f(state)
                k2 = f(state + 0.5 * h * k1)
                k3 = f(state + 0.5 * h * k2)
                k4 = f(state + h * k3)
                state = state + h * (k1 + 2 * k2 + 2 * k3 + k4) / 6.0
                state[0] = min(1.0, state[0])
            now = target
        out[:, k] = state
    return out[0], out[1]


def equiangular_energy(r, n, beta):
    """The USA energy of an equiangular configuration with pairwise inner product ``r``.

    ``E = (1/(2 beta n^2)) (n e^beta + n (n - 1) e^{beta r})`` (``beta > 0``); it rises to
    ``e^beta/(2 beta)`` as ``r -> 1``.

    Parameters
    ----------
    r : float or array_like
        Common inner product(s).
    n : int
        Number of tokens.
    beta : float
        Inverse temperature, > 0.

    Returns
    -------
    float or ndarray
    """
    n = v.integer("n", n, minimum=2)
    beta = v.real_scalar("beta", beta, minimum=0.0, strict=True, maximum=700.0)
    r = _inner_product(r)
    return (n * math.exp(beta) + n * (n - 1) * np.exp(beta * r)) / (2.0 * beta * n * n)


def pairwise_inner(x):
    """Mean and range of the off-diagonal inner products ``<x_i, x_j>``, i != j.

    Returns ``(mean, min, max)``; for an equiangular configuration ``min = max = mean``.

    Parameters
    ----------
    x : array_like
        ``(n, d)`` unit vectors, n >= 2.

    Returns
    -------
    tuple of float
    """
    x = v.points_on_sphere("x", x)
    n = x.shape[0]
    if n < 2:
        raise ValueError(f"x must hold at least two points, got {n}")
    g = x @ x.T
    off = g[~np.eye(n, dtype=bool)]
    return float(off.mean()), float(off.min()), float(off.max())


# ---------------------------------------------------------------------- circle (d = 2)
def angles(x):
    """Angles ``theta_i = atan2(x_i2, x_i1)`` of points on the circle; x of shape (..., n, 2).

    Parameters
    ----------
    x : array_like
        ``(..., n, 2)`` points of S^1.

    Returns
    -------
    ndarray
        ``(..., n)`` angles.
    """
    x = v.float_array("x", x)
    if x.ndim < 2 or x.shape[-1] != 2:
        raise ValueError(f"x must have shape (..., n, 2) (points on the circle), got {x.shape}")
    return np.arctan2(x[..., 1], x[..., 0])


def circle_velocity(theta, beta):
    """``dtheta_i/dt = (1/n) sum_j e^{beta cos(theta_j - theta_i)} sin(theta_j - theta_i)``.

    The USA flow on S^1 in angle form; at ``beta = 0`` it is Kuramoto's model of identical
    oscillators with coupling 1: ``dtheta_i/dt = R sin(psi - theta_i)``, ``R e^{i psi}`` the
    order parameter.

    Parameters
    ----------
    theta : array_like
        ``(n,)`` angles.
    beta : float
        Inverse temperature, in ``[0, 700]``.

    Returns
    -------
    ndarray
        ``(n,)``.

    References
    ----------
    The book's chapter 1: Proposition 1.2 (ch1-prop-kuramoto).
    """
    theta = v.float_array("theta", theta, ndim=1)
    if theta.shape[0] < 1:
        raise ValueError("theta must hold at least one angle, got none")
    beta = v.real_scalar("beta", beta, minimum=0.0, maximum=700.0)
    diff = theta[None, :] - theta[:, None]          # theta_j - theta_i
    return np.mean(np.exp(beta * np.cos(diff)) * np.sin(diff), axis=1)


def circle_flow(theta0, beta, t, max_step=None):
    """Integrate :func:`circle_velocity` by RK4 in angles; returns ``theta`` of shape (len(t), n).

    ``t`` is increasing and starts at 0 (the first row is ``theta0``).  ``max_step`` defaults
    to ``min(0.01, 0.1 e^{-beta} / (1 + beta))``.

    Parameters
    ----------
    theta0 : array_like
        ``(n,)`` initial angles.
    beta : float
        Inverse temperature.
    t : array_like
        Increasing times from 0.
    max_step : float or None
        Largest RK4 step.

    Returns
    -------
    ndarray
        ``(len(t), n)``.
    """
    theta = v.float_array("theta0", theta0, ndim=1).copy()
    if theta.shape[0] < 1:
        raise ValueError("theta0 must hold at least one angle, got none")
    beta = v.real_scalar("beta", beta, minimum=0.0, maximum=700.0)
    t = v.float_array("t", t, ndim=1)
    if t.size == 0 or t[0] != 0.0 or np.any(np.diff(t) < 0):
        raise ValueError("t must be non-decreasing and start at 0")
    if max_step is None:
        max_step = min(0.01, 0.1 * math.exp(-beta) / (1.0 + beta))
    max_step = v.real_scalar("max_step", max_step, minimum=0.0, strict=True)
    out = np.empty((t.size, theta.size))
    out[0] = theta
    for k in range(1, t.size):
        span = t[k] - t[k - 1]
        if span > 0:
            steps = max(1, math.ceil(span / max_step))
            h = span / steps
            for _ in range(steps):
                k1 = circle_velocity(theta, beta)
                k2 = circle_velocity(theta + 0.5 * h * k1, beta)
                k3 = circle_velocity(theta + 0.5 * h * k2, beta)
                k4 = circle_velocity(theta + h * k3, beta)
                theta = theta + h * (k1 + 2 * k2 + 2 * k3 + k4) / 6.0
        out[k] = theta
    return out


def order_parameter(theta):
    """Kuramoto's order parameter ``R = |(1/n) sum_j e^{i theta_j}|`` (last axis), in [0, 1].

    Parameters
    ----------
    theta : array_like
        Angles (last axis: the tokens).

    Returns
    -------
    float or ndarray
    """
    theta = v.float_array("theta", theta)
    if theta.ndim < 1 or theta.shape[-1] < 1:
        raise ValueError("theta must hold at least one angle on its last axis")
    return np.abs(np.mean(np.exp(1j * theta), axis=-1))


def angle_distance(a, b):
    """Largest distance between angles on the circle, ``max |wrap(a - b)|`` in [0, pi].

    Parameters
    ----------
    a, b : array_like
        Angles, both of one shape (they are not broadcast).

    Returns
    -------
    float
    """
    a = v.float_array("a", a)
    b = v.float_array("b", b)
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same shape, got {a.shape} and {b.shape}")
    return float(np.max(np.abs(np.angle(np.exp(1j * (a - b))))))


# ---------------------------------------------------------------------- two clusters
def two_cluster_rate(theta, p, beta, normalization="usa"):
    """``dtheta/dt`` for two Dirac clusters at angle ``theta`` with masses ``p`` and ``1 - p``.

    Two point clusters stay point clusters and move in the plane they span, so their angle
    obeys a scalar equation::

        USA:  dtheta/dt = -e^{beta cos theta} sin theta
        SA:   dtheta/dt = -sin theta e^{beta c}
                          [ (1-p) / (p e^beta + (1-p) e^{beta c})
                            + p / ((1-p) e^beta + p e^{beta c}) ],
              c = cos theta.

    Parameters
    ----------
    theta : float or array_like
        Angle between the clusters, in ``[0, pi]``.
    p : float
        Mass of the first cluster, in ``(0, 1)``.
    beta, normalization
        As in :func:`equiangular_rate`.

    Returns
    -------
    float or ndarray

    References
    ----------
    The book's chapter 2: Proposition 2.1 (ch2-prop-two-clusters) and Proposition 2.2
    (ch2-prop-merge-time).
    """
    theta = v.float_array("theta", theta)
    p = v.real_scalar("p", p, minimum=0.0, strict=True, maximum=1.0)
    if p == 1.0:
        raise ValueError("p must be < 1 (two clusters with positive masses)")
    beta = v.real_scalar("beta", beta, minimum=0.0, maximum=700.0)
    normalization = v.choice("normalization", normalization, NORMALIZATIONS)
    c, s = np.cos(theta), np.sin(theta)
    if normalization == "usa":
        return -np.exp(beta * c) * s
    # divide numerator and denominator by e^beta to avoid overflow
    w = np.exp(beta * (c - 1.0))
    return -s * w * ((1 - p) / (p + (1 - p) * w) + p / ((1 - p) + p * w))


def two_cluster_merge_time(theta0, theta_end, p, beta, normalization="usa", points=4001):
    """Time for two Dirac clusters to go from angle ``theta0`` to ``theta_end`` (0 < end < theta0 < pi).

    ``T = int_{theta_end}^{theta0} dtheta / |dtheta/dt|``, by Simpson's rule in ``u = log theta``
    (the integrand ``theta / |rate|`` is smooth there) on ``points`` nodes.

    Parameters
    ----------
    theta0, theta_end : float
        Start and end angles, ``0 < theta_end < theta0 < pi``.
    p : float
        Mass of the first cluster.
    beta : float
        Inverse temperature.
    normalization : {"usa", "sa"}
        The normalization.
    points : int
        Simpson nodes (odd).

    Returns
    -------
    float

    References
    ----------
    The book's chapter 2: Proposition 2.1 (ch2-prop-two-clusters) and Proposition 2.2
    (ch2-prop-merge-time).
    """
    theta0 = v.real_scalar("theta0", theta0, minimum=0.0, strict=True, maximum=np.pi)
    theta_end = v.real_scalar("theta_end", theta_end, minimum=0.0, strict=True)
    if not theta_end < theta0 < np.pi:
        raise ValueError(f"theta_end must be < theta0 < pi, got theta_end = {theta_end}, theta0 = {theta0}")
    points = v.integer("points", points, minimum=3)
    if points % 2 == 0:
        points += 1
    u = np.linspace(np.log(theta_end), np.log(theta0), points)
    th = np.exp(u)
    f = th / np.abs(two_cluster_rate(th, p, beta, normalization))
    h = u[1] - u[0]
    return float(h / 3.0 * (f[0] + f[-1] + 4.0 * f[1:-1:2].sum() + 2.0 * f[2:-1:2].sum()))


# ---------------------------------------------------------------------- staircases
@v.renamed_keywords(tol="cluster_tol")
def cluster_staircase(traj, cluster_tol=1e-2):
    """Cluster count at every frame of a Trajectory (single linkage at distance ``cluster_tol``).

    Parameters
    ----------
    traj : Trajectory
        The run.
    cluster_tol : float
        Link distance, > 0 (the keyword ``tol=`` is deprecated).

    Returns
    -------
    ndarray
        One count per frame.
    """
    x = getattr(traj, "x", None)
    if x is None or np.ndim(x) != 3:
        raise TypeError("traj must be a Trajectory (with x of shape (F, n, d))")
    tol = v.real_scalar("cluster_tol", cluster_tol, minimum=0.0, strict=True)
    return np.array([cluster_count(xf, tol) for xf in x], dtype=np.int64)


def _steps(t, counts):
    t = v.float_array("t", t, ndim=1)
    if t.shape[0] < 1:
        raise ValueError("t must hold at least one frame time, got none")
    counts = v.as_array("counts", counts, "a 1-D array of integer cluster counts")
    if counts.shape != t.shape:
        raise ValueError(f"counts must have the shape of t {t.shape}, got {counts.shape}")
    if not np.issubdtype(counts.dtype, np.integer):
        raise TypeError(f"counts must be integers, got dtype {counts.dtype}")
    if np.any(np.diff(t) <= 0):
        raise ValueError("t must be increasing")
    return t, counts


def plateaus(t, counts):
    """Maximal runs of a constant count: a list of ``(k, t_start, t_end)``.

    A run that starts at frame ``a`` and ends at frame ``b`` (the last frame with count k)
    lasts until the next frame's time, ``t[b + 1]`` (or ``t[-1]`` for the last run), so the
    run durations add up to ``t[-1] - t[0]``.

    Parameters
    ----------
    t : array_like
        Frame times.
    counts : array_like
        Cluster counts, one per frame.

    Returns
    -------
    list of tuple
    """
    t, counts = _steps(t, counts)
    runs = []
    start = 0
    for i in range(1, t.size + 1):
        if i == t.size or counts[i] != counts[start]:
            end = t[i] if i < t.size else t[-1]
            runs.append((int(counts[start]), float(t[start]), float(end)))
            start = i
    return runs


def time_with_clusters(t, counts, k):
    """Total time a run spends with exactly ``k`` clusters (sum of its plateaus at k).

    Parameters
    ----------
    t, counts : array_like
        As in :func:`plateaus`.
    k : int
        The count, >= 1.

    Returns
    -------
    float
    """
    k = v.integer("k", k, minimum=1)
    return float(sum(b - a for kk, a, b in plateaus(t, counts) if kk == k))


def first_time_at_most(t, counts, k):
    """First frame time at which the count is ``<= k`` (``inf`` if never).

    Parameters
    ----------
    t, counts, k
        As in :func:`time_with_clusters`.

    Returns
    -------
    float
        One of the times ``t``, or ``inf``.
    """
    t, counts = _steps(t, counts)
    k = v.integer("k", k, minimum=1)
    hit = np.flatnonzero(counts <= k)
    return float(t[hit[0]]) if hit.size else math.inf
