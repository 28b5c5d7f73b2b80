"""The blocked, vectorized pair sums equal a dense NumPy computation.

``pair_sums`` and ``velocity`` (``usaav_edu.dynamics.rhs``) are compared with
an independent dense evaluation of the formulas

    w_ij = b_ij phi'(<y_i, y_j>),  A[:, i] = sum_j w_ij y_j,  Z[i] = sum_j w_ij,
    dy_i/dt = P_{y_i}(A[:, i] / N_i),  N_i = n (USA) or Z[i] (SA),

to 1e-12 relative, over sizes around the SIMD width and the column tile, the
serial and the parallel paths, d = 3 (specialized) and other d, with and
without bias, both profiles and several inverse temperatures.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from usaav_edu.dynamics import rhs

RTOL = 1e-12
DIMS = [2, 3, 4, 7]
SIZES = [1, 2, 3, 63, 64, 65, 200, rhs.PARALLEL_MIN - 1, rhs.PARALLEL_MIN,
         rhs.BLOCK + 1, 1030]
BETAS = [0.0, 1.0, 10.0]


def unit_vectors(n, d, seed):
    y = np.random.default_rng(seed).standard_normal((n, d))
    return y / np.linalg.norm(y, axis=1, keepdims=True)


def symmetric_bias(n, seed):
    b = np.random.default_rng(seed + 1).uniform(0.2, 2.0, (n, n))
    return (b + b.T) / 2


def dense_pair_sums(y, bias, beta, linear):
    """``(A, Z)`` by the dense formulas (``y`` has one token per row)."""
    s = y @ y.T
    w = np.ones_like(s) if linear else np.exp(beta * s)
    if bias is not None:
        w = w * bias
    return (w @ y).T, w.sum(axis=1)


def dense_velocity(y, bias, beta, linear, sa, mobile):
    a, z = dense_pair_sums(y, bias, beta, linear)
    v = a.T / (z[:, None] if sa else y.shape[0])
    f = v - np.sum(v * y, axis=1, keepdims=True) * y
    f[~mobile] = 0.0
    return f.T


def kernel_args(y, bias):
    yt = np.ascontiguousarray(y.T)
    if bias is None:
        return yt, np.ones((1, 1)), False
    return yt, bias, True


def rel_err(got, want):
    return np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-300)


@pytest.mark.parametrize("d", DIMS)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("linear", [False, True])
@pytest.mark.parametrize("beta", BETAS)
def test_pair_sums_match_dense(d, n, with_bias, linear, beta):
    y = unit_vectors(n, d, seed=1000 * d + n)
    bias = symmetric_bias(n, seed=n) if with_bias else None
    a, z = rhs.pair_sums(*kernel_args(y, bias), beta, linear)
    a_ref, z_ref = dense_pair_sums(y, bias, beta, linear)
    assert a.shape == (d, n) and z.shape == (n,)
    assert rel_err(a, a_ref) < RTOL
    assert rel_err(z, z_ref) < RTOL


@pytest.mark.parametrize("d", DIMS)
@pytest.mark.parametrize("n", [1, 3, 65, 1030])
@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("sa", [False, True])
@pytest.mark.parametrize("frozen", [False, True])
def test_velocity_matches_dense(d, n, with_bias, sa, frozen):
    y = unit_vectors(n, d, seed=7 * n + d)
    bias = symmetric_bias(n, seed=n) if with_bias else None
    mobile = np.ones(n, dtype=np.bool_)
    if frozen:
        mobile[::3] = False
    yt, b, has_bias = kernel_args(y, bias)
    out = np.full_like(yt, np.nan)
    params = rhs.KernelParams(b, has_bias, 1.0, False, sa, mobile, frozen)
    rhs.velocity(yt, params, out)
    want = dense_velocity(y, bias, 1.0, False, sa, mobile)
    assert np.all(np.isfinite(out))
    assert np.max(np.abs(out - want)) <= RTOL * max(1.0, np.max(np.abs(want)))


def test_pair_sums_do_not_modify_inputs():
    y = unit_vectors(300, 3, seed=5)
    bias = symmetric_bias(300, seed=5)
    yt, b, _ = kernel_args(y, bias)
    yt0, b0 = yt.copy(), b.copy()
    rhs.pair_sums(yt, b, True, 2.0, False)
    assert np.array_equal(yt, yt0) and np.array_equal(b, b0)


def test_detects_a_wrong_weight():
    """The comparison is sharp enough to see one pair's weight off by 1e-9."""
    y = unit_vectors(65, 3, seed=3)
    bias = np.ones((65, 65))
    bias[10, 40] = bias[40, 10] = 1.0 + 1e-9
    a, z = rhs.pair_sums(*kernel_args(y, bias), 1.0, False)
    a_ref, z_ref = dense_pair_sums(y, None, 1.0, False)
    assert rel_err(z, z_ref) > RTOL


