"""A plan without a memory plan keeps its no-task Concats' flag (Plan.memory None: dataclasses.replace, or an
offline model whose plan.json says "memory": null). Nothing laid the inputs out in the output then, so
runtime_v2 runs such a Concat as the copy its launch is (it once aliased an output nobody wrote: the
next kernel got None, a TypingError deep in a kernel; seen on DenseNet in bench/test_memory_arena.py)."""
import dataclasses

import numpy as np
from onnx import TensorProto, helper

import ge


def _model():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Sigmoid", ["x"], ["b"]),
             helper.make_node("Concat", ["a", "b"], ["c"], axis=1), helper.make_node("Neg", ["c"], ["y"])]
    return helper.make_model(helper.make_graph(nodes, "concat", [x], [y]),
                             opset_imports=[helper.make_opsetid("", 17)])


def test_no_task_concat_without_a_memory_plan_copies(tmp_path):
    plan = ge.compile(_model())
    assert any(n.no_task for n in plan.nodes)   # the Concat is laid out in place
    x = np.random.default_rng(0).standard_normal((1, 4, 8, 8)).astype(np.float32)
    want = -np.concatenate([np.maximum(x, 0), 1 / (1 + np.exp(-x))], axis=1)
    bare = dataclasses.replace(plan, memory=None)
    (y,) = ge.Session(bare, runtime="v2").run(None, {"x": x})
    np.testing.assert_allclose(y, want, rtol=1e-6)
    ge.save(bare, tmp_path / "bare.gem")   # the same plan as a user's offline model
    (y,) = ge.Session(str(tmp_path / "bare.gem"), runtime="v2").run(None, {"x": x})
    np.testing.assert_allclose(y, want, rtol=1e-6)
