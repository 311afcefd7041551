"""OrtValue and OrtValueVector: onnxruntime's tensor handles, over numpy arrays on the host.

An OrtValue here is a numpy array (C-ordered) and nothing else: one made from an array shares its memory, as
onnxruntime's does on the CPU (`numpy()`, `__array__`, `data_ptr` and DLPack all see the same bytes), and an
output of a run owns its memory (ge's runtimes return arrays that are the caller's, never views of a device
arena), so an OrtValue kept after its session closed stays valid. Devices other than "cpu" are refused as
onnxruntime's CPU package refuses them; string OrtValues too, as in onnxruntime (refused, named; strings go
through run() as numpy arrays). Sparse tensors (ge/ort/sparse.py) are held and described, not run.
"""
from __future__ import annotations

import numbers

import numpy as np
from onnx import TensorProto

from ..errors import InputError, UsageError
from ..ir.dtypes import SHORT, from_onnx, to_onnx

_DLPACK_CPU = (1, 0)   # (kDLCPU, device 0): dlpack.h's DLDeviceType


def element_dtype(element_type) -> np.dtype:
    """numpy dtype from onnxruntime's two spellings: a numpy type or an ONNX TensorProto code."""
    if isinstance(element_type, numbers.Integral) and not isinstance(element_type, bool):
        return from_onnx(int(element_type), "an OrtValue")
    try:
        dt = np.dtype(element_type)
    except TypeError:
        raise InputError(f"element_type {element_type!r:.40} is neither a numpy type nor an ONNX type code") \
            from None
    if dt not in SHORT:
        raise UsageError(f"element type {dt} has no ge tensor (ge's: {', '.join(map(str, SHORT))})")
    return dt


def type_name(dtype) -> str:
    """'tensor(float)' as onnxruntime names a tensor type."""
    return f"tensor({TensorProto.DataType.Name(to_onnx(dtype)).lower()})"


def _cpu(device_type: str, what: str) -> None:
    if str(device_type).lower() != "cpu":
        raise UsageError(f"{what}: device '{device_type}' is not available: ge's onnxruntime API holds values "
                         "in host memory only (device_type='cpu'), as onnxruntime's CPU package does")


