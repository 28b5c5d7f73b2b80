"""Fast summation (``usaav_edu.dynamics.fastsum``) against the direct kernel, and its error bounds.

The direct kernel (``rhs.velocity``, ``energy_gauge`` on the same gauge coordinates and the
dense bias matrix) is the reference.  The error norm is the one the fast kernel bounds::

    err = max_i |v^_i - v_i| / max_i m_i,   m_i = (1 / N_i) sum_j |b_ij| phi'(<y_i, y_j>)

and every comparison checks ``err <= bound <= tol`` (plus ``ROUNDING`` for the rounding, which
the truncation bound does not cover).
"""

import math

import numpy as np
import pytest
from scipy import special

import usaav_edu as ue
from usaav_edu.dynamics import rhs
from usaav_edu.dynamics.energy import energy_gauge
from usaav_edu.dynamics.fastsum import cost
from usaav_edu.dynamics.fastsum import expansions as ex
from usaav_edu.dynamics.fastsum import kernel as fs

TOL = 1e-10
ROUNDING = 1e-13


def unit_columns(d, n, seed):
    y = np.random.default_rng(seed).standard_normal((d, n))
    return np.ascontiguousarray(y / np.linalg.norm(y, axis=0))


def dense_bias(bias, xi, omega, lam):
    if bias == "none":
        return None
    diff = xi[:, None] - xi[None, :]
    return np.cos(omega * diff) if bias == "cosine" else np.exp(-lam * np.abs(diff))


def direct(yt, bias_matrix, beta, linear, sa, mobile):
    params = rhs.kernel_params(bias_matrix, beta, linear, sa, mobile)
    out = np.empty_like(yt)
    rhs.velocity(yt, params, out)
    return out, energy_gauge(yt, params)


def error_norm(got, want, yt, bias_matrix, beta, linear, sa):
    n = yt.shape[1]
    w = np.ones((n, n)) if linear else np.exp(beta * (yt.T @ yt))
    ab = np.ones((n, n)) if bias_matrix is None else np.abs(bias_matrix)
    norm = (w * (ab if bias_matrix is None else bias_matrix)).sum(axis=1) if sa else n
    mass = np.max((w * ab).sum(axis=1) / norm)
    return np.max(np.abs(got - want)) / mass


def energy_scale(yt, bias_matrix, beta, linear):
    """``E~`` of the energy bound: ``sum |b_ij| e^{beta s_ij} / (2 |beta| n^2)``."""
    n = yt.shape[1]
    if linear:
        return 1.0
    ab = 1.0 if bias_matrix is None else np.abs(bias_matrix)
    return float(np.sum(ab * np.exp(beta * (yt.T @ yt)))) / (2.0 * abs(beta) * n * n)


CASES = [(d, bias, sa, beta)
         for d in (2, 3, 4)
         for bias in ("none", "cosine", "distance")
         for sa in (False, True) if not (sa and bias == "cosine")
         for beta in ((0.5, 4.0, 8.0) if d <= 3 else (0.5, 4.0))]


@pytest.mark.parametrize("d, bias, sa, beta", CASES)
def test_fast_matches_direct_within_the_bound(d, bias, sa, beta):
    n = 50 + (97 * d + 31 * len(bias) + int(10 * beta)) % 500  # 50 .. 600
    yt = unit_columns(d, n, seed=n)
    xi = np.random.default_rng(n).uniform(-3.0, 9.0, n)
    omega, lam = 0.8, 0.4
    mobile = np.ones(n, dtype=bool)
    mobile[::7] = False
    kw = {"omega": omega} if bias == "cosine" else {"lam": lam} if bias == "distance" else {}
    fk = fs.FastKernel(d, beta, False, sa, tol=TOL, bias=bias, xi=xi, mobile=mobile, **kw)
    b = dense_bias(bias, xi, omega, lam)
    want, e_want = direct(yt, b, beta, False, sa, mobile)
    got = fk(yt, np.full_like(yt, np.nan))
    assert fk.bound <= TOL
    assert error_norm(got, want, yt, b, beta, False, sa) <= fk.bound + ROUNDING
    assert np.all(got[:, ~mobile] == 0.0)
    e_got = fk.energy(yt)
    assert abs(e_got - e_want) <= (fk.energy_bound + ROUNDING) * energy_scale(yt, b, beta, False)


