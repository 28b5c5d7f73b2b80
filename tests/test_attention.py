"""General attention: query, key and value matrices, causal masks with ALiBi, asymmetric biases.

Each case is checked against the formula written out in NumPy here (every pair, no gauge trick):

    q_i = G_i Q x_i,  k_j = G_j K x_j,  u_j = G_j V x_j (or V x_j, values not rotated)
    w_ij = b_ij exp(beta <q_i, k_j>)            (b_ij = 0 where a causal mask hides j from i)
    dx_i/dt = P_{x_i}( R_i sum_j w_ij u_j / N_i ),  R_i = G_i^T (or 1),  N_i = n or sum_j w_ij
"""

import dataclasses

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu.dynamics import general
from usaav_edu.particles.plan import direct_field


def reference_velocity(x, beta, Q=None, K=None, V=None, G=None, rotate=True, b=None, sa=False,
                       linear=False, frozen=None):
    n, d = x.shape
    eye = np.eye(d)
    Q, K, V = (eye if m is None else m for m in (Q, K, V))
    G = np.broadcast_to(eye, (n, d, d)) if G is None else G
    q = np.einsum("nij,nj->ni", G, x @ Q.T)
    k = np.einsum("nij,nj->ni", G, x @ K.T)
    u = np.einsum("nij,nj->ni", G, x @ V.T) if rotate else x @ V.T
    w = np.ones((n, n)) if linear else np.exp(beta * q @ k.T)
    if b is not None:
        w = w * b
    a = w @ u / (w.sum(axis=1) if sa else np.full(n, float(n)))[:, None]
    if rotate:
        a = np.einsum("nji,nj->ni", G, a)
    v = a - np.sum(a * x, axis=1, keepdims=True) * x
    if frozen is not None:
        v[frozen] = 0.0
    return v


def causal_matrix(xi, lam):
    gap = xi[:, None] - xi[None, :]
    return np.where(gap >= 0, np.exp(-lam * np.maximum(gap, 0.0)), 0.0)


def package_velocity(model, x, xi=None, frozen=None):
    kernel = model.kernel(x, xi, frozen)
    field = direct_field(kernel)
    state = kernel.y0 if kernel.state_in_gauge else np.ascontiguousarray(x.T)
    out = np.empty_like(state)
    field(state.copy(), out)
    return out.T if not kernel.state_in_gauge else kernel.contents(out.T)


def random_qkv(d, seed, scale=0.6):
    rng = np.random.default_rng(seed)
    return tuple(scale * rng.normal(size=(d, d)) for _ in range(3))


@pytest.mark.parametrize("d", [2, 3, 5])
@pytest.mark.parametrize("normalization", ["usa", "sa"])
@pytest.mark.parametrize("beta", [1.3, -0.8])
def test_projected_velocity_is_the_formula(d, normalization, beta):
    x = ue.sphere.uniform(40, d, seed=d)
    Q, K, V = random_qkv(d, seed=7 + d)
    m = ue.models.attention(abs(beta), Q=Q, K=K, V=V, d=d, normalization=normalization)
    if beta < 0:  # a negative beta is the same weights as beta > 0 with -Q
        m = ue.models.attention(-beta, Q=-Q, K=K, V=V, d=d, normalization=normalization)
    got = package_velocity(m, x)
    want = reference_velocity(x, abs(beta), -Q if beta < 0 else Q, K, V,
                              sa=normalization == "sa")
    assert np.max(np.abs(got - want)) <= 1e-12 * max(1.0, np.max(np.abs(want)))


@pytest.mark.parametrize("rotate", [True, False])
def test_rope_acts_after_the_projections(rotate):
    n, d = 30, 3
    x = ue.sphere.uniform(n, d, seed=3)
    xi = np.linspace(0.0, 6.0, n)
    Q, K, V = random_qkv(d, seed=11)
    rope = ue.models.rope(1.0, (0.7,), d, rotate_values=rotate)
    m = dataclasses.replace(rope, name=None,
                            projections=ue.models.Projections(Q=Q, K=K, V=V))
    G = rope.gauge_matrices(xi, d)
    got = package_velocity(m, x, xi)
    want = reference_velocity(x, 1.0, Q, K, V, G=G, rotate=rotate)
    assert np.max(np.abs(got - want)) <= 1e-12