class _Capsule:
    """A DLPack capsule as numpy.from_dlpack takes it (an object with __dlpack__)."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, stream=None, **_):
        return self._capsule

    def __dlpack_device__(self):
        return _DLPACK_CPU


class OrtValue:
    """onnxruntime.OrtValue holding a tensor in host memory."""

    __slots__ = ("_array",)

    def __init__(self, array: np.ndarray):
        self._array = array

    # -- makers ----------------------------------------------------------------------------------------
    @classmethod
    def ortvalue_from_numpy(cls, numpy_obj, device_type: str = "cpu", device_id: int = 0,
                            vendor_id: int = -1) -> "OrtValue":
        """The array's memory, shared (a copy when it is not C-contiguous)."""
        _cpu(device_type, "ortvalue_from_numpy")
        arr = numpy_obj if isinstance(numpy_obj, np.ndarray) else np.asarray(numpy_obj)
        if arr.dtype.kind in "OUS":
            # onnxruntime's own refusal: "only supported from non-string numpy arrays" (feed strings to run())
            raise UsageError("an OrtValue from a string or object array: like onnxruntime, ge makes OrtValues from "
                             "non-string arrays only; pass string tensors to run() as numpy arrays")
        element_dtype(arr.dtype)
        return cls(arr if arr.flags.c_contiguous else np.ascontiguousarray(arr))

    @classmethod
    def ortvalue_from_numpy_with_onnx_type(cls, data: np.ndarray, onnx_element_type: int) -> "OrtValue":
        """`data`'s bytes read as the ONNX type (e.g. uint16 bits as BFLOAT16)."""
        dt = element_dtype(onnx_element_type)
        if data.dtype.itemsize != dt.itemsize:
            raise InputError(f"ortvalue_from_numpy_with_onnx_type: {data.dtype} elements are {data.dtype.itemsize} "
                             f"bytes, {dt} elements {dt.itemsize}")
        return cls(np.ascontiguousarray(data).view(dt))

    @classmethod
    def ortvalue_from_shape_and_type(cls, shape, element_type, device_type: str = "cpu", device_id: int = 0,
                                     vendor_id: int = -1, memory_info=None) -> "OrtValue":
        """A new tensor of that shape and type (zeroed: ge never hands out uninitialised memory)."""
        _cpu(device_type, "ortvalue_from_shape_and_type")
        dims = list(shape)
        if any(isinstance(d, bool) or not isinstance(d, numbers.Integral) or d < 0 for d in dims):
            raise InputError(f"ortvalue_from_shape_and_type: shape {dims} must be sizes >= 0")
        return cls(np.zeros([int(d) for d in dims], element_dtype(element_type)))

    @classmethod
    def from_dlpack(cls, data) -> "OrtValue":
        """From an object with __dlpack__ (a numpy array, a torch CPU tensor...) or a DLPack capsule."""
        source = data if hasattr(data, "__dlpack__") else _Capsule(data)
        return cls.ortvalue_from_numpy(np.from_dlpack(source))

    @classmethod
    def ort_value_from_sparse_tensor(cls, sparse_tensor) -> "OrtValue":
        from .sparse import SparseTensor  # noqa: PLC0415 (only when asked: sparse tensors are rare)
        if not isinstance(sparse_tensor, SparseTensor):
            raise InputError(f"ort_value_from_sparse_tensor: a SparseTensor, not {type(sparse_tensor).__name__}")
        return _SparseValue(sparse_tensor)

    def _get_c_value(self) -> "OrtValue":
        """onnxruntime's native value behind an OrtValue: ge's is its own."""
        return self

    # -- what it holds ---------------------------------------------------------------------------------
    def data_ptr(self) -> int:
        return self._array.ctypes.data

    def device_name(self) -> str:
        return "cpu"

    def shape(self) -> list[int]:
        return list(self._array.shape)

    def data_type(self) -> str:
        return type_name(self._array.dtype)

    def element_type(self) -> int:
        return to_onnx(self._array.dtype)

    def tensor_size_in_bytes(self) -> int:
        return self._array.nbytes

    def has_value(self) -> bool:
        return True

    def is_tensor(self) -> bool:
        return True

    def is_sparse_tensor(self) -> bool:
        return False

    def is_tensor_sequence(self) -> bool:
        return False

    def as_sparse_tensor(self):
        raise UsageError("this OrtValue holds a dense tensor, not a sparse one")

    def numpy(self) -> np.ndarray:
        """The tensor as a numpy array sharing its memory."""
        return self._array

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        if copy:
            return self._array.astype(dtype or self._array.dtype, copy=True)
        if dtype is not None and np.dtype(dtype) != self._array.dtype:
            if copy is False:
                raise ValueError(f"OrtValue of {self._array.dtype} cannot be viewed as {np.dtype(dtype)} "
                                 "without a copy")
            return self._array.astype(dtype)
        return self._array

    def __dlpack__(self, *, stream=None, **kwargs):
        return self._array.__dlpack__(stream=stream, **kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return _DLPACK_CPU

    def update_inplace(self, np_arr) -> None:
        """Write `np_arr`'s values into this tensor's memory (the same number of elements; converted to this
        tensor's type, where onnxruntime copies raw bytes)."""
        src = np.asarray(np_arr)
        if src.size != self._array.size:
            raise UsageError(f"update_inplace: {src.size} elements given, the OrtValue holds "
                             f"{self._array.size} ({self._array.dtype}{list(self._array.shape)})")
        self._array.reshape(-1)[...] = src.reshape(-1)

    def __repr__(self) -> str:
        return f"OrtValue({self.data_type()}{self.shape()}, cpu)"


class _SparseValue(OrtValue):
    """An OrtValue holding a SparseTensor (ge/ort/sparse.py): described and handed back, not run (ge's
    models take dense tensors)."""

    __slots__ = ()

    def is_tensor(self) -> bool:
        return False

    def is_sparse_tensor(self) -> bool:
        return True

    def as_sparse_tensor(self):
        return self._array

    def data_type(self) -> str:
        return self._array.data_type()

    def shape(self) -> list[int]:
        return self._array.dense_shape()

    def numpy(self) -> np.ndarray:
        raise UsageError("this OrtValue holds a sparse tensor: as_sparse_tensor() gives it (ge's models take dense "
                         "tensors)")

    def data_ptr(self) -> int:
        return self._array.values().ctypes.data

    def tensor_size_in_bytes(self) -> int:
        return self._array.values().nbytes

    def element_type(self) -> int:
        return to_onnx(self._array.values().dtype)


class OrtValueVector:
    """onnxruntime's OrtValueVector: a list of OrtValues with its DLPack helpers."""

    def __init__(self, values=()):
        self._values: list[OrtValue] = [as_ortvalue(v) for v in values]

    def push_back(self, value) -> None:
        self._values.append(as_ortvalue(value))

    def push_back_batch(self, values, *_ignored) -> None:
        for v in values:
            self.push_back(v)

    def reserve(self, n: int) -> None:
        pass   # a Python list grows by itself

    def shrink_to_fit(self) -> None:
        pass

    def __len__(self) -> int:
        return len(self._values)

    def __getitem__(self, k: int) -> OrtValue:
        return self._values[k]

    def __iter__(self):
        return iter(self._values)

    def dlpack_at(self, k: int):
        return self._values[k].__dlpack__()

    def element_type_at(self, k: int) -> int:
        return self._values[k].element_type()

    def to_dlpacks(self, to_tensor=None) -> list:
        capsules = [v.__dlpack__() for v in self._values]
        return capsules if to_tensor is None else [to_tensor(c) for c in capsules]

    def numpy(self) -> list[np.ndarray]:
        return [v.numpy() for v in self._values]


def copy_tensors(src, dst, stream=None) -> None:
    """Copy each source OrtValue's data into the destination OrtValue of the same shape and type."""
    src, dst = list(src), list(dst)
    if len(src) != len(dst):
        raise InputError(f"copy_tensors: {len(src)} sources but {len(dst)} destinations")
    for k, (a, b) in enumerate(zip(src, dst)):
        a, b = as_ortvalue(a), as_ortvalue(b)
        if a.shape() != b.shape() or a.element_type() != b.element_type():
            raise InputError(f"copy_tensors: source {k} is {a.data_type()}{a.shape()}, destination "
                             f"{b.data_type()}{b.shape()}")
        np.copyto(b.numpy(), a.numpy())


def as_ortvalue(value) -> OrtValue:
    if isinstance(value, OrtValue):
        return value
    if isinstance(value, np.ndarray):
        return OrtValue.ortvalue_from_numpy(value)
    raise InputError(f"expected an OrtValue (or numpy array), not {type(value).__name__}")
