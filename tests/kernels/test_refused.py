"""Ops ge declines on purpose (kernels/refused.py) raise UnsupportedOpError with the reason; so does an op
registered for other opsets."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import ge
from ge.kernels import is_registered, lookup


def one_node(op, attrs=None, domain="", opset=22):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    node = helper.make_node(op, ["x"], ["y"], name="n1", domain=domain or None, **(attrs or {}))
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(helper.make_graph([node], "g", [x], [y]), opset_imports=opsets)


@pytest.mark.parametrize("op,attrs", [("RandomUniformLike", {}), ("RandomNormalLike", {}), ("Bernoulli", {}),
                                      ("Multinomial", {})])
def test_random_ops_are_refused_with_a_reason(op, attrs):
    with pytest.raises(ge.UnsupportedOpError, match="draws random numbers") as e:
        ge.Session(one_node(op, attrs))
    assert e.value.node == "n1" and e.value.op_type == op and not is_registered(op)


def test_training_ops_are_refused_with_a_reason():
    with pytest.raises(ge.UnsupportedOpError, match="training step"):
        lookup("Gradient", "ai.onnx.preview.training", 1, "gradient")


def test_op_outside_its_opsets_names_them():
    with pytest.raises(ge.UnsupportedOpError, match=r"opsets 20\+"):
        lookup("Gelu", "", 19, "n")


def test_unknown_op_has_no_reason():
    with pytest.raises(ge.UnsupportedOpError) as e:
        lookup("NoSuchOp", "", 17, "n")
    assert e.value.reason == ""


def test_dropout_training_stays_seeded():
    """Dropout with training_mode runs (tensor.py) and is deterministic for a given seed."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    r = helper.make_tensor("r", TensorProto.FLOAT, [], [0.5])
    t = helper.make_tensor("t", TensorProto.BOOL, [], [True])
    node = helper.make_node("Dropout", ["x", "r", "t"], ["y"], seed=3)
    m = helper.make_model(helper.make_graph([node], "g", [x], [y], [r, t]), opset_imports=[
        helper.make_opsetid("", 13)])
    a = np.ones(64, np.float32)
    outs = [ge.Session(m).run(None, {"x": a})[0] for _ in range(2)]
    np.testing.assert_array_equal(outs[0], outs[1])
    assert set(np.unique(outs[0])) <= {0.0, 2.0}
