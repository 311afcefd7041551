"""fuse_layer_norm: the pre-opset-17 LayerNorm decomposition -> LayerNormalization; numerics against the unfused
plan and onnxruntime; near misses stay."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from pass_check import ops, randn, run_pass

import ge
from ge.passes import fuse_layer_norm

N = 16


def _model(opset=13, square="pow", mean_axis=-1, eps=1e-5, extra_d=False, affine=True):
    def mean(x, y):
        if opset >= 18:
            return helper.make_node("ReduceMean", [x, "axes"], [y], keepdims=1)
        return helper.make_node("ReduceMean", [x], [y], axes=[mean_axis], keepdims=1)
    nodes = [mean("x", "m"), helper.make_node("Sub", ["x", "m"], ["d"]),
             helper.make_node("Pow", ["d", "two"], ["sq"]) if square == "pow" else
             helper.make_node("Mul", ["d", "d"], ["sq"]),
             mean("sq", "v"), helper.make_node("Add", ["v", "eps"], ["ve"]), helper.make_node("Sqrt", ["ve"], ["sd"]),
             helper.make_node("Div", ["d", "sd"], ["n" if affine else "y"])]
    if affine:
        nodes += [helper.make_node("Mul", ["n", "gamma"], ["ng"]), helper.make_node("Add", ["ng", "beta"], ["y"])]
    outs = ["y"] + (["d"] if extra_d else [])
    inits = [numpy_helper.from_array(np.float32(2), "two"), numpy_helper.from_array(np.float32(eps), "eps"),
             numpy_helper.from_array(randn(N), "gamma"), numpy_helper.from_array(randn(N), "beta"),
             numpy_helper.from_array(np.array([mean_axis], np.int64), "axes")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 3, N])],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _check(m, feeds):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL   # its own LayerNormFusion off
    got = ge.Session(m, runtime="v2", options=ge.Options(verify_passes=True)).run(None, feeds)
    plain = ge.Session(m, runtime="v2", options=ge.Options(disabled_passes=("fuse_layer_norm",))).run(None, feeds)
    ref = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)
    for g, p, r in zip(got, plain, ref):
        np.testing.assert_allclose(g, p, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("opset, square, affine", [(13, "pow", True), (13, "mul", False), (18, "pow", True)])
def test_decomposed_layer_norm_is_one_node(opset, square, affine):
    m = _model(opset, square, affine=affine)
    g, changed = run_pass(m, fuse_layer_norm)
    assert changed and ops(g) == ["LayerNormalization"] and g.nodes[0].outputs[0].name == "y"
    assert g.nodes[0].attrs["epsilon"] == pytest.approx(1e-5) and len(g.nodes[0].inputs) == (3 if affine else 2)
    _check(m, {"x": 3 * randn(2, 3, N) + 1})


@pytest.mark.parametrize("near_miss", ["axis", "eps", "extra_user"])
def test_near_misses_stay(near_miss):
    m = {"axis": lambda: _model(mean_axis=1), "eps": lambda: _model(eps=-1.0),
         "extra_user": lambda: _model(extra_d=True)}[near_miss]()
    g, changed = run_pass(m, fuse_layer_norm)
    assert not changed and "LayerNormalization" not in ops(g)
