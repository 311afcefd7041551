"""The loops shared by every elementwise kernel: a flat map for unary ops, broadcasting walkers for the rest.

0. `map1` is one flat loop, plus a copy of it for in-place calls (see step 2 for why).

1. At compile time `broadcast_strides` right-aligns the input shapes to the output shape, gives each input a
   stride per dim (0 where it is broadcast) and merges adjacent dims that every input walks as one. A
   same-shape op becomes one run of out.size elements; a bias add [N,C,H,W] + [C,1,1] becomes [N, C, H*W]
   with strides (0, 1, 0) for the bias.
2. At run time the walker visits the output row by row, a row being the last collapsed dim. An input's
   inner stride is then 1 or 0, so each row is one of three plain loops (both contiguous, second operand
   a scalar, first operand a scalar) that LLVM vectorizes. When the first operand is the output buffer
   itself (an in-place launch) the row loop reads `out` instead: with one pointer LLVM needs no overlap
   check, which in-place calls fail, falling back to scalar code (measured 3x slower). Only the first
   operand gets these loops (each loop costs compile time); commutative kernels swap their operands
   (`commute`) when the output is the second one, and kernels declare in-place on input 0 otherwise.
3. The outer multi-index advances like an odometer; when it carries into dim d each input's offset moves
   by a step precomputed per dim (its stride there minus the wrapped dims' extent), so a row costs a few
   scalar operations. The per-row code is written out in each walker on purpose: calling an inlined
   helper that takes arrays once per row left refcount traffic in the loop (rows of 16 to 64 elements
   ran 10-25x slower, measured).

4. Blocks (AI cores): the walkers take (block_idx, block_dim) and compute the flat output range
   blocks.row_range gives that block: its ends sit at a row start plus a multiple of G = 64 columns, so
   one long row (a same-shape op collapses to one) splits as evenly as many short ones, and a row's
   vectorised loop and remainder cover the same elements for any block count. A block starts its
   odometer and input offsets at its first row (`_start`, `_offset`) and walks partial first and last
   rows; elementwise ops read only the elements they write, so in-place launches stay safe. `part` is the
   flat slice of a unary map.

5. Compile cost: the walkers are inlined once per scalar op and dtype, so what runs once per call and does
   not depend on the op or dtype (`_start`, `_deltas`, `_offset`, on int64 shape arrays) is a plain call,
   compiled once for every kernel: inlined, it was typed and optimised again in each copy (float32
   binary_arith 6.5 -> 3.1 CPU s, compare 5.1 -> 3.1 s: bench/binary_kernels.py; LLVM still inlines them at
   the final link, so the loops run as before).

Offsets are uint64 on purpose: Numba wraps negative signed indices, and that select alone stops
vectorization (measured 8x). The walkers are `inline="always"` and take the scalar op as a jitted function,
so each family kernel that calls them stays a plain cacheable module-level function.
"""
from __future__ import annotations

import numpy as np
from numba import njit, uint64

from .blocks import G, row_range
from .tiling import block_range


def broadcast_strides(out_shape, *in_shapes):
    """Collapse a broadcast to (shape, strides per input) as int64 arrays of rank >= 2.

    Adjacent dims merge when every input is either contiguous across both or broadcast across both; a
    leading 1 keeps an outer dim for the walkers (a second copy of the row loops for the rank-1 case
    made LLVM optimize the main one worse: 25x slower on short rows, measured).
    """
    r = len(out_shape)
    strides = []
    for s in in_shapes:
        s = (1,) * (r - len(s)) + tuple(s)
        st, acc = [0] * r, 1
        for d in range(r - 1, -1, -1):
            st[d] = 0 if s[d] == 1 and out_shape[d] != 1 else acc
            acc *= s[d]
        strides.append(st)
    shape = list(out_shape) or [1]
    strides = [st or [0] for st in strides]
    d = len(shape) - 1
    while d > 0:  # merge dim d-1 into d when every input walks them as one
        if all(st[d - 1] == st[d] * shape[d] for st in strides):
            shape[d] *= shape[d - 1]
            del shape[d - 1]
            for st in strides:
                del st[d - 1]
        d -= 1
    if len(shape) == 1:
        shape.insert(0, 1)
        for st in strides:
            st.insert(0, 0)
    return (np.array(shape, np.int64),) + tuple(np.array(st, np.int64) for st in strides)


