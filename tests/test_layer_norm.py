"""Post-LN and pre-LN (arXiv:2510.22026): the pre-LN field against a NumPy reference, the
equiangular reductions against the particle solver, post-LN unchanged, the radii saved."""

import dataclasses
import io
import math
import zipfile

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu import reductions as rd
from usaav_edu.dynamics.fastsum.kernel import fast_applies
from usaav_edu.dynamics.prenorm import PreNormField
from usaav_edu.errors import FastSummationRefused


def _pre(model):
    return dataclasses.replace(model, layer_norm="pre")


def _models():
    return [ue.models.usa(1.5, layer_norm="pre"), ue.models.sa(2.0, layer_norm="pre"),
            ue.models.rope(1.0, omegas=(0.7,), d=3, layer_norm="pre"),
            _pre(ue.models.rope(1.2, omegas=(0.4,), d=3, rotate_values=False)),
            ue.models.distance_bias(0.8, lam=0.3, layer_norm="pre"),
            ue.models.usa(1.0, profile="linear", layer_norm="pre")]


def _reference_dz(model, z, xi, frozen):
    """dz_i/dt = (1/N_i) sum_j b_ij phi'(<G_i th_i, G_j th_j>) V_ij th_j, th = z / |z|, with
    V_ij = G_i^T G_j (values rotated) or I, in content coordinates, pair by pair."""
    n, d = z.shape
    th = z / np.linalg.norm(z, axis=1, keepdims=True)
    g = model.gauge_matrices(xi, d)
    b = model.bias_matrix(xi)
    dz = np.zeros((n, d))
    for i in range(n):
        acc, norm = np.zeros(d), 0.0
        for j in range(n):
            w = (1.0 if b is None else b[i, j]) * model.dphi((g[i] @ th[i]) @ (g[j] @ th[j]))
            value = g[i].T @ g[j] @ th[j] if model.rotate_values else th[j]
            acc += w * value
            norm += w
        dz[i] = acc / (norm if model.normalization == "sa" else n)
    dz[frozen] = 0.0
    return dz


@pytest.mark.parametrize("model", _models(), ids=lambda m: m.name)
def test_pre_ln_velocity_is_the_attention_of_the_directions(model):
    rng = np.random.default_rng(3)
    n, d = 7, 3
    x0 = ue.sphere.uniform(n, d, seed=4)
    z = x0 * rng.uniform(0.5, 2.0, size=(n, 1))  # tokens off the sphere
    xi = np.linspace(0.0, 3.0, n)
    frozen = np.zeros(n, dtype=bool)
    frozen[2] = True
    kernel = model.kernel(x0, xi if model.labels != "none" else None, frozen)
    field = PreNormField(kernel)
    state = (kernel.to_gauge(z) if model.rotate_values else z).T.copy()
    out = np.empty_like(state)
    field(state, out)
    expected = _reference_dz(model, z, kernel.xi, frozen)
    if model.rotate_values:  # the state is G_i z_i, so is its velocity
        expected = kernel.to_gauge(expected)
    assert np.max(np.abs(out.T - expected)) < 1e-12
    assert np.all(out[:, 2] == 0.0)


def _equal_inner_products(n, r0):
    """n unit vectors of R^n with every pairwise inner product r0 (Cholesky of the Gram)."""
    gram = (1.0 - r0) * np.eye(n) + r0 * np.ones((n, n))
    if r0 == -1.0 / (n - 1):  # the regular simplex: a singular Gram matrix
        x = np.eye(n) - 1.0 / n
        return x / np.linalg.norm(x, axis=1, keepdims=True)
    return np.linalg.cholesky(gram)


@pytest.mark.parametrize("layer_norm,normalization,beta,r0", [
    ("pre", "usa", 1.0, 0.0), ("pre", "usa", 2.0, 0.3), ("pre", "sa", 2.0, 0.0),
    ("pre", "usa", 1.5, -0.1), ("post", "usa", 1.0, 0.0), ("post", "sa", 2.0, 0.3)])
