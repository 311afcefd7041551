"""Ops that walk lines along one axis: TopK, CumSum and CumProd.

The tensor is seen as (outer, n, inner); a line is n elements `inner` apart.

TopK keeps a bounded heap of the k best indices of each line (a workspace of k int64), its root
the worst kept element, so one pass costs O(n log k); popping the heap then writes the line's
results best first. Order is (value, index): equal values keep the lower index first, and NaN ranks
above every number, as in the reference's lexsort. The output is always sorted (allowed for sorted=0).

CumSum and CumProd run the scan a whole inner row at a time, so the innermost loop is a plain vector
add (or multiply); the op is picked outside the row loops.

Blocks (AI cores): TopK splits its outer * inner lines (a k-slot heap per block); CumSum splits the
(outer, inner) columns as flat ranges (blocks.row_range), so a column's scan stays in one block.
Measured, one thread vs 2 blocks on 2 threads: TopK k=10 of 1000x1000 4.4 -> 2.7 ms; CumSum of 1024x1024
over axis 0 does not gain here (303 -> 392 us: each block still streams every row's cache lines).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .blocks import G, blocks, own, per_block, row_range, tiled
from .registry import KernelContext, Launch, TensorSpec, normalize_axis, register
from .specialize import by_type
from .strided import DTYPES, copy_run, int_values
from .tiling import block_range

# ns, one thread (blocks.MIN_BLOCK_NS): per element scanned and log2(k) heap level, per CumSum element
_NS_TOPK, _NS_CUMSUM = 1.9, 0.2


@njit(nogil=True, cache=True)
def _before(va, ia, vb, ib, largest):
    """Does (value va, index ia) rank before (vb, ib)?"""
    na, nb = va != va, vb != vb
    if largest:
        if va > vb or (na and not nb):
            return True
        if vb > va or (nb and not na):
            return False
    else:
        if va < vb or (nb and not na):
            return True
        if vb < va or (na and not nb):
            return False
    return ia < ib


@by_type
@njit(nogil=True, cache=True)
def _sift_down(x, heap, size, i, base, inner, largest):
    """Restore the heap below slot i: every parent ranks after its children (root = worst kept)."""
    while True:
        c = 2 * i + 1
        if c >= size:
            return
        if c + 1 < size and _before(x[base + heap[c] * inner], heap[c],
                                    x[base + heap[c + 1] * inner], heap[c + 1], largest):
            c += 1  # the worse child
        if not _before(x[base + heap[i] * inner], heap[i], x[base + heap[c] * inner], heap[c], largest):
            return
        heap[i], heap[c] = heap[c], heap[i]
        i = c


@njit(nogil=True, cache=True)
def topk(x, values, indices, heap, outer, n, inner, k, largest, block_idx, block_dim):
    """Blocks split the outer * inner lines; heap holds k slots per block."""
    heap = own(heap, k, block_idx, block_dim)
    l0, l1 = block_range(outer * inner, 1, block_idx, block_dim)
    for line in range(l0, l1):
        o, q = line // inner, line % inner
        base = o * n * inner + q
        for i in range(k):  # the first k, heapified
            heap[i] = i
        for i in range(k // 2 - 1, -1, -1):
            _sift_down(x, heap, k, i, base, inner, largest)
        for i in range(k, n):  # each later element replaces the root if it ranks before it
            if k and _before(x[base + i * inner], i, x[base + heap[0] * inner], heap[0], largest):
                heap[0] = i
                _sift_down(x, heap, k, 0, base, inner, largest)
        obase = o * k * inner + q
        for size in range(k, 0, -1):  # pop the worst into the last free slot
            j = heap[0]
            values[obase + (size - 1) * inner] = x[base + j * inner]
            indices[obase + (size - 1) * inner] = j
            heap[0] = heap[size - 1]
            _sift_down(x, heap, size - 1, 0, base, inner, largest)


def _topk_plan(ctx: KernelContext):
    x = ctx.inputs[0]
    axis = normalize_axis(ctx, ctx.attr("axis", -1), len(x.shape))
    k = ctx.attr("k") if ctx.opset < 10 else int_values(ctx, 1)[0]
    if not 0 <= k <= x.shape[axis]:
        raise ctx.error(f"k={k} is out of range for axis {axis} of shape {x.shape}")
    return axis, int(k)


def _infer_topk(ctx: KernelContext) -> list[TensorSpec]:
    x = ctx.inputs[0]
    ctx.require_dtype(0, DTYPES)
    axis, k = _topk_plan(ctx)
    shape = x.shape[:axis] + (k,) + x.shape[axis + 1:]
    return [TensorSpec(shape, x.dtype), TensorSpec(shape, np.int64)]


@register("TopK", infer=_infer_topk, value_inputs=(1,))
def _prepare_topk(ctx: KernelContext) -> Launch:
    shape = ctx.inputs[0].shape
    axis, k = _topk_plan(ctx)
    args = (math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:]), k,
            int(bool(ctx.attr("largest", 1))))
    lines = args[0] * args[2]
    nb = blocks(ctx, lines, _NS_TOPK * args[1] * max(math.log2(max(k, 2)), 1))
    return tiled(topk, args, nb, (per_block(k, np.int64, nb),), inputs=(0,))


@njit(nogil=True, cache=True)
def cumsum(x, out, outer, n, inner, exclusive, reverse, prod, block_idx, block_dim):
    """Running sums (prod: products). Blocks split the (outer, inner) columns as flat ranges
    (blocks.row_range): a column's scan stays in one block."""
    lo, hi = row_range(outer * inner, inner, G, block_idx, block_dim)
    for o in range(lo // max(inner, 1), (hi + inner - 1) // max(inner, 1)):
        j0, j1 = max(lo - o * inner, 0), min(hi - o * inner, inner)
        w = j1 - j0
        for s in range(n):
            j = n - 1 - s if reverse else s
            d = (o * n + j) * inner + j0
            if s == 0:
                if exclusive:
                    out[d:d + w] = 1 if prod else 0
                else:
                    copy_run(x, d, out, d, w)
                continue
            p = d + inner if reverse else d - inner  # the previous row in scan order
            src = p if exclusive else d
            row, prev, add = out[d:d + w], out[p:p + w], x[src:src + w]  # views vectorize
            if prod:
                for i in range(w):
                    row[i] = prev[i] * add[i]
            else:
                for i in range(w):
                    row[i] = prev[i] + add[i]


def _infer_cumsum(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, DTYPES)
    return [ctx.inputs[0]]


@register("CumProd", infer=_infer_cumsum, value_inputs=(1,), since=26)
@register("CumSum", infer=_infer_cumsum, value_inputs=(1,))
def _prepare_cumsum(ctx: KernelContext) -> Launch:
    shape = ctx.inputs[0].shape
    axis = normalize_axis(ctx, int_values(ctx, 1)[0], len(shape))
    args = (math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:]),
            int(bool(ctx.attr("exclusive", 0))), int(bool(ctx.attr("reverse", 0))), int(ctx.op_type == "CumProd"))
    nb = blocks(ctx, args[0] * args[2], _NS_CUMSUM * args[1])
    return tiled(cumsum, args, nb, inputs=(0,))
