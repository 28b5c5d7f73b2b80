"""The store of a sweep is verified when it is read: a damaged point is run again, never counted.

* Every finished point carries the SHA-256 of its stored values.  A chunk deleted (it reads
  back as NaN), a flipped bit or a truncated chunk fails that check: ``stored_points`` does not
  count the point, and the resumed sweep runs it again (its session number shows the run) and
  returns what a clean run returns, with one warning naming the point.
* ``read_store`` gives the store as the sweep's Dataset, verified: a damaged point is an error
  naming it, a point not finished says so in ``error``.
* A store whose layout was edited (a variable's shape) is refused in one line naming the store
  and the variable; a store of the format without checksums is refused.
"""
import json
import os
import shutil
import sys

import numpy as np
import pytest
import zarr

import usaav_edu as ue
from usaav_edu.cli import main
from usaav_edu.sweep import point_checksum, read_store, stored_points

GRID = {"seed": [0, 1, 2]}
KW = {"t_max": 1.0, "n": 8, "n_frames": 3, "progress": False}
ARGS = ["sweep", "--experiment", "usa", "--grid", "seed=0:3", "--n", "8", "--t-max", "1",
        "--n-frames", "3"]


@pytest.fixture(scope="module")
def client():
    from usaav_edu.sweep.run import _local_cluster

    c, cluster = _local_cluster(1)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def clean(client, tmp_path_factory):
    """A finished store of three points and the Dataset of that clean run."""
    store = tmp_path_factory.mktemp("clean") / "clean.zarr"
    ds = ue.sweep("usa", GRID, store=store, client=client, **KW)
    return store, ds


def _copy(clean, tmp_path):
    store = tmp_path / "s.zarr"
    shutil.copytree(clean[0], store)
    return store


def _session(store):
    return np.asarray(zarr.open_group(str(store), mode="r", zarr_format=2)["session"][...])


def _use_client(monkeypatch, client):
    """Run the command's sweep on the test's cluster."""
    sweep_module = sys.modules["usaav_edu.sweep.run"]
    real = sweep_module._run
    monkeypatch.setattr(sweep_module, "_run", lambda _, *rest: real(client, *rest))


def test_the_checksum_is_of_the_values_and_the_index():
    point = {"energy": 0.5, "error": "", "session": 1, "energy_series": np.array([0.1, 0.2])}
    h = point_checksum((1,), point)
    assert h == point_checksum((1,), dict(point)) and len(h) == 64
    assert h != point_checksum((2,), point)  # the chunk of another point
    assert h != point_checksum((1,), {**point, "energy": np.nan})  # a deleted chunk
    assert h != point_checksum((1,), {**point, "energy": np.nextafter(0.5, 1.0)})  # one bit
    assert h != point_checksum((1,), {**point, "error": "x"})
    assert point_checksum((0,), {"a": float("nan")}) == point_checksum((0,), {"a": -np.nan})


@pytest.mark.slow
def test_a_deleted_chunk_is_run_again_and_the_result_is_a_clean_run(clean, client, tmp_path):
    store = _copy(clean, tmp_path)
    os.remove(store / "energy" / "1")
    assert stored_points(store) == (2, 3)  # the point reads NaN: not counted as finished
    with pytest.warns(RuntimeWarning, match=r"the point \(seed=1\) failed verification \(its "
                                            r"values do not match their checksum\); it runs"):
        again = ue.sweep("usa", GRID, store=store, client=client, **KW)
    assert _session(store).tolist() == [1, 2, 1]  # only that point ran, in the second run
    assert again.identical(clean[1])
    assert stored_points(store) == (3, 3)


@pytest.mark.slow
def test_read_store_is_the_sweep_verified(clean, tmp_path):
    ds = read_store(clean[0])
    assert ds.drop_vars("session").identical(clean[1])
    assert ds["session"].values.tolist() == [1, 1, 1]
    store = _copy(clean, tmp_path)
    os.remove(store / "clusters" / "2")
    with pytest.raises(ValueError, match=r"the point \(seed=2\) failed verification \(its "
                                         r"values do not match their checksum\); resume the"):
        read_store(store)
    os.remove(store / "session" / "2")  # the point is no longer finished: it reads as such
    ds = read_store(store)
    assert ds["error"].values.tolist() == ["", "", "not finished"]
    assert np.isnan(ds["energy"].values[2]) and ds["session"].values.tolist() == [1, 1, 0]


