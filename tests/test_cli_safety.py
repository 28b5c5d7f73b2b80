"""The usaav-edu command: flags checked before the run, the result saved first, every failure one line."""

import os
import pathlib
import select
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu import cli
from usaav_edu.cli import main

TINY = ["simulate", "--n", "8", "--tau", "0.2", "--frames", "3"]
ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture
def no_run(monkeypatch):
    """Make any attempt to integrate fail the test: the flags must be refused before the run."""
    def ran(*args, **kwargs):
        raise AssertionError("the run started before the flags were checked")

    monkeypatch.setattr(cli, "simulate", ran)


def one_line(text):
    lines = text.splitlines()
    assert len(lines) == 1, text
    return lines[0]


# ---------------------------------------------------------------------- --out
def test_out_is_written_to_exactly_the_path_given_before_the_summary(tmp_path, capsys):
    path = tmp_path / "run.dat"
    assert main(TINY + ["--out", str(path)]) == 0
    out = capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.dat"]
    assert out.splitlines()[0] == f"wrote {path}"
    assert out.index("wrote") < out.index("final energy")
    assert ue.Trajectory.load(path).n == 8


@pytest.mark.parametrize("kind", ["directory", "trailing separator", "empty", "missing folder"])
def test_out_that_names_no_writable_file_is_refused_before_the_run(tmp_path, capsys, no_run, kind):
    out = {"directory": str(tmp_path), "trailing separator": str(tmp_path / "new") + os.sep, "empty": "",
           "missing folder": str(tmp_path / "no" / "run.npz")}[kind]
    assert main(TINY + ["--out", out]) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith("usaav-edu: error: --out")
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------- numeric flags
BAD_FLAGS = [
    (["--n", "0"], "--n"), (["--d", "1"], "--d"), (["--beta", "-1"], "--beta"), (["--beta", "nan"], "--beta"),
    (["--beta", "inf"], "--beta"), (["--model", "rope", "--omega", "nan"], "--omega"),
    (["--model", "prefix_gauge", "--prompts", "0"], "--prompts"),
    (["--model", "distance_bias", "--lam", "-1"], "--lam"), (["--model", "distance_bias", "--lam", "inf"], "--lam"),
    (["--tau", "0"], "--tau"), (["--tau", "inf"], "--tau"), (["--dt", "0"], "--dt"), (["--dt", "nan"], "--dt"),
    (["--frames", "1"], "--frames"), (["--max-steps", "0"], "--max-steps"), (["--seed", "-1"], "--seed"),
    (["--tol", "0"], "--tol"),
    (["--tol", "nan"], "--tol"), (["--method", "dopri5", "--rtol", "0"], "--rtol"),
    (["--method", "dopri5", "--atol=-1e-9"], "--atol"), (["--method", "dopri5", "--rtol", "nan"], "--rtol"),
]


@pytest.mark.parametrize("flags, name", BAD_FLAGS, ids=[" ".join(f) for f, _ in BAD_FLAGS])
def test_every_numeric_flag_is_checked_before_the_run(capsys, no_run, flags, name):
    assert main(TINY + flags) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith(f"usaav-edu: error: {name} must")


IGNORED = [
    (["--model", "generalized_rope", "--d", "7"], "--d 7: the generalized_rope experiment runs in d = 4 only"),
    (["--model", "usa", "--omega", "2"], "--omega has no effect on the usa experiment"),
    (["--model", "rope", "--lam", "2"], "--lam has no effect on the rope experiment"),
    (["--model", "sa", "--prompts", "3"], "--prompts has no effect on the sa experiment"),
    (["--model", "cosine_bias", "--beta", "3"], "--beta has no effect on the cosine_bias experiment"),
    (["--rtol", "1e-4"], "--rtol applies to --method dopri5 only"),
]


@pytest.mark.parametrize("flags, words", IGNORED, ids=[" ".join(f) for f, _ in IGNORED])
def test_a_flag_the_experiment_ignores_is_refused(capsys, no_run, flags, words):
    assert main(TINY + flags) == 2
    assert words in one_line(capsys.readouterr().err)


def test_generalized_rope_accepts_its_own_dimension(tmp_path):
    assert main(TINY + ["--model", "generalized_rope", "--d", "4", "--out", str(tmp_path / "g.npz")]) == 0
    assert ue.Trajectory.load(tmp_path / "g.npz").d == 4


