"""Sweeps on Dask (usaav_edu.sweep and ``usaav-edu sweep``).

* A sweep on a local cluster of two worker processes gives, bit for bit, what a serial loop of
  ``setup``, ``simulate`` and the diagnostics gives; the phase diagram as a sweep is
  ``spectral.phase_diagram``.
* A failing grid point is recorded (NaN and its message) and the others are kept.
* The store: after the command is killed part-way, the same command runs only the missing points
  (counted by the session number that the store records for every point); Ctrl-C is one line
  naming the points kept; a store made with other arguments is refused, naming what differs.
* A real ``dask scheduler`` with two ``dask worker`` processes on 127.0.0.1 gives the result of
  the local cluster.
* A script with a sweep at its top level (no ``if __name__ == "__main__":``) runs once: the
  local cluster's workers do not import it again.
* A malformed ``--grid``, ``--set`` or ``--scheduler`` is one line naming the flag.
"""
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zarr

import usaav_edu as ue
from usaav_edu import diagnostics, experiments, spectral
from usaav_edu.cli.command import sweep_table
from usaav_edu.sweep import FINAL, stored_points

ROOT = Path(__file__).resolve().parents[1]
ENV = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


@pytest.fixture(scope="module")
def client():
    """One local cluster of two single-threaded workers for the tests that pass a client."""
    from usaav_edu.sweep.run import _local_cluster

    c, cluster = _local_cluster(2)
    yield c
    c.close()
    cluster.close()


