"""The parity suite's fixtures: every test runs against onnxruntime and against ge.ort (`rt`), so what it
asserts is onnxruntime's documented behaviour and ge's agreement with it.

Models are built with onnx.helper and kept tiny (Add, Relu, Mul on float32: kernels the suite has compiled
already), so the suite adds no Numba specialisation."""
from __future__ import annotations

import importlib

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

MODULES = ("onnxruntime", "ge.ort")


@pytest.fixture(params=MODULES)
def rt(request):
    return importlib.import_module(request.param)


@pytest.fixture
def C(rt):   # noqa: N802 - onnxruntime's usual alias for its native module
    return importlib.import_module(rt.__name__ + ".capi.onnxruntime_pybind11_state")


def add_relu(denotation: str = "", batch: str = "N") -> bytes:
    """z = Relu(x + y), x float [N, 3], y float [1, 3]; also t = x + y. Metadata for get_modelmeta."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3])
    if denotation:
        x.type.tensor_type.shape.dim[0].denotation = denotation
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "y"], ["t"], name="add0"), helper.make_node("Relu", ["t"], ["z"], name="relu0")],
        "add_relu", [x, helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [batch, 3]),
         helper.make_tensor_value_info("t", TensorProto.FLOAT, [batch, 3])])
    model = helper.make_model(graph, producer_name="parity", opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    helper.set_model_props(model, {"author": "ge"})
    return model.SerializeToString()


def mul_weight(w: np.ndarray) -> bytes:
    """Y = X * W with W an initializer."""
    graph = helper.make_graph([helper.make_node("Mul", ["X", "W"], ["Y"])], "mul_w",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 3])],
                              initializer=[numpy_helper.from_array(w, "W")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def feeds(n: int = 2) -> dict:
    rng = np.random.default_rng(n)
    return {"x": rng.standard_normal((n, 3)).astype(np.float32), "y": rng.standard_normal((1, 3)).astype(np.float32)}


def expected(f: dict) -> list[np.ndarray]:
    t = f["x"] + f["y"]
    return [np.maximum(t, 0), t]
