"""Reduce* and ArgMax/ArgMin kernels against the ONNX reference, across opsets, axes, keepdims and dtypes."""
import numpy as np
import pytest
from op_check import check_op, make_model, run_ge

from ge.errors import ShapeError

rng = np.random.default_rng(0)
REDUCE = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
          "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"]


def _x(shape, dtype=np.float32):
    return (rng.random(shape) + 0.5).astype(dtype)  # positive: LogSum and Prod stay well defined


@pytest.mark.parametrize("op", REDUCE)
@pytest.mark.parametrize("axes", [None, [1], [0, 2], [-1], [1, 2, 3]])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_axes_input(op, axes, keepdims):
    x = _x((2, 3, 4, 5))
    inputs = [x] if axes is None else [x, np.array(axes, np.int64)]
    check_op(op, inputs, {"keepdims": keepdims}, opset=18, const_inputs=(1,))


@pytest.mark.parametrize("op", REDUCE)
def test_reduce_axes_attribute(op):  # before opset 18 (13 for ReduceSum) axes was an attribute
    check_op(op, [_x((3, 4, 5))], {"axes": [0, 2], "keepdims": 0}, opset=11)


def test_reduce_sum_axes_input_opset13():
    check_op("ReduceSum", [_x((3, 4, 5)), np.array([1], np.int64)], {}, opset=13, const_inputs=(1,))


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceSumSquare", "ReduceL2", "ReduceLogSumExp"])
def test_noop_with_empty_axes(op):  # no reduction, but the elementwise part still applies
    check_op(op, [_x((3, 4))], {"noop_with_empty_axes": 1}, opset=18)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare"])
@pytest.mark.parametrize("dtype", [np.int64, np.float64])  # few dtypes: each one is a compilation
def test_reduce_dtypes(op, dtype):
    x = rng.integers(-5, 6, (3, 4, 5)).astype(dtype)
    check_op(op, [x, np.array([1], np.int64)], {}, opset=18, const_inputs=(1,))


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
def test_reduce_bool(op):
    x = rng.random((3, 4)) > 0.5
    check_op(op, [x, np.array([1], np.int64)], {}, opset=20, const_inputs=(1,))


@pytest.mark.parametrize("op", REDUCE)
def test_reduce_empty_set(op):
    x = np.zeros((2, 0, 4), np.float32)
    check_op(op, [x, np.array([1], np.int64)], {}, opset=18, const_inputs=(1,))


def test_reduce_long_rows():  # the 16-lane max/min path and the vectorized sums
    x = rng.standard_normal((3, 1000)).astype(np.float32)
    for op in ("ReduceMax", "ReduceMin", "ReduceSum", "ReduceLogSumExp"):
        check_op(op, [x, np.array([-1], np.int64)], {}, opset=18, const_inputs=(1,))


def test_reduce_log_sum_exp_large_values():
    x = np.array([[1000.0, 1000.0], [-1000.0, 0.0]], np.float32)
    check_op("ReduceLogSumExp", [x, np.array([1], np.int64)], {}, opset=18, const_inputs=(1,))


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("last", [0, 1])
def test_arg(op, axis, keepdims, last):
    x = rng.integers(0, 3, (3, 4, 20)).astype(np.float32)  # many ties
    check_op(op, [x], {"axis": axis, "keepdims": keepdims, "select_last_index": last}, opset=13)


@pytest.mark.parametrize("dtype", [np.int64, np.float64])
def test_arg_dtypes(dtype):
    x = rng.integers(0, 50, (5, 7)).astype(dtype)
    check_op("ArgMax", [x], {"axis": 1}, opset=13)
    check_op("ArgMin", [x], {"axis": 0}, opset=13)


def test_arg_empty_axis_is_an_error():
    model, feeds = make_model("ArgMax", [np.zeros((2, 0), np.float32)], {"axis": 1}, opset=13)
    with pytest.raises(ShapeError, match="size 0"):
        run_ge(model, feeds)
