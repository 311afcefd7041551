"""GE's zero-copy alignment rule, on both runtimes: a caller's input or bound output buffer is used as the
tensor's memory only when its address is 32-byte aligned; any other buffer is copied, and the runtime's
stats() count which way each went (ge.plan.zero_copy_aligned)."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import ge
from ge.plan import aligned_empty

OFFSETS = (0, 4, 16, 32, 64)


def _model():
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [4, 8])  # noqa: E731
    nodes = [helper.make_node("Relu", ["x"], ["h"]), helper.make_node("Sigmoid", ["h"], ["y"])]
    g = helper.make_graph(nodes, "zc", [vi("x")], [vi("y")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _at_offset(shape, offset: int) -> np.ndarray:
    """A float32 array whose address is `offset` bytes past a 64-byte boundary."""
    n = int(np.prod(shape)) * 4
    a = aligned_empty(n + offset, np.uint8)[offset:].view(np.float32).reshape(shape)
    assert a.ctypes.data % 64 == offset % 64
    return a


def _expected(x):
    return 1 / (1 + np.exp(-np.maximum(x, 0)))


@pytest.mark.parametrize("runtime", ["v1", "v2"])
@pytest.mark.parametrize("offset", OFFSETS)
def test_input_bound_only_when_32_byte_aligned(runtime, offset):
    """docs/ge-reference.md §8.1: zero-copy memory is 32-byte aligned (and §2.2: user I/O buffers used with
    input/output reuse must be 32-byte aligned). Offsets 0, 32, 64 are bound, 4 and 16 copied."""
    sess = ge.Session(_model(), runtime=runtime)
    x = _at_offset((4, 8), offset)
    x[...] = np.random.default_rng(offset).standard_normal((4, 8))
    (y,) = sess.run(None, {"x": x})
    np.testing.assert_allclose(y, _expected(x), rtol=1e-6)
    st = sess._executor.stats()
    aligned = offset % 32 == 0
    assert (st["zero_copy_inputs"], st["copied_inputs"]) == ((1, 0) if aligned else (0, 1))
    if runtime == "v1":
        assert st["misaligned_inputs"] == (0 if aligned else 1)
        slot = sess._executor.model.io_slot[sess.plan.inputs[0]].slot
        bound = sess._executor._instances.all[0].bases[slot] == x.ctypes.data
        assert bound == aligned


@pytest.mark.parametrize("runtime", ["v1", "v2"])
@pytest.mark.parametrize("offset", OFFSETS)
def test_output_bound_only_when_32_byte_aligned(runtime, offset):
    """docs/ge-reference.md §8.1 (32-byte zero-copy alignment) for bound outputs: an aligned buffer is
    written by the kernel itself, a misaligned one gets the result copied in (GE's EnsureTensorAtOutMemory
    fallback, docs/ge-reference.md §4.3) and is counted as misaligned_outputs."""
    sess = ge.Session(_model(), runtime=runtime)
    x = np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32)
    out = _at_offset((4, 8), offset)
    out[...] = np.nan
    (y,) = sess.run(None, {"x": x}, outputs={"y": out})
    assert y is out
    np.testing.assert_allclose(out, _expected(x), rtol=1e-6)
    st = sess._executor.stats()
    aligned = offset % 32 == 0
    assert (st["zero_copy_outputs"], st["misaligned_outputs"]) == ((1, 0) if aligned else (0, 1))
    if runtime == "v1":
        assert st["copied_outputs"] == (0 if aligned else 1)


def test_a_read_only_input_is_copied_on_v2():
    """runtime_v2 calls its kernels from Python: a read-only feed read in place would make Numba compile every
    kernel it reaches a second time (a read-only array is another type), so v2 copies it (v1's native loop
    reads it through its address: bound)."""
    x = aligned_empty((4, 8), np.float32)
    x[...] = np.random.default_rng(7).standard_normal((4, 8))
    x.flags.writeable = False
    for runtime, counts in (("v1", (1, 0)), ("v2", (0, 1))):
        sess = ge.Session(_model(), runtime=runtime)
        (y,) = sess.run(None, {"x": x})
        np.testing.assert_allclose(y, _expected(x), rtol=1e-6)
        st = sess._executor.stats()
        assert (st["zero_copy_inputs"], st["copied_inputs"]) == counts, runtime
