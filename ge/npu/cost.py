"""Work estimates per plan node for the modelled clock: FLOPs, bytes moved, and whether the cube unit does it.

Counts follow the usual conventions (a multiply-add is 2 FLOPs): Conv/FusedConv/ConvTranspose and
Gemm/MatMul are "cube" work (the matrix unit); everything else is "vector" work, estimated per output
element (times the window for pooling, the size for LRN, a few for Softmax/normalization). Bytes are the
static bytes read and written. Unknown shapes count as zero work (the sim then charges only the launch).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CUBE_OPS = frozenset({"Conv", "FusedConv", "ConvTranspose", "Gemm", "MatMul", "FusedGemm", "FusedMatMul",
                      "QLinearConv", "MatMulInteger", "ConvInteger"})
PER_ELEMENT = {"Softmax": 5, "LogSoftmax": 5, "BatchNormalization": 4, "LayerNormalization": 8,
               "InstanceNormalization": 8, "Sigmoid": 4, "Tanh": 4, "Erf": 8, "Gelu": 8}


@dataclass(frozen=True, slots=True)
class Work:
    flops: float
    bytes: float
    cube: bool = False


def _elems(v) -> int:
    if v is None or not v.is_static:
        return 0
    return int(np.prod(v.shape, dtype=np.int64))


def _bytes(v) -> int:
    return _elems(v) * (v.dtype.itemsize if v is not None and v.dtype is not None else 0)


def node_work(op: str, attrs, ins, outs) -> Work:
    """FLOPs and bytes of one node at its static shapes; `ins`/`outs` are tensors with shape, dtype and
    is_static (a plan's PlanTensors; None for an absent input)."""
    nbytes = sum(_bytes(v) for v in ins if v is not None) + sum(_bytes(v) for v in outs)
    out = _elems(outs[0]) if outs else 0
    if op in ("Conv", "FusedConv", "ConvTranspose") and len(ins) > 1 and ins[1] is not None and ins[1].is_static:
        base = _elems(ins[0]) if op == "ConvTranspose" else out
        w = attrs.get("weight_shape") or ins[1].shape  # packed weights (pack_conv_weights) name their shape
        return Work(2.0 * base * int(np.prod(w[1:])), nbytes, True)
    if op in CUBE_OPS and ins and ins[0] is not None and ins[0].is_static and ins[0].shape:
        a = ins[0].shape
        k = a[0] if (op == "Gemm" and attrs.get("transA", 0)) else a[-1]
        return Work(2.0 * out * int(k), nbytes, True)
    if op in ("MaxPool", "AveragePool", "LpPool"):
        return Work(float(out * int(np.prod(attrs.get("kernel_shape", [1])))), nbytes)
    if op in ("GlobalAveragePool", "GlobalMaxPool", "ReduceMean", "ReduceSum", "ReduceMax"):
        return Work(float(_elems(ins[0])), nbytes)
    if op == "LRN":
        return Work(float(out * (2 * int(attrs.get("size", 5)) + 4)), nbytes)
    return Work(float(out * PER_ELEMENT.get(op, 1)), nbytes)