def test_rtol_and_atol_reach_dopri5(tmp_path):
    path = tmp_path / "run.npz"
    assert main(TINY + ["--method", "dopri5", "--rtol", "1e-5", "--atol", "1e-7", "--out", str(path)]) == 0
    traj = ue.Trajectory.load(path)
    assert (traj.method, traj.rtol, traj.atol) == ("dopri5", 1e-5, 1e-7)


def test_max_steps_reaches_simulate(capsys, monkeypatch):
    seen = {}

    def record(*args, **kwargs):
        seen.update(kwargs)
        raise ue.IntegrationError("stopped here")

    monkeypatch.setattr(cli, "simulate", record)
    assert main(TINY + ["--max-steps", "12"]) == 1
    assert seen["max_steps"] == 12
    assert one_line(capsys.readouterr().err) == "usaav-edu: error: stopped here"


# ---------------------------------------------------------------------- failures
def test_a_failing_summary_loses_nothing(tmp_path, capsys, monkeypatch):
    def no_memory(*args, **kwargs):
        raise MemoryError("Unable to allocate 18.6 GiB for an array with shape (50000, 50000)")

    monkeypatch.setattr(ue.diagnostics, "summary", no_memory)
    path = tmp_path / "run.npz"
    assert main(TINY + ["--out", str(path)]) == 1
    captured = capsys.readouterr()
    assert f"wrote {path}" in captured.out
    line = one_line(captured.err)
    assert line.startswith("usaav-edu: error: out of memory")
    assert f"saved to {path}" in line
    assert np.all(np.isfinite(ue.Trajectory.load(path).x))


FAILURES = [
    (ue.IntegrationError("the state became non-finite after t = 3"), 1, "usaav-edu: error: the state became"),
    (MemoryError(), 1, "usaav-edu: error: out of memory"),
    (OSError(28, "No space left on device"), 1, "usaav-edu: error: [Errno 28] No space left on device"),
    (KeyboardInterrupt(), 130, "usaav-edu: interrupted"),
]


@pytest.mark.parametrize("exc, code, words", FAILURES, ids=[type(f[0]).__name__ for f in FAILURES])
def test_a_failed_run_is_one_line_on_stderr(capsys, monkeypatch, exc, code, words):
    def fails(*args, **kwargs):
        sys.stderr.write("\r[#####                         ]  17.0%     1.2s")  # a progress bar mid-line
        raise exc

    monkeypatch.setattr(cli, "simulate", fails)
    try:
        assert main(TINY) == code
    except KeyboardInterrupt:  # escaping main, it would stop pytest itself
        pytest.fail("KeyboardInterrupt escaped main")
    err = capsys.readouterr().err
    bar, line = err.split("\n", 1)
    assert bar.startswith("\r[#####")
    assert one_line(line).startswith(words)


def test_a_failed_save_is_one_line_on_stderr(tmp_path, capsys, monkeypatch):
    def disk_full(self, path):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ue.Trajectory, "save", disk_full)
    path = tmp_path / "run.npz"
    assert main(TINY + ["--out", str(path)]) == 1
    captured = capsys.readouterr()
    assert "wrote" not in captured.out
    assert one_line(captured.err) == (f"usaav-edu: error: the run finished but could not be written to {path}: "
                                      f"[Errno 28] No space left on device")


def test_ctrl_c_ends_a_real_run_with_one_line(tmp_path):
    """SIGINT to a running ``usaav-edu simulate``: exit status 130, one line, no traceback."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    # a run of many short frames (about 20 s if left alone): the interrupt is handled between frames
    args = [sys.executable, "-m", "usaav_edu.cli", "simulate", "--n", "400", "--tau", "2000", "--frames", "2001",
            "--out", str(tmp_path / "run.npz")]
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # the progress bar appears once the run has lasted a second: the run is under way
        first = b""
        deadline = time.monotonic() + 300
        while not first and time.monotonic() < deadline and proc.poll() is None:
            ready, _, _ = select.select([proc.stderr], [], [], 1.0)
            if ready:
                first = os.read(proc.stderr.fileno(), 4096)
        assert first, "the run printed no progress"
        proc.send_signal(signal.SIGINT)
        out, rest = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    err = (first + rest).decode()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    lines = [ln for ln in err.split("\n") if ln and not ln.startswith("\r")]
    assert lines == ["usaav-edu: interrupted"]
    assert not (tmp_path / "run.npz").exists() and list(tmp_path.iterdir()) == []
