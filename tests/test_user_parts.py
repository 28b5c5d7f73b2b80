"""A researcher's own gauge and bias, written in a few lines, run through the whole package.

The gauge is a wavy rotation of S^2 (about an axis that turns with the position, by an angle
that oscillates with it); the bias a Gaussian ``b = exp(-(xi - zeta)^2)``.  Neither is known to
the package: ``simulate`` must match the literal NumPy formulas (``dynamics.reference``) to
1e-12, and the energy, the diagnostics and the widgets must take the runs.
"""

import json

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu.dynamics import energy_reference, rk4_reference, velocity_reference


# ---------------------------------------------------------------------- user code
class WavyGauge:
    """G(xi): the rotation by sin(2 xi) about the unit axis (cos xi, sin xi, 1/2) / norm."""

    def matrices(self, xi):
        a = np.stack([np.cos(xi), np.sin(xi), np.full_like(xi, 0.5)], axis=1)
        a /= np.linalg.norm(a, axis=1, keepdims=True)
        k = np.zeros((len(xi), 3, 3))
        k[:, 0, 1], k[:, 0, 2], k[:, 1, 2] = -a[:, 2], a[:, 1], -a[:, 0]
        k -= k.transpose(0, 2, 1)
        t = np.sin(2 * xi)[:, None, None]
        return np.eye(3) + np.sin(t) * k + (1 - np.cos(t)) * k @ k


class GaussianBias:
    """b(xi, zeta) = exp(-(xi - zeta)^2)."""

    def matrix(self, xi):
        return np.exp(-(xi[:, None] - xi[None, :]) ** 2)


N, D = 24, 3
XI = np.linspace(0.0, 4.0, N)
X0 = ue.sphere.uniform(N, D, seed=7)


def user_models():
    return {
        "gauge": ue.Model(gauge=WavyGauge(), profile=ue.models.ExpProfile(1.2)),
        "bias": ue.Model(bias=GaussianBias(), profile=ue.models.ExpProfile(0.8)),
        "both": ue.Model(gauge=WavyGauge(), bias=GaussianBias(), profile=ue.models.LinearProfile()),
        "both_sa": ue.Model(gauge=WavyGauge(), bias=GaussianBias(), normalization="sa"),
        "unrotated": ue.Model(gauge=WavyGauge(), bias=GaussianBias(), rotate_values=False),
    }


MODELS = user_models()


# ---------------------------------------------------------------------- against the reference
@pytest.mark.parametrize("key", sorted(MODELS))
def test_user_parts_match_the_numpy_reference(key):
    model = MODELS[key]
    dt, steps = 0.01, 150
    traj = ue.simulate(model, X0, XI, t_max=dt * steps, dt=dt, n_frames=4)
    assert traj.dt == pytest.approx(dt, rel=1e-12)
    want = rk4_reference(model, X0, XI, dt, steps)
    assert np.max(np.abs(traj.final - want)) < 1e-12
    assert np.max(np.abs(traj.final - X0)) > 0.05  # the tokens really moved
    assert abs(ue.energy(model, traj.final, XI) - energy_reference(model, traj.final, XI)) < 1e-12
    assert traj.steps_accepted == steps and traj.steps_rejected == 0 and traj.n_rhs == 4 * steps


def test_the_gauge_is_really_wavy():
    g = WavyGauge().matrices(XI)
    assert np.max(np.abs(np.einsum("nji,njk->nik", g, g) - np.eye(3))) < 1e-14
    assert np.max(np.abs(g[1:] - g[:-1])) > 0.1  # G changes along the positions
    assert np.max(np.abs(g[0] - np.eye(3))) < 1e-15 and np.max(np.abs(g[5] - np.eye(3))) > 0.1


def test_user_gauge_velocity_matches_the_reference_with_frozen_tokens():
    from usaav_edu.particles.plan import direct_field

    model = MODELS["both"]
    frozen = np.zeros(N, dtype=bool)
    frozen[::4] = True
    k = model.kernel(X0, XI, frozen)
    out = np.empty_like(k.y0)
    direct_field(k)(k.y0, out)
    want = velocity_reference(model, X0, XI, frozen)
    assert np.max(np.abs(k.contents(out.T) - want)) < 1e-13
    assert np.all(want[frozen] == 0.0) and np.max(np.abs(want[~frozen])) > 1e-3


def test_dopri5_takes_user_parts_and_raises_the_energy():
    traj = ue.simulate(MODELS["both"], X0, XI, t_max=6.0, method="dopri5", n_frames=13)
    assert np.all(np.diff(traj.energy) >= -1e-12)
    assert traj.steps_accepted > 0 and traj.n_rhs == 7 * (traj.steps_accepted + traj.steps_rejected)


