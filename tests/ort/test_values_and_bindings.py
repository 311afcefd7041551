"""OrtValue, run_with_ort_values, IOBinding, run_async and profiling: onnxruntime's behaviour, on both."""
import gc
import json
import threading

import numpy as np
import pytest

from .conftest import add_relu, expected, feeds


@pytest.fixture
def sess(rt):
    return rt.InferenceSession(add_relu(), providers=["CPUExecutionProvider"])


def test_ortvalue_from_numpy_shares_the_array(rt):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    v = rt.OrtValue.ortvalue_from_numpy(a)
    assert (v.shape(), v.data_type(), v.element_type(), v.device_name()) == ([2, 3], "tensor(float)", 1, "cpu")
    assert v.is_tensor() and v.has_value() and not v.is_sparse_tensor() and not v.is_tensor_sequence()
    assert v.tensor_size_in_bytes() == 24 and v.data_ptr() == a.ctypes.data
    a[0, 0] = 7
    assert v.numpy()[0, 0] == 7 and np.asarray(v)[0, 0] == 7
    v.update_inplace(np.ones((2, 3), np.float32))
    assert a.sum() == 6
    with pytest.raises(RuntimeError):
        v.update_inplace(np.ones((3, 3), np.float32))
    with pytest.raises(RuntimeError):
        rt.OrtValue.ortvalue_from_numpy(a, "cuda", 0)


def test_ortvalue_from_shape_and_type(rt):
    v = rt.OrtValue.ortvalue_from_shape_and_type([2, 5], np.int64)
    assert (v.shape(), v.data_type(), v.element_type()) == ([2, 5], "tensor(int64)", 7)
    w = rt.OrtValue.ortvalue_from_shape_and_type([3], 1)   # an ONNX type code: FLOAT
    assert (w.shape(), w.data_type()) == ([3], "tensor(float)")


def test_dlpack_both_ways(rt):
    a = np.arange(4, dtype=np.float32)
    v = rt.OrtValue.ortvalue_from_numpy(a)
    b = np.from_dlpack(v)
    assert np.shares_memory(a, b) and v.__dlpack_device__() == (1, 0)
    w = rt.OrtValue.from_dlpack(a)
    assert w.data_ptr() == a.ctypes.data and w.shape() == [4]


def test_run_with_ort_values(rt, sess):
    f = feeds()
    out = sess.run_with_ort_values(["z", "t"], {k: rt.OrtValue.ortvalue_from_numpy(v) for k, v in f.items()})
    assert all(isinstance(o, rt.OrtValue) for o in out)
    for o, w in zip(out, expected(f)):
        np.testing.assert_allclose(o.numpy(), w, rtol=1e-6)


def test_ortvalue_outlives_its_session(rt):
    s = rt.InferenceSession(add_relu(), providers=["CPUExecutionProvider"])
    f = feeds()
    out = s.run_with_ort_values(["z"], {k: rt.OrtValue.ortvalue_from_numpy(v) for k, v in f.items()})[0]
    if hasattr(s, "close"):
        s.close()   # ge: the device memory goes now
    del s
    gc.collect()
    np.testing.assert_allclose(out.numpy(), expected(f)[0], rtol=1e-6)


def test_iobinding_by_array_and_ortvalue(rt, sess):
    f = feeds()
    want = expected(f)
    b = sess.io_binding()
    b.bind_cpu_input("x", f["x"])
    b.bind_ortvalue_input("y", rt.OrtValue.ortvalue_from_numpy(f["y"]))
    b.bind_output("t")
    out_z = rt.OrtValue.ortvalue_from_shape_and_type([2, 3], np.float32)
    b.bind_ortvalue_output("z", out_z)
    b.synchronize_inputs()
    sess.run_with_iobinding(b)
    b.synchronize_outputs()
    got = b.get_outputs()
    assert all(isinstance(o, rt.OrtValue) for o in got) and len(got) == 2
    np.testing.assert_allclose(got[0].numpy(), want[1], rtol=1e-6)      # in the order bound: t, z
    np.testing.assert_allclose(out_z.numpy(), want[0], rtol=1e-6)       # written into the bound value
    np.testing.assert_allclose(b.copy_outputs_to_cpu()[1], want[0], rtol=1e-6)
    b.clear_binding_outputs()
    b.bind_output("z")
    sess.run_with_iobinding(b)
    assert len(b.get_outputs()) == 1
    b.clear_binding_inputs()


def test_iobinding_by_buffer_pointer(rt, sess):
    f = feeds()
    b = sess.io_binding()
    b.bind_input("x", "cpu", 0, np.float32, [2, 3], f["x"].ctypes.data)
    b.bind_input("y", "cpu", 0, np.float32, [1, 3], f["y"].ctypes.data)
    z = np.zeros((2, 3), np.float32)
    b.bind_output("z", "cpu", 0, np.float32, [2, 3], z.ctypes.data)
    sess.run_with_iobinding(b)
    np.testing.assert_allclose(z, expected(f)[0], rtol=1e-6)
    with pytest.raises(ValueError):
        b.bind_output("t", "cpu", 0, None, None, z.ctypes.data)


def test_run_async_calls_back(rt, sess):
    f = feeds()
    done, box = threading.Event(), {}

    def callback(results, user_data, err):
        box.update(results=results, user_data=user_data, err=err)
        done.set()
    sess.run_async(["z"], f, callback, "mine")
    assert done.wait(60)
    assert box["err"] == "" and box["user_data"] == "mine"
    np.testing.assert_allclose(np.asarray(box["results"][0]), expected(f)[0], rtol=1e-6)
    done.clear()
    sess.run_async(["z"], {**f, "x": f["x"].astype(np.float64)}, callback, None)
    assert done.wait(60)
    assert box["err"] and len(box["results"]) == 0


def test_profiling_in_onnxruntimes_format(rt, tmp_path):
    so = rt.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "prof")
    so.add_free_dimension_override_by_name("N", 2)   # ge traces each node of static plans (runtime_v1)
    s = rt.InferenceSession(add_relu(), so, providers=["CPUExecutionProvider"])
    assert s.get_profiling_start_time_ns() > 0
    s.run(None, feeds())
    name = s.end_profiling()
    lines = open(name).read().splitlines()
    events = json.loads("\n".join(lines))
    assert lines[0] == "[" and isinstance(events, list) and len(lines) >= len(events)   # one event a line
    names = {e["name"] for e in events}
    assert {"session_initialization", "model_run"} <= names
    nodes = [e for e in events if e["cat"] == "Node"]
    assert {e["args"]["op_name"] for e in nodes} >= {"Add"} or {e["args"]["op_name"] for e in nodes} >= {"Relu"}
    assert all(e["ph"] == "X" and isinstance(e["ts"], int) and isinstance(e["dur"], int) for e in events)
    assert all(e["args"]["provider"] == "CPUExecutionProvider" for e in nodes)
    assert s.end_profiling() == ""


def test_run_takes_ortvalues_in_its_feeds(rt, sess):
    f = feeds()
    got = sess.run(["z"], {k: rt.OrtValue.ortvalue_from_numpy(v, "cpu", 0) for k, v in f.items()})[0]
    np.testing.assert_allclose(got, expected(f)[0], rtol=1e-6)

