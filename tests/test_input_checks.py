"""Bad input to the helpers gets an error that names the argument and says what was expected."""

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu import diagnostics as dg
from usaav_edu import laws, reductions, spectral
from usaav_edu import maximizers as mx


# ------------------------------------------------------------------------------- seeds
@pytest.mark.parametrize("draw", [
    lambda seed: ue.sphere.uniform(10, 3, seed=seed),
    lambda seed: ue.sphere.random_frames(2, 3, seed=seed),
    lambda seed: laws.vmf_mixture_sample(5, [[0.0, 0.0, 1.0]], [2.0], [1.0], seed=seed),
    lambda seed: laws.symmetric_cap(8, seed=seed),
])
def test_a_bad_seed_is_named(draw):
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        draw(-1)
    with pytest.raises(TypeError, match="seed must be None, a non-negative integer"):
        draw(1.5)
    with pytest.raises(TypeError, match="seed must be"):
        draw("0")
    with pytest.raises(TypeError, match="seed must be"):
        draw(True)


def test_good_seeds_give_the_numpy_stream():
    expected = ue.sphere.uniform(6, 3, seed=7)
    for seed in (7, np.int64(7), [7], np.random.SeedSequence(7)):
        assert np.array_equal(ue.sphere.uniform(6, 3, seed=seed), expected)
    g = np.random.default_rng(7).standard_normal((6, 3))
    assert np.array_equal(expected, g / np.linalg.norm(g, axis=1, keepdims=True))


# --------------------------------------------------------------------------- maximizers
def test_gauge_maximizer_names_a_missing_xi():
    model = ue.models.rope(1.0, (1.0,), 3)
    u = [0.0, 0.0, 1.0]
    with pytest.raises(TypeError, match="xi must be a 1-D array of labels, one per token"):
        mx.gauge_maximizer(model, None, u)
    with pytest.raises(TypeError, match="xi must be a 1-D array"):
        mx.gauge_maximizer(ue.models.usa(1.0), None, u)
    with pytest.raises(ValueError, match=r"xi must be a 1-D array .* got shape \(\)"):
        mx.gauge_maximizer(model, 3.0, u)
    with pytest.raises(ValueError, match=r"u has dimension d = 4"):
        mx.gauge_maximizer(model, np.arange(3.0), [0.0, 0.0, 0.0, 1.0])
    with pytest.raises(TypeError, match="model must be"):
        mx.gauge_maximizer("rope", np.arange(3.0), u)
    # the usage the message points to works: one label per token
    x = mx.gauge_maximizer(ue.models.usa(1.0), np.zeros(4), u)
    assert np.array_equal(x, np.tile(u, (4, 1)))


def test_maximizer_helpers_name_their_arguments():
    with pytest.raises(TypeError, match="model must be"):
        mx.gauge_max_energy(None)
    with pytest.raises(TypeError, match="model must be"):
        mx.rope_orbit(None, [0.0, 0.0, 1.0], [0.0])
    with pytest.raises(ValueError, match="xi must hold at least one position"):
        mx.cosine_circle_energy([], 1.0)


# ---------------------------------------------------------------------- spectral, reductions
def test_spectral_coefficients_are_checked():
    with pytest.raises(ValueError, match="bhat must be finite"):
        spectral.top_frequency(np.arange(2), [np.nan, 1.0])
    with pytest.raises(TypeError, match="k must be an array of integer frequencies"):
        spectral.top_frequency(["a", "b"], [1.0, 2.0])
    with pytest.raises(TypeError, match="bhat must hold real or complex numbers"):
        spectral.fourier_energy(["a"], [[1.0]])
    with pytest.raises(TypeError, match="mhat must be an array"):
        spectral.fourier_energy([1.0], None)


def test_reductions_refuse_empty_input_by_name():
    with pytest.raises(ValueError, match="theta must hold at least one angle"):
        reductions.circle_velocity([], 1.0)
    with pytest.raises(ValueError, match="theta0 must hold at least one angle"):
        reductions.circle_flow([], 1.0, [0.0, 1.0])
    with pytest.raises(ValueError, match="t must hold at least one frame time"):
        reductions.plateaus([], np.array([], dtype=int))


def test_diagnostics_name_their_arguments():
    x = ue.sphere.uniform(5, 3, seed=0)
    with pytest.raises(ValueError, match="cluster_tol must be"):
        dg.clusters(x, 0.0)
    with pytest.raises(ValueError, match="x must be finite"):
        dg.diameter(np.full((3, 3), np.nan))
    traj = ue.simulate(ue.models.usa(1.0), x, None, t_max=0.1, n_frames=2)
    with pytest.raises(TypeError, match="fn must be a callable"):
        dg.series(traj, "spread")


# -------------------------------------------------------- finite input, overflowing result
def test_overflowing_phases_raise_instead_of_returning_nan():
    xi = np.arange(4.0)
    with pytest.raises(ValueError, match="k \\* xi overflows"):
        mx.great_circle(xi, 1e308, [1.0, 0.0, 0.0], [0.0, 1.0, 0.0])
    with pytest.raises(ValueError, match="omega \\* \\(xi_i - xi_j\\) overflows"):
        mx.cosine_circle_energy(xi, 1e308)
    with pytest.raises(ValueError, match="omega = 1e-308 is too small"):
        laws.rope_positions(laws.uniform_circle_law(), 4, omega=1e-308)
    with pytest.raises(ValueError, match="period = 1e\\+308 is too large"):
        spectral.circle_positions(4, period=1e308)
    x = ue.sphere.uniform(4, 3, seed=0)
    with pytest.raises(ValueError, match="overflows"):
        spectral.profile_fourier(x, xi * 1e307, np.arange(3))
    with pytest.raises(ValueError, match="overflows"):
        spectral.fourier_energy(np.ones(2), np.full((2, 3), 1e200))


def test_equiangular_formulas_take_inner_products_only():
    with pytest.raises(ValueError, match="r must be an inner product of unit vectors"):
        reductions.equiangular_rate(1e308, 5, 1.0)
    with pytest.raises(ValueError, match="r must be an inner product of unit vectors"):
        reductions.equiangular_energy(2.0, 5, 1.0)


def test_ragged_input_is_named():
    with pytest.raises(TypeError, match="seed must be"):
        ue.sphere.uniform(3, 3, seed=[[1, 2], [3]])
    with pytest.raises(TypeError, match="counts must be"):
        reductions.plateaus([0.0, 1.0], [[1, 2], [3]])
    with pytest.raises(TypeError, match="k must be"):
        spectral.top_frequency([[1, 2], [3]], [1.0, 2.0])