@pytest.mark.slow
def test_a_sweep_at_the_top_level_of_a_script_runs_once(tmp_path):
    # the script imports a set-up of its own from a module beside it, and is run from another
    # folder: the workers find that module (they get the caller's sys.path)
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "mysetup.py").write_text(
        "from usaav_edu import experiments\n\n"
        "def cell(seed):\n"
        "    return experiments.setup('usa', n=8, seed=seed)\n")
    (folder / "plain.py").write_text(
        "import usaav_edu as ue\n"
        "import mysetup\n"
        "print('top level', flush=True)\n"
        "ds = ue.sweep('usa', {'seed': [0, 1]}, n=8, t_max=1.0, n_frames=3, workers=2,\n"
        "              progress=False)\n"
        "print('usa', ds['energy'].values.tolist())\n"
        "own = ue.sweep(mysetup.cell, {'seed': [0, 1]}, t_max=1.0, n_frames=3, workers=2,\n"
        "               progress=False)\n"
        "print('own', own['energy'].values.tolist(), own['error'].values.tolist())\n")
    run = subprocess.run([sys.executable, str(folder / "plain.py")], cwd=tmp_path, env=ENV,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr and "Nanny failed" not in run.stderr, run.stderr
    energies = [_serial("usa", 1.0, {"n": 8, "seed": s}, n_frames=3)[1]["energy"] for s in (0, 1)]
    assert run.stdout.splitlines() == ["top level", f"usa {energies}", f"own {energies} ['', '']"]


def test_a_worker_that_cannot_start_is_one_line_not_a_hang(monkeypatch, capsys):
    from usaav_edu.cli import main

    monkeypatch.setattr(sys.modules["usaav_edu.sweep.run"], "_WORKER_PROCESS",
                        "import sys; sys.exit(7)")
    assert main(["sweep", "--experiment", "usa", "--grid", "seed=0:2", "--n", "8",
                     "--t-max", "1", "--workers", "1"]) == 1
    assert capsys.readouterr().err == ("usaav-edu: error: a worker of the local cluster exited "
                                       "with status 7 before it connected (its messages are "
                                       "on stderr)\n")


def test_distributed_stays_silent_until_the_local_cluster_is_closed(monkeypatch):
    """Closing the cluster's last comms logs at INFO; in a notebook that is a line of output.

    ``_run_on`` makes, uses and closes the local cluster; its handlers must be silent throughout
    and restored after.  With a client of the caller's, their levels are the caller's.
    """
    import logging

    sweep_module = sys.modules["usaav_edu.sweep.run"]
    handler = logging.StreamHandler()
    handler.setLevel(logging.INFO)
    logging.getLogger("distributed").addHandler(handler)
    seen = []

    def run_on(client, workers, task, todo, on_result, progress):
        seen.append((client, handler.level))
        return {}

    monkeypatch.setattr(sweep_module, "_run_on", run_on)
    try:
        ue.sweep("usa", {"seed": [0]}, t_max=0.5, n=8, n_frames=3, progress=False)
        assert handler.level == logging.INFO
        ue.sweep("usa", {"seed": [0]}, t_max=0.5, n=8, n_frames=3, progress=False,
                 client="tcp://127.0.0.1:8786")
    finally:
        logging.getLogger("distributed").removeHandler(handler)
    assert seen == [(None, logging.CRITICAL), ("tcp://127.0.0.1:8786", logging.INFO)]
    assert handler.level == logging.INFO


def _serial(name, t_max, keywords, **solver):
    model, x0, xi = experiments.setup(name, **keywords)
    traj = ue.simulate(model, x0, xi, t_max=t_max, **solver)
    return traj, diagnostics.summary(traj)


@pytest.mark.slow
def test_local_cluster_equals_the_serial_loop_bit_for_bit():
    grid = {"beta": [0.5, 2.0], "seed": [0, 1, 2]}
    ds = ue.sweep("rope", grid, t_max=3.0, n=24, n_frames=7, time_series=True, workers=2,
                  progress=False)
    assert list(ds.sizes.items()) == [("beta", 2), ("seed", 3), ("time", 7)]
    assert list(ds["energy"].dims) == ["beta", "seed"]
    for beta in grid["beta"]:
        for seed in grid["seed"]:
            traj, s = _serial("rope", 3.0, {"n": 24, "beta": beta, "seed": seed}, n_frames=7)
            point = ds.sel(beta=beta, seed=seed)
            for name, value in s.items():
                assert point[name].item() == value, (name, beta, seed)
            assert np.array_equal(point["energy_series"].values, traj.energy)
            clusters = [diagnostics.cluster_count(x, 1e-3) for x in traj.x]
            assert np.array_equal(point["clusters_series"].values, clusters)
            assert point["phase"].item() == spectral.classify(traj.final)
            assert point["error"].item() == ""
    assert ds.attrs["experiment"] == "rope" and ds.attrs["version"] == ue.__version__
    assert '"t_max": 3.0' in ds.attrs["sweep_arguments"]


@pytest.mark.slow
def test_the_set_ups_beyond_the_papers_model_sweep_their_new_parameters(client):
    ds = ue.sweep("attention", {"qkv_seed": [0, 1], "beta": [0.5, 1.0]}, t_max=2.0, n=12,
                  n_frames=3, client=client, progress=False)
    causal = ue.sweep("causal", {"lam": [0.0, 2.0]}, t_max=2.0, n=12, n_frames=3,
                      client=client, progress=False)
    for q in (0, 1):
        for beta in (0.5, 1.0):
            _, s = _serial("attention", 2.0, {"n": 12, "beta": beta, "qkv_seed": q}, n_frames=3)
            assert ds.sel(qkv_seed=q, beta=beta)["energy"].item() == s["energy"]
    assert ds.sel(qkv_seed=0, beta=1.0)["energy"].item() != ds.sel(qkv_seed=1,
                                                                 beta=1.0)["energy"].item()
    for lam in (0.0, 2.0):
        _, s = _serial("causal", 2.0, {"n": 12, "lam": lam}, n_frames=3)
        assert causal.sel(lam=lam)["spread"].item() == s["spread"]
    assert (causal["error"] == "").all()


@pytest.mark.slow
def test_the_noisy_phase_diagram_orders_below_the_critical_noise_only(client):
    from usaav_edu.sweep import critical_noise, noise_phase_diagram

    sigma_c = critical_noise(1.0)
    assert sigma_c == pytest.approx(np.sqrt(2 * 0.5651591039924851), rel=1e-12)  # I_1(1)
    ds = noise_phase_diagram([1.0], [0.3 * sigma_c, 2.0 * sigma_c], seeds=[0, 1], n=64,
                             t_max=15.0, dt=0.02, client=client, progress=False)
    order = ds.order.mean("seed")
    assert order.sel(beta=1.0, noise=0.3 * sigma_c).item() > 0.8
    assert order.sel(beta=1.0, noise=2.0 * sigma_c).item() < 0.35
    model, x0, _ = experiments.setup("usa", n=64, d=2, beta=1.0, seed=1)
    serial = ue.simulate(model, x0, t_max=15.0, dt=0.02, n_frames=2, method="heun",
                         noise=0.3 * sigma_c, seed=1)
    assert ds.order.sel(beta=1.0, noise=0.3 * sigma_c, seed=1).item() == float(
        np.linalg.norm(serial.final.mean(axis=0)))
    with pytest.raises(ValueError, match="method='heun'"):
        ue.sweep("usa", {"noise": [0.0, 0.5]}, t_max=1.0)
    with pytest.raises(ValueError, match="noise"):
        ue.sweep("usa", {"noise": [-0.5]}, t_max=1.0, method="heun")


def _cell(bias, omega, beta, n, d, seed):
    return (spectral.bias_model(bias, omega, beta), ue.sphere.uniform(n, d, seed=seed),
            spectral.circle_positions(n))


@pytest.mark.slow
def test_the_phase_diagram_as_a_sweep_is_the_serial_phase_diagram(client):
    rows = spectral.phase_diagram(biases=("distance", "cosine"), omegas=(0.5, 2.0),
                                  betas=(0.0, 1.0), n=12, d=3, t_max=5.0, seed=3)
    ds = ue.sweep(_cell, {"bias": ["distance", "cosine"], "omega": [0.5, 2.0],
                          "beta": [0.0, 1.0]}, fixed={"n": 12, "d": 3, "seed": 3}, t_max=5.0,
                  method="dopri5", n_frames=2, client=client, progress=False,
                  extra={"winding": lambda tr: spectral.winding_number(tr.final, tr.xi)})
    assert len(rows) == ds["energy"].size == 8
    for r in rows:
        cell = ds.sel(bias=r["bias"], omega=r["omega"], beta=r["beta"])
        for name in ("energy", "energy_bound", "spread", "winding"):
            assert cell[name].item() == r[name], (name, r)
        assert cell["phase"].item() == r["phase"]


@pytest.mark.slow
def test_a_failing_point_is_recorded_and_the_others_are_kept(client, tmp_path):
    # beta = 60 is refused by simulate's work estimate (about 1e24 RK4 steps)
    store = tmp_path / "f.zarr"
    ds = ue.sweep("usa", {"beta": [1.0, 60.0]}, t_max=1.0, n=8, client=client,
                  progress=False, store=store)
    bad, good = ds.sel(beta=60.0), ds.sel(beta=1.0)
    assert "RK4 steps" in bad["error"].item()
    assert all(np.isnan(bad[name].item()) for name in FINAL)
    assert good["error"].item() == ""
    _, s = _serial("usa", 1.0, {"n": 8, "beta": 1.0})
    assert good["energy"].item() == s["energy"] and good["clusters"].item() == s["clusters"]
    # the failure is the point's result: finished, stored, not run again (no scheduler is
    # asked: nothing listens at this address)
    again = ue.sweep("usa", {"beta": [1.0, 60.0]}, t_max=1.0, n=8, store=store,
                     client="tcp://127.0.0.1:9")
    assert again.identical(ds)


@pytest.mark.slow
def test_t_max_may_depend_on_the_point(client):
    ds = ue.sweep("sa", {"beta": [1.0, 3.0]}, t_max=lambda beta, **_: 2.0 * beta, n=8, d=2,
                  method="dopri5", n_frames=5, client=client, progress=False,
                  extra={"t_end": lambda tr: tr.t[-1]})
    assert ds["t_end"].values.tolist() == [2.0, 6.0]
    _, s = _serial("sa", 6.0, {"n": 8, "d": 2, "beta": 3.0}, method="dopri5", n_frames=5)
    assert ds["energy"].sel(beta=3.0).item() == s["energy"]
    assert ds.attrs["t_max"].startswith("per point: ")
    with pytest.raises(ValueError, match="time_series=True needs one t_max"):
        ue.sweep("sa", {"beta": [1.0]}, t_max=lambda beta, **_: beta, time_series=True)


def test_bad_arguments_are_refused_before_anything_runs(tmp_path):
    with pytest.raises(ValueError, match="'omega' has no effect on the usa experiment"):
        ue.sweep("usa", {"omega": [1.0]}, t_max=1.0)
    with pytest.raises(ValueError, match=r"grid\['seed'\] holds a value twice"):
        ue.sweep("usa", {"seed": [1, 1]}, t_max=1.0)
    with pytest.raises(ValueError, match="t_max"):
        ue.sweep("usa", {"seed": [1]}, t_max=-1.0)
    with pytest.raises(TypeError, match="experiment does not accept"):
        ue.sweep(_cell, {"lam": [1.0]}, t_max=1.0)
    with pytest.raises(ValueError, match="'beta' is both a grid key and a fixed keyword"):
        ue.sweep("usa", {"beta": [1.0]}, fixed={"beta": 2.0}, t_max=1.0)
    (tmp_path / "other").mkdir()
    with pytest.raises(ValueError, match="not the store of a sweep"):
        ue.sweep("usa", {"seed": [1]}, t_max=1.0, store=tmp_path / "other")


@pytest.mark.slow
def test_a_store_made_with_other_arguments_is_refused(tmp_path, client):
    store = tmp_path / "s.zarr"
    first = ue.sweep("usa", {"beta": [1.0, 2.0]}, t_max=1.0, n=8, store=store, client=client,
                     progress=False)
    assert stored_points(store) == (2, 2)
    with pytest.raises(ValueError, match=r"t_max: 1.0 in the store, 2.0 now"):
        ue.sweep("usa", {"beta": [1.0, 2.0]}, t_max=2.0, n=8, store=store, client=client)
    with pytest.raises(ValueError, match=r"grid: .*\[1.0, 3.0\]\]\] now"):
        ue.sweep("usa", {"beta": [1.0, 3.0]}, t_max=1.0, n=8, store=store, client=client)
    with pytest.raises(ValueError, match=r"fixed.n: 8 in the store, 9 now"):
        ue.sweep("usa", {"beta": [1.0, 2.0]}, t_max=1.0, n=9, store=store, client=client)
    # the same arguments: nothing runs (no scheduler is asked: nothing listens at this address),
    # and the same Dataset comes back
    again = ue.sweep("usa", {"beta": [1.0, 2.0]}, t_max=1.0, n=8, store=store,
                     client="tcp://127.0.0.1:9")
    assert again.identical(first)


# ------------------------------------------------------------------------------ the command line
SWEEP = ["sweep", "--experiment", "rope", "--grid", "beta=1,2", "--grid", "seed=0:12",
         "--n", "160", "--t-max", "30", "--n-frames", "31"]


def _start(args):
    return subprocess.Popen([sys.executable, "-m", "usaav_edu.cli", *args], cwd=ROOT, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)


def _stop_when_stored(proc, store, at_least, sig):
    """Wait until the store has ``at_least`` finished points, then send ``sig`` to the group."""
    deadline = time.monotonic() + 120
    while stored_points(store)[0] < at_least:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no points were stored"
        time.sleep(0.05)
    os.killpg(proc.pid, sig)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out.decode(), err.decode()


def _group_is_gone(pid):
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.slow
def test_a_killed_sweep_resumes_with_only_the_missing_points(tmp_path):
    store = tmp_path / "rope.zarr"
    args = [*SWEEP, "--store", str(store), "--workers", "2"]
    total = 24
    proc = _start(args)
    try:
        # killed outright (SIGKILL to the command and its workers, no clean-up) part-way
        code, _, err = _stop_when_stored(proc, store, 2, signal.SIGKILL)
        assert code == -signal.SIGKILL
        killed = stored_points(store)[0]
        assert 2 <= killed < total, "the sweep finished before it was killed"
        deadline = time.monotonic() + 30
        while not _group_is_gone(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        proc = _start(args)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 0, err
    assert f"{total} points, {total - killed} run now, {killed} from the store" in out.decode()
    session = np.asarray(zarr.open_group(str(store), mode="r", zarr_format=2)["session"][...])
    # every point was written once: by the killed run or by the second one
    assert np.bincount(session.ravel(), minlength=3).tolist() == [0, killed, total - killed]
    ds = xr.open_zarr(store).load()
    assert (ds["error"] == "").all() and np.isfinite(ds["energy"]).all()
    for beta, seed in ((1.0, 0), (2.0, 11)):
        _, s = _serial("rope", 30.0, {"n": 160, "beta": beta, "seed": seed}, n_frames=31)
        assert ds["spread"].sel(beta=beta, seed=seed).item() == s["spread"]


@pytest.mark.slow
def test_ctrl_c_is_one_line_naming_the_points_kept(tmp_path, monkeypatch, capsys, client):
    """The command's answer to Ctrl-C in the middle of a sweep (the workers ignore it)."""
    from usaav_edu.cli import main

    sweep_module = sys.modules["usaav_edu.sweep.run"]
    real = sweep_module._run

    def interrupted(_, workers, task, todo, on_result, progress):
        real(client, workers, task, todo[:3], on_result, progress)  # three points finish
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_module, "_run", interrupted)
    store = tmp_path / "usa.zarr"
    args = ["sweep", "--experiment", "usa", "--grid", "seed=0:8", "--n", "8", "--t-max", "1",
            "--store", str(store), "--workers", "1"]
    assert main(args) == 130
    err = capsys.readouterr().err
    assert [ln for ln in err.split("\n") if ln] == [
        f"usaav-edu: interrupted; 3 of 8 points are kept in {store}; run the same command "
        f"again to run only the others"]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_a_real_scheduler_and_two_workers_give_the_local_result(tmp_path, client):
    dask = str(Path(sys.executable).parent / "dask")
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = dict(ENV, NUMBA_NUM_THREADS="1")
    procs = []
    try:
        procs.append(subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port",
                                       str(port), "--no-dashboard"], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for _ in range(2):
            procs.append(subprocess.Popen([dask, "worker", address, "--nthreads", "1",
                                           "--host", "127.0.0.1", "--no-dashboard"], env=env,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        from dask.distributed import Client

        with Client(address, timeout="60s") as c:
            c.wait_for_workers(2, timeout=120)
            assert len(c.scheduler_info()["workers"]) == 2
        args = ["sweep", "--experiment", "distance_bias", "--grid", "lam=0.5,2",
                "--grid", "seed=0:3", "--n", "20", "--t-max", "5"]
        remote = subprocess.run([sys.executable, "-m", "usaav_edu.cli", *args, "--store",
                                 str(tmp_path / "remote.zarr"), "--scheduler", address],
                                cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
        assert remote.returncode == 0, remote.stderr
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    assert all(p.poll() is not None for p in procs)
    assert "6 points, 6 run now, 0 from the store" in remote.stdout
    a = xr.open_zarr(tmp_path / "remote.zarr").load().drop_vars(["session", "checksum"])
    a = a.assign({name: a[name].astype(object) for name in ("phase", "error")})
    b = ue.sweep("distance_bias", {"lam": [0.5, 2.0], "seed": [0, 1, 2]}, n=20, t_max=5.0,
                 client=client, progress=False)
    assert a.identical(b) and (a["error"] == "").all()
    assert remote.stdout.endswith(sweep_table(b) + "\n")


@pytest.mark.parametrize("flags, message", [
    (["--grid", "seed=0:4:0"], "--grid 'seed=0:4:0': the step must not be zero"),
    (["--grid", "seed=0:x"], "--grid 'seed=0:x': the stop 'x' is not an integer"),
    (["--grid", "seed=0:4:1:2"], "--grid 'seed=0:4:1:2': start:stop[:step] is for the integer"),
    (["--grid", "seed=0:1000000000"], "--grid 'seed=0:1000000000': 1000000000 values, more than"),
    (["--grid", "seed=0,1,0"], "--grid 'seed=0,1,0': 0 is given twice"),
    (["--grid", "seed=-1,2"], "--grid seed: -1 is below 0"),
    (["--grid", "beta=1,nan"], "--grid beta: 'nan' is not a finite number"),
    (["--grid", "beta=1e400"], "--grid beta: '1e400' is not a finite number"),
    (["--grid", "omega=1"], "--grid omega: the usa experiment does not read omega"),
    (["--grid", "n=4,8", "--n", "8"], "--n and --grid n both give n; give it once"),
    (["--grid", "seed=0:2", "--set", "beta=inf"], "--set beta: 'inf' is not a finite number"),
    (["--grid", "seed=0:2", "--set", "lam=1"], "--set lam: the usa experiment does not read lam"),
    (["--grid", "seed=0:2", "--scheduler", "host:notaport"],
     "--scheduler 'host:notaport': give an address like tcp://HOST:8786"),
    (["--grid", "seed=0:2", "--scheduler", "tcp://host:notaport"],
     "--scheduler 'tcp://host:notaport': the port 'notaport' is not a number from 1 to 65535"),
    (["--grid", "seed=0:2", "--scheduler", "tcp://127.0.0.1:99999"],
     "--scheduler 'tcp://127.0.0.1:99999': the port '99999' is not a number from 1 to 65535"),
    (["--grid", "seed=0:2", "--scheduler", "tcp://:8786"],
     "--scheduler 'tcp://:8786': give an address like tcp://HOST:8786"),
    (["--grid", "seed=0:2", "--scheduler", "foo://127.0.0.1:8786"],
     "--scheduler 'foo://127.0.0.1:8786': give an address like tcp://HOST:8786"),
])
def test_a_malformed_flag_of_the_sweep_is_one_line_naming_it(flags, message, capsys):
    from usaav_edu.cli import main

    assert main(["sweep", "--experiment", "usa", "--t-max", "1", *flags]) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.split("\n") if ln]
    assert len(lines) == 1 and lines[0].startswith("usaav-edu: error: " + message), err


def test_a_scheduler_address_the_api_cannot_parse_names_the_client():
    with pytest.raises(ValueError, match=r"client 'tcp://host:notaport' is not a scheduler "
                                         r"address"):
        ue.sweep("usa", {"seed": [0]}, n=8, t_max=1.0, client="tcp://host:notaport")
