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

Offsets are uint64 on purpose: Numba wraps negative signed indices, and that select alone stops
vectorization (measured 8x). The walkers are `inline="always"` and take the scalar op as a jitted function,
so each family kernel that calls them stays a plain cacheable module-level function.
"""
from __future__ import annotations

import numpy as np
from numba import njit, uint64


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
def map1(f, x, out, p, q):
    """out[i] = f(x[i], p, q)."""
    if x.ctypes.data == out.ctypes.data:  # in place
        for i in range(out.size):
            out[i] = f(out[i], p, q)
    else:
        for i in range(x.size):
            out[i] = f(x[i], p, q)


@njit(inline="always")
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


@njit(inline="always")
def walk2(f, a, b, out, shape, sa, sb):
    """out = f(a, b) over a collapsed broadcast."""
    r = shape.size
    if out.size == 0:
        return
    rows = out.size // shape[r - 1]
    n = uint64(shape[r - 1])
    ia, ib = sa[r - 1], sb[r - 1]
    alias = a.ctypes.data == out.ctypes.data and a.size == out.size
    idx = np.zeros(r, np.int64)
    da, db = _deltas(shape, sa), _deltas(shape, sb)
    pa = pb = po = uint64(0)
    for _ in range(rows):
        if alias:  # a is out
            if ib == 0:
                bv = b[pb]
                for j in range(n):
                    out[po + j] = f(out[po + j], bv)
            else:
                for j in range(n):
                    out[po + j] = f(out[po + j], b[pb + j])
        elif ia == ib:
            for j in range(n):
                out[po + j] = f(a[pa + j], b[pb + j])
        elif ib == 0:
            bv = b[pb]
            for j in range(n):
                out[po + j] = f(a[pa + j], bv)
        else:
            av = a[pa]
            for j in range(n):
                out[po + j] = f(av, b[pb + j])
        po += n
        d = r - 2  # odometer over the outer dims: find the dim that moves, wrap the ones after it
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
def walk3(f, c, a, b, out, shape, sc, sa, sb):
    """out = f(c, a, b) over a collapsed broadcast (Where). With c contiguous in the row, a and b get the
    walk2 treatment (each a run or a scalar); a row-constant c (rare) takes a strided loop."""
    r = shape.size
    if out.size == 0:
        return
    rows = out.size // shape[r - 1]
    n = uint64(shape[r - 1])
    ic, ia, ib = uint64(sc[r - 1]), uint64(sa[r - 1]), uint64(sb[r - 1])
    idx = np.zeros(r, np.int64)
    dc, da, db = _deltas(shape, sc), _deltas(shape, sa), _deltas(shape, sb)
    pc = pa = pb = po = uint64(0)
    for _ in range(rows):
        if ic == 0:
            for j in range(n):
                out[po + j] = f(c[pc], a[pa + j * ia], b[pb + j * ib])
        elif ia == 1 and ib == 1:
            for j in range(n):
                out[po + j] = f(c[pc + j], a[pa + j], b[pb + j])
        elif ia == 1:
            bv = b[pb]
            for j in range(n):
                out[po + j] = f(c[pc + j], a[pa + j], bv)
        elif ib == 1:
            av = a[pa]
            for j in range(n):
                out[po + j] = f(c[pc + j], av, b[pb + j])
        else:
            av, bv = a[pa], b[pb]
            for j in range(n):
                out[po + j] = f(c[pc + j], av, bv)
        po += n
        d = r - 2
        while d > 0 and idx[d] == shape[d] - 1:
            idx[d] = 0
            d -= 1
        idx[d] += 1
        pc += dc[d]
        pa += da[d]
        pb += db[d]
