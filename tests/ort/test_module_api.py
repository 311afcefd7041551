"""onnxruntime's module-level API, its providers, its errors and its options: the same on ge.ort."""
import importlib
import json
import threading

import numpy as np
import pytest
import onnx
from onnx import TensorProto, helper

from .conftest import add_relu, expected, feeds, mul_weight


def test_module_functions(rt):
    assert "CPUExecutionProvider" in rt.get_available_providers()
    assert {"CPUExecutionProvider", "CUDAExecutionProvider"} <= set(rt.get_all_providers())
    assert rt.get_device() == "CPU"
    assert isinstance(rt.get_version_string(), str) and isinstance(rt.get_build_info(), str)
    rt.set_default_logger_severity(3)
    rt.set_default_logger_severity(2)
    rt.set_default_logger_verbosity(0)
    rt.enable_telemetry_events()
    rt.disable_telemetry_events()
    with pytest.raises(RuntimeError):
        rt.set_default_logger_severity(7)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")   # the raising callback's report
def test_logger_callback_gets_verbose_messages(rt):
    got = []
    rt.set_default_logger_callback(lambda *a: got.append(a), severity=0)
    try:
        rt.InferenceSession(add_relu(), providers=["CPUExecutionProvider"])
        assert got and all(isinstance(a[0], int) and all(isinstance(x, str) for x in a[1:]) for a in got)
        rt.set_default_logger_callback(lambda *a: 1 / 0, severity=0)   # a raising callback fails nothing
        rt.InferenceSession(add_relu(), providers=["CPUExecutionProvider"])
        with pytest.raises(RuntimeError):
            rt.set_default_logger_callback("not a callable")
        with pytest.raises(RuntimeError):
            rt.set_default_logger_callback(got.append, severity=5)
    finally:
        rt.set_default_logger_callback(None)
        rt.set_default_logger_severity(2)
    assert "Build Info" in rt.get_build_info()


def test_datasets_example_runs(rt):
    importlib.import_module(rt.__name__ + ".datasets")
    sess = rt.InferenceSession(rt.datasets.get_example("sigmoid.onnx"), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32)
    name = sess.get_inputs()[0].name
    np.testing.assert_allclose(sess.run(None, {name: x})[0], 1 / (1 + np.exp(-x)), rtol=1e-6, atol=1e-7)
    with pytest.raises(FileNotFoundError):
        rt.datasets.get_example("no_such_example.onnx")


def test_gpu_provider_warns_then_runs_on_cpu(rt):
    with pytest.warns(UserWarning, match="not in available provider names"):
        sess = rt.InferenceSession(add_relu(), providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    assert sess.get_provider_options()["CPUExecutionProvider"] == {}
    f = feeds()
    np.testing.assert_allclose(sess.run(["z"], f)[0], expected(f)[0], rtol=1e-6)
    with pytest.raises(RuntimeError):
        sess.set_providers(["NoSuchExecutionProvider"])
    sess.set_providers(["CPUExecutionProvider"])
    # options that do not pair with the providers: onnxruntime reports it and falls back to the CPU
    sess = rt.InferenceSession(add_relu(), providers=["CPUExecutionProvider"], provider_options=[{}, {}])
    assert sess.get_providers() == ["CPUExecutionProvider"]


def test_session_describes_the_model(rt):
    sess = rt.InferenceSession(add_relu(), providers=["CPUExecutionProvider"])
    ins, outs = sess.get_inputs(), sess.get_outputs()
    assert [(a.name, a.shape, a.type) for a in ins] == [("x", ["N", 3], "tensor(float)"), ("y", [1, 3], "tensor(float)")]
    assert [(a.name, a.shape, a.type) for a in outs] == [("z", ["N", 3], "tensor(float)"), ("t", ["N", 3], "tensor(float)")]
    assert len(sess.get_input_memory_infos()) == 2 and len(sess.get_output_memory_infos()) == 2
    assert len(sess.get_input_epdevices()) == 2
    meta = sess.get_modelmeta()
    assert (meta.producer_name, meta.graph_name, meta.custom_metadata_map) == ("parity", "add_relu", {"author": "ge"})
    assert sess.get_overridable_initializers() == []
    assert sess.get_session_options().intra_op_num_threads == 0


def test_run_outputs_and_python_lists(rt):
    sess = rt.InferenceSession(add_relu(), providers=["CPUExecutionProvider"])
    f = feeds()
    want = expected(f)
    got = sess.run(None, f)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    np.testing.assert_allclose(sess.run([], f)[1], want[1], rtol=1e-6)      # empty: all outputs
    np.testing.assert_allclose(sess.run(["t"], f)[0], want[1], rtol=1e-6)
    lists = {"x": f["x"].tolist(), "y": [[1, 2, 3]]}                         # ints into a float input
    out = sess.run(["t"], lists)[0]
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, f["x"] + np.float32([[1, 2, 3]]), rtol=1e-6)


