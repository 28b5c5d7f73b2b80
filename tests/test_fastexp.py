"""The vectorized exponential is accurate to 1e-13 relative on |x| <= 700."""

import numpy as np
import pytest
from numba import njit

from usaav_edu.dynamics.fastexp import X_MAX, exp_array, exp_block, fexp2

RTOL = 1e-13
LN2 = np.log(2.0)


def max_rel_err(x):
    return np.max(np.abs(exp_array(x) / np.exp(x) - 1.0))


def test_dense_grid():
    x = np.linspace(-X_MAX, X_MAX, 1_400_001)
    assert max_rel_err(x) < RTOL


def test_random_points():
    x = np.random.default_rng(0).uniform(-X_MAX, X_MAX, 1_000_000)
    assert max_rel_err(x) < RTOL


def test_small_arguments():
    x = np.concatenate([np.linspace(-1.0, 1.0, 200_001), np.geomspace(1e-300, 1e-3, 1000)])
    assert max_rel_err(np.concatenate([x, -x])) < RTOL


def rounding_boundaries():
    """``x`` next to ``(k + 1/2) ln 2``, where the rounding of ``x / ln 2`` switches."""
    k = np.arange(-1010, 1010)
    mid = (k + 0.5) * LN2
    mid = mid[np.abs(mid) <= X_MAX]
    return np.concatenate([mid, np.nextafter(mid, np.inf), np.nextafter(mid, -np.inf)])


@pytest.mark.parametrize("x", [0.0, -0.0, LN2 / 2, -LN2 / 2, np.nextafter(LN2 / 2, 1.0),
                               np.nextafter(-LN2 / 2, -1.0), LN2, -LN2, 1.0, -1.0,
                               X_MAX, -X_MAX, np.nextafter(X_MAX, 0.0), 1e-300, -1e-300])
def test_edge_points(x):
    assert abs(exp_array(np.array([x]))[0] / np.exp(x) - 1.0) < RTOL


def test_rounding_boundaries():
    assert max_rel_err(rounding_boundaries()) < RTOL


def test_exact_at_zero():
    assert exp_array(np.array([0.0]))[0] == 1.0


def test_block_range_only():
    """``exp_block`` writes exactly ``out[j0:j1]``."""
    x = np.linspace(-3, 3, 50)
    out = np.full(50, -1.0)
    exp_block(x, out, 7, 31)
    assert np.all(out[:7] == -1.0) and np.all(out[31:] == -1.0)
    assert np.max(np.abs(out[7:31] / np.exp(x[7:31]) - 1.0)) < RTOL


def test_rejects_out_of_range():
    with pytest.raises(ValueError):
        exp_array(np.array([701.0]))
    with pytest.raises(ValueError):
        exp_array(np.zeros((2, 2)))


@njit(cache=True)
def _exp2_array(t):
    out = np.empty_like(t)
    for j in range(t.shape[0]):
        out[j] = fexp2(t[j])
    return out


def test_base2_variant():
    t = np.concatenate([np.linspace(-1000.0, 1000.0, 400_001),
                        np.arange(-1000, 1001) + 0.5, np.arange(-1000, 1001.0)])
    assert np.max(np.abs(_exp2_array(t) / np.exp2(t) - 1.0)) < RTOL
