"""The browser integrator of the live views, _static/live/usaav_live.mjs, held to the package.

The module is run in node (tests/js/run_live.mjs) on cases that usaav_edu generates, for each of
its six models in d = 2 and 3:

* at equal steps it returns the frames of ``ue.simulate(..., method="rk4", dt=dt)`` to 1e-10;
* at its default step it returns the accurate solution (Dormand-Prince at rtol 1e-13) to 1e-8;
* its two step rules are the package's formulas;
* bad options are refused with an error naming the option, and so is a run that would take too
  long or a step beyond RK4's stability bound;
* the module is under 50 kB.
"""
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu.particles.solver import default_dt

ROOT = Path(__file__).resolve().parents[1]
MODULE = ROOT / "_static" / "live" / "usaav_live.mjs"
RUNNER = ROOT / "tests" / "js" / "run_live.mjs"
N = 12


def node():
    path = shutil.which("node")
    assert path, "node is needed to test the browser integrator (it comes with npm, make widget-js)"
    return path


def run(cases, tmp_path):
    """The module's results for ``cases`` ({"call", "opts"} dicts), in order."""
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"cases": cases}), encoding="utf-8")
    out = subprocess.run([node(), str(RUNNER), str(path), str(MODULE)], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, f"node failed: {out.stderr[-2000:]}"
    return json.loads(out.stdout)["results"]


def frames(d, seed=0):
    """Three orthogonal frames of R^d, one a reflection."""
    f = ue.sphere.random_frames(3, d, seed=seed)
    f[2] = f[2] @ np.diag([-1.0] + [1.0] * (d - 1))
    return f


def case(name, d, beta=1.0, seed=0):
    """(package model, labels, module options) for one of the module's models."""
    x0 = ue.sphere.uniform(N, d, seed=seed)
    pos = np.linspace(0.0, 2.5, N)
    opts = {"model": name, "d": d, "beta": beta, "x0": x0.tolist(), "xi": None}
    if name == "usa":
        return ue.models.usa(beta), None, opts
    if name == "sa":
        return ue.models.sa(beta), None, opts
    if name == "rope":
        opts.update(xi=pos.tolist(), omegas=[1.3])
        return ue.models.rope(beta=beta, omegas=(1.3,), d=d), pos, opts
    if name == "distance_bias":
        opts.update(xi=pos.tolist(), lam=0.7)
        return ue.models.distance_bias(beta=beta, lam=0.7), pos, opts
    if name == "cosine_bias":
        opts.update(xi=pos.tolist(), omega=1.6)
        return ue.models.cosine_bias(beta, omega=1.6), pos, opts
    ids = np.arange(N) % 3
    f = frames(d, seed)
    opts.update(xi=ids.tolist(), gaugeFrames=f.tolist())
    return ue.models.prefix_gauge(beta, frames=f), ids, opts


MODELS = ["usa", "sa", "rope", "distance_bias", "cosine_bias", "prefix_gauge"]
GRID = [(name, d) for name in MODELS for d in (2, 3)]


def test_at_equal_steps_the_module_returns_the_packages_rk4_frames(tmp_path):
    cases, expected = [], []
    for k, (name, d) in enumerate(GRID):
        beta = (0.8, 1.5, -0.6)[k % 3]
        model, xi, opts = case(name, d, beta=beta, seed=k)
        opts.update(tMax=2.0, nFrames=5, dt=0.07)
        cases.append({"call": "simulate", "opts": opts})
        expected.append(ue.simulate(model, np.array(opts["x0"]), xi, t_max=2.0, dt=0.07,
                                    n_frames=5, method="rk4"))
    for (name, d), got, tr in zip(GRID, run(cases, tmp_path), expected, strict=True):
        assert "error" not in got, (name, d, got)
        x = np.array(got["value"]["x"])
        assert x.shape == tr.x.shape == (5, N, d)
        assert got["value"]["t"] == pytest.approx(tr.t, abs=1e-15)
        assert got["value"]["dt"] == pytest.approx(tr.dt, rel=1e-15)
        gap = np.abs(x - tr.x).max()
        assert gap < 1e-10, f"{name}, d = {d}: the module is {gap:.1e} from the package"
        assert np.abs(x[-1] - x[0]).max() > 1e-2, f"{name}, d = {d}: the tokens did not move"


def test_at_its_default_step_the_module_returns_the_accurate_solution(tmp_path):
    cases, expected = [], []
    for k, (name, d) in enumerate(GRID):
        model, xi, opts = case(name, d, beta=(1.0, 2.0)[k % 2], seed=10 + k)
        opts.update(tMax=3.0, nFrames=4)
        cases.append({"call": "simulate", "opts": opts})
        expected.append(ue.simulate(model, np.array(opts["x0"]), xi, t_max=3.0, n_frames=4,
                                    method="dopri5", rtol=1e-13, atol=1e-15))
    for (name, d), got, tr in zip(GRID, run(cases, tmp_path), expected, strict=True):
        assert "error" not in got, (name, d, got)
        gap = np.abs(np.array(got["value"]["x"]) - tr.x).max()
        assert gap < 1e-8, f"{name}, d = {d}: {gap:.1e} from the accurate solution"


def test_the_step_rules_are_the_packages(tmp_path):
    cases, book = [], []
    for name, d in GRID:
        for beta in (0.5, 2.0):
            model, xi, opts = case(name, d, beta=beta)
            opts.update(tMax=1.0)
            cases += [{"call": "bookDt", "opts": opts}, {"call": "defaultDt", "opts": opts}]
            book.append(default_dt(model, xi))
    got = run(cases, tmp_path)
    for k, step in enumerate(book):
        assert got[2 * k]["value"] == pytest.approx(step, rel=1e-14)
        # the module's own default: a fifth of the package's, at most 0.01
        assert got[2 * k + 1]["value"] == pytest.approx(min(0.01, step / 5), rel=1e-14)


BAD = [
    ({"model": "gpt"}, "model must be one of usa, sa, rope"),
    ({"d": 4}, "d must be 2 or 3"),
    ({"x0": [[1.0, 0.0, 0.0], [0.6, 0.6, 0.0]]}, "x0[1] must be a unit vector"),
    ({"x0": [[1.0, 0.0]]}, "x0[0] must have 3 numbers"),
    ({"tMax": -1.0}, "tMax must be > 0"),
    ({"nFrames": 1}, "nFrames must be an integer >= 2"),
    ({"beta": "1"}, 'beta must be a finite number, got "1"'),
    ({"xi": [0.0]}, 'xi must be null for model "usa"'),
    ({"model": "rope", "omegas": [1.0]}, "xi must be an array of 2 labels"),
    ({"model": "rope", "xi": [0.0, 1.0]}, "omegas must be an array of one frequency"),
    ({"model": "prefix_gauge", "xi": [0, 1], "gaugeFrames": [np.eye(3).tolist()]},
     "xi[1] must be a prompt id, an integer from 0 to 0"),
    ({"model": "prefix_gauge", "xi": [0, 0], "gaugeFrames": [[[1, 0, 0], [0, 1, 0], [0, 1, 1]]]},
     "gaugeFrames[0] must be orthogonal"),
    ({"model": "distance_bias", "xi": [0.0, 1.0], "lam": -1.0}, "lam must be >= 0"),
    ({"model": "sa", "profile": "linear"}, 'model "sa" has the exponential profile only'),
    ({"speed": 2}, 'unknown option "speed"'),
    ({"beta": 4.0, "dt": 0.05}, "beyond RK4's stability bound"),
    ({"tMax": 1e7, "dt": 0.01, "x0": ue.sphere.uniform(256, 3, seed=0).tolist()},
     "pair evaluations, about"),
]


def test_bad_options_are_refused_naming_the_option(tmp_path):
    base = {"model": "usa", "d": 3, "beta": 1.0, "x0": [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
            "xi": None, "tMax": 1.0, "nFrames": 3}
    cases = [{"call": "simulate", "opts": {**base, **change}} for change, _ in BAD]
    for (change, message), got in zip(BAD, run(cases, tmp_path), strict=True):
        assert "error" in got, f"{change} was accepted"
        assert message in got["error"], (change, got["error"])
        assert got["error"].startswith("usaav_live: ")


def test_the_module_is_small_and_standalone():
    text = MODULE.read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) < 50_000
    assert "import " not in text.replace("import(", "")  # nothing to fetch: it runs from file://
