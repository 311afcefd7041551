"""Control flow and sequences: small onnx.helper models (If on a data-dependent condition, a Loop with a
carried state and a scan output, a Scan, a torch-like scripted loop over a sequence) against onnxruntime
and onnx.reference, and the errors bad bodies give."""
from __future__ import annotations

import json
import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx.reference import ReferenceEvaluator

import ge
from ge.errors import GEError, ModelLoadError
from ge.frontends.onnx import import_onnx
from ge.ir import verify

F = T.FLOAT


def _model(nodes, inputs, outputs, inits=(), opset=17):
    g = h.make_graph(nodes, "cf", inputs, outputs, list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _check(model, feeds, ref=None, runtime="v2"):
    want = (ref or (lambda m, f: ort.InferenceSession(m.SerializeToString(), providers=[
        "CPUExecutionProvider"]).run(None, f)))(model, feeds)
    s = ge.Session(model)
    assert s.runtime == runtime         # host-driven, or label tasks for static control flow (test_v1_labels.py)
    got = s.run(None, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(w, list):
            assert len(g) == len(w) and all(np.allclose(a, b) for a, b in zip(g, w))
        else:
            assert g.shape == np.asarray(w).shape and g.dtype == np.asarray(w).dtype
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    return s


def _if_model():
    """y = x * w when sum(x) > 0 else sum(x, axis 1): the branches differ in shape; w is captured."""
    then = h.make_graph([h.make_node("Mul", ["x", "w"], ["t"])], "then", [],
                        [h.make_tensor_value_info("t", F, None)])
    other = h.make_graph([h.make_node("ReduceSum", ["x", "ax"], ["e"], keepdims=0)], "else", [],
                         [h.make_tensor_value_info("e", F, None)])
    nodes = [h.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             h.make_node("Greater", ["s", "zero"], ["c"]),
             h.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other, name="branch")]
    inits = [h.make_tensor("zero", F, [], [0.0]), h.make_tensor("ax", T.INT64, [1], [1]),
             onnx.numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4), "w")]
    return _model(nodes, [h.make_tensor_value_info("x", F, [3, 4])], [h.make_tensor_value_info("y", F, None)],
                  inits)


def test_if_on_a_data_dependent_condition():
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    s = _check(_if_model(), {"x": np.abs(x)})
    np.testing.assert_allclose(s.run(None, {"x": -np.abs(x)})[0], (-np.abs(x)).sum(1), rtol=1e-5)


def _loop_model():
    """for i < M while sum(y) < limit: y = y + x (x captured); scan out: y * i. Outputs y and the scans."""
    body = h.make_graph([
        h.make_node("Add", ["y_in", "x"], ["y_out"]),
        h.make_node("Cast", ["i"], ["fi"], to=F),
        h.make_node("Mul", ["y_out", "fi"], ["scan"]),
        h.make_node("ReduceSum", ["y_out"], ["total"], keepdims=0),
        h.make_node("Less", ["total", "limit"], ["cond_out"]),
    ], "body", [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("cond_in", T.BOOL, []),
                h.make_tensor_value_info("y_in", F, [2])],
        [h.make_tensor_value_info("cond_out", T.BOOL, []), h.make_tensor_value_info("y_out", F, [2]),
         h.make_tensor_value_info("scan", F, [2])])
    nodes = [h.make_node("Loop", ["M", "go", "y0"], ["y", "scans"], body=body, name="loop")]
    return _model(nodes, [h.make_tensor_value_info(n, t, s) for n, t, s in
                          (("M", T.INT64, []), ("go", T.BOOL, []), ("y0", F, [2]), ("x", F, [2]),
                           ("limit", F, []))],
                  [h.make_tensor_value_info("y", F, [2]), h.make_tensor_value_info("scans", F, None)])


def test_loop_with_a_carried_state_and_a_scan_output():
    feeds = {"M": np.array(10, np.int64), "go": np.array(True), "y0": np.array([1, 2], np.float32),
             "x": np.array([0.5, 1], np.float32), "limit": np.array(9, np.float32)}
    _check(_loop_model(), feeds)                             # stops on the condition after 3 iterations
    _check(_loop_model(), {**feeds, "limit": np.array(1e9, np.float32)})   # runs M times


def test_scan_reverse_and_axis():
    """Scan: a running sum over axis 1 of x, backwards, stacked on output axis 1."""
    body = h.make_graph([h.make_node("Add", ["s_in", "xt"], ["s_out"]), h.make_node("Identity", ["s_out"], ["o"])],
                        "body", [h.make_tensor_value_info("s_in", F, [3]), h.make_tensor_value_info("xt", F, [3])],
                        [h.make_tensor_value_info("s_out", F, [3]), h.make_tensor_value_info("o", F, [3])])
    m = _model([h.make_node("Scan", ["s0", "x"], ["s", "ys"], body=body, num_scan_inputs=1,
                            scan_input_axes=[1], scan_input_directions=[1], scan_output_axes=[1])],
               [h.make_tensor_value_info("s0", F, [3]), h.make_tensor_value_info("x", F, [3, 5])],
               [h.make_tensor_value_info("s", F, [3]), h.make_tensor_value_info("ys", F, [3, 5])])
    x = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    _check(m, {"s0": np.zeros(3, np.float32), "x": x})


