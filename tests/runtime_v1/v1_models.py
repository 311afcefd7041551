"""Small ONNX graphs for runtime_v1 tests."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper


def _model(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def chain(n: int = 1000, size: int = 16):
    """x -> Relu -> Neg -> Abs -> Sigmoid -> ... (n tiny nodes)."""
    ops = ["Relu", "Neg", "Abs", "Sigmoid"]
    nodes, prev = [], "x"
    for k in range(n):
        nodes.append(helper.make_node(ops[k % 4], [prev], [f"t{k}"]))
        prev = f"t{k}"
    return _model(nodes, [_vi("x", [size])], [_vi(prev, [size])])


def mlp(n: int = 8, seed: int = 0):
    """y = relu(x @ W1 + b1) @ W2 + b2, plus z = Reshape(x) (an output aliasing an input) and
    c = a constant output."""
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array(rng.standard_normal((n, n)).astype(np.float32), "W1"),
             numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "b1"),
             numpy_helper.from_array(rng.standard_normal((n, n)).astype(np.float32), "W2"),
             numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "b2"),
             numpy_helper.from_array(np.array([2 * n], np.int64), "flat")]
    nodes = [helper.make_node("Gemm", ["x", "W1", "b1"], ["h"]),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "W2", "b2"], ["y"]),
             helper.make_node("Reshape", ["x", "flat"], ["z"])]
    return _model(nodes, [_vi("x", [2, n])], [_vi("y", [2, n]), _vi("z", [2 * n])], inits), inits


def reference_mlp(x, inits):
    w1, b1, w2, b2 = (numpy_helper.to_array(t) for t in inits[:4])
    return np.maximum(x @ w1 + b1, 0) @ w2 + b2
