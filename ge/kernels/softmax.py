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
Rows (AVX2, AMD EPYC, 2026-12-06, one node, one thread, alternating with onnxruntime): the max and the sum in
explicit vectors, exp in whole chunks of 16: ViT-B's 12x197x197 0.981 -> 0.811 ms (onnxruntime 0.295),
12x197x256 1.126 -> 0.746 (0.317). Then (Zen 5, the kernel alone, one thread) the row's max and sum across
the lanes as shuffle trees, not chains of 16, and the scale in the row's dtype (a float64 1/sum made the
scaling loop convert every element): 12x197x197 0.266 -> 0.226 ms (bench/nodes_vs_ort.py, the node: ge /
onnxruntime 2.65 -> 1.98).

Blocks (AI cores): a row is one reduction, so blocks never cut one. inner == 1: blocks take whole rows.
inner > 1: the columns are independent, so blocks take flat ranges of the (outer, inner) columns
(blocks.row_range, G-column pieces), each with its own 2 * inner workspace slice. Measured, float32,
one thread vs 2 blocks on 2 threads: 12x128x128 over the last axis 315 -> 205 us, 1x21x128x128 over
the channels 406 -> 268 us.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .fastmath import exp as fast_exp
from .simd import vadd, vlanes, vload, vload_in, vmax, vmax_tree, vsplat, vsum_tree, vzero
from .blocks import G, blocks, own, per_block, row_range, tiled
from .reduce import U
from .registry import KernelContext, Launch, TensorSpec, normalize_axis, register, same_as_input
from .tiling import block_range

SOFTMAX, LOGSOFTMAX, HARDMAX = range(3)
# ns per element, one thread, float32, best of 40: rows (3x128x128 over the last axis: Softmax and LogSoftmax
# 1.6, Hardmax 0.8) and columns (1x21x32x128 over axis 1: 1.1)
_NS_ROWS, _NS_COLUMNS = 1.6, 1.2
_MODES = {"Softmax": SOFTMAX, "LogSoftmax": LOGSOFTMAX, "Hardmax": HARDMAX}


@njit(nogil=True, cache=True, inline="always")
def _fold(a, v, is_max):
    return vmax(a, v) if is_max else vadd(a, v)


@njit(nogil=True, cache=True, inline="always")
def _row_fold(x, b, n, is_max):
    """max (is_max, a literal) or sum of x[b:b + n] in two vectors of lanes, then across the lanes as a tree
    (simd.vmax_tree, vsum_tree). The max: a NaN never replaces a value (as reduce.extreme_run), the tail
    filled with the first value. Before, the max kept extreme_run's 16 lanes in memory and the sum was a
    float64 scalar loop LLVM left unvectorized (alone: 0.228 -> 0.047 ms over 12 x 197 x 197); with both
    here the softmax of those rows took 0.86 -> 0.73 ms; the lanes then went in order, a chain of 16 adds
    (or compares) a row (the module doc has the trees' gain)."""
    b, n = np.int64(b), np.int64(n)
    L = vlanes(x)
    a0 = a1 = vsplat(x, x[b]) if is_max else vzero(x)
    k = 0
    while k + 2 * L <= n:
        a0, a1 = _fold(a0, vload(x, b + k), is_max), _fold(a1, vload(x, b + k + L), is_max)
        k += 2 * L
    if k + L <= n:
        a0 = _fold(a0, vload(x, b + k), is_max)
        k += L
    if k < n:
        a1 = _fold(a1, vload_in(x, b + k, 0, n - k, x[b] if is_max else 0.0), is_max)
    return vmax_tree(vmax(a0, a1)) if is_max else vsum_tree(vadd(a0, a1))