@njit(inline="always")
def part(x, out, block_idx, block_dim):
    """Block `block_idx`'s slices of x and out for a flat map: ends on multiples of G elements."""
    lo, hi = block_range(out.size, G, block_idx, block_dim)
    return x[lo:hi], out[lo:hi]


@njit(inline="always")
def map1(f, x, out, p, q):
    """out[i] = f(x[i], p, q)."""
    if x.ctypes.data == out.ctypes.data:  # in place
        for i in range(out.size):
            out[i] = f(out[i], p, q)
    else:
        for i in range(x.size):
            out[i] = f(x[i], p, q)


@njit(nogil=True, cache=True)
def _deltas(shape, s):
    """Offset steps for one input: when the outer index carries into dim d (the dims after d wrapping to
    0), the offset moves by step[d]. Negative steps wrap in uint64 and add back exactly."""
    r = shape.size
    step = np.zeros(r, np.uint64)
    back = 0
    for d in range(r - 2, -1, -1):
        step[d] = uint64(s[d] - back)
        back += s[d] * (shape[d] - 1)
    return step


@njit(nogil=True, cache=True)
def _offset(idx, s):
    """An input's offset at outer multi-index idx (strides are >= 0)."""
    o = 0
    for d in range(idx.size - 1):
        o += idx[d] * s[d]
    return uint64(o)


@njit(nogil=True, cache=True)
def _start(shape, lo):
    """The outer multi-index (dims 0 .. r-2) of the row holding flat output element lo."""
    r = shape.size
    row = lo // shape[r - 1]
    idx = np.zeros(r, np.int64)
    for d in range(r - 2, -1, -1):
        idx[d] = row % shape[d]
        row //= shape[d]
    return idx


