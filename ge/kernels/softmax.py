"""Softmax, LogSoftmax and Hardmax: one kernel over x viewed as (outer, n, inner), normalizing along n.

Opset 13 made `axis` (default -1) a single axis: outer = prod(shape[:axis]), inner = prod(shape[axis+1:]).
Before, the input was coerced to 2-D at `axis` (default 1): outer = prod(shape[:axis]), n = the rest,
inner = 1. With inner == 1 each row is contiguous and is handled alone (max, exp and sum, scale). With
inner > 1 (e.g. softmax over the channels of NCHW) the kernel keeps running max and sum rows of `inner`
values in a workspace, so every loop walks contiguous memory. Rows subtract their max before exp, so
large inputs do not overflow; Hardmax marks the first maximum, as numpy's argmax does.

Speed (float32): exp is fastmath.exp (vectorizable; numba's np.exp is a scalar call), the row max is
reduce's 16-lane max, and loops index with unsigned ints, since numba's wraparound of negative signed
indices stops LLVM vectorizing. Softmax over the last axis of 12x128x128: 1.47 ms -> 0.14 ms
(onnxruntime, 1 thread: 0.045 ms); over the channels of 1x21x128x128: 0.16 ms (onnxruntime 2.4 ms).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .fastmath import exp as fast_exp
from .reduce import U, extreme_run
from .registry import KernelContext, Launch, TensorSpec, normalize_axis, register, same_as_input

SOFTMAX, LOGSOFTMAX, HARDMAX = range(3)
_MODES = {"Softmax": SOFTMAX, "LogSoftmax": LOGSOFTMAX, "Hardmax": HARDMAX}


@njit(nogil=True, cache=True, fastmath={"reassoc"})
def _sum(y, b, n):
    """sum(y[b:b + n]); reassociation lets LLVM vectorize it (kept out of the exp loops, whose range
    reduction must not be reassociated)."""
    s = 0.0
    for k in range(n):
        s += y[b + k]
    return s


@njit(nogil=True, cache=True)
def _rows(x, y, outer, n, mode):
    """inner == 1: each row of n values is contiguous."""
    lanes = np.empty(16, x.dtype)
    un = U(n)
    for o in range(outer):
        b = U(o * n)
        m = extreme_run(x, b, un, x[b], lanes, False)
        if mode == HARDMAX:
            first = 0
            while x[b + U(first)] != m and first < n - 1:  # the first maximum (NaN rows: index 0)
                first += 1
            for k in range(un):
                y[b + k] = 0
            y[b + U(first)] = 1
            continue
        for k in range(un):
            y[b + k] = fast_exp(x[b + k] - m)
        s = _sum(y, b, un)
        if mode == SOFTMAX:
            r = 1.0 / s
            for k in range(un):
                y[b + k] *= r
        else:
            ls = m + np.log(s)
            for k in range(un):
                y[b + k] = x[b + k] - ls


@njit(nogil=True, cache=True)
def softmax(x, y, ws, outer, n, inner, mode):
    """The softmax family along the middle axis of (outer, n, inner); ws holds 2 * inner values."""
    if n == 0:
        return
    if inner == 1:
        _rows(x, y, outer, n, mode)
        return
    ui = U(inner)
    m, s = ws[:inner], ws[inner:2 * inner]  # running max and sum of each column
    for o in range(outer):
        b = U(o * n * inner)
        for j in range(ui):
            m[j] = x[b + j]
        for k in range(1, n):
            q = b + U(k * inner)
            for j in range(ui):
                v = x[q + j]
                m[j] = v if v > m[j] else m[j]
        for j in range(ui):
            s[j] = 0
        if mode == HARDMAX:  # s marks the columns whose first maximum is already set
            for k in range(n):
                q = b + U(k * inner)
                for j in range(ui):
                    hit = x[q + j] == m[j] and s[j] == 0
                    y[q + j] = 1 if hit else 0
                    s[j] = 1 if hit else s[j]
            continue
        for k in range(n):
            q = b + U(k * inner)
            for j in range(ui):
                e = fast_exp(x[q + j] - m[j])
                y[q + j] = e
                s[j] += e
        if mode == SOFTMAX:
            for j in range(ui):
                s[j] = 1 / s[j]
            for k in range(n):
                q = b + U(k * inner)
                for j in range(ui):
                    y[q + j] *= s[j]
        else:
            for j in range(ui):
                s[j] = m[j] + np.log(s[j])
            for k in range(n):
                q = b + U(k * inner)
                for j in range(ui):
                    y[q + j] = x[q + j] - s[j]


def _infer(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, (np.float32, np.float64))
    return same_as_input()(ctx)


def _prepare(coerce_2d: bool):
    def prepare(ctx: KernelContext) -> Launch:
        shape = ctx.inputs[0].shape
        axis = normalize_axis(ctx, ctx.attr("axis", 1 if coerce_2d else -1), len(shape))
        outer = int(np.prod(shape[:axis], dtype=np.int64))
        if coerce_2d:
            n, inner = int(np.prod(shape[axis:], dtype=np.int64)), 1
        else:
            n, inner = (shape[axis] if shape else 1), int(np.prod(shape[axis + 1:], dtype=np.int64))
        ws = (TensorSpec((2 * inner if inner > 1 else 1,), ctx.inputs[0].dtype),)
        return Launch(softmax, (outer, n, inner, _MODES[ctx.op_type]), ws)
    return prepare


register(list(_MODES), infer=_infer, until=12)(_prepare(True))
register(list(_MODES), infer=_infer, since=13)(_prepare(False))
