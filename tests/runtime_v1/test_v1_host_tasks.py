"""runtime_v1 runs string tensors and the ONNX-ML ops as host tasks (runtime_v1/host.py): the scikit-learn
exports (tests/fixtures/sklearn) at a fixed batch, the hand-built string graph, ONNX's node cases of the
string and ONNX-ML ops, .gem plans holding strings. onnxruntime is the oracle; runtime_v2 must agree bit
for bit (the same host functions, the same kernels)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx.backend.test.case.node import collect_testcases

import ge
import ge.backend
import ge.ort
from ge.errors import ExecutionError, GEError, ModelLoadError
from ge.offline.format import seal

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ort"))
from test_ml_strings import FIXTURES, NAMES, STRING_FEEDS, STRINGS, _model, _same  # noqa: E402

ROWS = 6


def _fixture_feeds(ref, name):
    rng = np.random.default_rng(7)
    (i,) = ref.get_inputs()
    shape = (ROWS, i.shape[1])
    if i.type == "tensor(string)":
        return i.name, rng.choice(np.array(["a", "b", "c", "x", "y", "unseen"], object), size=shape)
    x = (rng.random(shape) * 7).astype(np.float32)
    if "impute" in name:
        x[::2, 1] = np.nan
    return i.name, x


def _equal(a, b):
    """runtime_v1 against runtime_v2: the same values exactly."""
    if isinstance(a, list):
        assert a == b
    else:
        assert (a.dtype, a.shape) == (b.dtype, b.shape)
        if a.dtype == object:
            assert a.tolist() == b.tolist()
        else:
            np.testing.assert_array_equal(a, b)   # (NaN equal to NaN)


@pytest.mark.parametrize("name", NAMES)
def test_sklearn_export_on_v1(name):
    path = str(FIXTURES / f"{name}.onnx")
    ref = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    feed, x = _fixture_feeds(ref, name)
    opts = ge.Options(input_shape=f"{feed}:{ROWS},{x.shape[1]}")
    v1 = ge.Session(path, runtime="runtime_v1", options=opts)   # (the package's name is taken too)
    got = v1.run(None, {feed: x})
    for want, g in zip(ref.run(None, {feed: x}), got):
        _same(want, g)
    for a, b in zip(got, ge.Session(path, runtime="v2", options=opts).run(None, {feed: x})):
        _equal(a, b)
    stats = v1.stats()
    assert stats["runtime"] == "v1" and stats["host_tasks"] >= 1 and stats["fallback_tasks"] == 0


def test_numeric_tasks_after_host_ops_are_native():
    """An SVC export: SVMClassifier on the host, its 33 numeric nodes after it as native tasks reading the
    scores staged in the arena."""
    path = str(FIXTURES / "svc_iris.onnx")
    v1 = ge.Session(path, runtime="v1", options=ge.Options(input_shape=f"X:{ROWS},4"))
    assert v1.stats()["native_tasks"] >= 30 and v1.stats()["host_tasks"] == 2


def test_string_graph_on_v1():
    ref = onnxruntime.InferenceSession(STRINGS, providers=["CPUExecutionProvider"])
    want = ref.run(None, STRING_FEEDS)
    opts = ge.Options(input_shape="x:6;ref:6")
    v1 = ge.Session(STRINGS, runtime="v1", options=opts)
    got = v1.run(None, STRING_FEEDS)
    for w, g in zip(want, got):
        _same(w, g)
    for a, b in zip(got, ge.Session(STRINGS, runtime="v2", options=opts).run(None, STRING_FEEDS)):
        _equal(a, b)
    assert v1.stats()["host_tasks"] == 11
    again = v1.run(None, STRING_FEEDS)   # a second run: a fresh side table
    for a, b in zip(got, again):
        _equal(a, b)


def test_host_only_plan_with_run_time_shapes_on_v1():
    """Every node a host task: shapes known only at run time are no obstacle (no task needs arena bytes)."""
    v1 = ge.ort.InferenceSession(STRINGS, runtime="v1")
    assert v1.session.runtime == "v1"
    ref = onnxruntime.InferenceSession(STRINGS, providers=["CPUExecutionProvider"])
    for w, g in zip(ref.run(None, STRING_FEEDS), v1.run(None, STRING_FEEDS)):
        _same(w, g)


def test_inference_session_on_v1():
    path = str(FIXTURES / "logreg_string_labels.onnx")
    ref = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    feed, x = _fixture_feeds(ref, "logreg_string_labels")
    sess = ge.ort.InferenceSession(path, runtime="v1", ge_options=ge.Options(input_shape=f"{feed}:{ROWS},{x.shape[1]}"))
    assert sess.session.runtime == "v1"
    assert [o.type for o in sess.get_outputs()] == [o.type for o in ref.get_outputs()]
    for w, g in zip(ref.run(None, {feed: x}), sess.run(None, {feed: x})):
        _same(w, g)


def test_a_host_tasks_error_names_its_node():
    v1 = ge.Session(STRINGS, runtime="v1", options=ge.Options(input_shape="x:6;ref:6"))
    with pytest.raises(ExecutionError, match="Cast node 'Cast_5'.*cannot read 'seven' as float64"):
        v1.run(None, dict(STRING_FEEDS, words=np.array(["1", "2", "seven"])))
    for w, g in zip(onnxruntime.InferenceSession(STRINGS, providers=["CPUExecutionProvider"]).run(None, STRING_FEEDS),
                    v1.run(None, STRING_FEEDS)):   # the instance is fine after a failed run
        _same(w, g)


def test_a_task_reading_a_data_sized_host_value_is_refused():
    """StringNormalizer's output length depends on the words: the Relu after it has no static shape."""
    m = _model([h.make_node("StringNormalizer", ["s"], ["n"], stopwords=["x"]),
                h.make_node("Cast", ["n"], ["f"], to=T.FLOAT),
                h.make_node("Relu", ["f"], ["y"])],
               [h.make_tensor_value_info("s", T.STRING, [3])], [h.make_tensor_value_info("y", T.FLOAT, None)])
    with pytest.raises(GEError, match="runtime_v1 runs static plans only: Relu node"):
        ge.Session(m, runtime="v1")
    sess = ge.Session(m)
    assert sess.runtime == "v2"
    np.testing.assert_array_equal(sess.run(None, {"s": np.array(["1", "x", "-2"], object)})[0], [1, 0])