def _scripted_loop():
    """What torch.jit.script exports for `outs = []; for i in range(n): h = cat([h, x * i]); outs.append(h.sum())`
    then `stack(outs)`: a sequence carried through a Loop, a tensor growing each iteration."""
    body = h.make_graph([
        h.make_node("Cast", ["i"], ["fi"], to=F),
        h.make_node("Mul", ["x", "fi"], ["xi"]),
        h.make_node("Concat", ["h_in", "xi"], ["h_out"], axis=0),
        h.make_node("ReduceSum", ["h_out"], ["r"], keepdims=0),
        h.make_node("SequenceInsert", ["seq_in", "r"], ["seq_out"]),
        h.make_node("Identity", ["cond_in"], ["cond_out"]),
    ], "body", [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("cond_in", T.BOOL, []),
                h.make_tensor_value_info("h_in", F, ["n"]),
                h.make_value_info("seq_in", h.make_sequence_type_proto(h.make_tensor_type_proto(F, [])))],
        [h.make_tensor_value_info("cond_out", T.BOOL, []), h.make_tensor_value_info("h_out", F, ["m"]),
         h.make_value_info("seq_out", h.make_sequence_type_proto(h.make_tensor_type_proto(F, [])))])
    nodes = [h.make_node("SequenceEmpty", [], ["seq0"], dtype=F),
             h.make_node("Loop", ["n", "true", "x", "seq0"], ["h", "seq"], body=body, name="scripted"),
             h.make_node("ConcatFromSequence", ["seq"], ["sums"], axis=0, new_axis=1),
             h.make_node("SequenceLength", ["seq"], ["count"])]
    return _model(nodes, [h.make_tensor_value_info("n", T.INT64, []), h.make_tensor_value_info("x", F, [2])],
                  [h.make_tensor_value_info(n, t, None) for n, t in (("h", F), ("sums", F), ("count", T.INT64))],
                  [h.make_tensor("true", T.BOOL, [], [True])])


def test_torch_like_scripted_loop_with_a_sequence():
    feeds = {"n": np.array(4, np.int64), "x": np.array([1, -2], np.float32)}
    ref = lambda m, f: ReferenceEvaluator(m).run(None, f)  # noqa: E731
    s = _check(_scripted_loop(), feeds, ref)
    _check(_scripted_loop(), feeds)                               # onnxruntime agrees
    h_out = s.run(["h"], {"n": np.array(6, np.int64), "x": feeds["x"]})[0]
    assert h_out.shape == (14,)                                   # one body plan, every iteration's shape


def test_runtime_v1_refuses_control_flow_naming_the_node():
    with pytest.raises(GEError, match="runtime_v1 cannot run If node 'branch'.*runtime='v2'"):
        ge.Session(_if_model(), runtime="v1")


