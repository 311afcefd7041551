import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
from ge.frontends.onnx import import_onnx


def add_model(opset=17, init_external=None):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    c = numpy_helper.from_array(np.arange(3, dtype=np.float32), "c")
    if init_external is not None:
        c.data_location = TensorProto.EXTERNAL
        c.ClearField("raw_data")
        for k, v in init_external.items():
            c.external_data.add(key=k, value=v)
    g = helper.make_graph([helper.make_node("Add", ["x", "c"], ["y"])], "g", [x], [y], [c])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def test_import_keeps_symbolic_dims():
    g = import_onnx(add_model())
    assert g.inputs[0].shape == ("N", 3)
    assert g.outputs[0].shape == ("N", 3)


def test_path_bytes_and_proto_agree(tmp_path):
    m = add_model()
    p = tmp_path / "m.onnx"
    onnx.save(m, p)
    x = np.ones((2, 3), np.float32)
    outs = [ge.Session(src).run(None, {"x": x})[0] for src in (m, str(p), m.SerializeToString())]
    for o in outs:
        np.testing.assert_array_equal(o, x + np.arange(3))


def test_truncated_file_is_model_load_error(tmp_path):
    data = add_model().SerializeToString()
    p = tmp_path / "bad.onnx"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(ge.ModelLoadError, match="bad.onnx"):
        ge.Session(str(p))


def test_not_onnx_is_model_load_error(tmp_path):
    p = tmp_path / "text.onnx"
    p.write_text("hello, I am not a model")
    with pytest.raises(ge.ModelLoadError):
        ge.Session(str(p))


def test_missing_file():
    with pytest.raises(ge.ModelLoadError, match="does not exist"):
        ge.Session("/nonexistent/model.onnx")


def test_external_data_inside_folder(tmp_path):
    (tmp_path / "w.bin").write_bytes(np.arange(3, dtype=np.float32).tobytes())
    m = add_model(init_external={"location": "w.bin"})
    onnx.save(m, tmp_path / "m.onnx")
    y, = ge.Session(str(tmp_path / "m.onnx")).run(None, {"x": np.zeros((1, 3), np.float32)})
    np.testing.assert_array_equal(y, [[0, 1, 2]])


@pytest.mark.parametrize("location", ["../secret.bin", "/etc/passwd", "sub/../../secret.bin"])
def test_external_data_outside_folder_refused(tmp_path, location):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (tmp_path / "secret.bin").write_bytes(np.arange(3, dtype=np.float32).tobytes())
    onnx.save(add_model(init_external={"location": location}), model_dir / "m.onnx")
    with pytest.raises(ge.ModelLoadError, match="outside the model's folder"):
        ge.Session(str(model_dir / "m.onnx"))


def test_external_data_missing_file(tmp_path):
    onnx.save(add_model(init_external={"location": "nothere.bin"}), tmp_path / "m.onnx")
    with pytest.raises(ge.ModelLoadError, match="missing"):
        ge.Session(str(tmp_path / "m.onnx"))


def test_cycle_is_model_load_error():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    nodes = [helper.make_node("Add", ["x", "b"], ["a"], name="n1"),
             helper.make_node("Relu", ["a"], ["b"], name="n2"),
             helper.make_node("Relu", ["a"], ["y"], name="n3")]
    m = helper.make_model(helper.make_graph(nodes, "g", [x], [y]))
    with pytest.raises(ge.ModelLoadError, match="cycle"):
        ge.Session(m)


def test_dangling_input_is_model_load_error():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    m = helper.make_model(helper.make_graph([helper.make_node("Add", ["x", "ghost"], ["y"], name="n1")],
                                            "g", [x], [y]))
    with pytest.raises(ge.ModelLoadError, match="ghost"):
        ge.Session(m)


def test_unsupported_op_names_node_and_lists_registered():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    m = helper.make_model(helper.make_graph([helper.make_node("FancyOp", ["x"], ["y"], name="fancy",
                                                              domain="acme")], "g", [x], [y]),
                          opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("acme", 1)])
    with pytest.raises(ge.UnsupportedOpError) as e:
        ge.Session(m)
    assert e.value.node == "fancy" and e.value.op_type == "FancyOp" and "Add" in str(e.value)


def test_several_omitted_outputs_get_distinct_names():
    """Regression: every omitted optional output ("") of a node got the same internal name, and the load
    failed with an untyped ValueError ('Attention_0_unused' is defined twice)."""
    q = helper.make_tensor_value_info("q", TensorProto.FLOAT, [1, 2, 3, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    node = helper.make_node("Attention", ["q", "q", "q"], ["y", "", "", ""])
    m = helper.make_model(helper.make_graph([node], "g", [q], [y]), opset_imports=[helper.make_opsetid("", 23)])
    g = import_onnx(m)
    names = [v.name for v in g.nodes[0].outputs]
    assert len(set(names)) == 4 and names[0] == "y"


def test_omitted_outputs_run():
    """LayerNormalization with its Mean and InvStdDev outputs both omitted loads and runs."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    scale = numpy_helper.from_array(np.ones(3, np.float32), "s")
    node = helper.make_node("LayerNormalization", ["x", "s"], ["y", "", ""])
    m = helper.make_model(helper.make_graph([node], "g", [x], [y], [scale]),
                          opset_imports=[helper.make_opsetid("", 17)])
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = ge.Session(m).run(None, {"x": a})[0]
    want = (a - a.mean(1, keepdims=True)) / np.sqrt(a.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_output_named_twice_in_one_node_is_model_load_error():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    node = helper.make_node("Split", ["x"], ["y", "y"], axis=0, num_outputs=2)
    m = helper.make_model(helper.make_graph([node], "g", [x], [y]), opset_imports=[helper.make_opsetid("", 18)])
    with pytest.raises(ge.ModelLoadError, match="defined twice"):
        import_onnx(m)