def test_errors_are_onnxruntimes_classes(rt, C, tmp_path):
    with pytest.raises(C.NoSuchFile):
        rt.InferenceSession(str(tmp_path / "missing.onnx"))
    with pytest.raises(C.InvalidProtobuf):
        rt.InferenceSession(b"this is not a protobuf")
    sess = rt.InferenceSession(add_relu(), providers=["CPUExecutionProvider"])
    f = feeds()
    with pytest.raises(C.InvalidArgument, match="x"):
        sess.run(None, {**f, "x": f["x"].astype(np.float64)})
    with pytest.raises(C.InvalidArgument):
        sess.run(None, {**f, "x": np.ones((2, 4), np.float32)})
    with pytest.raises(C.InvalidArgument):
        sess.run(None, {**f, "x": np.ones(3, np.float32)})
    with pytest.raises(C.InvalidArgument):
        sess.run(["no_such_output"], f)
    with pytest.raises(ValueError, match=r"Required inputs \(\['y'\]\) are missing from input feed \(\['x'\]\)"):
        sess.run(None, {"x": f["x"]})
    ro = rt.RunOptions()
    ro.terminate = True
    with pytest.raises(C.Fail):
        sess.run(None, f, ro)


def test_session_options_contract(rt, C):
    so = rt.SessionOptions()
    assert (so.intra_op_num_threads, so.inter_op_num_threads, so.profile_file_prefix, so.log_severity_level,
            so.enable_mem_reuse, so.enable_profiling, so.optimized_model_filepath) == \
        (0, 0, "onnxruntime_profile_", -1, True, False, "")
    assert so.graph_optimization_level == rt.GraphOptimizationLevel.ORT_ENABLE_ALL
    assert so.execution_mode == rt.ExecutionMode.ORT_SEQUENTIAL
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    assert so.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    with pytest.raises(RuntimeError):   # onnxruntime's contract: not a KeyError
        so.get_session_config_entry("session.no_such_key")
    with pytest.raises(C.Fail):
        so.register_custom_ops_library("/no/such/libcustom_ops.so")


def test_run_options_contract(rt):
    ro = rt.RunOptions()
    assert (ro.log_severity_level, ro.log_verbosity_level, ro.logid, ro.terminate,
            ro.only_execute_path_to_fetches) == (-1, 0, "", False, False)
    ro.logid, ro.log_severity_level, ro.only_execute_path_to_fetches = "run-1", 3, True
    ro.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    assert ro.get_run_config_entry("memory.enable_memory_arena_shrinkage") == "cpu:0"
    with pytest.raises(RuntimeError):
        ro.get_run_config_entry("no.such.key")
    sess = rt.InferenceSession(add_relu(), providers=["CPUExecutionProvider"])
    f = feeds()
    np.testing.assert_allclose(sess.run(["z"], f, ro)[0], expected(f)[0], rtol=1e-6)