@pytest.mark.slow
def test_a_flipped_bit_is_detected_and_the_point_runs_again(clean, client, tmp_path):
    store = _copy(clean, tmp_path)
    chunk = store / "spread" / "2"
    raw = bytearray(chunk.read_bytes())
    raw[-1] ^= 0x10  # the highest byte of the float64 (stored uncompressed after the header)
    chunk.write_bytes(bytes(raw))
    flipped = zarr.open_group(str(store), mode="r", zarr_format=2)["spread"][2]
    assert flipped != clean[1]["spread"].values[2]  # the chunk decodes, to another number
    assert stored_points(store) == (2, 3)
    with pytest.warns(RuntimeWarning, match=r"\(seed=2\) failed verification"):
        again = ue.sweep("usa", GRID, store=store, client=client, **KW)
    assert _session(store).tolist() == [1, 1, 2]
    assert again.identical(clean[1])


@pytest.mark.slow
def test_the_command_runs_a_truncated_point_again_and_says_so_in_one_line(
        clean, client, tmp_path, monkeypatch, capsys):
    store = _copy(clean, tmp_path)
    chunk = store / "energy" / "0"
    chunk.write_bytes(chunk.read_bytes()[:10])  # blosc cannot decode it
    _use_client(monkeypatch, client)
    assert main([*ARGS, "--store", str(store)]) == 0
    out, err = capsys.readouterr()
    assert [ln for ln in err.split("\n") if ln] == [
        f"usaav-edu: warning: store {store}: the point (seed=0) failed verification (its chunk "
        f"of energy cannot be read (RuntimeError: error during blosc decompression: -1)); it "
        f"runs again"]
    assert "3 points, 1 run now, 2 from the store" in out
    assert "Traceback" not in err
    assert _session(store).tolist() == [2, 1, 1]
    again = ue.sweep("usa", GRID, store=store, client="tcp://127.0.0.1:9", **KW)  # none runs
    assert again.identical(clean[1])


@pytest.mark.slow
@pytest.mark.parametrize("where", ["energy/.zarray", ".zmetadata"])
def test_an_edited_shape_is_one_line_naming_the_store_and_the_variable(clean, tmp_path, capsys,
                                                                       where):
    store = _copy(clean, tmp_path)
    path = store / where
    meta = json.loads(path.read_text())
    (meta if where != ".zmetadata" else meta["metadata"]["energy/.zarray"])["shape"] = [4]
    path.write_text(json.dumps(meta))
    assert main([*ARGS, "--store", str(store)]) == 2  # refused before anything runs
    err = capsys.readouterr().err
    lines = [ln for ln in err.split("\n") if ln]
    assert len(lines) == 1, err
    assert lines[0].startswith(f"usaav-edu: error: store {store} is damaged: the variable "
                               f"energy has shape (4,)")


@pytest.mark.slow
def test_a_store_without_checksums_is_refused(clean, tmp_path):
    store = _copy(clean, tmp_path)
    for name, keys in ((".zattrs", ()), (".zmetadata", ("metadata", ".zattrs"))):
        meta = json.loads((store / name).read_text())
        attrs = meta
        for k in keys:
            attrs = attrs[k]
        arguments = json.loads(attrs["sweep_arguments"])
        arguments["format"] = 1
        attrs["sweep_arguments"] = json.dumps(arguments, sort_keys=True)
        (store / name).write_text(json.dumps(meta))
    with pytest.raises(ValueError, match=r"format 1, without a checksum per point, so its points "
                                         r"cannot be verified"):
        ue.sweep("usa", GRID, store=store, client="tcp://127.0.0.1:9", **KW)
