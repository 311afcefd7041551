"""recognize_activations' tanh GELU (GPT-2's gelu_new) and fuse_activation's bias + GELU on an export's
symbolic rows and through a Reshape: the fused nodes, the unfused plan's and onnxruntime's answers, near misses."""
import math

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from pass_check import ops, randn, run_pass

import ge
from ge.passes import fuse_activation, recognize_activations

C = math.sqrt(2 / math.pi)


def _gelu_tanh_nodes(x, y, cube="pow", c=C):
    """GPT-2's export: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))."""
    cube_nodes = ([helper.make_node("Pow", [x, "three"], ["x3"])] if cube == "pow" else
                  [helper.make_node("Mul", [x, x], ["x2"]), helper.make_node("Mul", ["x2", x], ["x3"])])
    return cube_nodes + [
        helper.make_node("Mul", [x, "half"], ["xh"]), helper.make_node("Mul", ["k", "x3"], ["kx3"]),
        helper.make_node("Add", [x, "kx3"], ["inner"]), helper.make_node("Mul", ["c", "inner"], ["z"]),
        helper.make_node("Tanh", ["z"], ["t"]), helper.make_node("Add", ["one", "t"], ["t1"]),
        helper.make_node("Mul", ["xh", "t1"], [y])]


def _consts(c=C):
    return [numpy_helper.from_array(np.float32(v), n) for n, v in
            (("three", 3.0), ("half", 0.5), ("k", 0.044715), ("c", c), ("one", 1.0))]


def _model(nodes, inputs, inits, outputs=("y",)):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _check(m, feeds, disabled):
    import onnxruntime as ort
    got = ge.Session(m, runtime="v2", options=ge.Options(verify_passes=True)).run(None, feeds)
    plain = ge.Session(m, runtime="v2", options=ge.Options(disabled_passes=disabled)).run(None, feeds)
    ref = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    for g, p, r in zip(got, plain, ref):
        np.testing.assert_allclose(g, p, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cube", ["pow", "mul"])
def test_tanh_gelu_is_one_node(cube):
    m = _model(_gelu_tanh_nodes("x", "y", cube), [("x", ["n", 16])], _consts())
    g, changed = run_pass(m, recognize_activations)
    assert changed and ops(g) == ["ge::Gelu"] and g.nodes[0].attrs == {"approximate": "tanh"}
    _check(m, {"x": 3 * randn(4, 16)}, ("recognize_activations",))


def test_tanh_gelu_near_misses_stay():
    wrong_c = _model(_gelu_tanh_nodes("x", "y", c=0.7), [("x", [4, 16])], _consts(c=0.7))
    extra = _model(_gelu_tanh_nodes("x", "y"), [("x", [4, 16])], _consts(), outputs=("y", "z"))  # z read outside
    for m in (wrong_c, extra):
        g, changed = run_pass(m, recognize_activations)
        assert not changed and "ge::Gelu" not in ops(g)


def test_gpt2_conv1d_gemm_reshape_gelu_fuses_into_the_gemm():
    """Gemm on [rows, k] -> Reshape to [batch, seq, n] -> tanh GELU: the GELU runs in the Gemm's epilogue."""
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["h"]), helper.make_node("Reshape", ["h", "shape"], ["h3"])]
    nodes += _gelu_tanh_nodes("h3", "a") + [helper.make_node("Mul", ["a", "u"], ["y"])]   # the next layer's read
    inits = _consts() + [numpy_helper.from_array(randn(8, 16), "w"), numpy_helper.from_array(randn(16), "b"),
                         numpy_helper.from_array(np.array([2, -1, 16], np.int64), "shape")]
    m = _model(nodes, [("x", ["rows", 8]), ("u", [16])], inits)
    g = ge.compiler.optimize(ge.compiler.import_model(m), ge.Options())
    assert ops(g) == ["ge::FusedGemm", "Reshape", "Mul"] and g.nodes[0].attrs["activation"] == "GeluTanh"
    _check(m, {"x": randn(6, 8), "u": randn(16)}, ("fuse_activation",))


def test_bias_and_gelu_fuse_into_the_matmul_on_symbolic_rows():
    """BERT's FFN as exported: MatMul [batch, seq, k] @ W, Add bias, erf GELU, on dynamic axes."""
    r2 = np.float32(math.sqrt(2))
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"]), helper.make_node("Add", ["bias", "mm"], ["h"]),
             helper.make_node("Div", ["h", "r2"], ["hd"]), helper.make_node("Erf", ["hd"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["e1"]), helper.make_node("Mul", ["h", "e1"], ["he"]),
             helper.make_node("Mul", ["he", "half"], ["y"])]
    inits = [numpy_helper.from_array(randn(8, 32), "w"), numpy_helper.from_array(randn(32), "bias"),
             numpy_helper.from_array(r2, "r2"), numpy_helper.from_array(np.float32(1), "one"),
             numpy_helper.from_array(np.float32(0.5), "half")]
    m = _model(nodes, [("x", ["batch", "seq", 8])], inits)
    g = ge.compiler.optimize(ge.compiler.import_model(m), ge.Options())
    assert ops(g) == ["ge::FusedMatMul"] and g.nodes[0].attrs["activation"] == "Gelu" and len(g.nodes[0].inputs) == 3
    _check(m, {"x": randn(2, 5, 8)}, ("fuse_activation",))


def test_a_bias_add_that_broadcasts_the_matmul_stays():
    """An Add of a [seq, n] tensor is no bias row, symbolic rows or not."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"]), helper.make_node("Add", ["mm", "c"], ["y"])]
    m = _model(nodes, [("x", ["batch", 5, 8])], [numpy_helper.from_array(randn(8, 4), "w"),
                                                 numpy_helper.from_array(randn(5, 4), "c")])
    g, changed = run_pass(m, fuse_activation)
    assert not changed and ops(g) == ["MatMul", "Add"]
