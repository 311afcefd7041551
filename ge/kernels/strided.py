"""The two N-d walkers shared by the data-movement kernels, and the plans that drive them.

strided_copy: dst[d_off + i·ds] = src[s_off + i·ss] for every multi-index i of a shape. Transpose,
Slice (negative steps are negative strides), Expand and Tile (stride 0 on repeated dims), constant Pad,
DepthToSpace and SpaceToDepth are all this one loop with different shape and stride arrays. Plans are
collapsed first (size-1 dims dropped, dims contiguous in both src and dst merged) so the inner run is
as long as possible; a run contiguous on both sides becomes a slice copy (a memcpy).

gather_axes: out[i] = x[T_0[i_0] + T_1[i_1] + ...], one offset table per output axis. Any per-axis
index map is this loop: Pad's edge/reflect/wrap and nearest Resize/Upsample. The outer multi-index
carries the running sum of table entries, so the inner loop is a plain indexed load.

Both take shapes and strides as int64 arrays, so one compiled specialization serves every rank.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def strided_copy(src, dst, s_off, d_off, shape, ss, ds):
    r = shape.shape[0]
    total = 1
    for d in range(r):
        total *= shape[d]
    if total == 0:
        return
    n, si, di = shape[r - 1], ss[r - 1], ds[r - 1]
    idx = np.zeros(r, np.int64)
    ps, pd = s_off, d_off
    for _ in range(total // n):
        if si == 1 and di == 1:
            dst[pd:pd + n] = src[ps:ps + n]
        else:
            for j in range(n):
                dst[pd + j * di] = src[ps + j * si]
        d = r - 2
        while d >= 0:  # carry the outer multi-index
            idx[d] += 1
            ps += ss[d]
            pd += ds[d]
            if idx[d] < shape[d]:
                break
            ps -= ss[d] * shape[d]
            pd -= ds[d] * shape[d]
            idx[d] = 0
            d -= 1


@njit(nogil=True, cache=True)
def gather_axes(x, out, shape, tables, starts):
    r = shape.shape[0]
    total = 1
    for d in range(r):
        total *= shape[d]
    if total == 0:
        return
    n, last = shape[r - 1], starts[r - 1]
    idx = np.zeros(r, np.int64)
    base = 0
    for d in range(r - 1):
        base += tables[starts[d]]
    po = 0
    for _ in range(total // n):
        for j in range(n):
            out[po + j] = x[base + tables[last + j]]
        po += n
        d = r - 2
        while d >= 0:
            t = starts[d]
            base -= tables[t + idx[d]]
            idx[d] += 1
            if idx[d] < shape[d]:
                base += tables[t + idx[d]]
                break
            idx[d] = 0
            base += tables[t]
            d -= 1


# -- plans (Python, at prepare time) ----------------------------------------------------------------

def contiguous_strides(shape) -> list[int]:
    st, acc = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        st[d] = acc
        acc *= shape[d]
    return st


def copy_args(shape, ss, ds, s_off=0, d_off=0) -> tuple:
    """Launch args of strided_copy, with the walk collapsed to the fewest, longest dims."""
    shape, ss, ds = list(shape), list(ss), list(ds)
    if all(n != 0 for n in shape):
        keep = [d for d, n in enumerate(shape) if n != 1]
        shape, ss, ds = [shape[d] for d in keep], [ss[d] for d in keep], [ds[d] for d in keep]
    d = len(shape) - 1
    while d > 0:  # merge dim d-1 into d when both sides walk them as one
        if ss[d - 1] == ss[d] * shape[d] and ds[d - 1] == ds[d] * shape[d]:
            shape[d] *= shape[d - 1]
            del shape[d - 1], ss[d - 1], ds[d - 1]
        d -= 1
    if not shape:
        shape, ss, ds = [1], [1], [1]
    return (int(s_off), int(d_off), np.array(shape, np.int64), np.array(ss, np.int64),
            np.array(ds, np.int64))


def dense_copy_args(out_shape, ss, s_off=0) -> tuple:
    """strided_copy args writing a contiguous output of out_shape from src strides ss."""
    return copy_args(out_shape, ss, contiguous_strides(out_shape), s_off, 0)


def permuted(shape, perm):
    """(output shape, source strides) of a transpose of a contiguous tensor."""
    st = contiguous_strides(shape)
    return [shape[p] for p in perm], [st[p] for p in perm]


def gather_args(out_shape, tables) -> tuple:
    """Launch args of gather_axes from one offset table (int sequence) per output axis."""
    if not out_shape:
        return np.array([1], np.int64), np.zeros(1, np.int64), np.zeros(1, np.int64)
    lens = [len(t) for t in tables]
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    flat = np.concatenate([np.asarray(t, np.int64) for t in tables] + [np.zeros(1, np.int64)])
    return np.array(out_shape, np.int64), flat, starts