@pytest.mark.parametrize("d", [2, 3, 5])
@pytest.mark.parametrize("bias", ["none", "cosine", "distance"])
def test_linear_profile_is_exact(d, bias):
    n = 120
    yt = unit_columns(d, n, seed=d)
    xi = np.linspace(0.0, 5.0, n)
    kw = {"omega": 1.3} if bias == "cosine" else {"lam": 0.7} if bias == "distance" else {}
    fk = fs.FastKernel(d, 0.0, True, False, bias=bias, xi=xi, **kw)
    assert (fk.basis, fk.rank, fk.bound) == ("linear", 1, 0.0)
    b = dense_bias(bias, xi, 1.3, 0.7)
    want, e_want = direct(yt, b, 0.0, True, False, None)
    got = fk(yt, np.empty_like(yt))
    assert np.max(np.abs(got - want)) <= 1e-13
    assert abs(fk.energy(yt) - e_want) <= 1e-13


def test_parallel_path_and_distance_ties():
    """Above the serial size, with repeated positions (ties of the distance bias)."""
    n = fs.PARALLEL_MIN_FAST + 77
    yt = unit_columns(3, n, seed=3)
    xi = np.floor(np.random.default_rng(3).uniform(0.0, 40.0, n))  # many equal positions
    for bias, kw in (("none", {}), ("distance", {"lam": 0.3}), ("cosine", {"omega": 0.5})):
        fk = fs.FastKernel(3, 2.0, False, False, tol=TOL, bias=bias, xi=xi, **kw)
        b = dense_bias(bias, xi, 0.5, 0.3)
        want, _ = direct(yt, b, 2.0, False, False, None)
        got = fk(yt, np.empty_like(yt))
        assert error_norm(got, want, yt, b, 2.0, False, False) <= fk.bound + ROUNDING


@pytest.mark.parametrize("name", ["usa", "sa", "rope3", "rope4", "prefix", "distance",
                                  "cosine_linear", "cosine_exp", "usa_linear"])
def test_every_model_kind_through_fast_kernel(name):
    from conftest import all_models

    model, d, labels = next((m, d, lab) for key, m, d, lab in all_models(d=4) if key == name)
    n = 300
    x0 = unit_columns(d, n, seed=11).T
    kin = model.kernel(x0, labels(n))
    fk = fs.fast_kernel(model, kin.xi, d, TOL)
    want, e_want = direct(kin.y0, kin.bias, model.beta, model.linear,
                          model.normalization == "sa", None)
    got = fk(kin.y0, np.empty_like(kin.y0))
    err = error_norm(got, want, kin.y0, kin.bias, model.beta, model.linear,
                     model.normalization == "sa")
    assert err <= fk.bound + ROUNDING
    scale = energy_scale(kin.y0, kin.bias, model.beta, model.linear)
    assert abs(fk.energy(kin.y0) - e_want) <= (fk.energy_bound + ROUNDING) * max(scale, 1.0)


def test_a_fast_run_keeps_the_invariants():
    """RK4 with the fast kernel as the field: unit norms, non-decreasing energy (USA ascent)."""
    from usaav_edu.dynamics.integrate.steppers import METHODS

    n = 300
    xi = np.linspace(0.0, 30.0, n)
    model = ue.models.distance_bias(2.0, lam=0.3)
    kin = model.kernel(unit_columns(3, n, seed=4).T, xi)
    fk = fs.fast_kernel(model, kin.xi, 3, TOL)
    y = kin.y0.copy()
    energies = [fk.energy(y)]
    for k in range(20):
        done = METHODS["rk4"].advance(y, 0.25 * k, 0.25 * (k + 1), 0.05, fk)
        assert done.outcome.name == "OK"
        energies.append(fk.energy(y))
    assert np.max(np.abs(np.linalg.norm(y, axis=0) - 1.0)) <= 1e-14
    assert np.all(np.diff(energies) >= -1e-12 * abs(energies[-1]))
    assert energies[-1] > energies[0] * 1.01  # it moved
    assert abs(fk.energy(y) - energy_gauge(y, kin.params)) <= 1e-9 * abs(energies[-1])


