"""drop_qdq: DQ -> MaxPool -> Q of one scale and zero point becomes an 8-bit MaxPool; Before/Expected,
numerics against onnx.reference's float form (the same bits), and what stays."""
import numpy as np
from onnx.reference import ReferenceEvaluator
from pass_check import model, node, ops, printed, run_pass

import ge
from ge.passes import drop_qdq

INITS = {"s": np.float32(0.05), "z": np.int8(-3), "s2": np.float32(0.07)}


def _qdq_pool(out_scale="s"):
    nodes = [node("QuantizeLinear", ["x", "s", "z"], ["xq"]), node("DequantizeLinear", ["xq", "s", "z"], ["xd"]),
             node("MaxPool", ["xd"], ["p"], name="pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             node("QuantizeLinear", ["p", out_scale, "z"], ["pq"]), node("DequantizeLinear", ["pq", "s", "z"], ["y"])]
    return model(nodes, {"x": [1, 4, 7, 7]}, ["y"], INITS, opset=19)


def test_maxpool_between_dq_and_q_runs_on_int8():
    g, changed = run_pass(_qdq_pool(), drop_qdq)
    assert changed
    assert printed(g)[-2:] == [
        "%pq:i8[1,4,4,4] = MaxPool[kernel_shape=[3,3],pads=[1,1,1,1],strides=[2,2]](%xq)  # pool",
        "%y:f32[1,4,4,4] = DequantizeLinear(%pq, %s, %z)  # y"]
    x = (np.random.default_rng(0).standard_normal((1, 4, 7, 7)) * 4).astype(np.float32)
    want = ReferenceEvaluator(_qdq_pool()).run(None, {"x": x})[0]
    for runtime in ("v1", "v2"):
        np.testing.assert_array_equal(ge.Session(_qdq_pool(), runtime=runtime).run(None, {"x": x})[0], want)


def test_another_scale_keeps_the_float_pool():
    g, changed = run_pass(_qdq_pool("s2"), drop_qdq)
    assert not changed and "MaxPool" in ops(g) and ops(g).count("DequantizeLinear") == 2
