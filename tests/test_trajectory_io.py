"""Trajectory files: saved atomically to exactly the path given, loaded only when valid."""

import io
import json
import os
import pathlib
import struct
import zipfile

import numpy as np
import pytest

import usaav_edu as ue

INVALID = "not a valid usaav-edu trajectory"


@pytest.fixture(scope="module")
def traj():
    """A short prefix-gauge run (frames gauge, integer prompt ids) with one frozen token."""
    model, x0, xi = ue.experiments.setup("prefix_gauge", n=6, d=3, n_prompts=2, seed=1)
    frozen = np.zeros(6, dtype=bool)
    frozen[0] = True
    return ue.simulate(model, x0, xi, t_max=0.5, n_frames=3, seed=1, frozen=frozen)


@pytest.fixture(scope="module")
def rope_traj():
    model, x0, xi = ue.experiments.setup("rope", n=5, d=3, seed=2)
    return ue.simulate(model, x0, xi, t_max=0.5, n_frames=3, seed=2)


def parts(traj):
    """The arrays and the metadata dict that ``save`` writes."""
    frozen = np.zeros(traj.n, dtype=bool) if traj.frozen is None else traj.frozen
    arrays = dict(t=traj.t, x=traj.x, xi=traj.xi, energy=traj.energy, frozen=frozen)
    return arrays, json.loads(json.dumps(traj.metadata()))


def write(path, arrays, meta, **extra):
    """An .npz file laid out as ``save`` lays it out, from possibly altered parts."""
    text = meta if isinstance(meta, str) else json.dumps(meta)
    np.savez(path, **arrays, metadata=np.array(text), **extra)
    return path


def same_bytes(path, data):
    return pathlib.Path(path).read_bytes() == data


