"""Where a trajectory is saved and what it is loaded from: regular files only, checked first.

Every save test runs inside a fence: the save may create or replace files only in the test's
own folder, so a save that follows a link to ``/dev/null`` fails the test instead of replacing
the device.  Every load of a FIFO runs in a thread with a timeout, so an open that blocks fails
the test instead of hanging the suite.
"""

import os
import pathlib
import stat
import tempfile
import threading
import zipfile

import numpy as np
import pytest

import usaav_edu as ue
from usaav_edu.particles import trajectory

INVALID = "not a valid usaav-edu trajectory"


@pytest.fixture(scope="module")
def traj():
    model, x0, xi = ue.experiments.setup("rope", n=5, d=3, seed=2)
    return ue.simulate(model, x0, xi, t_max=0.5, n_frames=3, seed=2)


@pytest.fixture
def fence(tmp_path, monkeypatch):
    """Fail the test if anything is created or renamed into place outside ``tmp_path``."""
    root = tmp_path.resolve()

    def inside(path):
        path = pathlib.Path(os.path.abspath(os.fspath(path)))
        return path == root or root in path.parents

    for name in ("replace", "rename"):
        real = getattr(os, name)

        def guarded(src, dst, *args, _real=real, _name=name, **kwargs):
            if not inside(dst):
                raise AssertionError(f"os.{_name} onto {dst!r}, outside the test's folder")
            return _real(src, dst, *args, **kwargs)

        monkeypatch.setattr(os, name, guarded)
    real_mkstemp = tempfile.mkstemp

    def mkstemp(*args, dir=None, **kwargs):
        if dir is None or not inside(dir):
            raise AssertionError(f"a temporary file in {dir!r}, outside the test's folder")
        return real_mkstemp(*args, dir=dir, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    return tmp_path


def finishes(fn, timeout=30.0, unblock=None):
    """Run ``fn()`` in a thread; its exception or result, or AssertionError if it blocks."""
    box = {}

    def run():
        try:
            box["result"] = fn()
        except BaseException as exc:  # handed back to the test
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        if unblock is not None:
            unblock()
            thread.join(timeout)
        raise AssertionError(f"still blocked after {timeout} s")
    if "error" in box:
        raise box["error"]
    return box.get("result")


def writer_for(fifo):
    """Open and close ``fifo`` for writing: a reader blocked in its open sees end of file."""
    def unblock():
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            return
        os.close(fd)
    return unblock


def is_dev_null():
    st = os.stat("/dev/null")
    return stat.S_ISCHR(st.st_mode)


# ---------------------------------------------------------------------- saves
def test_save_refuses_a_fifo_and_leaves_it_in_place(fence, traj):
    fifo = fence / "run.npz"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="FIFO"):
        traj.save(fifo)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in fence.iterdir()) == ["run.npz"]


def test_save_refuses_a_link_to_dev_null_and_never_touches_the_device(fence, traj):
    link = fence / "run.npz"
    link.symlink_to("/dev/null")
    with pytest.raises(ValueError, match="character device"):
        traj.save(link)
    assert is_dev_null()
    assert link.is_symlink() and sorted(p.name for p in fence.iterdir()) == ["run.npz"]


def test_check_target_refuses_dev_null_itself(traj):
    with pytest.raises(ValueError, match="character device"):
        trajectory.check_target("/dev/null")
    assert is_dev_null()


def test_save_refuses_a_read_only_file_and_keeps_it(fence, traj):
    path = fence / "run.npz"
    path.write_bytes(b"an earlier result")
    path.chmod(0o444)
    with pytest.raises(ValueError, match="read-only"):
        traj.save(path)
    assert path.read_bytes() == b"an earlier result"
    assert sorted(p.name for p in fence.iterdir()) == ["run.npz"]


def test_a_250_character_name_is_saved(fence, traj):
    name = "r" * 246 + ".npz"
    traj.save(fence / name)
    assert [p.name for p in fence.iterdir()] == [name]
    assert np.array_equal(ue.Trajectory.load(fence / name).x, traj.x)


def test_a_name_longer_than_the_folder_allows_is_refused_before_writing(fence, traj):
    limit = os.pathconf(fence, "PC_NAME_MAX")
    with pytest.raises(ValueError, match=f"{limit + 1} bytes long, more than the {limit}"):
        trajectory.check_target(fence / ("r" * (limit + 1)))
    with pytest.raises(ValueError, match="bytes long"):
        traj.save(fence / ("r" * (limit + 1)))
    assert list(fence.iterdir()) == []