@njit(inline="always")
def walk2(f, a, b, out, shape, sa, sb, block_idx, block_dim):
    """out = f(a, b) over a collapsed broadcast, on block `block_idx`'s part of the output
    (blocks.row_range: a flat range starting and ending inside rows at multiples of G)."""
    r = shape.size
    n = shape[r - 1]
    lo, hi = row_range(out.size, n, G, block_idx, block_dim)
    if lo >= hi:
        return
    ia, ib = sa[r - 1], sb[r - 1]
    alias = a.ctypes.data == out.ctypes.data and a.size == out.size
    idx = _start(shape, lo)
    da, db = _deltas(shape, sa), _deltas(shape, sb)
    pa, pb = _offset(idx, sa), _offset(idx, sb)
    un, end = uint64(n), uint64(hi)
    po, j0 = uint64(lo // n * n), uint64(lo % n)
    while po < end:
        j1 = un if end - po > un else end - po
        if alias:  # a is out
            if ib == 0:
                bv = b[pb]
                for j in range(j0, j1):
                    out[po + j] = f(out[po + j], bv)
            else:
                for j in range(j0, j1):
                    out[po + j] = f(out[po + j], b[pb + j])
        elif ia == ib:
            for j in range(j0, j1):
                out[po + j] = f(a[pa + j], b[pb + j])
        elif ib == 0:
            bv = b[pb]
            for j in range(j0, j1):
                out[po + j] = f(a[pa + j], bv)
        else:
            av = a[pa]
            for j in range(j0, j1):
                out[po + j] = f(av, b[pb + j])
        j0 = uint64(0)
        po += un
        d = r - 2  # odometer over the outer dims: find the dim that moves, wrap the ones after it
        while d > 0 and idx[d] == shape[d] - 1:
            idx[d] = 0
            d -= 1
        idx[d] += 1
        pa += da[d]
        pb += db[d]


@njit(inline="always")
def walk2_strided(f, a, b, out, shape, sa, sb, block_idx, block_dim):
    """walk2 with one strided loop per row instead of five: for scalar functions no vector loop speeds up
    (integer division and remainder, libm's fmod and pow), where walk2's run/scalar/in-place copies only
    cost compile time (int32 Div: ~4x the LLVM code, the same speed, measured in bench/binary_kernels.py).
    Elementwise, so in place is safe: each element is read before it is written."""
    r = shape.size
    n = shape[r - 1]
    lo, hi = row_range(out.size, n, G, block_idx, block_dim)
    if lo >= hi:
        return
    ia, ib = uint64(sa[r - 1]), uint64(sb[r - 1])
    idx = _start(shape, lo)
    da, db = _deltas(shape, sa), _deltas(shape, sb)
    pa, pb = _offset(idx, sa), _offset(idx, sb)
    un, end = uint64(n), uint64(hi)
    po, j0 = uint64(lo // n * n), uint64(lo % n)
    while po < end:
        j1 = un if end - po > un else end - po
        for j in range(j0, j1):
            out[po + j] = f(a[pa + j * ia], b[pb + j * ib])
        j0 = uint64(0)
        po += un
        d = r - 2
        while d > 0 and idx[d] == shape[d] - 1:
            idx[d] = 0
            d -= 1
        idx[d] += 1
        pa += da[d]
        pb += db[d]


@njit(inline="always")
def commute(a, b, sa, sb, out):
    """For a commutative op whose output is b's buffer: swap the operands so that walk2's in-place loop
    (output = first operand) serves it."""
    if b.ctypes.data == out.ctypes.data and b.size == out.size:
        return b, a, sb, sa
    return a, b, sa, sb


@njit(inline="always")
def walk3(f, c, a, b, out, shape, sc, sa, sb, block_idx, block_dim):
    """out = f(c, a, b) over a collapsed broadcast (Where), on block `block_idx`'s part of the output.
    With c contiguous in the row, a and b get the walk2 treatment (each a run or a scalar); a
    row-constant c (rare) takes a strided loop."""
    r = shape.size
    n = shape[r - 1]
    lo, hi = row_range(out.size, n, G, block_idx, block_dim)
    if lo >= hi:
        return
    ic, ia, ib = uint64(sc[r - 1]), uint64(sa[r - 1]), uint64(sb[r - 1])
    idx = _start(shape, lo)
    dc, da, db = _deltas(shape, sc), _deltas(shape, sa), _deltas(shape, sb)
    pc, pa, pb = _offset(idx, sc), _offset(idx, sa), _offset(idx, sb)
    un, end = uint64(n), uint64(hi)
    po, j0 = uint64(lo // n * n), uint64(lo % n)
    while po < end:
        j1 = un if end - po > un else end - po
        if ic == 0:
            for j in range(j0, j1):
                out[po + j] = f(c[pc], a[pa + j * ia], b[pb + j * ib])
        elif ia == 1 and ib == 1:
            for j in range(j0, j1):
                out[po + j] = f(c[pc + j], a[pa + j], b[pb + j])
        elif ia == 1:
            bv = b[pb]
            for j in range(j0, j1):
                out[po + j] = f(c[pc + j], a[pa + j], bv)
        elif ib == 1:
            av = a[pa]
            for j in range(j0, j1):
                out[po + j] = f(c[pc + j], av, b[pb + j])
        else:
            av, bv = a[pa], b[pb]
            for j in range(j0, j1):
                out[po + j] = f(c[pc + j], av, bv)
        j0 = uint64(0)
        po += un
        d = r - 2
        while d > 0 and idx[d] == shape[d] - 1:
            idx[d] = 0
            d -= 1
        idx[d] += 1
        pc += dc[d]
        pa += da[d]
        pb += db[d]
