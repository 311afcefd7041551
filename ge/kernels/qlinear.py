"""MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv: quantized GEMMs and convs on gemm_int8.py.

One kernel per shape of op (matmul, conv) serves the integer form (int32 output) and the QLinear form
(requantized to the zero point's 8-bit type): `requant` picks the output stage, and the inputs the integer
form lacks (scales, bias) are stood in for by x (never read). Zero points: x / A per tensor; w per tensor
or per output channel, B per tensor or per column; scales the same (onnxruntime's QDQ models quantize
weights per channel). They are subtracted while the operands are copied to int16, so padding (zero in
q - zp) is plain zero padding and conv_lowering's `_im2col` unfolds the copy unchanged.

Convs: shapes and attributes come from conv.py's `_conv_shape` (the same rules as Conv, read through a
float32 view of the node's specs); per (image, group), each block takes a range of output rows
(od*OH + oh, SPATIAL in conv.py's words) in tiles whose im2col stays under COL_ELEMS elements, converts its
group's input channels and weights, unfolds, runs the GEMM and writes its rows of y. K (channels x taps)
is never split, and integer sums are exact anyway: the bits are the same for any block count.
MatMuls: numpy batch broadcasting (matmul.py's offsets); each block takes a range of rows of every batch.
"""
from __future__ import annotations

import dataclasses

import numpy as np
from numba import njit

from .blocks import own, per_block
from .conv import _conv_shape
from . import conv_geom as cg
from . import conv_depthwise_int8
from .conv_lowering import _im2col
from .conv_vnni import HAS_VNNI, MR, NR, packed_size, vnni_conv
from .gemm_int8 import igemm, multiplier, requantize, shift
from .matmul import _batch_offsets, _matmul_dims
from .qnhwc import c4
from .registry import KernelContext, Launch, TensorSpec
from .registry import register
from .tiling import block_dim_for, block_range, largest_share

COL_ELEMS = 1 << 19   # im2col tile: 1 MiB of int16
USE_VNNI = True  # False: QLinearConv always takes the int16 GEMM (the same bits, ~15x slower: for bisecting)
MIN_BLOCK_MACS = 1 << 17  # integer MACs run ~5 per ns here: ~25 us a block (blocks.MIN_BLOCK_NS)
_Q8 = {np.dtype(np.uint8): (0, 255), np.dtype(np.int8): (-128, 127)}


def _float_view(ctx: KernelContext, picks) -> KernelContext:
    """ctx with only inputs `picks`, as float32 specs: conv.py's and matmul.py's shape rules read them (a
    packed weight, pack_qconv_weights', is seen with its weight_shape)."""
    specs = [TensorSpec(ctx.inputs[i].shape, np.float32) for i in picks]
    attrs = dict(ctx.attrs)
    shape = attrs.pop("weight_shape", None)
    if shape is not None:
        shape = tuple(int(d) for d in shape)
        if len(shape) != 4 or min(shape) < 1 or tuple(ctx.inputs[3].shape) != (packed_size(*shape),):
            raise ctx.error(f"packed weights of shape {list(shape)} need {packed_size(*shape) if len(shape) == 4 else '?'}"
                            f" elements, got {list(ctx.inputs[3].shape)}")
        specs[1] = TensorSpec(shape, np.float32)
    return KernelContext(ctx.op_type, ctx.name, attrs, specs, [None] * len(specs), ctx.opset,
                         n_outputs=1, cores=ctx.cores)


def _check_q(ctx: KernelContext, i: int, what: str) -> None:
    if ctx.inputs[i].dtype not in _Q8:
        raise ctx.error(f"{what} has dtype {ctx.inputs[i].dtype}, supported: uint8, int8")


def _per(ctx: KernelContext, i: int, what: str, n: int, dtype=None) -> int:
    """1 (per tensor) or n (per channel / column) values in input i; 0 when it is absent."""
    if not ctx.has(i):
        return 0
    s = ctx.inputs[i]
    if dtype is not None and s.dtype != np.dtype(dtype):
        raise ctx.error(f"{what} has dtype {s.dtype}, expected {np.dtype(dtype)}")
    if s.size == 1 and len(s.shape) <= 1:
        return 1
    if n > 1 and tuple(s.shape) == (n,):
        return n
    raise ctx.error(f"{what} must be a scalar{f' or hold {n} values' if n > 1 else ''}, got shape {list(s.shape)}")


