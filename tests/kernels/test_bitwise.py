"""Bitwise ops (bitwise.py) against onnx.reference."""
import numpy as np
import pytest
from op_check import check_op, ge_only

from ge.errors import ShapeError

rng = np.random.default_rng(0)


def ints(shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


@pytest.mark.parametrize("op", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
@pytest.mark.parametrize("dtype,sa,sb", [(np.int32, (3, 4), (3, 4)), (np.uint8, (2, 3, 4), (4,)),
                                         (np.int64, (2, 1, 3), (4, 1))])
def test_bitwise_binary(op, dtype, sa, sb):
    check_op(op, [ints(sa, dtype), ints(sb, dtype)], opset=18)


@pytest.mark.parametrize("dtype", [np.int32, np.uint8])
def test_bitwise_not(dtype):
    check_op("BitwiseNot", [ints((3, 5), dtype)], opset=18)


def test_bitwise_refuses_floats_and_mixed_dtypes():
    with pytest.raises(ShapeError, match="dtype"):
        ge_only("BitwiseAnd", [np.ones(3, np.float32), np.ones(3, np.float32)], opset=18)
    with pytest.raises(ShapeError, match="different dtypes"):
        ge_only("BitwiseOr", [np.ones(3, np.int32), np.ones(3, np.int64)], opset=18)
    with pytest.raises(ShapeError, match="dtype"):
        ge_only("BitwiseNot", [np.ones(3, np.bool_)], opset=18)