def test_equiangular_start_follows_the_reduction(layer_norm, normalization, beta, r0):
    n = 6
    make = ue.models.usa if normalization == "usa" else ue.models.sa
    model = make(beta, layer_norm=layer_norm)
    traj = ue.simulate(model, _equal_inner_products(n, r0), t_max=2.0, n_frames=21,
                       method="dopri5", rtol=1e-13, atol=1e-15)
    inner = np.array([rd.pairwise_inner(x) for x in traj.x])  # mean, min, max
    assert np.max(inner[:, 2] - inner[:, 1]) < 1e-12  # stays equiangular
    solution = rd.equiangular_solution(traj.t, n, beta, r0=r0, normalization=normalization,
                                       max_step=1e-3, layer_norm=layer_norm)
    if layer_norm == "post":
        assert traj.radius is None
        assert np.max(np.abs(inner[:, 0] - solution)) < 1e-9
        return
    rho, radius = solution
    assert np.max(np.abs(inner[:, 0] - rho)) < 1e-9
    assert np.max(np.abs(traj.radius - radius[:, None])) < 1e-9
    assert np.all(np.diff(traj.radius[:, 0]) > 0)  # the residual stream grows


def test_regular_simplex_is_an_equilibrium_of_the_directions_only():
    n, beta = 5, 1.0
    traj = ue.simulate(ue.models.usa(beta, layer_norm="pre"), _equal_inner_products(n, -0.25),
                       t_max=1.0, n_frames=3)
    assert np.max(np.abs(traj.x - traj.x[0])) < 1e-12
    # dR/dt = (e^beta - e^{-beta/(n-1)}) / n, constant: R(t) = 1 + t g
    g = (math.exp(beta) - math.exp(-beta / (n - 1))) / n
    assert np.max(np.abs(traj.radius - (1.0 + g * traj.t)[:, None])) < 1e-12


def test_pre_ln_reduction_at_beta_zero_is_the_closed_form():
    # 1 - r = (1 - r0) R^-2 and t = R - 1 + (sqrt k / 2) log((R - sqrt k)(1 + sqrt k) /
    # ((R + sqrt k)(1 - sqrt k))), k = (n - 1)(1 - r0) / n
    n, r0 = 7, 0.1
    t = np.linspace(0.0, 5.0, 11)
    for normalization in ("usa", "sa"):
        r, big_r = rd.equiangular_solution(t, n, 0.0, r0=r0, normalization=normalization,
                                           max_step=1e-3, layer_norm="pre")
        k = (n - 1) * (1.0 - r0) / n
        sk = math.sqrt(k)
        t_of_r = big_r - 1 + sk / 2 * np.log((big_r - sk) * (1 + sk) / ((big_r + sk) * (1 - sk)))
        assert np.max(np.abs(t_of_r - t)) < 1e-12
        assert np.max(np.abs((1.0 - r) * big_r ** 2 - (1.0 - r0))) < 1e-12


def test_equiangular_radius_rate_is_the_radial_attention():
    n, beta, r = 5, 1.3, 0.2
    x = _equal_inner_products(n, r)
    a = np.exp(beta * (x @ x.T)) @ x
    for normalization, norm in (("usa", n), ("sa", np.exp(beta * (x @ x.T)).sum(axis=1)[0])):
        expected = (a[0] @ x[0]) / norm
        assert abs(rd.equiangular_radius_rate(r, n, beta, normalization) - expected) < 1e-12


@pytest.mark.parametrize("model", [ue.models.usa(1.0), ue.models.sa(2.0),
                                   ue.models.rope(1.0, omegas=(0.5,), d=3)],
                         ids=lambda m: m.name)
def test_post_ln_is_bit_for_bit_the_default(model):
    x0 = ue.sphere.uniform(9, 3, seed=5)
    xi = None if model.labels == "none" else np.arange(9.0)
    post = dataclasses.replace(model, layer_norm="post")
    a = ue.simulate(model, x0, xi, t_max=2.0, n_frames=5)
    b = ue.simulate(post, x0, xi, t_max=2.0, n_frames=5)
    assert np.array_equal(a.x, b.x) and np.array_equal(a.energy, b.energy)
    assert a.n_rhs == b.n_rhs and a.radius is None and b.radius is None
    assert model.layer_norm == "post" and "layer_norm" not in model.params()


def test_pre_ln_energy_is_of_the_directions_and_rises():
    model = ue.models.usa(2.0, layer_norm="pre")
    traj = ue.simulate(model, ue.sphere.uniform(12, 3, seed=6), t_max=4.0, n_frames=9)
    post = ue.models.usa(2.0)
    assert np.allclose(traj.energy, [ue.energy(post, x) for x in traj.x], rtol=1e-13, atol=0)
    assert np.all(np.diff(traj.energy) >= 0)
    assert np.max(np.abs(np.linalg.norm(traj.x, axis=2) - 1.0)) < 1e-14