# ---------------------------------------------------------------------- the rest of the package
def test_user_parts_run_through_energy_diagnostics_and_a_widget():
    from usaav_edu import widgets as W

    model = MODELS["both"]
    traj = ue.simulate(model, X0, XI, t_max=2.0, n_frames=11)
    assert traj.energy[0] == pytest.approx(ue.energy(model, X0, XI), rel=1e-14)
    s = ue.diagnostics.summary(traj)
    assert s["energy"] == traj.energy[-1] and s["energy"] <= s["energy_bound"] + 1e-12
    b = GaussianBias().matrix(XI)  # B >= 0: the bound is phi(1) mean(B) / 2, phi(1) = 1
    assert s["energy_bound"] == pytest.approx(b.mean() / 2, rel=1e-13)
    y = traj.y
    assert np.max(np.abs(np.linalg.norm(y, axis=2) - 1)) < 1e-12
    residual = ue.diagnostics.orbit_residual(model, traj.final, XI)
    assert s["orbit_residual"] == pytest.approx(residual)
    player = W.TrajectoryPlayer(traj, max_frames=6)
    assert np.allclose(player.keyframes, traj.x[player.frame_indices], atol=1e-6)


def test_a_sign_changing_user_bias_gets_the_eigenvalue_bound():
    class Cos2:
        def matrix(self, xi):
            return np.cos(2.0 * (xi[:, None] - xi[None, :]))

    model = ue.Model(bias=Cos2(), profile=ue.models.LinearProfile())
    b = Cos2().matrix(XI)
    assert ue.energy_bound(model, XI) == pytest.approx(np.linalg.eigvalsh(b)[-1] / (2 * N))
    with pytest.raises(ValueError, match="non-negative bias"):
        ue.simulate(ue.Model(bias=Cos2(), normalization="sa"), X0, XI, t_max=1.0)


# ---------------------------------------------------------------------- checks naming the part
def test_bad_user_parts_are_refused_naming_the_part():
    class NotOrthogonal:
        def matrices(self, xi):
            return np.tile(2.0 * np.eye(3), (len(xi), 1, 1))

    class WrongShape:
        def matrices(self, xi):
            return np.zeros((len(xi), 2, 2))

    class Lopsided:
        def matrix(self, xi):
            return np.triu(np.ones((len(xi), len(xi))))

    class NaNBias:
        def matrix(self, xi):
            return np.full((len(xi), len(xi)), np.nan)

    cases = [(ue.Model(gauge=NotOrthogonal()), "gauge .*NotOrthogonal.* orthogonal"),
             (ue.Model(gauge=WrongShape()), r"gauge .*WrongShape.* shape \(24, 3, 3\)"),
             (ue.Model(bias=NaNBias()), "bias .*NaNBias.* finite")]
    for model, words in cases:
        with pytest.raises(ValueError, match=words):
            ue.simulate(model, X0, XI, t_max=1.0)
    # a bias that is not symmetric is accepted: summed directly, its energy not checked
    lopsided = ue.Model(bias=Lopsided())
    assert not lopsided.kernel(X0, XI).energy_rises
    assert ue.simulate(lopsided, X0, XI, t_max=1.0).status is ue.particles.Status.COMPLETED
    with pytest.raises(TypeError, match="gauge must be .* matrices"):
        ue.Model(gauge=GaussianBias())
    with pytest.raises(TypeError, match="bias must be .* matrix"):
        ue.Model(bias=WavyGauge())


def test_saving_a_user_part_names_it_and_keeps_the_run(tmp_path):
    traj = ue.simulate(MODELS["gauge"], X0, XI, t_max=0.5, n_frames=3)
    before = traj.x.copy()
    with pytest.raises(TypeError, match="user-defined gauge .*WavyGauge"):
        traj.save(tmp_path / "run.npz")
    assert list(tmp_path.iterdir()) == [] and np.array_equal(traj.x, before)
    with pytest.raises(TypeError, match="user-defined bias .*GaussianBias"):
        MODELS["bias"].params()
    built_in = ue.simulate(ue.models.rope(1.0, (1.0,), 3), X0, XI, t_max=0.5, n_frames=3)
    built_in.save(tmp_path / "rope.npz")
    meta = json.loads(str(np.load(tmp_path / "rope.npz")["metadata"]))
    assert meta["model"]["gauge"] == {"kind": "rope", "omegas": [1.0], "d": 3}
