"""String tensors and the ONNX-ML ops, run on onnxruntime and on ge.ort: scikit-learn exports (committed,
tools/make_sklearn_fixtures.py) and hand-built string graphs. onnxruntime's outputs are the oracle.

Host ops only (ge/kernels/strings.py, ml.py: numpy, no Numba); the fixtures' few tensor ops (an int64 Cast,
float32 Concat/Reshape) are kernels the suite compiles anyway."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto as T
from onnx import helper as h

import ge
import ge.ort
from ge.errors import InputError, UnsupportedOpError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sklearn"
NAMES = sorted(p.stem for p in FIXTURES.glob("*.onnx"))


def _feeds(sess, name):
    rng = np.random.default_rng(7)
    out = {}
    for i in sess.get_inputs():
        shape = [6 if not isinstance(d, int) else d for d in i.shape]
        if i.type == "tensor(string)":
            out[i.name] = rng.choice(np.array(["a", "b", "c", "x", "y", "unseen"], object), size=shape)
        else:
            a = (rng.random(shape) * 7).astype(np.float32)
            if "impute" in name:
                a[::2, 1] = np.nan
            out[i.name] = a
    return out


def _same(want, got):
    if isinstance(want, list):   # ZipMap: a list of {label: probability}
        assert isinstance(got, list) and len(got) == len(want)
        for a, b in zip(want, got):
            assert list(a) == list(b) and all(type(k) is type(j) for k, j in zip(a, b))
            np.testing.assert_allclose(list(b.values()), list(a.values()), rtol=1e-5, atol=1e-6)
        return
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    if want.dtype == object:
        assert got.tolist() == want.tolist()
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", NAMES)
def test_sklearn_export(name):
    path = str(FIXTURES / f"{name}.onnx")
    ref = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    sess = ge.ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    assert [(o.name, o.type) for o in sess.get_outputs()] == [(o.name, o.type) for o in ref.get_outputs()]
    assert [(i.name, i.type) for i in sess.get_inputs()] == [(i.name, i.type) for i in ref.get_inputs()]
    feeds = _feeds(ref, name)
    for want, got in zip(ref.run(None, feeds), sess.run(None, feeds)):
        _same(want, got)


def _model(nodes, inputs, outputs, inits=(), opset=20, ml=None):
    imports = [h.make_opsetid("", opset)] + ([h.make_opsetid("ai.onnx.ml", ml)] if ml else [])
    g = h.make_graph(nodes, "strings", inputs, outputs, list(inits))
    return h.make_model(g, opset_imports=imports).SerializeToString()


STRINGS = _model(
    [h.make_node("Cast", ["x"], ["s"], to=T.STRING),
     h.make_node("StringConcat", ["s", "suffix"], ["joined"]),
     h.make_node("Cast", ["s"], ["back"], to=T.FLOAT),
     h.make_node("Equal", ["joined", "ref"], ["same"]),
     h.make_node("Gather", ["joined", "idx"], ["picked"], axis=0),
     h.make_node("Cast", ["words"], ["parsed"], to=T.DOUBLE),
     h.make_node("StringNormalizer", ["ref"], ["norm"], case_change_action="UPPER", stopwords=["x"],
                   locale="C"),   # (onnxruntime builds the locale: en_US.UTF-8 may be missing)
     h.make_node("RegexFullMatch", ["ref"], ["match"], pattern=r"[0-9.]+!"),
     h.make_node("StringSplit", ["ref"], ["parts", "counts"], delimiter="."),
     h.make_node("Unsqueeze", ["joined", "axes"], ["col"]),
     h.make_node("Concat", ["col", "col"], ["wide"], axis=1)],
    [h.make_tensor_value_info("x", T.FLOAT, ["n"]), h.make_tensor_value_info("ref", T.STRING, ["n"]),
     h.make_tensor_value_info("words", T.STRING, [3])],
    [h.make_tensor_value_info(n, t, None) for n, t in [
        ("joined", T.STRING), ("back", T.FLOAT), ("same", T.BOOL), ("picked", T.STRING), ("parsed", T.DOUBLE),
        ("norm", T.STRING), ("match", T.BOOL), ("parts", T.STRING), ("counts", T.INT64), ("wide", T.STRING)]],
    [h.make_tensor("suffix", T.STRING, [], [b"!"]), h.make_tensor("idx", T.INT64, [2], [2, 0]),
     h.make_tensor("axes", T.INT64, [1], [1])])
STRING_FEEDS = {"x": np.array([1.5, np.nan, -np.inf, 0.1, 3e38, 1e-7], np.float32),
                "ref": np.array(["1.5!", "x", "-INF!", "0.1!", "A.b.c", ""], object),
                "words": np.array(["2.25", " -1e3", "7"])}   # numpy str_ is taken as well


def test_string_constants_fold():
    """Constant value_strings / value_string (folded at compile time with the string ops after them)."""
    m = _model([h.make_node("Constant", [], ["c"], value_strings=["a", "bb"]),
                h.make_node("StringConcat", ["c", "s"], ["y"]),
                h.make_node("Constant", [], ["d"], value_string="z"),
                h.make_node("StringConcat", ["y", "d"], ["w"])],
               [h.make_tensor_value_info("s", T.STRING, [2])], [h.make_tensor_value_info("w", T.STRING, [2])])
    feeds = {"s": np.array(["1", "2"], object)}
    ref = onnxruntime.InferenceSession(m, providers=["CPUExecutionProvider"])
    for want, got in zip(ref.run(None, feeds), ge.ort.InferenceSession(m).run(None, feeds)):
        _same(want, got)


def test_string_graph_matches_onnxruntime():
    ref = onnxruntime.InferenceSession(STRINGS, providers=["CPUExecutionProvider"])
    sess = ge.ort.InferenceSession(STRINGS)
    assert [i.type for i in sess.get_inputs()] == ["tensor(float)", "tensor(string)", "tensor(string)"]
    for want, got in zip(ref.run(None, STRING_FEEDS), sess.run(None, STRING_FEEDS)):
        _same(want, got)


@pytest.mark.parametrize("dtype", [T.FLOAT, T.DOUBLE])
def test_float_to_string_prints_as_onnxruntime(dtype):
    """Regression: ge printed numpy's shortest text ("1.0", "100000.0", "-0.0"); onnxruntime prints "%.8g"."""
    m = _model([h.make_node("Cast", ["x"], ["y"], to=T.STRING)], [h.make_tensor_value_info("x", dtype, [15])],
               [h.make_tensor_value_info("y", T.STRING, [15])])
    x = np.array([1, 100, 1e16, 1.5e-5, 123456789, -0.0, 0.1, 3e38, 1e-7, 12345, 1e5, 1e6, 1e7, 2.5, 0.6224593],
                 {T.FLOAT: np.float32, T.DOUBLE: np.float64}[dtype])
    want = onnxruntime.InferenceSession(m, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert ge.ort.InferenceSession(m).run(None, {"x": x})[0].tolist() == want.tolist()


def test_string_feeds_are_checked():
    sess = ge.ort.InferenceSession(STRINGS)
    bad = dict(STRING_FEEDS, ref=np.array([1, "b", "c", "d", "e", "f"], object))
    with pytest.raises(InputError, match="'ref' is tensor\\(string\\) but holds a int"):
        sess.run(None, bad)
    with pytest.raises(Exception, match="cannot read 'seven' as float64"):
        sess.run(None, dict(STRING_FEEDS, words=np.array(["1", "2", "seven"])))


def test_label_encoder_and_zipmap():
    """LabelEncoder (opset 2 keys/values, string -> int64 with a default) into a ZipMap's string keys."""
    m = _model([h.make_node("LabelEncoder", ["s"], ["ids"], domain="ai.onnx.ml", keys_strings=["a", "b"],
                            values_int64s=[3, 5], default_int64=-7),
                h.make_node("ZipMap", ["p"], ["maps"], domain="ai.onnx.ml", classlabels_strings=["no", "yes"])],
               [h.make_tensor_value_info("s", T.STRING, ["n"]), h.make_tensor_value_info("p", T.FLOAT, ["n", 2])],
               [h.make_tensor_value_info("ids", T.INT64, ["n"]),
                h.make_value_info("maps", h.make_sequence_type_proto(h.make_map_type_proto(T.STRING, h.make_tensor_type_proto(T.FLOAT, None))))],
               opset=17, ml=2)
    feeds = {"s": np.array(["b", "a", "z"], object), "p": np.array([[0.25, 0.75], [1, 0], [0.5, 0.5]], np.float32)}
    ref = onnxruntime.InferenceSession(m, providers=["CPUExecutionProvider"])
    sess = ge.ort.InferenceSession(m)
    assert sess.get_outputs()[1].type == ref.get_outputs()[1].type == "seq(map(string,tensor(float)))"
    for want, got in zip(ref.run(None, feeds), sess.run(None, feeds)):
        _same(want, got)


def test_string_plan_runs_on_runtime_v1_as_host_tasks():
    """Every node of the string graph is a host op: auto runs it on runtime_v1's task sink as host tasks
    (runtime_v1/host.py; tests/runtime_v1/test_v1_host_tasks.py has the rest)."""
    sess = ge.ort.InferenceSession(STRINGS)
    assert sess.session.runtime == "v1" and "11 host ops as host tasks" in sess.session.stats()["runtime_reason"]


def test_an_op_without_strings_support_is_named():
    m = _model([h.make_node("Relu", ["s"], ["y"])], [h.make_tensor_value_info("s", T.STRING, [2])],
               [h.make_tensor_value_info("y", T.STRING, [2])])
    with pytest.raises(Exception) as e:
        ge.ort.InferenceSession(m)
    assert isinstance(e.value, (UnsupportedOpError, ge.ort.capi.onnxruntime_pybind11_state.Fail))
    assert "Relu" in str(e.value)


def test_a_string_plan_round_trips_through_a_gem(tmp_path):
    sess = ge.ort.InferenceSession(STRINGS)
    path = ge.save(sess.plan, str(tmp_path / "s.gem"))
    for want, got in zip(sess.run(None, STRING_FEEDS), ge.ort.InferenceSession(path).run(None, STRING_FEEDS)):
        _same(want, got)


def test_logreg_iris_example():
    """onnxruntime's documented example model, ge's own copy (tools/make_ort_datasets.py)."""
    path = ge.ort.datasets.get_example("logreg_iris.onnx")
    x = np.array([[5.1, 3.5], [6.2, 2.9], [7.7, 3.0]], np.float32)
    ref = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    sess = ge.ort.InferenceSession(path)
    assert [(o.name, o.shape, o.type) for o in sess.get_outputs()] == \
        [(o.name, o.shape, o.type) for o in ref.get_outputs()]
    for want, got in zip(ref.run(None, {"float_input": x}), sess.run(None, {"float_input": x})):
        _same(want, got)


def test_static_plans_holding_strings_run_on_v1():
    """A string input no node reads, or one passed straight out, leaves the plan static: auto picks
    runtime_v1, which holds the strings in its side table, outside its arena (runtime_v1/host.py)."""
    unused = _model([h.make_node("Relu", ["x"], ["y"])],
                    [h.make_tensor_value_info("x", T.FLOAT, [2]), h.make_tensor_value_info("s", T.STRING, [2])],
                    [h.make_tensor_value_info("y", T.FLOAT, [2])], opset=17)
    through = _model([], [h.make_tensor_value_info("s", T.STRING, [2])],
                     [h.make_tensor_value_info("s", T.STRING, [2])], opset=17)
    feeds = {"x": np.array([-1, 2], np.float32), "s": np.array(["a", "b"])}
    for m in (unused, through):
        ref = onnxruntime.InferenceSession(m, providers=["CPUExecutionProvider"])
        sess = ge.ort.InferenceSession(m)
        assert sess.session.runtime == "v1"
        given = {i.name: feeds[i.name] for i in ref.get_inputs()}
        for want, got in zip(ref.run(None, given), sess.run(None, given)):
            _same(want, got)


def test_an_ml_plan_round_trips_through_a_gem(tmp_path):
    """Host ONNX-ML ops and a sequence-of-maps output survive ge.save / ge.Session(.gem)."""
    path = str(FIXTURES / "logreg_iris.onnx")
    sess = ge.Session(path)
    ge.save(sess.plan, str(tmp_path / "m.gem"))
    again = ge.Session(str(tmp_path / "m.gem"))
    x = np.random.default_rng(3).random((4, 4)).astype(np.float32) * 7
    for want, got in zip(sess.run(None, {"X": x}), again.run(None, {"X": x})):
        _same(want, got)
