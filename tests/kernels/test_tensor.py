import numpy as np
import pytest
from onnx import numpy_helper
from op_check import check_op, make_model, run_ge

from ge.errors import ShapeError
from ge.kernels import lookup

rng = np.random.default_rng(0)
I64 = np.int64


def data(shape, dtype=np.float32):
    return (rng.standard_normal(shape) * 10).astype(dtype)


@pytest.mark.parametrize("shape,target,allowzero", [
    ((2, 3, 4), [4, -1], 0), ((2, 3, 4), [0, 0, 4], 0), ((2, 0, 4), [0, 4, 5], 1), ((2, 0, 4), [0, -1], 0), ((6,), [1, 2, 3], 0)])
def test_reshape(shape, target, allowzero):
    check_op("Reshape", [data(shape), np.array(target, I64)], {"allowzero": allowzero}, opset=14,
             const_inputs=(1,))


def test_reshape_is_a_view():
    assert lookup("Reshape").alias == 0
    with pytest.raises(ShapeError, match="Reshape node"):
        run_ge(*make_model("Reshape", [data((2, 3)), np.array([4, -1], I64)], const_inputs=(1,)))


@pytest.mark.parametrize("axis", [0, 1, 3, -1, -3])
def test_flatten(axis):
    check_op("Flatten", [data((2, 3, 1, 4))], {"axis": axis})


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("axes", [None, [1], [-1, 1]])
def test_squeeze(opset, axes):
    x = data((2, 1, 3, 1))
    if opset < 13:
        check_op("Squeeze", [x], {} if axes is None else {"axes": axes}, opset=opset)
    else:
        check_op("Squeeze", [x] if axes is None else [x, np.array(axes, I64)], opset=opset, const_inputs=(1,))


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("axes", [[0], [1, -1], [0, 2, 4]])
def test_unsqueeze(opset, axes):
    x = data((2, 3))
    if opset < 13:
        check_op("Unsqueeze", [x], {"axes": axes}, opset=opset)
    else:
        check_op("Unsqueeze", [x, np.array(axes, I64)], opset=opset, const_inputs=(1,))


def test_identity():
    check_op("Identity", [data((2, 3), np.int32)])


@pytest.mark.parametrize("opset,n_outputs", [(7, 1), (10, 2), (13, 1), (13, 2)])
def test_dropout_inference(opset, n_outputs):
    check_op("Dropout", [data((3, 4))], {"ratio": 0.3} if opset < 12 else {}, opset=opset,
             n_outputs=n_outputs)


@pytest.mark.parametrize("ratio,n_outputs", [(0.3, 1), (0.7, 2), (0.0, 2)])
def test_dropout_training(ratio, n_outputs):  # numpy's legacy generator for the seed, as the reference
    check_op("Dropout", [data((4, 5)), np.array(ratio, np.float32), np.array(True)], {"seed": 3},
             opset=13, n_outputs=n_outputs, const_inputs=(1, 2))


@pytest.mark.parametrize("attrs", [{}, {"start": 1}, {"end": -1}, {"start": -2, "end": 10}, {"start": 3, "end": 1}])
def test_shape(attrs):
    check_op("Shape", [data((2, 3, 4))], attrs, opset=15)


def test_size():
    check_op("Size", [data((2, 3, 4), np.uint8)])
    check_op("Size", [data((0, 3))])


@pytest.mark.parametrize("value", [None, np.array([7], np.int32), np.array([1.5], np.float64),
                                   np.array([True]), np.array([-2**62], np.int64)])
@pytest.mark.parametrize("shape", [[2, 3], [0], []])
def test_constant_of_shape(value, shape):
    attrs = {} if value is None else {"value": numpy_helper.from_array(value)}
    check_op("ConstantOfShape", [np.array(shape, I64)], attrs,
             const_inputs=(0,))


@pytest.mark.parametrize("attrs", [
    {"value": np.arange(6, dtype=np.float32).reshape(2, 3)}, {"value": np.array([2**60 + 1, -3], np.int64)},
    {"value": np.array([[True, False]])}, {"value_float": 2.5}, {"value_floats": [1.0, -2.0]},
    {"value_int": 7}, {"value_ints": [3, 4, 5]}, {"value": np.array(3, np.uint8)}])
def test_constant(attrs):
    if "value" in attrs:
        attrs = {"value": numpy_helper.from_array(attrs["value"])}
    check_op("Constant", [], attrs)


@pytest.mark.parametrize("dtype,start,limit,delta", [
    (np.float32, 1.0, 5.5, 0.5), (np.int32, 10, 4, -3), (np.int64, 0, 5, 1), (np.float64, 3.0, 1.0, 1.0),
    (np.int16, -4, 3, 2)])
def test_range(dtype, start, limit, delta):
    check_op("Range", [np.array(v, dtype) for v in (start, limit, delta)], const_inputs=(0, 1, 2))


@pytest.mark.parametrize("shape,k,dtype", [((3, 3), 0, None), ((3, 5), 2, 1), ((4, 2), -1, 7), ((2, 4), 9, 9)])
def test_eye_like(shape, k, dtype):
    attrs = {"k": k} if dtype is None else {"k": k, "dtype": dtype}
    check_op("EyeLike", [data(shape, np.int32)], attrs)


@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("values_dtype", [np.float32, np.int64])
def test_one_hot(axis, values_dtype):
    idx = np.array([[0, -1, 5], [2, 9, -7]], I64)
    check_op("OneHot", [idx, np.array(6, np.int32), np.array([1, 3], values_dtype)], {"axis": axis},
             opset=11, const_inputs=(1,))
