"""Static control flow on runtime_v1 (runtime_v1/labels.py): If and Loop as label tasks of the task sink,
bit-equal to runtime_v2's host-driven run and matching onnxruntime / onnx.reference."""
from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx.reference import ReferenceEvaluator

import ge
from ge.errors import GEError, ModelLoadError
from ge.plan import static_control_reason
from ge.zoo import rnn_loop
from runtime_v1.sink import GOTO, SWITCH

F = T.FLOAT


def _model(nodes, inputs, outputs, inits=()):
    m = h.make_model(h.make_graph(nodes, "cf", inputs, outputs, list(inits)), opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _branches():
    """Three outer streams (Relu, Sigmoid, the condition) and an If whose else passes an outer value on."""
    out = lambda name: [h.make_tensor_value_info(name, F, [4, 16])]  # noqa: E731
    then = h.make_graph([h.make_node("Mul", ["a", "a"], ["t"])], "then", [], out("t"))
    other = h.make_graph([h.make_node("Identity", ["b"], ["e"])], "else", [], out("e"))
    return _model([h.make_node("Relu", ["x"], ["a"]), h.make_node("Sigmoid", ["x"], ["b"]),
                   h.make_node("ReduceSum", ["x"], ["s"], keepdims=0), h.make_node("Greater", ["s", "zero"], ["c"]),
                   h.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other, name="pick"),
                   h.make_node("Add", ["y", "b"], ["z"])],
                  [h.make_tensor_value_info("x", F, [4, 16])], [h.make_tensor_value_info("z", F, [4, 16])],
                  [h.make_tensor("zero", F, [], [0.0])])


def _nested():
    """while i < M and sum(y) < 100: y = If(sum(y) > 0, y * 0.5, y + 1); (u, w) = (w, u): an If in the body,
    two carried values passed through to each other's slot."""
    then = h.make_graph([h.make_node("Mul", ["y_in", "half"], ["p"])], "t", [], [h.make_tensor_value_info("p", F, [3])])
    other = h.make_graph([h.make_node("Add", ["y_in", "one"], ["q"])], "e", [], [h.make_tensor_value_info("q", F, [3])])
    vi = h.make_tensor_value_info
    body = h.make_graph([
        h.make_node("ReduceSum", ["y_in"], ["s"], keepdims=0), h.make_node("Greater", ["s", "zero"], ["c"]),
        h.make_node("If", ["c"], ["y_out"], then_branch=then, else_branch=other, name="inner"),
        h.make_node("ReduceSum", ["y_out"], ["s2"], keepdims=0), h.make_node("Less", ["s2", "hundred"], ["cond_out"]),
        h.make_node("Identity", ["u_in"], ["w_out"]), h.make_node("Identity", ["w_in"], ["u_out"]),
    ], "body", [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("y_in", F, [3]), vi("u_in", F, [3]),
                vi("w_in", F, [3])],
        [vi("cond_out", T.BOOL, []), vi("y_out", F, [3]), vi("u_out", F, [3]), vi("w_out", F, [3])])
    inits = [h.make_tensor(n, F, [], [v]) for n, v in (("half", 0.5), ("one", 1.0), ("zero", 0.0), ("hundred", 100.))]
    return _model([h.make_node("Loop", ["M", "go", "y0", "u0", "w0"], ["y", "u", "w"], body=body, name="outer")],
                  [vi("M", T.INT64, []), vi("go", T.BOOL, []), *[vi(n, F, [3]) for n in ("y0", "u0", "w0")]],
                  [vi(n, F, [3]) for n in ("y", "u", "w")], inits)


def _both(model, feeds):
    """Outputs of runtime_v1 and runtime_v2, asserted bit-equal; v1's session."""
    s1, s2 = ge.Session(model, runtime="v1"), ge.Session(model, runtime="v2")
    a, b = s1.run(None, feeds), s2.run(None, feeds)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    return s1, a


