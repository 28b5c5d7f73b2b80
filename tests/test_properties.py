"""Hypothesis property tests of the invariants on random small inputs."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import usaav_edu as ue
from usaav_edu.dynamics import velocity_reference
from usaav_edu.particles.plan import direct_field

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


# a valid beta: 0 (the linear limit) or a positive float the exp profile can use
BETAS = st.just(0.0) | st.floats(ue.models.BETA_MIN, 3.0)


@st.composite
def systems(draw):
    kind = draw(st.sampled_from(["usa", "rope", "prefix", "distance", "cosine"]))
    n = draw(st.integers(1, 12))
    beta = draw(BETAS)
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    if kind == "rope":
        d = draw(st.sampled_from([2, 3, 4, 5]))
        omegas = tuple(rng.uniform(-2, 2, d // 2))
        model, xi = ue.models.rope(beta, omegas, d), rng.uniform(-5, 5, n)
    elif kind == "prefix":
        d, k = draw(st.integers(2, 5)), draw(st.integers(1, 4))
        model, xi = ue.models.prefix_gauge(beta, ue.sphere.random_frames(k, d, seed=seed)), rng.integers(0, k, n)
    elif kind == "distance":
        d = draw(st.integers(2, 5))
        model, xi = ue.models.distance_bias(beta, lam=rng.uniform(0, 2)), rng.uniform(0, 6, n)
    elif kind == "cosine":
        d = draw(st.integers(2, 5))
        model, xi = ue.models.cosine_bias(beta, omega=rng.uniform(0.2, 2), profile="linear"), rng.uniform(0, 6, n)
    else:
        d = draw(st.integers(2, 5))
        model, xi = ue.models.usa(beta), None
    return model, ue.sphere.uniform(n, d, seed=seed), xi


@SETTINGS
@given(systems())
def test_velocity_matches_reference_and_is_tangent(system):
    model, x, xi = system
    p = model.kernel(x, xi)
    out = np.empty_like(p.y0)
    direct_field(p)(p.y0, out)
    v = model.from_gauge(out.T, p.xi)
    assert np.allclose(v, velocity_reference(model, x, p.xi), rtol=0, atol=1e-12 * max(1, np.abs(v).max()))
    assert np.max(np.abs(np.sum(v * x, axis=1))) < 1e-12 * max(1, np.abs(v).max())


@SETTINGS
@given(systems())
def test_simulation_stays_on_sphere_and_energy_rises(system):
    model, x, xi = system
    traj = ue.simulate(model, x, xi, t_max=2.0, n_frames=11)
    assert np.max(np.abs(np.linalg.norm(traj.x, axis=2) - 1)) < 1e-12
    scale = max(1.0, np.abs(traj.energy).max())
    assert np.diff(traj.energy).min() >= -1e-12 * scale
    assert traj.energy[-1] <= ue.energy_bound(model, xi, n=x.shape[0]) + 1e-12 * scale


@SETTINGS
@given(st.integers(1, 10), st.integers(2, 5), BETAS, st.integers(0, 10**6))
def test_usa_is_rotation_equivariant(n, d, beta, seed):
    x0 = ue.sphere.uniform(n, d, seed=seed)
    q = ue.sphere.random_frames(1, d, seed=seed + 1)[0]
    a = ue.simulate(ue.models.usa(beta), x0, t_max=1.0, n_frames=2).final
    b = ue.simulate(ue.models.usa(beta), x0 @ q.T, t_max=1.0, n_frames=2).final
    assert np.max(np.abs(a @ q.T - b)) < 1e-11


@SETTINGS
@given(st.integers(1, 10), st.integers(0, 10**6))
def test_gauge_maximizers_attain_the_bound(n, seed):
    rng = np.random.default_rng(seed)
    d = 4
    model = ue.models.rope(float(rng.uniform(0.1, 3)), tuple(rng.uniform(-2, 2, 2)), d)
    xi = rng.uniform(-4, 4, n)
    u = ue.sphere.uniform(1, d, seed=seed)[0]
    x = ue.maximizers.gauge_maximizer(model, xi, u)
    assert abs(ue.energy(model, x, xi) - ue.maximizers.gauge_max_energy(model)) < 1e-12 * ue.maximizers.gauge_max_energy(model)
    assert ue.diagnostics.orbit_residual(model, x, xi) < 1e-12
