"""Conv, ConvTranspose and the fused "ge" FusedConv: convolution lowered to GEMM, batch loop outside.

Every conv is seen as 3-D (1-D and 2-D get leading spatial dims of 1), so one compiled kernel per dtype
serves all ranks. Per image and group, `prepare` picks one of six ways (conv_lowering.py runs most):
  PACKED     IMPLICIT (conv_implicit.py) on weights pack_conv_weights packed, for 1-D and 2-D convs with 32
             or more output channels a group and at most 10% of lanes idle (wants_packed): output channels
             across the vector lanes, positions in the broadcasts. It has no padded columns and no 7- or
             14-wide lane tails: ResNet-50's convs, one core, 88.2 -> 80.6 ms (onnxruntime 77.2); 3x3 on
             14x14 1.27 -> 1.06x onnxruntime, 1x1 2048 -> 512 on 7x7 1.36 -> 1.11x. Under 32 channels (24,
             40) it ran 20-30% slower than the lowerings below; packing the weights on every run instead of
             once made it 40% slower than them (123 ms for ResNet-50's convs), so unpacked weights (a
             kernel called directly, weights computed at run time) take the lowerings below.
  POINTWISE  1x1, stride 1, no pad: the input already is the GEMM operand, y[Mg,S] = W[Mg,Cg] @ x[Cg,S].
  SHIFTED    2-D (or 1-D), undilated ("implicit im2col"): copy the input
             rows a tile of output rows reads, zero-padded and split into its stride phases, to a workspace
             (rows Wq = OW + (KW-1)//sw wide); then one GEMM grid[Mg, rows*Wq] = W[Mg, Cg*KT] @ B whose row
             (c, kh, kw) is channel c of phase (kh%sh, kw%sw) shifted by (kh//sh, kw//sw): B is that copy
             read through a table of row offsets (gemm.py's brow), nothing is unfolded. The grid has the
             padded width: the extra columns of each row are garbage, dropped when its valid columns are
             copied to y. Without extra columns (1x1 strided: Wq == OW) the GEMM writes y itself (no grid,
             no copy: ResNet-50's three stride-2 1x1 convs 70-86 -> 87-114 GF/s).
  IM2COL     otherwise (dilated, 3-D): unfold the input into col[Cg*kD*kH*kW, rows*OW] for
             a tile of output rows at a time (a few MiB at most), then one GEMM W[Mg, Cg*k] @ col into
             those rows of y. Each col row is filled as runs of output rows: the valid middle of a run is a
             straight (or strided) copy, the padded ends are zeroed, so no per-element bounds test.
  DEPTHWISE  one input channel per group, 2-D, undilated: SHIFTED's padded plane, then each output row
             accumulated over all taps in registers (K = kH*kW is all overhead for a GEMM).
  DIRECT     other depthwise convs: each output plane accumulates w[k] * shifted input plane, tap by tap,
             in vectorizable row loops.
float64 convs run DIRECT only (`direct`): with every lowering, float64's conv compiled in 149 s cold, 69 s
without IMPLICIT's and DEPTHWISE's register tiles, for a type onnxruntime's CPU Conv does not offer at all
(float64 is here for checking, not speed).
Every output element of a conv is one FMA chain (gemm.py) over k = (channel, tap) in the same order,
whatever its channel or position (tiles change nothing), so channels with equal weights stay bitwise
equal; SHIFTED and IM2COL even give the same bits. Workspaces: SHIFTED needs the padded rows
and the grid tile, about (Cg + Mg) * rows * Wq elements (VGG-19's largest: 110 MiB of im2col -> 3.4 MiB).
GEMMs are gemm.py's (no BLAS: see gemm.py for why). Bias, FusedConv's residual Z and its activation are one
epilogue pass per output row (see epilogue.py).

ConvTranspose is the adjoint: col[Mg*k, S_in] = W_g^T @ x_g (W_g read transposed through strides), then
col2im scatters and adds col into the output, zeroed beforehand by the runtime (an atomic output, as
GE's scatter-add kernels: `Launch.atomic`), and the bias epilogue runs.

Tiling (AI-core blocks, tiling.py), chosen in `prepare` by shape; K (channels x taps) is never split, so
results are bitwise equal for any block count (IMPLICIT's channel blocks are whole panels of 2 vectors):
  PAIRS     whole (image, group) pairs per block, when there are enough for even shares (at least 2 per
            block, or a multiple of the block count): batches, grouped convs; DEPTHWISE and DIRECT only so.
  SPATIAL   every pair, a range of output rows per block (POINTWISE: of flat positions, on GEMM panel
            boundaries), when Mg <= the output plane: each block then reads all weights (A, the smaller
            operand) and only its part of the input. SHIFTED's row tile shrinks to the block's rows.
  CHANNELS  every pair, a range of output channels per block (8-row GEMM tiles), when the weights are
            the larger operand (ResNet's 7x7 and 14x14 stages): each block reads only its weights; SHIFTED
            and IM2COL each copy (unfold) the input for themselves.
ConvTranspose splits PAIRS or CHANNELS only: a block's channels own their output planes, so col2im's
scatter-add never races. A launch gets blocks only when each has gemm.MIN_BLOCK_MACS multiply-adds
(DEPTHWISE and DIRECT: MIN_BLOCK_TAPS, their axpys run ~6x slower per multiply-add than the GEMM).
Each block has its own slice of the workspace (the lowering's buffers, then the GEMM's packed B), so a
launch's workspace grows with its block count: the largest conv workspace of ResNet-50 is 2.08 MiB on one
core (2.30 before the 1x1 strided convs lost their grid), 2.28 MiB on 2 cores, 4.09 MiB on 4 (VGG-19:
3.47, 4.41, 7.00 MiB; Inception v1: 1.07, 2.14, 3.88 MiB).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..ir.dtypes import HALF
from .conv_depthwise import BLOCKED, depthwise, flat_plane, flat_workspace
from .conv_depthwise_blocked import blocked_fits, blocked_workspace
from .conv_depthwise_half import depthwise16_fits, prepare_depthwise16
from . import conv_geom as cg
from .conv_half import PANEL, implicit16, prepare16
from .conv_implicit import A_BYTES, COMPACT, IN_PLACE, implicit, input_layout, padded_channels
from .conv_lowering import _channel_stride, _col2im, _direct, _im2col_gemm, _shifted, _valid
from .epilogue import activation_args, epilogue
from .half import native16
from .gemm import MIN_BLOCK_MACS, gemm_block, workspace
from .microkernel import NARROW
from .registry import KernelContext, Launch, TensorSpec, register
from .specialize import by_type
from .tiling import block_dim_for, block_range, largest_share

POINTWISE, IM2COL, DIRECT, SHIFTED, DEPTHWISE, PACKED = range(6)
PAIRS, SPATIAL, CHANNELS = range(3)
_FLOATS = (np.float32, np.float64)
USE_SHIFTED = True  # False: IM2COL wherever SHIFTED would run (the same bits, more memory: for bisecting)
USE_DEPTHWISE = True  # False: DIRECT wherever DEPTHWISE would run (for bisecting)
USE_IMPLICIT = True  # False: pack_conv_weights packs nothing, the lowerings below run (the same bits)
# float32 maps take IMPLICIT only with AVX-512: its tile of 8 positions x 2 vectors is 32 ymm without it (16
# registers); there SHIFTED on gemm's sub-tiles runs ResNet-50's 3x3 64->64 on 56x56 in 3.35 ms against IMPLICIT's
# 6.17 (bench/gemm_one_core.py, AMD EPYC AVX2, one core). 16-bit maps keep it (only IMPLICIT reads them). Same bits.
PACK_FLOAT32 = not NARROW
DEPTHWISE_GRID = 2048  # DEPTHWISE: output rows per tile so that the padded rows stay in L1
GEMM_MIN_COLUMNS = 1024  # SHIFTED: a tile of output rows is at least this many grid columns wide ...
GRID_ELEMS = 1 << 18      # ... and more while padded input + grid stay under this many elements
COL_ELEMS = 1 << 19       # IM2COL: output rows per tile so that col stays under this (at least one row)
MIN_BLOCK_TAPS = 1 << 18  # DEPTHWISE, DIRECT: a block's least multiply-adds (see the module doc)


# -- kernels ----------------------------------------------------------------------------------------

@by_type
@njit(nogil=True, cache=True)
def _share(pairs, Mg, spatial, grain, split, block_idx, block_dim):
    """(q0, q1, c0, c1, s0, s1): a block's pairs, output channels and spatial units."""
    q0, q1, c0, c1, s0, s1 = 0, pairs, 0, Mg, 0, spatial
    if split == PAIRS:
        q0, q1 = block_range(pairs, 1, block_idx, block_dim)
    elif split == CHANNELS:
        c0, c1 = block_range(Mg, grain, block_idx, block_dim)
    else:
        s0, s1 = block_range(spatial, grain, block_idx, block_dim)
    return q0, q1, c0, c1, s0, s1


