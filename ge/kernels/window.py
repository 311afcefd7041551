"""Window functions of STFT: HannWindow, HammingWindow, BlackmanWindow (opset 17).

All three are w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N = size (periodic, the default) or
size - 1 (symmetric), computed in float64 and cast on store to output_datatype. The size is the value of
input 0: a constant folds at compile time, a fed one makes the node dynamic (runtime_v2).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..ir.dtypes import from_onnx
from .registry import KernelContext, Launch, TensorSpec, register
from .strided import DTYPES, int_values

_COEFFICIENTS = {"HannWindow": (0.5, 0.5, 0.0), "HammingWindow": (25 / 46, 21 / 46, 0.0),
                 "BlackmanWindow": (0.42, 0.5, 0.08)}


@njit(nogil=True, cache=True)
def window(size, out, a0, a1, a2, period):
    step = 2.0 * math.pi / period if period else 0.0
    for i in range(out.size):
        out[i] = a0 - a1 * math.cos(step * i) + a2 * math.cos(2.0 * step * i)


def _infer(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, (np.int32, np.int64))
    size = int_values(ctx, 0)
    if len(size) != 1 or size[0] < 0:
        raise ctx.error(f"size must be one non-negative integer, got {size}")
    dtype = from_onnx(int(ctx.attr("output_datatype", 1)), f"output_datatype of {ctx.op_type} '{ctx.name}'")
    if np.dtype(dtype) not in DTYPES:
        raise ctx.error(f"output_datatype {np.dtype(dtype)} is not supported")
    return [TensorSpec((size[0],), dtype)]


def _prepare(ctx: KernelContext) -> Launch:
    n = ctx.outputs[0].shape[0]
    period = n if ctx.attr("periodic", 1) else n - 1
    return Launch(window, (*_COEFFICIENTS[ctx.op_type], float(period)))


for _op in _COEFFICIENTS:
    register(_op, infer=_infer, value_inputs=(0,), since=17)(_prepare)