def test_identity_matrices_give_the_symmetric_kernels_velocity():
    x = ue.sphere.uniform(64, 3, seed=5)
    eye = np.eye(3)
    for base in (ue.models.usa(2.0), ue.models.sa(2.0)):
        m = dataclasses.replace(base, name=None, projections=ue.models.Projections(Q=eye, K=eye,
                                                                                   V=eye))
        assert m.general and not base.general
        assert np.max(np.abs(package_velocity(m, x) - package_velocity(base, x))) <= 1e-13


def test_the_general_kernel_runs_the_paper_model_as_the_symmetric_kernel_does():
    x0 = ue.sphere.uniform(48, 3, seed=8)
    eye = np.eye(3)
    base = ue.models.usa(1.5)
    m = dataclasses.replace(base, name=None, projections=ue.models.Projections(Q=eye, K=eye, V=eye))
    a = ue.simulate(base, x0, t_max=4.0, dt=0.02, n_frames=5)
    b = ue.simulate(m, x0, t_max=4.0, dt=0.02, n_frames=5)
    assert np.max(np.abs(a.x - b.x)) <= 1e-12
    assert np.max(np.abs(a.energy - b.energy)) <= 1e-12 * a.energy[-1]


def rk4(f, x, h, steps):
    for _ in range(steps):
        k1 = f(x)
        k2 = f(x + 0.5 * h * k1)
        k3 = f(x + 0.5 * h * k2)
        k4 = f(x + h * k3)
        x = x + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
    return x


def test_a_projected_run_is_rk4_of_the_formula():
    x0 = ue.sphere.uniform(32, 3, seed=9)
    Q, K, V = random_qkv(3, seed=2)
    m = ue.models.attention(1.0, Q=Q, K=K, V=V)
    traj = ue.simulate(m, x0, t_max=2.0, dt=0.01, n_frames=3)
    want = rk4(lambda x: reference_velocity(x, 1.0, Q, K, V), x0, 0.01, 200)
    assert traj.dt == pytest.approx(0.01)
    assert np.max(np.abs(traj.x[-1] - want)) <= 1e-10


def test_causal_velocity_is_the_masked_formula_with_alibi():
    n = 50
    rng = np.random.default_rng(4)
    x = ue.sphere.uniform(n, 3, seed=4)
    xi = rng.integers(0, 20, n).astype(float)  # repeated positions: both see each other
    for lam, norm in ((0.0, "sa"), (0.4, "sa"), (0.4, "usa")):
        m = ue.models.causal(1.2, lam=lam, normalization=norm)
        got = package_velocity(m, x, xi)
        want = reference_velocity(x, 1.2, b=causal_matrix(xi, lam), sa=norm == "sa")
        assert np.max(np.abs(got - want)) <= 1e-12
        assert np.array_equal(m.bias_matrix(xi), causal_matrix(xi, lam))


def test_causal_linear_profile_and_large_decay_saturate_cleanly():
    n = 30
    x = ue.sphere.uniform(n, 2, seed=1)
    xi = np.arange(n, dtype=float) * 100.0  # decay exponents far below the double range
    m = ue.models.causal(0.0, lam=5.0, d=2, profile="linear")
    got = package_velocity(m, x, xi)
    want = reference_velocity(x, 0.0, b=causal_matrix(xi, 5.0), sa=True, linear=True)
    assert np.all(np.isfinite(got))
    assert np.max(np.abs(got - want)) <= 1e-12


def test_the_first_token_never_moves_and_the_others_follow_it():
    n = 24
    x0 = ue.sphere.uniform(n, 3, seed=6)
    xi = np.random.default_rng(6).permutation(n).astype(float)
    traj = ue.simulate(ue.models.causal(1.0), x0, xi, t_max=30.0, n_frames=4)
    first = int(np.argmin(xi))
    # it attends to itself only: its velocity P_x(x) vanishes to rounding
    assert np.max(np.abs(traj.x[:, first] - x0[first])) <= 1e-14
    # every token ends next to the first one (causal attention collapses onto it)
    assert np.min(traj.x[-1] @ x0[first]) > 0.999


