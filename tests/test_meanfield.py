"""The density solver on the circle (usaav_edu.meanfield): exact solutions, refinement, the
energy, the mass, RoPE's shift, particles against densities, collapse detection, bad input."""
import numpy as np
import pytest
import scipy.special

import usaav_edu as ue
from usaav_edu import meanfield as mf
from usaav_edu.models import CosineBias, DistanceBias, ExpProfile, LinearProfile, Model

TWO_PI = 2 * np.pi


def cauchy(theta, r):
    """The wrapped Cauchy density with mean resultant length r, centred at 0."""
    return (1 - r * r) / (TWO_PI * (1 - 2 * r * np.cos(theta) + r * r))


def cauchy_r(t, r0):
    """r(t) of the wrapped Cauchy solution of the linear profile."""
    return r0 * np.exp(t / 2) / np.sqrt(1 - r0 ** 2 + r0 ** 2 * np.exp(t))


def smooth(theta, shift=0.0):
    """A smooth density with a few modes, not symmetric about any axis."""
    s = theta + shift
    return (1 + 0.5 * np.cos(s) + 0.2 * np.sin(2 * s) + 0.1 * np.cos(3 * s - 1)) / TWO_PI


def von_mises(theta, kappa, mu=0.0):
    """A von Mises density normalized on the grid (mass 1 to round-off)."""
    g = np.exp(kappa * (np.cos(theta - mu) - 1))
    return g / (TWO_PI * np.mean(g))


LINEAR = Model(profile=LinearProfile())
USA1 = Model(profile=ExpProfile(1.0))


# ---------------------------------------------------------------------- exact solutions
def test_wrapped_cauchy_is_an_exact_solution_for_the_linear_profile():
    m, r0 = 512, 0.3
    th = mf.grid(m)
    tr = mf.solve(LINEAR, cauchy(th, r0), 3.0, n_frames=4, rtol=1e-13, atol=1e-16)
    assert tr.completed and tr.status is mf.Status.COMPLETED
    for k, t in enumerate(tr.t):
        exact = cauchy(th, cauchy_r(t, r0))
        assert np.max(np.abs(tr.f[k] - exact)) < 3e-12 * np.max(exact), t
    # its energy is |m_1|^2 / 2 = r^2 / 2
    np.testing.assert_allclose(tr.energy, cauchy_r(tr.t, r0) ** 2 / 2, rtol=1e-11)


def test_first_fourier_modes_follow_their_ode_for_the_linear_profile():
    # m_k = int e^{i k theta} f = conj(c_k) obeys dm_k/dt = (k/2)(m_1 m_{k-1} - conj(m_1) m_{k+1})
    m = 256
    th = mf.grid(m)
    tr = mf.solve(LINEAR, smooth(th), 1.0, n_frames=41, rtol=1e-12, atol=1e-15)
    mom = np.conj(tr.coefficients)
    dt = tr.t[1] - tr.t[0]
    for k in (1, 2, 3):
        rhs = k / 2 * (mom[:, 1] * mom[:, k - 1] - np.conj(mom[:, 1]) * mom[:, k + 1])
        # fourth-order central differences of the computed moments against the ODE
        d = (-mom[4:, k] + 8 * mom[3:-1, k] - 8 * mom[1:-3, k] + mom[:-4, k]) / (12 * dt)
        assert np.max(np.abs(d - rhs[2:-2])) < 1e-6 * np.max(np.abs(rhs)), k


def test_bessel_coefficients_of_the_kernel_match_scipy():
    for beta in (1e-3, 0.5, 1.0, 10.0, 200.0, 700.0):
        got = mf._bessel_scaled(beta, 300)
        want = scipy.special.ive(np.arange(300), beta)
        assert np.max(np.abs(got - want)) < 1e-15, beta
    got = mf._bessel_scaled(1e-200, 4)  # tiny beta: I_1 ~ beta / 2 survives
    assert got[1] == pytest.approx(0.5e-200, rel=1e-12)


