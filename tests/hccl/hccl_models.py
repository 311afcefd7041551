"""Small models for the HCCL tests (MatMul, Add, Relu: kernels the suite compiles anyway)."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def mlp(batch: int = 4, seed: int = 0):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((16, 8)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("Add", ["h", "b"], ["a"]),
         helper.make_node("Relu", ["a"], ["y"])], "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 8])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "b")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def one_op(op: str, shape, n_inputs: int = 1, **attrs):
    """A graph of one Hcom op (GE's names, default domain) on float32 inputs of `shape`."""
    ins = [f"x{i}" for i in range(n_inputs)]
    outs = [f"y{i}" for i in range(n_inputs)]
    g = helper.make_graph([helper.make_node(op, ins, outs, **attrs)], op,
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(shape)) for n in ins],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outs])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def feed(batch: int = 4, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((batch, 16)).astype(np.float32)