def test_the_temporary_name_is_short_whatever_the_target(fence, traj, monkeypatch):
    names = []
    real = os.replace

    def spy(src, dst):
        names.append(os.path.basename(src))
        return real(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    traj.save(fence / ("r" * 255))
    (tmp,) = names
    assert tmp.startswith(trajectory.TEMP_PREFIX) and len(tmp) == trajectory.TEMP_NAME_LENGTH


def test_a_link_into_a_missing_folder_is_refused_before_anything_is_written(fence, traj):
    link = fence / "run.npz"
    link.symlink_to(fence / "gone" / "run.npz")
    with pytest.raises(ValueError, match="link into the folder .* does not exist"):
        trajectory.check_target(link)
    with pytest.raises(ValueError, match="does not exist"):
        traj.save(link)
    assert sorted(p.name for p in fence.iterdir()) == ["run.npz"]


def test_a_loop_of_links_is_refused(fence, traj):
    (fence / "a").symlink_to("b")
    (fence / "b").symlink_to("a")
    with pytest.raises(ValueError, match="loop"):
        traj.save(fence / "a")


def test_a_link_to_a_regular_file_is_still_followed(fence, traj):
    (fence / "real.npz").write_bytes(b"old")
    (fence / "link.npz").symlink_to("real.npz")
    assert trajectory.check_target(fence / "link.npz") == str((fence / "real.npz").resolve())
    traj.save(fence / "link.npz")
    assert (fence / "link.npz").is_symlink()
    assert ue.Trajectory.load(fence / "real.npz").n == traj.n


def test_check_target_refuses_a_file_larger_than_the_free_space(fence):
    fs = os.statvfs(fence)
    free = fs.f_bavail * fs.f_frsize
    with pytest.raises(ValueError, match="free"):
        trajectory.check_target(fence / "run.npz", nbytes=free + 10 ** 12)
    assert trajectory.check_target(fence / "run.npz", nbytes=1) == str(fence / "run.npz")


def test_saved_bytes_bounds_the_file(fence, traj):
    traj.save(fence / "run.npz")
    size = (fence / "run.npz").stat().st_size
    assert size <= trajectory.saved_bytes(len(traj.t), traj.n, traj.d)


def test_a_socket_is_refused(fence, traj):
    import socket

    path = fence / "s"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        with pytest.raises(ValueError, match="socket"):
            traj.save(path)
    assert stat.S_ISSOCK(os.lstat(path).st_mode)


# ---------------------------------------------------------------------- loads
@pytest.fixture
def no_archive(monkeypatch):
    """Fail the test if the archive reader is reached: the file must be refused before reading."""
    def opened(*args, **kwargs):
        raise AssertionError("the file was read as an archive")

    monkeypatch.setattr(zipfile, "ZipFile", opened)


def test_load_refuses_a_fifo_without_blocking(tmp_path, no_archive):
    fifo = tmp_path / "run.npz"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match=INVALID + ".*FIFO"):
        finishes(lambda: ue.Trajectory.load(fifo), unblock=writer_for(fifo))


def test_load_refuses_a_link_to_dev_zero_before_reading(tmp_path, no_archive):
    link = tmp_path / "run.npz"
    link.symlink_to("/dev/zero")
    with pytest.raises(ValueError, match=INVALID + ".*character device"):
        finishes(lambda: ue.Trajectory.load(link, max_bytes=1000))


def test_load_refuses_a_directory(tmp_path):
    with pytest.raises(ValueError, match=INVALID + ".*directory"):
        ue.Trajectory.load(tmp_path)


def test_load_checks_the_open_file_too(tmp_path, monkeypatch, no_archive):
    """A FIFO that looked like a regular file when checked: the open does not block, the
    check on the open file refuses it."""
    fifo = tmp_path / "run.npz"
    os.mkfifo(fifo)
    regular = os.stat(__file__)
    real = os.stat

    def looks_regular(path, *args, **kwargs):
        return regular if os.fspath(path) == str(fifo) else real(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", looks_regular)
    with pytest.raises(ValueError, match=INVALID + ".*FIFO"):
        finishes(lambda: ue.Trajectory.load(fifo), unblock=writer_for(fifo))


def test_load_reads_a_regular_file_through_a_link(tmp_path, traj):
    traj.save(tmp_path / "real.npz")
    (tmp_path / "link.npz").symlink_to("real.npz")
    assert np.array_equal(ue.Trajectory.load(tmp_path / "link.npz").x, traj.x)


@pytest.mark.parametrize("path", [3, None, b"run.npz", ["run.npz"]])
def test_load_of_something_that_is_not_a_path_is_a_type_error(path):
    with pytest.raises(TypeError, match="path must be a file path"):
        ue.Trajectory.load(path)


def test_save_refuses_a_file_larger_than_the_free_space_before_writing(fence, traj, full_disk):
    with pytest.raises(ValueError, match="free"):
        traj.save(fence / "run.npz")
    assert list(fence.iterdir()) == []