# ---------------------------------------------------------------------- save
def test_save_writes_exactly_the_path_given(tmp_path, traj):
    path = tmp_path / "run.dat"
    traj.save(str(path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.dat"]
    back = ue.Trajectory.load(path)
    assert np.array_equal(back.x, traj.x) and np.array_equal(back.frozen, traj.frozen)


@pytest.mark.parametrize("kind", ["empty", "directory", "trailing separator", "missing folder"])
def test_save_refuses_a_path_that_names_no_writable_file(tmp_path, traj, kind):
    path = {"empty": "", "directory": str(tmp_path), "trailing separator": str(tmp_path / "new") + os.sep,
            "missing folder": str(tmp_path / "no" / "run.npz")}[kind]
    with pytest.raises(ValueError, match="path"):
        traj.save(path)
    assert list(tmp_path.iterdir()) == []


def test_save_replaces_the_previous_file_whole(tmp_path, traj, rope_traj):
    path = tmp_path / "run.npz"
    traj.save(path)
    rope_traj.save(path)
    back = ue.Trajectory.load(path)
    assert back.model.name == "rope" and np.array_equal(back.x, rope_traj.x)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.npz"]


def test_save_through_a_symbolic_link_keeps_the_link(tmp_path, traj, rope_traj):
    traj.save(tmp_path / "real.npz")
    (tmp_path / "link.npz").symlink_to("real.npz")
    rope_traj.save(tmp_path / "link.npz")
    assert (tmp_path / "link.npz").is_symlink()
    assert ue.Trajectory.load(tmp_path / "real.npz").model.name == "rope"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.npz", "real.npz"]


def test_saved_file_has_the_usual_permissions(tmp_path, traj):
    mask = os.umask(0)
    os.umask(mask)
    traj.save(tmp_path / "run.npz")
    assert (tmp_path / "run.npz").stat().st_mode & 0o777 == 0o666 & ~mask


@pytest.mark.parametrize("exc", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_interrupted_save_keeps_the_old_file_and_leaves_no_partial_file(tmp_path, traj, rope_traj,
                                                                         monkeypatch, exc):
    path = tmp_path / "run.npz"
    traj.save(path)
    old = path.read_bytes()
    real = np.lib.format.write_array
    calls = []

    def write_then_fail(fid, arr, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:  # the second array, after the first one is in the file
            fid.write(b"\0" * 100)
            raise exc
        return real(fid, arr, *args, **kwargs)

    monkeypatch.setattr(np.lib.format, "write_array", write_then_fail)
    with pytest.raises(type(exc)):
        rope_traj.save(path)
    monkeypatch.undo()
    assert len(calls) == 2
    assert same_bytes(path, old)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.npz"]
    assert ue.Trajectory.load(path).model.name == "prefix_gauge"


# ---------------------------------------------------------------------- load: the good file
def test_load_roundtrip_checks_pass_for_every_model(tmp_path, traj, rope_traj):
    for t in (traj, rope_traj):
        t.save(tmp_path / "a.npz")
        back = ue.Trajectory.load(tmp_path / "a.npz")
        assert back.model.params() == t.model.params()
        assert back.xi.dtype == t.xi.dtype and np.array_equal(back.xi, t.xi)
        assert np.array_equal(back.energy, t.energy) and back.n_rhs == t.n_rhs


# ---------------------------------------------------------------------- load: malformed arrays
def _nonunit(a):
    a["x"] = a["x"] * 1.001


def _nan(a):
    a["x"] = a["x"].copy()
    a["x"][1, 2, 0] = np.nan


BAD_ARRAYS = {
    "x holds strings": (lambda a: a.update(x=a["x"].astype(str)), "'x'"),
    "x is complex": (lambda a: a.update(x=a["x"].astype(complex)), "'x'"),
    "x has NaN": (_nan, "'x'"),
    "x off the sphere": (_nonunit, "unit vectors"),
    "x lacks d": (lambda a: a.update(x=a["x"][..., 0]), "'x'"),
    "t is short": (lambda a: a.update(t=a["t"][:-1]), "'t'"),
    "energy is short": (lambda a: a.update(energy=a["energy"][:-1]), "'energy'"),
    "t not increasing": (lambda a: a.update(t=a["t"][::-1].copy()), "increasing"),
    "energy is infinite": (lambda a: a.update(energy=np.full_like(a["energy"], np.inf)), "'energy'"),
    "xi too short": (lambda a: a.update(xi=a["xi"][:-1]), "xi"),
    "xi out of range": (lambda a: a.update(xi=a["xi"] + 5), "prompt ids"),
    "xi is float for prompts": (lambda a: a.update(xi=a["xi"].astype(float)), "integer"),
    "frozen is not bool": (lambda a: a.update(frozen=a["frozen"].astype(np.int8)), "'frozen'"),
    "frozen is short": (lambda a: a.update(frozen=a["frozen"][:-1]), "'frozen'"),
    "x holds objects": (lambda a: a.update(x=np.array([object()] * 3, dtype=object)), "objects"),
}


@pytest.mark.parametrize("kind", sorted(BAD_ARRAYS))
def test_load_refuses_malformed_arrays(tmp_path, traj, kind):
    change, words = BAD_ARRAYS[kind]
    arrays, meta = parts(traj)
    change(arrays)
    path = write(tmp_path / "bad.npz", arrays, meta)
    with pytest.raises(ValueError, match=INVALID) as info:
        ue.Trajectory.load(path)
    assert words in str(info.value)
    assert "allow_pickle" not in str(info.value)


def test_load_refuses_a_missing_array(tmp_path, traj):
    arrays, meta = parts(traj)
    del arrays["energy"]
    with pytest.raises(ValueError, match=INVALID + ".*energy"):
        ue.Trajectory.load(write(tmp_path / "bad.npz", arrays, meta))


def test_load_refuses_positions_whose_angles_overflow(tmp_path, rope_traj):
    arrays, meta = parts(rope_traj)
    arrays["xi"] = np.full_like(arrays["xi"], 1e308)
    meta["model"]["gauge"]["omegas"] = [10.0]
    with pytest.raises(ValueError, match=INVALID + ".*omegas \\* xi"):
        ue.Trajectory.load(write(tmp_path / "bad.npz", arrays, meta))


# ---------------------------------------------------------------------- load: malformed metadata
def _frames_not_orthogonal(m):
    m["model"]["gauge"]["frames"][0][0][0] = 2.0


BAD_METADATA = {
    "frames not orthogonal": (_frames_not_orthogonal, "orthogonal"),
    "beta is text": (lambda m: m["model"]["profile"].update(beta="1"), "beta"),
    "beta is NaN": (lambda m: m["model"]["profile"].update(beta=float("nan")), "beta"),
    "unknown gauge kind": (lambda m: m["model"]["gauge"].update(kind="hyperbolic"), "gauge"),
    "unknown gauge": (lambda m: m["model"].update(gauge="hyperbolic"), "gauge"),
    "model key missing": (lambda m: m["model"].pop("profile"), "profile"),
    "model not an object": (lambda m: m.update(model=[1, 2]), "model"),
    "method unknown": (lambda m: m.update(method="euler"), "method"),
    "dt negative": (lambda m: m.update(dt=-0.1), "dt"),
    "seed is text": (lambda m: m.update(seed="zero"), "seed"),
    "n_rhs negative": (lambda m: m.update(n_rhs=-4), "n_rhs"),
    "steps_rejected negative": (lambda m: m.update(steps_rejected=-1), "steps_rejected"),
    "version is a number": (lambda m: m.update(version=1), "version"),
    "metadata key missing": (lambda m: m.pop("seed"), "seed"),
    "status unknown": (lambda m: m.update(status="DONE"), "status must be one of"),
    "status is lower case": (lambda m: m.update(status="completed"), "status must be one of"),
    "status of a density run": (lambda m: m.update(status="UNRESOLVED"), "status must be one of"),
    "message is a number": (lambda m: m.update(message=1), "message must be a string"),
}


@pytest.mark.parametrize("kind", sorted(BAD_METADATA))
def test_load_refuses_malformed_metadata(tmp_path, traj, kind):
    change, words = BAD_METADATA[kind]
    arrays, meta = parts(traj)
    change(meta)
    with pytest.raises(ValueError, match=INVALID) as info:
        ue.Trajectory.load(write(tmp_path / "bad.npz", arrays, meta))
    assert words in str(info.value)


@pytest.mark.parametrize("text", ["{not json", "[1, 2, 3]"])
def test_load_refuses_metadata_that_is_not_a_json_object(tmp_path, traj, text):
    arrays, _ = parts(traj)
    with pytest.raises(ValueError, match=INVALID + ".*metadata"):
        ue.Trajectory.load(write(tmp_path / "bad.npz", arrays, text))


def test_load_refuses_metadata_that_is_not_text(tmp_path, traj):
    arrays, _ = parts(traj)
    np.savez(tmp_path / "bad.npz", **arrays, metadata=np.arange(3.0))
    with pytest.raises(ValueError, match=INVALID + ".*metadata"):
        ue.Trajectory.load(tmp_path / "bad.npz")


# ---------------------------------------------------------------------- load: not an archive
@pytest.mark.parametrize("kind", ["empty", "text", "truncated", "npy"])
def test_load_refuses_files_that_are_not_archives(tmp_path, traj, kind):
    path = tmp_path / "bad.npz"
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "text":
        path.write_text("t,x\n0,1\n")
    elif kind == "npy":
        with open(path, "wb") as fh:
            np.save(fh, traj.x)
    else:
        traj.save(path)
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=INVALID):
        ue.Trajectory.load(path)


def test_load_refuses_a_corrupted_member(tmp_path, traj):
    path = tmp_path / "bad.npz"
    traj.save(path)
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        at = zf.getinfo("x.npy").header_offset
    name_len, extra_len = struct.unpack_from("<HH", data, at + 26)
    # flip one byte of x's data (stored uncompressed, so the CRC no longer matches)
    data[at + 30 + name_len + extra_len + 200] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=INVALID):
        ue.Trajectory.load(path)


def test_load_refuses_a_corrupted_deflated_member(tmp_path, traj):
    arrays, meta = parts(traj)
    path = tmp_path / "bad.npz"
    np.savez_compressed(path, **arrays, metadata=np.array(json.dumps(meta)))
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("x.npy")
    name_len, extra_len = struct.unpack_from("<HH", data, info.header_offset + 26)
    start = info.header_offset + 30 + name_len + extra_len
    data[start: start + info.compress_size] = bytes(range(256)) * (info.compress_size // 256) + \
        bytes(info.compress_size % 256)
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=INVALID):
        ue.Trajectory.load(path)


def test_load_refuses_members_compressed_in_ways_numpy_never_writes(tmp_path, traj):
    arrays, meta = parts(traj)
    path = tmp_path / "bz2.npz"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_BZIP2) as zf:
        for key, arr in dict(arrays, metadata=np.array(json.dumps(meta))).items():
            buf = io.BytesIO()
            np.save(buf, arr)
            zf.writestr(key + ".npy", buf.getvalue())
    with pytest.raises(ValueError, match=INVALID + ".*compression method"):
        ue.Trajectory.load(path)


def test_a_missing_file_is_an_oserror(tmp_path):
    with pytest.raises(FileNotFoundError):
        ue.Trajectory.load(tmp_path / "nothing.npz")


# ---------------------------------------------------------------------- load: sizes
def _claim_size(path, member, size):
    """Rewrite the uncompressed size that the archive's central directory states for ``member``."""
    data = bytearray(pathlib.Path(path).read_bytes())
    name = member.encode()
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        name_len = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46: at + 46 + name_len] == name:
            struct.pack_into("<I", data, at + 24, size)
            pathlib.Path(path).write_bytes(bytes(data))
            return
        at = data.find(b"PK\x01\x02", at + 4)
    raise AssertionError(f"{member} not in the central directory")


