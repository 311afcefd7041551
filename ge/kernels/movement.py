"""Data movement: Transpose, Concat, Split, Slice, Expand, Tile, DepthToSpace, SpaceToDepth, Trilu.

Almost everything here is a plan for strided.strided_copy, computed once in prepare: Transpose
reads through permuted strides (or, when it swaps two groups of axes, the register blocks of
transpose2d.py), Slice through start offsets and step strides (negative steps walk
backwards), Expand and Tile through stride-0 dims, DepthToSpace/SpaceToDepth are a 6-d transpose.
So all of them share one compiled loop per dtype.

Concat and Split view every tensor as (outer, axis*inner) rows and copy row pieces; their tensor
count is variable, so they take star-args (one small specialization per dtype and arity), the block
arguments last.

The rest of the family lives in pad.py (Pad), indexing.py (gather/scatter) and axis_scan.py (TopK,
CumSum); they are imported at the bottom so the family registers with this module.

Blocks (AI cores): strided_copy splits its walk (strided.py); Concat splits its output and Split its
input into flat ranges ending on multiples of blocks.G, each block copying the row pieces inside its
range; Trilu splits the matrix rows. Copies are exact, so only the costs matter: runs contiguous on both
sides are memory bound (~0.17 ns per float32 element), strided walks ~1 ns per element. Measured, one
thread vs 2 blocks on 2 threads (medians of 31): Transpose 1x64x112x112 to NHWC 794 -> 471 us, Concat
of two 1x64x56x56 on the channels 112 -> 75 us, Expand 64x1x1 to 1x64x112x112 1232 -> 650 us.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .arity import ARITY, padded_inputs
from .blocks import G, blocks, tiled
from .registry import KernelContext, Launch, TensorSpec, broadcast_shapes, normalize_axis, register
from .strided import (DTYPES, contiguous_strides, copy_run, dense_copy_args, int_values, permuted, strided_launch,
                      walk_ns)
from .tiling import block_range
from .transpose2d import NS_PER_ELEMENT, transpose2d


# -- Transpose --------------------------------------------------------------------------------------

def _perm(ctx: KernelContext) -> list[int]:
    r = len(ctx.inputs[0].shape)
    perm = ctx.attr("perm")
    perm = list(range(r - 1, -1, -1)) if perm is None else [normalize_axis(ctx, p, r) for p in perm]
    if sorted(perm) != list(range(r)):
        raise ctx.error(f"perm {ctx.attr('perm')} is not a permutation of {r} axes")
    return perm


def _infer_transpose(ctx: KernelContext) -> list[TensorSpec]:
    x = ctx.inputs[0]
    ctx.require_dtype(0, DTYPES)
    return [TensorSpec([x.shape[p] for p in _perm(ctx)], x.dtype)]


def collapse(shape, perm) -> tuple[list[int], list[int]]:
    """(shape, perm) of the same transpose with size-1 axes dropped and input axes that stay neighbours
    in the output merged."""
    keep = [a for a in range(len(shape)) if shape[a] != 1]
    rank = {a: i for i, a in enumerate(keep)}
    perm, shape = [rank[p] for p in perm if p in rank], [shape[a] for a in keep]
    groups = []  # runs of consecutive input axes, in output order
    for p in perm:
        if groups and groups[-1][-1] + 1 == p:
            groups[-1].append(p)
        else:
            groups.append([p])
    order = sorted(range(len(groups)), key=lambda g: groups[g][0])
    new_shape = [int(np.prod([shape[a] for a in groups[g]])) for g in order]
    return new_shape, [order.index(g) for g in range(len(groups))]


@register("Transpose", infer=_infer_transpose)
def _prepare_transpose(ctx: KernelContext) -> Launch:
    x = ctx.inputs[0]
    shape, perm = collapse(x.shape, _perm(ctx))
    k = len(shape) - 2
    if k >= 0 and perm == list(range(k)) + [k + 1, k] and x.dtype in (np.float32, np.float64) and min(shape[-2:]) >= 16:
        batch, R, C = int(np.prod(shape[:k])), shape[k], shape[k + 1]  # a batched 2-D transpose
        return tiled(transpose2d, (batch, R, C), blocks(ctx, batch * -(-R // 16), 16 * C * NS_PER_ELEMENT))
    return strided_launch(ctx, dense_copy_args(*permuted(x.shape, _perm(ctx))))


# -- Concat / Split ---------------------------------------------------------------------------------

@njit(nogil=True, cache=True, inline="always")
def _piece(o, row, off, w, lo, hi):
    """The part [p0, p1) of [lo, hi) that piece (o, off, w) of a concatenated row covers (p0 >= p1: none)."""
    p = o * row + off
    return max(p, lo), min(p + w, hi)


@njit(nogil=True, cache=True)
def concat(*a):
    """a = (x_0 .. x_n-1, out, row, widths, block_idx, block_dim): out row o = x_0 row o ++ x_1 row o
    ++ ...; a block copies the pieces inside its flat range of out (G-element ends)."""
    xs, out, row, widths = a[:-5], a[-5], a[-4], a[-3]
    lo, hi = block_range(out.size, G, a[-2], a[-1])
    if lo >= hi:
        return
    off = 0
    for i in range(len(xs)):
        x, w = xs[i], widths[i]
        for o in range(lo // row, (hi - 1) // row + 1):
            p0, p1 = _piece(o, row, off, w, lo, hi)
            if p0 < p1:
                copy_run(x, o * w + p0 - o * row - off, out, p0, p1 - p0)
        off += w


@njit(nogil=True, cache=True)
def split(x, *a):
    """a = (y_0 .. y_n-1, row, widths, block_idx, block_dim): the inverse of concat; a block moves the
    pieces inside its flat range of x."""
    ys, row, widths = a[:-4], a[-4], a[-3]
    lo, hi = block_range(x.size, G, a[-2], a[-1])
    if lo >= hi:
        return
    off = 0
    for i in range(len(ys)):
        y, w = ys[i], widths[i]
        for o in range(lo // row, (hi - 1) // row + 1):
            p0, p1 = _piece(o, row, off, w, lo, hi)
            if p0 < p1:
                copy_run(x, p0, y, o * w + p0 - o * row - off, p1 - p0)
        off += w


def _infer_concat(ctx: KernelContext) -> list[TensorSpec]:
    xs = ctx.inputs
    ctx.require_dtype(0, DTYPES)
    r = len(xs[0].shape)
    axis = normalize_axis(ctx, ctx.attr("axis", 1), r)
    for x in xs[1:]:
        if x.dtype != xs[0].dtype or len(x.shape) != r or any(
                a != b for d, (a, b) in enumerate(zip(x.shape, xs[0].shape)) if d != axis):
            raise ctx.error(f"inputs {[x.shape for x in xs]} ({xs[0].dtype}) do not fit along axis {axis}")
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    return [TensorSpec(shape, xs[0].dtype)]


@register("Concat", infer=_infer_concat)
def _prepare_concat(ctx: KernelContext) -> Launch:
    shape = ctx.outputs[0].shape
    axis = normalize_axis(ctx, ctx.attr("axis", 1), len(shape))
    inner = math.prod(shape[axis + 1:])
    widths = np.array([x.shape[axis] * inner for x in ctx.inputs], np.int64)
    nb = blocks(ctx, math.prod(shape), walk_ns(int(widths.mean()), True, ctx.outputs[0].dtype.itemsize))
    picked = padded_inputs(len(ctx.inputs))  # fillers get width 0: one compile per dtype (arity.py)
    if picked is not None:
        widths = np.concatenate([widths, np.zeros(ARITY - len(ctx.inputs), np.int64)])
    return tiled(concat, (shape[axis] * inner, widths), nb, inputs=picked)


def _split_parts(ctx: KernelContext, n: int) -> list[int]:
    parts = ctx.attr("split")
    if ctx.has(1):
        parts = int_values(ctx, 1)
    k = ctx.n_outputs
    if parts is None and ctx.attr("num_outputs") is not None:
        k = ctx.attr("num_outputs")
        chunk = -(-n // k)
        parts = [chunk] * (k - 1) + [n - chunk * (k - 1)]
    elif parts is None:
        if n % k:
            raise ctx.error(f"cannot split a dim of {n} into {k} equal parts")
        parts = [n // k] * k
    if len(parts) != ctx.n_outputs or sum(parts) != n or min(parts) < 0:
        raise ctx.error(f"split {list(parts)} does not cut a dim of {n} into {ctx.n_outputs} outputs")
    return [int(p) for p in parts]


def _infer_split(ctx: KernelContext) -> list[TensorSpec]:
    x = ctx.inputs[0]
    ctx.require_dtype(0, DTYPES)
    axis = normalize_axis(ctx, ctx.attr("axis", 0), len(x.shape))
    outs = []
    for p in _split_parts(ctx, x.shape[axis]):
        shape = list(x.shape)
        shape[axis] = p
        outs.append(TensorSpec(shape, x.dtype))
    return outs


@register("Split", infer=_infer_split, value_inputs=(1,))
def _prepare_split(ctx: KernelContext) -> Launch:
    shape = ctx.inputs[0].shape
    axis = normalize_axis(ctx, ctx.attr("axis", 0), len(shape))
    inner = math.prod(shape[axis + 1:])
    widths = np.array([o.shape[axis] * inner for o in ctx.outputs], np.int64)
    nb = blocks(ctx, math.prod(shape), walk_ns(int(widths.mean()), True, ctx.inputs[0].dtype.itemsize))
    return tiled(split, (shape[axis] * inner, widths), nb, inputs=(0,))


# -- Slice ------------------------------------------------------------------------------------------

def _slice_plan(ctx: KernelContext):
    """(output shape, first index per dim, step per dim), ONNX clamping rules."""
    shape = ctx.inputs[0].shape
    r = len(shape)
    if ctx.opset < 10:
        starts, ends = ctx.attr("starts"), ctx.attr("ends")
        axes, steps = ctx.attr("axes"), None
    else:
        starts, ends = int_values(ctx, 1), int_values(ctx, 2)
        axes = int_values(ctx, 3) if ctx.has(3) else None
        steps = int_values(ctx, 4) if ctx.has(4) else None
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.error("starts, ends, axes and steps differ in length")
    out, first, step = list(shape), [0] * r, [1] * r
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = normalize_axis(ctx, a, r)
        n, s, e, st = shape[a], int(s), int(e), int(st)
        if st == 0:
            raise ctx.error("slice step cannot be 0")
        s, e = s + n if s < 0 else s, e + n if e < 0 else e
        if st > 0:
            s, e = min(max(s, 0), n), min(max(e, 0), n)
        else:
            s, e = min(max(s, 0), n - 1), min(max(e, -1), n - 1)
        out[a], first[a], step[a] = max(0, -((s - e) // st)), s, st  # ceil((e - s) / st)
    return out, first, step


def _infer_slice(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, DTYPES)
    return [TensorSpec(_slice_plan(ctx)[0], ctx.inputs[0].dtype)]


@register("Slice", infer=_infer_slice, value_inputs=(1, 2, 3, 4))
def _prepare_slice(ctx: KernelContext) -> Launch:
    out, first, step = _slice_plan(ctx)
    st = contiguous_strides(ctx.inputs[0].shape)
    off = sum(f * s for f, s in zip(first, st)) if math.prod(out) else 0
    return strided_launch(ctx, dense_copy_args(out, [a * b for a, b in zip(step, st)], off), inputs=(0,))


# -- Expand / Tile ----------------------------------------------------------------------------------

def _broadcast_strides(in_shape, out_shape) -> list[int]:
    """Strides reading in_shape (right-aligned) as if it had out_shape: 0 along broadcast dims."""
    lead = len(out_shape) - len(in_shape)
    st = [0] * lead + contiguous_strides(in_shape)
    return [0 if d < lead or in_shape[d - lead] == 1 else st[d] for d in range(len(out_shape))]


def _infer_expand(ctx: KernelContext) -> list[TensorSpec]:
    x = ctx.inputs[0]
    ctx.require_dtype(0, DTYPES)
    return [TensorSpec(broadcast_shapes(ctx, x.shape, tuple(int_values(ctx, 1))), x.dtype)]


@register("Expand", infer=_infer_expand, value_inputs=(1,))
def _prepare_expand(ctx: KernelContext) -> Launch:
    out = ctx.outputs[0].shape
    return strided_launch(ctx, dense_copy_args(out, _broadcast_strides(ctx.inputs[0].shape, out)), inputs=(0,))


def _repeats(ctx: KernelContext) -> list[int]:
    reps = int_values(ctx, 1)
    if len(reps) != len(ctx.inputs[0].shape) or min(reps, default=0) < 0:
        raise ctx.error(f"repeats {reps} do not fit input shape {ctx.inputs[0].shape}")
    return reps


def _infer_tile(ctx: KernelContext) -> list[TensorSpec]:
    x = ctx.inputs[0]
    ctx.require_dtype(0, DTYPES)
    return [TensorSpec([n * r for n, r in zip(x.shape, _repeats(ctx))], x.dtype)]


@register("Tile", infer=_infer_tile, value_inputs=(1,))
def _prepare_tile(ctx: KernelContext) -> Launch:
    shape = ctx.inputs[0].shape
    st = contiguous_strides(shape)
    walk, ss = [], []  # the output seen as (r0, n0, r1, n1, ...): repeat dims read with stride 0
    for n, r, s in zip(shape, _repeats(ctx), st):
        walk += [r, n]
        ss += [0, s]
    return strided_launch(ctx, dense_copy_args(walk, ss), inputs=(0,))


# -- DepthToSpace / SpaceToDepth --------------------------------------------------------------------

def _blocks(ctx: KernelContext, to_space: bool):
    x = ctx.inputs[0]
    ctx.require_dtype(0, DTYPES)
    b = int(ctx.attr("blocksize"))
    if len(x.shape) != 4 or b <= 0:
        raise ctx.error(f"needs a 4-d input and a positive blocksize, got {x.shape} and {b}")
    n, c, h, w = x.shape
    if to_space and c % (b * b) or not to_space and (h % b or w % b):
        raise ctx.error(f"shape {x.shape} is not divisible by blocksize {b}")
    return n, c, h, w, b, ctx.attr("mode", "DCR")


def _infer_d2s(ctx: KernelContext) -> list[TensorSpec]:
    n, c, h, w, b, _ = _blocks(ctx, True)
    return [TensorSpec((n, c // (b * b), h * b, w * b), ctx.inputs[0].dtype)]


@register("DepthToSpace", infer=_infer_d2s)
def _prepare_d2s(ctx: KernelContext) -> Launch:
    n, c, h, w, b, mode = _blocks(ctx, True)
    if mode == "DCR":
        view, perm = (n, b, b, c // (b * b), h, w), (0, 3, 4, 1, 5, 2)
    else:
        view, perm = (n, c // (b * b), b, b, h, w), (0, 1, 4, 2, 5, 3)
    return strided_launch(ctx, dense_copy_args(*permuted(view, perm)))


def _infer_s2d(ctx: KernelContext) -> list[TensorSpec]:
    n, c, h, w, b, _ = _blocks(ctx, False)
    return [TensorSpec((n, c * b * b, h // b, w // b), ctx.inputs[0].dtype)]


@register("SpaceToDepth", infer=_infer_s2d)
def _prepare_s2d(ctx: KernelContext) -> Launch:
    n, c, h, w, b, mode = _blocks(ctx, False)
    perm = (0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4)
    return strided_launch(ctx, dense_copy_args(*permuted((n, c, h // b, b, w // b, b), perm)))


# -- Trilu ------------------------------------------------------------------------------------------

@njit(nogil=True, cache=True)
def trilu(x, out, rows, cols, k, upper, block_idx, block_dim):
    """Keep j >= i + k (upper) or j <= i + k (lower) in every rows x cols matrix; zero the rest. Blocks
    split the matrix rows of all matrices."""
    r0, r1 = block_range(x.size // max(cols, 1), 1, block_idx, block_dim)
    for mi in range(r0, r1):  # row i of matrix mi // rows
        i, p = mi % rows, mi * cols
        c = min(max(i + k if upper else i + k + 1, 0), cols)  # first kept / first dropped column
        if upper:
            out[p:p + c] = 0
            copy_run(x, p + c, out, p + c, cols - c)
        else:
            copy_run(x, p, out, p, c)
            out[p + c:p + cols] = 0


def _infer_trilu(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, DTYPES)
    if len(ctx.inputs[0].shape) < 2:
        raise ctx.error(f"needs rank >= 2, got shape {ctx.inputs[0].shape}")
    return [ctx.inputs[0]]


@register("Trilu", infer=_infer_trilu, value_inputs=(1,))
def _prepare_trilu(ctx: KernelContext) -> Launch:
    rows, cols = ctx.inputs[0].shape[-2:]
    k = int_values(ctx, 1)[0] if ctx.has(1) else 0
    nb = blocks(ctx, ctx.inputs[0].size // max(cols, 1), walk_ns(cols, True, ctx.inputs[0].dtype.itemsize) * cols)
    return tiled(trilu, (rows, cols, k, int(bool(ctx.attr("upper", 1)))), nb, inputs=(0,))