def test_velocity_and_energy_match_direct_quadrature():
    m = 128
    th = mf.grid(m)
    f = von_mises(th, 2.0, 0.7)
    for beta in (0.0, 1.0, 3.0):
        model = ue.models.usa(beta)
        # trapezoid sums (spectrally accurate for these smooth periodic integrands)
        ds = th[None, :] - th[:, None]
        w = (model.dphi(np.cos(ds)) * np.sin(ds) * f[None, :]).sum(axis=1) * TWO_PI / m
        np.testing.assert_allclose(mf.velocity(model, f), w, atol=1e-13 * np.max(np.abs(w)))
        e = 0.5 * (model.phi(np.cos(ds)) * f[None, :] * f[:, None]).sum() * (TWO_PI / m) ** 2
        assert mf.energy(model, f) == pytest.approx(e, rel=1e-13)


def test_sa_velocity_divides_by_the_local_weight():
    m = 64
    th = mf.grid(m)
    f = smooth(th)
    model = ue.models.sa(2.0)
    ds = th[None, :] - th[:, None]
    k = np.exp(2.0 * np.cos(ds))
    w = (k * np.sin(ds) * f).sum(axis=1) / (k * f).sum(axis=1)
    np.testing.assert_allclose(mf.velocity(model, f), w, atol=1e-13)


# ---------------------------------------------------------------------- refinement, energy, mass
def test_grid_refinement_agrees_before_collapse():
    runs = {m: mf.solve(USA1, smooth(mf.grid(m)), 1.5, n_frames=4, rtol=1e-11, atol=1e-13)
            for m in (128, 256)}
    a, b = runs[128], runs[256]
    assert np.max(np.abs(a.coefficients - b.coefficients[:, :64])) < 1e-10
    assert np.max(np.abs(b.coefficients[:, 64:])) < 1e-10  # little beyond the coarse grid
    np.testing.assert_allclose(a.energy, b.energy, rtol=1e-12)


def test_energy_never_falls_and_mass_is_never_changed():
    th = mf.grid(128)
    for model in (USA1, ue.models.sa(2.0), LINEAR):
        tr = mf.solve(model, smooth(th), 1.5, n_frames=31, rtol=1e-9, on_unresolved="stop")
        assert len(tr.t) >= 10
        assert np.all(np.diff(tr.energy) >= -1e-13 * np.abs(tr.energy).max()), model.name
        assert np.any(np.diff(tr.energy) > 1e-6)
        # the k = 0 mode is bitwise the input's; the grid values integrate to 1 to round-off
        assert np.all(tr.mass == tr.mass[0])
        assert abs(tr.mass[0] - 1) < 1e-14
        np.testing.assert_allclose(TWO_PI / 128 * tr.f.sum(axis=-1), 1.0, atol=1e-14)
        assert np.all(tr.min_density > 0)


def test_uniform_density_is_stationary():
    f0 = np.full(64, 1 / TWO_PI)
    tr = mf.solve(USA1, f0, 5.0, n_frames=3)
    np.testing.assert_array_equal(tr.f[-1], tr.f[0])
    assert tr.steps_rejected == 0