def test_sums_match_the_numpy_reference():
    yt = unit_columns(3, 200, seed=5)
    xi = np.random.default_rng(5).uniform(0.0, 10.0, 200)
    for bias, kw in (("none", {}), ("distance", {"lam": 0.5}), ("cosine", {"omega": 0.3})):
        fk = fs.FastKernel(3, 1.5, False, False, bias=bias, xi=xi, **kw)
        got, want = fk.sums(yt), fk.sums_reference(yt)
        assert np.max(np.abs(got - want)) <= 1e-13 * np.max(np.abs(want))


@pytest.mark.parametrize("d, basis", [(2, "fourier"), (3, "harmonic"), (4, "taylor")])
def test_compiled_features_match_the_reference(d, basis):
    yt = unit_columns(d, 70, seed=d)
    degree = 9
    f = np.empty((ex.rank(basis, d, degree), 70))
    parent, var, factor, _ = ex.monomial_tree(d, degree)
    ex.chunk_features(ex.BASIS_CODE[basis], yt, degree, parent, var, factor, f,
                      np.empty((7, 70)))
    want = ex.features_reference(basis, degree, yt)
    assert np.max(np.abs(f - want)) <= 1e-13


@pytest.mark.parametrize("d, basis, beta", [(2, "fourier", 3.0), (3, "harmonic", 3.0),
                                            (3, "harmonic", -2.0), (2, "fourier", -1.0)])
def test_bessel_features_reproduce_the_taylor_kernel(d, basis, beta):
    """Two independent expansions of e^{beta <x, y>} give the same kernel matrix."""
    yt = unit_columns(d, 40, seed=7)
    degree = 30
    kernels = []
    for b in (basis, "taylor"):
        f = ex.features_reference(b, degree, yt)
        c = ex.coefficients(b, d, beta, degree) * math.exp(abs(beta))
        kernels.append((f * c[:, None]).T @ f)
    exact = np.exp(beta * (yt.T @ yt))
    assert np.max(np.abs(kernels[0] - kernels[1])) <= 1e-12 * np.max(exact)
    assert np.max(np.abs(kernels[0] - exact)) <= 1e-12 * np.max(exact)


@pytest.mark.parametrize("b", [1e-300, 1e-6, 0.5, 3.0, 40.0, 700.0])
def test_scaled_bessel_functions_match_scipy(b):
    k = np.arange(150.0)
    want = special.ive(k, b)
    want_sph = math.sqrt(math.pi / (2.0 * b)) * special.ive(k + 0.5, b)
    for got, ref in ((ex.scaled_bessel_i(150, b), want),
                     (ex.scaled_spherical_bessel_i(150, b), want_sph)):
        seen = ref > 1e-280
        assert np.all(np.abs(got[seen] - ref[seen]) <= 1e-12 * ref[seen])
        assert np.all(got[~seen] <= 1e-270)


def truncated(basis, beta, degree, s):
    """``K_L(s)`` of the zonal series (independent of the feature maps)."""
    if basis == "fourier":
        t = np.arccos(s)
        return special.iv(0, beta) + sum(2.0 * special.iv(k, beta) * np.cos(k * t)
                                         for k in range(1, degree + 1))
    if basis == "harmonic":
        return sum((2 * l + 1) * special.spherical_in(l, beta) * special.eval_legendre(l, s)
                   for l in range(degree + 1))
    # the monomial map: the power form of the truncated Chebyshev series
    return np.polynomial.polynomial.polyval(s, ex.economized(degree, beta) * math.exp(beta))


