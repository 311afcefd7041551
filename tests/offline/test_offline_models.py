"""Offline models (ge.save / ge.load): round trips, preserved schedule and memory, bad files, no pickle."""
import json
import os
import pickle
import zipfile

import numpy as np
import pytest

import ge
from ge.offline.bounded import Check
from ge import offline
from ge.offline import files as offline_files
from ge.offline import format as offline_format
from ge.offline.format import seal
from ge.offline import read as offline_read
from ge.cli import main
from ge.zoo import LIGHT_MODELS, light_model_path, reference_feeds


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A small light model compiled once, saved as a .gem."""
    plan = ge.compile(light_model_path("squeezenet"))
    path = str(tmp_path_factory.mktemp("gem") / "squeezenet.gem")
    ge.save(plan, path)
    return plan, path


def _outputs(plan, runtime):
    sess = ge.Session(plan, runtime=runtime)
    return sess.run(None, reference_feeds(sess))


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_round_trip_light_model(name, tmp_path):
    """The loaded plan equals the saved one and runs to the same bits; the models alternate between the
    runtimes (both on every model doubled VGG-19's 33 s)."""
    plan = ge.compile(light_model_path(name))
    path = ge.save(plan, tmp_path / f"{name}.gem")
    loaded = ge.load(path)
    assert loaded.to_json() == plan.to_json()
    assert loaded.memory == plan.memory
    assert loaded.events == plan.events
    assert loaded.single_stream_reason == plan.single_stream_reason
    assert loaded.options == plan.options
    assert [(n.op_type, n.stream, n.engine, n.is_dynamic, n.is_alias) for n in loaded.nodes] == \
        [(n.op_type, n.stream, n.engine, n.is_dynamic, n.is_alias) for n in plan.nodes]
    assert sorted(loaded.constants) == sorted(plan.constants)
    for i, a in plan.constants.items():
        np.testing.assert_array_equal(loaded.constants[i], a)
    runtimes = ge.available_runtimes()
    runtime = runtimes[LIGHT_MODELS.index(name) % len(runtimes)]
    for a, b in zip(_outputs(plan, runtime), _outputs(loaded, runtime)):
        np.testing.assert_array_equal(a, b)


def test_events_and_streams_preserved(tmp_path):
    plan = ge.compile(light_model_path("inception_v1"), ge.Options(max_streams=4))
    assert plan.num_streams > 1 and plan.events
    loaded = ge.load(ge.save(plan, tmp_path / "m.gem"))
    assert loaded.num_streams == plan.num_streams
    assert loaded.events == plan.events
    assert [n.stream for n in loaded.nodes] == [n.stream for n in plan.nodes]


def test_directory_form_and_session(small, tmp_path):
    plan, _ = small
    d = str(tmp_path / "model.gem") + "/"
    ge.save(plan, d)
    assert sorted(os.listdir(d)) == ["plan.json", "weights.npz"]
    sess = ge.Session(d, runtime="v2")
    ref = _outputs(plan, "v2")
    for a, b in zip(ref, sess.run(None, reference_feeds(sess))):
        np.testing.assert_array_equal(a, b)
    plain = tmp_path / "plain"  # a directory holding plan.json is recognised without the suffix
    ge.save(plan, str(plain) + "/")
    assert offline.is_offline_model(str(plain))


def test_session_from_gem(small):
    plan, path = small
    sess = ge.Session(path)
    ref = _outputs(plan, sess.runtime)
    for a, b in zip(ref, sess.run(None, reference_feeds(sess))):
        np.testing.assert_array_equal(a, b)


def _rewrite(src, dst, plan_json=None, weights=None, drop=(), compression=zipfile.ZIP_STORED):
    with zipfile.ZipFile(src) as z:
        members = {n: z.read(n) for n in z.namelist()}
    if plan_json is not None:
        members["plan.json"] = plan_json
    if weights is not None:
        members["weights.npz"] = weights
    with zipfile.ZipFile(dst, "w", compression) as z:
        for n, data in members.items():
            if n not in drop:
                z.writestr(n, data)
    return dst


def _doc(path):
    """plan.json without its digest (the edits below are re-sealed: they test the reader, not the digest)."""
    with zipfile.ZipFile(path) as z:
        doc = json.loads(z.read("plan.json"))
    doc.pop("digest")
    return doc


def test_recompressed_file_still_loads(small, tmp_path):
    """A .gem re-zipped with compression misses the one-copy mmap path and takes the general one."""
    plan, path = small
    packed = _rewrite(path, tmp_path / "deflated.gem", compression=zipfile.ZIP_DEFLATED)
    check = lambda: Check("here", 1 << 30, "a test cap", {})  # noqa: E731
    assert offline_files._weights_fast(str(packed), "zip", check()) is None
    assert ge.load(packed).to_json() == plan.to_json()
    assert offline_files._weights_fast(path, "zip", check()) is not None


def test_corrupted_json(small, tmp_path):
    _, path = small
    bad = _rewrite(path, tmp_path / "bad.gem", plan_json=b'{"format": "ge.plan", "vers')
    with pytest.raises(ge.ModelLoadError, match="not valid JSON"):
        ge.load(bad)


def test_wrong_version(small, tmp_path):
    _, path = small
    doc = _doc(path)
    doc["version"] = 999
    bad = _rewrite(path, tmp_path / "v.gem", plan_json=seal(doc).encode())
    with pytest.raises(ge.ModelLoadError, match="version 999"):
        ge.load(bad)


def test_foreign_files(small, tmp_path):
    _, path = small
    doc = _doc(path)
    doc["format"] = "something.else"
    with pytest.raises(ge.ModelLoadError, match="not a ge plan"):
        ge.load(_rewrite(path, tmp_path / "f.gem", plan_json=seal(doc).encode()))
    onnx_file = tmp_path / "x.gem"
    onnx_file.write_bytes(open(light_model_path("squeezenet"), "rb").read()[:4096])
    with pytest.raises(ge.ModelLoadError, match="not a ge plan file"):
        ge.load(onnx_file)
    truncated = tmp_path / "t.gem"
    truncated.write_bytes(open(path, "rb").read()[:100000])
    with pytest.raises(ge.ModelLoadError, match="not a ge plan file"):
        ge.load(truncated)
    with pytest.raises(ge.ModelLoadError, match="does not exist"):
        ge.load(tmp_path / "nothing.gem")
    with pytest.raises(ge.ModelLoadError, match="does not exist"):
        ge.Session(str(tmp_path / "nothing.gem"))


def test_missing_npz(small, tmp_path):
    _, path = small
    with pytest.raises(ge.ModelLoadError, match="missing weights.npz"):
        ge.load(_rewrite(path, tmp_path / "m.gem", drop=("weights.npz",)))
    d = tmp_path / "dir"
    d.mkdir()
    with zipfile.ZipFile(path) as z:
        (d / "plan.json").write_bytes(z.read("plan.json"))
    with pytest.raises(ge.ModelLoadError, match="missing weights.npz"):
        ge.load(d)


def test_corrupted_members(small, tmp_path):
    _, path = small
    with pytest.raises(ge.ModelLoadError, match="cannot read weights.npz"):
        ge.load(_rewrite(path, tmp_path / "w.gem", weights=b"garbage"))
    doc = _doc(path)
    doc["nodes"][0]["inputs"] = [10 ** 6]
    with pytest.raises(ge.ModelLoadError, match=r"nodes\[0\]\.inputs\[0\]: 1000000 is outside"):
        ge.load(_rewrite(path, tmp_path / "i.gem", plan_json=seal(doc).encode()))
    doc = _doc(path)
    del doc["nodes"][0]["op_type"]
    with pytest.raises(ge.ModelLoadError, match=r"nodes\[0\]: missing 'op_type'"):
        ge.load(_rewrite(path, tmp_path / "k.gem", plan_json=seal(doc).encode()))
    doc = _doc(path)
    doc["nodes"][0]["op_type"] = "NoSuchOp"
    with pytest.raises(ge.ModelLoadError, match="NoSuchOp"):
        ge.load(_rewrite(path, tmp_path / "o.gem", plan_json=seal(doc).encode()))
    doc = _doc(path)
    key = next(iter(doc["constants"]))
    doc["tensors"][int(key)][1] = "<i2"  # constant dtype disagrees with the npz
    with pytest.raises(ge.ModelLoadError, match="constant"):
        ge.load(_rewrite(path, tmp_path / "c.gem", plan_json=seal(doc).encode()))


def test_no_pickle(small, tmp_path, monkeypatch):
    plan, path = small

    def refuse(*a, **k):
        raise AssertionError("pickle used")
    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    loaded = ge.load(path)
    assert loaded.to_json() == plan.to_json()
    with zipfile.ZipFile(path) as z:
        import io
        with np.load(io.BytesIO(z.read("weights.npz")), allow_pickle=False) as w:
            assert set(w.files) >= {f"c{i}" for i in plan.constants}
    # an object array would need pickle: refused at save time
    import dataclasses
    i = next(iter(plan.constants))
    bad = dataclasses.replace(plan, constants={**plan.constants, i: np.array([{"a": 1}], dtype=object)})
    with pytest.raises(ge.GEError, match="pickle"):
        ge.save(bad, tmp_path / "obj.gem")


def test_attribute_values_round_trip():
    enc = offline_format._Encoder()
    value = {"t": (1, 2.5), "l": [1, "x", None, True], "a": np.arange(3, dtype=np.int64),
             "s": np.float32(1.5), "nested": [np.ones((2, 2), np.float32), {"k": (3,)}], "nan": float("nan")}
    doc = json.loads(json.dumps(enc.value(value, "test")))
    back = offline_read.decode(doc, enc.arrays, "test")
    assert back["t"] == (1, 2.5) and back["l"] == [1, "x", None, True]
    np.testing.assert_array_equal(back["a"], value["a"])
    assert back["s"] == np.float32(1.5) and type(back["s"]) is np.float32
    np.testing.assert_array_equal(back["nested"][0], value["nested"][0])
    assert back["nested"][1] == {"k": (3,)} and np.isnan(back["nan"])
    with pytest.raises(ge.GEError, match="not supported"):
        enc.value(object(), "attribute 'g'")


def test_cli_compile_and_run(tmp_path, capsys):
    out = str(tmp_path / "sq.gem")
    assert main(["compile", light_model_path("squeezenet"), "-o", out, "--max-streams", "2"]) == 0
    assert "wrote" in capsys.readouterr().out
    assert ge.load(out).options.max_streams == 2
    assert main(["run", out, "--repeat", "1", "--runtime", "v2"]) == 0
    text = capsys.readouterr().out
    assert "load" in text and "checksum" in text
    assert main(["run", str(tmp_path / "missing.gem"), "--repeat", "1"]) == 2


def test_dynamic_plan_round_trip(tmp_path):
    from ge.models import with_symbolic_dims
    plan = ge.compile(with_symbolic_dims(light_model_path("squeezenet"), {"data_0": {0: "N"}}))
    assert plan.is_dynamic
    path = ge.save(plan, tmp_path / "dyn.gem")
    loaded = ge.load(path)
    assert loaded.to_json() == plan.to_json() and all(n.is_dynamic for n in loaded.nodes)
    x = np.random.default_rng(0).random((3, 3, 224, 224), np.float32)
    want = ge.Session(plan, runtime="v2").run(None, {"data_0": x})
    got = ge.Session(path, runtime="v2").run(None, {"data_0": x})
    for a, b in zip(want, got):
        np.testing.assert_array_equal(a, b)
