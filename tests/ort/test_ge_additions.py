"""What ge.ort adds or does its own way: its errors' double classes, close(), runtime and ge options, the
logger callback, the vectors, and the refusals (each naming what it refuses)."""
import json
import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
import ge.ort as ort
from ge.ort.capi import onnxruntime_pybind11_state as C

from .conftest import add_relu, expected, feeds


def test_ge_errors_are_onnxruntimes_and_pythons():
    assert issubclass(ge.InputError, C.InvalidArgument) and issubclass(ge.InputError, ValueError)
    assert issubclass(ge.ShapeError, C.InvalidArgument)
    assert issubclass(ge.UnsupportedOpError, C.NotImplemented) and issubclass(ge.UnsupportedOpError,
                                                                                NotImplementedError)
    assert issubclass(ge.ModelLoadError, C.InvalidGraph)
    assert issubclass(ge.ExecutionError, C.RuntimeException) and issubclass(ge.ExecutionError, RuntimeError)
    assert issubclass(ge.DeviceMemoryError, MemoryError) and issubclass(ge.DeviceMemoryError, C.RuntimeException)
    assert all(issubclass(e, C.Fail) for e in (ge.GEError, ge.InputError, ge.ModelLoadError))
    with pytest.raises(FileNotFoundError):
        ort.InferenceSession("/no/such/model.onnx")


