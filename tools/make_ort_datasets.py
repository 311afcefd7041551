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


def logreg_iris() -> onnx.ModelProto:
    """A 3-class linear classifier on two features, as a scikit-learn export writes it (ONNX-ML opset 1):
    LinearClassifier -> label int64 [3]; its scores, Normalizer L1, ZipMap -> probabilities, a sequence of
    {class: probability}. Input float_input float [3, 2]. The coefficients are ge's own (a one-vs-rest
    logistic fit of iris's sepal length and width, rounded), not anyone's file."""
    ml = "ai.onnx.ml"
    nodes = [
        helper.make_node("LinearClassifier", ["float_input"], ["label", "probability_tensor"], domain=ml,
                         coefficients=[-2.5, 4.0, 0.5, -1.6, 2.1, -2.3], intercepts=[7.8, 1.5, -10.4],
                         classlabels_ints=[0, 1, 2], multi_class=0, post_transform="LOGISTIC"),
        helper.make_node("Normalizer", ["probability_tensor"], ["probabilities"], domain=ml, norm="L1"),
        helper.make_node("ZipMap", ["probabilities"], ["output_probability"], domain=ml, classlabels_int64s=[0, 1, 2]),
    ]
    probs = helper.make_sequence_type_proto(helper.make_map_type_proto(
        TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, None)))
    graph = helper.make_graph(nodes, "logreg_iris", [helper.make_tensor_value_info("float_input", TensorProto.FLOAT, [3, 2])],
                              [helper.make_tensor_value_info("label", TensorProto.INT64, [3]),
                               helper.make_value_info("output_probability", probs)])
    return helper.make_model(graph, producer_name="ge", opset_imports=[helper.make_opsetid(ml, 1),
                                                                       helper.make_opsetid("", 9)])


if __name__ == "__main__":
    for name, make in (("sigmoid.onnx", sigmoid), ("mul_1.onnx", mul_1), ("logreg_iris.onnx", logreg_iris)):
        model = make()
        model.ir_version = 7
        onnx.checker.check_model(model)
        onnx.save(model, OUT / name)
        print(OUT / name)
