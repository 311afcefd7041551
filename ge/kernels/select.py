"""Ops whose output shape depends on input values: NonZero, Compress, Unique.

Their infer reads the deciding input's value (`value_inputs`): a constant folds at compile time; a run-time
tensor makes the node dynamic (compiler._bind_launch catches UnknownValueError), which runtime_v2 prepares
per input value (runtime_v2/dynamic.py keys its cache on the value's bytes) and runtime_v1 refuses with its
static-plan rule, naming the node and pointing to runtime='v2'.

- NonZero: one pass counting nonzeros (infer), one writing their multi-indices, rank x count, int64.
- Compress: the kept slices of an (outer, n, inner) view (no axis: of the flattened tensor). A condition
  shorter than the axis drops the slices past it, as the spec says; a longer one is a ShapeError.
- Unique: slices along the axis (single elements without one) sorted lexicographically by a stable merge
  sort of their indices (an int64 workspace), then grouped: a group's first member is its first
  occurrence. sorted=0 orders the groups by first occurrence instead (a second merge sort, on those
  indices). NaNs compare equal to each other and after every number, so a NaN-filled tensor has one
  unique value, as numpy.unique's equal_nan. infer counts the groups with the same compiled walk, so the
  kernel and the shapes cannot disagree.

Blocks: one block each (the walks are sequential: an output position depends on everything before it).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .registry import KernelContext, Launch, TensorSpec, normalize_axis, register
from .specialize import by_type
from .strided import DTYPES, copy_run

# -- NonZero ----------------------------------------------------------------------------------------


@njit(nogil=True, cache=True)
def nonzero(x, out, shape):
    """out[d, j] = coordinate d of the j-th nonzero element of x (C order)."""
    r, nnz = shape.size, out.size // max(shape.size, 1)
    pos = np.zeros(r, np.int64)
    j = 0
    for t in range(x.size):
        if x[t] != 0:
            for d in range(r):
                out[d * nnz + j] = pos[d]
            j += 1
        d = r - 1
        while d >= 0:  # odometer: the multi-index of element t + 1
            pos[d] += 1
            if pos[d] < shape[d]:
                break
            pos[d] = 0
            d -= 1


def _infer_nonzero(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, DTYPES)
    rank = max(len(ctx.inputs[0].shape), 1)  # a scalar counts as one element of a 1-d tensor (numpy)
    return [TensorSpec((rank, int(np.count_nonzero(ctx.value(0)))), np.int64)]


@register("NonZero", infer=_infer_nonzero, value_inputs=(0,))
def _prepare_nonzero(ctx: KernelContext) -> Launch:
    return Launch(nonzero, (np.array(ctx.inputs[0].shape or (1,), np.int64),))


# -- Compress ---------------------------------------------------------------------------------------


@njit(nogil=True, cache=True)
def compress(x, cond, out, outer, n, inner):
    """out = the slices x[o, j, :] with cond[j] true, j < min(n, cond.size), in order."""
    m = min(n, cond.size)
    kept = 0
    for j in range(m):
        kept += 1 if cond[j] else 0
    for o in range(outer):
        k = 0
        for j in range(m):
            if cond[j]:
                copy_run(x, (o * n + j) * inner, out, (o * kept + k) * inner, inner)
                k += 1


def _compress_view(ctx: KernelContext):
    """(axis or None, outer, n, inner, kept)."""
    x, cond = ctx.inputs[0], ctx.inputs[1]
    ctx.require_dtype(1, (np.bool_,))
    if len(cond.shape) != 1:
        raise ctx.error(f"condition must be 1-d, got shape {cond.shape}")
    axis = ctx.attr("axis")
    if axis is None:
        outer, n, inner = 1, x.size, 1
    else:
        axis = normalize_axis(ctx, axis, len(x.shape))
        outer, n, inner = math.prod(x.shape[:axis]), x.shape[axis], math.prod(x.shape[axis + 1:])
    if cond.shape[0] > n:
        raise ctx.error(f"condition has {cond.shape[0]} entries, the {'axis' if axis is not None else 'tensor'} "
                        f"has {n}")
    return axis, outer, n, inner, int(np.count_nonzero(ctx.value(1)))


def _infer_compress(ctx: KernelContext) -> list[TensorSpec]:
    x = ctx.inputs[0]
    ctx.require_dtype(0, DTYPES)
    axis, _, _, _, kept = _compress_view(ctx)
    shape = (kept,) if axis is None else x.shape[:axis] + (kept,) + x.shape[axis + 1:]
    return [TensorSpec(shape, x.dtype)]


@register("Compress", infer=_infer_compress, value_inputs=(1,))
def _prepare_compress(ctx: KernelContext) -> Launch:
    return Launch(compress, _compress_view(ctx)[1:4])


# -- Unique -----------------------------------------------------------------------------------------


@njit(nogil=True, cache=True)
def _order(x, a, b, outer, n, inner):
    """-1, 0 or 1 as slice a sorts before, equal to or after slice b (NaN: equal to NaN, after numbers)."""
    for o in range(outer):
        for q in range(inner):
            u, v = x[(o * n + a) * inner + q], x[(o * n + b) * inner + q]
            if u < v or (u == u and v != v):
                return -1
            if u > v or (u != u and v == v):
                return 1
    return 0


@by_type
@njit(nogil=True, cache=True)
def _merge_sort(keys, perm, tmp, x, outer, n, inner, by_slice):
    """Stable bottom-up merge sort of perm: by slice order of x (by_slice) or by keys[perm[i]]."""
    m = perm.size
    width = 1
    while width < m:
        for lo in range(0, m, 2 * width):
            mid, hi = min(lo + width, m), min(lo + 2 * width, m)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                if by_slice:
                    take_right = _order(x, perm[j], perm[i], outer, n, inner) < 0
                else:
                    take_right = keys[perm[j]] < keys[perm[i]]
                if take_right:
                    tmp[k] = perm[j]
                    j += 1
                else:
                    tmp[k] = perm[i]
                    i += 1
                k += 1
            while i < mid:
                tmp[k] = perm[i]
                i, k = i + 1, k + 1
            while j < hi:
                tmp[k] = perm[j]
                j, k = j + 1, k + 1
        perm[:] = tmp[:m]
        width *= 2


@njit(nogil=True, cache=True)
def _groups(x, perm, tmp, group, outer, n, inner):
    """Sort the slices (perm) and give each slice its group in sorted order (group[slice]); the count."""
    for i in range(n):
        perm[i] = i
    _merge_sort(perm, perm, tmp, x, outer, n, inner, True)
    g = -1
    for i in range(n):
        if i == 0 or _order(x, perm[i - 1], perm[i], outer, n, inner) != 0:
            g += 1
        group[perm[i]] = g
    return g + 1


@njit(nogil=True, cache=True)
def unique_count(x, outer, n, inner):
    """How many distinct slices x has (infer's count, by the kernel's own walk)."""
    perm, tmp, group = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64)
    return _groups(x, perm, tmp, group, outer, n, inner)


@njit(nogil=True, cache=True)
def unique(x, y, first, inverse, counts, perm, tmp, group, firsts, pos, outer, n, inner, sort):
    """y: the distinct slices; first: index of each one's first occurrence; inverse: each slice's
    position in y; counts. perm, tmp, group, firsts and pos are n-element int64 workspaces."""
    u = _groups(x, perm, tmp, group, outer, n, inner)
    firsts = firsts[:u]  # a group's first occurrence: its first member in the stable sorted order
    for i in range(n - 1, -1, -1):
        firsts[group[perm[i]]] = perm[i]
    order = tmp[:u]  # the groups in output order
    for g in range(u):
        order[g] = g
    if not sort:
        _merge_sort(firsts, order, perm[:u], x, outer, n, inner, False)
    for k in range(u):  # the output position of each group
        pos[order[k]] = k
    counts[:] = 0
    for j in range(n):
        inverse[j] = pos[group[j]]
        counts[inverse[j]] += 1
    for k in range(u):
        s = firsts[order[k]]
        first[k] = s
        for o in range(outer):
            copy_run(x, (o * n + s) * inner, y, (o * u + k) * inner, inner)


def _unique_view(ctx: KernelContext):
    """(axis or None, outer, n, inner)."""
    x = ctx.inputs[0]
    axis = ctx.attr("axis")
    if axis is None:
        return None, 1, x.size, 1
    axis = normalize_axis(ctx, axis, len(x.shape))
    return axis, math.prod(x.shape[:axis]), x.shape[axis], math.prod(x.shape[axis + 1:])


def _unique_specs(ctx: KernelContext, u: int) -> list[TensorSpec]:
    """Y, indices, inverse_indices, counts for u distinct slices."""
    x = ctx.inputs[0]
    axis, _, n, _ = _unique_view(ctx)
    shape = (u,) if axis is None else x.shape[:axis] + (u,) + x.shape[axis + 1:]
    return [TensorSpec(shape, x.dtype), TensorSpec((u,), np.int64), TensorSpec((n,), np.int64),
            TensorSpec((u,), np.int64)]


def _infer_unique(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, DTYPES)
    _, outer, n, inner = _unique_view(ctx)
    u = unique_count(np.ascontiguousarray(ctx.value(0)).reshape(-1), outer, n, inner) if n else 0
    return _unique_specs(ctx, u)[:max(ctx.n_outputs, 1)]


@register("Unique", infer=_infer_unique, value_inputs=(0,))
def _prepare_unique(ctx: KernelContext) -> Launch:
    axis, outer, n, inner = _unique_view(ctx)
    u = ctx.outputs[0].shape[axis or 0]
    # the kernel writes all four outputs: those the node omits become workspaces
    omitted = _unique_specs(ctx, u)[len(ctx.outputs):]
    scratch = tuple(TensorSpec((max(n, 1),), np.int64) for _ in range(5))
    return Launch(unique, (outer, n, inner, int(bool(ctx.attr("sorted", 1)))), workspaces=(*omitted, *scratch))