def test_plans_holding_strings_without_host_ops_on_v1():
    """A string input no node reads, or one passed straight out (a copy, as onnxruntime's)."""
    unused = _model([h.make_node("Relu", ["x"], ["y"])],
                    [h.make_tensor_value_info("x", T.FLOAT, [2]), h.make_tensor_value_info("s", T.STRING, [2])],
                    [h.make_tensor_value_info("y", T.FLOAT, [2])], opset=17)
    through = _model([], [h.make_tensor_value_info("s", T.STRING, [2])],
                     [h.make_tensor_value_info("s", T.STRING, [2])], opset=17)
    s = np.array(["a", "b"], object)
    np.testing.assert_array_equal(ge.Session(unused, runtime="v1").run(None, {"x": np.array([-1, 2], np.float32),
                                                                              "s": s})[0], [0, 2])
    out = ge.Session(through, runtime="v1").run(None, {"s": s})[0]
    assert out.tolist() == ["a", "b"] and out is not s


_OPS = {"StringNormalizer", "RegexFullMatch", "StringConcat", "StringSplit", "LabelEncoder", "Equal"}
_CASES = [c for c in collect_testcases() if c.model is not None and c.data_sets and len(c.model.graph.node) == 1
          and c.model.graph.node[0].op_type in _OPS and any(
              v.type.tensor_type.elem_type == T.STRING for v in (*c.model.graph.input, *c.model.graph.output))]


@pytest.mark.parametrize("case", _CASES, ids=[c.name for c in _CASES])
def test_string_node_case_on_v1(case):
    from test_onnx_node_cases import _compare, _feed   # noqa: PLC0415 (tests/ on the path under pytest)
    rep = ge.backend.prepare(case.model, runtime="v1")
    assert rep.session.runtime == "v1"
    for inputs, expected in case.data_sets:
        for g, w in zip(rep.run([_feed(x) for x in inputs]), expected):
            _compare(g, w, case)


