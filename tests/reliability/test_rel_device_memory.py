"""Device memory exhaustion: a model larger than the modelled device (Options(device_memory_bytes=small)) is
a DeviceMemoryError at load on runtime v1 and at run on runtime v2, naming requested / capacity / in use;
the process and other sessions keep working, and a v2 session recovers once requests fit again."""
import re

import numpy as np
import pytest

import ge
from rel_models import relu_chain

KB = 1024
SHAPE = [128, 256]                       # 128 KiB per tensor: each fits, the whole plan does not
SMALL = ge.Options(device_memory_bytes=256 * KB, disable_reuse_memory=True)


def _numbers(e):
    m = re.search(r"requested (\d+) bytes, capacity (\d+) bytes, in use (\d+) bytes", str(e))
    assert m, str(e)
    return tuple(map(int, m.groups()))


@pytest.fixture(scope="module")
def bystander():
    """Another session, on the default device, that must keep working through every failure."""
    s = ge.Session(relu_chain([4, 4], 2), runtime="v2")
    yield s
    s.close()


def _bystander_ok(s):
    x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4)
    np.testing.assert_allclose(s.run(None, {"x": x})[0], 1 / (1 + np.exp(-np.maximum(x, 0))), rtol=1e-6)


def test_v1_refuses_at_load(bystander):
    with pytest.raises(ge.DeviceMemoryError) as e:
        ge.Session(relu_chain(SHAPE, 6), runtime="v1", options=SMALL)
    requested, capacity, in_use = _numbers(e.value)
    assert requested > capacity == 256 * KB and in_use == 0
    assert (e.value.requested, e.value.capacity) == (requested, capacity) and "runtime_v1" in str(e.value)
    _bystander_ok(bystander)


def test_v2_refuses_at_run_and_stays_refusing_cleanly(bystander):
    s = ge.Session(relu_chain(SHAPE, 6), runtime="v2", options=SMALL)  # loading reserves nothing yet
    x = np.ones(SHAPE, np.float32)
    for _ in range(3):  # the failure is repeatable and leaks nothing
        with pytest.raises(ge.DeviceMemoryError) as e:
            s.run(None, {"x": x})
        requested, capacity, in_use = _numbers(e.value)
        assert requested > capacity == 256 * KB and in_use == 0
    _bystander_ok(bystander)
    s.close()


def test_v2_dynamic_request_too_big_then_recovers(bystander):
    s = ge.Session(relu_chain(["N", 256], 3), runtime="v2", options=ge.Options(device_memory_bytes=1 << 20))
    small = np.linspace(-1, 1, 2 * 256, dtype=np.float32).reshape(2, 256)
    want = s.run(None, {"x": small})[0]
    with pytest.raises(ge.DeviceMemoryError) as e:
        s.run(None, {"x": np.ones((2048, 256), np.float32)})  # 2 MiB tensors on a 1 MiB device
    requested, capacity, in_use = _numbers(e.value)
    assert requested >= 2 << 20 and capacity == 1 << 20 and 0 <= in_use <= capacity
    np.testing.assert_array_equal(s.run(None, {"x": small})[0], want)
    stats = s.allocator_stats()
    assert stats["device_in_use"] <= stats["capacity"] == 1 << 20 and stats["dynamic"]["allocated"] == 0
    _bystander_ok(bystander)
    s.close()


@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_just_fits(runtime):
    opts = ge.Options(device_memory_bytes=4 << 20)
    with ge.Session(relu_chain(SHAPE, 6), runtime=runtime, options=opts) as s:
        x = np.full(SHAPE, -1, np.float32)
        want = x
        for k in range(6):
            want = np.maximum(want, 0) if k % 2 == 0 else 1 / (1 + np.exp(-want))
        np.testing.assert_allclose(s.run(None, {"x": x})[0], want, rtol=1e-6)


@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_device_larger_than_the_host_can_map(runtime, bystander):
    """Options(device_memory_bytes=1 PiB): both runtimes reserve the device's whole address range, which a
    host with 47-bit addresses refuses (ENOMEM); that is a DeviceMemoryError, not a bare OSError."""
    opts = ge.Options(device_memory_bytes=1 << 50)
    x = np.ones((2, 3), np.float32)
    try:
        s = ge.Session(relu_chain([2, 3], 2), runtime=runtime, options=opts)
    except ge.DeviceMemoryError as e:
        assert e.capacity == 1 << 50 and "host refused" in str(e)
    else:  # a host that maps 1 PiB lazily: then it must simply work
        with s:
            np.testing.assert_allclose(s.run(None, {"x": x})[0], 1 / (1 + np.exp(-1.0)), rtol=1e-6)
    _bystander_ok(bystander)


