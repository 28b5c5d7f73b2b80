"""Tests of usaav_edu.analysis.spectral: Fourier coefficients, mean profiles, shapes, the phase diagram."""

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu import spectral as sp


def _circle(n, k=1, d=3, seed=0):
    """A great circle wound k times, in a random orthonormal pair (a, c)."""
    q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(d, d)))
    xi = sp.circle_positions(n)
    return ue.maximizers.great_circle(xi, k, q[:, 0], q[:, 1]), xi


# ---------------------------------------------------------------------- Fourier coefficients
def test_cosine_coefficients_are_half_at_plus_minus_one():
    k, bhat = sp.bias_fourier(np.cos, 16)
    assert bhat.dtype == np.float64
    assert list(k) == list(range(-8, 8))
    expected = np.where(np.abs(k) == 1, 0.5, 0.0)
    assert np.allclose(bhat, expected, atol=1e-14)
    assert sp.top_frequency(k, bhat) == (1, pytest.approx(0.5))


@pytest.mark.parametrize("omega", [2, 3])
def test_cosine_of_integer_frequency_peaks_at_that_frequency(omega):
    k, bhat = sp.bias_fourier(lambda t: np.cos(omega * t), 20)
    assert sp.top_frequency(k, bhat)[0] == omega


def test_coefficients_are_eigenvalues_of_the_circulant_matrix():
    n = 12
    def b(t):
        return np.exp(-np.minimum(np.abs(t), 2 * np.pi - np.abs(t))) * np.cos(2 * t)

    xi = sp.circle_positions(n)
    big_b = b(np.mod(xi[:, None] - xi[None, :], 2 * np.pi))
    _, bhat = sp.bias_fourier(b, n)
    assert np.allclose(np.sort(bhat * n), np.linalg.eigvalsh(big_b), atol=1e-12)


def test_non_negative_bias_peaks_at_zero_frequency():
    # circular distance bias: b >= 0, so |hat b(k)| <= hat b(0)
    k, bhat = sp.bias_fourier(lambda t: np.exp(-2.0 * np.minimum(t, 2 * np.pi - t)), 32)
    assert sp.top_frequency(k, bhat)[0] == 0
    assert np.all(np.abs(bhat) <= bhat[k == 0][0] + 1e-14)


def test_uneven_bias_gives_complex_coefficients_and_top_frequency_refuses_them():
    k, bhat = sp.bias_fourier(np.sin, 8)
    assert np.iscomplexobj(bhat)
    with pytest.raises(ValueError, match="bhat"):
        sp.top_frequency(k, bhat)


def test_period_rescales_positions():
    k, bhat = sp.bias_fourier(lambda t: np.cos(2 * np.pi * t), 10, period=1.0)
    assert sp.top_frequency(k, bhat) == (1, pytest.approx(0.5))


# ---------------------------------------------------------------------- energy identity
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fourier_energy_equals_the_particle_energy(seed):
    n = 24
    xi = sp.circle_positions(n)
    x = ue.sphere.uniform(n, 3, seed=seed)
    model = ue.models.cosine_bias(omega=1.0)
    k, bhat = sp.bias_fourier(np.cos, n)
    mhat = sp.profile_fourier(x, xi, k)
    assert sp.fourier_energy(bhat, mhat) == pytest.approx(ue.energy(model, x, xi), abs=1e-13)
    # Parseval: the profile's power sums to 1
    assert np.sum(np.abs(mhat) ** 2) == pytest.approx(1.0, abs=1e-12)


def test_great_circle_attains_a_quarter_and_has_the_expected_singular_values():
    n = 40
    x, xi = _circle(n)
    model = ue.models.cosine_bias(omega=1.0)
    assert ue.energy(model, x, xi) == pytest.approx(0.25, abs=1e-13)
    assert np.allclose(sp.singular_values(x), sp.great_circle_singular_values(n, 3), atol=1e-12)
    assert sp.classify(x) == "great circle"
    assert sp.winding_number(x, xi) == 1