@pytest.mark.parametrize("make", [_if_model, _scripted_loop])
def test_offline_models_hold_bodies(make, tmp_path):
    """A .gem keeps each control node's bodies (plans of their own) and the sequence tensors' kinds; the
    loaded plan runs as the compiled one."""
    plan = ge.compile(make())
    loaded = ge.load(ge.save(plan, tmp_path / "cf.gem"))
    assert loaded.to_json() == plan.to_json()
    bodies = lambda p: [(a, b.to_json(), k) for n in p.nodes for a, b, k in n.bodies]  # noqa: E731
    assert bodies(loaded) == bodies(plan) and bodies(plan)
    feeds = ({"n": np.array(4, np.int64), "x": np.array([1, -2], np.float32)} if make is _scripted_loop else
             {"x": np.arange(12, dtype=np.float32).reshape(3, 4) - 5})
    for a, b in zip(ge.Session(plan).run(None, feeds), ge.Session(loaded).run(None, feeds)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def _branch(m, name):
    return next(a.g for a in m.graph.node[2].attribute if a.name == name)


def test_ir_bodies_print_and_verify():
    g = import_onnx(_if_model())
    verify(g)
    text = str(g)
    assert "then_branch: graph branch.then_branch" in text and "capture %w:f32[3,4]" in text
    node = next(n for n in g.nodes if n.op_type == "If")
    # the captures, body by body in attribute order: else's (x, ax), then's (x, w)
    assert [v.name for v in node.inputs] == ["c", "x", "ax", "x", "w"]
    g.set_input(node, 4, None)                                       # drop then's captured w
    with pytest.raises(GEError, match="then_branch captures 'w'"):
        verify(g)


def test_body_outputs_must_match_the_node():
    m = _loop_model()
    m.graph.node[0].output.append("extra")
    with pytest.raises(ModelLoadError, match="Loop node 'loop'.*outputs"):
        ge.Session(m)
    m = _if_model()
    _branch(m, "then_branch").output.append(h.make_tensor_value_info("c", T.BOOL, []))
    with pytest.raises(ModelLoadError, match="If node 'branch': its then_branch gives 2 outputs, the node has 1"):
        ge.Session(m)


def test_unknown_captured_name_names_the_node():
    m = _if_model()
    _branch(m, "then_branch").node[0].input[1] = "nowhere"
    with pytest.raises(ModelLoadError, match="Mul node 'Mul_0' reads 'nowhere'.*If node 'branch'"):
        ge.Session(m)


def test_nested_if_in_a_loop_captures_through_two_scopes():
    """The If inside the Loop body reads `x` of the main graph: the body captures it, the If captures it
    from the body."""
    then = h.make_graph([h.make_node("Add", ["y_in", "x"], ["t"])], "then", [],
                        [h.make_tensor_value_info("t", F, [2])])
    other = h.make_graph([h.make_node("Sub", ["y_in", "x"], ["e"])], "else", [],
                         [h.make_tensor_value_info("e", F, [2])])
    body = h.make_graph([
        h.make_node("Mod", ["i", "two"], ["r"]), h.make_node("Equal", ["r", "zero"], ["even"]),
        h.make_node("If", ["even"], ["y_out"], then_branch=then, else_branch=other, name="inner"),
        h.make_node("Identity", ["cond_in"], ["cond_out"]),
    ], "body", [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("cond_in", T.BOOL, []),
                h.make_tensor_value_info("y_in", F, [2])],
        [h.make_tensor_value_info("cond_out", T.BOOL, []), h.make_tensor_value_info("y_out", F, [2])])
    m = _model([h.make_node("Loop", ["M", "", "y0"], ["y"], body=body, name="outer")],
               [h.make_tensor_value_info("M", T.INT64, []), h.make_tensor_value_info("y0", F, [2]),
                h.make_tensor_value_info("x", F, [2])], [h.make_tensor_value_info("y", F, [2])],
               [h.make_tensor("two", T.INT64, [], [2]), h.make_tensor("zero", T.INT64, [], [0])])
    feeds = {"M": np.array(5, np.int64), "y0": np.zeros(2, np.float32), "x": np.array([1, 3], np.float32)}
    _check(m, feeds, runtime="v1")                                # static: the task sink's label tasks
    g = import_onnx(m)
    verify(g)
    assert "capture %x:f32[2]" in str(g)


def _deepen(d, levels):
    """d with its If's then_branch replaced by the whole plan, `levels` times over (each level a valid plan)."""
    inner = json.loads(json.dumps(d))
    for _ in range(levels):
        outer = json.loads(json.dumps(d))
        next(n for n in outer["nodes"] if n["op_type"] == "If")["bodies"][0][1] = inner
        inner = outer
    d.clear()
    d.update(inner)


BAD_BODIES = {
    "a body on a plain node": (lambda d: d["nodes"][0].__setitem__("bodies", [["body", {}, 0]]), r"has bodies"),
    "a branch missing": (lambda d: next(n for n in d["nodes"] if n["op_type"] == "If")["bodies"].pop(), r"has bodies"),
    "captures beyond the inputs": (lambda d: next(n for n in d["nodes"] if n["op_type"] == "If")["bodies"][0]
                                   .__setitem__(2, 99), r"bodies\[0\]\.captured"),
    "a body's tensor index": (lambda d: next(n for n in d["nodes"] if n["op_type"] == "If")["bodies"][0][1]["nodes"][0]
                              ["inputs"].__setitem__(0, 10 ** 6), r"bodies\[0\]\.nodes\[0\]\.inputs\[0\]"),
    "bodies nested too deep": (lambda d: _deepen(d, 17), r"nest deeper than 16"),
}


@pytest.mark.parametrize("case", sorted(BAD_BODIES))
def test_offline_bodies_are_untrusted(case, tmp_path):
    """A resealed .gem whose bodies do not fit their node is refused naming the field (read.py)."""
    from ge.offline.format import seal
    path = ge.save(ge.compile(_if_model()), f"{tmp_path}/cf.gem/")
    with open(os.path.join(path, "plan.json")) as f:
        doc = json.load(f)
    doc.pop("digest")
    edit, match = BAD_BODIES[case]
    edit(doc)
    with open(os.path.join(path, "plan.json"), "w") as f:
        f.write(seal(doc))
    with pytest.raises(ModelLoadError, match=match):
        ge.load(path)
