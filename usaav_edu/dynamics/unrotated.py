"""The "values not rotated" variant of a gauge model (an exploration, not a gradient flow).

Real transformers rotate queries and keys by RoPE but not values.  The
variant keeps the gauge in the weights only::

    dx_i/dt = P_{x_i}( (1/N_i) sum_j b_ij phi'(<G_i x_i, G_j x_j>) x_j ),

whereas the gradient flow of E_h transports the value too
(``G_i^T G_j x_j``).  The variant integrates in content coordinates; its
weights are dense NumPy (n^2 memory), meant for the modest n of the book.
"""

import numpy as np


class UnrotatedValuesField:
    """``field(xt, out)``: the variant's velocity for content coordinates ``xt`` (d, n).

    The gauge enters the weights only; the values are the contents ``x_j``::

        dx_i/dt = P_{x_i}( (1/N_i) sum_j w_ij x_j ),   y_i = G(xi_i) x_i
        w_ij = b_ij phi'(<y_i, y_j>),   N_i = n (USA)  or  sum_j w_ij (SA)

    and ``dx_i/dt = 0`` for frozen tokens.

    Parameters
    ----------
    kernel : KernelInput
        The run as :meth:`usaav_edu.models.model.Model.kernel` gives it: its ``to_gauge`` maps
        contents to gauge coordinates, its ``params`` hold the bias and the profile.

    References
    ----------
    Definition 5.2 (ch5-def-unrotated) of the book (RoPE with unrotated values); compare
    Definition 4.1 (ch4-def-rope), whose values are rotated.
    """

    def __init__(self, kernel):
        self.kernel = kernel
        self.params = kernel.params
        self.mobile, self.has_frozen = self.params.mobile, self.params.has_frozen

    def __call__(self, xt, out):
        """Write the velocity at the contents ``xt`` into ``out``.

        ::

            out[:, i] = P_{x_i}( (1/N_i) sum_j w_ij x_j ),   0 for frozen tokens

        Parameters
        ----------
        xt : ndarray
            ``(d, n)`` content coordinates, one column per token.
        out : ndarray
            ``(d, n)``, overwritten.

        Returns
        -------
        ndarray
            ``out``.
        """
        p = self.params
        x = xt.T
        n = x.shape[0]
        y = self.kernel.to_gauge(x)
        s = y @ y.T
        w = np.ones_like(s) if p.linear else np.exp(p.beta * s)
        if p.has_bias:
            w *= p.bias
        norm = w.sum(axis=1) if p.sa else np.full(n, float(n))
        v = (w @ x) / norm[:, None]
        v -= np.sum(v * x, axis=1, keepdims=True) * x
        if self.has_frozen:
            v[~self.mobile] = 0.0
        out[:] = v.T
        return out
