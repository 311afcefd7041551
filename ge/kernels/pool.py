"""Pooling: MaxPool (with Indices), AveragePool, LpPool and the Global* pools.

MaxPool and AveragePool over 1-D and 2-D float windows with strides 1 or 2, undilated, run pool_plane.py's
kernel (straight from the input, taps reduced in registers); a window covering the whole input runs as a
reduction (reduce.py), like the Global* pools.

One window walker serves every other windowed pool of 1, 2 or 3 spatial dims (fewer dims are padded in
front with size-1 dims, so there is one compiled kernel per dtype). It builds an output row at a time:
1. The output row starts at the pool's identity (-inf or the dtype's min for max, 0 for sums).
2. For each (kd, kh) tap whose input row is inside the image, that row is copied into a workspace row
   padded with the identity on both sides and split into its stride phases: padded column P lands at
   (P % SW, P // SW). Every kw tap is then ONE contiguous run over the whole output row,
       y[ow] = f(y[ow], phase[kw*DW % SW][ow + kw*DW // SW])
   with no bounds tests and no strided loads (neither vectorizes). MaxPool and AveragePool fuse taps
   three (or two) at a time, so y is read and written once per three taps.
3. The row is finished: averages divide by a separable count (taps inside the image per dim, or inside
   the explicit padding when count_include_pad=1; windows that ceil_mode lets run past the padding do
   not count the overhang, as in onnxruntime and PyTorch), Lp pools take the p-th root.
MaxPool's Indices are flat input indices, row-major or (storage_order=1) column-major over the spatial
dims, of the first maximum in window order.

Output sizes follow the ONNX spec: explicit pads with floor or ceil (a ceil window that would start in
the end padding is dropped), or auto_pad SAME_UPPER/SAME_LOWER (out = ceil(in / stride)) and VALID.

GlobalAveragePool and GlobalMaxPool are reductions over the spatial dims (reduce.py, whose contiguous
row sums vectorize); GlobalLpPool is the walker with one window covering the image.

Timings, float32, one core, best of 30 (onnxruntime, one thread, in brackets), walker -> pool_plane:
MaxPool 3x3/2 on 64 x 112 x 112 0.42 -> 0.28 ms (0.16), on 256 x 27 x 27 0.35 -> 0.09 (0.05);
MaxPool 2x2/2 on 512 x 14 x 14 0.23 -> 0.07 (0.03); MaxPool 3x3/1 on 1024 x 7 x 7 0.52 -> 0.13 (0.03: one
vector of 16 lanes per 7-wide row, every load masked); AveragePool 3x3/1 on 576 x 14 x 14 0.75 -> 0.17
(0.06); AveragePool 7x7 on 1024 x 7 x 7 (a reduction) 0.17 -> 0.006 (0.014).

Blocks (AI cores): the walker splits the NC*OD*OH output rows (a window never spans two rows' outputs),
each block with its own phase row in the workspace, a cache line apart (blocks.per_block: sharing the
boundary line made 2 blocks on 2 threads slower than one block); the global pools split as reductions
(reduce.py). Measured, 1x64x112x112 3x3/2 pad 1, one thread vs 2 blocks on 2 threads, best of 31:
MaxPool 434 -> 282 us, AveragePool 441 -> 337 us (medians are noisier on this shared machine).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from numba import njit

from .reduce import MAX as R_MAX
from .reduce import MEAN as R_MEAN
from .reduce import NONE as R_NONE
from .reduce import SUM as R_SUM
from .reduce import identity, reduce_launch
from ..ir.dtypes import HALF
from . import pool_geom as pg
from . import pool_half, pool_plane
from .half import native16
from .blocks import LINE, blocks, tiled
from .registry import KernelContext, Launch, TensorSpec, register
from .tiling import block_range

MAXP, MAXIDX, AVG, LP1, LP2, LPP = range(6)
# ns, one thread, float32 (blocks.MIN_BLOCK_NS): per output and window tap (MaxPool/AveragePool; with
# Indices; LpPool with pow per tap), and per input element loaded into the phase row
_NS_TAP, _NS_TAP_IDX, _NS_TAP_LP, _NS_LOAD = 0.15, 0.8, 20.0, 0.2
_NS_PLANE_TAP = 0.1  # pool_plane: per output and tap (0.03-0.25 measured above)
U = np.uint64
# layout of the geometry array: g[0] = N*C, then 3 entries (d, h, w) per field
IN, OUT, K, S, DIL, PAD, CLO, CHI = range(8)


@njit(nogil=True, cache=True, inline="always")
def _tap(src, sb, y, yb, n, mode, p):
    """One window tap over a run of n outputs: y[yb + t] = f(y[yb + t], src[sb + t])."""
    sb, yb = U(sb), U(yb)
    if mode == MAXP:
        for t in range(U(n)):
            v = src[sb + t]
            y[yb + t] = v if v > y[yb + t] else y[yb + t]
    elif mode == AVG:
        for t in range(U(n)):
            y[yb + t] += src[sb + t]
    elif mode == LP1:
        for t in range(U(n)):
            y[yb + t] += abs(src[sb + t])
    elif mode == LP2:
        for t in range(U(n)):
            v = src[sb + t]
            y[yb + t] += v * v
    else:
        for t in range(U(n)):
            y[yb + t] += abs(src[sb + t]) ** p


@njit(nogil=True, cache=True, inline="always")
def _tap3(src, b0, b1, b2, y, yb, n, mode):
    """Three taps fused (MAXP or AVG): y is read and written once, not three times."""
    b0, b1, b2, yb = U(b0), U(b1), U(b2), U(yb)
    if mode == MAXP:
        for t in range(U(n)):
            v0, v1, v2, m = src[b0 + t], src[b1 + t], src[b2 + t], y[yb + t]
            m = v0 if v0 > m else m
            m = v1 if v1 > m else m
            y[yb + t] = v2 if v2 > m else m
    else:
        for t in range(U(n)):
            y[yb + t] += src[b0 + t] + src[b1 + t] + src[b2 + t]


@njit(nogil=True, cache=True, inline="always")
def _tap2(src, b0, b1, y, yb, n, mode):
    """Two taps fused (MAXP or AVG), for 2-wide windows and the rest after triples."""
    b0, b1, yb = U(b0), U(b1), U(yb)
    if mode == MAXP:
        for t in range(U(n)):
            v0, v1, m = src[b0 + t], src[b1 + t], y[yb + t]
            m = v0 if v0 > m else m
            y[yb + t] = v1 if v1 > m else m
    else:
        for t in range(U(n)):
            y[yb + t] += src[b0 + t] + src[b1 + t]


@njit(nogil=True, cache=True, inline="always")
def _tap_idx(src, sb, y, idx, yb, n, ib, ist):
    """A MaxPool tap that also records where the max came from: input index ib + t * ist."""
    sb, yb = U(sb), U(yb)
    for t in range(U(n)):
        v = src[sb + t]
        if v > y[yb + t]:
            y[yb + t] = v
            idx[yb + t] = ib + np.int64(t) * ist


@njit(nogil=True, cache=True, inline="always")
def _load_row(x, xr, IW, SW, PW, Lq, pp):
    """Padded column P = c + PW of input row x[xr:xr + IW] goes to pp[(P % SW) * Lq + P // SW]."""
    if SW == 1:
        xb, pb = U(xr), U(PW)
        for c in range(U(IW)):
            pp[pb + c] = x[xb + c]
    elif SW == 2:  # both phases in one loop: a complete interleave group vectorizes
        m0 = (PW + 1) // 2  # first m with 2m - PW >= 0
        m1 = (IW + PW) // 2  # past the last m with 2m + 1 - PW <= IW - 1
        if m1 > m0:
            xb, L = U(xr - PW), U(Lq)
            for m in range(U(m0), U(m1)):
                pp[m] = x[xb + U(2) * m]
                pp[L + m] = x[xb + U(2) * m + U(1)]
        for c in (0, IW - 1):  # the one column at each end the pair loop can miss
            P = c + PW
            pp[(P % 2) * Lq + P // 2] = x[xr + c]
    else:
        for c in range(IW):
            P = c + PW
            pp[(P % SW) * Lq + P // SW] = x[xr + c]


@njit(nogil=True, cache=True)
def pool(x, y, idx, pp, mode, p, ident, col_major, g, block_idx, block_dim):
    """Pool x (NC, ID, IH, IW) into y (NC, OD, OH, OW); MAXIDX also writes idx (flat input indices).
    Blocks split the NC*OD*OH output rows; pp holds one padded row per block.

    pp holds the padded input row split in SW phase rows of Lq values; tap kw starts at
    pp[(kw*DW % SW) * Lq + kw*DW // SW] (measured: phases 3x over strided loads, fused taps 2x). Hot
    loops index with unsigned ints (U): numba wraps negative signed indices, and that select stops
    LLVM vectorizing (measured 6x).
    """
    NC = g[0]
    ID, IH, IW = g[1 + 3 * IN], g[2 + 3 * IN], g[3 + 3 * IN]
    OD, OH, OW = g[1 + 3 * OUT], g[2 + 3 * OUT], g[3 + 3 * OUT]
    KD, KH, KW = g[1 + 3 * K], g[2 + 3 * K], g[3 + 3 * K]
    SD, SH, SW = g[1 + 3 * S], g[2 + 3 * S], g[3 + 3 * S]
    DD, DH, DW = g[1 + 3 * DIL], g[2 + 3 * DIL], g[3 + 3 * DIL]
    PD, PH, PW = g[1 + 3 * PAD], g[2 + 3 * PAD], g[3 + 3 * PAD]
    CLD, CLH, CLW = g[1 + 3 * CLO], g[2 + 3 * CLO], g[3 + 3 * CLO]
    CHD, CHH, CHW = g[1 + 3 * CHI], g[2 + 3 * CHI], g[3 + 3 * CHI]
    per = pp.size // block_dim
    pp = pp[block_idx * per:(block_idx + 1) * per]
    Lq = per // SW
    pp[:] = ident  # the padding; rows only ever overwrite the image columns
    start = np.empty(KW, np.int64)
    for kw in range(KW):
        start[kw] = (kw * DW % SW) * Lq + kw * DW // SW
    rcw = np.zeros(OW)  # per output column: 1 / how many kw taps count towards an average
    for ow in range(OW):
        for kw in range(KW):
            if CLW <= ow * SW + kw * DW - PW < CHW:
                rcw[ow] += 1
        rcw[ow] = 1 / rcw[ow]
    fuse = mode == MAXP or mode == AVG
    cst = ID * IH if col_major else 1  # input index step of one column
    isz = ID * IH * IW
    r0, r1 = block_range(NC * OD * OH, 1, block_idx, block_dim)
    for row in range(r0, r1):
        nc, od, oh = row // (OD * OH), row // OH % OD, row % OH
        yr = row * OW
        for t in range(U(OW)):
            y[U(yr) + t] = ident
        if mode == MAXIDX:
            idx[yr:yr + OW] = -1  # stays -1 only where a window holds no number above -inf
        cdh = 0  # counted (kd, kh) taps
        for kd in range(KD):
            i_d = od * SD + kd * DD - PD
            for kh in range(KH):
                i_h = oh * SH + kh * DH - PH
                if CLD <= i_d < CHD and CLH <= i_h < CHH:
                    cdh += 1
                if i_d < 0 or i_d >= ID or i_h < 0 or i_h >= IH:
                    continue
                xr = nc * isz + (i_d * IH + i_h) * IW
                _load_row(x, xr, IW, SW, PW, Lq, pp)
                if mode == MAXIDX:
                    i0 = nc * isz + (i_d + i_h * ID if col_major else (i_d * IH + i_h) * IW)
                    for kw in range(KW):
                        _tap_idx(pp, start[kw], y, idx, yr, OW, i0 + (kw * DW - PW) * cst, SW * cst)
                    continue
                kw = 0
                while fuse and kw + 3 <= KW:
                    _tap3(pp, start[kw], start[kw + 1], start[kw + 2], y, yr, OW, mode)
                    kw += 3
                if fuse and kw + 2 == KW:
                    _tap2(pp, start[kw], start[kw + 1], y, yr, OW, mode)
                    kw += 2
                for k in range(kw, KW):
                    _tap(pp, start[k], y, yr, OW, mode, p)
        yb = U(yr)
        if mode == AVG:
            rdh = 1.0 / cdh
            for t in range(U(OW)):
                y[yb + t] = y[yb + t] * (rdh * rcw[t])
        elif mode == LP2:
            for t in range(U(OW)):
                y[yb + t] = np.sqrt(y[yb + t])
        elif mode == LPP:
            for t in range(U(OW)):
                y[yb + t] = y[yb + t] ** (1.0 / p)


def _window(ctx: KernelContext, kernel=None):
    """(out dims, kernel, strides, dilations, begin pads, end pads) of a windowed pool, per spatial dim."""
    x = ctx.inputs[0]
    if len(x.shape) < 3:
        raise ctx.error(f"input must be (N, C, spatial...), got shape {x.shape}")
    sp = x.shape[2:]
    n = len(sp)
    k = list(kernel or ctx.attr("kernel_shape") or [])
    s = list(ctx.attr("strides") or [1] * n)
    d = list(ctx.attr("dilations") or [1] * n)
    pads = list(ctx.attr("pads") or [0] * (2 * n))
    if not len(k) == len(s) == len(d) == n or len(pads) != 2 * n:
        raise ctx.error(f"kernel_shape/strides/dilations/pads do not fit {n} spatial dims")
    if n > 3:
        raise ctx.error(f"pooling over {n} spatial dims is not supported (1 to 3)")
    auto = ctx.attr("auto_pad", "NOTSET")
    ceil = ctx.attr("ceil_mode", 0)
    out, pb, pe = [], [], []
    for i in range(n):
        ek = (k[i] - 1) * d[i] + 1
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            o = -(-sp[i] // s[i])
            total = max((o - 1) * s[i] + ek - sp[i], 0)
            b = total // 2 if auto == "SAME_UPPER" else total - total // 2
            out.append(o), pb.append(b), pe.append(total - b)
        elif auto == "VALID":
            out.append((sp[i] - ek) // s[i] + 1), pb.append(0), pe.append(0)
        elif auto in ("NOTSET", ""):
            b, e = pads[i], pads[i + n]
            span = sp[i] + b + e - ek
            o = (-(-span // s[i]) if ceil else span // s[i]) + 1
            if ceil and (o - 1) * s[i] >= sp[i] + b:  # the last window would start in the end padding
                o -= 1
            out.append(o), pb.append(b), pe.append(e)
        else:
            raise ctx.error(f"unknown auto_pad {auto!r}")
        if out[-1] < 1 or k[i] < 1 or s[i] < 1 or d[i] < 1:
            raise ctx.error(f"window {k} strides {s} dilations {d} pads {pads} do not fit input {x.shape}")
    return out, k, s, d, pb, pe


def _pool_launch(ctx: KernelContext, mode: int, p: float = 0.0, kernel=None) -> Launch:
    x = ctx.inputs[0]
    if x.dtype in HALF:  # a 16-bit feature map (drop_half_casts)
        return pool_half.launch16(ctx, mode, _window(ctx, kernel))
    out, k, s, d, pb, pe = _window(ctx, kernel)
    sp = list(x.shape[2:])
    include = mode == AVG and ctx.attr("count_include_pad", 0)
    lead = [1] * (3 - len(sp))  # pad to 3 spatial dims in front
    lead0 = [0] * len(lead)
    fields = [sp, out, k, s, d, pb,
              [-b for b in pb] if include else [0] * len(sp),
              [i + e for i, e in zip(sp, pe)] if include else sp]
    g = [x.shape[0] * x.shape[1]]
    for f, v in enumerate(fields):
        g += (lead0 if f in (PAD, CLO) else lead) + list(v)
    rows = g[0] * int(np.prod(out[:-1]))  # NC * OD * OH
    taps = int(np.prod(k))
    if mode in (MAXP, AVG) and x.dtype in _FLOATS:
        if out == [1] * len(sp) and list(k) == sp and not any(pb + pe) and set(d) == {1}:  # one window
            return reduce_launch(ctx, x.shape, range(2, len(x.shape)), x.dtype, *_GLOBAL[mode])
        if len(sp) <= 2 and pool_plane.fits(s, d):
            return _plane_launch(ctx, mode, g, rows, taps)
    nb = blocks(ctx, rows, out[-1] * taps * (_NS_TAP_LP if mode == LPP else _NS_TAP_IDX if mode == MAXIDX else _NS_TAP)
                + (taps // k[-1]) * sp[-1] * _NS_LOAD)
    ws = () if mode == MAXIDX else (TensorSpec((1,), np.int64),)  # idx slot when Indices is absent
    span = max(pb[-1] + sp[-1], (out[-1] - 1) * s[-1] + (k[-1] - 1) * d[-1] + 1)  # padded row length
    lq = -(-span // s[-1]) + (LINE // x.dtype.itemsize if nb > 1 else 0)  # + a line no other block writes
    ws += (TensorSpec((s[-1] * lq * nb,), x.dtype),)  # a padded row in stride phases per block
    ident = identity(R_MAX, x.dtype) if mode in (MAXP, MAXIDX) else identity(R_SUM, x.dtype)
    return tiled(pool, (mode, float(p), ident, int(ctx.attr("storage_order", 0) != 0),
                        np.array(g, np.int64)), nb, ws)


_GLOBAL = {MAXP: (R_MAX, R_NONE), AVG: (R_SUM, R_MEAN)}  # a window covering the input: a reduction


def _plane_launch(ctx: KernelContext, mode: int, g: list, rows: int, taps: int) -> Launch:
    """pool_plane.pool2d's launch; g is the walker's geometry array (this module's layout)."""
    x = ctx.inputs[0]
    (IH, IW), (OH, OW), (KH, KW), (SH, SW), _, (PH, PW), (CLH, CLW), (CHH, CHW) = \
        (g[2 + 3 * f:4 + 3 * f] for f in range(8))
    lanes = 64 // x.dtype.itemsize
    flat = IH > 1 and pool_plane.flat(IH, IW, OH, OW, KW, SH, SW, PW, lanes)
    geom = np.empty(pg.SIZE, np.int64)
    geom[[pg.NC, pg.H, pg.W, pg.OH, pg.OW, pg.FLAT]] = g[0], IH, IW, OH, OW, int(flat)
    geom[[pg.KH, pg.KW, pg.SH, pg.SW, pg.PH, pg.PW, pg.CLH, pg.CHH]] = KH, KW, SH, SW, PH, PW, CLH, CHH
    rc = np.zeros(OW + lanes, x.dtype)  # per output column: 1 / counted kw taps (averages)
    for ow in range(OW):
        rc[ow] = 1 / max(1, sum(CLW <= ow * SW + kw - PW < CHW for kw in range(KW)))
    if flat:
        rc = pool_plane.flat_aux(IH, IW, KH, PH, CLH, CHH, rc, mode, x.dtype, lanes)
    nb = blocks(ctx, g[0] if flat else rows, OW * taps * _NS_PLANE_TAP * (OH if flat else 1))
    ident = identity(R_MAX if mode == MAXP else R_SUM, x.dtype)
    return tiled(pool_plane.pool2d, (rc, mode, ident, geom), nb, inputs=(0,))


def _infer_window(ctx: KernelContext, kernel=None) -> list[TensorSpec]:
    x = ctx.inputs[0]
    out = _window(ctx, kernel)[0]
    specs = [TensorSpec(x.shape[:2] + tuple(out), x.dtype)]
    if ctx.op_type == "MaxPool" and ctx.n_outputs > 1:
        specs.append(TensorSpec(specs[0].shape, np.int64))
    return specs


_FLOATS = (np.float32, np.float64)


def _infer_pool(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, _FLOATS + (HALF if ctx.op_type != "LpPool" else ()) + ((np.int8, np.uint8) if ctx.op_type == "MaxPool" else ()))
    return _infer_window(ctx)


@register("MaxPool", infer=_infer_pool)
def _prepare_maxpool(ctx: KernelContext) -> Launch:
    return _pool_launch(ctx, MAXIDX if ctx.n_outputs > 1 else MAXP)


@register("AveragePool", infer=_infer_pool)
def _prepare_avgpool(ctx: KernelContext) -> Launch:
    return _pool_launch(ctx, AVG)


native16("MaxPool", when=lambda n: pool_half.fits16(n.attrs))   # 16-bit feature maps: pool_half.py
native16("AveragePool", when=lambda n: pool_half.fits16(n.attrs))


def _lp_mode(p: float) -> int:
    return LP1 if p == 1 else LP2 if p == 2 else LPP


@register("LpPool", infer=_infer_pool)
def _prepare_lppool(ctx: KernelContext) -> Launch:
    p = float(ctx.attr("p", 2))
    return _pool_launch(ctx, _lp_mode(p), p)


# -- global pools -----------------------------------------------------------------------------------

def _infer_global(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, _FLOATS)
    x = ctx.inputs[0]
    if len(x.shape) < 2:
        raise ctx.error(f"input must be (N, C, spatial...), got shape {x.shape}")
    return [TensorSpec(x.shape[:2] + (1,) * (len(x.shape) - 2), x.dtype)]


@register("GlobalAveragePool", infer=_infer_global)
def _prepare_global_avg(ctx: KernelContext) -> Launch:
    x = ctx.inputs[0]
    return reduce_launch(ctx, x.shape, range(2, len(x.shape)), x.dtype, R_SUM, R_MEAN)


@register("GlobalMaxPool", infer=_infer_global)
def _prepare_global_max(ctx: KernelContext) -> Launch:
    x = ctx.inputs[0]
    return reduce_launch(ctx, x.shape, range(2, len(x.shape)), x.dtype, R_MAX, R_NONE)


@register("GlobalLpPool", infer=_infer_global)
def _prepare_global_lp(ctx: KernelContext) -> Launch:
    x = ctx.inputs[0]
    if len(x.shape) < 3:
        raise ctx.error(f"input must be (N, C, spatial...), got shape {x.shape}")
    p = float(ctx.attr("p", 2))
    whole = replace(ctx, attrs={})  # one window covering the image: no pads, strides or dilations
    return _pool_launch(whole, _lp_mode(p), p, kernel=list(x.shape[2:]))