def _label_rows(session):
    return sum(int(a) in (SWITCH, GOTO) for st in session._executor.model.streams for a in st.addrs)


def test_if_runs_as_label_tasks_beside_other_streams():
    m = _branches()
    s = ge.Session(m)
    assert s.runtime == "v1" and len({n.stream for n in s.plan.nodes}) > 1   # auto picks the task sink
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    for sign in (1, -1):     # both branches: a task writes the If's output in place; a memcpy passes b on
        x = (sign * np.abs(np.random.default_rng(0).standard_normal((4, 16)))).astype(np.float32)
        s1, got = _both(m, {"x": x})
        np.testing.assert_allclose(got[0], ref.run(None, {"x": x})[0], rtol=1e-6, atol=1e-6)
    assert _label_rows(s1) == 2                  # LabelSwitchByIndex and the then branch's LabelGoto


def test_loop_rnn_matches_onnxruntime_and_runtime_v2():
    m = rnn_loop(steps=6, batch=2, hidden=16)
    rng = np.random.default_rng(1)
    feeds = {"x": rng.standard_normal((6, 2, 16)).astype(np.float32), "h0": rng.standard_normal((2, 16)).astype(
        np.float32)}
    s1, got = _both(m, feeds)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    assert s1._executor.stats()["fallback_tasks"] == 0 and s1._executor.model.control_bytes > 0
    assert "Loop(" in s1.plan.summary() and "(bodies body: label tasks)" in s1.plan.summary()
    traced = s1.run_traced(feeds, ge.npu.Tracer())   # the traced path takes the jumps from Python
    for g, t in zip(got, traced):
        np.testing.assert_array_equal(g, t)
    with pytest.raises(GEError, match="runtime_v1 traces it"):   # v2 runs the Loop host-driven: says where to go
        ge.Session(m, runtime="v2").run_traced(feeds, ge.npu.Tracer())


@pytest.mark.parametrize("trips, go, y0", [(10, True, [-5, 1, 1]), (0, True, [1, 2, 3]), (50, False, [1, 2, 3]),
                                           (50, True, [-300, 1, 1])])
def test_nested_if_in_a_loop_with_a_condition(trips, go, y0):
    """Exits on the trip count, before the first iteration, on the condition input, on the body's condition."""
    m = _nested()
    feeds = {"M": np.array(trips, np.int64), "go": np.array(go), "y0": np.array(y0, np.float32),
             "u0": np.arange(3, dtype=np.float32), "w0": -np.arange(3, dtype=np.float32)}
    _, got = _both(m, feeds)
    for g, w in zip(got, ReferenceEvaluator(m).run(None, feeds)):
        np.testing.assert_array_equal(g, w)


def _scan(rin, rout):
    """Scan over x's rows (axis 0): s += x_t, out rows s * x_t and x_t passed through; the given directions."""
    vi = h.make_tensor_value_info
    body = h.make_graph([h.make_node("Add", ["s_in", "xt"], ["s_out"]), h.make_node("Mul", ["s_out", "xt"], ["o"]),
                         h.make_node("Identity", ["xt"], ["o2"])], "body", [vi("s_in", F, [3]), vi("xt", F, [3])],
                        [vi("s_out", F, [3]), vi("o", F, [3]), vi("o2", F, [3])])
    return _model([h.make_node("Scan", ["s0", "x"], ["s", "ys", "zs"], body=body, num_scan_inputs=1, name="scan",
                               scan_input_directions=[rin], scan_output_directions=[rout, 0])],
                  [vi("s0", F, [3]), vi("x", F, [5, 3])], [vi("s", F, [3]), vi("ys", F, [5, 3]), vi("zs", F, [5, 3])])


