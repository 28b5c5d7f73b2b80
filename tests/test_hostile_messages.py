"""Hostile arguments get an error naming the argument, never RecursionError or AttributeError.

A list nested 100,000 deep cannot even be printed (its repr raises RecursionError), so every
message that shows an argument shows it cut short; an object without the expected attributes,
an integer beyond the floating-point range and metadata nested too deep are refused by name.
"""

import json

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu import _validate as v
from usaav_edu import biases, gauges, profiles
from usaav_edu import widgets as W


def deep(k=100_000):
    x = [1.0]
    for _ in range(k):
        x = [x]
    return x


DEEP = deep()


@pytest.fixture(scope="module")
def traj():
    model, x0, xi = ue.experiments.setup("rope", n=5, d=3, seed=0)
    return ue.simulate(model, x0, xi, t_max=0.2, n_frames=3, seed=0)


def test_shown_cuts_any_argument_short():
    assert len(v.shown(DEEP)) <= 80 and v.shown(DEEP).startswith("[[[")
    assert v.shown("abc") == "'abc'"

    class Broken:
        def __repr__(self):
            raise RuntimeError("no repr")

    assert v.shown(Broken()).startswith("<Broken")


DEEP_CALLS = [
    ("gauge", lambda: ue.Model(gauge=DEEP)),
    ("bias", lambda: ue.Model(gauge=gauges.IdentityGauge(), bias=DEEP)),
    ("profile", lambda: ue.Model(gauge=gauges.IdentityGauge(), profile=DEEP)),
    ("rotate_values", lambda: ue.models.rope(1.0, (1.0,), 3, rotate_values=DEEP)),
    ("biases", lambda: ue.spectral.phase_diagram(biases=DEEP)),
    ("omegas", lambda: ue.spectral.phase_diagram(omegas=DEEP)),
    ("seed", lambda: ue.sphere.make_rng(DEEP)),
    ("name", lambda: ue.experiments.get(DEEP)),
]


@pytest.mark.parametrize("name, call", DEEP_CALLS, ids=[n for n, _ in DEEP_CALLS])
def test_a_deeply_nested_argument_is_a_type_or_value_error_naming_it(name, call):
    with pytest.raises((TypeError, ValueError), match=name):
        call()


WIDGET_CALLS = [
    ("labels", lambda t: W.SphereView(x=t.x[0], labels=DEEP)),
    ("trails", lambda t: W.SphereView(t, trails=DEEP)),
    ("coords", lambda t: W.SphereView(t, coords=DEEP)),
    ("loop", lambda t: W.TrajectoryPlayer(t, loop=DEEP)),
    ("mode", lambda t: W.DensityView(t, mode=DEEP, live=True)),
    ("loop", lambda t: W.TwinView(t, loop=DEEP)),
    ("titles", lambda t: W.TwinView(t, titles=DEEP)),
    ("labels", lambda t: W.token_colors(t.xi, DEEP)),
    ("name", lambda t: W.ExperimentDashboard(DEEP, live=True)),
    ("trajectory", lambda t: W.TrajectoryPlayer(None)),
]


@pytest.mark.parametrize("name, call", WIDGET_CALLS,
                         ids=[f"{i} {n}" for i, (n, _) in enumerate(WIDGET_CALLS)])
def test_widgets_name_a_hostile_argument(traj, name, call):
    with pytest.raises((TypeError, ValueError), match=name):
        call(traj)


@pytest.mark.parametrize("make", [biases.bias_from_params, gauges.gauge_from_params,
                                  profiles.profile_from_params])
def test_parameters_that_are_not_a_dict_are_a_type_error(make):
    with pytest.raises(TypeError, match="parameters must be a dict"):
        make([{"kind": "none"}])


def test_an_integer_beyond_the_float_range_is_named():
    with pytest.raises(ValueError, match="beta must be finite, got an integer of 401 digits"):
        ue.models.usa(10 ** 400)
    with pytest.raises(ValueError, match="cluster_tol must be finite"):
        ue.diagnostics.cluster_count(np.eye(3), cluster_tol=10 ** 400)


# ---------------------------------------------------------------------- trajectory files
def test_load_refuses_metadata_nested_too_deep(tmp_path, traj):
    frozen = np.zeros(traj.n, dtype=bool)
    path = tmp_path / "deep.npz"
    np.savez(path, t=traj.t, x=traj.x, xi=traj.xi, energy=traj.energy, frozen=frozen,
             metadata=np.array("[" * 100_000 + "]" * 100_000))
    with pytest.raises(ValueError, match="not a valid usaav-edu trajectory: metadata nests deeper"):
        ue.Trajectory.load(path)


def test_load_refuses_a_model_value_beyond_the_float_range(tmp_path, traj):
    meta = json.loads(json.dumps(traj.metadata()))
    meta["model"]["profile"]["beta"] = 10 ** 400
    path = tmp_path / "big.npz"
    np.savez(path, t=traj.t, x=traj.x, xi=traj.xi, energy=traj.energy,
             frozen=np.zeros(traj.n, dtype=bool), metadata=np.array(json.dumps(meta)))
    with pytest.raises(ValueError, match="not a valid usaav-edu trajectory.*beta must be finite"):
        ue.Trajectory.load(path)


def _replace(traj, **fields):
    keys = ("t", "x", "xi", "energy", "model", "method", "dt")
    return ue.Trajectory(**{k: fields.get(k, getattr(traj, k)) for k in keys})


def test_save_of_a_trajectory_without_a_model_is_a_type_error(tmp_path, traj):
    with pytest.raises(TypeError, match="model must be a usaav_edu Model, got NoneType"):
        _replace(traj, model=None).save(tmp_path / "run.npz")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("fields, words", [
    ({"x": "abc"}, "array 'x' must have shape"),
    ({"t": np.zeros(3)}, "'t' must be strictly increasing"),
    ({"energy": np.array([1.0, np.nan, 2.0])}, "'energy' must be finite"),
])
def test_save_refuses_what_load_would_refuse_before_writing(tmp_path, traj, fields, words):
    with pytest.raises(ValueError, match="cannot be saved, it would not load back: .*" + words):
        _replace(traj, **fields).save(tmp_path / "run.npz")
    assert list(tmp_path.iterdir()) == []


def test_a_symlink_into_a_missing_folder_never_names_the_temporary_file(tmp_path, traj):
    link = tmp_path / "run.npz"
    link.symlink_to(tmp_path / "gone" / "run.npz")
    with pytest.raises(ValueError) as info:
        traj.save(link)
    assert ".tmp" not in str(info.value) and "gone" in str(info.value)