@pytest.mark.parametrize("basis", ["fourier", "harmonic", "taylor"])
@pytest.mark.parametrize("beta", [0.5, 3.0, 8.0])
def test_tail_bound_covers_the_sup_error_and_is_attained(basis, beta):
    s = np.linspace(-1.0, 1.0, 4001)
    taus = ex.tail_bounds(basis, beta, 40) * math.exp(beta)
    for degree in (2, 6, 12, 20):
        sup = np.max(np.abs(np.exp(beta * s) - truncated(basis, beta, degree, s)))
        assert sup <= taus[degree] * (1 + 1e-9) + 1e-15 * math.exp(beta) * 40
        if taus[degree] > 1e-12 * math.exp(beta):  # resolvable: the bound is attained at s = 1
            assert sup >= 0.99 * taus[degree]


@pytest.mark.parametrize("beta", [0.5, 4.0, -3.0, 16.0])
def test_economized_powers_are_the_chebyshev_series(beta):
    """The power coefficients equal the truncated Chebyshev series (and beat Taylor's degree)."""
    degree = 25
    k = np.arange(degree + 1)
    cheb = 2.0 * special.ive(k, abs(beta)) * np.sign(beta) ** k
    cheb[0] *= 0.5
    s = np.linspace(-1.0, 1.0, 101)
    got = np.polynomial.polynomial.polyval(s, ex.economized(degree, beta))
    want = np.polynomial.chebyshev.chebval(s, cheb)
    assert np.max(np.abs(got - want)) <= 1e-14
    taylor_tail = sum(math.exp(l * math.log(abs(beta)) - math.lgamma(l + 1.0))
                      for l in range(11, 200))
    assert ex.tail_bounds("taylor", beta, 11)[10] * math.exp(abs(beta)) < taylor_tail


@pytest.mark.parametrize("d", [2, 3, 4])
def test_degree_selection_is_monotone_and_minimal(d):
    degrees = {}
    for beta in (0.5, 1.0, 4.0, 8.0):
        for tol in (1e-4, 1e-8, 1e-12):
            fk = fs.FastKernel(d, beta, False, False, tol=tol)
            assert fk.bound <= tol
            degrees[beta, tol] = fk.degree
            # one degree less would not meet tol (no bias, USA: the bound is the tail itself)
            taus = ex.tail_bounds(fk.basis, beta, fk.degree + 1) * math.exp(beta)
            assert fk.degree == 0 or taus[fk.degree - 1] > tol
    for beta in (0.5, 1.0, 4.0):
        assert degrees[beta, 1e-4] <= degrees[beta, 1e-8] <= degrees[beta, 1e-12]
    for tol in (1e-4, 1e-8, 1e-12):
        assert degrees[0.5, tol] <= degrees[1.0, tol] <= degrees[4.0, tol] <= degrees[8.0, tol]


def test_one_degree_less_violates_tol_on_a_collapsed_state():
    """All tokens at one point: the energy's error is the tail exactly, so L - 1 fails."""
    d, n, beta, tol = 3, 64, 0.5, 1e-10
    yt = np.zeros((d, n))
    yt[2] = 1.0
    fk = fs.FastKernel(d, beta, False, False, tol=tol)
    exact = math.exp(beta) / (2.0 * beta)
    assert abs(fk.energy(yt) - exact) <= tol * exact
    lower = fs.FastKernel(d, beta, False, False, tol=tol)
    lower.degree -= 1
    lower.coef = ex.coefficients(lower.basis, d, beta, lower.degree)
    lower.rank = lower.coef.shape[0]
    lower._compiled_plan()
    assert abs(lower.energy(yt) - exact) > tol * exact


