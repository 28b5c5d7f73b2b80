"""The usaav-edu command: flags checked before the run, the result saved first, every failure one line."""

import os
import pathlib
import select
import signal
import stat
import subprocess
import sys
import time

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu.cli import command as cli
from usaav_edu.cli import main

TINY = ["simulate", "--n", "8", "--t-max", "0.2", "--n-frames", "3"]
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
    (["--n", "0"], "--n"), (["--d", "1"], "--d"), (["--beta", "nan"], "--beta"),
    (["--beta", "inf"], "--beta"), (["--model", "rope", "--omega", "nan"], "--omega"),
    (["--model", "prefix_gauge", "--prompts", "0"], "--prompts"),
    (["--model", "distance_bias", "--lam", "-1"], "--lam"), (["--model", "distance_bias", "--lam", "inf"], "--lam"),
    (["--t-max", "0"], "--t-max"), (["--t-max", "inf"], "--t-max"), (["--dt", "0"], "--dt"), (["--dt", "nan"], "--dt"),
    (["--n-frames", "1"], "--n-frames"), (["--max-steps", "0"], "--max-steps"), (["--seed", "-1"], "--seed"),
    (["--cluster-tol", "0"], "--cluster-tol"),
    (["--cluster-tol", "nan"], "--cluster-tol"), (["--method", "dopri5", "--rtol", "0"], "--rtol"),
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


def test_noise_without_heun_or_below_zero_is_refused_before_the_run(capsys, no_run):
    assert main(TINY + ["--noise", "0.5"]) == 2
    assert "--noise needs --method heun" in capsys.readouterr().err
    assert main(TINY + ["--method", "heun", "--noise", "-1"]) == 2
    assert "--noise must be >= 0" in capsys.readouterr().err


def test_a_noisy_run_is_saved_with_its_noise_and_seed(tmp_path):
    path = tmp_path / "noisy.npz"
    assert main(TINY + ["--method", "heun", "--noise", "0.5", "--seed", "3", "--out",
                        str(path)]) == 0
    traj = ue.Trajectory.load(path)
    assert (traj.method, traj.noise, traj.seed) == ("heun", 0.5, 3)


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
    args = [sys.executable, "-m", "usaav_edu.cli", "simulate", "--n", "400", "--t-max", "2000", "--n-frames", "2001",
            "--out", str(tmp_path / "run.npz")]
    # the command starts as from a shell, with Ctrl-C's default disposition (a test process may
    # have SIGINT ignored, which a child would inherit, and Python then installs no handler)
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        # the progress bar appears once the run has lasted a second: the run is under way (a
        # cold cache first says that the kernels compile; that line is not the run's progress)
        first = b""
        deadline = time.monotonic() + 300
        while b"%|" not in first and time.monotonic() < deadline and proc.poll() is None:
            ready, _, _ = select.select([proc.stderr], [], [], 1.0)
            if ready:
                first += os.read(proc.stderr.fileno(), 4096)
        assert b"%|" in first, f"the run printed no progress: {first!r}"
        proc.send_signal(signal.SIGINT)
        out, rest = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    err = (first + rest).decode()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    lines = [ln for ln in err.split("\n")
             if ln and not ln.startswith("\r") and not ln.startswith("usaav_edu: compiling")]
    assert lines == ["usaav-edu: interrupted"]
    assert not (tmp_path / "run.npz").exists() and list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------- --out: checked before the run
@pytest.fixture
def fenced(tmp_path, monkeypatch):
    """Fail the test if anything is renamed into place outside ``tmp_path`` (never onto a device)."""
    root = tmp_path.resolve()
    real = os.replace

    def guarded(src, dst, *args, **kwargs):
        dst_path = pathlib.Path(os.path.abspath(os.fspath(dst)))
        if dst_path != root and root not in dst_path.parents:
            raise AssertionError(f"os.replace onto {dst!r}, outside the test's folder")
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", guarded)
    return tmp_path


def _fifo(path):
    os.mkfifo(path)


def _dev_null(path):
    path.symlink_to("/dev/null")


def _read_only(path):
    path.write_bytes(b"an earlier result")
    path.chmod(0o444)


def _into_missing_folder(path):
    path.symlink_to(path.parent / "gone" / "run.npz")


OUT_TARGETS = [(_fifo, "FIFO"), (_dev_null, "character device"), (_read_only, "read-only"),
               (_into_missing_folder, "link into the folder")]