def test_load_refuses_members_that_inflate_beyond_the_cap_before_reading_them(tmp_path, traj, monkeypatch):
    path = tmp_path / "bomb.npz"
    traj.save(path)
    _claim_size(path, "x.npy", 1_600_000_000)  # 1.6 GB, beyond the default cap of 2**30 bytes
    opened = []
    real_open = zipfile.ZipFile.open
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda self, name, *a, **k: opened.append(name) or
                        real_open(self, name, *a, **k))
    with pytest.raises(ValueError, match=INVALID + ".*max_bytes"):
        ue.Trajectory.load(path)
    assert opened == []


def test_load_cap_counts_decompressed_bytes(tmp_path, traj):
    arrays, meta = parts(traj)
    path = tmp_path / "deflated.npz"
    np.savez_compressed(path, **arrays, metadata=np.array(json.dumps(meta)))
    total = sum(arrays[k].nbytes for k in arrays)
    with pytest.raises(ValueError, match=INVALID + ".*max_bytes"):
        ue.Trajectory.load(path, max_bytes=total // 2)
    assert np.array_equal(ue.Trajectory.load(path).x, traj.x)


def test_load_refuses_a_header_claiming_more_data_than_its_member_holds(tmp_path, traj):
    arrays, meta = parts(traj)
    path = write(tmp_path / "bad.npz", arrays, meta)
    with zipfile.ZipFile(path) as zf:
        members = {i.filename: zf.read(i) for i in zf.infolist()}
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False,
                                                  "shape": (10**12,) + traj.x.shape[1:]})
    members["x.npy"] = header.getvalue() + traj.x.tobytes()
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    with pytest.raises(ValueError, match=INVALID + ".*'x' claims shape"):
        ue.Trajectory.load(path)


