"""Conv in bfloat16 on AVX512-BF16: bfloat16 activations x bfloat16 weights -> float32 sums with vdpbf16ps
(simd_bf16.py), float32 epilogue, bfloat16 output (GE's Cube unit: 16-bit in, float32 accumulate).

The lowering pack_bf16_convs picks the Convs that allow_mix_precision_bf16 reduces (a bfloat16 input
widened by a Cast, the result narrowed by one) and gives them to this kernel, which reads and writes the
bfloat16 bits itself: no float32 copy of the feature map either side. Per image and AI-core block:
  Step 1: the block's input rows are copied into its workspace split into the stride phases its taps read
          (SHIFTED's layout in conv.py: tap (kh, kw) reads phase (kh % sh, kw % sw) shifted by (kh // sh,
          kw // sw)), zero-padded, rows Wq = OW + (KW - 1) // sw wide, two channels interleaved in each
          32-bit lane: pairs of K are vdpbf16ps' operand, and 16 consecutive positions are one zmm load.
  Step 2: weights are packed once (pack_weights, by the lowering) in groups of MR = 8 output channels:
          for each K pair (channel pair, tap) the 8 channels' bfloat16 pairs, one broadcast each.
  Step 3: a tile of 8 output channels x 32 positions is 16 zmm accumulators; each K pair loads 2 input
          vectors, broadcasts 8 weight pairs and issues 16 vdpbf16ps. Tiles are 32 positions of one output
          row when rows are wide (ROW_TILES), else 32 columns of the grid of all the block's rows (row r,
          column c < Wq; columns c >= OW are garbage), so 14- and 7-wide rows leave no lanes idle.
  Step 4: epilogue on the accumulators: + bias, + Z (widened), Relu, rounded to bfloat16 (nearest even),
          one 64-byte store per channel (masked at a row's end) straight into y; a grid tile with garbage
          columns goes through a small buffer, valid columns only.
Loops: chunks of tiles whose input stays in L1 / L2 (CHUNK_BYTES) outside, channel groups, then the
chunk's tiles: each group's y rows are written in runs (tiles outside groups wrote 256 rows a tile and
ran 1.5x slower on 64 -> 256 1x1 convs).
Positions sit in the lanes (not channels, as IMPLICIT and conv_vnni do) so the epilogue works on whole
vectors of one channel's contiguous outputs: with channels in the lanes it is a transpose.
_tile, _store and _epi are inlined in Numba's IR from one call site each (as calls, with literal arguments,
each literal mix compiled its own copy: 24 s cold; as by_type calls 12 s, and 1x1 convs ran 10-20% slower
than now, ~9 s cold).
vdpbf16ps reads bfloat16 denormals as zero (Intel's rule for the instruction): invisible at bfloat16 tolerance.
Blocks (AI cores) take ranges of output rows; K is never split and each output's sum runs over K pairs in
the same order whatever the tile, so the bits are the same for any block count.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..ir.dtypes import BFLOAT16
from .conv import _conv_shape
from .gemm import MIN_BLOCK_MACS
from .registry import KernelContext, Launch, TensorSpec, register
from .simd_bf16 import bvadd_bf16, bvbcast2, bvbias_relu, bvdot, bvload2, bvstore32, bvzero
from .tiling import block_dim_for, block_range, largest_share

MR, NP = 8, 32       # a register tile: output channels x positions (2 vectors)
SLACK = NP + 16      # positions past a block's grid the last tile may read
ROW_TILES = 24       # output rows at least this wide are tiled row by row
CHUNK_BYTES = 1 << 18  # tiles a chunk: their input (all K) stays in L2 for every channel group (1 << 16:
# 10-20% slower on the 56 x 56 convs, 1 << 20 the same)


def _has_bf16() -> bool:
    import llvmlite.binding as llvm
    try:
        llvm.initialize_native_target()
        return "+avx512bf16" in llvm.get_host_cpu_features().flatten()
    except Exception:  # no host feature query: take the float32 path
        return False


HAS_BF16 = _has_bf16()
USE_BF16 = True  # False: pack_bf16_convs lowers nothing, the float32 path runs (for bisecting)


def packed_size(M: int, C: int, KH: int, KW: int) -> int:
    """uint16 elements of pack_weights' layout."""
    return -(-M // MR) * (-(-C // 2)) * KH * KW * MR * 2


@njit(nogil=True, cache=True)
def pack_weights(w, M, C, KH, KW, wp):
    """wp[group, c // 2, kh, kw, j, c % 2] = w[group * 8 + j, c, kh, kw] (bfloat16 bits; 0 past M or C)."""
    C2, KT = (C + 1) // 2, KH * KW
    wp[:] = 0
    for m in range(M):
        g, j = m // MR, m % MR
        for c in range(C):
            for t in range(KT):
                wp[((((g * C2 + c // 2) * KT + t) * MR + j) * 2) + c % 2] = w[(m * C + c) * KT + t]


@njit(nogil=True, cache=True)
def workspace_size(C, OH, OW, KH, KW, sh, sw, rows):
    """uint16 elements of one block's workspace for `rows` output rows: the phased input, the tile buffer."""
    Wq, R = OW + (KW - 1) // sw, rows + (KH - 1) // sh
    return (C + 1) // 2 * min(sh, KH) * min(sw, KW) * (R * Wq + SLACK) * 2 + MR * NP


@njit(nogil=True, cache=True)
def _pair(dst, lo, hi, odd):
    """dst[i] = lo[i] | hi[i] << 16 as uint32 lanes (hi: 0 when not odd)."""
    m = np.uint32(0xFFFF if odd else 0)
    for i in range(dst.size):
        dst[i] = np.uint32(lo[i]) | ((np.uint32(hi[i]) & m) << 16)


@njit(nogil=True, cache=True)
def _pack_input(x, xo, C, H, W, xp, PL, Wq, R, r0, sh, sw, ph, pw, A, B):
    """Step 1: xp[c2, phase a, b][r * Wq + q] (as uint32 lanes) = x[c2*2 + (0, 1), (r0 + r) * sh + a - ph,
    q * sw + b - pw], 0 outside the input."""
    x32 = xp[:(C + 1) // 2 * A * B * PL * 2].view(np.uint32)
    x32[:] = 0
    for c2 in range((C + 1) // 2):
        c0, odd = c2 * 2, c2 * 2 + 1 < C
        for a in range(A):
            for b in range(B):
                base = ((c2 * A + a) * B + b) * PL
                q0 = max(0, -(-(pw - b) // sw))          # first column inside the input
                q1 = min(Wq, (W - 1 + pw - b) // sw + 1)  # one past the last
                if q1 <= q0:
                    continue
                for r in range(R):
                    h = (r0 + r) * sh + a - ph
                    if h < 0 or h >= H:
                        continue
                    lo = x[xo + (c0 * H + h) * W:]
                    hi = x[xo + ((c0 + 1) * H + h) * W:] if odd else lo
                    dst = x32[base + r * Wq:]
                    if sw == 1:  # contiguous: vectorizes
                        _pair(dst[q0:q1], lo[q0 + b - pw:q1 + b - pw], hi[q0 + b - pw:q1 + b - pw], odd)
                    else:
                        for q in range(q0, q1):
                            col = q * sw + b - pw
                            dst[q] = np.uint32(lo[col]) | (np.uint32(hi[col] if odd else 0) << 16)


@njit(nogil=True, cache=True)
def _offsets(C2, KH, KW, sh, sw, PL, Wq, koff):
    A, B = min(sh, KH), min(sw, KW)
    """koff[c2 * KH * KW + tap]: where K pair (c2, tap) reads (uint16 elements) in Step 1's layout."""
    for c2 in range(C2):
        for kh in range(KH):
            for kw in range(KW):
                koff[(c2 * KH + kh) * KW + kw] = ((((c2 * A + kh % sh) * B + kw % sw) * PL + (kh // sh) * Wq +
                                                   kw // sw) * 2)


@njit(nogil=True, cache=True, inline="always")
def _epi(v, b, z, zo, has_z, relu):
    """Step 4's arithmetic on one accumulator: + bias, + Z[zo:zo+16] when has_z, Relu."""
    v = bvbias_relu(v, b, 0)
    if has_z:
        v = bvadd_bf16(v, z, zo)
    return bvbias_relu(v, 0.0, relu)


@njit(nogil=True, cache=True, inline="always")
def _store(v0, v1, y, tb, j, m, M, b, z, has_z, relu, yo, n, direct):
    """Step 4 for tile row j (channel m): its two accumulators, positions yo .. yo + n (n <= 32)."""
    if m >= M:
        return
    if direct:  # one 64-byte store a channel: the two halves of a row written apart cost 40% more
        bvstore32(y, yo, _epi(v0, b[m], z, yo, has_z, relu), _epi(v1, b[m], z, yo + 16, has_z and n > 16, relu), n)
    else:
        bvstore32(tb, j * NP, _epi(v0, b[m], z, 0, False, relu), _epi(v1, b[m], z, 0, False, relu), NP)


@njit(nogil=True, cache=True, inline="always")
def _tile(xp, wp, y, tb, b, z, koff, g, p, n, yo, direct, OW, Wq, M, S, has_z, relu):
    """Steps 3 and 4 for channel group g, grid columns [p, p + n) (n <= 32): stored at y offset yo when
    direct, else through the tile buffer into the valid columns (yo: y's offset of grid column 0)."""
    K2 = koff.size
    a00 = a01 = a10 = a11 = a20 = a21 = a30 = a31 = bvzero(xp)
    a40 = a41 = a50 = a51 = a60 = a61 = a70 = a71 = bvzero(xp)
    q = g * K2 * MR * 2
    xo = p * 2
    for k in range(koff.size):
        o = xo + koff[k]
        x0, x1 = bvload2(xp, o), bvload2(xp, o + 32)
        w = bvbcast2(wp, q)
        a00, a01 = bvdot(a00, x0, w), bvdot(a01, x1, w)
        w = bvbcast2(wp, q + 2)
        a10, a11 = bvdot(a10, x0, w), bvdot(a11, x1, w)
        w = bvbcast2(wp, q + 4)
        a20, a21 = bvdot(a20, x0, w), bvdot(a21, x1, w)
        w = bvbcast2(wp, q + 6)
        a30, a31 = bvdot(a30, x0, w), bvdot(a31, x1, w)
        w = bvbcast2(wp, q + 8)
        a40, a41 = bvdot(a40, x0, w), bvdot(a41, x1, w)
        w = bvbcast2(wp, q + 10)
        a50, a51 = bvdot(a50, x0, w), bvdot(a51, x1, w)
        w = bvbcast2(wp, q + 12)
        a60, a61 = bvdot(a60, x0, w), bvdot(a61, x1, w)
        w = bvbcast2(wp, q + 14)
        a70, a71 = bvdot(a70, x0, w), bvdot(a71, x1, w)
        q += MR * 2
    m0 = g * MR
    _store(a00, a01, y, tb, 0, m0, M, b, z, has_z, relu, m0 * S + yo, n, direct)
    _store(a10, a11, y, tb, 1, m0 + 1, M, b, z, has_z, relu, (m0 + 1) * S + yo, n, direct)
    _store(a20, a21, y, tb, 2, m0 + 2, M, b, z, has_z, relu, (m0 + 2) * S + yo, n, direct)
    _store(a30, a31, y, tb, 3, m0 + 3, M, b, z, has_z, relu, (m0 + 3) * S + yo, n, direct)
    _store(a40, a41, y, tb, 4, m0 + 4, M, b, z, has_z, relu, (m0 + 4) * S + yo, n, direct)
    _store(a50, a51, y, tb, 5, m0 + 5, M, b, z, has_z, relu, (m0 + 5) * S + yo, n, direct)
    _store(a60, a61, y, tb, 6, m0 + 6, M, b, z, has_z, relu, (m0 + 6) * S + yo, n, direct)
    _store(a70, a71, y, tb, 7, m0 + 7, M, b, z, has_z, relu, (m0 + 7) * S + yo, n, direct)
    if not direct:  # the valid columns of the tile buffer into y's rows, a run of one grid row at a time
        r, ow, k = p // Wq, p % Wq, 0
        while k < n:
            run = min(n - k, Wq - ow)
            valid = min(run, OW - ow)
            if valid > 0:
                for j in range(min(MR, M - m0)):  # a loop: a slice assignment may copy through a temporary
                    dst, src = (m0 + j) * S + yo + r * OW + ow, j * NP + k
                    for i in range(valid):
                        y[dst + i] = tb[src + i]
            k, ow, r = k + run, 0, r + 1


@njit(nogil=True, cache=True)
def bf16_conv(x, w, b, z, y, ws, geom, has_z, relu, block_idx, block_dim):
    """y = relu?(conv(x, w) + b + z) in bfloat16 bits for block block_idx's output rows; w is pack_weights'
    layout; geom as conv.py's (2-D convs: D = KD = OD = 1)."""
    N, C, H, W, M, OH, OW = geom[0], geom[1], geom[3], geom[4], geom[5], geom[7], geom[8]
    KH, KW, sh, sw, ph, pw = geom[10], geom[11], geom[13], geom[14], geom[16], geom[17]
    t0, t1 = block_range(OH, 1, block_idx, block_dim)
    if t0 >= t1:
        return
    per = ws.size // block_dim
    wsb = ws[block_idx * per:(block_idx + 1) * per]
    Wq, R, C2, KT = OW + (KW - 1) // sw, t1 - t0 + (KH - 1) // sh, (C + 1) // 2, KH * KW
    PL = R * Wq + SLACK
    A, B = min(sh, KH), min(sw, KW)  # the stride phases some tap reads
    xp, tb = wsb[:C2 * A * B * PL * 2], wsb[C2 * A * B * PL * 2:C2 * A * B * PL * 2 + MR * NP]
    koff = np.empty(C2 * KT, np.int64)
    _offsets(C2, KH, KW, sh, sw, PL, Wq, koff)
    S = OH * OW
    for n in range(N):
        _pack_input(x, n * C * H * W, C, H, W, xp, PL, Wq, R, t0, sh, sw, ph, pw, A, B)
        yn = y[n * M * S:(n + 1) * M * S]
        zn = z[n * M * S:(n + 1) * M * S] if has_z else z
        # tiles: 32 positions of one output row (stored directly, the row's tail masked) when rows are
        # wide, else 32 columns of the grid of all the block's rows (narrow rows would leave lanes idle)
        by_row = Wq != OW and OW >= ROW_TILES
        per_row = (OW + NP - 1) // NP
        cols = (t1 - t0) * Wq
        tiles = (t1 - t0) * per_row if by_row else (cols + NP - 1) // NP
        chunk = max(1, CHUNK_BYTES // (C2 * KT * 4 * NP))
        for c0 in range(0, tiles, chunk):  # a chunk of tiles (their input in L1 / L2) for every channel group
            for g in range((M + MR - 1) // MR):
                for i in range(c0, min(tiles, c0 + chunk)):
                    if by_row:
                        r, ow0 = i // per_row, i % per_row * NP
                        p, n, yo, direct = r * Wq + ow0, min(NP, OW - ow0), (t0 + r) * OW + ow0, True
                    else:
                        p, n, direct = i * NP, min(NP, cols - i * NP), Wq == OW
                        yo = t0 * OW + (p if direct else 0)
                    _tile(xp, w, yn, tb, b, zn, koff, g, p, n, yo, direct, OW, Wq, M, S, has_z, relu)


# -- the op ---------------------------------------------------------------------------------------------

def _float_view(ctx: KernelContext) -> KernelContext:
    """ctx as a float32 Conv of the packed weights' `weight_shape`: conv.py's shape rules read it."""
    shape = tuple(int(d) for d in ctx.attr("weight_shape", ()))
    if len(shape) != 4 or min(shape) < 1 or tuple(ctx.inputs[1].shape) != (packed_size(*shape),):
        raise ctx.error(f"packed weights of shape {list(shape)} need "
                        f"{packed_size(*shape) if len(shape) == 4 else '?'} elements, got {list(ctx.inputs[1].shape)}")
    attrs = {k: v for k, v in ctx.attrs.items() if k not in ("weight_shape", "activation")}
    specs = [TensorSpec(ctx.inputs[0].shape, np.float32), TensorSpec(shape, np.float32)]
    return KernelContext(ctx.op_type, ctx.name, attrs, specs, [None, None], ctx.opset, cores=ctx.cores)


def _infer(ctx: KernelContext) -> list[TensorSpec]:
    for i in (0, 1, 3):
        if ctx.has(i) and ctx.inputs[i].dtype != BFLOAT16:
            raise ctx.error(f"input {i} has dtype {ctx.inputs[i].dtype}, expected bfloat16")
    if ctx.has(2) and ctx.inputs[2].dtype != np.float32:
        raise ctx.error(f"bias has dtype {ctx.inputs[2].dtype}, expected float32")
    if len(ctx.inputs[0].shape) != 4:
        raise ctx.error(f"expected a 4-D input, got {list(ctx.inputs[0].shape)}")
    fctx = _float_view(ctx)
    geom, out = _conv_shape(fctx)
    if geom[21] != 1 or (geom[18:21] != 1).any():
        raise ctx.error("grouped or dilated convs are not supported")
    return [TensorSpec(out, BFLOAT16)]


@register("ConvBF16", domain="ge", infer=_infer)
def _prepare(ctx: KernelContext) -> Launch:
    """ge::ConvBF16(x:bf16, W packed:bf16, B:f32, [Z:bf16])[conv attributes, weight_shape, activation]."""
    geom, out = _conv_shape(_float_view(ctx))
    act = ctx.attr("activation", "") or ""
    if act not in ("", "Relu"):
        raise ctx.error(f"activation '{act}' is not supported here; supported: Relu")
    N, C, M, OH, OW = (int(v) for v in geom[[0, 1, 5, 7, 8]])
    KH, KW, sh, sw = (int(v) for v in geom[[10, 11, 13, 14]])
    has_z = ctx.has(3)
    if not ctx.has(2):
        raise ctx.error("the bias B is required (pack_bf16_convs gives zeros when the Conv has none)")
    if has_z and (tuple(ctx.inputs[3].shape) != tuple(out) or KW > 1):
        raise ctx.error(f"Z must have the output's shape {list(out)} and the kernel be 1 wide "
                        f"(got {list(ctx.inputs[3].shape)}, kernel width {KW})")
    bd = max(1, min(block_dim_for(N * M * C * KH * KW * OH * OW, ctx.cores, MIN_BLOCK_MACS), OH))
    per = workspace_size(C, OH, OW, KH, KW, sh, sw, largest_share(OH, 1, bd))
    # an absent Z is stood in for by x (never read): one specialization serves both
    return Launch(bf16_conv, (geom, int(has_z), int(act == "Relu")),
                  (TensorSpec((bd * per,), np.uint16),), (0, 1, 2, 3 if has_z else 0), tiled=True, block_dim=bd)