@st.composite
def kernel_inputs(draw):
    d = draw(st.integers(1, 5))
    n = draw(st.integers(1, 40))
    seed = draw(st.integers(0, 2**32 - 1))
    beta = draw(st.floats(-5.0, 20.0, allow_nan=False))
    linear = draw(st.booleans())
    with_bias = draw(st.booleans())
    return d, n, seed, beta, linear, with_bias


@settings(deadline=None)
@given(kernel_inputs())
def test_pair_sums_property(inputs):
    """Random small inputs: dense agreement and permutation equivariance."""
    d, n, seed, beta, linear, with_bias = inputs
    y = unit_vectors(n, d, seed)
    bias = symmetric_bias(n, seed) if with_bias else None
    a, z = rhs.pair_sums(*kernel_args(y, bias), beta, linear)
    a_ref, z_ref = dense_pair_sums(y, bias, beta, linear)
    assert rel_err(a, a_ref) < RTOL
    assert rel_err(z, z_ref) < RTOL
    perm = np.random.default_rng(seed).permutation(n)
    bias_p = bias[np.ix_(perm, perm)] if with_bias else None
    a_p, z_p = rhs.pair_sums(*kernel_args(y[perm], bias_p), beta, linear)
    assert rel_err(a_p, a[:, perm]) < RTOL
    assert rel_err(z_p, z[perm]) < RTOL


@pytest.mark.slow
def test_loop_kernels_vectorize_on_their_own_and_reload_from_cache(tmp_path):
    """In a fresh process every row kernel is SIMD code by itself; then a reload from the cache runs.

    Numba also compiles each called function as a library of its own, and in
    the process that compiles (before the disk cache exists) a caller may
    bind to that copy; a loop that vectorized only after inlining into its
    caller would then run as scalar code in that first process.
    """
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = (
        "import re\n"
        "import numpy as np\n"
        "from usaav_edu.dynamics import rhs\n"
        "for d, n, has_bias in ((3, 5, False), (3, rhs.PARALLEL_MIN + 3, False), (3, 40, True),\n"
        "                       (4, 40, False), (4, 40, True)):\n"
        "    yt = np.random.default_rng(0).standard_normal((d, n))\n"
        "    yt /= np.linalg.norm(yt, axis=0)\n"
        "    bias = np.ones((n, n)) if has_bias else np.ones((1, 1))\n"
        "    out = np.empty_like(yt)\n"
        "    mobile = np.ones(n, dtype=np.bool_)\n"
        "    p = rhs.KernelParams(bias, has_bias, 1.0, False, False, mobile, False)\n"
        "    rhs.velocity(yt, p, out)\n"
        "    assert np.all(np.isfinite(out))\n"
        "checked = 0\n"
        "for kernel in (rhs.row3, rhs.row3_pair, rhs.row_general):\n"
        "    for sig, cres in kernel.overloads.items():\n"
        "        assert re.search(r'<\\d+ x double>', cres.library.get_llvm_str()), (kernel.__name__, sig)\n"
        "        checked += 1\n"
        "print('vectorized kernels', checked)\n"
    )
    root = Path(rhs.__file__).resolve().parents[2]
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path),
               PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    printed = []
    for _ in range(2):  # compile and store, then load from the cache
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        printed.append(done.stdout.strip())
    # the first process compiled the six row kernels (single row, pair of rows and general d,
    # each with and without bias); the second loaded its callers from the cache and compiled none
    assert printed == ["vectorized kernels 6", "vectorized kernels 0"]


