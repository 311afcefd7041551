"""Element types: ONNX codes <-> numpy dtypes, and the short names used by the printer.

ge's element types are the ones its Numba kernels compile for: float32/64, signed and unsigned ints of
8 to 64 bits, bool. Others (float16, bfloat16, float8, int4, strings) are refused at load, by name.
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

from ..errors import ModelLoadError

_ONNX_TO_NP = {
    TensorProto.FLOAT: np.float32, TensorProto.DOUBLE: np.float64,
    TensorProto.INT8: np.int8, TensorProto.INT16: np.int16, TensorProto.INT32: np.int32,
    TensorProto.INT64: np.int64, TensorProto.UINT8: np.uint8, TensorProto.UINT16: np.uint16,
    TensorProto.UINT32: np.uint32, TensorProto.UINT64: np.uint64, TensorProto.BOOL: np.bool_,
}
_NP_TO_ONNX = {np.dtype(v): k for k, v in _ONNX_TO_NP.items()}

SHORT = {
    np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
    np.dtype(np.int8): "i8", np.dtype(np.int16): "i16", np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64", np.dtype(np.uint8): "u8", np.dtype(np.uint16): "u16",
    np.dtype(np.uint32): "u32", np.dtype(np.uint64): "u64", np.dtype(np.bool_): "b8",
}


def from_onnx(code: int, where: str = "") -> np.dtype:
    """numpy dtype of an ONNX element type code."""
    try:
        return np.dtype(_ONNX_TO_NP[code])
    except KeyError:
        name = TensorProto.DataType.Name(code) if code in TensorProto.DataType.values() else code
        raise ModelLoadError(f"unsupported element type {name}{' of ' + where if where else ''}") from None


def to_onnx(dtype) -> int:
    return _NP_TO_ONNX[np.dtype(dtype)]


def short(dtype) -> str:
    return "?" if dtype is None else SHORT.get(np.dtype(dtype), str(np.dtype(dtype)))
