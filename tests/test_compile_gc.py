"""A compile collects its cyclic IR only for weights worth it: a full collection costs ~0.6 s in a process with
a large heap, which a test run's thousands of small compiles paid (the suite took about 4x as long)."""
import gc

from onnx import TensorProto, helper

import ge


def test_a_small_model_compiles_without_a_full_collection(monkeypatch):
    calls = []
    monkeypatch.setattr(gc, "collect", lambda *a: calls.append(a) or 0)
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    ge.compile(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))
    assert calls == []
