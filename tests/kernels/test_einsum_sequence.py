"""Einsum (einsum.py), ReverseSequence (reverse_sequence.py), RMSNormalization (rms_norm.py), the new
activations and CumProd, against onnx.reference."""
import numpy as np
import pytest
from op_check import check_op, ge_only, make_model

import ge

from ge.errors import ExecutionError, ShapeError

rng = np.random.default_rng(0)


def randn(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("eq,shapes", [
    ("ij->ji", [(3, 4)]), ("ij->i", [(3, 4)]), ("...ii->...i", [(3, 5, 5)]), ("i,i", [(5,), (5,)]),
    ("bij, bjk -> bik", [(5, 2, 3), (5, 3, 4)]), ("ij,jk", [(3, 4), (4, 2)]), ("ii", [(4, 4)]),
    ("...j,j->...", [(2, 3, 4), (4,)]), ("b...,...->b...", [(2, 1, 3), (4, 3)]), ("i,j->ij", [(3,), (2,)]),
    ("ba", [(2, 3)]), ("->", [()]), ("bhqd,bhkd->bhqk", [(2, 3, 4, 8), (2, 3, 5, 8)]),
])
def test_einsum(eq, shapes):
    check_op("Einsum", [randn(*s) for s in shapes], {"equation": eq}, opset=12)


def test_einsum_ints_and_float64():
    a = rng.integers(-5, 5, (3, 4)).astype(np.int64)
    check_op("Einsum", [a, a], {"equation": "ij,ij->i"}, opset=12)
    check_op("Einsum", [randn(4, 3, dtype=np.float64)], {"equation": "ij->j"}, opset=12)


@pytest.mark.parametrize("eq,shapes,msg", [
    ("ij,jk->ik", [(3, 4), (5, 2)], "extents"), ("ij->k", [(3, 4)], "output term"),
    ("ijk->i", [(3, 4)], "rank"), ("i,i,i->", [(2,), (2,), (2,)], "one or two operands"),
    ("i$->i", [(2, 2)], "bad term"), ("ij,j->ii", [(2, 2), (2,)], "output term"),
])
def test_einsum_bad_equation(eq, shapes, msg):
    with pytest.raises(ShapeError, match=msg):
        ge_only("Einsum", [randn(*s) for s in shapes], {"equation": eq}, opset=12)


@pytest.mark.parametrize("time_axis,shape", [(0, (4, 3)), (1, (3, 4)), (0, (5, 2, 3)), (1, (2, 5, 3, 2))])
def test_reverse_sequence(time_axis, shape):
    batch = shape[1 - time_axis]
    lens = rng.integers(0, shape[time_axis] + 1, batch).astype(np.int64)
    check_op("ReverseSequence", [randn(*shape), lens], {"time_axis": time_axis, "batch_axis": 1 - time_axis},
             opset=10)


def test_reverse_sequence_bad_input():
    model, feeds = make_model("ReverseSequence", [randn(3, 2), np.array([4, 1], np.int64)], opset=10)
    for runtime in ("v1", "v2"):
        with pytest.raises(ExecutionError, match="ReverseSequence.*sequence_lens"):
            ge.Session(model, runtime=runtime).run(None, feeds)
    with pytest.raises(ShapeError, match="sequence_lens has shape"):
        ge_only("ReverseSequence", [randn(3, 2), np.array([1, 1, 1], np.int64)], opset=10)
    with pytest.raises(ShapeError, match="time_axis"):
        ge_only("ReverseSequence", [randn(3, 2), np.array([1, 1], np.int64)], {"time_axis": 1,
                 "batch_axis": 1}, opset=10)


@pytest.mark.parametrize("axis,shape", [(-1, (2, 3, 8)), (1, (2, 3, 4)), (0, (3, 4))])
def test_rms_normalization(axis, shape):
    x = randn(*shape)
    check_op("RMSNormalization", [x, randn(*shape[axis % len(shape):])], {"axis": axis, "epsilon": 0.1},
             opset=23)


def test_rms_normalization_scale_must_fit():
    with pytest.raises(ShapeError, match="normalized shape"):
        ge_only("RMSNormalization", [randn(2, 4), randn(1)], opset=23)


@pytest.mark.parametrize("op,attrs", [("Shrink", {"lambd": 1.5}), ("Shrink", {"lambd": 0.5, "bias": 0.25}),
                                      ("Swish", {}), ("Swish", {"alpha": 0.5})])
def test_new_activations(op, attrs):
    x = np.concatenate([randn(64) * 3, np.array([0.0, 1.5, -1.5, 40.0, -40.0], np.float32)])
    check_op(op, [x], attrs, opset=24)


@pytest.mark.parametrize("dtype", [np.float64, np.int32])
@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumprod(dtype, exclusive, reverse):
    x = rng.integers(1, 4, (3, 4)).astype(dtype)
    for axis in (0, -1):
        check_op("CumProd", [x, np.array(axis, np.int32)], {"exclusive": exclusive, "reverse": reverse},
                 opset=26, const_inputs=(1,))


@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("periodic,size,dtype", [(1, 10, 1), (0, 10, 1), (1, 1, 11), (0, 7, 11)])
def test_windows(op, periodic, size, dtype):
    check_op(op, [np.array(size, np.int64)], {"periodic": periodic, "output_datatype": dtype}, opset=17,
             const_inputs=(0,))
    model, feeds = make_model(op, [np.array(size, np.int32)], {"periodic": periodic, "output_datatype": dtype},
                              opset=17)
    with ge.Session(model, runtime="v2") as s:  # a fed size: a dynamic node
        np.testing.assert_allclose(s.run(None, feeds)[0], check_op(op, [np.array(size, np.int64)], {
            "periodic": periodic, "output_datatype": dtype}, opset=17, const_inputs=(0,))[0])


def test_window_bad_size():
    with pytest.raises(ShapeError, match="non-negative"):
        ge_only("HannWindow", [np.array(-1, np.int64)], opset=17, const_inputs=(0,))


@pytest.mark.parametrize("shape,target,axes", [((20, 10, 3), (10, 7, 3), None), ((10, 7, 3), (20, 10, 3), None),
                                               ((20, 8, 3), (10, 10), [0, 1]), ((3, 20, 8), (9, 5), [-2, -1]),
                                               ((7, 4), (4, 7), None)])
def test_center_crop_pad(shape, target, axes):
    attrs = {} if axes is None else {"axes": axes}
    check_op("CenterCropPad", [randn(*shape), np.array(target, np.int64)], attrs, opset=18, const_inputs=(1,))


def test_center_crop_pad_bad_shape():
    with pytest.raises(ShapeError, match="does not fit"):
        ge_only("CenterCropPad", [randn(3, 4), np.array([2], np.int64)], opset=18, const_inputs=(1,))
