"""IMPLICIT on a 16-bit feature map: a packed conv (ge::FusedConv with `weight_shape`) whose input, residual
Z and output are float16 or bfloat16 (uint16 bits), weights, bias and sums float32 (the Cube unit's
16-bit in, float32 accumulate, 16-bit out).

Without it, a conv under allow_mix_precision reads a float32 copy of its 16-bit input and writes a float32
result that a Cast rounds: both full-size float32 tensors are live around every conv, so the planned
feature map stayed 0.83-1.20x float32's. Here the 16-bit values are converted in the kernel, a tile at a
time, into float32 scratch a few hundred KiB in size:
- input: the tile's input rows are copied to float32 (vcvtph2ps, or bfloat16's shift) in IMPLICIT's padded
  or compact layout (conv_implicit.input_layout); a conv that reads its input in place in float32 copies
  it here too, as if padded by 0;
- output: each panel of 2 vectors of channels is summed into scratch [channels, tile positions] by
  conv_implicit's register tiles (_panels, the same FMA chains in the same order), then bias, Z (converted)
  and the activation are added in float32 and the result is rounded once to 16 bits.
So the bits equal those of the float32 conv between Casts (up to the sign of a zero), whatever the blocks.
Tiles are small (COPY_BYTES of input copy, OUT_POSITIONS outputs: both are scratch of the feature map,
and branches on parallel streams hold theirs at once), so more of them sweep the weights than IMPLICIT's.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from . import conv_geom as cg
from .conv_implicit import COMPACT, IN_PLACE, PADDED, _panels, input_layout
from .conv_lowering import _channel_stride, _valid
from .epilogue import NONE, RELU, activation_args, epilogue
from .half import BF16, F16, add_half_run, half_value, narrow_act_run, narrow_run, widen_run
from .registry import KernelContext, Launch, TensorSpec

PANEL = 32  # output channels a panel sums into scratch: 2 float32 vectors (conv_implicit's register tile)
# A tile of output rows: at most OUT_POSITIONS outputs (scratch PANEL x this: 16 KiB) and an input copy of
# at most COPY_BYTES, unless that leaves fewer than MIN_POSITIONS outputs (each tile sweeps every panel of
# weights). Planned feature maps of the light models under allow_mix_precision (bench/caps, compile only):
# uncapped, a stem conv's tile held every output row (1.8 MiB of scratch on SqueezeNet: its peak); with half
# of A_BYTES of copy and 256 outputs Inception v1 / v2 planned 0.86x / 0.90x float32's, their parallel
# branches' copies all live at once; 32 KiB and 128: 0.50x / 0.49x; with MIN_POSITIONS 32: 0.50x / 0.53x
# (Inception v2's 3x3s on 14 x 14 with 576 input channels: 3 rows, 178 KB of copy per block); with 16:
# 0.51x / 0.49x, and Inception v2 at one core 47.3 vs 46.8 ms (taskset -c 0, 30 alternating rounds)
COPY_BYTES = 1 << 15
OUT_POSITIONS = 128
MIN_POSITIONS = 16


@njit(nogil=True, cache=True)
def layout16(H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw):
    """input_layout, with an in-place read turned into a copy (the kernel reads float32)."""
    how, Wp, ush, usw, ext = input_layout(H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw)
    if how == IN_PLACE:
        return PADDED, (OW - 1) * sw + (KW - 1) * dw + 1, sh, sw, ext
    return how, Wp, ush, usw, ext


@njit(nogil=True, cache=True)
def _copy16(x, xo, p, kind, C, H, W, ph, pw, sh, sw, i0, R, Wq, cs):
    """p[c*cs + i*Wq + j] = x's channel c at row (i0 + i)*sh - ph, column j*sw - pw as float32, 0 outside."""
    lo, hi = _valid(-pw, sw, W, Wq)
    if ph > 0 or lo > 0 or hi < Wq or (i0 + R - 1) * sh - ph >= H:  # zeros where the rows miss the input
        for j in range(np.uint64(C * cs)):
            p[j] = 0.0
    for c in range(C):
        for i in range(R):
            ih = (i0 + i) * sh - ph
            if ih < 0 or ih >= H:
                continue
            s, d = np.uint64(xo + (c * H + ih) * W + lo * sw - pw), np.uint64(c * cs + i * Wq + lo)
            if sw == 1:
                widen_run(x, s, p, d, hi - lo, kind)
            else:
                for j in range(np.uint64(hi - lo)):
                    p[d + j] = half_value(x[s + j * np.uint64(sw)], kind)