# -- convs --------------------------------------------------------------------------------------------

@njit(nogil=True, cache=True)
def qconv(x, xs, xzp, w, wsc, wzp, ys, yzp, b, y, xw, ww, col, acc, geom, has_xzp, n_wzp, n_ws, has_b,
          requant, has_yzp, qmin, qmax, relu, tile, block_idx, block_dim):
    N, C, D, H, W = geom[cg.N], geom[cg.C], geom[cg.D], geom[cg.H], geom[cg.W]
    M, OD, OH, OW = geom[cg.M], geom[cg.OD], geom[cg.OH], geom[cg.OW]
    KD, KH, KW, sd, sh, sw = geom[cg.KD], geom[cg.KH], geom[cg.KW], geom[cg.SD], geom[cg.SH], geom[cg.SW]
    pd, ph, pw, dd, dh, dw = geom[cg.PD], geom[cg.PH], geom[cg.PW], geom[cg.DD], geom[cg.DH], geom[cg.DW]
    G = geom[cg.GROUP]
    Cg, Mg, KT = C // G, M // G, KD * KH * KW
    K, plane, S = Cg * KT, D * H * W, OD * OH * OW
    t0, t1 = block_range(OD * OH, 1, block_idx, block_dim)
    if t0 >= t1:
        return
    xz = np.int32(xzp[0]) if has_xzp else 0
    for g in range(G):
        for m in range(Mg):
            wz = np.int32(wzp[g * Mg + m if n_wzp > 1 else 0]) if n_wzp else 0
            shift(w, (g * Mg + m) * K, K, wz, ww, m * K)
        for n in range(N):
            shift(x, (n * C + g * Cg) * plane, Cg * plane, xz, xw, 0)
            for r0 in range(t0, t1, tile):
                r1 = min(t1, r0 + tile)
                T = (r1 - r0) * OW
                _im2col(xw, 0, col, xw, False, r0, r1, Cg, D, H, W, OD, OH, OW, KD, KH, KW, sd, sh, sw,
                        pd, ph, pw, dd, dh, dw)
                igemm(ww, 0, col, 0, T, acc, 0, T, Mg, T, K)
                for m in range(Mg):
                    mo = g * Mg + m
                    yo = (n * M + mo) * S + r0 * OW
                    if requant:
                        mult = multiplier(xs[0], wsc[mo if n_ws > 1 else 0], ys[0])
                        z = np.float64(yzp[0]) if has_yzp else 0.0
                        lo = max(qmin, z) if relu else qmin  # Relu after the conv: Q(max(y, 0)) = max(Q(y), yzp)
                        requantize(acc, m * T, T, np.int32(b[mo]) if has_b else 0, mult, z, lo, qmax, y, yo)
                    else:
                        for i in range(T):
                            y[yo + i] = acc[m * T + i]


def _conv_parts(ctx: KernelContext, xi: int, wi: int):
    _check_q(ctx, xi, "x")
    _check_q(ctx, wi, "w")
    return _conv_shape(_float_view(ctx, (xi, wi)))


def _infer_conv_integer(ctx: KernelContext) -> list[TensorSpec]:
    _, out = _conv_parts(ctx, 0, 1)
    _per(ctx, 2, "x_zero_point", 1, ctx.inputs[0].dtype)
    _per(ctx, 3, "w_zero_point", out[1], ctx.inputs[1].dtype)
    return [TensorSpec(out, np.int32)]


def _quant_params(ctx: KernelContext, a: str, b: str, n: int):
    """A QLinear op's scales and zero points (inputs 1-2 of operand a, 4-5 of b with n per-channel values,
    6-7 of y) checked; the output's dtype (y_zero_point's, else a's)."""
    for i, what, cnt, dt in ((1, f"{a}_scale", 1, np.float32), (2, f"{a}_zero_point", 1, ctx.inputs[0].dtype),
                             (4, f"{b}_scale", n, np.float32), (5, f"{b}_zero_point", n, ctx.inputs[3].dtype),
                             (6, "y_scale", 1, np.float32), (7, "y_zero_point", 1, None)):
        if not ctx.has(i) and i in (1, 4, 6):
            raise ctx.error(f"{what} (input {i}) is required")
        _per(ctx, i, what, cnt, dt)
    dt = ctx.inputs[7].dtype if ctx.has(7) else ctx.inputs[0].dtype
    if dt not in _Q8:
        raise ctx.error(f"y_zero_point has dtype {dt}, supported: uint8, int8")
    return dt