def test_free_dimension_overrides(rt, C):
    so = rt.SessionOptions()
    so.add_free_dimension_override_by_name("N", 4)
    sess = rt.InferenceSession(add_relu(), so, providers=["CPUExecutionProvider"])
    assert sess.get_inputs()[0].shape == [4, 3]
    f = feeds(4)
    np.testing.assert_allclose(sess.run(["z"], f)[0], expected(f)[0], rtol=1e-6)
    with pytest.raises(C.InvalidArgument):
        sess.run(None, feeds(2))
    so = rt.SessionOptions()
    so.add_free_dimension_override_by_denotation("DATA_BATCH", 5)
    sess = rt.InferenceSession(add_relu(denotation="DATA_BATCH"), so, providers=["CPUExecutionProvider"])
    assert sess.get_inputs()[0].shape == [5, 3]


def test_add_initializer_replaces_the_weights(rt):
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = np.full((2, 3), 2, np.float32)
    so = rt.SessionOptions()
    given = rt.OrtValue.ortvalue_from_numpy(-w)
    so.add_initializer("W", given)
    sess = rt.InferenceSession(mul_weight(w), so, providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(sess.run(None, {"X": x})[0], -2 * w)
    plain = rt.InferenceSession(mul_weight(w), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(plain.run(None, {"X": x})[0], 2 * w)


def test_an_unnamed_dim_is_none(rt):
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, 3])
    graph = helper.make_graph([helper.make_node("Relu", ["X"], ["Y"])], "g", [x],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    sess = rt.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert sess.get_inputs()[0].shape == [None, 3] and sess.get_outputs()[0].shape == [None, 3]
    x = np.float32([[-1, 2, -3]])
    np.testing.assert_array_equal(sess.run(None, {"X": x})[0], np.maximum(x, 0))


def test_runs_from_several_threads_on_one_session(rt):
    sess = rt.InferenceSession(add_relu(), providers=["CPUExecutionProvider"])
    errors = []

    def work(seed):
        try:
            for k in range(50):
                f = feeds(2 + (seed + k) % 3)
                np.testing.assert_allclose(sess.run(["z"], f)[0], expected(f)[0], rtol=1e-6)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(s,)) for s in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_session_options_from_the_models_ort_config(rt, monkeypatch):
    model = onnx.load_from_string(add_relu())
    helper.set_model_props(model, {"ort_config": json.dumps(
        {"session_options": {"intra_op_num_threads": 1, "inter_op_num_threads": 5, "graph_optimization_level": 99}})})
    monkeypatch.setenv("ORT_LOAD_CONFIG_FROM_MODEL", "1")
    sess = rt.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    so = sess.get_session_options()
    assert (so.intra_op_num_threads, so.inter_op_num_threads) == (1, 5)
    assert so.graph_optimization_level == rt.GraphOptimizationLevel.ORT_ENABLE_ALL
    assert so.execution_mode == rt.ExecutionMode.ORT_SEQUENTIAL


def test_devices_and_memory_infos(rt):
    cpu = rt.OrtDevice.make("cpu", 0)
    assert (cpu.device_id(), cpu.device_type(), cpu.device_mem_type()) == (0, 0, 0)
    assert cpu.device_vendor_id() == rt.OrtDeviceVendorId.NONE
    assert rt.OrtDevice.make("cuda", 0).device_vendor_id() == rt.OrtDeviceVendorId.NVIDIA == 0x10DE
    info = rt.OrtMemoryInfo("Cpu", rt.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, rt.OrtMemType.DEFAULT)
    assert (info.name, info.device_id, info.mem_type, info.allocator_type, info.device_vendor_id) == \
        ("Cpu", 0, rt.OrtMemType.DEFAULT, rt.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0)
    rt.create_and_register_allocator(info, None)
    sess = rt.InferenceSession(add_relu(), providers=["CPUExecutionProvider"])
    ro = rt.RunOptions()
    ro.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    f = feeds()
    np.testing.assert_allclose(sess.run(["z"], f, ro)[0], expected(f)[0], rtol=1e-6)