def test_a_wrong_coefficient_is_detected():
    n, d, beta = 200, 3, 1.0
    yt = unit_columns(d, n, seed=2)
    fk = fs.FastKernel(d, beta, False, False, tol=TOL)
    want, _ = direct(yt, None, beta, False, False, None)
    fk.coef = fk.coef.copy()
    fk.coef[5] *= 1.0 + 1e-6
    got = fk(yt, np.empty_like(yt))
    assert error_norm(got, want, yt, None, beta, False, False) > TOL


def test_nan_state_gives_nan_velocity():
    yt = unit_columns(3, 50, seed=1)
    yt[0, 3] = np.nan
    out = fs.FastKernel(3, 1.0, False, False)(yt, np.empty_like(yt))
    assert np.isnan(out[:, 3]).all()


@pytest.mark.parametrize("kwargs, match", [
    ({"d": 1}, "d must be >= 2"),
    ({"tol": 0.0}, "tol must be > 0"),
    ({"tol": 1.5}, "tol must be < 1"),
    ({"beta": 800.0}, "beta must satisfy"),
    ({"bias": "user"}, "bias must be one of"),
    ({"bias": "cosine", "xi": np.zeros(3)}, "omega must be given"),
    ({"bias": "distance"}, "xi must be given"),
    ({"bias": "distance", "xi": np.zeros(3), "lam": -1.0}, "lam must be >= 0"),
    ({"bias": "cosine", "xi": np.zeros(3), "omega": 1.0, "sa": True}, "non-negative bias"),
    ({"bias": "distance", "xi": np.zeros(3), "lam": 1.0, "mobile": np.ones(4, bool)},
     "mobile must have shape"),
    ({"lam": 1.0}, "lam must be None"),
    ({"sa": 1}, "sa must be True or False"),
])
def test_bad_arguments_are_named(kwargs, match):
    args = {"d": 3, "beta": 1.0, "linear": False, "sa": False}
    args.update(kwargs)
    with pytest.raises((TypeError, ValueError), match=match):
        fs.FastKernel(**args)


def test_bad_states_are_refused():
    fk = fs.FastKernel(3, 1.0, False, False, bias="distance", xi=np.zeros(5), lam=1.0)
    with pytest.raises(ValueError, match="5 columns"):
        fk(unit_columns(3, 6, 0), np.empty((3, 6)))
    with pytest.raises(ValueError, match="3 rows"):
        fk(unit_columns(2, 5, 0), np.empty((2, 5)))
    with pytest.raises(ValueError, match="out must be"):
        fk(unit_columns(3, 5, 0), np.empty((3, 4)))


def test_out_of_reach_tolerance():
    with pytest.raises(ValueError, match="out of reach.*direct"):
        fs.FastKernel(5, 60.0, False, True, tol=1e-12)


def test_fast_applies_reasons():
    frames = ue.sphere.random_frames(2, 3, seed=0)

    class Dense:
        def matrix(self, xi):
            return np.ones((len(xi), len(xi)))

    assert fs.fast_applies(ue.models.usa(1.0)) is None
    assert fs.fast_applies(ue.models.prefix_gauge(1.0, frames)) is None
    assert fs.fast_applies(ue.models.distance_bias(1.0, lam=0.5)) is None
    unrotated = ue.models.rope(1.0, (1.0,), 3, rotate_values=False)
    assert "content coordinates" in fs.fast_applies(unrotated)
    user = ue.models.Model(bias=Dense())
    assert "user-defined bias" in fs.fast_applies(user)
    with pytest.raises(ValueError, match="user-defined bias.*summation=\"direct\""):
        fs.fast_kernel(user, np.zeros(4), 3, 1e-10)


def test_cost_model_and_crossover():
    for bias in ("none", "distance"):
        n = cost.crossover_n(3, 1.0, 1e-10, bias)
        fast = cost.estimated_seconds("fast", n, 3, 1.0, 1e-10, bias)
        assert fast < cost.estimated_seconds("direct", n, 3, 1.0, 1e-10, bias)
        assert cost.estimated_seconds("fast", n - 1, 3, 1.0, 1e-10, bias) >= \
            cost.estimated_seconds("direct", n - 1, 3, 1.0, 1e-10, bias)
    assert cost.crossover_n(3, 1.0, 1e-10) < cost.crossover_n(3, 8.0, 1e-10)
    with pytest.raises(ValueError, match="kind must be one of"):
        cost.estimated_seconds("slow", 10, 3, 1.0, 1e-10)
    with pytest.raises(ValueError, match="n must be >= 0"):
        cost.estimated_seconds("fast", -1, 3, 1.0, 1e-10)