def test_v1_refusal_gives_the_weights_back():
    """Regression: the weights fit, the arena does not; the weights' reservation goes back with the error
    (it leaked, and a model without constants reserved a 512-byte weights block)."""
    import runtime_v1
    from ge.npu.memory import DeviceMemory
    from onnx import helper, numpy_helper
    from rel_models import make_model, vi
    w = numpy_helper.from_array(np.ones(SHAPE, np.float32), "w")
    model = make_model([helper.make_node("Add", ["x", "w"], ["a"]), helper.make_node("Relu", ["a"], ["b"]),
                        helper.make_node("Sigmoid", ["b"], ["y"])], [vi("x", SHAPE)], [vi("y", None)], [w])
    plan = ge.compile(model, options=SMALL)
    memory = DeviceMemory(256 * KB)
    with pytest.raises(ge.DeviceMemoryError):
        runtime_v1.load(plan, memory)
    assert memory.in_use == 0


@pytest.mark.parametrize("streams", [1, 2])
def test_v2_run_time_shaped_output_over_the_cap_names_the_tensor(streams):
    """Regression (issue 46, item 6): a graph output whose size is known only at run time was a plain host
    array that ignored Options.device_memory_bytes (a 2 GiB output on a 1 GiB session). Its bytes now count:
    over the cap it is a DeviceMemoryError naming it, before anything is allocated; the session recovers."""
    from onnx import TensorProto, helper
    from rel_models import make_model, vi
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Expand", ["r", "shape"], ["y"])]
    model = make_model(nodes, [vi("x", [1]), vi("shape", [2], TensorProto.INT64)], [vi("y", None)])
    opts = ge.Options(device_memory_bytes=1 << 20, stream_max_parallel_num={"AIcoreEngine": streams})
    with ge.Session(model, runtime="v2", options=opts) as s:
        x = np.float32([2.0])
        with pytest.raises(ge.DeviceMemoryError) as e:
            s.run(None, {"x": x, "shape": np.int64([1 << 16, 1 << 13])})   # 2 GiB of float32
        assert "output 'y'" in str(e.value) and e.value.requested == 2 << 30 and e.value.capacity == 1 << 20
        y = s.run(None, {"x": x, "shape": np.int64([4, 8])})[0]
        np.testing.assert_array_equal(y, np.full((4, 8), 2, np.float32))


def test_a_closed_device_memory_unmaps_and_refuses():
    from ge.npu.memory import DeviceMemory
    m = DeviceMemory(1 << 30, reserve=1 << 20)
    assert m.mapped == 1 << 20
    off = m.reserve(4096, "a")
    m.view(off, 4096)[:] = 7
    big = m.reserve(2 << 20, "b")            # past the first reservation: the memory grows (the cap is 1 GiB)
    assert m.mapped >= (2 << 20) + (64 << 10) and m.view(off, 4096)[0] == 7
    with pytest.raises(ge.DeviceMemoryError, match="'c'"):
        m.reserve(1 << 30, "'c'")            # over the capacity, whatever is mapped
    m.close()
    with pytest.raises(ge.DeviceMemoryError):
        m.reserve(16, "after close")
    m.release(off, 4096)   # a late release after close is harmless
    m.release(big, 2 << 20)


@pytest.mark.parametrize("rows", [128, "N"], ids=["static", "run-time-shaped"])
def test_v2_graph_outputs_count_together_against_the_cap(rows):
    """Regression (issue 46, item 5): runtime_v2 made a static plan's graph outputs as host arrays outside the
    cap (three 512 KiB outputs ran on a 1 MiB session; runtime_v1 refuses the plan at load), and checked each
    run-time-shaped output alone, so several could pass the cap together."""
    from onnx import helper
    from rel_models import make_model, vi
    nodes = [helper.make_node(op, ["x"], [f"y{k}"], name=op.lower()) for k, op in enumerate(("Relu", "Neg", "Abs"))]
    model = make_model(nodes, [vi("x", [rows, 1024])], [vi(f"y{k}", None) for k in range(3)])
    with ge.Session(model, runtime="v2", options=ge.Options(device_memory_bytes=1 << 20)) as s:
        with pytest.raises(ge.DeviceMemoryError) as e:
            s.run(None, {"x": np.ones((128, 1024), np.float32)})
        assert e.value.capacity == 1 << 20 and "'y" in str(e.value)
        small = np.full((16, 1024) if rows == "N" else (128, 1024), -2, np.float32)
        if rows == "N":   # the session keeps working when the outputs fit
            ys = s.run(None, {"x": small})
            np.testing.assert_array_equal(ys[1], -small)