# ---------------------------------------------------------------------- load: newer files
def test_load_warns_about_arrays_and_keys_it_does_not_know(tmp_path, traj):
    arrays, meta = parts(traj)
    meta["solver_notes"] = "written by a newer version"
    path = write(tmp_path / "newer.npz", arrays, meta, attention=np.ones(3))
    with pytest.warns(UserWarning) as record:
        back = ue.Trajectory.load(path)
    text = " ".join(str(w.message) for w in record)
    assert "attention" in text and "solver_notes" in text
    assert np.array_equal(back.x, traj.x)


# ---------------------------------------------------------------------- models rebuilt from parameters
def test_from_params_runs_the_constructor_checks(traj):
    good = traj.model.params()
    assert good["gauge"]["kind"] == "frames" and good["version"] == 2
    assert ue.Model.from_params(good).params() == good
    bad_gauge = dict(good["gauge"], frames=(np.asarray(good["gauge"]["frames"]) * 1.01).tolist())
    with pytest.raises(ValueError, match="frames must be orthogonal"):
        ue.Model.from_params(dict(good, gauge=bad_gauge))
    with pytest.raises(ValueError, match="unknown keys 'colour'"):
        ue.Model.from_params(dict(good, colour="red"))
    distance = ue.models.distance_bias(1.0, lam=2.0).params()
    with pytest.raises(ValueError, match="lam must be finite"):
        ue.Model.from_params(dict(distance, bias={"kind": "distance", "lam": float("inf")}))
    with pytest.raises(ValueError, match="lacks the keys \\['profile'\\]"):
        ue.Model.from_params({k: val for k, val in good.items() if k != "profile"})
    with pytest.raises(ValueError, match="must have the keys \\['beta'\\]"):
        ue.Model.from_params(dict(good, profile={"kind": "exp"}))


# The flat layout that version 1 wrote (before the parts were nested), by hand.
OLD_ROPE = {"name": "rope", "beta": 1.5, "profile": "exp", "normalization": "usa", "gauge": "rope",
            "omegas": [0.5], "bias": "none", "lam": 0.0, "omega": 0.0, "rotate_values": True}