def test_gradient_structure_turns_the_energy_checks_on():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(3, 3))
    a = (a + a.T) / 4
    grad = ue.models.attention(1.0, Q=a, V=a)  # Q^T K = a = V, symmetric
    assert grad.is_gradient_ascent
    kernel = grad.kernel(ue.sphere.uniform(8, 3, seed=0))
    assert kernel.energy_rises
    traj = ue.simulate(grad, ue.sphere.uniform(40, 3, seed=2), t_max=3.0, n_frames=7)
    assert np.all(np.diff(traj.energy) >= -1e-12 * traj.energy[-1])
    Q, K, V = random_qkv(3, seed=3)
    other = ue.models.attention(1.0, Q=Q, K=K, V=V)
    assert not other.is_gradient_ascent
    assert not other.kernel(ue.sphere.uniform(8, 3, seed=0)).energy_rises
    assert not ue.models.causal(1.0).kernel(ue.sphere.uniform(8, 3, seed=0),
                                            np.arange(8.0)).energy_rises


def test_energy_is_the_pair_sum_of_the_projections():
    x = ue.sphere.uniform(30, 3, seed=2)
    Q, K, V = random_qkv(3, seed=5)
    m = ue.models.attention(0.9, Q=Q, K=K, V=V)
    s = (x @ Q.T) @ (x @ K.T).T
    assert ue.energy(m, x) == pytest.approx(np.sum(np.exp(0.9 * s) / 0.9) / (2 * 30 ** 2),
                                            rel=1e-13)
    lin = ue.models.attention(1.0, Q=Q, K=K, V=V, profile="linear")
    assert ue.energy(lin, x) == pytest.approx(np.sum(s) / (2 * 30 ** 2), rel=1e-12)


class Asymmetric:
    def matrix(self, xi):
        return np.exp(-np.abs(xi[:, None] - xi[None, :])) * (1.0 + 0.5 * np.tanh(
            xi[:, None] - xi[None, :]))


def test_an_asymmetric_bias_of_ones_own_is_summed_directly_without_energy_check():
    n = 30
    x = ue.sphere.uniform(n, 3, seed=3)
    xi = np.linspace(0.0, 4.0, n)
    m = ue.Model(bias=Asymmetric(), profile=ue.models.ExpProfile(1.0))
    kernel = m.kernel(x, xi)
    assert kernel.attention is not None and not kernel.energy_rises
    got = package_velocity(m, x, xi)
    want = reference_velocity(x, 1.0, b=Asymmetric().matrix(xi))
    assert np.max(np.abs(got - want)) <= 1e-12
    traj = ue.simulate(m, x, xi, t_max=1.0, n_frames=3)
    assert traj.status is ue.particles.Status.COMPLETED


def test_models_with_projections_and_masks_round_trip(tmp_path):
    Q, K, V = random_qkv(3, seed=1)
    for m in (ue.models.attention(1.0, Q=Q, K=K, V=V, normalization="sa"),
              ue.models.causal(2.0, lam=0.3)):
        back = ue.Model.from_params(m.params())
        assert back.params() == m.params()
        xi = np.arange(12.0)
        traj = ue.simulate(m, ue.sphere.uniform(12, 3, seed=0), xi, t_max=0.5, n_frames=3)
        path = tmp_path / f"{m.name}.npz"
        traj.save(path)
        again = ue.Trajectory.load(path)
        assert np.array_equal(again.x, traj.x)
        assert again.model.params() == m.params()


def test_fast_summation_is_refused_with_the_reason():
    Q, K, V = random_qkv(3, seed=1)
    x = ue.sphere.uniform(16, 3, seed=0)
    with pytest.raises(ValueError, match="query, key and value"):
        ue.simulate(ue.models.attention(1.0, Q=Q), x, t_max=0.1, summation="fast")
    with pytest.raises(ValueError, match="causal"):
        ue.simulate(ue.models.causal(1.0), x, np.arange(16.0), t_max=0.1, summation="fast")


def test_bad_projections_are_named():
    with pytest.raises(ValueError, match="Q must have shape"):
        ue.models.attention(1.0, Q=np.eye(4))
    with pytest.raises(ValueError, match="K must be a square"):
        ue.models.attention(1.0, K=np.ones((3, 2)))
    with pytest.raises(ValueError, match="V"):
        ue.models.attention(1.0, V=np.full((3, 3), np.nan))
    with pytest.raises(ValueError, match="d = 4"):
        ue.models.attention(1.0, Q=np.eye(4), d=4).kernel(ue.sphere.uniform(5, 3, seed=0))
    with pytest.raises(ValueError, match="lam"):
        ue.models.causal(1.0, lam=-1.0)
    with pytest.raises(TypeError, match="projections"):
        ue.Model(projections=np.eye(3))
    with pytest.raises(ValueError, match="xi must be given"):
        ue.simulate(ue.models.causal(1.0), ue.sphere.uniform(5, 3, seed=0), t_max=0.1)


