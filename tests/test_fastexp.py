"""The vectorized exponential is accurate to 1e-13 relative wherever exp(x) is a normal double.

Outside that range it saturates: ``inf`` where ``exp`` overflows, ``0`` where
the true value is below ``2**-1022`` (subnormal results are flushed to zero),
``nan`` for ``nan``; the same for the base-2 variant ``fexp2``.
"""

import struct

import numpy as np
import pytest
from numba import njit

from usaav_edu.dynamics.fastexp import T_HI, T_LO, X_HI, X_LO, X_MAX, exp_array, exp_block, fexp2

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


def test_rejects_non_vectors():
    with pytest.raises(ValueError, match="1-D"):
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


TINY = np.finfo(float).tiny  # 2**-1022, the smallest normal double
BIG = np.finfo(float).max


def test_range_ends_are_where_exp_stops_being_a_normal_double():
    """``X_HI`` is the last ``x`` with a finite ``exp``, ``X_LO`` the first with ``exp(x) >= 2**-1022``."""
    with np.errstate(over="ignore"):
        assert np.isfinite(np.exp(X_HI)) and np.exp(np.nextafter(X_HI, np.inf)) == np.inf
    assert np.exp(X_LO) >= TINY > np.exp(np.nextafter(X_LO, -np.inf))
    assert T_HI == np.nextafter(1024.0, 0.0) and T_LO == -1022.0


def test_accurate_up_to_the_ends_of_the_range():
    x = np.concatenate([np.linspace(X_HI - 1.0, X_HI, 100_001), np.linspace(X_LO, X_LO + 1.0, 100_001),
                        [X_HI, X_LO, np.nextafter(X_HI, 0.0), np.nextafter(X_LO, 0.0)]])
    got = exp_array(x)
    assert np.all(np.isfinite(got)) and np.all(got >= TINY)
    assert max_rel_err(x) < RTOL
    assert exp_array(np.array([X_HI]))[0] > 0.99999 * BIG


def test_saturates_above_and_below_the_range():
    above = np.array([np.nextafter(X_HI, np.inf), 709.8, 710.0, 1000.0, 2000.0, 1e300, np.inf])
    below = np.array([np.nextafter(X_LO, -np.inf), -708.4, -745.0, -746.0, -2000.0, -1e300, -np.inf])
    assert np.all(exp_array(above) == np.inf)
    assert np.all(exp_array(below) == 0.0)  # below 2**-1022: flushed to zero, not subnormal


def payload_nan(bits):
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


NANS = [np.nan, -np.nan, payload_nan(0x7FF8000000000FFF), payload_nan(0xFFF0000000000001)]


def test_nan_stays_nan():
    assert np.all(np.isnan(exp_array(np.array(NANS))))
    assert np.all(np.isnan(_exp2_array(np.array(NANS))))


def test_base2_variant_at_the_ends_of_its_range():
    inside = np.concatenate([np.linspace(T_HI - 1.0, T_HI, 10_001), np.linspace(T_LO, T_LO + 1.0, 10_001),
                             [T_HI, T_LO, 1023.5, np.nextafter(1023.5, 0.0)]])
    assert np.max(np.abs(_exp2_array(inside) / np.exp2(inside) - 1.0)) < RTOL
    above = np.array([1024.0, np.nextafter(1024.0, np.inf), 1100.0, 2000.0, 1e300, np.inf])
    below = np.array([np.nextafter(T_LO, -np.inf), -1022.5, -1074.0, -1075.0, -2000.0, -1e300, -np.inf])
    assert np.all(_exp2_array(above) == np.inf)
    assert np.all(_exp2_array(below) == 0.0)