# ---------------------------------------------------------------------- labels
def test_rope_conditionals_are_the_usa_solution_shifted():
    m, omega, beta = 128, 1.3, 1.0
    th = mf.grid(m)
    xi = np.array([0.0, 0.4, 1.7, 3.0, 5.5])
    model = ue.models.rope(beta, (omega,), d=2)
    f0 = np.array([smooth(th, omega * x) for x in xi])  # f_l(0, theta) = g0(theta + omega xi_l)
    tr = mf.solve(model, f0, 1.0, xi=xi, n_frames=3, rtol=1e-11, atol=1e-13)
    g = mf.solve(ue.models.usa(beta), smooth(th), 1.0, n_frames=3, rtol=1e-11, atol=1e-13)
    k = np.arange(m // 2)
    for ell, x in enumerate(xi):
        shifted = g.coefficients * np.exp(1j * k * omega * x)  # c_k of g(t, theta + omega xi)
        assert np.max(np.abs(tr.coefficients[:, ell] - shifted)) < 1e-11
    np.testing.assert_allclose(tr.in_gauge(), np.broadcast_to(g.f[:, None], tr.f.shape),
                               atol=1e-10)
    np.testing.assert_allclose(tr.energy, g.energy, rtol=1e-12)
    # the content marginal stays spread while each conditional is the same shape
    assert tr.marginal.shape == (3, m)


def test_bias_weights_the_labels():
    # two labels with b = cos(0) = 1 inside and cos(pi) = -1 across: the second pushes away
    th = mf.grid(64)
    model = Model(bias=CosineBias(1.0), profile=LinearProfile())
    f = np.array([von_mises(th, 1.0), von_mises(th, 1.0, 0.5)])
    w = mf.velocity(model, f, xi=[0.0, np.pi], rho=[0.5, 0.5])
    ds = th[None, :] - th[:, None]
    k = np.sin(ds)
    direct0 = 0.5 * TWO_PI / 64 * ((k * f[0]).sum(axis=1) - (k * f[1]).sum(axis=1))
    np.testing.assert_allclose(w[0], direct0, atol=1e-14)
    np.testing.assert_allclose(w[1], -direct0, atol=1e-14)


# ---------------------------------------------------------------------- particles
def particle_distances(n_per_label, xi, f0, model, t_max, m):
    """W1 per label between a particle run from quantile samples and the density at t_max."""
    omega = model.gauge.omegas[0]
    tr = mf.solve(model, f0, t_max, xi=xi, n_frames=2, rtol=1e-10, atol=1e-12)
    angles = np.concatenate([mf.sample(f0[ell], n_per_label, how="quantile")
                             for ell in range(len(xi))])
    labels = np.repeat(xi, n_per_label)
    x0 = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    run = ue.simulate(model, x0, labels, t_max, n_frames=2)  # RK4: error ~1e-6, far below 1/n
    th = np.arctan2(run.x[-1, :, 1], run.x[-1, :, 0]).reshape(len(xi), n_per_label)
    good = [mf.empirical_distance(th[ell], tr.f[-1, ell]) for ell in range(len(xi))]
    # the other sign convention (gauge angle theta - omega xi) is far off
    g = tr.in_gauge()[-1]
    wrong = np.array([np.fft.irfft(np.fft.rfft(g[ell]) * np.exp(-1j * np.arange(m // 2 + 1)
                                                                * omega * xi[ell]), n=m)
                      for ell in range(len(xi))])
    bad = [mf.empirical_distance(th[ell], wrong[ell]) for ell in (1, 2)]
    return np.array(good), np.array(bad)


def test_particles_from_quantiles_converge_to_the_rope_density():
    m, omega = 128, 1.0
    th = mf.grid(m)
    xi = np.array([0.0, 2.0, 4.0])
    model = ue.models.rope(1.0, (omega,), d=2)
    f0 = np.array([smooth(th, omega * x) for x in xi])
    small, bad = particle_distances(170, xi, f0, model, 1.5, m)
    large, _ = particle_distances(670, xi, f0, model, 1.5, m)
    # quantile samples: the distance falls like 1 / n (4 times the particles, about a quarter)
    assert np.all(small / large > 3.0)
    assert np.all(large < 2.5 / 670)
    assert np.all(bad > 0.1)


def test_sample_and_distance_on_known_laws():
    th = mf.grid(64)
    uniform = np.full(64, 1 / TWO_PI)
    for n in (10, 1000):
        q = mf.sample(uniform, n, how="quantile")
        np.testing.assert_allclose(q, TWO_PI * (np.arange(n) + 0.5) / n, atol=1e-12)
        assert mf.empirical_distance(q, uniform, "kuiper") == pytest.approx(1 / n, rel=1e-9)
        assert mf.empirical_distance(q, uniform, "ks") == pytest.approx(0.5 / n, rel=1e-9)
        assert mf.empirical_distance(q, uniform, "w1") == pytest.approx(np.pi / (2 * n), rel=1e-9)
        # W1 on the circle is blind to the origin: rotating the sample by a cell changes nothing
        assert (mf.empirical_distance(q + 0.3, uniform, "w1")
                == pytest.approx(mf.empirical_distance(q, uniform, "w1"), rel=1e-3))
    f = von_mises(th, 3.0, 1.0)
    q = mf.sample(f, 4000, how="quantile")
    # the quantiles invert the CDF: the density's CDF at them is (i + 1/2) / n
    cdf = mf._Cdf(f)
    np.testing.assert_allclose(cdf.at(q), (np.arange(4000) + 0.5) / 4000, atol=1e-12)
    assert mf.empirical_distance(q, f, "kuiper") == pytest.approx(1 / 4000, rel=1e-6)
    r = mf.sample(f, 4000, seed=1)
    assert 0.3 / np.sqrt(4000) < mf.empirical_distance(r, f, "kuiper") < 4 / np.sqrt(4000)
    # W1 against a brute-force median on a fine grid
    fine = np.linspace(0, TWO_PI, 200001)[:-1]
    emp = np.searchsorted(np.sort(r), fine, side="right") / r.size
    diff = emp - cdf.at(fine)
    brute = np.mean(np.abs(diff - np.median(diff))) * TWO_PI
    assert mf.empirical_distance(r, f, "w1") == pytest.approx(brute, rel=2e-3)


# ---------------------------------------------------------------------- collapse detection
def test_collapse_is_detected_on_a_coarse_grid_and_not_on_a_fine_one():
    f_coarse = smooth(mf.grid(32))
    with pytest.raises(mf.UnresolvedError, match=r"finer grid.*shorter t_max") as err:
        mf.solve(USA1, f_coarse, 3.0, n_frames=7)
    assert 0.0 < err.value.t < 3.0
    part = err.value.partial
    assert part.status is mf.Status.UNRESOLVED and part.t[-1] <= err.value.t
    assert "collapse" in str(err.value) and f"t = {err.value.t:.4g}" in str(err.value)
    stopped = mf.solve(USA1, f_coarse, 3.0, n_frames=7, on_unresolved="stop")
    assert not stopped.completed and stopped.t_unresolved == err.value.t
    np.testing.assert_array_equal(stopped.f, part.f)
    # the fine grid resolves the same run up to t = 1.5 (the coarse one does not)
    assert err.value.t < 1.5
    fine = mf.solve(USA1, smooth(mf.grid(256)), 1.5, n_frames=4)
    assert fine.completed and np.max(fine.tail) < mf.TAIL_TOL


def test_collapse_sharpens_the_density_until_the_grid_gives_up():
    tr = mf.solve(USA1, smooth(mf.grid(64)), 30.0, n_frames=61, on_unresolved="stop")
    assert not tr.completed and tr.t[-1] < tr.t_unresolved < tr.t[-1] + 0.5
    assert tr.f[-1].max() > 1.4 * tr.f[0].max()
    assert tr.tail[-1] > 1e3 * tr.tail[1]
    assert np.all(tr.min_density > 0)


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize("kwargs, exc, words", [
    (dict(f0=np.full(15, 1 / TWO_PI)), ValueError, "f0 must have an even number"),
    (dict(f0=np.full(14, 1 / TWO_PI)), ValueError, "f0 must have an even number"),
    (dict(f0=np.full(64, 1 / TWO_PI) * 1.001), ValueError, "f0 must integrate to 1"),
    (dict(f0=np.full(64, np.nan)), ValueError, "f0 must be finite"),
    (dict(f0=np.full((2, 64), 1 / TWO_PI)), ValueError, r"f0 must have shape \(m,\)"),
    (dict(f0=smooth(mf.grid(64)) + 0.1 * np.cos(5 * mf.grid(64))), ValueError,
     "f0 must be a non-negative density"),
    (dict(f0="abc"), TypeError, "f0"),
    (dict(f0=von_mises(mf.grid(16), 20.0)), ValueError, "f0 is not resolved"),
    (dict(t_max=0.0), ValueError, "t_max"),
    (dict(n_frames=1), ValueError, "n_frames"),
    (dict(rtol=-1.0), ValueError, "rtol"),
    (dict(on_unresolved="ignore"), ValueError, "on_unresolved"),
    (dict(tail_tol=2.0), ValueError, "tail_tol"),
    (dict(xi=[0.0]), ValueError, "xi and rho must be None"),
    (dict(max_steps=10, t_max=50.0), ValueError, "about .* Dormand-Prince steps"),
    (dict(model=ue.models.usa(1.0)), None, None),
    (dict(model=ue.models.rope(1.0, (1.0,), d=3)), ValueError, "d = 2"),
    (dict(model=ue.models.rope(1.0, (1.0,), d=2)), ValueError, "xi must be given"),
    (dict(model=ue.models.rope(1.0, (1.0,), d=2, rotate_values=False), xi=[0.0]), ValueError,
     "rotate_values"),
    (dict(model="usa"), TypeError, "model"),
])
def test_bad_input_is_refused_naming_the_argument(kwargs, exc, words):
    args = dict(model=USA1, f0=np.full(64, 1 / TWO_PI), t_max=1.0)
    args.update(kwargs)
    model, f0, t_max = args.pop("model"), args.pop("f0"), args.pop("t_max")
    if exc is None:
        assert mf.solve(model, f0, t_max, n_frames=2).completed
        return
    with pytest.raises(exc, match=words):
        mf.solve(model, f0, t_max, **args)


def test_labelled_input_is_checked():
    th = mf.grid(32)
    model = ue.models.rope(1.0, (1.0,), d=2)
    f0 = np.array([smooth(th), smooth(th, 1.0)])
    with pytest.raises(ValueError, match=r"f0 must have shape \(3, m\)"):
        mf.solve(model, f0, 1.0, xi=[0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match="rho must sum to 1"):
        mf.solve(model, f0, 1.0, xi=[0.0, 1.0], rho=[0.5, 0.6])
    with pytest.raises(ValueError, match=r"rho must have shape \(2,\)"):
        mf.solve(model, f0, 1.0, xi=[0.0, 1.0], rho=[1.0])
    with pytest.raises(ValueError, match=r"f0\[1\] must integrate to 1"):
        mf.solve(model, f0 * [[1.0], [1.01]], 1.0, xi=[0.0, 1.0])
    with pytest.raises(ValueError, match="identity gauge or the RoPE gauge"):
        mf.solve(ue.models.prefix_gauge(1.0, ue.sphere.random_frames(2, 2, seed=0)), f0, 1.0,
                 xi=[0, 1])
    tr = mf.solve(Model(bias=DistanceBias(1.0)), f0, 0.5, xi=[0.0, 1.0], n_frames=2)
    assert tr.f.shape == (2, 2, 32) and tr.rho.tolist() == [0.5, 0.5]


def test_helpers_refuse_bad_input():
    with pytest.raises(ValueError, match="m must be even"):
        mf.grid(33)
    with pytest.raises(ValueError, match="m must be >= 16"):
        mf.grid(8)
    f = np.full(32, 1 / TWO_PI)
    with pytest.raises(ValueError, match="how must be one of"):
        mf.sample(f, 10, how="sobol")
    with pytest.raises(ValueError, match="n must be >= 1"):
        mf.sample(f, 0)
    with pytest.raises(ValueError, match="seed must be None"):
        mf.sample(f, 10, how="quantile", seed=3)
    with pytest.raises(ValueError, match="metric must be one of"):
        mf.empirical_distance([0.1], f, metric="tv")
    with pytest.raises(ValueError, match="theta must be finite"):
        mf.empirical_distance([np.inf], f)
    with pytest.raises(ValueError, match="theta must hold at least one angle"):
        mf.empirical_distance([], f)
    with pytest.raises(ValueError, match="f must integrate to 1"):
        mf.energy(USA1, 2 * f)
    with pytest.raises(TypeError, match="model"):
        mf.velocity(None, f)


# ---------------------------------------------------------------------- plots
def test_density_plots_draw_what_the_run_holds(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from usaav_edu.widgets import density_plots as dp

    th = mf.grid(64)
    run = mf.solve(USA1, smooth(th), 1.0, n_frames=11)
    ax = dp.plot_density_image(run, log=True)
    image = ax.get_images()[0].get_array()
    assert image.shape == (11, 64)
    np.testing.assert_allclose(image, np.log10(run.f))
    ax = dp.plot_density_curves(run, times=[0.0, 0.52, 1.0])
    lines = ax.get_lines()
    assert len(lines) == 3 and lines[1].get_label() == "$t = 0.5$"
    np.testing.assert_array_equal(lines[2].get_ydata()[:-1], run.f[-1])
    ax.figure.savefig(tmp_path / "curves.svg")
    assert (tmp_path / "curves.svg").stat().st_size < 200_000
    xi = np.array([0.0, 2.0, 4.0])
    rope = mf.solve(ue.models.rope(1.0, (1.0,), d=2), np.array([smooth(th, x) for x in xi]),
                    0.5, xi=xi, n_frames=3)
    ax = dp.plot_conditionals(rope, gauge=True)
    assert len(ax.get_lines()) == 4
    np.testing.assert_allclose(ax.get_lines()[1].get_ydata()[:-1], rope.in_gauge()[-1, 1])
    ax = dp.plot_density_image(rope, label=2)
    np.testing.assert_array_equal(ax.get_images()[0].get_array(), rope.f[:, 2])
    with pytest.raises(TypeError, match="traj must be a DensityTrajectory"):
        dp.plot_density_image(np.zeros((3, 64)))
    with pytest.raises(ValueError, match="label must lie in"):
        dp.plot_density_curves(rope, label=3)
    with pytest.raises(ValueError, match="label must be None"):
        dp.plot_density_image(run, label=0)
    with pytest.raises(ValueError, match="traj must be a run with labels"):
        dp.plot_conditionals(run)
    with pytest.raises(ValueError, match="t must be <="):
        dp.plot_density_curves(run, times=[5.0])
    plt.close("all")


def test_particles_by_fast_summation_converge_at_rate_one_over_n():
    # USA on the circle: quantile samples of n = 10^3, 10^4, 10^5 particles, run with fast
    # summation, stay within about pi / (2 n) of the density, so W1 falls tenfold per decade
    m, t_max = 256, 1.0
    th = mf.grid(m)
    f0 = smooth(th)
    density = mf.solve(USA1, f0, t_max, n_frames=2, rtol=1e-10, atol=1e-12).f[-1]
    w1 = {}
    for n in (1_000, 10_000, 100_000):
        angles = mf.sample(f0, n, how="quantile")
        x0 = np.stack([np.cos(angles), np.sin(angles)], axis=1)
        run = ue.simulate(USA1, x0, None, t_max, n_frames=2, summation="fast")
        assert run.summation == "fast" and run.error_bound <= 1e-10, (
            f"n = {n}: expected a fast run with bound <= 1e-10, got {run.summation}, "
            f"{run.error_bound}")
        end = np.arctan2(run.x[-1, :, 1], run.x[-1, :, 0])
        w1[n] = mf.empirical_distance(end, density)
    # quantiles stay quantiles under the flow (it keeps the order of the angles), and a
    # quantile sample is pi / (2 n) from its law in W1; an error of the fast sums or of the
    # density solver beyond 1e-7 would show at n = 10^5
    scaled = {n: w1[n] * 2 * n / np.pi for n in w1}
    assert all(abs(r - 1.0) < 1e-3 for r in scaled.values()), (
        f"W1 * 2n / pi = {scaled}, not 1 within 1e-3")


# ---------------------------------------------------------------------- degenerate input
def sa_distance(lam=1000.0):
    """SA with the distance bias b = exp(-lam |xi - zeta|): 0 in double precision between the
    labels 0 and 1 for lam = 1000."""
    return Model(bias=DistanceBias(lam), profile=ExpProfile(1.0), normalization="sa")


def two_labels(m=32):
    th = mf.grid(m)
    return np.array([smooth(th), smooth(th, 1.0)])


def test_sa_label_with_nothing_to_attend_to_is_refused_naming_rho_and_the_bias(monkeypatch):
    # label 1 has weight 0, and the bias from it to label 0 underflows to 0: its SA normalizer
    # sum_j rho_j b(xi_1, xi_j) int phi' g_j = 0, so its velocity would be 0 / 0 (it was NaN)
    model, f0 = sa_distance(), two_labels()
    monkeypatch.setattr(mf._Operator, "rhs", lambda *a: pytest.fail("a step was taken"))
    for call in (lambda: mf.velocity(model, f0, xi=[0.0, 1.0], rho=[1.0, 0.0]),
                 lambda: mf.solve(model, f0, 1.0, xi=[0.0, 1.0], rho=[1.0, 0.0])):
        with pytest.raises(ValueError, match=r"rho and the bias leave label 1 \(xi = 1\) nothing "
                                             r"to attend to") as e:
            call()
        assert "0 / 0" in str(e.value) and "tolerances" not in str(e.value)
    # what stays allowed: a label of weight 0 that attends to another (a test particle), and
    # the energy, which SA does not divide
    w = mf.velocity(sa_distance(1.0), f0, xi=[0.0, 1.0], rho=[1.0, 0.0])
    assert np.all(np.isfinite(w))
    assert np.isfinite(mf.energy(model, f0, xi=[0.0, 1.0], rho=[1.0, 0.0]))


def test_a_velocity_that_is_not_finite_is_named_not_blamed_on_the_tolerances(monkeypatch):
    # the solver's own checks keep the velocity finite for valid input; a NaN that appears in
    # the middle of a run anyway (here: injected after the first steps) is named as such
    real = mf._Operator.velocity_gauge
    calls = []

    def failing(self, g, size):
        calls.append(1)
        w = real(self, g, size)
        return w * np.nan if len(calls) > 20 else w

    monkeypatch.setattr(mf._Operator, "velocity_gauge", failing)
    with pytest.raises(ue.solver.IntegrationError, match=r"solve stopped at t = .*: the velocity "
                                                         r"of label 0 \(xi = 0\) is NaN") as e:
        mf.solve(sa_distance(1.0), two_labels(), 1.0, xi=[0.0, 1.0], n_frames=3)
    assert "not a matter of rtol and atol" in str(e.value) and "loosen" not in str(e.value)
    monkeypatch.setattr(mf._Operator, "velocity_gauge",
                        lambda self, g, size: real(self, g, size) * np.inf)
    with pytest.raises(ue.solver.IntegrationError, match=r"solve cannot start .*: the velocity is "
                                                         r"(NaN|inf)"):
        mf.solve(ue.models.usa(1.0), smooth(mf.grid(32)), 1.0, n_frames=3)


@pytest.mark.parametrize("t_max,n_frames", [(5e-324, 101), (5e-324, 3), (1e-323, 101)])
def test_a_t_max_whose_frames_coincide_is_refused_before_any_step(monkeypatch, t_max, n_frames):
    # 0, t_max / 2, t_max: t_max / 2 rounds to 0 or t_max when t_max is the least double
    monkeypatch.setattr(mf._Operator, "rhs", lambda *a: pytest.fail("a step was taken"))
    f0 = smooth(mf.grid(32))
    with pytest.raises(ValueError, match=r"t_max = .* is too short for n_frames = \d+: the frame "
                                         r"times .* are not strictly increasing"):
        mf.solve(ue.models.usa(1.0), f0, t_max, n_frames=n_frames)


def test_the_shortest_t_max_with_distinct_frames_is_solved():
    # two frames 0 and 5e-324 differ: nothing to refuse, and nothing moves
    f0 = smooth(mf.grid(32))
    tr = mf.solve(ue.models.usa(1.0), f0, 5e-324, n_frames=2)
    assert tr.status is mf.Status.COMPLETED and tr.t.tolist() == [0.0, 5e-324]
    np.testing.assert_allclose(tr.f[-1], f0, atol=1e-15)
