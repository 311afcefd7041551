"""onnxruntime.SparseTensor on the CPU: COO and CSR(C) tensors as containers (onnxruntime's Python API holds,
describes and hands them over; ge runs no sparse op, so a model's inputs stay dense).

COO: `values` [nnz] and `indices` [nnz] linear (or [nnz, rank] coordinates) into the dense shape; CSR(C):
`values`, `inner` indices (the column of each value) and `outer` indices (rows + 1 offsets). The views a
SparseTensor hands out are read-only, as onnxruntime's are (they show its memory). Strings are kept as object
arrays of str (ge's string tensors). Only the CPU device exists: `to_cuda` raises as onnxruntime's CPU
package does.
"""
from __future__ import annotations

import enum

import numpy as np

from onnx import TensorProto

from ..errors import InputError, UsageError
from ..ir.dtypes import SHORT, as_strings, to_onnx


class OrtSparseFormat(enum.IntEnum):
    ORT_SPARSE_UNDEFINED = 0
    ORT_SPARSE_COO = 1
    ORT_SPARSE_CSRC = 2
    ORT_SPARSE_BLOCK_SPARSE = 4


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.array(a, copy=True)
    a.flags.writeable = False
    return a


def _values(values) -> np.ndarray:
    v = np.asarray(values)
    if v.dtype.kind in "OUS":
        return as_strings(v).reshape(-1)
    if v.dtype not in SHORT:
        raise UsageError(f"SparseTensor: element type {v.dtype} has no ge tensor")
    return v.reshape(-1)


def _indices(a, what: str) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype != np.int64:
        raise InputError(f"SparseTensor: {what} must be int64, got {a.dtype}")
    return a


def _cpu(device) -> None:
    name = getattr(device, "device_type", None)
    if name is not None and callable(name) and name() != 0:
        raise UsageError("SparseTensor: only the cpu device exists in ge's onnxruntime API")


class _CooView:
    def __init__(self, indices):
        self._indices = indices

    def indices(self) -> np.ndarray:
        return self._indices


class _CsrView:
    def __init__(self, inner, outer):
        self._inner, self._outer = inner, outer

    def inner(self) -> np.ndarray:
        return self._inner

    def outer(self) -> np.ndarray:
        return self._outer


class SparseTensor:
    """A COO or CSR(C) sparse tensor in host memory (see the module doc)."""

    def __init__(self, fmt: OrtSparseFormat, dense_shape, values, parts: tuple):
        self._format, self._shape, self._values, self._parts = fmt, [int(d) for d in dense_shape], values, parts

    @classmethod
    def sparse_coo_from_numpy(cls, dense_shape, values, coo_indices, ort_device=None) -> "SparseTensor":
        _cpu(ort_device)
        v, idx = _values(values), _indices(coo_indices, "coo indices")
        size = int(np.prod(dense_shape, dtype=np.int64))
        if idx.ndim == 1 and (len(idx) != len(v) or (len(idx) and (idx.min() < 0 or idx.max() >= size))):
            raise InputError(f"SparseTensor: {len(idx)} linear indices for {len(v)} values in a dense size {size}")
        if idx.ndim == 2 and idx.shape != (len(v), len(dense_shape)):
            raise InputError(f"SparseTensor: coordinate indices {list(idx.shape)} for {len(v)} values of rank "
                             f"{len(dense_shape)}")
        return cls(OrtSparseFormat.ORT_SPARSE_COO, dense_shape, _frozen(v), (_frozen(idx),))

    @classmethod
    def sparse_csr_from_numpy(cls, dense_shape, values, inner_indices, outer_indices, ort_device=None) -> "SparseTensor":
        _cpu(ort_device)
        v = _values(values)
        inner, outer = _indices(inner_indices, "inner indices"), _indices(outer_indices, "outer indices")
        if len(dense_shape) != 2 or len(inner) != len(v) or len(outer) != int(dense_shape[0]) + 1:
            raise InputError(f"SparseTensor: CSR needs a 2-D shape, one inner index a value and rows + 1 outer "
                             f"indices (shape {list(dense_shape)}, {len(v)} values, {len(inner)} inner, {len(outer)} outer)")
        return cls(OrtSparseFormat.ORT_SPARSE_CSRC, dense_shape, _frozen(v), (_frozen(inner), _frozen(outer)))

    def format(self) -> OrtSparseFormat:
        return self._format

    def dense_shape(self) -> list[int]:
        return list(self._shape)

    def data_type(self) -> str:
        return f"sparse_tensor({TensorProto.DataType.Name(to_onnx(self._values.dtype)).lower()})"

    def device_name(self) -> str:
        return "cpu"

    def values(self) -> np.ndarray:
        return self._values

    def as_coo_view(self) -> _CooView:
        if self._format != OrtSparseFormat.ORT_SPARSE_COO:
            raise UsageError("this SparseTensor is not COO")
        return _CooView(self._parts[0])

    def as_csrc_view(self) -> _CsrView:
        if self._format != OrtSparseFormat.ORT_SPARSE_CSRC:
            raise UsageError("this SparseTensor is not CSR")
        return _CsrView(*self._parts)

    def as_blocksparse_view(self):
        raise UsageError("this SparseTensor is not block-sparse (ge makes COO and CSR only)")

    def to_cuda(self, ort_device):
        raise UsageError("SparseTensor.to_cuda: no CUDA device in ge's onnxruntime API (a CPU package)")