def test_node_cases_cover_the_string_ops():
    assert {c.model.graph.node[0].op_type for c in _CASES} == _OPS and len(_CASES) >= 20


def test_string_plan_round_trips_through_a_gem(tmp_path):
    """Strings in .gem: a string constant (the suffix) and string tensors; both runtimes load it."""
    plan = ge.compile(STRINGS, ge.Options(input_shape="x:6;ref:6"))
    path = ge.save(plan, str(tmp_path / "s.gem") + "/")
    want = onnxruntime.InferenceSession(STRINGS, providers=["CPUExecutionProvider"]).run(None, STRING_FEEDS)
    for rt in ("v1", "v2"):
        for w, g in zip(want, ge.Session(path, runtime=rt).run(None, STRING_FEEDS)):
            _same(w, g)
    doc = json.loads(Path(path, "plan.json").read_text())
    doc.pop("digest")
    key = next(k for k, v in doc["constants"].items() if isinstance(v, dict))
    doc["constants"][key]["__strings__"] = ["!", "?"]   # two strings for a scalar
    Path(path, "plan.json").write_text(seal(doc))
    with pytest.raises(ModelLoadError, match=r"constants\[.*2 strings for shape \[\]"):
        ge.load(path)
    doc["constants"][key]["__strings__"] = [7]
    Path(path, "plan.json").write_text(seal(doc))
    with pytest.raises(ModelLoadError, match="expected a string"):
        ge.load(path)


def test_an_ml_plan_with_string_labels_round_trips_on_v1(tmp_path):
    path = str(FIXTURES / "tree_string_labels.onnx")
    sess = ge.Session(path, runtime="v1", options=ge.Options(input_shape=f"X:{ROWS},4"))
    again = ge.Session(ge.save(sess.plan, str(tmp_path / "t.gem")), runtime="v1")
    x = (np.random.default_rng(3).random((ROWS, 4)) * 7).astype(np.float32)
    for a, b in zip(sess.run(None, {"X": x}), again.run(None, {"X": x})):
        _equal(a, b)
    assert onnx.load(path).graph.output[0].type.tensor_type.elem_type == T.STRING


def test_a_static_piece_runs_as_a_host_task():
    """Four numeric tasks before a Cast to string: the compiler sinks them as a static piece (ge/partition.py);
    runtime_v1 runs the piece as a host task on an executor of its own, as runtime_v2 does."""
    m = _model([h.make_node("Relu", ["x"], ["a"]), h.make_node("Neg", ["a"], ["b"]),
                h.make_node("Abs", ["b"], ["c"]), h.make_node("Add", ["c", "c"], ["d"]),   # exact: the text matches
                h.make_node("Cast", ["d"], ["s"], to=T.STRING),
                h.make_node("StringConcat", ["s", "s"], ["y"])],
               [h.make_tensor_value_info("x", T.FLOAT, [2, 3])], [h.make_tensor_value_info("y", T.STRING, [2, 3])],
               opset=20)
    x = np.array([[-1, 0.5, 2], [3, -4, 0]], np.float32)
    sess = ge.Session(m)
    assert sess.runtime == "v1" and ge.partition.summary(sess.plan)["pieces"] == 1
    want = onnxruntime.InferenceSession(m, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert sess.run(None, {"x": x})[0].tolist() == want.tolist() == \
        ge.Session(m, runtime="v2").run(None, {"x": x})[0].tolist()


def test_batch_gears_with_host_ops():
    """dynamic_batch over a scikit-learn export: string inputs pad with "", ZipMap's maps are cut to the batch."""
    for name, x in [("onehot_strings", np.array([["a", "x"], ["b", "b"], ["c", "y"]], object)),
                    ("logreg_iris", (np.random.default_rng(5).random((3, 4)) * 7).astype(np.float32))]:
        path = str(FIXTURES / f"{name}.onnx")
        sess = ge.Session(path, options=ge.Options(dynamic_batch="2,4"))
        assert sess.runtime == "v1"
        want = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"X": x})
        for w, g in zip(want, sess.run(None, {"X": x})):
            _same(w, g)
