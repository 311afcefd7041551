"""Gather and scatter: Gather, GatherElements, GatherND, ScatterElements (and the old Scatter), ScatterND.

Indices are run-time data (any int dtype, negative values count from the end; out-of-range ones raise
IndexError). Each op first turns indices into flat element offsets of the data tensor, then moves
whole contiguous slices where it can (Gather and the ND ops copy `inner`/`slice` elements per index).

Scatter first resolves every update to a destination offset (into an int64 workspace), then applies
one loop per reduction mode: the mode is chosen outside the loops, never inside them. Duplicate
indices apply in index order, so reduction 'none' keeps the last update, as the reference does.

Blocks (AI cores): the gathers split their output (Gather by (outer, index) rows, GatherElements by
element, GatherND by index tuple), and an index out of range raises in whichever block meets it. The
scatters stay one block: two updates may hit one element (the order matters for 'none', and an
add/mul/max/min would race), and knowing they do not would take a pass over the indices. Measured, one
thread vs 2 blocks on 2 threads: Gather of 56 of 112 columns of 1x64x112x112 961 -> 527 us,
GatherElements of 256x1024 945 -> 560 us.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .blocks import G, blocks, row_range, tiled
from .registry import KernelContext, Launch, TensorSpec, normalize_axis, register
from .strided import DTYPES, contiguous_strides, copy_run, walk_ns
from .tiling import block_range

NONE, ADD, MUL, MAX, MIN = 0, 1, 2, 3, 4
# ns, one thread (blocks.MIN_BLOCK_NS): per index read, checked and wrapped (Gather of single elements:
# 2.2 ns each), per GatherElements element (offset walk, then a load: 4.8)
_NS_INDEX, _NS_ELEMENT = 2.0, 5.0
_REDUCTIONS = {"none": NONE, "add": ADD, "mul": MUL, "max": MAX, "min": MIN}


@njit(nogil=True, cache=True)
def _wrap(i, n):
    if i < 0:
        i += n
    if i < 0 or i >= n:
        raise IndexError("index out of range")
    return i


# -- Gather -----------------------------------------------------------------------------------------

@njit(nogil=True, cache=True)
def gather(x, idx, out, outer, n, inner, block_idx, block_dim):
    """out[o, t, :] = x[o, idx[t], :] over (outer, n, inner) / (outer, len(idx), inner) views. Blocks
    split the (outer, m) output rows as flat ranges (whole slices when inner > 1)."""
    m = idx.size
    if inner == 1:  # gathering single elements (the last axis): skip the per-element run setup
        lo, hi = row_range(outer * m, m, G, block_idx, block_dim)
        for o in range(lo // max(m, 1), (hi + m - 1) // max(m, 1)):
            row, src = out[o * m:(o + 1) * m], x[o * n:(o + 1) * n]
            for t in range(max(lo - o * m, 0), min(hi - o * m, m)):
                row[t] = src[_wrap(np.int64(idx[t]), n)]
        return
    u0, u1 = block_range(outer * m, 1, block_idx, block_dim)
    for u in range(u0, u1):
        o, t = u // m, u % m
        copy_run(x, (o * n + _wrap(np.int64(idx[t]), n)) * inner, out, u * inner, inner)


def _infer_gather(ctx: KernelContext) -> list[TensorSpec]:
    x, idx = ctx.inputs[0], ctx.inputs[1]
    ctx.require_dtype(0, DTYPES)
    axis = normalize_axis(ctx, ctx.attr("axis", 0), len(x.shape))
    return [TensorSpec(x.shape[:axis] + idx.shape + x.shape[axis + 1:], x.dtype)]


@register("Gather", infer=_infer_gather)
def _prepare_gather(ctx: KernelContext) -> Launch:
    shape = ctx.inputs[0].shape
    axis = normalize_axis(ctx, ctx.attr("axis", 0), len(shape))
    outer, inner = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
    slices = outer * ctx.inputs[1].size
    size = ctx.inputs[0].dtype.itemsize
    ns = _NS_INDEX + (walk_ns(inner, True, size) * inner if inner > 1 else 0)  # per (outer, index) slice
    return tiled(gather, (outer, shape[axis], inner), blocks(ctx, slices, ns))


# -- element-wise indices: GatherElements, ScatterElements ------------------------------------------

@njit(nogil=True, cache=True)
def _element_offsets(idx, offs, shape, ds, axis, lo, hi):
    """offs[t] = flat data offset of indices element t in [lo, hi): its own position with idx[t] along
    axis."""
    r = shape.shape[0]
    pos = np.zeros(r, np.int64)
    n, step = ds[r], ds[axis]
    base, t = 0, lo
    for d in range(r - 1, -1, -1):  # the position of element lo
        pos[d] = t % shape[d]
        t //= shape[d]
        if d != axis:
            base += pos[d] * ds[d]
    for t in range(lo, hi):
        offs[t] = base + _wrap(np.int64(idx[t]), n) * step
        d = r - 1
        while d >= 0:
            pos[d] += 1
            if d != axis:
                base += ds[d]
            if pos[d] < shape[d]:
                break
            if d != axis:
                base -= ds[d] * shape[d]
            pos[d] = 0
            d -= 1


@njit(nogil=True, cache=True)
def gather_elements(x, idx, out, offs, shape, ds, axis, block_idx, block_dim):
    """Blocks split the indices (= output) elements; offs is indexed by element, so each block fills
    its own part."""
    lo, hi = block_range(out.size, G, block_idx, block_dim)
    _element_offsets(idx, offs, shape, ds, axis, lo, hi)
    for t in range(lo, hi):
        out[t] = x[offs[t]]


@njit(nogil=True, cache=True)
def _scatter(out, upd, offs, slice_size, reduction):
    """Apply update slice t at out[offs[t]:] under one reduction."""
    m = slice_size
    if reduction == NONE:
        for t in range(offs.size):
            copy_run(upd, t * m, out, offs[t], m)
    elif reduction == ADD:
        for t in range(offs.size):
            for j in range(m):
                out[offs[t] + j] += upd[t * m + j]
    elif reduction == MUL:
        for t in range(offs.size):
            for j in range(m):
                out[offs[t] + j] *= upd[t * m + j]
    elif reduction == MAX:
        for t in range(offs.size):
            for j in range(m):
                out[offs[t] + j] = max(out[offs[t] + j], upd[t * m + j])
    else:
        for t in range(offs.size):
            for j in range(m):
                out[offs[t] + j] = min(out[offs[t] + j], upd[t * m + j])


@njit(nogil=True, cache=True)
def scatter_elements(data, idx, upd, out, offs, shape, ds, axis, reduction):
    copy_run(data, 0, out, 0, out.size)
    _element_offsets(idx, offs, shape, ds, axis, 0, idx.size)
    _scatter(out, upd, offs, 1, reduction)


def _element_args(ctx: KernelContext):
    """(shape, data strides + [axis dim], axis) of an element-indexed walk over the indices tensor."""
    x, idx = ctx.inputs[0], ctx.inputs[1]
    r = len(x.shape)
    axis = normalize_axis(ctx, ctx.attr("axis", 0), r)
    if len(idx.shape) != r or any(i > n for d, (i, n) in enumerate(zip(idx.shape, x.shape)) if d != axis):
        raise ctx.error(f"indices shape {idx.shape} does not fit data shape {x.shape} on axis {axis}")
    ds = contiguous_strides(x.shape) + [x.shape[axis]]
    shape = idx.shape or (1,)
    return np.array(shape, np.int64), np.array(ds or [1], np.int64), axis


def _infer_gather_elements(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, DTYPES)
    return [TensorSpec(ctx.inputs[1].shape, ctx.inputs[0].dtype)]


@register("GatherElements", infer=_infer_gather_elements)
def _prepare_gather_elements(ctx: KernelContext) -> Launch:
    offs = TensorSpec(ctx.inputs[1].shape, np.int64)
    nb = blocks(ctx, ctx.inputs[1].size, _NS_ELEMENT)
    return tiled(gather_elements, _element_args(ctx), nb, (offs,))


def _infer_scatter(ctx: KernelContext) -> list[TensorSpec]:
    x, idx, upd = ctx.inputs[:3]
    ctx.require_dtype(0, DTYPES)
    same_shape = ctx.op_type == "ScatterND" or upd.shape == idx.shape  # ScatterND checks in prepare
    if not same_shape or upd.dtype != x.dtype:
        raise ctx.error(f"updates {upd.shape} {upd.dtype} do not fit indices {idx.shape} / data {x.dtype}")
    return [x]


def _reduction(ctx: KernelContext) -> int:
    name = ctx.attr("reduction", "none")
    if name not in _REDUCTIONS:
        raise ctx.error(f"unsupported reduction {name!r}")
    return _REDUCTIONS[name]


@register(["ScatterElements", "Scatter"], infer=_infer_scatter, inplace=((0, 0),))
def _prepare_scatter_elements(ctx: KernelContext) -> Launch:
    offs = TensorSpec(ctx.inputs[1].shape, np.int64)
    return Launch(scatter_elements, _element_args(ctx) + (_reduction(ctx),), workspaces=(offs,))


# -- tuple indices: GatherND, ScatterND ------------------------------------------------------------

@njit(nogil=True, cache=True)
def _tuple_offsets(idx, offs, k, per_batch, batch_stride, dims, strides, lo, hi):
    """offs[t] = flat data offset of index tuple t in [lo, hi) (k ints), inside batch t // per_batch."""
    for t in range(lo, hi):
        off = (t // per_batch) * batch_stride
        for j in range(k):
            off += _wrap(np.int64(idx[t * k + j]), dims[j]) * strides[j]
        offs[t] = off


@njit(nogil=True, cache=True)
def gather_nd(x, idx, out, offs, k, per_batch, batch_stride, dims, strides, slice_size, block_idx, block_dim):
    """Blocks split the index tuples (offs is indexed by tuple)."""
    lo, hi = block_range(offs.size, G if slice_size < G else 1, block_idx, block_dim)
    _tuple_offsets(idx, offs, k, per_batch, batch_stride, dims, strides, lo, hi)
    m = slice_size
    for t in range(lo, hi):
        copy_run(x, offs[t], out, t * m, m)


@njit(nogil=True, cache=True)
def scatter_nd(data, idx, upd, out, offs, k, dims, strides, slice_size, reduction):
    copy_run(data, 0, out, 0, out.size)
    _tuple_offsets(idx, offs, k, max(offs.size, 1), 0, dims, strides, 0, offs.size)
    _scatter(out, upd, offs, slice_size, reduction)


def _nd_plan(ctx: KernelContext, b: int):
    """(k, tuple count, data dims and strides indexed by a tuple, slice size) for batch_dims b."""
    x, idx = ctx.inputs[0], ctx.inputs[1]
    k = idx.shape[-1] if idx.shape else 0
    if not idx.shape or k < 1 or b + k > len(x.shape) or x.shape[:b] != idx.shape[:b]:
        raise ctx.error(f"indices shape {idx.shape} does not fit data shape {x.shape} (batch_dims {b})")
    st = contiguous_strides(x.shape)
    dims, strides = x.shape[b:b + k], st[b:b + k]
    return k, math.prod(idx.shape[:-1]), np.array(dims, np.int64), np.array(strides, np.int64), \
        math.prod(x.shape[b + k:])


def _infer_gather_nd(ctx: KernelContext) -> list[TensorSpec]:
    x, idx = ctx.inputs[0], ctx.inputs[1]
    ctx.require_dtype(0, DTYPES)
    b = ctx.attr("batch_dims", 0)
    k = _nd_plan(ctx, b)[0]
    return [TensorSpec(idx.shape[:-1] + x.shape[b + k:], x.dtype)]


@register("GatherND", infer=_infer_gather_nd)
def _prepare_gather_nd(ctx: KernelContext) -> Launch:
    x = ctx.inputs[0]
    b = ctx.attr("batch_dims", 0)
    k, n, dims, strides, slice_size = _nd_plan(ctx, b)
    per_batch = max(n // max(math.prod(x.shape[:b]), 1), 1)
    batch_stride = math.prod(x.shape[b:])
    nb = blocks(ctx, n, _NS_INDEX * k + walk_ns(slice_size, True, x.dtype.itemsize) * slice_size)
    return tiled(gather_nd, (k, per_batch, batch_stride, dims, strides, slice_size), nb,
                 (TensorSpec((n,), np.int64),))


@register("ScatterND", infer=_infer_scatter, inplace=((0, 0),))
def _prepare_scatter_nd(ctx: KernelContext) -> Launch:
    idx, upd = ctx.inputs[1], ctx.inputs[2]
    k, n, dims, strides, slice_size = _nd_plan(ctx, 0)
    if upd.size != n * slice_size:
        raise ctx.error(f"updates shape {upd.shape} does not fit indices {idx.shape}")
    return Launch(scatter_nd, (k, dims, strides, slice_size, _reduction(ctx)),
                  workspaces=(TensorSpec((n,), np.int64),))
