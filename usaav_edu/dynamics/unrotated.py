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
    """``field(xt, out)``: the variant's velocity for content coordinates ``xt`` (d, n)."""

    def __init__(self, model, xi, bias, mobile, has_frozen):
        self.model, self.xi, self.bias = model, xi, bias
        self.mobile, self.has_frozen = mobile, has_frozen

    def __call__(self, xt, out):
        x = xt.T
        n = x.shape[0]
        y = self.model.to_gauge(x, self.xi)
        w = self.model.dphi(y @ y.T)
        if self.bias is not None:
            w *= self.bias
        norm = w.sum(axis=1) if self.model.normalization == "sa" else np.full(n, float(n))
        v = (w @ x) / norm[:, None]
        v -= np.sum(v * x, axis=1, keepdims=True) * x
        if self.has_frozen:
            v[~self.mobile] = 0.0
        out[:] = v.T
        return out