def _layouts(ctx: KernelContext) -> tuple[bool, bool]:
    """(x NHWC, y NHWC): nhwc_int8's byte images [N, H, W, C4] (8-bit values shifted to uint8) on either side."""
    x, y = ctx.attr("x_layout", "NCHW"), ctx.attr("y_layout", "NCHW")
    for what, v in (("x_layout", x), ("y_layout", y)):
        if v not in ("NCHW", "NHWC"):
            raise ctx.error(f"{what} {v!r} is not supported: NCHW, NHWC")
    return x == "NHWC", y == "NHWC"


def _logical(ctx: KernelContext) -> KernelContext:
    """A QLinearConv's ctx with an NHWC x seen as the NCHW 8-bit tensor it holds (its zero point's dtype)."""
    x_nhwc, y_nhwc = _layouts(ctx)
    if not (x_nhwc or y_nhwc):
        return ctx
    shape, group = ctx.attr("weight_shape"), int(ctx.attr("group", 1))
    if group > 1 and shape is None and x_nhwc and y_nhwc:  # conv_depthwise_int8's case (_depthwise)
        shape = ctx.inputs[3].shape
    if shape is None or not ctx.has(2) or not ctx.has(7):
        raise ctx.error("an NHWC QLinearConv needs packed weights (weight_shape), or to be depthwise with x and"
                        " y NHWC, and both zero points")
    if not x_nhwc:
        return ctx
    x, C = ctx.inputs[0], int(shape[1]) * group
    if x.dtype != np.uint8 or len(x.shape) != 4 or x.shape[3] != c4(C):
        raise ctx.error(f"an NHWC x must be uint8 [N, H, W, {c4(C)}], got {x.dtype}{list(x.shape)}")
    N, H, W, _ = x.shape
    return dataclasses.replace(ctx, inputs=[TensorSpec((N, C, H, W), ctx.inputs[2].dtype)] + list(ctx.inputs[1:]))


def _infer_qlinear_conv(ctx: KernelContext) -> list[TensorSpec]:
    y_nhwc = _layouts(ctx)[1]
    ctx = _logical(ctx)
    _, out = _conv_parts(ctx, 0, 3)
    M = out[1]
    dt = _quant_params(ctx, "x", "w", M)
    if ctx.has(8) and (ctx.inputs[8].dtype != np.int32 or tuple(ctx.inputs[8].shape) != (M,)):
        raise ctx.error(f"bias must be int32 of shape [{M}], got {ctx.inputs[8].dtype}{list(ctx.inputs[8].shape)}")
    if ctx.attr("activation", "") not in ("", "Relu"):
        raise ctx.error(f"activation {ctx.attr('activation')!r} is not supported: Relu")
    if y_nhwc:
        return [TensorSpec((out[0], out[2], out[3], c4(M)), np.uint8)]
    return [TensorSpec(out, dt)]


