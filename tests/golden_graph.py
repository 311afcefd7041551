"""The small graph of the golden memory layouts (tests/memory/test_golden_layout.py on one stream,
tests/streams/test_stream_memory.py on two): a -> b, c (two branches) -> Concat d -> Reshape e -> f, y."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper


def golden_graph():
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("Relu", ["a"], ["c"]), helper.make_node("Concat", ["b", "c"], ["d"], axis=1),
             helper.make_node("Reshape", ["d", "s"], ["e"]), helper.make_node("Relu", ["e"], ["f"]),
             helper.make_node("Add", ["f", "e"], ["y"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 128, 4])
    g = helper.make_graph(nodes, "golden", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.array([1, -1], np.int64), "s")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