@pytest.mark.slow
def test_loop_kernels_vectorize_on_their_own_and_reload_from_cache(tmp_path):
    """In a fresh process the loop kernels are SIMD code by themselves; then the cache reloads.

    As for the direct kernel (tests/test_kernel.py): in the process that compiles, a caller can
    bind to a called function's own copy, so each loop kernel must vectorize on its own.
    """
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = (
        "import re\n"
        "import numpy as np\n"
        "from usaav_edu.dynamics.fastsum import kernel as fs, expansions as ex\n"
        "from usaav_edu.dynamics.fastsum import compiled as fc\n"
        "y = np.random.default_rng(0).standard_normal((3, fs.PARALLEL_MIN_FAST + 5))\n"
        "y = np.ascontiguousarray(y / np.linalg.norm(y, axis=0))\n"
        "xi = np.arange(y.shape[1], dtype=float)\n"
        "fs.FastKernel(3, 1.0, False, False)(y, np.empty_like(y))\n"
        "fs.FastKernel(3, 1.0, False, False, bias='distance', xi=xi, lam=0.5)(y, "
        "np.empty_like(y))\n"
        "checked = 0\n"
        "for kernel in (ex.harmonic_chunk, fc.moment_rows, fc.evaluate_quad,\n"
        "               fc.scan_forward_token, fc.scan_backward_token):\n"
        "    for sig, cres in kernel.overloads.items():\n"
        "        assert re.search(r'<\\d+ x double>', cres.library.get_llvm_str()), "
        "kernel.__name__\n"
        "        checked += 1\n"
        "print('vectorized kernels', checked)\n"
    )
    root = Path(fs.__file__).resolve().parents[2]
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path),
               PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    printed = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        printed.append(done.stdout.strip())
    assert printed == ["vectorized kernels 5", "vectorized kernels 0"]


# ---------------------------------------------------------------- no bound below rounding
@pytest.mark.parametrize("tol", [1e-300, 1e-16, 0.99e-13])
def test_a_tolerance_below_the_rounding_floor_is_refused(tol):
    with pytest.raises(ValueError, match=r"tol = .* is below the rounding floor 1e-13"):
        fs.FastKernel(3, 1.0, False, False, tol=tol)
    with pytest.raises(ValueError, match="rounding floor"):
        ue.simulate(ue.models.usa(1.0), ue.sphere.uniform(64, 3, seed=0), None, t_max=0.1,
                    summation="fast", summation_tol=tol)


def test_the_floor_itself_is_accepted_and_auto_falls_back_to_direct_below_it():
    assert fs.FastKernel(3, 1.0, False, False, tol=fs.TOL_FLOOR).bound <= fs.TOL_FLOOR
    x0 = ue.sphere.uniform(64, 3, seed=0)
    assert ue.simulate(ue.models.usa(1.0), x0, None, t_max=0.1, n_frames=2,
                       summation_tol=1e-300).summation == "direct"


@pytest.mark.parametrize("model", [ue.models.usa(1.0), ue.models.usa(profile="linear")],
                         ids=["exp", "linear"])
def test_a_recorded_error_bound_is_never_below_the_rounding_floor(model):
    # the linear profile's expansion is exact (truncation bound 0), its sums are not
    traj = ue.simulate(model, ue.sphere.uniform(64, 3, seed=0), None, t_max=0.1, n_frames=2,
                       summation="fast", summation_tol=fs.TOL_FLOOR)
    assert fs.TOL_FLOOR <= traj.error_bound <= fs.TOL_FLOOR * (1 + 1e-12)