@njit(nogil=True, cache=True)
def implicit16(x, w, b, z, y, ws, lw, kind, q0, q1, c0, c1, s0, s1, G, Cg, Mg, H, W, OH, OW, KH, KW,
               sh, sw, ph, pw, dh, dw, tile, has_b, has_z, act, p0, p1):
    """conv_implicit.implicit with x, z and y 16-bit float bits of `kind`; ws: the block's float32 scratch,
    the input copy (lw elements) then PANEL channels x a tile's positions."""
    L = PANEL // 2
    K, S, Mp = Cg * KH * KW, OH * OW, (Mg + L - 1) // L * L
    how, Wp, ush, usw, ext = layout16(H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw)
    cs = _channel_stride(tile if how == COMPACT else (tile - 1) * sh + ext, Wp)
    koff = np.empty(K, np.int64)
    for c in range(Cg):
        for kh in range(KH):
            for kw in range(KW):
                koff[(c * KH + kh) * KW + kw] = c * cs + kh * dh * Wp + kw * dw
    pb = np.empty(tile * OW, np.int64)
    for i in range(tile * OW):
        pb[i] = (i // OW) * ush * Wp + (i % OW) * usw
    a, acc = ws[:lw], ws[lw:]
    for q in range(q0, q1):
        g = q % G
        xo, yo, wo = q * Cg * H * W, q * Mg * S, g * K * Mp
        for oh0 in range(s0, s1, tile):
            rows = min(tile, s1 - oh0)
            npos = rows * OW
            if how == COMPACT:
                _copy16(x, xo, a, kind, Cg, H, W, 0, 0, sh, sw, oh0, rows, OW, cs)
            else:
                _copy16(x, xo, a, kind, Cg, H, W, ph, pw, 1, 1, oh0 * sh, (rows - 1) * sh + ext, Wp, cs)
            for j0 in range(c0, c1, PANEL):
                j1 = min(j0 + PANEL, c1)
                _panels(a, 0, pb, npos, koff, K, w, wo, acc, -j0 * npos, npos, Mp, Mg, j0, j1)
                for m in range(j0, min(j1, Mg)):
                    t, o = (m - j0) * npos, yo + m * S + oh0 * OW
                    bias = b[g * Mg + m] if has_b else 0.0
                    if has_z:  # (acc + b) + z, as epilogue adds them; then the activation alone
                        add_half_run(z, o, acc, t, npos, np.float32(bias), kind)
                        bias = 0.0
                    if act == NONE or act == RELU:  # one pass (ResNet-50's convs in one trace, one core, shared: 1.26x -> 1.02x float32's time)
                        narrow_act_run(acc, t, y, o, npos, np.float32(bias), act == RELU, kind)
                    else:
                        epilogue(acc, t, npos, 1.0, bias, acc, 0, 1.0, 0, act, p0, p1)
                        narrow_run(acc, t, y, o, npos, kind)


def plan16(geom, Cg: int, rows: int) -> tuple[int, int, int]:
    """(tile, input copy elements, scratch elements) of one block of `rows` output rows."""
    H, W, OH, OW = (int(v) for v in geom[[cg.H, cg.W, cg.OH, cg.OW]])
    KH, KW, sh, sw, ph, pw, dh, dw = (int(v) for v in geom[[cg.KH, cg.KW, cg.SH, cg.SW, cg.PH, cg.PW, cg.DH, cg.DW]])
    how, Wp, ush, _, ext = layout16(H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw)
    fit = max(1, (COPY_BYTES // (Cg * Wp * 4) - ext) // ush + 1)  # rows whose copy fits COPY_BYTES
    tile = min(rows, max(1, OUT_POSITIONS // OW), max(fit, -(-MIN_POSITIONS // OW)))
    lw = Cg * int(_channel_stride(tile if how == COMPACT else (tile - 1) * sh + ext, Wp))
    return tile, lw, lw + PANEL * tile * OW


def prepare16(ctx: KernelContext, geom, kernel, bd: int, split: int, rows: int) -> Launch:
    """The launch of `kernel` (conv.conv16) for a packed conv on a 16-bit x, in bd blocks of `split`
    (conv._conv_tiling's), each of at most `rows` output rows."""
    if ctx.attr("weight_shape") is None or ctx.inputs[1].dtype != np.float32:
        raise ctx.error(f"a {ctx.inputs[0].dtype} input needs float32 weights packed by pack_conv_weights "
                        "(weight_shape); other 16-bit convs compute between Casts (compute_in_float32)")
    if ctx.has(3) and ctx.inputs[3].dtype != ctx.inputs[0].dtype:
        raise ctx.error(f"Z is {ctx.inputs[3].dtype}, X {ctx.inputs[0].dtype}: both must be the same type")
    C, G = int(geom[cg.C]), int(geom[cg.GROUP])
    tile, _, per = plan16(geom, C // G, rows)
    has_b, has_z = ctx.has(2), ctx.has(3)
    act, p0, p1 = activation_args(ctx)
    kind = F16 if ctx.inputs[0].dtype == np.float16 else BF16
    return Launch(kernel, (geom, kind, int(has_b), int(has_z), act, p0, p1, tile, split),
                  (TensorSpec((bd * per,), np.float32),), (0, 1, 2 if has_b else 1, 3 if has_z else 0),
                  tiled=True, block_dim=bd)
