r"""Pre-LN: layer normalization before attention, the residual stream left to grow.

Karagodin, Ge, Polyanskiy and Rigollet (arXiv:2510.22026) write a token as
:math:`x_k = r_k \theta_k` with :math:`r_k = |x_k|` and :math:`\theta_k` on the sphere, and
show that a placement of layer normalization acts on the directions as a regulation of their
speed.  With :math:`A_k(\theta)` the attention of token :math:`k` before any projection (in
this package ``A_i = (1/N_i) sum_j b_ij phi'(<G_i theta_i, G_j theta_j>) G_i^T G_j theta_j``,
``N_i = n`` or the row sum of the weights):

* **Post-LN** (``x <- LN(x + Attn(x))``, the book's model): :math:`r_k = 1` and

  .. math::

      \dot\theta_k = P_{\theta_k} A_k(\theta);

* **Pre-LN** (``x <- x + Attn(LN(x))``): the residual stream :math:`z_k = r_k \theta_k` moves
  by the attention of the normalized tokens,

  .. math::

      \dot z_k = A_k(\theta), \qquad \theta_k = z_k / |z_k|,

  which splits into a radial and an angular part,

  .. math::

      \dot r_k = \langle \theta_k, A_k(\theta) \rangle, \qquad
      \dot\theta_k = \frac{1}{r_k} P_{\theta_k} A_k(\theta):

  the directions move as in Post-LN, each slowed by its own radius.

Here :math:`z_k(0) = x_k(0)` on the sphere (``r_k(0) = 1``): Pre-LN and Post-LN start at the
same velocity.

**Energy.**  With values rotated by the gauge and USA, :math:`P_{\theta_k} A_k = n
\nabla_k E_h` (the Riemannian gradient on the sphere), so Pre-LN is the gradient ascent of
:math:`E_h(\theta)` in the metric :math:`\sum_k r_k |\dot\theta_k|^2 / n`:
:math:`\dot E_h = \sum_k (n / r_k) |\nabla_k E_h|^2 \ge 0` while every :math:`r_k > 0`.  The
energy still rises (for SA too: its metric weighs token :math:`k` by :math:`r_k N_k / n`), but
the identity :math:`\dot E_h = (1/n) \sum_k |v_k|^2` of Post-LN USA does not hold, so
:func:`usaav_edu.simulate` checks only that the energy does not fall.

**The field.**  :class:`PreNormField` evaluates :math:`\dot z` for the steppers of
:mod:`usaav_edu.dynamics.integrate.steppers`: its retraction is the identity (with a check
that every radius is finite and positive), the error norm the default one on the entries of
``z``.  It is dense NumPy, ``O(n^2)`` time and memory per evaluation (like
:mod:`usaav_edu.dynamics.unrotated`): fast summation does not apply to Pre-LN
(:func:`usaav_edu.dynamics.fastsum.kernel.fast_applies` says why).

The gauge: for a model whose values are rotated, the state is ``w_k = G_k z_k`` (the gauge
keeps lengths), and :math:`\dot w_k = G_k A_k = (1/N_k) \sum_j w_{kj} \hat w_j` with
:math:`\hat w_j = w_j / |w_j|`: the pair sum of the gauge coordinates, unprojected.  For the
variant with unrotated values the state is ``z`` in content coordinates, and the weights are
those of the gauge coordinates :math:`G_j \theta_j`.

References
----------
N. Karagodin, S. Ge, Y. Polyanskiy, P. Rigollet, "Normalization in Attention Dynamics",
arXiv:2510.22026 (2025): the decomposition :math:`x_k = r_k \theta_k` and normalization as
speed regulation (Post-LN, Pre-LN, Peri-LN, ...).
"""

import numpy as np

__all__ = ["PreNormField", "prenorm_velocity", "directions"]


def directions(state):
    r"""``(theta, r)``: the unit columns and the radii of a ``(d, n)`` state.

    .. math:: r_k = |z_k|, \qquad \theta_k = z_k / r_k.

    Parameters
    ----------
    state : ndarray
        ``(d, n)``, one token per column.

    Returns
    -------
    tuple of ndarray
        ``theta`` ``(d, n)`` and ``r`` ``(n,)``.
    """
    r = np.sqrt(np.einsum("ki,ki->i", state, state))
    return state / r, r


def prenorm_velocity(params, state, to_gauge=None):
    r"""``dz/dt`` of Pre-LN at the ``(d, n)`` state ``z``: the attention of its directions.

    .. math::

        \dot z_i = \frac{1}{N_i} \sum_j w_{ij}\, \theta_j, \qquad
        w_{ij} = b_{ij}\, \varphi'(\langle y_i, y_j \rangle), \qquad
        \theta_j = \frac{z_j}{|z_j|},

    with :math:`y_j = \theta_j` (the state in gauge coordinates) or
    :math:`y_j = G_j \theta_j` (``to_gauge`` given: the state in content coordinates, values
    not rotated), :math:`N_i = n` (USA) or :math:`\sum_j w_{ij}` (SA), and
    :math:`\dot z_i = 0` for frozen tokens.

    Parameters
    ----------
    params : KernelParams
        The bias, profile, normalization and frozen tokens
        (:class:`usaav_edu.dynamics.rhs.KernelParams`).
    state : ndarray
        ``(d, n)``, one token per column, every column nonzero.
    to_gauge : callable or None
        ``to_gauge(x) -> y`` for ``(n, d)`` contents; None when the state is in gauge
        coordinates.

    Returns
    -------
    ndarray
        ``(d, n)``.
    """
    theta, _ = directions(state)
    x = theta.T
    y = x if to_gauge is None else to_gauge(x)
    s = y @ y.T
    w = np.ones_like(s) if params.linear else np.exp(params.beta * s)
    if params.has_bias:
        w *= params.bias
    norm = w.sum(axis=1) if params.sa else np.full(x.shape[0], float(x.shape[0]))
    vel = (w @ x) / norm[:, None]
    if params.has_frozen:
        vel[~params.mobile] = 0.0
    return vel.T


class PreNormField:
    """``field(zt, out)``: Pre-LN's velocity :func:`prenorm_velocity` for the steppers.

    The state is ``(d, n)``: gauge coordinates ``G_i z_i`` for a model whose values are
    rotated, contents ``z_i`` for the unrotated variant.  The retraction is the identity with a
    check (False when a radius is zero or an entry not finite), so the last stage of a step is
    reused (``reuse_last_stage``); there is no speed integral (``stage_speed = None``).

    Parameters
    ----------
    kernel : KernelInput
        The run (:meth:`usaav_edu.models.model.Model.kernel`, with the dense bias).
    """

    reuse_last_stage = True
    stage_speed = None

    def __init__(self, kernel):
        self.params = kernel.params
        self.mobile, self.has_frozen = self.params.mobile, self.params.has_frozen
        self.to_gauge = None if kernel.model.rotate_values else kernel.to_gauge

    def __call__(self, zt, out):
        """Write ``dz/dt`` at ``zt`` into ``out`` and return ``out``."""
        out[:] = prenorm_velocity(self.params, zt, self.to_gauge)
        return out

    @staticmethod
    def retract(zt):
        """The identity; False if an entry is not finite or a token has radius 0."""
        if not np.all(np.isfinite(zt)):
            return False
        return bool(np.all(np.einsum("ki,ki->i", zt, zt) > 0.0))