OLD_COSINE = {"name": "cosine_bias", "beta": 1.0, "profile": "linear", "normalization": "usa",
              "gauge": "identity", "omegas": [], "bias": "cosine", "lam": 0.0, "omega": 2.0,
              "rotate_values": True}


def test_from_params_reads_the_flat_layout_of_version_1():
    rope = ue.Model.from_params(OLD_ROPE)
    assert isinstance(rope.gauge, ue.models.RopeGauge) and rope.gauge.omegas == (0.5,)
    assert rope.beta == 1.5 and rope.name == "rope" and isinstance(rope.bias, ue.models.NoBias)
    cosine = ue.Model.from_params(json.dumps(OLD_COSINE))
    assert isinstance(cosine.bias, ue.models.CosineBias) and cosine.bias.omega == 2.0
    assert cosine.linear and isinstance(cosine.profile, ue.models.LinearProfile)
    with pytest.raises(ValueError, match="omegas must be empty unless gauge is 'rope'"):
        ue.Model.from_params(dict(OLD_COSINE, omegas=[1.0]))
    with pytest.raises(ValueError, match="lam must be 0 unless bias is 'distance'"):
        ue.Model.from_params(dict(OLD_ROPE, lam=2.0))
    with pytest.raises(ValueError, match="omegas\\[0\\] must be finite"):
        ue.Model.from_params(dict(OLD_ROPE, omegas=[float("nan")]))


def test_a_version_1_file_loads(tmp_path):
    """A file as version 1 wrote it: flat model parameters, no step statistics."""
    model, x0, xi = ue.experiments.setup("rope", n=5, d=3, omega=0.5, beta=1.5, seed=2)
    run = ue.simulate(model, x0, xi, t_max=0.5, n_frames=3, seed=2)
    meta = {"model": OLD_ROPE, "method": "rk4", "dt": run.dt, "rtol": None, "atol": None, "seed": 2,
            "n_rhs": run.n_rhs, "version": "0.1.0"}
    arrays = dict(t=run.t, x=run.x, xi=run.xi, energy=run.energy, frozen=np.zeros(5, dtype=bool))
    back = ue.Trajectory.load(write(tmp_path / "v1.npz", arrays, meta))
    assert back.steps_accepted is None and back.steps_rejected is None and back.n_rhs == run.n_rhs
    assert back.model.params() == run.model.params() | {"gauge": {"kind": "rope", "omegas": [0.5],
                                                                   "d": None}}
    assert np.array_equal(back.x, run.x)


def test_step_statistics_are_saved_and_loaded(tmp_path, rope_traj):
    assert rope_traj.steps_accepted == rope_traj.n_rhs // 4 and rope_traj.steps_rejected == 0
    rope_traj.save(tmp_path / "run.npz")
    back = ue.Trajectory.load(tmp_path / "run.npz")
    assert (back.steps_accepted, back.steps_rejected) == (rope_traj.steps_accepted, 0)


def test_status_and_message_are_saved_and_loaded(tmp_path):
    x0 = ue.sphere.uniform(8, 3, seed=0)
    run = ue.simulate(ue.models.usa(1.0), x0, t_max=2.0, n_frames=5, method="dopri5", rtol=1e-12,
                      atol=1e-14, max_steps=20, on_failure="return")
    assert run.status is ue.particles.Status.MAX_STEPS and len(run.t) < 5
    run.save(tmp_path / "run.npz")
    back = ue.Trajectory.load(tmp_path / "run.npz")
    assert back.status is ue.particles.Status.MAX_STEPS and back.message == run.message
    assert "max_steps = 20" in back.message and np.array_equal(back.x, run.x)


def test_particles_and_densities_share_one_status():
    """One enum of outcomes: a particle run ends with three of its members, a density run with
    COMPLETED or UNRESOLVED, and both read the same COMPLETED."""
    assert ue.particles.Status is ue.meanfield.Status
    assert [s.name for s in ue.meanfield.Status] == ["COMPLETED", "MAX_STEPS", "FAILED",
                                                     "UNRESOLVED"]
    traj = ue.simulate(ue.models.usa(1.0), ue.sphere.uniform(4, 3, seed=1), t_max=0.5,
                       n_frames=3)
    dens = ue.meanfield.solve(ue.models.usa(1.0), np.ones(32) / (2 * np.pi), 0.5, n_frames=3)
    assert traj.status is dens.status is ue.meanfield.Status.COMPLETED