def test_frozen_token_keeps_its_place_and_radius():
    frozen = np.zeros(6, dtype=bool)
    frozen[0] = True
    x0 = ue.sphere.uniform(6, 3, seed=7)
    traj = ue.simulate(ue.models.usa(1.0, layer_norm="pre"), x0, t_max=1.0, n_frames=3,
                       frozen=frozen)
    assert np.array_equal(traj.x[:, 0], np.tile(x0[0], (3, 1)))
    assert np.all(traj.radius[:, 0] == 1.0) and np.all(traj.radius[-1, 1:] > 1.0)


def test_radius_survives_save_and_load(tmp_path):
    model = ue.models.rope(1.0, omegas=(0.5,), d=3, layer_norm="pre")
    traj = ue.simulate(model, ue.sphere.uniform(5, 3, seed=8), xi=np.arange(5.0), t_max=1.0,
                       n_frames=4)
    path = tmp_path / "pre.npz"
    traj.save(path)
    back = ue.Trajectory.load(path)
    assert back.model.layer_norm == "pre" and back.model.name == "rope-pre_ln"
    assert np.array_equal(back.radius, traj.radius) and np.array_equal(back.x, traj.x)
    post = ue.simulate(ue.models.usa(1.0), ue.sphere.uniform(5, 3, seed=8), t_max=1.0, n_frames=3)
    post.save(tmp_path / "post.npz")
    assert "radius.npy" not in zipfile.ZipFile(tmp_path / "post.npz").namelist()
    assert ue.Trajectory.load(tmp_path / "post.npz").radius is None


def _without(path, member):
    buf = io.BytesIO()
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(buf, "w") as dst:
        for info in src.infolist():
            if info.filename != member:
                dst.writestr(info, src.read(info))
    buf.seek(0)
    return buf


def test_a_pre_ln_file_without_radii_is_refused(tmp_path):
    traj = ue.simulate(ue.models.usa(1.0, layer_norm="pre"), ue.sphere.uniform(4, 3, seed=9),
                       t_max=1.0, n_frames=3)
    traj.save(tmp_path / "pre.npz")
    with pytest.raises(ValueError, match="radius"):
        ue.Trajectory.load(_without(tmp_path / "pre.npz", "radius.npy"))
    with pytest.raises(ValueError, match="radius"):
        dataclasses.replace(traj, model=ue.models.usa(1.0)).save(tmp_path / "bad.npz")


def test_old_params_load_as_post_ln():
    params = ue.models.usa(1.0).params()
    assert "layer_norm" not in params
    assert ue.Model.from_params(params).layer_norm == "post"
    pre = ue.models.sa(1.0, layer_norm="pre")
    assert ue.Model.from_params(pre.params()).layer_norm == "pre"
    assert pre.name == "sa-pre_ln" and ue.Model(layer_norm="pre").name == "usa-pre_ln"


def test_bad_layer_norm_is_named():
    with pytest.raises(ValueError, match="layer_norm must be one of"):
        ue.Model(layer_norm="mid")
    with pytest.raises(ValueError, match="layer_norm"):
        ue.models.usa(1.0, layer_norm="mid")
    with pytest.raises(TypeError, match="layer_norm"):
        dataclasses.replace(ue.models.usa(1.0), layer_norm=None)
    with pytest.raises(ValueError, match="layer_norm"):
        rd.equiangular_solution([0.0, 1.0], 3, 1.0, layer_norm="mid")
    params = ue.models.usa(1.0).params() | {"layer_norm": "mid"}
    with pytest.raises(ValueError, match="layer_norm"):
        ue.Model.from_params(params)


def test_fast_summation_is_refused_for_pre_ln_with_the_reason():
    model = ue.models.usa(1.0, layer_norm="pre")
    reason = fast_applies(model)
    assert reason is not None and "pre-LN" in reason
    with pytest.raises(FastSummationRefused, match="pre-LN"):
        ue.simulate(model, ue.sphere.uniform(8, 3, seed=1), t_max=1.0, summation="fast")
    assert fast_applies(ue.models.usa(1.0)) is None


def test_the_density_solver_refuses_pre_ln():
    f0 = np.ones(64) / (2 * np.pi)
    with pytest.raises(ValueError, match="pre-LN"):
        ue.meanfield.solve(ue.models.usa(1.0, layer_norm="pre"), f0, t_max=1.0)


def test_a_run_that_stops_returns_the_radii_of_its_frames():
    traj = ue.simulate(ue.models.usa(1.0, layer_norm="pre"), ue.sphere.uniform(8, 3, seed=0),
                       t_max=2.0, n_frames=5, method="dopri5", rtol=1e-12, atol=1e-14,
                       max_steps=30, on_failure="return")
    assert traj.status is ue.particles.Status.MAX_STEPS
    assert traj.radius.shape == (len(traj.t), 8) and len(traj.t) < 5