@njit(nogil=True, cache=True)
def _rows(x, y, r0, r1, n, mode):
    """inner == 1: each row of n values is contiguous; rows r0 .. r1 - 1."""
    un = U(n)
    for o in range(r0, r1):
        b = U(o * n)
        m = _row_fold(x, b, un, True)
        if mode == HARDMAX:
            first = 0
            while x[b + U(first)] != m and first < n - 1:  # the first maximum (NaN rows: index 0)
                first += 1
            for k in range(un):
                y[b + k] = 0
            y[b + U(first)] = 1
            continue
        # exp in whole chunks of 16 (no scalar tail, 5 of ViT's 197), the last running on into the next rows'
        # y, which those rows overwrite; the block's last row exactly
        whole = (n + 15) // 16 * 16 if (o + 1) * n + 15 < r1 * n else 0
        for j in range(U(0), U(whole), U(16)):
            for k in range(U(16)):
                y[b + j + k] = fast_exp(x[b + j + k] - m)
        for k in range(U(whole), un):
            y[b + k] = fast_exp(x[b + k] - m)
        s = _row_fold(y, b, un, False)
        if mode == SOFTMAX:
            r = y.dtype.type(1.0) / s  # in y's dtype: a float64 r made the scaling loop convert every element
            for k in range(un):
                y[b + k] *= r
        else:
            ls = m + np.log(s)
            for k in range(un):
                y[b + k] = x[b + k] - ls


@njit(nogil=True, cache=True)
def _columns(x, y, m, s, b, n, inner, j0, j1, mode):
    """inner > 1: columns j0 .. j1 - 1 of the (n, inner) slab at x[b:], with running max and sum rows
    m and s (inner values each, used at the same columns)."""
    ui, u0, u1 = U(inner), U(j0), U(j1)
    for j in range(u0, u1):
        m[j] = x[b + j]
    for k in range(1, n):
        q = b + U(k) * ui
        for j in range(u0, u1):
            v = x[q + j]
            m[j] = v if v > m[j] else m[j]
    for j in range(u0, u1):
        s[j] = 0
    if mode == HARDMAX:  # s marks the columns whose first maximum is already set
        for k in range(n):
            q = b + U(k) * ui
            for j in range(u0, u1):
                hit = x[q + j] == m[j] and s[j] == 0
                y[q + j] = 1 if hit else 0
                s[j] = 1 if hit else s[j]
        return
    for k in range(n):
        q = b + U(k) * ui
        for j in range(u0, u1):
            e = fast_exp(x[q + j] - m[j])
            y[q + j] = e
            s[j] += e
    if mode == SOFTMAX:
        for j in range(u0, u1):
            s[j] = 1 / s[j]
        for k in range(n):
            q = b + U(k) * ui
            for j in range(u0, u1):
                y[q + j] *= s[j]
    else:
        for j in range(u0, u1):
            s[j] = m[j] + np.log(s[j])
        for k in range(n):
            q = b + U(k) * ui
            for j in range(u0, u1):
                y[q + j] = x[q + j] - s[j]


@njit(nogil=True, cache=True)
def softmax(x, y, ws, outer, n, inner, mode, block_idx, block_dim):
    """The softmax family along the middle axis of (outer, n, inner). Blocks split whole rows (inner == 1)
    or the (outer, inner) columns (blocks.row_range); ws holds 2 * inner values per block."""
    if n == 0:
        return
    if inner == 1:
        r0, r1 = block_range(outer, 1, block_idx, block_dim)
        _rows(x, y, r0, r1, n, mode)
        return
    lo, hi = row_range(outer * inner, inner, G, block_idx, block_dim)
    w = own(ws, 2 * inner, block_idx, block_dim)
    m, s = w[:inner], w[inner:]  # running max and sum of each column
    for o in range(lo // inner, (hi + inner - 1) // inner):
        j0, j1 = max(lo - o * inner, 0), min(hi - o * inner, inner)
        _columns(x, y, m, s, U(o * n * inner), n, inner, j0, j1, mode)


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
        if inner == 1:  # whole rows
            k = blocks(ctx, outer, _NS_ROWS * n)
        else:  # columns of the (outer, inner) view, n deep
            k = blocks(ctx, outer * inner, _NS_COLUMNS * n)
        ws = (per_block(2 * inner if inner > 1 else 1, ctx.inputs[0].dtype, k),)
        return tiled(softmax, (outer, n, inner, _MODES[ctx.op_type]), k, ws)
    return prepare


register(list(_MODES), infer=_infer, until=12)(_prepare(True))
register(list(_MODES), infer=_infer, since=13)(_prepare(False))
