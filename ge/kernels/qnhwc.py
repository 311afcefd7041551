"""int8 feature maps in NHWC between integer ops (passes/nhwc_int8.py): TransData and the int8 ops of a QDQ
model's islands, on byte images [N, H, W, C4] (channels rounded up to 4; int8 values shifted by +128 to
uint8, the VNNI conv's operand, so every image is uint8 and `shift` says how to read it back).

    ge::TransData[src_format, dst_format, shift, channels]   NCHW 8-bit <-> NHWC byte image
    ge::QMaxPool[kernel_shape, strides, pads](x, [lut])      DQ -> MaxPool -> Q
    ge::QConcat[identity](x_0 .. x_k-1, luts)                DQ(x_i) .. -> Concat(axis 1) -> Q
    ge::QAdd[relu](a, as, azp, b, bs, bzp, ys, yzp)          DQ(a) + DQ(b) [-> Relu] -> Q

Each gives the bits of the float ops it stands for. DequantizeLinear is monotone (scale > 0), so a max of
dequantized values is the dequantized max, and Q(DQ(v)) of one 8-bit value is a 256-entry table (`lut`,
computed by the pass with quant.py's float32 formulas; none when it is the identity, as in SqueezeNet's
and ResNet-50's pools, quantized with their input's parameters). QAdd computes DQ, the float32 sum, the
Relu and Q with quant.py's float32 expressions, 16 elements a vector (simd_int8.ivqadd: one by one,
MobileNetV2's 10 Adds took 0.55 ms of 7.7, 2.4 ns an element). Shifted bytes keep their order, so
pools and tables read them as they are. Blocks take ranges of rows (positions for QConcat, flat ranges
for QAdd): no reduction crosses a block, the bits are the same for any block count.
Cost (`ge profile` of the int8 SqueezeNet, one core): QConcat 0.61 of 4.6 ms, mostly the scalar table
lookups of the input whose scale differs (~0.7 ns a byte; a copy runs ~10x faster); QMaxPool 0.14.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .blocks import G, blocks, tiled
from .registry import KernelContext, Launch, TensorSpec, register
from .simd_int8 import ivadd, ivqadd, ivsplat, ivstore_bytes
from .tiling import block_range

_Q8 = {np.dtype(np.uint8): (0, 255), np.dtype(np.int8): (-128, 127)}
_NS_BYTE = 0.5  # ns per byte moved, one thread (a scalar transpose; the pools and copies run faster)


def c4(c: int) -> int:
    """Channels of an NHWC byte image: C rounded up to 4 (vpdpbusd's operand)."""
    return -(-int(c) // 4) * 4


def _image(ctx: KernelContext, i: int, what: str = "x"):
    x = ctx.inputs[i]
    if x.dtype != np.uint8 or len(x.shape) != 4 or x.shape[3] % 4:
        raise ctx.error(f"{what} must be an NHWC byte image uint8 [N, H, W, C4], got {x.dtype}{list(x.shape)}")
    return x.shape


# -- TransData --------------------------------------------------------------------------------------

@njit(nogil=True, cache=True)
def to_nhwc(x, y, N, C, H, W, C4, shift, block_idx, block_dim):
    """y[n, h, w, c] = x[n, c, h, w] + shift; the channels past C hold shift (a zero value)."""
    r0, r1 = block_range(N * H, 1, block_idx, block_dim)
    for r in range(r0, r1):
        n, h = r // H, r % H
        yr = y[r * W * C4:(r + 1) * W * C4]
        yr[:] = np.uint8(shift)
        for c in range(C):
            xr = x[((n * C + c) * H + h) * W:((n * C + c) * H + h + 1) * W]
            for w in range(W):
                yr[w * C4 + c] = np.uint8(np.int32(xr[w]) + shift)


@njit(nogil=True, cache=True)
def to_nchw(x, y, N, C, H, W, C4, shift, block_idx, block_dim):
    """y[n, c, h, w] = x[n, h, w, c] - shift."""
    r0, r1 = block_range(N * H, 1, block_idx, block_dim)
    for r in range(r0, r1):
        n, h = r // H, r % H
        xr = x[r * W * C4:(r + 1) * W * C4]
        for c in range(C):
            yr = y[((n * C + c) * H + h) * W:((n * C + c) * H + h + 1) * W]
            for w in range(W):
                yr[w] = np.int32(xr[w * C4 + c]) - shift


def _formats(ctx: KernelContext):
    f = (ctx.attr("src_format"), ctx.attr("dst_format"))
    if f not in (("NCHW", "NHWC"), ("NHWC", "NCHW")):
        raise ctx.error(f"src_format -> dst_format {f[0]} -> {f[1]} is not supported: NCHW <-> NHWC")
    shift = int(ctx.attr("shift", 0))
    if shift not in (0, 128):
        raise ctx.error(f"shift {shift} is not supported: 0 (uint8), 128 (int8)")
    return f[1] == "NHWC", shift


def _infer_trans_data(ctx: KernelContext) -> list[TensorSpec]:
    to_image, shift = _formats(ctx)
    x = ctx.inputs[0]
    if to_image:
        if x.dtype not in _Q8 or len(x.shape) != 4:
            raise ctx.error(f"x must be 8-bit NCHW, got {x.dtype}{list(x.shape)}")
        N, C, H, W = x.shape
        return [TensorSpec((N, H, W, c4(C)), np.uint8)]
    N, H, W, C4 = _image(ctx, 0)
    C = int(ctx.attr("channels", C4))
    if not 0 < C <= C4 or c4(C) != C4:
        raise ctx.error(f"channels {C} do not fit an image of {C4}")
    return [TensorSpec((N, C, H, W), np.int8 if shift else np.uint8)]


@register("TransData", domain="ge", infer=_infer_trans_data)
def _prepare_trans_data(ctx: KernelContext) -> Launch:
    to_image, shift = _formats(ctx)
    if to_image:
        N, C, H, W = ctx.inputs[0].shape
    else:
        N, C, H, W = ctx.outputs[0].shape
    C4 = c4(C)
    bd = blocks(ctx, N * H, W * C4 * _NS_BYTE)
    return tiled(to_nhwc if to_image else to_nchw, (N, C, H, W, C4, shift), bd)


# -- QMaxPool ---------------------------------------------------------------------------------------

@njit(nogil=True, cache=True)
def qmaxpool(x, lut, y, geom, use_lut, block_idx, block_dim):
    N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl = (geom[0], geom[1], geom[2], geom[3], geom[4], geom[5], geom[6],
                                                  geom[7], geom[8], geom[9], geom[10], geom[11])
    r0, r1 = block_range(N * OH, 1, block_idx, block_dim)
    for r in range(r0, r1):
        n, oh = r // OH, r % OH
        for ow in range(OW):
            out = y[(r * OW + ow) * C:(r * OW + ow + 1) * C]
            out[:] = 0  # the least byte; every window holds an input position (pads < kernel)
            for kh in range(KH):
                h = oh * sh - pt + kh
                if h < 0 or h >= H:
                    continue
                for kw in range(KW):
                    w = ow * sw - pl + kw
                    if w < 0 or w >= W:
                        continue
                    xi = x[((n * H + h) * W + w) * C:((n * H + h) * W + w + 1) * C]
                    for c in range(C):
                        out[c] = max(out[c], xi[c])
            if use_lut:
                for c in range(C):
                    out[c] = lut[out[c]]


def _pool_geom(ctx: KernelContext):
    N, H, W, C = _image(ctx, 0)
    KH, KW = (int(k) for k in ctx.attr("kernel_shape"))
    sh, sw = (int(s) for s in ctx.attr("strides", [1, 1]))
    pt, pl, pb, pr = (int(p) for p in ctx.attr("pads", [0, 0, 0, 0]))
    if max(pt, pb) >= KH or max(pl, pr) >= KW:
        raise ctx.error(f"pads {[pt, pl, pb, pr]} must be smaller than the kernel {[KH, KW]}")
    OH, OW = (H + pt + pb - KH) // sh + 1, (W + pl + pr - KW) // sw + 1
    return np.array([N, H, W, C, OH, OW, KH, KW, sh, sw, pt, pl], np.int64)


def _check_lut(ctx: KernelContext, i: int) -> None:
    if ctx.has(i) and (ctx.inputs[i].dtype != np.uint8 or tuple(ctx.inputs[i].shape) != (256,)):
        raise ctx.error(f"input {i} (the table) must be uint8 [256], got {ctx.inputs[i].dtype}{list(ctx.inputs[i].shape)}")


def _infer_qmaxpool(ctx: KernelContext) -> list[TensorSpec]:
    g = _pool_geom(ctx)
    _check_lut(ctx, 1)
    return [TensorSpec((g[0], g[4], g[5], g[3]), np.uint8)]


@register("QMaxPool", domain="ge", infer=_infer_qmaxpool)
def _prepare_qmaxpool(ctx: KernelContext) -> Launch:
    g = _pool_geom(ctx)
    bd = blocks(ctx, int(g[0] * g[4]), int(g[5] * g[3] * g[6] * g[7]) * 0.1)
    return tiled(qmaxpool, (g, int(ctx.has(1))), bd, inputs=(0, 1 if ctx.has(1) else 0))


# -- QConcat ----------------------------------------------------------------------------------------

@njit(nogil=True, cache=True)
def qconcat(*a):
    """a = (x_0 .. x_k-1, luts, y, widths, identity, block_idx, block_dim): y's position p = x_0's p ++ x_1's
    p ++ ..., each through its table luts[i] unless identity[i]."""
    xs, luts, y, widths, ident = a[:-6], a[-6], a[-5], a[-4], a[-3]
    C = 0
    for i in range(len(xs)):
        C += widths[i]
    p0, p1 = block_range(y.size // C, 1, a[-2], a[-1])
    for p in range(p0, p1):
        off = p * C
        for i in range(len(xs)):
            w = widths[i]
            src, dst = xs[i][p * w:(p + 1) * w], y[off:off + w]
            if ident[i]:
                dst[:] = src
            else:
                t = luts[i * 256:(i + 1) * 256]
                for c in range(w):
                    dst[c] = t[src[c]]
            off += w


def _infer_qconcat(ctx: KernelContext) -> list[TensorSpec]:
    k = len(ctx.inputs) - 1
    shapes = [_image(ctx, i, f"input {i}") for i in range(k)]
    if k < 1 or any(s[:3] != shapes[0][:3] for s in shapes):
        raise ctx.error(f"images {[list(s) for s in shapes]} differ in N, H, W")
    lut = ctx.inputs[k]
    if lut.dtype != np.uint8 or tuple(lut.shape) != (k * 256,) or len(ctx.attr("identity", [])) != k:
        raise ctx.error(f"the last input must hold {k} uint8 tables of 256 and `identity` {k} flags")
    return [TensorSpec(shapes[0][:3] + (sum(s[3] for s in shapes),), np.uint8)]


@register("QConcat", domain="ge", infer=_infer_qconcat)
def _prepare_qconcat(ctx: KernelContext) -> Launch:
    k = len(ctx.inputs) - 1
    widths = np.array([ctx.inputs[i].shape[3] for i in range(k)], np.int64)
    ident = np.array([int(bool(f)) for f in ctx.attr("identity")], np.int64)
    N, H, W, C = ctx.outputs[0].shape
    return tiled(qconcat, (widths, ident), blocks(ctx, N * H * W, C * 0.3))


# -- QAdd -------------------------------------------------------------------------------------------

@njit(nogil=True, cache=True)
def qadd(a, as_, azp, b, bs, bzp, ys, yzp, y, a_off, b_off, y_off, relu, qmin, qmax, block_idx, block_dim):
    """y = Q([Relu](DQ(a) + DQ(b))) in quant.py's float32 steps, on shifted bytes."""
    lo, hi = block_range(y.size, G, block_idx, block_dim)
    sa, za, sb, zb = as_[0], np.float32(azp[0]), bs[0], np.float32(bzp[0])
    sy, zy, qlo, qhi = ys[0], np.float32(yzp[0]), np.float32(qmin), np.float32(qmax)
    zero = np.float32(0.0)
    k = lo
    while k + 16 <= hi:   # 16 a vector (simd_int8.ivqadd, the same float32 steps); the tail one by one
        ivstore_bytes(y, k, ivadd(ivqadd(a, b, k, a_off, za, sa, b_off, zb, sb, sy, zy, qlo, qhi, relu),
                                  ivsplat(y_off)))
        k += 16
    for k in range(k, hi):
        s = (np.float32(np.int32(a[k]) - a_off) - za) * sa + (np.float32(np.int32(b[k]) - b_off) - zb) * sb
        if relu:
            s = max(s, zero)
        y[k] = np.uint8(np.int32(min(max(np.rint(s / sy) + zy, qlo), qhi)) + y_off)


def _infer_qadd(ctx: KernelContext) -> list[TensorSpec]:
    if len(ctx.inputs) != 8 or not all(ctx.has(i) for i in range(8)):
        raise ctx.error("needs a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point")
    a, b = _image(ctx, 0, "a"), _image(ctx, 3, "b")
    if a != b:
        raise ctx.error(f"a {list(a)} and b {list(b)} differ")
    for i in (1, 4, 6):
        if ctx.inputs[i].dtype != np.float32 or ctx.inputs[i].size != 1:
            raise ctx.error(f"input {i} must be one float32 scale")
    for i in (2, 5, 7):
        if ctx.inputs[i].dtype not in _Q8 or ctx.inputs[i].size != 1:
            raise ctx.error(f"input {i} must be one 8-bit zero point")
    return [TensorSpec(a, np.uint8)]


@register("QAdd", domain="ge", infer=_infer_qadd)
def _prepare_qadd(ctx: KernelContext) -> Launch:
    off = [128 if ctx.inputs[i].dtype == np.int8 else 0 for i in (2, 5, 7)]
    qmin, qmax = _Q8[ctx.inputs[7].dtype]
    return tiled(qadd, (*off, int(bool(ctx.attr("relu", 0))), float(qmin), float(qmax)),
                 blocks(ctx, ctx.outputs[0].size, 1.0))