@pytest.mark.parametrize("rin, rout", [(0, 0), (1, 1)])
def test_scan_rows_in_both_directions(rin, rout):
    m = _scan(rin, rout)
    feeds = {"s0": np.ones(3, np.float32), "x": np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)}
    assert ge.Session(m).runtime == "v1"
    _, got = _both(m, feeds)
    want = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_a_scan_over_axis_1_runs_host_driven_and_v1_says_why():
    m = _scan(0, 0)
    m.graph.node[0].attribute.append(h.make_attribute("scan_input_axes", [1]))
    m.graph.input[1].CopyFrom(h.make_tensor_value_info("x", F, [3, 5]))
    assert ge.Session(m).runtime == "v2"
    with pytest.raises(GEError, match="Scan node 'scan'.*axis other than 0"):
        ge.Session(m, runtime="v1")


def test_a_scan_output_planned_for_more_iterations_is_an_error():
    """The scan output's rows come from the trip count; a body condition ending the loop early leaves them
    unfilled: a typed error naming the node on both runtimes, and the session runs again after."""
    m = rnn_loop(steps=4, batch=1, hidden=4)
    body = m.graph.node[0].attribute[0].g
    body.node[-1].CopyFrom(h.make_node("Less", ["t", "two"], ["cond_out"]))   # stop after 3 iterations
    body.initializer.append(h.make_tensor("two", T.INT64, [], [2]))
    m.graph.node[0].input[1] = "go"                   # (without a condition input the body's is ignored)
    m.graph.initializer.append(h.make_tensor("go", T.BOOL, [], [True]))
    feeds = {"x": np.ones((4, 1, 4), np.float32), "h0": np.zeros((1, 4), np.float32)}
    for rt in ("v1", "v2"):
        s = ge.Session(m, runtime=rt)
        with pytest.raises(GEError, match="rnn"):
            s.run(None, feeds)
        with pytest.raises(GEError, match="rnn"):
            s.run(None, feeds)


def test_offline_static_loop_runs_on_v1_and_a_mismatched_body_is_refused(tmp_path):
    from ge.offline.format import seal
    m = rnn_loop(steps=3, batch=1, hidden=4)
    feeds = {"x": np.ones((3, 1, 4), np.float32), "h0": np.zeros((1, 4), np.float32)}
    path = ge.save(ge.compile(m), f"{tmp_path}/rnn.gem/")
    s = ge.Session(path)
    assert s.runtime == "v1"
    for a, b in zip(s.run(None, feeds), ge.Session(m, runtime="v2").run(None, feeds)):
        np.testing.assert_array_equal(a, b)
    with open(os.path.join(path, "plan.json")) as f:
        doc = json.load(f)
    doc.pop("digest")
    body = doc["nodes"][0]["bodies"][0][1]
    body["tensors"][body["outputs"][1]][2] = [2, 4]   # the new h: claimed 8 floats wide, copied into 4
    with open(os.path.join(path, "plan.json"), "w") as f:
        f.write(seal(doc))
    with pytest.raises(ModelLoadError, match="h_out"):
        ge.load(path)
    # the label tasks' own check (a plan whose body disagrees with its node would overrun the node's buffer)
    plan = ge.compile(m)
    node = plan.nodes[0]
    attr, body_plan, n = node.bodies[0]
    k = body_plan.outputs[1]
    tensors = list(body_plan.tensors)
    tensors[k] = dataclasses.replace(tensors[k], shape=(2, 4))
    bad = dataclasses.replace(node, bodies=((attr, dataclasses.replace(body_plan, tensors=tuple(tensors)), n),))
    assert "carried value 0 out" in static_control_reason(plan, bad)
    with pytest.raises(GEError, match="runtime_v1 cannot run Loop node 'rnn'.*carried value 0 out"):
        ge.Session(dataclasses.replace(plan, nodes=(bad,)), runtime="v1")


def test_single_stream_mode_is_still_refused_with_control_flow():
    with pytest.raises(GEError, match="single-stream mode with control-flow"):
        ge.Session(_branches(), options=ge.Options(enable_single_stream=True))