def _conv_launch(ctx: KernelContext, geom, idx, requant: bool) -> Launch:
    """idx: node inputs for (x, xs, xzp, w, ws, wzp, ys, yzp, b), None where absent (x stands in)."""
    N, C, M, G = int(geom[cg.N]), int(geom[cg.C]), int(geom[cg.M]), int(geom[cg.GROUP])
    rows, OW = int(geom[cg.OD] * geom[cg.OH]), int(geom[cg.OW])
    K = C // G * int(geom[cg.KD] * geom[cg.KH] * geom[cg.KW])
    tile = max(1, min(rows, COL_ELEMS // max(1, K * OW)))
    bd = block_dim_for(rows, ctx.cores, max(1, MIN_BLOCK_MACS // max(1, N * M * K * OW)))
    T = min(tile, largest_share(rows, 1, bd)) * OW
    n_wzp = _per(ctx, idx[5], "w_zero_point", M) if idx[5] is not None else 0
    n_ws = _per(ctx, idx[4], "w_scale", M) if idx[4] is not None else 1
    dt = ctx.outputs[0].dtype
    qmin, qmax = _Q8.get(dt, (0, 0))
    args = (geom, int(idx[2] is not None), n_wzp, n_ws, int(idx[8] is not None), int(requant),
            int(idx[7] is not None), float(qmin), float(qmax), int(ctx.attr("activation", "") == "Relu"), min(tile, largest_share(rows, 1, bd)))
    ws = (per_block(C // G * int(np.prod(geom[cg.SPATIAL])), np.int16, bd), per_block(M // G * K, np.int16, bd),
          per_block(K * T, np.int16, bd), per_block(M // G * T, np.int32, bd))
    return Launch(_own_blocks, args, ws, inputs=tuple(0 if i is None else i for i in idx),
                  tiled=True, block_dim=bd)


@njit(nogil=True, cache=True)
def _own_blocks(x, xs, xzp, w, wsc, wzp, ys, yzp, b, y, xw, ww, col, acc, geom, has_xzp, n_wzp, n_ws, has_b,
                requant, has_yzp, qmin, qmax, relu, tile, block_idx, block_dim):
    """qconv on this block's slices of the per-block workspaces."""
    C, H, W, D, M, G = geom[cg.C], geom[cg.H], geom[cg.W], geom[cg.D], geom[cg.M], geom[cg.GROUP]
    K = C // G * geom[cg.KD] * geom[cg.KH] * geom[cg.KW]
    T = tile * geom[cg.OW]
    qconv(x, xs, xzp, w, wsc, wzp, ys, yzp, b, y, own(xw, C // G * D * H * W, block_idx, block_dim),
          own(ww, M // G * K, block_idx, block_dim), own(col, K * T, block_idx, block_dim),
          own(acc, M // G * T, block_idx, block_dim), geom, has_xzp, n_wzp, n_ws, has_b, requant, has_yzp,
          qmin, qmax, relu, tile, block_idx, block_dim)


def _prepare_conv_integer(ctx: KernelContext) -> Launch:
    geom, _ = _conv_parts(ctx, 0, 1)
    z = [2 if ctx.has(2) else None, 3 if ctx.has(3) else None]
    return _conv_launch(ctx, geom, (0, None, z[0], 1, None, z[1], None, None, None), False)


def _prepare_qlinear_conv(ctx: KernelContext) -> Launch:
    layouts, ctx = _layouts(ctx), _logical(ctx)
    geom, _ = _conv_parts(ctx, 0, 3)
    opt = [i if ctx.has(i) else None for i in range(9)]
    if layouts[0] and int(geom[cg.GROUP]) > 1:
        return _depthwise(ctx, geom, opt)
    if ctx.attr("weight_shape") is not None or (USE_VNNI and wants_vnni(ctx, geom)):
        return _vnni_launch(ctx, geom, opt, *layouts)
    return _conv_launch(ctx, geom, (0, 1, opt[2], 3, 4, opt[5], 6, opt[7], opt[8]), True)


def depthwise_nhwc(ctx: KernelContext, geom) -> bool:
    """conv_depthwise_int8.py's case: 2-D, group = C = M, undilated, int8 weights without a zero point."""
    zero_w = not ctx.has(5) or (ctx.values[5] is not None and not np.any(ctx.values[5]))
    C, M, G = int(geom[cg.C]), int(geom[cg.M]), int(geom[cg.GROUP])
    return (len(ctx.inputs[0].shape) == 4 and G == C == M and zero_w and ctx.inputs[3].dtype == np.int8
            and int(geom[cg.DD]) == int(geom[cg.DH]) == int(geom[cg.DW]) == 1)


def _depthwise(ctx: KernelContext, geom, opt) -> Launch:
    if not depthwise_nhwc(ctx, geom):
        raise ctx.error("an NHWC grouped QLinearConv must be depthwise (group = channels = outputs), 2-D,"
                        " undilated, with int8 weights and no weight zero point")
    M = int(geom[cg.M])
    qmin, qmax = _Q8[ctx.inputs[7].dtype]
    x_off, y_off = (128 if ctx.inputs[i].dtype == np.int8 else 0 for i in (2, 7))
    return conv_depthwise_int8.launch(geom, _per(ctx, 4, "w_scale", M), ctx.has(8), x_off, y_off, qmin, qmax,
                                      ctx.attr("activation", "") == "Relu", ctx.cores, (0, 1, 2, 3, 4, 6, 7, opt[8] or 0))


def wants_vnni(ctx: KernelContext, geom) -> bool:
    """conv_vnni.py's case: 2-D, ungrouped, undilated, int8 weights without a zero point (absent, as fuse_qdq
    leaves it, or a constant zero: ONNX's QLinearConv requires the input), an 8-bit output."""
    zero_w = not ctx.has(5) or (ctx.values[5] is not None and not np.any(ctx.values[5]))
    return (HAS_VNNI and len(ctx.inputs[0].shape) == 4 and int(geom[cg.GROUP]) == 1 and zero_w
            and ctx.inputs[3].dtype == np.int8 and int(geom[cg.DD]) == int(geom[cg.DH]) == int(geom[cg.DW]) == 1)


def _vnni_launch(ctx: KernelContext, geom, opt, x_nhwc=False, y_nhwc=False) -> Launch:
    N, C, H, W, M, OH, OW = (int(v) for v in geom[[cg.N, cg.C, cg.H, cg.W, cg.M, cg.OH, cg.OW]])
    KH, KW, sh, sw, ph, pw = (int(v) for v in geom[[cg.KH, cg.KW, cg.SH, cg.SW, cg.PH, cg.PW]])
    C4 = -(-C // 4) * 4
    packed = ctx.attr("weight_shape") is not None
    if packed and (not ctx.has(9) or ctx.inputs[9].dtype != np.int32 or tuple(ctx.inputs[9].shape) != (M,)):
        raise ctx.error(f"packed weights need their int32 row sums [{M}] as input 9")
    Hp, Wp = max(H + ph, (OH - 1) * sh + KH), max(W + pw, (OW - 1) * sw + KW)
    bd = block_dim_for(OH, ctx.cores, max(1, 4 * MIN_BLOCK_MACS // max(1, N * M * C * KH * KW * OW)))
    ydt = ctx.inputs[7].dtype if y_nhwc else ctx.outputs[0].dtype
    qmin, qmax = _Q8[ydt]
    n_ws = _per(ctx, 4, "w_scale", M)
    args = (geom, 128 if ctx.inputs[0].dtype == np.int8 else 0, int(ctx.has(2)), n_ws, int(ctx.has(8)),
            int(ctx.has(7)), float(qmin), float(qmax), int(ctx.attr("activation", "") == "Relu"), int(packed),
            int(x_nhwc), int(y_nhwc), 128 if ydt == np.int8 else 0)
    # per block: the padded image (none for an unpadded NHWC x), panels, row sums + tile + corrections, multipliers
    direct = x_nhwc and Hp == H and Wp == W
    ws = (per_block(1 if direct else Hp * Wp * C4 + 64, np.uint8, bd),
          per_block(1 if packed else -(-M // NR) * KH * KW * C4 * NR, np.int8, bd),
          per_block(2 * M + MR * NR, np.int32, bd), per_block(M, np.float32, bd))
    # stand-ins for absent inputs: x (never read); packed weights bring their row sums as input 9
    idx = (0, 1, opt[2] or 0, 3, 4, 6, opt[7] or 0, opt[8] or 0, 9 if packed else 0)
    return Launch(vnni_conv, args, ws, inputs=idx, tiled=True, block_dim=bd)


register("ConvInteger", infer=_infer_conv_integer, since=10)(_prepare_conv_integer)
# value_inputs: a constant weight zero point of 0 (symmetric int8 weights) takes conv_vnni (wants_vnni)
register("QLinearConv", infer=_infer_qlinear_conv, since=10, value_inputs=(5,))(_prepare_qlinear_conv)
# fuse_qdq's form: QLinearConv with a Relu clamp (attribute activation, "" or "Relu")
register("QLinearConv", domain="ge", infer=_infer_qlinear_conv, value_inputs=(5,))(_prepare_qlinear_conv)


# -- matmuls ------------------------------------------------------------------------------------------

@njit(nogil=True, cache=True)
def qmatmul(a, as_, azp, b, bs, bzp, ys, yzp, y, wa, wb, acc, M, N, K, a_off, b_off, has_azp, n_bzp, n_bs,
            requant, has_yzp, qmin, qmax, block_idx, block_dim):
    m0, m1 = block_range(M, 1, block_idx, block_dim)
    R = m1 - m0
    pa, pb, pc = own(wa, R * K, block_idx, block_dim), own(wb, K * N, block_idx, block_dim), \
        own(acc, R * N, block_idx, block_dim)
    az = np.int32(azp[0]) if has_azp else 0
    for i in range(a_off.size):
        shift(a, a_off[i] + m0 * K, R * K, az, pa, 0)
        for k in range(K):
            for n in range(N):
                z = np.int32(bzp[n if n_bzp > 1 else 0]) if n_bzp else 0
                pb[k * N + n] = np.int16(np.int32(b[b_off[i] + k * N + n]) - z)
        igemm(pa, 0, pb, 0, N, pc, 0, N, R, N, K)
        yo = (i * M + m0) * N
        if requant:
            z = np.float64(yzp[0]) if has_yzp else 0.0
            for n in range(N):
                mult = multiplier(as_[0], bs[n if n_bs > 1 else 0], ys[0])
                for r in range(R):
                    requantize(pc, r * N + n, 1, 0, mult, z, qmin, qmax, y, yo + r * N + n)
        else:
            for e in range(R * N):
                y[yo + e] = pc[e]


def _matmul_parts(ctx: KernelContext, ai: int, bi: int):
    _check_q(ctx, ai, "A")
    _check_q(ctx, bi, "B")
    return _matmul_dims(_float_view(ctx, (ai, bi)))


def _infer_matmul_integer(ctx: KernelContext) -> list[TensorSpec]:
    _, _, N, _, out, _, _ = _matmul_parts(ctx, 0, 1)
    _per(ctx, 2, "a_zero_point", 1, ctx.inputs[0].dtype)
    _per(ctx, 3, "b_zero_point", N, ctx.inputs[1].dtype)
    return [TensorSpec(out, np.int32)]


def _infer_qlinear_matmul(ctx: KernelContext) -> list[TensorSpec]:
    _, _, N, _, out, _, _ = _matmul_parts(ctx, 0, 3)
    return [TensorSpec(out, _quant_params(ctx, "a", "b", N))]


def _matmul_launch(ctx: KernelContext, ai, bi, idx, requant: bool) -> Launch:
    batch, M, N, K, _, ba, bb = _matmul_parts(ctx, ai, bi)
    a_off, b_off = _batch_offsets(batch, ba, M * K), _batch_offsets(batch, bb, K * N)
    bd = block_dim_for(M, ctx.cores, max(1, MIN_BLOCK_MACS // max(1, a_off.size * N * K)))
    R = largest_share(M, 1, bd)
    n_bzp = _per(ctx, idx[5], "b_zero_point", N) if idx[5] is not None else 0
    n_bs = _per(ctx, idx[4], "b_scale", N) if idx[4] is not None else 1
    qmin, qmax = _Q8.get(ctx.outputs[0].dtype, (0, 0))
    args = (M, N, K, a_off, b_off, int(idx[2] is not None), n_bzp, n_bs, int(requant), int(idx[7] is not None),
            float(qmin), float(qmax))
    ws = (per_block(R * K, np.int16, bd), per_block(K * N, np.int16, bd), per_block(R * N, np.int32, bd))
    return Launch(qmatmul, args, ws, inputs=tuple(0 if i is None else i for i in idx), tiled=True, block_dim=bd)


def _prepare_matmul_integer(ctx: KernelContext) -> Launch:
    z = [2 if ctx.has(2) else None, 3 if ctx.has(3) else None]
    return _matmul_launch(ctx, 0, 1, (0, None, z[0], 1, None, z[1], None, None), False)


def _prepare_qlinear_matmul(ctx: KernelContext) -> Launch:
    opt = [i if ctx.has(i) else None for i in range(8)]
    return _matmul_launch(ctx, 0, 3, (0, 1, opt[2], 3, 4, opt[5], 6, opt[7]), True)


register("MatMulInteger", infer=_infer_matmul_integer, since=10)(_prepare_matmul_integer)
register("QLinearMatMul", infer=_infer_qlinear_matmul, since=10)(_prepare_qlinear_matmul)
