import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge


@pytest.fixture(scope="module")
def sess():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, None)
    c = numpy_helper.from_array(np.array([1, -2, 3, -4], np.float32), "c")
    nodes = [helper.make_node("Add", ["x", "c"], ["t"], name="add"),
             helper.make_node("Relu", ["t"], ["y"], name="relu"),
             helper.make_node("Mul", ["t", "t"], ["z"], name="square")]
    m = helper.make_model(helper.make_graph(nodes, "g", [x], [y, z], [c]),
                          opset_imports=[helper.make_opsetid("", 17)])
    return ge.Session(m, runtime="v2")


def test_inputs_outputs_described(sess):
    (i,) = sess.get_inputs()
    assert (i.name, i.shape, i.type) == ("x", ["N", 4], "tensor(float)")
    assert [o.name for o in sess.get_outputs()] == ["y", "z"]


def test_run_all_and_named_outputs(sess):
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    t = x + np.array([1, -2, 3, -4], np.float32)
    y, z = sess.run(None, {"x": x})
    np.testing.assert_allclose(y, np.maximum(t, 0))
    np.testing.assert_allclose(z, t * t)
    (z2,) = sess.run(["z"], {"x": x})
    np.testing.assert_allclose(z2, z)


def test_bound_output_written_in_place(sess):
    x = np.ones((3, 4), np.float32)
    buf = np.empty((3, 4), np.float32)
    (y,) = sess.run(["y"], {"x": x}, outputs={"y": buf})
    assert y is buf
    np.testing.assert_allclose(buf, np.maximum(x + [1, -2, 3, -4], 0))


@pytest.mark.parametrize("feeds,match", [
    ({}, "missing input 'x'"),
    ({"x": np.ones((1, 4), np.float32), "w": np.ones(1)}, "unknown input"),
    ({"x": np.ones((1, 4), np.float64)}, "dtype float64, expected float32"),
    ({"x": np.ones((1, 5), np.float32)}, r"shape \[1, 5\]"),
    ({"x": np.ones((4,), np.float32)}, r"shape \[4\]"),
])
def test_bad_feeds_are_input_errors_and_session_survives(sess, feeds, match):
    with pytest.raises(ge.InputError, match=match):
        sess.run(None, feeds)
    y, _ = sess.run(None, {"x": np.zeros((1, 4), np.float32)})
    np.testing.assert_allclose(y, [[1, 0, 3, 0]])


def test_unknown_output_name(sess):
    with pytest.raises(ge.InputError, match="unknown output"):
        sess.run(["nope"], {"x": np.zeros((1, 4), np.float32)})


def test_runtime_choice():
    assert "v2" in ge.available_runtimes()
    with pytest.raises(ge.GEError, match="unknown runtime"):
        ge.Session(ge.compile(_tiny()), runtime="v9")


def test_noncontiguous_feed(sess):
    x = np.arange(16, dtype=np.float32).reshape(4, 4)[:, ::2].repeat(2, axis=1)[::2]
    y, _ = sess.run(None, {"x": x[:, :4]})
    np.testing.assert_allclose(y, np.maximum(x[:, :4] + [1, -2, 3, -4], 0))


def _tiny():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    return helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "t", [x], [y]))


def test_alias_kernel_with_a_task_still_runs():
    """Regression: Dropout is a no-task alias unless its mask is asked for; then the mask is computed."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("mask", TensorProto.BOOL, None)]
    m = helper.make_model(helper.make_graph([helper.make_node("Dropout", ["x"], ["y", "mask"])], "g", [x], outs),
                          opset_imports=[helper.make_opsetid("", 13)])
    y, mask = ge.Session(m).run(None, {"x": np.full((2, 3), 7, np.float32)})
    assert mask.dtype == np.bool_ and mask.all()
    np.testing.assert_array_equal(y, 7)
