"""Reductions: Reduce* (Sum, Mean, Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp), ArgMax, ArgMin.

Every Reduce* op is one walk over the input in memory order that folds each element into its output slot,
followed by an elementwise finish (scale for Mean, sqrt for L2, log for LogSum...). The input shape is
collapsed first: size-1 dims are dropped and neighbouring dims that are both reduced or both kept merge,
so (N, C, H, W) over (H, W) becomes (N*C, H*W). The walk then has two inner-loop forms:
- last dim kept:    out[po + j] = f(out[po + j], x[pi + j])   (vectorizes across the kept run)
- last dim reduced: acc = f(acc, x[pi + j]) over the run, then out[po] = acc
The op picks the loop outside the inner loop. Sums use fastmath 'reassoc' only (so LLVM may vectorize the
running sum; inf/nan semantics are kept); max and min of long runs keep 16 lanes, as LLVM does not
vectorize a compare-select chain. Offsets are unsigned (U): numba wraps negative signed indices, and that
select stops vectorization. LogSumExp walks twice: a max pass into a workspace, then sum(exp(x - max)),
so large inputs do not overflow.

noop_with_empty_axes=1 with no axes reduces over no axis: each output sees one element, so the finish is
still applied (ReduceSumSquare gives x*x), as the ONNX reference does.

ArgMax/ArgMin view the input as (outer, n, inner) and keep the best value of each inner column in a
workspace row, so the compare loop runs along contiguous memory. Over the last axis (inner = 1) they take
the vectorized max of the row, then scan for its first (or last) position.

Blocks (AI cores): a slot's fold is never cut. Blocks split the outermost kept dim of the collapsed
shape (`split_dim`; grain G when it is the last, vectorised dim): its slots are one contiguous range of
out (and of LogSumExp's max workspace), and `box` walks only that sub-box of x, in memory order, so each
slot folds the same elements in the same order for any block count. A full reduction (nothing kept)
stays one block. ArgMax/ArgMin split whole rows (inner == 1) or ranges of the (outer, inner) columns,
with a `best` row per block. Measured, float32, one thread vs 2 blocks on 2 threads: ReduceSum of
1024x1024 over axis 1 115 -> 93 us, ReduceLogSumExp of 256x1024 1129 -> 623 us, ArgMax of 1024x1024 over
axis 1 770 -> 429 us. Splits across columns (reducing axis 0 of 1024x1024) do not gain on this machine:
each block still streams every row's cache lines (one block of half the columns took 125 of 178 us).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .blocks import G, blocks, own, per_block, row_range, tiled
from .registry import KernelContext, Launch, TensorSpec, normalize_axis, register
from .specialize import by_type
from .tiling import block_range

# walk modes: how an element folds into its slot
SUM, PROD, MAX, MIN, ASUM, SQSUM, EXPSUM = range(7)
# finishes
NONE, MEAN, SQRT, LOG, LSE = range(5)
U = np.uint64
# ns per input element, one thread, float32, 256x1024, best of 40 (what a block of blocks.MIN_BLOCK_NS must
# hold): Sum/Prod/L1/L2 over rows or columns 0.07-0.12, Max/Min over rows 0.3-0.4 (the 16-lane run),
# LogSumExp 4-5 (libm exp), ArgMax over rows 0.65 and over columns 0.15; a walk row costs ~8 ns more
# (ReduceMean of 64x64x64 over axis 1: 0.22 per element). GlobalAveragePool of 1x512x28x28 (26-31 us)
# stays one block: 2 blocks on 2 threads took 37-42 us.
_NS, _NS_MAX, _NS_EXP, _NS_ROW, _NS_ARG, _NS_ARG_COLUMNS = 0.08, 0.4, 5.0, 8.0, 0.65, 0.15


@njit(nogil=True, cache=True, inline="always")
def _better(v, acc, is_min):
    return v < acc if is_min else v > acc


@njit(nogil=True, cache=True, inline="always")
def extreme_run(x, pi, n, acc, lanes, is_min):
    """max (min) of acc and x[pi:pi + n]; long runs keep 16 lanes so the compares vectorize (3x)."""
    nb = n // U(16) * U(16) if n >= 64 else U(0)
    if nb:
        for k in range(16):
            lanes[k] = acc
        for j in range(U(0), nb, U(16)):
            if is_min:
                for k in range(U(16)):
                    v = x[pi + j + k]
                    lanes[k] = v if v < lanes[k] else lanes[k]
            else:
                for k in range(U(16)):
                    v = x[pi + j + k]
                    lanes[k] = v if v > lanes[k] else lanes[k]
        for k in range(16):
            acc = lanes[k] if _better(lanes[k], acc, is_min) else acc
    for j in range(nb, n):
        acc = x[pi + j] if _better(x[pi + j], acc, is_min) else acc
    return acc


@njit(nogil=True, cache=True, inline="always")
def box(shape, ds, lo, hi):
    """(extents, input strides, rows) of the sub-box of a contiguous `shape` with dim ds cut to [lo, hi)."""
    r = shape.shape[0]
    sh, si = shape.copy(), np.empty(r, np.int64)
    sh[ds] = hi - lo
    acc = 1
    for d in range(r - 1, -1, -1):
        si[d] = acc
        acc *= shape[d]
    rows = 1
    for d in range(r - 1):
        rows *= sh[d]
    return sh, si, rows


@njit(nogil=True, cache=True, inline="always")
def slot_part(shape, so, ds, n_slots, block_idx, block_dim):
    """Block `block_idx`'s range [lo, hi) along ds, the outermost kept dim, and the output slots
    [s0, s1) it owns (contiguous, as ds is the outermost kept dim). Nothing kept: block 0 does it all."""
    if so[ds] == 0:
        return (0, shape[ds], 0, n_slots) if block_idx == 0 else (0, 0, 0, 0)
    lo, hi = block_range(shape[ds], G if ds == shape.shape[0] - 1 else 1, block_idx, block_dim)
    return lo, hi, lo * so[ds], hi * so[ds]


@by_type
@njit(nogil=True, cache=True, fastmath={"reassoc"})
def fold(x, out, m, mode, shape, so, ds, lo, hi):
    """Fold x into out over the collapsed `shape`, dim ds cut to [lo, hi); `so` are out's strides (0 on
    reduced dims). A slot folds its elements in memory order whatever the cut, so any split along a
    kept dim gives the same bits.

    m is LogSumExp's per-slot shift (read by EXPSUM only). Offsets are unsigned (U): numba wraps
    negative signed indices, and that select stops LLVM vectorizing."""
    r = shape.shape[0]
    if x.size == 0 or hi <= lo:
        return
    sh, si, rows = box(shape, ds, lo, hi)
    n = U(sh[r - 1])
    kept_last = so[r - 1] != 0
    idx = np.zeros(r, np.int64)
    lanes = np.empty(16, out.dtype)
    pi, po = U(lo * si[ds]), U(lo * so[ds])
    for _ in range(rows):
        if kept_last:
            if mode == SUM:
                for j in range(n):
                    out[po + j] += x[pi + j]
            elif mode == PROD:
                for j in range(n):
                    out[po + j] *= x[pi + j]
            elif mode == MAX:
                for j in range(n):
                    v = x[pi + j]
                    out[po + j] = v if v > out[po + j] else out[po + j]
            elif mode == MIN:
                for j in range(n):
                    v = x[pi + j]
                    out[po + j] = v if v < out[po + j] else out[po + j]
            elif mode == ASUM:
                for j in range(n):
                    out[po + j] += abs(x[pi + j])
            elif mode == SQSUM:
                for j in range(n):
                    v = x[pi + j]
                    out[po + j] += v * v
            else:
                for j in range(n):
                    out[po + j] += np.exp(x[pi + j] - m[po + j])
        else:
            acc = out[po]
            if mode == SUM:
                for j in range(n):
                    acc += x[pi + j]
            elif mode == PROD:
                for j in range(n):
                    acc *= x[pi + j]
            elif mode == MAX or mode == MIN:
                acc = extreme_run(x, pi, n, acc, lanes, mode == MIN)
            elif mode == ASUM:
                for j in range(n):
                    acc += abs(x[pi + j])
            elif mode == SQSUM:
                for j in range(n):
                    v = x[pi + j]
                    acc += v * v
            else:
                s = m[po]
                for j in range(n):
                    acc += np.exp(x[pi + j] - s)
            out[po] = acc
        d = r - 2
        while d >= 0:  # carry the outer multi-index; x and out move by their own strides
            idx[d] += 1
            pi += U(si[d])
            po += U(so[d])
            if idx[d] < sh[d]:
                break
            pi -= U(si[d] * sh[d])
            po -= U(so[d] * sh[d])
            idx[d] = 0
            d -= 1


@njit(nogil=True, cache=True)
def reduce(x, out, ws, mode, finish, ident, scale, shape, so, ds, block_idx, block_dim):
    """out = finish(fold of x over the reduced dims); ws holds LogSumExp's max (out-sized) or is unused.
    Block `block_idx` folds and finishes the slots of its range along ds (slot_part)."""
    lo, hi, s0, s1 = slot_part(shape, so, ds, out.size, block_idx, block_dim)
    for i in range(s0, s1):
        out[i] = ident
    if finish == LSE:
        for i in range(s0, s1):
            ws[i] = -np.inf
        fold(x, ws, ws, MAX, shape, so, ds, lo, hi)
        for i in range(s0, s1):  # an all-inf slot would give inf - inf: shift it by 0 instead
            if not np.isfinite(ws[i]):
                ws[i] = 0
    fold(x, out, ws, mode, shape, so, ds, lo, hi)
    if finish == MEAN:
        for i in range(s0, s1):
            out[i] = out[i] * scale
    elif finish == SQRT:
        for i in range(s0, s1):
            out[i] = np.sqrt(out[i])
    elif finish == LOG:
        for i in range(s0, s1):
            out[i] = np.log(out[i])
    elif finish == LSE:
        for i in range(s0, s1):
            out[i] = np.log(out[i]) + ws[i]


@njit(nogil=True, cache=True)
def reduce_bool(x, out, ws, mode, finish, ident, scale, shape, so, ds, block_idx, block_dim):
    """ReduceMax/Min on bool (any/all) through the uint8 walk; numba has no bool arithmetic to fold."""
    reduce(x.view(np.uint8), out.view(np.uint8), ws.view(np.uint8), mode, finish, ident, scale, shape, so,
           ds, block_idx, block_dim)


def identity(mode: int, dtype: np.dtype):
    """The value a slot starts from, as a Python float for float dtypes and an int otherwise."""
    dtype = np.dtype(dtype)
    if mode == PROD:
        return 1.0 if dtype.kind == "f" else 1
    if mode not in (MAX, MIN):
        return 0.0 if dtype.kind == "f" else 0
    if dtype.kind == "f":
        return -math.inf if mode == MAX else math.inf
    if dtype.kind == "b":
        return 0 if mode == MAX else 1
    info = np.iinfo(dtype)
    return int(info.min if mode == MAX else info.max)


def collapse(shape, axes) -> tuple[np.ndarray, np.ndarray]:
    """(collapsed input shape, out strides with 0 on reduced dims) for reducing `shape` over `axes`."""
    runs: list[list] = []  # [size, reduced]
    for a, d in enumerate(shape):
        if d == 1:
            continue
        red = a in axes
        if runs and runs[-1][1] == red:
            runs[-1][0] *= d
        else:
            runs.append([d, red])
    runs = runs or [[1, False]]
    so, acc = [0] * len(runs), 1
    for i in range(len(runs) - 1, -1, -1):
        if not runs[i][1]:
            so[i] = acc
            acc *= runs[i][0]
    return np.array([r[0] for r in runs], np.int64), np.array(so, np.int64)


def split_dim(dshape, so) -> tuple[int, int]:
    """(ds, units): blocks split the outermost kept dim of a collapsed reduction (1 unit if none)."""
    kept = [d for d in range(len(so)) if so[d]]
    return (kept[0], int(dshape[kept[0]])) if kept else (0, 1)


def reduce_launch(ctx: KernelContext, shape, axes, dtype, mode: int, finish: int = NONE) -> Launch:
    """A Launch of `reduce` over `axes` of an input of `shape`; also used by the global pools."""
    dshape, so = collapse(shape, set(axes))
    count = int(np.prod([shape[a] for a in axes], dtype=np.int64))
    size = int(np.prod(shape, dtype=np.int64))
    n_out = int(np.prod([d for a, d in enumerate(shape) if a not in axes], dtype=np.int64))
    ws = (TensorSpec((n_out if finish == LSE else 1,), dtype),)
    fn = reduce_bool if np.dtype(dtype) == np.bool_ else reduce
    scale = 1.0 / count if count else math.nan
    ds, units = split_dim(dshape, so)
    ns = _NS_EXP if mode == EXPSUM else _NS_MAX if mode in (MAX, MIN) else _NS
    rows = size // max(int(dshape[-1]), 1)
    k = blocks(ctx, units, (ns * size + _NS_ROW * rows) / max(units, 1))
    return tiled(fn, (mode, finish, identity(mode, dtype), scale, dshape, so, ds), k, ws, inputs=(0,))


# -- Reduce* ops ------------------------------------------------------------------------------------

_OPS = {  # op: (walk mode, finish)
    "ReduceSum": (SUM, NONE), "ReduceMean": (SUM, MEAN), "ReduceMax": (MAX, NONE),
    "ReduceMin": (MIN, NONE), "ReduceProd": (PROD, NONE), "ReduceL1": (ASUM, NONE),
    "ReduceL2": (SQSUM, SQRT), "ReduceSumSquare": (SQSUM, NONE), "ReduceLogSum": (SUM, LOG),
    "ReduceLogSumExp": (EXPSUM, LSE),
}
_DTYPES = (np.float32, np.float64, np.int32, np.int64, np.int8, np.uint8)


def _reduced_axes(ctx: KernelContext, axes_from_input: bool) -> list[int]:
    rank = len(ctx.inputs[0].shape)
    if axes_from_input:
        axes = [] if not ctx.has(1) else [int(a) for a in np.asarray(ctx.value(1)).reshape(-1)]
        if not axes and ctx.attr("noop_with_empty_axes", 0):
            return []
    else:
        axes = ctx.attr("axes") or []
    if not axes:
        return list(range(rank))
    return sorted({normalize_axis(ctx, a, rank) for a in axes})


def _check_dtype(ctx: KernelContext) -> None:
    dt = ctx.inputs[0].dtype
    if ctx.op_type in ("ReduceMax", "ReduceMin") and dt == np.bool_:
        return
    ctx.require_dtype(0, (np.float32, np.float64) if ctx.op_type == "ReduceLogSumExp" else _DTYPES)


def _reduce_op(axes_from_input: bool):
    def infer(ctx: KernelContext) -> list[TensorSpec]:
        _check_dtype(ctx)
        x = ctx.inputs[0]
        axes = _reduced_axes(ctx, axes_from_input)
        keep = ctx.attr("keepdims", 1)
        shape = [1 if a in axes else d for a, d in enumerate(x.shape) if keep or a not in axes]
        return [TensorSpec(shape, x.dtype)]

    def prepare(ctx: KernelContext) -> Launch:
        mode, finish = _OPS[ctx.op_type]
        axes = _reduced_axes(ctx, axes_from_input)
        return reduce_launch(ctx, ctx.inputs[0].shape, axes, ctx.inputs[0].dtype, mode, finish)
    return infer, prepare


for _op in _OPS:
    _since = 13 if _op == "ReduceSum" else 18  # axes moved from attribute to input
    _inf, _prep = _reduce_op(False)
    register(_op, infer=_inf, until=_since - 1)(_prep)
    _inf, _prep = _reduce_op(True)
    register(_op, infer=_inf, since=_since, value_inputs=(1,))(_prep)

# -- ArgMax / ArgMin --------------------------------------------------------------------------------


@njit(nogil=True, cache=True)
def arg_extreme(x, out, best, outer, n, inner, is_min, last, block_idx, block_dim):
    """out[o, j] = index k of the max (min) of x[o, k, j]; ties go to the first (last) index. Blocks split
    whole rows (inner == 1) or the (outer, inner) columns; best holds inner values per block."""
    if inner == 1:  # contiguous rows: a vectorized max, then a scan for where it is
        r0, r1 = block_range(outer, 1, block_idx, block_dim)
        lanes = np.empty(16, x.dtype)
        for o in range(r0, r1):
            b = U(o * n)
            m = extreme_run(x, b, U(n), x[b], lanes, is_min)
            k = n - 1 if last else 0
            while 0 <= k < n and x[b + U(k)] != m:
                k += -1 if last else 1
            out[o] = k if 0 <= k < n else 0  # not found: a NaN row
        return
    lo, hi = row_range(outer * inner, inner, G, block_idx, block_dim)
    bw = own(best, inner, block_idx, block_dim)
    for o in range(lo // inner, (hi + inner - 1) // inner):
        j0, j1 = max(lo - o * inner, 0), min(hi - o * inner, inner)
        _arg_columns(x, out, bw, U(o * n * inner), U(o * inner), n, inner, j0, j1, is_min, last)


@njit(nogil=True, cache=True)
def _arg_columns(x, out, best, base, ob, n, inner, j0, j1, is_min, last):
    """Columns j0 .. j1 - 1 of one (n, inner) slab at x[base:], results at out[ob:]."""
    u0, u1 = U(j0), U(j1)
    for j in range(u0, u1):
        best[j] = x[base + j]
        out[ob + j] = 0
    for k in range(1, n):
        p = base + U(k) * U(inner)
        if not is_min and not last:
            for j in range(u0, u1):
                if x[p + j] > best[j]:
                    best[j] = x[p + j]
                    out[ob + j] = k
        elif not is_min:
            for j in range(u0, u1):
                if x[p + j] >= best[j]:
                    best[j] = x[p + j]
                    out[ob + j] = k
        elif not last:
            for j in range(u0, u1):
                if x[p + j] < best[j]:
                    best[j] = x[p + j]
                    out[ob + j] = k
        else:
            for j in range(u0, u1):
                if x[p + j] <= best[j]:
                    best[j] = x[p + j]
                    out[ob + j] = k


def _arg_axis(ctx: KernelContext) -> int:
    shape = ctx.inputs[0].shape
    axis = normalize_axis(ctx, ctx.attr("axis", 0), len(shape))
    if shape[axis] == 0:
        raise ctx.error(f"cannot take {ctx.op_type} over axis {axis} of size 0")
    return axis


def _infer_arg(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, _DTYPES)
    shape = ctx.inputs[0].shape
    axis = _arg_axis(ctx)
    keep = ctx.attr("keepdims", 1)
    out = [1 if a == axis else d for a, d in enumerate(shape) if keep or a != axis]
    return [TensorSpec(out, np.int64)]


@register(["ArgMax", "ArgMin"], infer=_infer_arg)
def _prepare_arg(ctx: KernelContext) -> Launch:
    x = ctx.inputs[0]
    axis = _arg_axis(ctx)
    outer = int(np.prod(x.shape[:axis], dtype=np.int64))
    inner = int(np.prod(x.shape[axis + 1:], dtype=np.int64))
    n = x.shape[axis]
    k = blocks(ctx, outer, _NS_ARG * n) if inner == 1 else blocks(ctx, outer * inner, _NS_ARG_COLUMNS * n)
    return tiled(arg_extreme, (outer, n, inner, int(ctx.op_type == "ArgMin"),
                               int(ctx.attr("select_last_index", 0) != 0)), k,
                 (per_block(inner, x.dtype, k),))