def test_the_exponent_bound_selects_the_saturating_exponential():
    q = np.ascontiguousarray(np.full((3, 4), 20.0))
    assert general.exponent_bound(q, q, 1.0, None) == pytest.approx(1200.0)
    acc, z = general.pair_sums(q, q, q, 1.0, False)  # 2^1200 overflows: inf, not garbage
    assert np.all(np.isinf(z))


def test_pre_ln_is_refused_where_the_general_kernel_runs():
    with pytest.raises(ValueError, match="layer_norm 'pre'"):
        dataclasses.replace(ue.models.causal(1.0), layer_norm="pre")
    with pytest.raises(ValueError, match="layer_norm 'pre' needs a symmetric bias"):
        ue.Model(bias=Asymmetric(), layer_norm="pre").kernel(ue.sphere.uniform(6, 3, seed=0),
                                                             np.arange(6.0))


def test_the_set_ups_beyond_the_papers_model():
    from usaav_edu.particles import experiments

    model, x0, xi = experiments.setup("attention", n=10, beta=2.0, qkv_seed=4)
    Q, K, V = experiments.random_projections(3, 4)
    assert np.array_equal(model.projections.Q, Q) and np.array_equal(model.projections.V, V)
    assert xi is None and model.beta == 2.0
    again = experiments.setup("attention", n=10, beta=2.0, seed=0)[0]  # qkv_seed: seed + 2
    assert np.array_equal(again.projections.K, experiments.random_projections(3, 2)[1])
    model, x0, xi = experiments.setup("causal", n=5, lam=0.5)
    assert model.bias == ue.models.CausalBias(0.5) and xi.tolist() == [0, 1, 2, 3, 4]
    assert "attention" not in [name for _, name in experiments.choices()]
    assert experiments.BEYOND == ("attention", "causal")


def test_fast_summation_applies_where_q_transpose_k_is_a_multiple_of_the_identity():
    rng = np.random.default_rng(7)
    R, _ = np.linalg.qr(rng.normal(size=(3, 3)))  # Q = K = 2 R: Q^T K = 4 I
    V = np.diag([1.0, 0.6, -0.3]) + 0.1 * rng.normal(size=(3, 3))
    x0 = ue.sphere.uniform(300, 3, seed=3)
    for norm in ("usa", "sa"):
        m = ue.models.attention(0.5, Q=2 * R, K=2 * R, V=V, normalization=norm)
        assert m.fast_reason is None and m.fast_model.beta == pytest.approx(2.0)
        fast = ue.simulate(m, x0, t_max=1.0, dt=0.01, n_frames=3, summation="fast",
                           summation_tol=1e-12)
        direct = ue.simulate(m, x0, t_max=1.0, dt=0.01, n_frames=3, summation="direct")
        assert fast.summation == "fast" and direct.summation == "direct"
        assert np.max(np.abs(fast.x - direct.x)) <= 1e-9
        assert np.max(np.abs(fast.energy - direct.energy)) <= 1e-9 * abs(direct.energy[0])
    # the velocity itself, against the formula
    m = ue.models.attention(0.5, Q=2 * R, K=2 * R, V=V)
    from usaav_edu.particles.plan import summation_args, summation_plan

    summation, tol, reason = summation_args(m, "fast", 1e-12)
    plan = summation_plan(m.kernel(x0), summation, reason, tol)
    out = np.empty((3, 300))
    plan.field(np.ascontiguousarray(x0.T), out)
    want = reference_velocity(x0, 0.5, 2 * R, 2 * R, V)
    assert np.max(np.abs(out.T - want)) <= 1e-11 * np.max(np.abs(want))
    assert plan.gauge_energy(np.ascontiguousarray(x0.T)) == pytest.approx(ue.energy(
        m, x0, summation="direct"), rel=1e-11)


def test_a_causal_run_with_alibi_is_rk4_of_the_masked_formula():
    n = 30
    x0 = ue.sphere.uniform(n, 2, seed=2)
    xi = np.random.default_rng(2).permutation(n).astype(float) / 3.0
    b = causal_matrix(xi, 0.7)
    traj = ue.simulate(ue.models.causal(2.0, lam=0.7, d=2), x0, xi, t_max=3.0, dt=0.01,
                       n_frames=2)
    want = rk4(lambda x: reference_velocity(x, 2.0, b=b, sa=True), x0, 0.01, 300)
    assert np.max(np.abs(traj.x[-1] - want)) <= 1e-10
