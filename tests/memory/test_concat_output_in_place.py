"""A Concat that is a graph output costs no task either (memory/continuous.py rule 2): its inputs' producers
write into their slices of the output's io block, on runtime_v1 into the caller's array when bound;
runtime_v2 gives the parts blocks of their own and runs the Concat. Golden layout, then the values."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import ge
from ge.memory.report import memory_layout


def _concat_output(second_output=False):
    """x -> a -> b, c (two branches) -> Concat y, a graph output (and, when asked, b too)."""
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Sigmoid", ["a"], ["b"]),
             helper.make_node("Neg", ["a"], ["c"]), helper.make_node("Concat", ["b", "c"], ["y"], axis=1)]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 128, 4])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ["y"] + ["b"] * second_output]
    return helper.make_model(helper.make_graph(nodes, "concat_output", [x], outs),
                             opset_imports=[helper.make_opsetid("", 17)])


GOLDEN = """\
feature_map 2048 B by binary-block; bound 2048 B; io 6144 B
  0 Relu       %a feature_map@0+2048[0,2]
  1 Sigmoid    %b io@0+2048 in y
  2 Neg        %c io@2048+2048 in y
  3 Concat     %y io@0+4096 (no task)"""


def test_golden_layout():
    plan = ge.compile(_concat_output(), ge.Options(enable_single_stream=True))
    assert memory_layout(plan) == GOLDEN


def _want(x):
    a = np.maximum(x, 0)
    return np.concatenate([1 / (1 + np.exp(-a)), -a], axis=1)


@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_values_fresh_and_bound(runtime):
    x = np.random.default_rng(0).standard_normal((1, 128, 4)).astype(np.float32)
    sess = ge.Session(_concat_output(), runtime=runtime)
    assert [n.no_task for n in sess.plan.nodes if n.op_type == "Concat"] == [True]
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], _want(x), rtol=1e-6)
    y = np.full((1, 256, 4), np.nan, np.float32)
    (got,) = sess.run(None, {"x": x}, outputs={"y": y})
    np.testing.assert_allclose(y, _want(x), rtol=1e-6)
    np.testing.assert_allclose(sess.run(None, {"x": 2 * x})[0], _want(2 * x), rtol=1e-6)  # the next run's own


def test_a_part_that_is_an_output_keeps_the_copy():
    plan = ge.compile(_concat_output(second_output=True))
    assert [n.no_task for n in plan.nodes if n.op_type == "Concat"] == [False]