def test_winding_and_classification_of_simple_shapes():
    n = 30
    x2, xi = _circle(n, k=2, seed=3)
    assert sp.winding_number(x2, xi) == 2
    dirac = np.tile([0.0, 0.0, 1.0], (n, 1))
    assert sp.classify(dirac) == "collapse"
    assert sp.winding_number(dirac, xi) == 0
    assert np.allclose(sp.singular_values(dirac), [np.sqrt(n), 0, 0])
    two_points = np.array([[1.0, 0, 0]] * 20 + [[0, 1.0, 0]] * 10)
    assert sp.classify(two_points) == "other"


def test_mean_profile_averages_tokens_at_one_position():
    x = np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]])
    pos, m = sp.mean_profile(x, [1.0, 0.0, 1.0])
    assert list(pos) == [0.0, 1.0]
    assert np.allclose(m, [[0, 1, 0], [0.5, 0, 0.5]])


# ---------------------------------------------------------------------- the dynamics
def test_cosine_bias_dynamics_reaches_the_fourier_bound():
    n = 32
    xi = sp.circle_positions(n)
    traj = ue.simulate(ue.models.cosine_bias(omega=1.0), ue.sphere.uniform(n, 3, seed=4), xi, t_max=60.0)
    k, bhat = sp.bias_fourier(np.cos, n)
    assert traj.energy[-1] == pytest.approx(sp.top_frequency(k, bhat)[1] / 2, abs=1e-8)
    assert sp.classify(traj.final) == "great circle"


def test_phase_diagram_rows():
    rows = sp.phase_diagram(omegas=(0.2, 1.0), betas=(0.0,), n=16, t_max=60.0)
    assert len(rows) == 4
    by = {(r["bias"], r["omega"]): r for r in rows}
    assert by[("distance", 0.2)]["phase"] == "collapse"
    assert by[("cosine", 0.2)]["phase"] == "collapse" and not by[("cosine", 0.2)]["b_negative"]
    assert by[("cosine", 1.0)]["phase"] == "great circle" and by[("cosine", 1.0)]["b_negative"]
    assert by[("cosine", 1.0)]["energy"] == pytest.approx(0.25, abs=1e-6)
    for r in rows:
        assert r["energy"] <= r["energy_bound"] + 1e-12
        assert r["sv"].shape == (3,)


# ---------------------------------------------------------------------- validation
def test_validation_names_the_argument():
    with pytest.raises(TypeError, match="b must be a callable"):
        sp.bias_fourier(3.0, 8)
    with pytest.raises(ValueError, match="n must be"):
        sp.bias_fourier(np.cos, 0)
    with pytest.raises(ValueError, match="period"):
        sp.bias_fourier(np.cos, 8, period=0.0)
    with pytest.raises(ValueError, match="b must return one value"):
        sp.bias_fourier(lambda t: 1.0, 8)
    with pytest.raises(ValueError, match="b must return finite"):
        sp.bias_fourier(lambda t: np.full_like(t, np.nan), 8)
    with pytest.raises(ValueError, match="xi must have shape"):
        sp.profile_fourier(ue.sphere.uniform(4, 3, seed=0), np.zeros(3), np.arange(2))
    with pytest.raises(TypeError, match="k must be"):
        sp.profile_fourier(ue.sphere.uniform(4, 3, seed=0), np.zeros(4), np.array([0.5]))
    with pytest.raises(ValueError, match="x"):
        sp.singular_values(np.ones((4, 3)))
    with pytest.raises(ValueError, match="bhat must have shape"):
        sp.fourier_energy(np.ones(3), np.ones((2, 3)))
    with pytest.raises(ValueError, match="k and bhat"):
        sp.top_frequency(np.arange(3), np.ones(2))
    with pytest.raises(ValueError, match="bias"):
        sp.bias_model("gaussian", 1.0, 1.0)
    with pytest.raises(ValueError, match="omega"):
        sp.bias_model("cosine", -1.0, 1.0)
    with pytest.raises(TypeError, match="biases"):
        sp.phase_diagram(biases="cosine")
    with pytest.raises(TypeError, match="omegas"):
        sp.phase_diagram(omegas=())
    with pytest.raises(ValueError, match="n must be"):
        sp.great_circle_singular_values(2, 3)
    with pytest.raises(ValueError, match="collapse_tol"):
        sp.classify(ue.sphere.uniform(4, 3, seed=0), collapse_tol=0.0)
