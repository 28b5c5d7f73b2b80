"""A plain NumPy reference of the model, in content coordinates (for tests).

It evaluates the formulas of the USA-AV model (chapter 3 of the book) literally, without the gauge
change of variables that the Numba kernel uses::

    dx_i/dt = P_{x_i}( (1/N_i) sum_j grad_x h((x_i, xi_i), (x_j, xi_j)) ),
    grad_x h = b_ij phi'(<G_i x_i, G_j x_j>) G_i^T G_j x_j,

(for a model with ``rotate_values=False`` the value is ``x_j`` instead of
``G_i^T G_j x_j``)
with ``N_i = n`` (USA) or ``sum_j b_ij phi'(...)`` (SA), and
``E_h = (1 / (2 n^2)) sum_ij b_ij phi(<G_i x_i, G_j x_j>)``.
The pair matrices ``G_i^T G_j`` are formed explicitly (O(n^2 d^2) memory), so
keep n moderate.
"""

import numpy as np


def _pairs(model, x, xi):
    n, d = x.shape
    g = model.gauge_matrices(xi, d)
    gx = np.einsum("nij,nj->ni", g, x)
    s = gx @ gx.T
    b = model.bias_matrix(xi)
    b = np.ones((n, n)) if b is None else b
    return g, s, b


def velocity_reference(model, x, xi, frozen=None):
    """``dx/dt`` for content coordinates ``x`` (n, d), evaluated literally.

    Parameters
    ----------
    model : Model
        The model (any parts).
    x : array_like
        ``(n, d)`` contents.
    xi : ndarray
        ``(n,)`` checked labels.
    frozen : array_like of bool or None
        Tokens that do not move.

    Returns
    -------
    ndarray
        ``(n, d)``.
    """
    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape
    g, s, b = _pairs(model, x, xi)
    w = b * model.dphi(s)
    if getattr(model.gauge, "identity", False) or not model.rotate_values:  # G_i^T G_j = I
        grad = w @ x
    else:
        pair = np.einsum("iba,jbc->ijac", g, g)  # G_i^T G_j
        grad = np.einsum("ij,ijac,jc->ia", w, pair, x)
    norm = w.sum(axis=1) if model.normalization == "sa" else np.full(n, float(n))
    grad = grad / norm[:, None]
    vel = grad - np.sum(grad * x, axis=1, keepdims=True) * x
    if frozen is not None:
        vel[np.asarray(frozen, dtype=bool)] = 0.0
    return vel


def energy_reference(model, x, xi):
    r"""The particle energy, summed literally over the pairs.

    .. math:: E_h = \frac{1}{2 n^2} \sum_{ij} b_{ij} \varphi(\langle G_i x_i, G_j x_j \rangle)

    ``model``, ``x`` and ``xi`` are as in :func:`velocity_reference`; the result is a float.
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    _, s, b = _pairs(model, x, xi)
    return float(np.sum(b * model.phi(s)) / (2.0 * n * n))


def rk4_reference(model, x0, xi, dt, n_steps, frozen=None):
    """Fixed-step RK4 with renormalization, in content coordinates (NumPy).

    ``model``, ``xi`` and ``frozen`` are as in :func:`velocity_reference`.

    Parameters
    ----------
    x0 : array_like
        ``(n, d)`` initial contents.
    dt : float
        Step.
    n_steps : int
        Number of steps.

    Returns
    -------
    ndarray
        ``(n, d)`` final contents.
    """
    x = np.array(x0, dtype=np.float64)
    for _ in range(n_steps):
        k1 = velocity_reference(model, x, xi, frozen)
        k2 = velocity_reference(model, x + 0.5 * dt * k1, xi, frozen)
        k3 = velocity_reference(model, x + 0.5 * dt * k2, xi, frozen)
        k4 = velocity_reference(model, x + dt * k3, xi, frozen)
        x = x + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x
