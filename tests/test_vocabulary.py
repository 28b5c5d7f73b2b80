"""One vocabulary: beta first in the constructors, cluster_tol for the cluster tolerance.

The old positional orders and the old keyword still work for one release: each warns with a
DeprecationWarning and keeps its old meaning; the old and the new spelling together is a
TypeError.
"""

import inspect
import warnings

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu.analysis import reductions

models = ue.models
dg = ue.diagnostics
X = ue.sphere.uniform(12, 3, seed=0)


def quietly(call):
    """``call()`` with no warning allowed: a call in the new vocabulary does not warn."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return call()


# ------------------------------------------------------------------ constructors, new order
def test_the_constructors_take_beta_first_and_the_rest_by_keyword():
    assert list(inspect.signature(models.cosine_bias).parameters) == ["beta", "omega", "profile",
                                                                      "layer_norm"]
    assert inspect.signature(models.cosine_bias).parameters["omega"].kind is inspect.Parameter.KEYWORD_ONLY
    assert inspect.signature(models.distance_bias).parameters["lam"].kind is inspect.Parameter.KEYWORD_ONLY
    for f in (models.usa, models.sa, models.rope, models.standard_rope, models.prefix_gauge,
              models.prefix_gauge_from_targets, models.distance_bias, models.cosine_bias):
        assert next(iter(inspect.signature(f).parameters)) == "beta", f.__name__


def test_calls_in_the_new_order_do_not_warn_and_mean_what_they_say():
    m = quietly(lambda: models.cosine_bias(1.5, omega=2.0, profile="exp"))
    assert (m.bias.omega, m.beta) == (2.0, 1.5)
    assert quietly(lambda: models.cosine_bias(omega=3.0)).bias.omega == 3.0
    m = quietly(lambda: models.distance_bias(2.0, lam=0.5))
    assert (m.beta, m.bias.lam) == (2.0, 0.5)
    assert quietly(lambda: models.distance_bias(2.0)).beta == 2.0
    assert quietly(lambda: models.usa(1.0)).beta == 1.0
    assert quietly(lambda: models.sa(2.0)).beta == 2.0
    m = quietly(lambda: models.rope(1.0, (1.0,), 3))
    assert (m.gauge.omegas, m.gauge.d) == ((1.0,), 3)
    assert quietly(lambda: models.rope(1.0, (1.0,), 3, rotate_values=False)).name == "rope_unrotated_values"
    frames = ue.sphere.random_frames(2, 3, seed=0)
    assert quietly(lambda: models.prefix_gauge(1.0, frames)).gauge.frames.shape == (2, 3, 3)
    m = quietly(lambda: models.standard_rope(0.5, d=8))
    assert (m.beta, m.gauge.d) == (0.5, 8)
    targets = np.eye(3)[:2]
    assert quietly(lambda: models.prefix_gauge_from_targets(2.0, targets=targets)).beta == 2.0


# ------------------------------------------------------------------ constructors, old order
@pytest.mark.parametrize("call,expected", [
    (lambda: models.cosine_bias(2.0, 1.5), {"omega": 2.0}),
    (lambda: models.cosine_bias(2.0, 1.5, "exp"), {"omega": 2.0, "beta": 1.5}),
    (lambda: models.cosine_bias(3.0), {"omega": 3.0}),
    (lambda: models.cosine_bias(3.0, beta=1.5, profile="exp"), {"omega": 3.0, "beta": 1.5}),
    (lambda: models.distance_bias(1.0, 0.5), {"lam": 0.5, "beta": 1.0}),
    (lambda: models.standard_rope(8, beta=0.5), {"d": 8, "beta": 0.5}),
    (lambda: models.standard_rope(8), {"d": 8, "beta": 1.0}),
])
def test_an_old_positional_order_warns_and_keeps_its_old_meaning(call, expected):
    with pytest.warns(DeprecationWarning, match="by position is deprecated"):
        m = call()
    if "beta" in expected:  # (the linear profile has no beta)
        assert m.beta == expected["beta"]
    if "omega" in expected:
        assert m.bias.omega == expected["omega"]
    if "lam" in expected:
        assert m.bias.lam == expected["lam"]
    if "d" in expected:
        assert m.gauge.d == expected["d"]


def test_the_warning_shows_the_call_with_keywords():
    with pytest.warns(DeprecationWarning, match=r"write cosine_bias\(omega=\.\.\., beta=\.\.\.\)"):
        models.cosine_bias(2.0, 1.0)
    with pytest.warns(DeprecationWarning, match=r"write distance_bias\(beta=\.\.\., lam=\.\.\.\)"):
        models.distance_bias(1.0, 0.5)


def test_a_profile_by_position_warns_and_is_still_the_profile():
    with pytest.warns(DeprecationWarning, match=r"usa\(beta, profile\)"):
        assert models.usa(1.0, "linear").linear
    with pytest.warns(DeprecationWarning, match="profile"):
        assert models.rope(1.0, (1.0,), 3, "linear").linear
    with pytest.warns(DeprecationWarning, match="rotate_values"):
        assert models.rope(1.0, (1.0,), 3, "exp", False).name == "rope_unrotated_values"
    with pytest.warns(DeprecationWarning, match="profile"):
        assert models.prefix_gauge(1.0, ue.sphere.random_frames(2, 3, seed=0), "linear").linear


def test_prefix_gauge_from_targets_in_the_old_order():
    targets, u = np.eye(3)[:2], np.eye(3)[2]
    with pytest.warns(DeprecationWarning, match="by position is deprecated"):
        old = models.prefix_gauge_from_targets(targets, 2.0, u)
    new = quietly(lambda: models.prefix_gauge_from_targets(2.0, targets=targets, u=u))
    assert old.beta == new.beta == 2.0
    assert np.array_equal(old.gauge.frames, new.gauge.frames)


def test_an_argument_given_by_position_and_by_keyword_is_a_type_error():
    with pytest.raises(TypeError, match="omega both by position and by keyword"):
        models.cosine_bias(2.0, 1.0, omega=3.0)
    with pytest.raises(TypeError, match="lam both by position and by keyword"):
        models.distance_bias(1.0, 0.5, lam=0.5)
    with pytest.raises(TypeError, match="takes at most 3 positional arguments, got 6"):
        models.rope(1.0, (1.0,), 3, "exp", True, 1)


# ------------------------------------------------------------------ cluster_tol
TRAJ = ue.simulate(ue.models.usa(1.0), X, None, t_max=0.5, n_frames=3)


@pytest.mark.parametrize("f,arg", [(dg.clusters, X), (dg.cluster_count, X), (dg.summary, TRAJ),
                                   (reductions.cluster_staircase, TRAJ)])
def test_the_cluster_tolerance_is_cluster_tol(f, arg):
    assert "cluster_tol" in inspect.signature(f).parameters
    assert "tol" not in inspect.signature(f).parameters
    with pytest.raises(ValueError, match="cluster_tol must be > 0"):
        f(arg, cluster_tol=0.0)


@pytest.mark.parametrize("f,arg", [(dg.clusters, X), (dg.cluster_count, X), (dg.summary, TRAJ),
                                   (reductions.cluster_staircase, TRAJ)])
def test_tol_for_the_cluster_tolerance_warns_and_still_works(f, arg):
    # 2.1 links every pair of unit vectors, 1e-9 none of these random points
    for value in (2.1, 1e-9):
        with pytest.warns(DeprecationWarning, match=r"tol=\.\.\.\) is deprecated.*cluster_tol="):
            old = f(arg, tol=value)
        new = quietly(lambda value=value: f(arg, cluster_tol=value))
        if isinstance(new, dict):
            assert old == new
        else:
            assert np.array_equal(old, new)
    with pytest.warns(DeprecationWarning):
        assert dg.cluster_count(X, tol=2.1) == 1
    with pytest.warns(DeprecationWarning):
        assert dg.cluster_count(X, tol=1e-9) == len(X)


@pytest.mark.parametrize("f,arg", [(dg.clusters, X), (dg.cluster_count, X), (dg.summary, TRAJ),
                                   (reductions.cluster_staircase, TRAJ)])
def test_tol_and_cluster_tol_together_are_a_type_error(f, arg):
    with pytest.raises(TypeError, match="both cluster_tol= and its deprecated spelling tol="):
        f(arg, tol=1e-3, cluster_tol=1e-3)


# ------------------------------------------------------------------ sweep
def unrotated(seed):
    """A set-up where fast summation does not apply (values are not rotated)."""
    return (models.rope(1.0, (1.0,), 3, rotate_values=False), ue.sphere.uniform(8, 3, seed=seed),
            np.arange(8.0))


def test_sweep_takes_simulate_s_names_and_cluster_tol():
    names = inspect.signature(ue.sweep).parameters
    solver = inspect.signature(ue.simulate).parameters
    for name in ("t_max", "method", "dt", "n_frames", "rtol", "atol", "max_steps", "summation"):
        assert name in names
        if name != "t_max":  # (every sweep gives its own)
            assert names[name].default == solver[name].default, name
    assert "cluster_tol" in names and "summation_tol" in names and "tol" not in names
    assert names["cluster_tol"].default == inspect.signature(dg.summary).parameters["cluster_tol"].default


def test_sweep_refuses_bad_summation_settings_and_tol_with_cluster_tol():
    with pytest.raises(ValueError, match="summation must be one of"):
        ue.sweep("usa", {"seed": [0]}, t_max=1.0, summation="exact")
    with pytest.raises(ValueError, match="summation_tol must be below 1"):
        ue.sweep("usa", {"seed": [0]}, t_max=1.0, summation_tol=1.5)
    with pytest.raises(TypeError, match="both cluster_tol= and its deprecated spelling tol="):
        ue.sweep("usa", {"seed": [0]}, t_max=1.0, tol=1e-3, cluster_tol=1e-3)


@pytest.fixture(scope="module")
def client():
    from usaav_edu.sweep.run import _local_cluster

    c, cluster = _local_cluster(1)
    yield c
    c.close()
    cluster.close()


def test_sweep_passes_summation_to_simulate(client):
    ds = ue.sweep(unrotated, {"seed": [0]}, t_max=0.5, n_frames=3, summation="fast",
                  client=client, progress=False)
    assert "summation='fast' does not apply" in ds["error"].item()
    ds = ue.sweep(unrotated, {"seed": [0]}, t_max=0.5, n_frames=3, summation="direct",
                  client=client, progress=False)
    assert ds["error"].item() == ""
    assert ds.attrs["summation"] == "direct" and ds.attrs["summation_tol"] == 1e-10


def test_sweep_tol_warns_and_is_the_cluster_tolerance(client):
    # 2.1 links every pair of unit vectors: one cluster, whatever the run
    with pytest.warns(DeprecationWarning, match=r"sweep\(tol=\.\.\.\) is deprecated"):
        old = ue.sweep("usa", {"seed": [0, 1]}, t_max=0.5, n=8, n_frames=3, tol=2.1,
                       client=client, progress=False)
    new = quietly(lambda: ue.sweep("usa", {"seed": [0, 1]}, t_max=0.5, n=8, n_frames=3,
                                   cluster_tol=2.1, client=client, progress=False))
    assert old["clusters"].values.tolist() == new["clusters"].values.tolist() == [1.0, 1.0]
    assert old.attrs["cluster_tol"] == 2.1 and "tol" not in old.attrs


# ------------------------------------------------------------------ command line
def _cli():
    import importlib

    return importlib.import_module("usaav_edu.cli.command")


def _deprecations(err):
    return [line for line in err.splitlines() if "deprecated" in line]


def test_the_old_flags_print_a_deprecation_line_and_keep_their_meaning(capsys):
    main = _cli().main
    assert main(["simulate", "--n", "8", "--t-max", "0.2", "--n-frames", "3",
                 "--cluster-tol", "2.1"]) == 0
    new = capsys.readouterr()
    assert main(["simulate", "--n", "8", "--tau", "0.2", "--frames", "3", "--tol", "2.1"]) == 0
    old = capsys.readouterr()
    assert old.out == new.out
    assert "t_max 0.2" in new.out and "clusters       1 (cluster_tol 2.1)" in new.out
    assert _deprecations(new.err) == []
    assert _deprecations(old.err) == [
        "usaav-edu: deprecated: --tau is now --t-max (--tau goes in the next release)",
        "usaav-edu: deprecated: --frames is now --n-frames (--frames goes in the next release)",
        "usaav-edu: deprecated: --tol is now --cluster-tol (--tol goes in the next release)"]


def test_an_old_flag_is_read_into_the_new_one():
    import io

    cli = _cli()
    a = cli._parser().parse_args(["simulate", "--tau", "3", "--frames", "7", "--tol", "0.5"])
    err = io.StringIO()
    cli.resolve_deprecated_flags(a, err)
    assert (a.t_max, a.n_frames, a.cluster_tol) == (3.0, 7, 0.5)
    assert len(_deprecations(err.getvalue())) == 3
    a = cli._parser().parse_args(["simulate"])
    cli.resolve_deprecated_flags(a, err)
    assert (a.t_max, a.n_frames, a.cluster_tol) == (20.0, 101, 1e-3)


@pytest.mark.parametrize("old,new", [("--tau", "--t-max"), ("--frames", "--n-frames"),
                                     ("--tol", "--cluster-tol")])
@pytest.mark.parametrize("command", [["simulate", "--n", "8"], ["sweep", "--experiment", "usa", "--grid", "seed=0:2"]])
def test_a_flag_in_both_spellings_is_refused(capsys, command, old, new):
    assert _cli().main([*command, old, "3", new, "3"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"usaav-edu: error: {old} is the deprecated spelling of {new}; give {new} only")


def test_the_sweep_command_takes_the_new_flags_and_the_old_ones():
    import contextlib
    import io

    cli = _cli()
    base = ["sweep", "--experiment", "usa", "--grid", "seed=0:2"]
    a = cli._parser().parse_args([*base, "--t-max", "1", "--n-frames", "3", "--cluster-tol",
                                  "0.1", "--summation", "direct"])
    _, _, new = cli.sweep_settings(a)
    assert {k: new[k] for k in ("t_max", "n_frames", "cluster_tol", "summation")} == {
        "t_max": 1.0, "n_frames": 3, "cluster_tol": 0.1, "summation": "direct"}
    a = cli._parser().parse_args([*base, "--tau", "1", "--frames", "3", "--tol", "0.1",
                                  "--summation", "direct"])
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        _, _, old = cli.sweep_settings(a)
    assert old == new and len(_deprecations(err.getvalue())) == 3
    a = cli._parser().parse_args([*base, "--t-max", "1", "--summation-tol", "1e-8"])
    assert cli.sweep_settings(a)[2]["summation_tol"] == 1e-8
    a = cli._parser().parse_args([*base, "--t-max", "1", "--summation", "direct",
                                  "--summation-tol", "1e-8"])
    with pytest.raises(ValueError, match="--summation-tol applies to --summation fast or auto"):
        cli.sweep_settings(a)


@pytest.mark.parametrize("command", ["simulate", "sweep"])
def test_the_help_names_the_new_flags_and_marks_the_old_ones(command, capsys):
    with pytest.raises(SystemExit):
        _cli()._parser().parse_args([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for flag in ("--t-max", "--n-frames", "--summation", "--summation-tol", "--cluster-tol"):
        assert flag + " " in text, flag
    for old, new in (("--tau", "--t-max"), ("--frames", "--n-frames"), ("--tol", "--cluster-tol")):
        assert f"{old} {new.strip('-').replace('-', '_').upper()} deprecated spelling of {new}" in text
