"""The two N-d walkers shared by the data-movement kernels, and the plans that drive them.

strided_copy: dst[d_off + i·ds] = src[s_off + i·ss] for every multi-index i of a shape. Transpose,
Slice (negative steps are negative strides), Expand and Tile (stride 0 on repeated dims), constant Pad,
DepthToSpace and SpaceToDepth are all this one loop with different shape and stride arrays. Plans are
collapsed first (size-1 dims dropped, dims contiguous in both src and dst merged) so the inner run is
as long as possible; a run contiguous on both sides becomes a slice copy (a memcpy). When the source
is contiguous along another dim (a real transpose), that dim is walked second-last and the last two
dims move as 16x16 tiles, so neither side strides through memory a row at a time (or, when the dst
rows are short, the src-contiguous dim is walked last).

gather_axes: out[i] = x[T_0[i_0] + T_1[i_1] + ...], one offset table per output axis. Any per-axis
index map is this loop: Pad's edge/reflect/wrap and nearest Resize/Upsample. The outer multi-index
carries the running sum of table entries, so the inner loop is a plain indexed load; a row read from
the same source row as the previous one is copied from it, and the longest stretch where the last
table counts up by one (a pad's interior) is copied as a slice.

Both take shapes and strides as int64 arrays, so one compiled specialization serves every rank.

Blocks (AI cores): both walkers split their steps as flat ranges (blocks.row_range): strided_copy's step
is a row (cut on multiples of G columns) or, for a tiled transpose, a strip of TILE-row tiles (cut on
multiples of TILE rows); every step writes its own part of dst (the plan maps the walk one-to-one onto
the output), so blocks never overlap, whatever the source strides (0 for Expand/Tile). A block starts its
multi-index at its first step. gather_axes copies a repeated row from the previous one only when the
same block wrote that row whole.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..ir.dtypes import HALF
from .blocks import G, blocks, row_index, row_range, tiled

# element types the kernels compile for (Numba has no float16 or bfloat16 arrays)
# (the 16-bit floats move as their uint16 bits; ops that compute on them run bracketed in float32:
# passes/compute_in_float32.py)
DTYPES = tuple(np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                      np.uint32, np.uint64, np.float32, np.float64)) + HALF


@njit(nogil=True, cache=True, inline="always")
def copy_run(src, ps, dst, pd, n):
    """dst[pd:pd + n] = src[ps:ps + n], at memcpy speed.

    Measured: Numba's slice-to-slice assignment is ~8x slower (it guards against overlap with a
    temporary), and so is a loop indexing dst[pd + j] (the negative-index wraparound on a signed
    offset blocks vectorization). Views indexed by the range variable vectorize; inlining keeps
    short runs cheap.
    """
    d, s = dst[pd:pd + n], src[ps:ps + n]
    for j in range(n):
        d[j] = s[j]


TILE = 16  # measured best of 16..128 on 16384x64, 64x16384, 2048x2048 and 1024x196 float32 transposes


@njit(nogil=True, cache=True)
def _transpose_block(src, dst, ps, pd, na, nb, sb, da):
    """dst[pd + a*da + b] = src[ps + a + b*sb], in TILE x TILE tiles so both sides stay in cache."""
    for a0 in range(0, na, TILE):
        for b0 in range(0, nb, TILE):
            b1 = min(b0 + TILE, nb)
            for a in range(a0, min(a0 + TILE, na)):
                row, s = dst[pd + a * da + b0:pd + a * da + b1], ps + a + b0 * sb
                for b in range(row.size):
                    row[b] = src[s + b * sb]


@njit(nogil=True, cache=True)
def strided_copy(src, dst, s_off, d_off, shape, ss, ds, block_idx, block_dim):
    """Blocks split the walk's steps (a row, or a tile's TILE-row strip) as flat ranges (blocks.row_range,
    grain TILE rows of a tile or G columns of a row); every step writes its own part of dst."""
    r = shape.shape[0]
    total = 1
    for d in range(r):
        total *= shape[d]
    if total == 0:
        return
    n, si, di = shape[r - 1], ss[r - 1], ds[r - 1]
    # a transpose (src contiguous along dim r-2, dst along r-1) moves 2-d tiles instead of rows
    tiled = r >= 2 and ss[r - 2] == 1 and di == 1 and si != 1 and n >= TILE and shape[r - 2] >= TILE
    m = shape[r - 2] if tiled else n  # what a block range cuts inside one step: tile rows or row columns
    steps = total // (n * m) if tiled else total // n
    lo, hi = row_range(steps * m, m, TILE if tiled else G, block_idx, block_dim)
    if lo >= hi:
        return
    idx = np.zeros(r, np.int64)
    ps, pd = s_off, d_off
    t = lo // m
    for d in range(r - 3 if tiled else r - 2, -1, -1):  # the multi-index of the first step
        idx[d] = t % shape[d]
        t //= shape[d]
        ps += idx[d] * ss[d]
        pd += idx[d] * ds[d]
    pos, a0 = lo // m * m, lo % m
    while pos < hi:
        a1 = min(m, hi - pos)
        if tiled:
            _transpose_block(src, dst, ps + a0, pd + a0 * ds[r - 2], a1 - a0, n, si, ds[r - 2])
        elif si == 1 and di == 1:
            copy_run(src, ps + a0, dst, pd + a0, a1 - a0)
        else:
            for j in range(a0, a1):
                dst[pd + j * di] = src[ps + j * si]
        a0 = 0
        pos += m
        d = r - 3 if tiled else r - 2
        while d >= 0:  # carry the outer multi-index (inline: a helper returning (ps, pd) is 4x slower)
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
def gather_axes(x, out, shape, tables, starts, run_lo, run_hi, block_idx, block_dim):
    """run_lo:run_hi is a stretch where the last table counts up by one: copied as a slice. Blocks split
    the output rows as flat ranges (blocks.row_range); a row repeats the previous one by copying it only
    when this block wrote that row whole."""
    r = shape.shape[0]
    total = 1
    for d in range(r):
        total *= shape[d]
    n, last = shape[r - 1], starts[r - 1]
    lo, hi = row_range(total, n, G, block_idx, block_dim)
    if lo >= hi:
        return
    idx = row_index(shape, r, lo // n)
    base, prev = 0, -1
    for d in range(r - 1):
        base += tables[starts[d] + idx[d]]
    po, j0 = lo // n * n, lo % n
    while po < hi:
        j1 = min(n, hi - po)
        if base == prev:  # the same source row again (nearest upsampling, edge padding): copy our last row
            copy_run(out, po - n + j0, out, po + j0, j1 - j0)
        else:
            # views and unsigned offsets skip Numba's negative-index wraparound (see copy_run): 1.3x
            row, src, tab = out[po:po + n], x[base:], tables[last:last + n]
            c0, c1 = min(max(run_lo, j0), j1), max(min(run_hi, j1), j0)
            if c1 < c0:
                c1 = c0
            for j in range(j0, c0):
                row[j] = src[np.uint64(tab[j])]
            if c1 > c0:
                copy_run(src, tab[c0], row, c0, c1 - c0)
            for j in range(c1, j1):
                row[j] = src[np.uint64(tab[j])]
        prev = base if j0 == 0 else -1  # a row begun mid-way is not whole
        j0 = 0
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

def int_values(ctx, i: int) -> list[int]:
    """The value of node input i as Python ints (exact, unlike numpy int64 arithmetic near its limits)."""
    return [int(v) for v in np.asarray(ctx.value(i)).reshape(-1)]


def fill_scalar(value, dtype):
    """A fill value as the Python type that casts exactly into dtype (int for ints and bools; the bits for
    a 16-bit float, whose kernels see uint16)."""
    if np.dtype(dtype) in HALF:
        return int(np.asarray(value, dtype).view(np.uint16))
    return float(value) if np.dtype(dtype).kind in "fc" else int(value)


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
    if ds[-1] == 1 and ss[-1] != 1 and 1 in ss[:-1] and shape[ss.index(1)] >= TILE:
        # a transpose: tiles when both contiguous dims are long (the walker tiles the last two dims),
        # else read along the src-contiguous dim (a short dst row then costs little)
        k = ss.index(1)
        to = len(shape) - 1 if shape[-1] >= TILE else len(shape)
        for v in (shape, ss, ds):
            moved = v.pop(k)
            v.insert(to - 1, moved)
    return (int(s_off), int(d_off), np.array(shape, np.int64), np.array(ss, np.int64),
            np.array(ds, np.int64))


# ns, one thread, best of 40 (blocks.MIN_BLOCK_NS): per float32 element of a run contiguous on both sides
# (Concat, Slice, Tile: 0.13-0.17), per element read through a stride or a table (Transpose 0.84-1.6, Pad
# reflect/edge 0.55-0.83, nearest Resize 0.87-1.56), per row of the walk (Concat of 8-element runs: 8)
_NS_RUN, _NS_STRIDED, _NS_STEP = 0.17, 1.0, 8.0


def walk_ns(n: int, contiguous: bool, itemsize: int = 4) -> float:
    """ns per element of a walk whose rows hold n elements of itemsize bytes."""
    return (_NS_RUN * itemsize / 4 if contiguous else _NS_STRIDED) + _NS_STEP / max(n, 1)


def strided_launch(ctx, args: tuple, **kw):
    """A tiled Launch of strided_copy with `copy_args` args."""
    shape, ss, ds = args[2:5]
    ns = walk_ns(int(shape[-1]), ss[-1] == 1 and ds[-1] == 1, ctx.outputs[0].dtype.itemsize)
    return tiled(strided_copy, args, blocks(ctx, int(np.prod(shape)), ns), **kw)


def gather_launch(ctx, args: tuple, **kw):
    """A tiled Launch of gather_axes with `gather_args` args."""
    shape, _, _, lo, hi = args
    n = int(shape[-1])
    ns = walk_ns(n, False)  # table loads even where a run is copied (per-row set-up, measured)
    return tiled(gather_axes, args, blocks(ctx, int(np.prod(shape)), ns), **kw)


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
        return np.array([1], np.int64), np.zeros(1, np.int64), np.zeros(1, np.int64), 0, 0
    tables = [np.asarray(t, np.int64) for t in tables]
    starts = np.concatenate([[0], np.cumsum([len(t) for t in tables])[:-1]]).astype(np.int64)
    flat = np.concatenate(tables + [np.zeros(1, np.int64)])
    lo, hi = _longest_run(tables[-1])
    return np.array(out_shape, np.int64), flat, starts, lo, hi


def _longest_run(t: np.ndarray) -> tuple[int, int]:
    """The longest stretch [lo, hi) where t counts up by one (empty when shorter than 2)."""
    if len(t) < 2:
        return 0, 0
    breaks = np.flatnonzero(np.diff(t) != 1) + 1
    edges = np.concatenate([[0], breaks, [len(t)]])
    i = int(np.argmax(np.diff(edges)))
    lo, hi = int(edges[i]), int(edges[i + 1])
    return (lo, hi) if hi - lo >= 2 else (0, 0)