@pytest.mark.parametrize("make, words", OUT_TARGETS, ids=[w for _, w in OUT_TARGETS])
def test_out_that_is_not_a_writable_regular_file_is_refused_before_the_run(fenced, capsys, no_run,
                                                                           make, words):
    path = fenced / "run.npz"
    make(path)
    before = os.lstat(path)
    assert main(TINY + ["--out", str(path)]) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith(f"usaav-edu: error: --out {str(path)!r}") and words in line
    after = os.lstat(path)
    assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_out_with_a_250_character_name_is_saved(fenced, capsys):
    path = fenced / ("r" * 246 + ".npz")
    assert main(TINY + ["--out", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"wrote {path}"
    assert [p.name for p in fenced.iterdir()] == [path.name]
    assert ue.Trajectory.load(path).n == 8


def test_out_with_a_name_too_long_for_the_folder_is_refused_before_the_run(fenced, capsys, no_run):
    path = fenced / ("r" * (os.pathconf(fenced, "PC_NAME_MAX") + 1))
    assert main(TINY + ["--out", str(path)]) == 2
    assert "the file name is" in one_line(capsys.readouterr().err)


def test_out_without_room_for_the_file_is_refused_before_the_run(fenced, capsys, no_run, full_disk):
    assert main(TINY + ["--out", str(fenced / "run.npz")]) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith("usaav-edu: error: --out") and "free" in line


# ---------------------------------------------------------------------- work estimates
@pytest.fixture
def caps(monkeypatch):
    """Caps independent of the machine: 8 GiB of memory, an hour."""
    monkeypatch.setattr(cli, "MEMORY_CAP", 8 * 2 ** 30)
    monkeypatch.setattr(cli, "SECONDS_CAP", 3600.0)


@pytest.fixture
def no_bench(monkeypatch):
    """Make any measurement fail the test: the bench must be refused before it allocates."""
    from usaav_edu.cli import bench

    def ran(*args, **kwargs):
        raise AssertionError("the bench started before its cost was checked")

    for name in ("report", "fast_report", "measure", "fast_measure"):
        monkeypatch.setattr(bench, name, ran)


TOO_LARGE = [
    (["--model", "prefix_gauge", "--n", "4", "--prompts", "1e8"], "--prompts 100000000", "43.2 GB"),
    (["--n", "1e20"], "--n 100000000000000000000", "TB"),
    (["--n", "4", "--d", "100000000000000000000"], "--d 100000000000000000000", "TB"),
    (["--n-frames", "1e20"], "--n-frames 100000000000000000000", "TB"),
]


@pytest.mark.parametrize("flags, names, size", TOO_LARGE, ids=[" ".join(f) for f, _, _ in TOO_LARGE])
def test_a_run_beyond_the_memory_cap_is_refused_before_anything_is_allocated(capsys, no_run, caps,
                                                                             monkeypatch, flags,
                                                                             names, size):
    def allocated(*args, **kwargs):
        raise AssertionError("the experiment was set up before its cost was checked")

    monkeypatch.setattr(cli.experiments, "setup", allocated)
    assert main(TINY + flags) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith("usaav-edu: error: --") and names in line and size in line
    assert "more than the cap of 8.59 GB" in line


def test_drawing_too_many_prompt_frames_is_refused_by_its_time(capsys, no_run, monkeypatch):
    monkeypatch.setattr(cli, "SECONDS_CAP", 1.0)
    monkeypatch.setattr(cli, "MEMORY_CAP", 2 ** 40)
    assert main(TINY + ["--model", "prefix_gauge", "--prompts", "1000000"]) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith("usaav-edu: error: --prompts 1000000: drawing the prompt frames would "
                           "take about 20 s, more than the cap of 1 s")


def test_the_memory_estimate_bounds_a_real_run():
    """simulate_work counts the frames: 8 F n d bytes at least, and the prompt frames."""
    run, frames, seconds = cli.simulate_work(1000, 3, 101, 50)
    assert run >= 8 * 101 * 1000 * 3 and frames >= cli.FRAME_BYTES * 50 * 9 + 8 * 1000 * 9
    assert seconds == pytest.approx(50 * (cli.FRAME_SECONDS + cli.QR_SECONDS * 27))
    assert cli.simulate_work(1000, 3, 101)[1:] == (0, 0.0)


BENCH_TOO_LARGE = [(["--n", "1e8"], "--n 100000000", "n x n"),
                   (["--n", "256", "--fast-n", "1e10"], "--fast-n 10000000000", "memory")]


@pytest.mark.parametrize("flags, names, words", BENCH_TOO_LARGE,
                         ids=[" ".join(f) for f, _, _ in BENCH_TOO_LARGE])
def test_a_bench_beyond_the_memory_cap_is_refused_before_it_allocates(capsys, caps, no_bench, flags,
                                                                      names, words):
    assert main(["bench", *flags]) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith(f"usaav-edu: error: {names}: the measurement would take about")
    assert words in line


def test_a_bench_beyond_the_time_cap_is_refused_with_the_estimate(capsys, no_bench, monkeypatch):
    monkeypatch.setattr(cli, "SECONDS_CAP", 1.0)
    assert main(["bench", "--n", "4096", "--repeats", "9", "--no-fast"]) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith("usaav-edu: error: --n 4096 --repeats 9: the bench would take about")
    assert "more than the cap of 1 s" in line


def test_bench_costs_grow_with_the_work():
    from usaav_edu.cli import bench

    small, large = bench.measure_cost(256, 9), bench.measure_cost(4096, 9)
    assert large[0] >= 8 * 2 * 4096 ** 2 and large[1] > small[1]
    assert bench.measure_cost(4096, 20)[1] > large[1]
    fast = bench.fast_measure_cost(10 ** 6, 5)
    assert fast[0] >= 8 * 10 ** 6 * 3


# ---------------------------------------------------------------------- argparse: one line
PARSE_ERRORS = [
    (["simulate", "--n", "abc"], "argument --n: 'abc' is not an integer"),
    (["simulate", "--n", "1.5"], "argument --n: '1.5' is not an integer"),
    (["simulate", "--beta", "x"], "argument --beta"),
    (["simulate", "--model", "gpt"], "argument --model: invalid choice: 'gpt'"),
    (["simulate", "--bogus"], "unrecognized arguments: --bogus"),
    (["simulate", "--n"], "argument --n: expected one argument"),
    (["bench", "--repeats", "many"], "argument --repeats"),
    (["frobnicate"], "argument command: invalid choice"),
    ([], "the following arguments are required: command"),
]


@pytest.mark.parametrize("argv, words", PARSE_ERRORS, ids=[" ".join(a) or "none" for a, _ in PARSE_ERRORS])
def test_a_malformed_command_line_is_one_line_with_exit_status_2(capsys, no_run, argv, words):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    captured = capsys.readouterr()
    line = one_line(captured.err)
    assert line.startswith(f"usaav-edu: error: {words}") and line.endswith("lists the flags)")
    assert captured.out == ""


def test_integer_flags_accept_exact_integers_in_either_notation():
    a = cli._parser().parse_args(["simulate", "--n", "1e5", "--n-frames", "2E1", "--seed", "7"])
    assert (a.n, a.n_frames, a.seed) == (100000, 20, 7)
    assert isinstance(a.n, int)


def test_help_still_prints_the_usage(capsys):
    with pytest.raises(SystemExit) as info:
        main(["simulate", "--help"])
    assert info.value.code == 0 and "--out" in capsys.readouterr().out


# ---------------------------------------------------------------------- messages name the flags
@pytest.mark.parametrize("flags, words", [
    (["--beta", "800"], "beta must be <= 700"),
    (["--beta=-800"], "beta must be >= -700"),
    (["--model", "rope", "--d", "5"], "d must be 3 or even"),
])
def test_a_refusal_by_the_model_names_the_flag(capsys, no_run, flags, words):
    assert main(TINY + flags) == 2
    line = one_line(capsys.readouterr().err)
    assert words in line and line.endswith(f"(on the command line: {words.split()[0]} is "
                                           f"--{words.split()[0]})")


def test_a_refusal_by_simulate_names_the_flags(capsys):
    assert main(TINY + ["--t-max", "1e300"]) == 2
    line = one_line(capsys.readouterr().err)
    assert "t_max is --t-max" in line and "max_steps is --max-steps" in line


def test_with_flags_leaves_a_message_without_keywords_alone():
    assert cli.with_flags("the energy fell") == "the energy fell"
    assert cli.with_flags("n must be >= 1") == "n must be >= 1 (on the command line: n is --n)"
    assert "d is" not in cli.with_flags("an integer of d digits")


def test_a_target_that_changed_during_the_run_is_reported_as_a_lost_save(fenced, capsys, monkeypatch):
    """--out was a new name when checked; a FIFO took it while the run went on."""
    path = fenced / "run.npz"
    real = cli.simulate

    def run_then_block_the_name(*args, **kwargs):
        traj = real(*args, **kwargs)
        os.mkfifo(path)
        return traj

    monkeypatch.setattr(cli, "simulate", run_then_block_the_name)
    assert main(TINY + ["--out", str(path)]) == 1
    line = one_line(capsys.readouterr().err)
    assert line.startswith(f"usaav-edu: error: the run finished but could not be written to {path}: ")
    assert "FIFO" in line and stat.S_ISFIFO(os.lstat(path).st_mode)


@pytest.mark.parametrize("out, words", [("a\0b", "must not contain a NUL character"),
                                        ("FILE/run.npz", "is not a folder")])
def test_out_that_no_file_can_have_is_refused_naming_the_flag(tmp_path, capsys, no_run, out, words):
    (tmp_path / "FILE").write_text("")
    assert main(TINY + ["--out", out.replace("FILE", str(tmp_path / "FILE"))]) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith("usaav-edu: error: --out") and words in line


@pytest.mark.parametrize("argv", [[1, 2], "simulate --n 4"])
def test_main_refuses_argv_that_is_not_a_list_of_words(argv):
    with pytest.raises(TypeError, match="argv must be a list of strings"):
        main(argv)
