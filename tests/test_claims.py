"""Ten numbered claims the book makes about the solver (chapters 1 to 8), each with the book's parameters."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import usaav_edu as ue
from usaav_edu import diagnostics as dg
from usaav_edu.dynamics import rk4_reference

from conftest import all_models

GRADIENT = [c for c in all_models() if c[1].is_gradient_ascent]


# 1 -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,model,d,labels", GRADIENT, ids=[c[0] for c in GRADIENT])
@pytest.mark.parametrize("method", ["rk4", "dopri5"])
def test_claim1_energy_non_decreasing(name, model, d, labels, method):
    n = 48
    x0 = ue.sphere.uniform(n, d, seed=7)
    traj = ue.simulate(model, x0, labels(n), t_max=10.0, method=method, n_frames=201)
    steps = np.diff(traj.energy)
    assert steps.min() >= -1e-12 * np.abs(traj.energy).max()
    assert traj.energy[-1] > traj.energy[0]  # it actually moved


# 2 -----------------------------------------------------------------------------------------
def test_claim2_usa_collapses_by_t60():
    x0 = ue.sphere.uniform(64, 3, seed=0)
    traj = ue.simulate(ue.models.usa(1.0), x0, t_max=60.0)
    assert dg.diameter(traj.final) < 1e-6
    assert dg.diameter(x0) > 1.0


# 3 -----------------------------------------------------------------------------------------
def _equiangular_ode(n, beta, normalization):
    def rhs(t, r):
        num = 2.0 * np.exp(beta * r) * (1.0 - r) * ((n - 1) * r + 1.0)
        if normalization == "usa":
            return num / n
        return num / (np.exp(beta) + (n - 1) * np.exp(beta * r))
    return rhs


@pytest.mark.parametrize("model", [ue.models.usa(1.0), ue.models.usa(2.5), ue.models.sa(2.0)], ids=["usa1", "usa2.5", "sa2"])
def test_claim3_equiangular_reduction(model):
    n, d, t_max = 5, 6, 4.0
    x0 = ue.sphere.equiangular(n, d)
    traj = ue.simulate(model, x0, t_max=t_max, dt=1e-3, n_frames=41)
    ode = solve_ivp(_equiangular_ode(n, model.beta, model.normalization), (0, t_max), [0.0],
                    t_eval=traj.t, rtol=1e-12, atol=1e-14)
    gram = np.einsum("fid,fjd->fij", traj.x, traj.x)
    off = gram[:, ~np.eye(n, dtype=bool)]
    assert np.max(off.max(axis=1) - off.min(axis=1)) < 1e-12  # stays equiangular
    assert np.max(np.abs(off.mean(axis=1) - ode.y[0])) < 1e-9
    assert ode.y[0][-1] > 0.5  # the inner product really grew


# 4 -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("d,omegas", [(3, (1.0,)), (4, (1.0, np.sqrt(2.0)))])
def test_claim4_rope_conjugacy_against_reference(d, omegas):
    n, dt, steps = 16, 0.01, 200
    model = ue.models.rope(1.0, omegas, d)
    x0 = ue.sphere.uniform(n, d, seed=2)
    xi = np.arange(n, dtype=float) * 0.37
    # literal content-coordinate RoPE dynamics (NumPy reference, no change of variables)
    x_ref = rk4_reference(model, x0, xi, dt, steps)
    # plain USA (Numba) from the rotated start
    y0 = model.to_gauge(x0, xi)
    usa = ue.simulate(ue.models.usa(1.0), y0, t_max=dt * steps, dt=dt, n_frames=2)
    assert np.max(np.abs(model.to_gauge(x_ref, xi) - usa.final)) < 1e-12
    assert np.max(np.abs(x_ref - x0)) > 0.1


# 5 -----------------------------------------------------------------------------------------
def test_claim5_latitude_circle():
    n = 64
    model = ue.models.rope(1.0, (1.0,), 3)
    xi = 2 * np.pi * np.arange(n) / n
    traj = ue.simulate(model, ue.sphere.uniform(n, 3, seed=0), xi, t_max=60.0)
    x = traj.final
    assert abs(traj.energy[-1] - np.e / 2) < 1e-6
    assert np.std(x[:, 2]) < 1e-8
    az = np.arctan2(x[:, 1], x[:, 0])
    gaps = np.angle(np.exp(1j * np.diff(az)))
    assert np.max(np.abs(gaps + 2 * np.pi / n)) < 1e-6


# 6 -----------------------------------------------------------------------------------------
def test_claim6_torus_curve():
    n = 64
    model = ue.models.rope(1.0, (1.0, np.sqrt(2.0)), 4)
    xi = np.arange(n, dtype=float)
    traj = ue.simulate(model, ue.sphere.uniform(n, 4, seed=0), xi, t_max=60.0)
    y = traj.y
    assert dg.spread(y[-1]) < 1e-6
    assert dg.spread(y[0]) > 0.5
    assert dg.spread(traj.final) > 0.9
    radii = np.linalg.norm(traj.final.reshape(n, 2, 2), axis=2)
    assert np.max(radii.std(axis=0)) < 1e-8


# 7 -----------------------------------------------------------------------------------------
def test_claim7_nonnegative_distance_bias_collapses():
    n = 32
    model = ue.models.distance_bias(1.0, lam=1.0)
    xi = 2 * np.pi * np.arange(n) / n
    traj = ue.simulate(model, ue.sphere.uniform(n, 3, seed=0), xi, t_max=200.0, method="dopri5", n_frames=21)
    assert dg.spread(traj.x[0]) > 0.5
    assert dg.spread(traj.final) < 1e-6


# 8 -----------------------------------------------------------------------------------------
def test_claim8_cosine_bias_great_circle():
    n = 64
    model = ue.models.cosine_bias(omega=1.0)
    xi = 2 * np.pi * np.arange(n) / n
    traj = ue.simulate(model, ue.sphere.uniform(n, 3, seed=0), xi, t_max=60.0)
    assert abs(traj.energy[-1] - 0.25) < 1e-8
    sv = np.linalg.svd(traj.final, compute_uv=False)
    assert np.allclose(sv, [np.sqrt(n / 2), np.sqrt(n / 2), 0.0], atol=1e-5)


# 9 -----------------------------------------------------------------------------------------
def test_claim9_k_prompts_k_clusters():
    n, k = 64, 5
    frames = ue.sphere.random_frames(k, 3, seed=11)
    model = ue.models.prefix_gauge(1.0, frames)
    xi = np.arange(n) % k
    traj = ue.simulate(model, ue.sphere.uniform(n, 3, seed=0), xi, t_max=60.0)
    x = traj.final
    assert dg.cluster_count(x, cluster_tol=1e-4) == k
    u = traj.y[-1].mean(axis=0)
    u /= np.linalg.norm(u)
    for p in range(k):
        centre = frames[p].T @ u
        assert np.max(np.linalg.norm(x[xi == p] - centre, axis=1)) < 1e-6


# 10 ----------------------------------------------------------------------------------------
def test_claim10_cluster_counts_match_usa_at_every_time():
    n, beta = 32, 4.0
    model = ue.models.rope(beta, (1.0,), 3)
    xi = np.arange(n, dtype=float)
    x0 = ue.sphere.uniform(n, 3, seed=5)
    rope = ue.simulate(model, x0, xi, t_max=30.0, method="dopri5", n_frames=61)
    usa = ue.simulate(ue.models.usa(beta), model.to_gauge(x0, xi), t_max=30.0, method="dopri5", n_frames=61)
    counts_rope = [dg.cluster_count(y, 1e-2) for y in rope.y]
    counts_usa = [dg.cluster_count(y, 1e-2) for y in usa.x]
    assert counts_rope == counts_usa
    assert len(set(counts_usa)) > 2  # the count really changes over time