def test_an_op_ge_lacks_is_onnxruntimes_not_implemented():
    graph = helper.make_graph([helper.make_node("NoSuchOp", ["x"], ["y"], domain="ge.test")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ge.test", 1)])
    with pytest.raises(C.NotImplemented, match="NoSuchOp"):
        ort.InferenceSession(model.SerializeToString())


def test_close_then_run_is_a_typed_error_and_values_stay():
    sess = ort.InferenceSession(add_relu(), runtime="v2", ge_options={"thread_budget": 1})
    assert sess.session.runtime == "v2" and sess.plan.options.thread_budget == 1
    f = feeds()
    z = sess.run_with_ort_values(["z"], f)[0]
    sess.close()
    with pytest.raises(ge.GEError):
        sess.run(None, f)
    np.testing.assert_allclose(z.numpy(), expected(f)[0], rtol=1e-6)


def test_ortvaluevector_and_run_with_ortvaluevector():
    sess = ort.InferenceSession(add_relu())
    f = feeds()
    vec, fetches = ort.OrtValueVector(), ort.OrtValueVector()
    for v in f.values():
        vec.push_back(ort.OrtValue.ortvalue_from_numpy(v))
    sess.run_with_ortvaluevector(None, list(f), vec, ["z"], fetches, None)
    assert len(fetches) == 1 and fetches.element_type_at(0) == TensorProto.FLOAT
    np.testing.assert_allclose(np.from_dlpack(fetches[0]), expected(f)[0], rtol=1e-6)


def test_logger_callback_gets_ges_messages():
    got = []
    ort.set_default_logger_callback(lambda *args: got.append(args), 2)
    try:
        ort.InferenceSession(add_relu(), providers=["CPUExecutionProvider"], provider_options=[{}, {}])
    finally:
        ort.set_default_logger_callback(None)
    assert got and got[0][0] == 3 and "same length" in got[0][4]


def test_a_dynamic_plan_is_profiled_at_the_feeds_shapes(tmp_path):
    """A plan with symbolic dims is traced as the model compiled at the feeds' shapes: Node events as usual."""
    so = ort.SessionOptions()
    so.enable_profiling, so.profile_file_prefix = True, str(tmp_path / "p")
    sess = ort.InferenceSession(add_relu(), so, runtime="v2")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sess.run(None, feeds())
    events = json.load(open(sess.end_profiling()))
    assert [e["name"] for e in events if e["name"] == "model_run"] == ["model_run"]
    assert {e["args"]["op_name"] for e in events if e["cat"] == "Node"} == {"Add", "Relu"}


def test_a_plan_whose_shapes_follow_the_data_is_timed_whole_with_a_warning(tmp_path):
    graph = helper.make_graph([helper.make_node("NonZero", ["x"], ["i"])], "nz",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("i", TensorProto.INT64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    so = ort.SessionOptions()
    so.enable_profiling, so.profile_file_prefix = True, str(tmp_path / "p")
    sess = ort.InferenceSession(model.SerializeToString(), so, runtime="v2")
    with pytest.warns(UserWarning, match="timed whole"):
        sess.run(None, {"x": np.array([0, 1, 0, 2], np.float32)})
    events = json.load(open(sess.end_profiling()))
    assert [e["name"] for e in events if e["name"] == "model_run"] == ["model_run"]


def test_threads_seed_and_refusals():
    ort.set_global_thread_pool_sizes(1, 0)
    try:
        assert ort.InferenceSession(add_relu()).plan.options.thread_budget == 1
    finally:
        ort.set_global_thread_pool_sizes(0, 0)
    ort.set_seed(3)
    assert np.random.randint(1000) == np.random.RandomState(3).randint(1000)
    for call in (lambda: ort.SessionOptions().register_custom_ops_library("libx.so"),
                 lambda: ort.OrtValue.ortvalue_from_shape_and_type([2], np.float32, "cuda", 0)):
        with pytest.raises(ge.UsageError):
            call()
    with pytest.raises(ge.InputError, match="W"):
        so = ort.SessionOptions()
        so.add_initializer("W", np.ones(2, np.float32))
        ort.InferenceSession(add_relu(), so)


def test_free_dims_apply_to_a_model_proto_too():
    so = ort.SessionOptions()
    so.add_free_dimension_override_by_name("N", 3)
    sess = ort.InferenceSession(onnx.load_from_string(add_relu()), so)
    assert sess.plan.tensors[sess.plan.inputs[0]].shape == (3, 3) and sess.session.runtime == "v1"


def _conv_bn_gelu() -> bytes:
    """Conv -> BatchNormalization -> Relu -> Flatten -> MatMul + bias -> exact GELU spelled out (as exporters do)."""
    rng = np.random.default_rng(0)
    c = lambda name, *shape: numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)  # noqa: E731
    inits = [c("W", 4, 3, 3, 3), c("B", 4), c("scale", 4), c("bias", 4), c("mean", 4),
             numpy_helper.from_array(rng.uniform(0.5, 1.5, 4).astype(np.float32), "var"), c("W2", 144, 5), c("b2", 5),
             numpy_helper.from_array(np.float32(np.sqrt(2)), "sqrt2"), numpy_helper.from_array(np.float32(1), "one"),
             numpy_helper.from_array(np.float32(0.5), "half")]
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], pads=[0, 0, 0, 0]),
             helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["bn"]),
             helper.make_node("Relu", ["bn"], ["r"]), helper.make_node("Flatten", ["r"], ["f"]),
             helper.make_node("MatMul", ["f", "W2"], ["m"]), helper.make_node("Add", ["m", "b2"], ["h"]),
             helper.make_node("Div", ["h", "sqrt2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["e1"]), helper.make_node("Mul", ["h", "e1"], ["he"]),
             helper.make_node("Mul", ["he", "half"], ["y"])]
    graph = helper.make_graph(nodes, "conv_bn_gelu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def test_optimized_model_filepath_writes_onnx_that_onnxruntime_runs(tmp_path):
    import onnxruntime
    model = _conv_bn_gelu()
    x = np.random.default_rng(1).standard_normal((2, 3, 8, 8)).astype(np.float32)
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "opt.onnx")
    so.add_session_config_entry("session.optimized_model_external_initializers_file_name", "opt.data")
    so.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "64")
    got = ort.InferenceSession(model, so).run(None, {"x": x})[0]
    written = onnx.load(so.optimized_model_filepath)
    onnx.checker.check_model(written)
    ops = [n.op_type for n in written.graph.node]
    assert "BatchNormalization" not in ops and all(n.domain in ("", "ai.onnx") for n in written.graph.node)
    assert (tmp_path / "opt.data").exists()
    want = onnxruntime.InferenceSession(model).run(None, {"x": x})[0]
    again = onnxruntime.InferenceSession(so.optimized_model_filepath).run(None, {"x": x})[0]
    np.testing.assert_allclose(again, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ort.InferenceSession(so.optimized_model_filepath).run(None, {"x": x})[0], want,
                               rtol=1e-4, atol=1e-5)
    so.optimized_model_filepath = str(tmp_path / "opt.ort")
    with pytest.raises(ge.UsageError, match="ort"):
        ort.InferenceSession(model, so)


def test_copy_tensors_between_host_values():
    """(onnxruntime's CPU package copies between devices only: host to host it finds no data transfer.)"""
    a = ort.OrtValue.ortvalue_from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
    b = ort.OrtValue.ortvalue_from_shape_and_type([2, 3], np.float32)
    ort.copy_tensors([a], [b])
    np.testing.assert_array_equal(b.numpy(), a.numpy())
    assert b.data_ptr() != a.data_ptr()
    with pytest.raises(ge.InputError):
        ort.copy_tensors([a], [ort.OrtValue.ortvalue_from_shape_and_type([3], np.float32)])