def test_a_file_written_before_the_status_loads_as_completed(tmp_path, rope_traj):
    """The metadata as the version before the status wrote it: the same keys but those two."""
    arrays, meta = parts(rope_traj)
    del meta["status"], meta["message"]
    assert sorted(meta) == ["atol", "degree", "dt", "error_bound", "method", "model", "n_rhs",
                            "rtol", "seed", "steps_accepted", "steps_rejected", "summation",
                            "version"]
    back = ue.Trajectory.load(write(tmp_path / "before.npz", arrays, meta))
    assert back.status is ue.particles.Status.COMPLETED and back.completed
    assert back.message == ue.particles.Status.COMPLETED.message
    assert np.array_equal(back.x, rope_traj.x) and back.n_rhs == rope_traj.n_rhs


def test_the_attribute_groups_read_the_same_values(rope_traj):
    data, stats, prov = rope_traj.data, rope_traj.stats, rope_traj.provenance
    assert data.t is rope_traj.t and data.x is rope_traj.x and data.energy is rope_traj.energy
    assert data._fields == ("t", "x", "xi", "energy", "frozen")
    assert stats == (rope_traj.steps_accepted, 0, rope_traj.n_rhs, rope_traj.dt)
    assert stats.steps_accepted == rope_traj.n_rhs // 4 > 0
    assert prov.model is rope_traj.model and prov.method == "rk4" and prov.seed == 2
    assert prov.version == ue.__version__ and prov.summation == "direct"
    with pytest.raises(TypeError, match="status must be a Status"):
        ue.Trajectory(t=rope_traj.t, x=rope_traj.x, xi=rope_traj.xi, energy=rope_traj.energy,
                      model=rope_traj.model, method="rk4", status="COMPLETED")


@pytest.mark.parametrize("make, error, words", [
    (lambda: ue.models.RopeGauge((float("nan"),)), ValueError, "omegas\\[0\\] must be finite"),
    (lambda: ue.models.RopeGauge("12"), TypeError,  # type: ignore[arg-type]  # the bad input
     "omegas must be a sequence"),
    (lambda: ue.models.RopeGauge((1.0, 2.0), 3), ValueError, "one frequency per rotation plane"),
    (lambda: ue.models.FrameGauge(np.full((1, 3, 3), 0.5)), ValueError,
     "frames must be orthogonal"),
    (lambda: ue.models.DistanceBias(-1.0), ValueError, "lam must be >= 0"),
    (lambda: ue.models.CosineBias(float("inf")), ValueError, "omega must be finite"),
    (lambda: ue.models.ExpProfile(-701.0), ValueError, "beta must be >= -700"),
    (lambda: ue.Model(gauge="rope"), TypeError, "gauge must be"),
    (lambda: ue.Model(bias=ue.models.CosineBias(1.0), normalization="sa"), ValueError,
     "non-negative"),
    (lambda: ue.Model(profile=lambda s: s), TypeError, "profile must be"),
])
def test_direct_model_construction_runs_the_constructor_checks(make, error, words):
    with pytest.raises(error, match=words):
        make()


def test_rope_angle_overflow_names_omegas_and_xi():
    model = ue.models.rope(1.0, (1e308,), 3)
    x0 = ue.sphere.uniform(4, 3, seed=0)
    xi = ue.experiments.positions(4)
    with pytest.raises(ValueError, match=r"omegas \* xi must be finite"):
        ue.simulate(model, x0, xi, t_max=1.0)
    with pytest.raises(ValueError, match=r"omegas \* xi must be finite"):
        ue.energy(model, x0, xi)
    # the largest finite angles are fine
    ue.energy(ue.models.rope(1.0, (1e300,), 3), x0, xi)


def test_cosine_bias_overflow_names_omega():
    model = ue.models.cosine_bias(omega=1e308)
    x0 = ue.sphere.uniform(3, 3, seed=0)
    with pytest.raises(ValueError, match=r"omega \* \(xi_i - xi_j\) must be finite"):
        ue.energy(model, x0, np.array([0.0, 1.0, 2.0]))


def test_bias_label_differences_that_overflow_are_refused():
    model = ue.models.distance_bias(1.0, lam=0.0)
    x0 = ue.sphere.uniform(2, 3, seed=0)
    with pytest.raises(ValueError, match=r"xi: the differences xi_i - xi_j overflow"):
        ue.energy(model, x0, np.array([-1e308, 1e308]))
