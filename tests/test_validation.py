"""Bad input gets a clear error that names the argument; nothing is silently fixed."""

import numpy as np
import pytest

import usaav_edu as ue

X0 = ue.sphere.uniform(6, 3, seed=0)
USA = ue.models.usa(1.0)
ROPE = ue.models.rope(1.0, (1.0,), 3)
FRAMES = ue.sphere.random_frames(2, 3, seed=0)
PREFIX = ue.models.prefix_gauge(1.0, FRAMES)
POS = np.arange(6, dtype=float)


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(x0=X0 * 1.001), ValueError, "x0 must hold unit vectors"),
    (dict(x0=X0[:, :1] / np.abs(X0[:, :1])), ValueError, "d >= 2"),
    (dict(x0=X0[0]), ValueError, "x0 must be a 2-D array"),
    (dict(x0=np.where(np.eye(6, 3) > 0, np.nan, X0)), ValueError, "x0 must be finite"),
    (dict(x0="points"), TypeError, "x0"),
    (dict(x0=np.zeros((0, 3))), ValueError, "x0 must hold at least one point"),
    (dict(t_max=0.0), ValueError, "t_max must be > 0"),
    (dict(t_max=np.inf), ValueError, "t_max must be finite"),
    (dict(dt=0.0), ValueError, "dt must be > 0"),
    (dict(dt=-0.1), ValueError, "dt must be > 0"),
    (dict(method="euler"), ValueError, "method must be one of"),
    (dict(n_frames=1), ValueError, "n_frames must be >= 2"),
    (dict(n_frames=2.5), TypeError, "n_frames must be an integer"),
    (dict(rtol=0.0, method="dopri5"), ValueError, "rtol must be > 0"),
    (dict(frozen=np.zeros(5, dtype=bool)), ValueError, "frozen must be a boolean array of shape"),
    (dict(frozen=np.zeros(6)), ValueError, "frozen must be a boolean array"),
    (dict(seed="zero"), TypeError, "seed must be an int"),
    (dict(model="usa"), TypeError, "model must be a usaav_edu Model"),
])
def test_simulate_rejects(kwargs, exc, match):
    args = dict(model=USA, x0=X0, xi=None, t_max=1.0)
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        ue.simulate(**args)


@pytest.mark.parametrize("model,xi,exc,match", [
    (ROPE, None, ValueError, "xi must be given"),
    (ROPE, POS[:5], ValueError, r"xi must have shape \(6,\)"),
    (ROPE, np.array([0, 1, 2, 3, 4, np.nan]), ValueError, "xi must be finite"),
    (PREFIX, np.array([0, 1, 0, 1, 0, 2]), ValueError, r"xi must be prompt ids in 0..1"),
    (PREFIX, np.array([0, 1, 0, 1, 0, -1]), ValueError, "xi must be prompt ids"),
    (PREFIX, POS, TypeError, "xi must be integer prompt ids"),
])
def test_labels_are_checked(model, xi, exc, match):
    with pytest.raises(exc, match=match):
        ue.simulate(model, X0, xi, t_max=1.0)


def test_dimension_must_match_model():
    with pytest.raises(ValueError, match="omegas must give one frequency per rotation plane"):
        ue.simulate(ROPE, ue.sphere.uniform(6, 4, seed=0), POS, t_max=1.0)
    with pytest.raises(ValueError, match="x0 must have dimension d = 3"):
        ue.simulate(PREFIX, ue.sphere.uniform(6, 4, seed=0), np.zeros(6, dtype=int), t_max=1.0)


@pytest.mark.parametrize("make,exc,match", [
    (lambda: ue.models.usa(-1000.0), ValueError, "beta must be >= -700"),
    (lambda: ue.models.usa(-2.2e-309), ValueError, "beta must be 0 .* or at least 1e-300"),
    (lambda: ue.models.usa(np.nan), ValueError, "beta must be finite"),
    (lambda: ue.models.usa(1000.0), ValueError, "beta must be <= 700"),
    (lambda: ue.models.usa(2.2e-309), ValueError, "beta must be 0 .* or at least 1e-300"),
    (lambda: ue.models.Model(profile=ue.models.ExpProfile(1e-301)), ValueError,
     "beta must be 0 .* or at least 1e-300"),
    (lambda: ue.models.usa("1"), TypeError, "beta must be a real number"),
    (lambda: ue.models.usa(1.0, profile="cubic"), ValueError, "profile must be one of"),
    (lambda: ue.models.rope(1.0, (1.0, 2.0), 3), ValueError, "omegas must give one frequency per rotation plane"),
    (lambda: ue.models.rope(1.0, (np.inf,), 3), ValueError, r"omegas\[0\] must be finite"),
    (lambda: ue.models.rope(1.0, (1.0,), 1), ValueError, "d must be >= 2"),
    (lambda: ue.models.rope(1.0, (1.0,), 3, rotate_values="no"), TypeError, "rotate_values"),
    (lambda: ue.models.prefix_gauge(1.0, FRAMES * 1.01), ValueError, "frames must be orthogonal"),
    (lambda: ue.models.prefix_gauge(1.0, FRAMES[:, :2]), ValueError, r"frames must have shape \(K, d, d\)"),
    (lambda: ue.models.prefix_gauge(1.0), TypeError, "frames must be"),
    (lambda: ue.models.distance_bias(1.0, lam=-1.0), ValueError, "lam must be >= 0"),
    (lambda: ue.models.cosine_bias(omega=np.nan), ValueError, "omega must be finite"),
    (lambda: ue.models.frames_from_targets(X0 * 2), ValueError, "targets must hold unit vectors"),
    (lambda: ue.sphere.uniform(0, 3), ValueError, "n must be >= 1"),
    (lambda: ue.sphere.uniform(5, 1), ValueError, "d must be >= 2"),
    (lambda: ue.sphere.equiangular(5, 3), ValueError, "d must be >= n"),
    (lambda: ue.experiments.setup("bert"), ValueError, "name must be one of"),
])
def test_constructors_reject(make, exc, match):
    with pytest.raises(exc, match=match):
        make()


@pytest.mark.parametrize("call,exc,match", [
    (lambda: ue.diagnostics.spread(X0 * 2), ValueError, "x must hold unit vectors"),
    (lambda: ue.diagnostics.cluster_count(X0, cluster_tol=0.0), ValueError, "cluster_tol must be > 0"),
    (lambda: ue.maximizers.latitude_circle(1.5), ValueError, "height must be <= 1"),
    (lambda: ue.maximizers.great_circle(POS, 1.0, [1, 0, 0], [1, 0, 0]), ValueError, "a and c must be orthogonal"),
    (lambda: ue.maximizers.gauge_maximizer(ROPE, POS, [1.0, 1.0, 0.0]), ValueError, "u must hold unit vectors"),
    (lambda: ue.maximizers.rope_orbit(USA, [0, 0, 1.0], POS), ValueError, "model must have the rope gauge"),
    (lambda: ue.energy(USA, X0 * 3), ValueError, "x0 must hold unit vectors"),
])
def test_diagnostics_and_maximizers_reject(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_input_is_not_modified():
    x0 = X0.copy()
    xi = POS.copy()
    ue.simulate(ROPE, x0, xi, t_max=1.0)
    assert np.array_equal(x0, X0) and np.array_equal(xi, POS)