@njit(nogil=True, cache=True)
def _block(ws, y, geom, mode, split, block_idx, block_dim):
    """A block's workspace slice and its (pairs, output channels, spatial units) shares."""
    N, M, OD, OH, OW, G = geom[cg.N], geom[cg.M], geom[cg.OD], geom[cg.OH], geom[cg.OW], geom[cg.GROUP]
    per = ws.size // block_dim
    pointwise = mode == POINTWISE
    grain = (8 if mode != PACKED else 128 // y.itemsize) if split == CHANNELS else (128 // y.itemsize if pointwise else 1)
    S = OD * OH * OW
    return (ws[block_idx * per:(block_idx + 1) * per],) + _share(N * G, M // G, S if pointwise else OD * OH, grain,
                                                                split, block_idx, block_dim)


@njit(nogil=True, cache=True)
def conv(x, w, b, z, y, ws, geom, mode, has_b, has_z, act, p0, p1, tile, split, lw, block_idx, block_dim):
    """y = act(conv(x, w) + b + z) in mode PACKED, block block_idx's share. geom: N C D H W, M OD OH OW, KD KH
    KW, strides, pads, dilations, G. tile: output rows per GEMM tile; lw: a block's workspace for the
    lowering. DEPTHWISE (depthwise_conv) and the others (lowered) are kernels of their own, with the same
    arguments: a model compiles only the modes it runs (one kernel choosing by `mode` at run time compiled
    them all: ResNet-50, PACKED only, compiled the depthwise and GEMM lowerings too; issue 44)."""
    C, H, W, M, OH, OW = geom[cg.C], geom[cg.H], geom[cg.W], geom[cg.M], geom[cg.OH], geom[cg.OW]
    KH, KW, sh, sw, ph, pw = geom[cg.KH], geom[cg.KW], geom[cg.SH], geom[cg.SW], geom[cg.PH], geom[cg.PW]
    dh, dw, G = geom[cg.DH], geom[cg.DW], geom[cg.GROUP]
    wsb, q0, q1, c0, c1, s0, s1 = _block(ws, y, geom, mode, split, block_idx, block_dim)
    implicit(x, w, b, z, y, wsb, lw, q0, q1, c0, c1, s0, s1, G, C // G, M // G, H, W, OH, OW, KH, KW,
             sh, sw, ph, pw, dh, dw, tile, has_b, has_z, act, p0, p1)


@njit(nogil=True, cache=True)
def depthwise_conv(x, w, b, z, y, ws, geom, mode, has_b, has_z, act, p0, p1, tile, split, lw, block_idx, block_dim):
    """conv in mode DEPTHWISE: one call for all the block's planes (see conv_depthwise's doc)."""
    H, W, M, OH, OW = geom[cg.H], geom[cg.W], geom[cg.M], geom[cg.OH], geom[cg.OW]
    KH, KW, sh, sw, ph, pw = geom[cg.KH], geom[cg.KW], geom[cg.SH], geom[cg.SW], geom[cg.PH], geom[cg.PW]
    G = geom[cg.GROUP]
    wsb, q0, q1, c0, c1, s0, s1 = _block(ws, y, geom, mode, split, block_idx, block_dim)
    depthwise(x, w, b, z, y, wsb, np.empty(KH * KW, np.int64), q0, q1, G, M // G, H, W, OH, OW, KH, KW, sh, sw,
              ph, pw, tile, has_b, has_z, act, p0, p1)


@njit(nogil=True, cache=True)
def conv16(x, w, b, z, y, ws, geom, kind, has_b, has_z, act, p0, p1, tile, split, block_idx, block_dim):
    """conv's PACKED mode on 16-bit x, z, y (conv_half.py): block block_idx's share, float32 grains."""
    C, H, W, M, OH, OW = geom[cg.C], geom[cg.H], geom[cg.W], geom[cg.M], geom[cg.OH], geom[cg.OW]
    KH, KW, sh, sw, ph, pw = geom[cg.KH], geom[cg.KW], geom[cg.SH], geom[cg.SW], geom[cg.PH], geom[cg.PW]
    dh, dw, G = geom[cg.DH], geom[cg.DW], geom[cg.GROUP]
    wsb, q0, q1, c0, c1, s0, s1 = _block(ws, ws, geom, PACKED, split, block_idx, block_dim)
    implicit16(x, w, b, z, y, wsb, wsb.size - PANEL * tile * OW, kind, q0, q1, c0, c1, s0, s1, G, C // G, M // G,
               H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw, tile, has_b, has_z, act, p0, p1)


@njit(nogil=True, cache=True)
def lowered(x, w, b, z, y, ws, geom, mode, has_b, has_z, act, p0, p1, tile, split, lw, block_idx, block_dim):
    """conv's POINTWISE, SHIFTED, IM2COL and DIRECT."""
    N, C, D, H, W = geom[cg.N], geom[cg.C], geom[cg.D], geom[cg.H], geom[cg.W]
    M, OD, OH, OW = geom[cg.M], geom[cg.OD], geom[cg.OH], geom[cg.OW]
    KD, KH, KW, sd, sh, sw = geom[cg.KD], geom[cg.KH], geom[cg.KW], geom[cg.SD], geom[cg.SH], geom[cg.SW]
    pd, ph, pw, dd, dh, dw = geom[cg.PD], geom[cg.PH], geom[cg.PW], geom[cg.DD], geom[cg.DH], geom[cg.DW]
    G = geom[cg.GROUP]
    Cg, Mg = C // G, M // G
    K, S_in, S = Cg * KD * KH * KW, D * H * W, OD * OH * OW
    wsb, q0, q1, c0, c1, s0, s1 = _block(ws, y, geom, mode, split, block_idx, block_dim)
    pk = wsb[lw:]
    pointwise = mode == POINTWISE
    e0, e1 = (s0, s1) if pointwise else (s0 * OW, s1 * OW)  # the block's positions in each output plane
    lohi = np.empty(2 * KW, np.int64)  # valid output columns of each kw tap, for DIRECT
    for kw in range(KW):
        lohi[kw], lohi[KW + kw] = _valid(kw * dw - pw, sw, W, OW)
    phased = mode == IM2COL and sw > 1 and KW > 1
    for q in range(q0, q1):
        n, g = q // G, q % G
        xo, yo = (n * C + g * Cg) * S_in, (n * M + g * Mg) * S
        wg = w[g * Mg * K:(g + 1) * Mg * K]
        if pointwise:
            gemm_block(wg, x[xo:xo + Cg * S_in], lohi[:0], S, y[yo:yo + Mg * S], S, K, K, 1, False,
                       c0, c1, s0, s1, pk, True)
        elif mode == IM2COL:
            _im2col_gemm(x, xo, wg, y, yo, wsb, pk, phased, Cg, D, H, W, Mg, OD, OH, OW, KD, KH, KW,
                         sd, sh, sw, pd, ph, pw, dd, dh, dw, tile, c0, c1, s0, s1)
        elif mode == SHIFTED:
            _shifted(x, xo, wg, y, yo, wsb, pk, Cg, H, W, Mg, OH, OW, KH, KW, sh, sw, ph, pw, tile,
                     c0, c1, s0, s1)
        else:
            _direct_planes(x, xo, w, y, yo, lohi, g, c0, c1, K, S, geom)
        _finish(y, yo, b, z, g * Mg, c0, c1, S, e0, e1, has_b, has_z, act, p0, p1)


@njit(nogil=True, cache=True, inline="always")
def _direct_planes(x, xo, w, y, yo, lohi, g, c0, c1, K, S, geom):
    """Output channels [c0, c1) of group g's plane pair (xo, yo), each over all its Cg input planes."""
    Cg, Mg = geom[cg.C] // geom[cg.GROUP], geom[cg.M] // geom[cg.GROUP]
    for m in range(c0, c1):
        _direct(x, xo, w, (g * Mg + m) * K, y, yo + m * S, lohi, Cg,
                geom[cg.D], geom[cg.H], geom[cg.W], geom[cg.OD], geom[cg.OH], geom[cg.OW],
                geom[cg.KD], geom[cg.KH], geom[cg.KW], geom[cg.SD], geom[cg.SH], geom[cg.SW],
                geom[cg.PD], geom[cg.PH], geom[cg.PW], geom[cg.DD], geom[cg.DH], geom[cg.DW])


@njit(nogil=True, cache=True, inline="always")
def _finish(y, yo, b, z, m0, c0, c1, S, e0, e1, has_b, has_z, act, p0, p1):
    """Bias, Z and the activation over output channels [c0, c1) of a plane pair, positions [e0, e1)."""
    for m in range(c0, c1):
        bias = b[m0 + m] if has_b else 0.0
        o = yo + m * S + e0
        epilogue(y, o, e1 - e0, 1.0, bias, z, o, 1.0, has_z, act, p0, p1)


@njit(nogil=True, cache=True)
def direct(x, w, b, z, y, ws, geom, mode, has_b, has_z, act, p0, p1, tile, split, lw, block_idx, block_dim):
    """float64's conv (module doc): DIRECT over the block's pairs and output channels, `conv`'s arguments."""
    C, H, W, M, OW = geom[cg.C], geom[cg.H], geom[cg.W], geom[cg.M], geom[cg.OW]
    KW, sw, pw, dw, G = geom[cg.KW], geom[cg.SW], geom[cg.PW], geom[cg.DW], geom[cg.GROUP]
    Cg, Mg = C // G, M // G
    K, S_in, S = Cg * geom[cg.KD] * geom[cg.KH] * KW, geom[cg.D] * H * W, geom[cg.OD] * geom[cg.OH] * OW
    _, q0, q1, c0, c1, _, _ = _block(ws, y, geom, mode, split, block_idx, block_dim)
    lohi = np.empty(2 * KW, np.int64)
    for kw in range(KW):
        lohi[kw], lohi[KW + kw] = _valid(kw * dw - pw, sw, W, OW)
    for q in range(q0, q1):
        n, g = q // G, q % G
        xo, yo = (n * C + g * Cg) * S_in, (n * M + g * Mg) * S
        _direct_planes(x, xo, w, y, yo, lohi, g, c0, c1, K, S, geom)
        _finish(y, yo, b, z, g * Mg, c0, c1, S, 0, S, has_b, has_z, act, p0, p1)


@njit(nogil=True, cache=True)
def conv_transpose(x, w, b, y, ws, geom, has_b, split, lw, block_idx, block_dim):
    """y += conv_transpose(x, w) + b into a zeroed y (an atomic output: the runtime cleans it, GE's
    AtomicAddrClean), block block_idx's pairs or output channels; geom as conv's, with D H W the input's
    and OD OH OW the output's; lw: a block's col buffer (its GEMM packs B after it)."""
    N, C, D, H, W = geom[cg.N], geom[cg.C], geom[cg.D], geom[cg.H], geom[cg.W]
    M, OD, OH, OW = geom[cg.M], geom[cg.OD], geom[cg.OH], geom[cg.OW]
    KD, KH, KW, sd, sh, sw = geom[cg.KD], geom[cg.KH], geom[cg.KW], geom[cg.SD], geom[cg.SH], geom[cg.SW]
    pd, ph, pw, dd, dh, dw = geom[cg.PD], geom[cg.PH], geom[cg.PW], geom[cg.DD], geom[cg.DH], geom[cg.DW]
    G = geom[cg.GROUP]
    Cg, Mg, KT = C // G, M // G, KD * KH * KW
    R, S_in, S = Mg * KT, D * H * W, OD * OH * OW
    per = ws.size // block_dim
    col, pk = ws[block_idx * per:block_idx * per + lw], ws[block_idx * per + lw:(block_idx + 1) * per]
    grain = 8 if Mg >= 8 * block_dim else 1
    q0, q1, c0, c1, _, _ = _share(N * G, Mg, 1, grain, split, block_idx, block_dim)
    for q in range(q0, q1):
        n, g = q // G, q % G
        xo, yo = (n * C + g * Cg) * S_in, (n * M + g * Mg) * S
        # col[(c1-c0)*KT, S_in] = w_g[:, c0*KT:c1*KT]^T @ x_g, w_g[Cg, R] read transposed through its strides
        gemm_block(w[g * Cg * R + c0 * KT:], x[xo:xo + Cg * S_in], np.empty(0, np.int64), S_in, col, S_in,
                   Cg, 1, R, False, 0, (c1 - c0) * KT, 0, S_in, pk, True)
        _col2im(col, y, yo + c0 * S, c1 - c0, D, H, W, OD, OH, OW, KD, KH, KW, sd, sh, sw, pd, ph, pw,
                dd, dh, dw)
        if has_b:
            for m in range(c0, c1):
                epilogue(y, yo + m * S, S, 1.0, float(b[g * Mg + m]), y, 0, 1.0, 0, 0, 0.0, 0.0)


# -- shapes and attributes --------------------------------------------------------------------------

def _ints(ctx, name, n, default):
    v = ctx.attr(name)
    v = [default] * n if v is None else [int(a) for a in v]
    if len(v) != n:
        raise ctx.error(f"attribute {name}={v} should have {n} values")
    return v


def weight_shape(ctx: KernelContext) -> tuple:
    """W's shape as ONNX gives it; a FusedConv whose W is packed (pack_conv_weights) names it in an
    attribute, and its W must hold conv_implicit.pack's layout of that shape."""
    shape = ctx.attr("weight_shape")
    if shape is None:
        return tuple(ctx.inputs[1].shape)
    shape = tuple(int(d) for d in shape)
    G, lanes = int(ctx.attr("group", 1)), 64 // ctx.inputs[1].dtype.itemsize
    if len(shape) < 3 or min(shape) < 1 or shape[0] % G:
        raise ctx.error(f"weight_shape {list(shape)} is not a conv weight shape for group {G}")
    want = G * int(np.prod(shape[1:])) * padded_channels(shape[0] // G, lanes)
    if tuple(ctx.inputs[1].shape) != (want,):
        raise ctx.error(f"packed weights of shape {list(shape)} need {want} elements, got {list(ctx.inputs[1].shape)}")
    return shape


def _common(ctx: KernelContext, kernel_dims):
    """Spatial rank, kernel, strides, dilations, group and the explicit pads (begin, end) of a conv node."""
    x, w = ctx.inputs[0], weight_shape(ctx)
    nd = len(x.shape) - 2
    if not 1 <= nd <= 3 or len(w) != nd + 2:
        raise ctx.error(f"expected 3-D to 5-D input and weight, got {x.shape} and {list(w)}")
    # a 16-bit feature map: packed (conv_half.py) or depthwise (conv_depthwise_half.py) with float32 weights
    half = x.dtype in HALF and ctx.inputs[1].dtype == np.float32
    if not half and (x.dtype not in _FLOATS or ctx.inputs[1].dtype != x.dtype):
        raise ctx.error(f"input and weight must both be float32 or float64, got {x.dtype} and {ctx.inputs[1].dtype}")
    k = _ints(ctx, "kernel_shape", nd, 0) if ctx.attr("kernel_shape") is not None else list(kernel_dims)
    if k != list(kernel_dims):
        raise ctx.error(f"kernel_shape {k} does not match the weight's {list(kernel_dims)}")
    strides, dil = _ints(ctx, "strides", nd, 1), _ints(ctx, "dilations", nd, 1)
    pads = _ints(ctx, "pads", 2 * nd, 0)
    if min(strides) < 1 or min(dil) < 1 or min(pads) < 0:
        raise ctx.error(f"strides {strides} and dilations {dil} must be >= 1 and pads {pads} >= 0")
    return nd, k, strides, dil, pads[:nd], pads[nd:], int(ctx.attr("group", 1))


def _conv_shape(ctx: KernelContext):
    """(geom list, output shape) of a Conv/FusedConv node, resolving auto_pad."""
    x, w = ctx.inputs[0].shape, weight_shape(ctx)
    nd, k, s, d, pb, pe, G = _common(ctx, w[2:])
    (N, C), M, sp = x[:2], w[0], list(x[2:])
    if G < 1 or C % G or M % G or w[1] * G != C:
        raise ctx.error(f"input channels {C}, weight {w} and group {G} do not fit")
    auto = ctx.attr("auto_pad", "NOTSET")
    ext = [(k[i] - 1) * d[i] + 1 for i in range(nd)]  # dilated kernel extent
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        out = [-(-sp[i] // s[i]) for i in range(nd)]
        total = [max((out[i] - 1) * s[i] + ext[i] - sp[i], 0) for i in range(nd)]
        pb = [t // 2 if auto == "SAME_UPPER" else t - t // 2 for t in total]
    else:
        if auto == "VALID":
            pb = pe = [0] * nd
        out = [(sp[i] + pb[i] + pe[i] - ext[i]) // s[i] + 1 for i in range(nd)]
    if min(out) < 1:
        raise ctx.error(f"output spatial size {out} is empty (input {x}, kernel {k})")
    return _geom(N, C, sp, M, out, k, s, pb, d, G), (N, M, *out)


def _geom(N, C, sp, M, out, k, s, p, d, G):
    """The int64 geometry array the kernels read: every spatial list padded to 3-D with neutral values."""
    def three(v, fill):
        return [fill] * (3 - len(v)) + list(v)
    geom = np.empty(cg.SIZE, np.int64)
    geom[[cg.N, cg.C, cg.M, cg.GROUP]] = N, C, M, G
    geom[cg.SPATIAL], geom[cg.OUTPUT], geom[cg.KERNEL] = three(sp, 1), three(out, 1), three(k, 1)
    geom[cg.STRIDES], geom[cg.PADS], geom[cg.DILATIONS] = three(s, 1), three(p, 0), three(d, 1)
    return geom


def _infer_conv(ctx: KernelContext) -> list[TensorSpec]:
    return [TensorSpec(_conv_shape(ctx)[1], ctx.inputs[0].dtype)]


def _round16(n: int) -> int:
    return -(-n // 16) * 16


def _mode(geom, Cg: int, Mg: int, KT: int, packed: bool, double: bool) -> int:
    D, KD, OD = (int(v) for v in geom[[cg.D, cg.KD, cg.OD]])
    undilated_2d = D == KD == OD == 1 and (geom[cg.DILATIONS] == 1).all()
    if packed:
        return PACKED
    if double or Cg == 1 and Mg <= 4:
        return DEPTHWISE if undilated_2d and USE_DEPTHWISE and not double else DIRECT
    if KT == 1 and (geom[cg.STRIDES] == 1).all() and not geom[cg.PADS].any():  # 1x1, stride 1, no pad
        return POINTWISE
    return SHIFTED if undilated_2d and USE_SHIFTED else IM2COL


def wants_packed(weight_shape, group: int, dtype, half: bool = False) -> bool:
    """Whether a conv with these weights runs IMPLICIT on packed weights (pack_conv_weights packs them):
    1-D or 2-D, not depthwise, a panel's worth of output channels a group and at most 10% of lanes idle
    (measured: 24 and 40 channels ran 20-30% slower than POINTWISE / SHIFTED, 16 level, 80 and more faster).
    On a 16-bit feature map (`half`: only IMPLICIT reads one, conv_half.py) a vector of channels suffices:
    SqueezeNet's 16-channel squeeze convs otherwise keep float32 copies of their inputs live."""
    M, Cg, lanes = weight_shape[0], weight_shape[1], 64 // np.dtype(dtype).itemsize
    if len(weight_shape) not in (3, 4) or group < 1 or M % group or np.dtype(dtype) != np.float32:
        return False
    Mg = M // group
    if half:
        return USE_IMPLICIT and not (Cg == 1 and Mg <= 4) and Mg >= lanes
    return (USE_IMPLICIT and PACK_FLOAT32 and not (Cg == 1 and Mg <= 4) and Mg >= 2 * lanes
            and padded_channels(Mg, lanes) * 10 <= Mg * 11)


def _conv_tiling(cores: int, mode: int, pairs: int, Mg: int, K: int, rows: int, S: int, P: int):
    """(block_dim, split) for a conv (see the module doc): `rows` output rows of S positions per plane."""
    gemm = mode in (POINTWISE, IM2COL, SHIFTED, PACKED)
    bd = block_dim_for(pairs * Mg * K * S, cores, MIN_BLOCK_MACS if gemm else MIN_BLOCK_TAPS)
    if bd == 1 or not gemm:
        return max(1, min(bd, pairs)), PAIRS
    if pairs % bd == 0 or pairs >= 4 * bd:
        return bd, PAIRS
    spatial = -(-S // P) if mode == POINTWISE else rows
    channels = -(-Mg // (8 if mode != PACKED else P))  # GEMM row tiles, or IMPLICIT's panels
    if spatial >= bd and (Mg <= S or channels < bd):
        return bd, SPATIAL
    if channels >= bd:
        return bd, CHANNELS
    return (min(bd, spatial), SPATIAL) if spatial >= channels else (min(bd, channels), CHANNELS)


def _plan(mode: int, geom, Cg: int, mb: int, rows: int, itemsize: int):
    """(tile, lowering workspace, GEMM columns) of one block: mb output channels, `rows` output rows."""
    D, H, W, OD, OH, OW = (int(v) for v in geom[[cg.D, cg.H, cg.W, cg.OD, cg.OH, cg.OW]])
    KD, KH, KW, sh, sw = (int(v) for v in geom[[cg.KD, cg.KH, cg.KW, cg.SH, cg.SW]])
    Wq, A, B = OW + (KW - 1) // sw, min(sh, KH), min(sw, KW)
    if mode == PACKED:  # output rows whose input stays in L2: read in place or copied (input_layout)
        ph, pw, dh, dw = (int(v) for v in geom[[cg.PH, cg.PW, cg.DH, cg.DW]])
        how, Wp, ush, _, ext = input_layout(H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw)
        tile = min(rows, max(1, (A_BYTES // (Cg * Wp * itemsize) - ext) // ush + 1))
        lw = Cg * int(_channel_stride(tile if how == COMPACT else (tile - 1) * sh + ext, Wp))
        return tile, 0 if how == IN_PLACE else lw, 0
    if mode == DEPTHWISE:  # a padded plane, a tile of rows at a time, and two vectors of slack for row tails
        tile = min(OH, max(8, DEPTHWISE_GRID // Wq // 8 * 8))  # whole register tiles of rows (8 or 4)
        lw = _round16(A * B * int(_channel_stride(tile + (KH - 1) // sh, Wq)) + (KW - 1) // sw) + 32
        if flat_plane(H, W, OH, OW, sh, sw, 64 // itemsize):  # or the planes as flat runs: column masks
            lw = max(lw, _round16(flat_workspace(H, W, KW)))
        if BLOCKED and blocked_fits(sh, sw, mb, KW, 64 // itemsize):  # blocks of 16 channels: weights, ring, a row
            lw = max(lw, _round16(blocked_workspace(W, OW, KH, KW, int(geom[cg.PW]), sh)))
        return tile, lw, 0
    if mode == SHIFTED:  # GEMMs on a shifted padded input
        tile = min(rows, max(-(-GEMM_MIN_COLUMNS // Wq), GRID_ELEMS // ((mb + A * B * Cg) * Wq)))
        cs = int(_channel_stride(tile + (KH - 1) // sh, Wq))
        grid = mb * _round16(tile * Wq) if Wq > OW else 0  # none when the GEMM can write y (1x1 strided)
        return tile, _round16(A * B * Cg * cs + (KW - 1) // sw) + grid, tile * Wq
    if mode == IM2COL:
        tile = min(rows, max(1, COL_ELEMS // (Cg * KD * KH * KW * OW)))
        ws = Cg * KD * KH * KW * tile * OW
        if sw > 1 and KW > 1:  # room for the stride phases of one group's input rows
            ws += Cg * D * H * sw * -(-W // sw)
        return tile, ws, tile * OW
    return 1, (0 if mode == POINTWISE else 1), rows  # POINTWISE: rows are positions here


def _prepare_conv(ctx: KernelContext) -> Launch:
    geom, _ = _conv_shape(ctx)
    N, C, M, G = (int(v) for v in geom[[cg.N, cg.C, cg.M, cg.GROUP]])
    OD, OH, OW = (int(v) for v in geom[[cg.OD, cg.OH, cg.OW]])
    Cg, Mg, KT = C // G, M // G, int(np.prod(geom[cg.KERNEL]))
    dtype = ctx.inputs[0].dtype
    if dtype in HALF and _mode(geom, Cg, Mg, KT, ctx.attr("weight_shape") is not None, False) == DEPTHWISE:
        bd, _ = _conv_tiling(ctx.cores, DEPTHWISE, N * G, Mg, KT, OD * OH, OD * OH * OW, 1)
        tile, lw, _ = _plan(DEPTHWISE, geom, Cg, Mg, OD * OH, 4)
        return prepare_depthwise16(ctx, geom, bd, tile, lw, activation_args(ctx))
    if dtype in HALF:  # a 16-bit feature map: conv_half.py, in PACKED's blocks
        bd, split = _conv_tiling(ctx.cores, PACKED, N * G, Mg, Cg * KT, OH, OH * OW, PANEL)
        return prepare16(ctx, geom, conv16, bd, split, largest_share(OD * OH, 1, bd) if split == SPATIAL else OD * OH)
    P = 128 // dtype.itemsize  # a GEMM panel: 2 vectors of columns
    double = dtype == np.float64
    if double and ctx.attr("weight_shape") is not None:
        raise ctx.error("packed weights (weight_shape) are float32 only")
    mode = _mode(geom, Cg, Mg, KT, ctx.attr("weight_shape") is not None, double)
    S, rows = OD * OH * OW, OD * OH
    bd, split = _conv_tiling(ctx.cores, mode, N * G, Mg, Cg * KT, rows, S, P)
    mb = largest_share(Mg, 8 if mode != PACKED else P, bd) if split == CHANNELS else Mg
    if split == SPATIAL:
        rows = largest_share(S, P, bd) if mode == POINTWISE else largest_share(rows, 1, bd)
    elif mode == POINTWISE:
        rows = S
    tile, lw, cols = _plan(mode, geom, Cg, mb, rows, dtype.itemsize)
    # the GEMM packs B (the input itself) only for POINTWISE: SHIFTED's and IM2COL's B is already a compact
    # copy in L2, and packing it again cost 10-20% (ResNet-50's 3x3 convs)
    per = lw + (workspace(mb, cols, Cg * KT, dtype, mode == POINTWISE, S) if mode in (POINTWISE, IM2COL, SHIFTED)
                else 0)
    has_b, has_z = ctx.has(2), ctx.has(3)
    act, p0, p1 = activation_args(ctx)
    # absent optional inputs are stood in for by W and X (never read), so one specialization serves all
    inputs = (0, 1, 2 if has_b else 1, 3 if has_z else 0)
    if has_z and ctx.inputs[3].shape != ctx.outputs[0].shape:
        raise ctx.error(f"Z has shape {ctx.inputs[3].shape}, expected the output's {ctx.outputs[0].shape}")
    fn = direct if double else conv if mode == PACKED else depthwise_conv if mode == DEPTHWISE else lowered
    return Launch(fn, (geom, mode, int(has_b), int(has_z), act, p0, p1, tile, split, lw),
                  (TensorSpec((bd * max(per, 1),), dtype),), inputs, tiled=True, block_dim=bd)


register("Conv", infer=_infer_conv)(_prepare_conv)
register("FusedConv", domain="ge", infer=_infer_conv)(_prepare_conv)
native16("Conv", when=lambda n: USE_DEPTHWISE and depthwise16_fits(n))  # 16-bit maps: conv_depthwise_half.py
native16("FusedConv", "ge", lambda n: "weight_shape" in n.attrs or USE_DEPTHWISE and depthwise16_fits(n))


def _conv_transpose_shape(ctx: KernelContext):
    """(geom list, output shape) of a ConvTranspose node: output_shape, output_padding and auto_pad."""
    x, w = ctx.inputs[0].shape, ctx.inputs[1].shape
    nd, k, s, d, pb, pe, G = _common(ctx, w[2:])
    (N, C), M, sp = x[:2], w[1] * G, list(x[2:])
    if G < 1 or C % G or w[0] != C:
        raise ctx.error(f"input channels {C}, weight {w} and group {G} do not fit")
    opad = _ints(ctx, "output_padding", nd, 0)
    auto = ctx.attr("auto_pad", "NOTSET")
    full = [s[i] * (sp[i] - 1) + opad[i] + (k[i] - 1) * d[i] + 1 for i in range(nd)]  # before padding
    out = ctx.attr("output_shape")
    if out is not None:
        out = [int(o) for o in out][-nd:]
    elif auto in ("SAME_UPPER", "SAME_LOWER"):
        out = [sp[i] * s[i] for i in range(nd)]
    if out is not None and (ctx.attr("pads") is None or auto in ("SAME_UPPER", "SAME_LOWER")):
        total = [full[i] - out[i] for i in range(nd)]
        pb = [t // 2 if auto == "SAME_UPPER" else t - t // 2 for t in total]
    elif out is None:
        if auto == "VALID":
            pb = pe = [0] * nd
        out = [full[i] - pb[i] - pe[i] for i in range(nd)]
    if min(out) < 1:
        raise ctx.error(f"output spatial size {out} is empty")
    return _geom(N, C, sp, M, out, k, s, pb, d, G), (N, M, *out)


def _infer_conv_transpose(ctx: KernelContext) -> list[TensorSpec]:
    return [TensorSpec(_conv_transpose_shape(ctx)[1], ctx.inputs[0].dtype)]


@register("ConvTranspose", infer=_infer_conv_transpose)
def _prepare_conv_transpose(ctx: KernelContext) -> Launch:
    geom, _ = _conv_transpose_shape(ctx)
    N, C, M, G = (int(v) for v in geom[[cg.N, cg.C, cg.M, cg.GROUP]])
    Cg, Mg, KT, S_in = C // G, M // G, int(np.prod(geom[cg.KERNEL])), int(np.prod(geom[cg.SPATIAL]))
    bd = block_dim_for(N * G * Mg * KT * Cg * S_in, ctx.cores, MIN_BLOCK_MACS)
    split = PAIRS if N * G % bd == 0 or N * G >= 4 * bd else CHANNELS
    if split == CHANNELS:
        bd = min(bd, Mg)
    mb = Mg if split == PAIRS else largest_share(Mg, 8 if Mg >= 8 * bd else 1, bd)  # as the kernel cuts
    lw = mb * KT * S_in  # col: the block's channels' rows of S_in
    per = lw + workspace(mb * KT, S_in, Cg, ctx.inputs[0].dtype, True, S_in)
    has_b = ctx.has(2)
    return Launch(conv_transpose, (geom, int(has_b), split, lw), (TensorSpec((bd * per,), ctx.inputs[0].dtype),),
                  (0, 1, 2 if has_b else 1), atomic=(0,), tiled=True, block_dim=bd)
