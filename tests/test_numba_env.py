"""The package imports and runs where no Numba cache folder can be written (a read-only install).

Numba caches compiled code in ``NUMBA_CACHE_DIR``, else in the ``__pycache__``
next to the source, else under ``HOME``.  When none of these can be created,
every ``cache=True`` function fails at import ("no locator available") unless
the package falls back to a temporary folder.  The test makes the situation
real (we may run as root, so permission bits would not stop a write): each of
the three folders lies below a regular file, in a copy of the package.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "usaav_edu"

SCRIPT = """
import json, os, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    import usaav_edu as ue
import numba
m = ue.models.usa(1.0)
traj = ue.simulate(m, ue.sphere.uniform(8, 3, seed=0), None, t_max=0.5, n_frames=3)
cache = numba.config.CACHE_DIR
print(json.dumps({
    "module": ue.__file__,
    "warnings": [str(w.message) for w in caught],
    "cache": cache,
    "cached_files": sum(len(files) for _, _, files in os.walk(cache)) if cache else 0,
    "finite": bool(abs(traj.x).max() <= 1.0),
}))
"""


def unwritable_install(root):
    """A copy of the package whose ``__pycache__`` folders are regular files, and a HOME that is a file."""
    site = root / "site"
    shutil.copytree(PACKAGE, site / "usaav_edu",
                    ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    for folder, _, files in os.walk(site):
        if "__init__.py" in files:
            (Path(folder) / "__pycache__").write_text("not a folder\n")
    blocker = root / "blocker"
    blocker.write_text("a regular file\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "XDG_"))}
    env.update(PYTHONPATH=str(site), PYTHONDONTWRITEBYTECODE="1", HOME=str(blocker),
               NUMBA_CACHE_DIR=str(blocker / "numba"), TMPDIR=str(root / "tmp"))
    (root / "tmp").mkdir()
    return site, env


@pytest.mark.slow
def test_import_falls_back_to_a_temporary_cache_folder(tmp_path):
    site, env = unwritable_install(tmp_path)
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(out["module"]).resolve().parent == (site / "usaav_edu").resolve()
    cache = Path(out["cache"])
    assert cache.parent == tmp_path / "tmp"  # a new folder in the temporary directory
    named = [w for w in out["warnings"] if str(cache) in w]
    assert len(named) == 1, out["warnings"]
    assert out["cached_files"] > 0  # the compiled functions were written there
    assert out["finite"]
    assert not cache.exists()  # removed when the process ended


def test_writable_cache_folder_gives_no_warning(tmp_path):
    site, env = unwritable_install(tmp_path)
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "cache")
    script = ("import warnings\nwarnings.simplefilter('error')\nimport usaav_edu, numba\n"
              "print(numba.config.CACHE_DIR)\n")
    done = subprocess.run([sys.executable, "-c", script], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == str(tmp_path / "cache")


def import_and_print(expr, env):
    done = subprocess.run([sys.executable, "-c", f"import usaav_edu, os, numba\nprint({expr})"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def test_idle_openmp_threads_sleep_unless_the_user_says_otherwise():
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    assert import_and_print("os.environ['OMP_WAIT_POLICY']", env) == "passive"
    env["OMP_WAIT_POLICY"] = "active"
    assert import_and_print("os.environ['OMP_WAIT_POLICY']", env) == "active"


def fake_files(monkeypatch, files):
    """Make ``open`` inside the package's ``__init__`` see exactly ``files`` (path -> text)."""
    import io

    import usaav_edu

    def fake_open(path, *args, **kwargs):
        if path not in files:
            raise FileNotFoundError(path)
        return io.StringIO(files[path])

    monkeypatch.setattr(usaav_edu, "open", fake_open, raising=False)
    return usaav_edu._cpu_quota


def test_cpu_quota_cgroup_v2(monkeypatch):
    files = {"/proc/self/cgroup": "0::/user.slice/job\n",
             "/sys/fs/cgroup/user.slice/job/cpu.max": "150000 100000\n"}
    assert fake_files(monkeypatch, files)() == 1  # 1.5 CPUs: one whole CPU
    files["/sys/fs/cgroup/user.slice/job/cpu.max"] = "400000 100000\n"
    assert fake_files(monkeypatch, files)() == 4
    files["/sys/fs/cgroup/user.slice/job/cpu.max"] = "max 100000\n"
    assert fake_files(monkeypatch, files)() is None


def test_cpu_quota_cgroup_v1(monkeypatch):
    files = {"/proc/self/cgroup": "5:memory:/x\n4:cpu,cpuacct:/docker/abc\n0::/\n",
             "/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "200000\n",
             "/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000\n"}
    assert fake_files(monkeypatch, files)() == 2
    files["/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us"] = "-1\n"
    assert fake_files(monkeypatch, files)() is None


def test_no_cgroup_information_means_no_quota(monkeypatch):
    assert fake_files(monkeypatch, {})() is None
    assert fake_files(monkeypatch, {"/proc/self/cgroup": "garbled\n0::/\n"})() is None


RUN = """
import usaav_edu as ue
m = ue.models.usa(1.0)
ue.simulate(m, ue.sphere.uniform(8, 3, seed=0), None, t_max=0.5, n_frames=3)
print("done")
"""


def _fresh_cache_env(cache, **extra):
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "USAAV_EDU_STATIC_PAGE")}
    env.update(NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(PACKAGE.parent), **extra)
    return env


@pytest.mark.slow
def test_a_cold_cache_says_once_that_the_kernels_compile(tmp_path):
    """First run of an installation: one line before the ~30 s of compiling; warm: silence."""
    import usaav_edu

    cache = tmp_path / "numba-cache"
    cache.mkdir()
    first = subprocess.run([sys.executable, "-c", RUN], env=_fresh_cache_env(cache), cwd=tmp_path,
                           capture_output=True, text=True, timeout=900)
    assert first.returncode == 0, first.stderr[-3000:]
    assert first.stderr.splitlines().count(usaav_edu.COMPILING) == 1, first.stderr[-3000:]
    assert first.stdout == "done\n", "the line goes to stderr: a program's stdout stays its own"
    again = subprocess.run([sys.executable, "-c", RUN], env=_fresh_cache_env(cache), cwd=tmp_path,
                           capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr[-3000:]
    assert usaav_edu.COMPILING not in again.stderr + again.stdout, "said again with a warm cache"


def test_the_books_pages_do_not_show_the_compiling_line(tmp_path):
    import usaav_edu

    cache = tmp_path / "numba-cache"
    cache.mkdir()
    done = subprocess.run([sys.executable, "-c", "import usaav_edu"], cwd=tmp_path,
                          env=_fresh_cache_env(cache, USAAV_EDU_STATIC_PAGE="1"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert usaav_edu.COMPILING not in done.stderr + done.stdout
    shown = subprocess.run([sys.executable, "-c", "import usaav_edu"], cwd=tmp_path,
                           env=_fresh_cache_env(cache), capture_output=True, text=True, timeout=300)
    assert usaav_edu.COMPILING in shown.stderr, "an empty cache must be told from a warm one"
