"""Write ge.ort.datasets' example models (ge/ort/datasets/*.onnx): the small models onnxruntime's
documentation loads with `onnxruntime.datasets.get_example(name)`, built here with onnx.helper.

    python tools/make_ort_datasets.py
"""
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = Path(__file__).resolve().parents[1] / "ge" / "ort" / "datasets"


def sigmoid() -> onnx.ModelProto:
    """y = Sigmoid(x), x float [3, 4, 5] (onnx's test_sigmoid graph)."""
    graph = helper.make_graph([helper.make_node("Sigmoid", ["x"], ["y"])], "test_sigmoid",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4, 5])])
    return helper.make_model(graph, producer_name="ge", opset_imports=[helper.make_opsetid("", 9)])


def mul_1() -> onnx.ModelProto:
    """Y = X * W, X float [3, 2], W the constant [[1, 2], [3, 4], [5, 6]]."""
    w = numpy_helper.from_array(np.arange(1, 7, dtype=np.float32).reshape(3, 2), "W")
    graph = helper.make_graph([helper.make_node("Mul", ["X", "W"], ["Y"])], "mul test",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [3, 2])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [3, 2])], initializer=[w])
    return helper.make_model(graph, producer_name="ge", opset_imports=[helper.make_opsetid("", 7)])


if __name__ == "__main__":
    for name, make in (("sigmoid.onnx", sigmoid), ("mul_1.onnx", mul_1)):
        model = make()
        model.ir_version = 7
        onnx.checker.check_model(model)
        onnx.save(model, OUT / name)
        print(OUT / name)
