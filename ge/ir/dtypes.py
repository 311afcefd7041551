"""Element types: ONNX codes <-> numpy dtypes, and the short names used by the printer.

ge's element types are the ones its Numba kernels compile for: float32/64, signed and unsigned ints of
8 to 64 bits, bool, and the two 16-bit floats float16 (numpy's) and bfloat16 (`ml_dtypes.bfloat16`, which
onnx itself depends on). Numba has no array type for either, so kernels see 16-bit float tensors as their
uint16 bit patterns (`storage`): the one view is taken where a kernel is called (registry.serial_blocks,
the thunk signatures). Strings (ONNX STRING) are numpy object arrays of Python `str`, as onnxruntime gives
them: no kernel sees one, the nodes that read or give them run on the host (ge/kernels/strings.py), outside
the planned feature map. Others (float8, float4, int4/2) are refused at load, naming the value.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
from onnx import TensorProto

from ..errors import ModelLoadError

FLOAT16, BFLOAT16 = np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
HALF = (FLOAT16, BFLOAT16)   # the 16-bit floats: stored 2 bytes an element, computed in float32
STRING = np.dtype(object)    # ONNX STRING: an object array of str (host values only)

_ONNX_TO_NP = {
    TensorProto.FLOAT: np.float32, TensorProto.DOUBLE: np.float64,
    TensorProto.INT8: np.int8, TensorProto.INT16: np.int16, TensorProto.INT32: np.int32,
    TensorProto.INT64: np.int64, TensorProto.UINT8: np.uint8, TensorProto.UINT16: np.uint16,
    TensorProto.UINT32: np.uint32, TensorProto.UINT64: np.uint64, TensorProto.BOOL: np.bool_,
    TensorProto.FLOAT16: FLOAT16, TensorProto.BFLOAT16: BFLOAT16, TensorProto.STRING: STRING,
}
_NP_TO_ONNX = {np.dtype(v): k for k, v in _ONNX_TO_NP.items()}

SHORT = {
    np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
    np.dtype(np.int8): "i8", np.dtype(np.int16): "i16", np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64", np.dtype(np.uint8): "u8", np.dtype(np.uint16): "u16",
    np.dtype(np.uint32): "u32", np.dtype(np.uint64): "u64", np.dtype(np.bool_): "b8",
    FLOAT16: "f16", BFLOAT16: "bf16", STRING: "str",
}
# a dtype as text in offline models: numpy's .str, except bfloat16's ('<V2' is any 2-byte void) and strings'
# ("string": their values are JSON text in plan.json, never pickled objects: ge/offline/format.py)
TOKEN = {dt: ("bfloat16" if dt == BFLOAT16 else "string" if dt == STRING else dt.str) for dt in SHORT}
FROM_TOKEN = {v: k for k, v in TOKEN.items()}


def from_onnx(code: int, where: str = "") -> np.dtype:
    """numpy dtype of an ONNX element type code."""
    try:
        return np.dtype(_ONNX_TO_NP[code])
    except KeyError:
        name = TensorProto.DataType.Name(code) if code in TensorProto.DataType.values() else code
        raise ModelLoadError(f"unsupported element type {name}{' of ' + where if where else ''}") from None


def check(dtype, where: str) -> np.dtype:
    """dtype if ge has it, else ModelLoadError naming `where` and the type (an initializer's float8...)."""
    dt = np.dtype(dtype)
    if dt not in SHORT:
        raise ModelLoadError(f"unsupported element type {dt} of {where}")
    return dt


def to_onnx(dtype) -> int:
    return _NP_TO_ONNX[np.dtype(dtype)]


def is_string(dtype) -> bool:
    return dtype is not None and np.dtype(dtype) == STRING


def as_strings(a) -> np.ndarray:
    """An array of text (numpy str_, bytes_ or void, or objects holding str or bytes) as ge's object array of str;
    bytes are read as UTF-8 (ONNX stores strings as bytes)."""
    a = np.asarray(a)
    if a.dtype.kind == "U":
        return a.astype(object)
    out = np.empty(a.shape, object)
    flat, src = out.reshape(-1), a.reshape(-1)
    for i, x in enumerate(src):
        if isinstance(x, np.void):   # numpy void elements: their bytes (onnxruntime reads them so)
            x = x.tobytes()
        flat[i] = x.decode("utf-8", errors="replace") if isinstance(x, bytes) else str(x)
    return out


def is_half(dtype) -> bool:
    return dtype is not None and np.dtype(dtype) in HALF


def storage(dtype) -> np.dtype:
    """The dtype a kernel sees: uint16 bit patterns for the 16-bit floats, else the dtype itself."""
    dt = np.dtype(dtype)
    return np.dtype(np.uint16) if dt in HALF else dt


def short(dtype) -> str:
    return "?" if dtype is None else SHORT.get(np.dtype(dtype), str(np.dtype(dtype)))