@pytest.mark.parametrize("n, beta", [(40, 707.0), (40, 709.5), (rhs.PARALLEL_MIN + 40, 707.0),
                                     (200, 709.3)])
def test_weights_at_the_edge_of_the_double_range(n, beta):
    """For beta above 708.4 the weights of near-antipodal pairs are below 2**-1022: zero, not garbage.

    ``exp(beta)`` and the sums are still finite (well-spread points: a
    Fibonacci lattice), so the dense sums are the reference; beta = 707 is
    the last value the fast loops take.
    """
    k = np.arange(n) + 0.5
    height, angle = 1.0 - 2.0 * k / n, np.pi * (1.0 + np.sqrt(5.0)) * k
    ring = np.sqrt(1.0 - height ** 2)
    y = np.column_stack([ring * np.cos(angle), ring * np.sin(angle), height])
    y[1] = -y[0]  # one exactly antipodal pair
    a, z = rhs.pair_sums(*kernel_args(y, None), beta, False)
    a_ref, z_ref = dense_pair_sums(y, None, beta, False)
    assert np.all(np.isfinite(a)) and np.all(np.isfinite(z))
    assert rel_err(a, a_ref) < RTOL
    assert rel_err(z, z_ref) < RTOL


def test_overflowing_weights_are_infinite_and_nan_stays_nan():
    y = unit_vectors(rhs.PARALLEL_MIN + 10, 3, seed=4)
    _, z = rhs.pair_sums(*kernel_args(y, None), 720.0, False)
    assert np.all(z == np.inf)  # every token's self-weight exp(720) overflows
    y[5, 0] = np.nan
    a, z = rhs.pair_sums(*kernel_args(y, None), 1.0, False)
    assert np.all(np.isnan(z)) and np.all(np.isnan(a))


def test_fast_range_bound():
    """The fast loops are used exactly while |beta| log2(e) max |y_i|^2 <= T_FAST."""
    yt = np.ascontiguousarray(unit_vectors(50, 3, seed=2).T)
    edge = rhs.T_FAST / rhs.LOG2E
    assert rhs.fast_range(yt, 700.0, False) and rhs.fast_range(yt, -edge * 0.999, False)
    assert not rhs.fast_range(yt, edge * 1.001, False)
    assert rhs.fast_range(yt, 1e9, True)  # the linear profile has no exponential
    yt[0, 7] = np.nan
    assert not rhs.fast_range(yt, 1.0, False)


def test_gauge_field_keeps_its_entry_point_and_dispatches_other_arrays():
    from usaav_edu.dynamics.integrate.steppers import GaugeField

    n = 40
    y = unit_vectors(n, 3, seed=3)
    yt = np.ascontiguousarray(y.T)
    field = GaugeField(rhs.kernel_params(None, 1.0, False, False))
    want = dense_velocity(y, None, 1.0, False, False, np.ones(n, dtype=bool))
    first, second = np.empty_like(yt), np.empty_like(yt)
    field(yt, first)  # dispatches, then keeps the compiled entry point
    assert field._entry is not None
    field(yt, second)  # through the entry point
    assert np.array_equal(first, second) and rel_err(second, want) < RTOL
    # a state in Fortran order is not what the entry point was compiled for: dispatched
    third = np.empty_like(yt)
    field(np.asfortranarray(yt), third)
    assert rel_err(third, want) < RTOL
    with pytest.raises(TypeError, match="KernelParams"):
        GaugeField((np.ones((1, 1)), False, 1.0, False, False, np.ones(1, dtype=bool), False))
