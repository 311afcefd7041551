"""Conv in bfloat16 on AVX512-BF16: bfloat16 activations x bfloat16 weights -> float32 sums with vdpbf16ps
(simd_bf16.py), float32 epilogue, bfloat16 output (GE's Cube unit: 16-bit in, float32 accumulate).

The lowering pack_bf16_convs picks the Convs that allow_mix_precision_bf16 reduces (a bfloat16 input
widened by a Cast, the result narrowed by one) and gives them to this kernel, which reads and writes the
bfloat16 bits itself: no float32 copy of the feature map either side. Per image, AI-core block and strip
of output rows (as many as keep Step 1's planes within STRIP_BYTES):
  Step 1: the strip's input rows are copied into its workspace as one plane per (row phase a < sh, column
          tap kw): plane (a, kw) holds x[(r0 + r) * sh + a - ph, q * sw + kw - pw] at lane r * OW + q, zero
          outside the input, two channels interleaved in each 32-bit lane (pairs of K are vdpbf16ps'
          operand, 16 consecutive positions one zmm load). Tap (kh, kw) reads plane (kh % sh, kw) from row
          kh // sh on: every tap reads OW-wide rows, so the strip's output positions are one contiguous run
          and every tile stores straight into y.
  Step 2: weights are packed once (pack_weights, by the lowering) in groups of MR = 8 output channels:
          for each K pair (channel pair, tap) the 8 channels' bfloat16 pairs, one broadcast each.
  Step 3: a tile of 8 output channels x 32 consecutive positions (of all the strip's rows: no lane idles
          at a row's end) is 16 zmm accumulators; each K pair loads 2 input vectors, broadcasts 8 weight
          pairs and issues 16 vdpbf16ps. A strip's last <= 16 positions are a one-vector tile (_tail: 8
          accumulators, half the work; a 14 x 14 map is 6 tiles and 4 positions), the same bits.
  Step 4: simd_bf16.bvepilogue on each channel's two accumulators: + bias, + Z, Relu, rounded to bfloat16,
          one 64-byte store into y (masked past the strip's last position).
Loops: chunks of tiles whose input stays in L1 / L2 (CHUNK_BYTES) outside, channel groups, then the
chunk's tiles (_tiles, a called function): each group's y rows are written in runs (tiles outside groups
wrote 256 rows a tile and ran 1.5x slower on 64 -> 256 1x1 convs).
Positions sit in the lanes (not channels, as IMPLICIT and conv_vnni do) so the epilogue works on whole
vectors of one channel's contiguous outputs: with channels in the lanes it is a transpose.
Measured (bench/conv_bf16_shapes.py's kernels and ResNet-50's other conv shapes, one core, the versions side
by side in one process, the sum over ResNet-50's 53 convs):
- The epilogue was Numba functions inlined in the tile (_store, _epi, _tile): Numba counts the references
  of the arrays such a function takes, ~100 atomic NRT_incref / NRT_decref calls a tile (vzeroupper and
  every accumulator spilled around each) -- the ~800 cycles a tile measured before. One intrinsic for the
  epilogue and a called _tiles: 57.3 -> 46.3 ms; 64 -> 256 + Z at 56 x 56 1.30 -> 0.58 ms (39 -> 89
  GMAC/s), 3x3 64 -> 64 at 56 x 56 1.39 -> 1.19.
- Step 1 by index runs, not a slice a row (refcounted arrays; LLVM vectorizes unsigned-index loops) and
  zeroing only the padding: 46.3 -> 43.2 ms; the copy alone 0.16 -> 0.04 ms for 256 x 56 x 56, 0.13 ->
  0.007 for 2048 x 7 x 7, 0.29 -> 0.13 for the stride-2 3x3's four phases.
- One plane per column tap (3 for a 3x3) instead of stride phases with rows OW + (KW - 1) // sw wide,
  whose garbage columns idled lanes (56 of 64 on 56- and 28-wide rows) or went through a tile buffer:
  43.2 -> 41.9 ms; 3x3 at 56 x 56 and 28 x 28 98 -> 110 GMAC/s (vdpbf16ps peaks at ~113 here: one a
  cycle). The planes hold KW / min(sw, KW) times the input (3x for a 3x3, 1.5x at stride 2), so:
- Strips: planes of a whole block's rows (19 MB for VGG's 64 -> 64 3x3 at 224 x 224) ran that conv in
  23.7 ms (78 GMAC/s), strips of 512 KB in 17.3 (107; 256 KB 18.2, 1 MB 17.1); ResNet-50's sum the same
  (42.1 -> 42.2 ms, 256 KB 42.9), and the workspace a plan holds stays small.
- Rounding by vcvtneps2bf16 (fptrunc to bfloat) instead of integer ops: 0.5%.
vdpbf16ps reads bfloat16 denormals as zero and vcvtneps2bf16 flushes float32 denormals to zero (Intel's
rules for both): invisible at bfloat16 tolerance.
Blocks (AI cores) take ranges of output rows; K is never split and each output's sum runs over K pairs in
the same order whatever the tile, so the bits are the same for any block count.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..ir.dtypes import BFLOAT16
from .conv import _conv_shape
from . import conv_geom as cg
from .gemm import MIN_BLOCK_MACS
from .registry import KernelContext, Launch, TensorSpec, register
from .simd import host_has
from .simd_bf16 import bvbcast2, bvdot, bvepilogue, bvload2, bvzero
from .tiling import block_dim_for, block_range, largest_share

MR, NP = 8, 32       # a register tile: output channels x positions (2 vectors)
SLACK = NP + 16      # positions past a strip's rows the last tile may read
STRIP_BYTES = 1 << 19  # Step 1's planes for a strip of output rows, at most (unless one row needs more)
CHUNK_BYTES = 1 << 18  # tiles a chunk: their input (all K) stays in L2 for every channel group (1 << 16:
# 10-20% slower on the 56 x 56 convs, 1 << 20 the same)


HAS_BF16 = host_has("avx512bf16")
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
def strip_rows(C, OW, KH, KW, sh, rows):
    """Output rows a strip (of a block's `rows`): as many as keep Step 1's planes within STRIP_BYTES."""
    per_row = (C + 1) // 2 * min(sh, KH) * KW * OW * 4
    return max(1, min(rows, STRIP_BYTES // per_row - (KH - 1) // sh))


@njit(nogil=True, cache=True)
def workspace_size(C, OH, OW, KH, KW, sh, sw, rows):
    """uint16 elements of one block's workspace for `rows` output rows: Step 1's planes for a strip."""
    r = strip_rows(C, OW, KH, KW, sh, rows)
    return (C + 1) // 2 * min(sh, KH) * KW * ((r + (KH - 1) // sh) * OW + SLACK) * 2


@njit(nogil=True, cache=True)
def _rows(x32, d, L, q0, q1, x, s, s1, rs, sw, hm, n):
    """n rows of L lanes from x32[d]: lane q of row r = x[s + r * rs + (q - q0) * sw] | (x[... + s1] & hm) << 16
    for q in [q0, q1), 0 for the other q. Unsigned indices: Numba wraps negative signed ones, and that select
    kept LLVM from vectorizing (slices a row instead: refcounted arrays, ~60 cycles a row)."""
    for r in range(n):
        o, e = np.uint64(d + r * L), np.uint64(s + r * rs)
        for q in range(q0):
            x32[o + np.uint64(q)] = 0
        for q in range(q1, L):
            x32[o + np.uint64(q)] = 0
        if sw == 1:
            for q in range(q1 - q0):
                i = e + np.uint64(q)
                x32[o + np.uint64(q0 + q)] = np.uint32(x[i]) | ((np.uint32(x[i + np.uint64(s1)]) & hm) << 16)
        else:
            for q in range(q1 - q0):
                i = e + np.uint64(q * sw)
                x32[o + np.uint64(q0 + q)] = np.uint32(x[i]) | ((np.uint32(x[i + np.uint64(s1)]) & hm) << 16)


@njit(nogil=True, cache=True)
def _pack_input(x, xo, C, H, W, xp, PL, OW, R, r0, sh, sw, ph, pw, A, KW):
    """Step 1: plane (c2, a, kw) of xp, lane r * OW + q (uint32) = x[2 c2 + (0, 1), (r0 + r) * sh + a - ph,
    q * sw + kw - pw], 0 outside the input. Only the padding is zeroed; rows that follow each other in both
    layouts (stride 1, no column padding: 1x1 convs) are one run."""
    x32 = xp[:(C + 1) // 2 * A * KW * PL * 2].view(np.uint32)
    HW = H * W
    for c2 in range((C + 1) // 2):
        c0 = c2 * 2
        hm = np.uint32(0xFFFF) if c0 + 1 < C else np.uint32(0)  # an odd C's last pair: 0 in the high half
        s1 = HW if c0 + 1 < C else 0
        for a in range(A):
            for kw in range(KW):
                base = ((c2 * A + a) * KW + kw) * PL
                q0 = min(OW, max(0, -(-(pw - kw) // sw)))            # first column inside the input
                q1 = max(q0, min(OW, (W - 1 + pw - kw) // sw + 1))  # one past the last
                rl = min(R, max(0, -(-(ph - a - r0 * sh) // sh)))    # rows inside the input: [rl, rh)
                rh = max(rl, min(R, (H - 1 + ph - a - r0 * sh) // sh + 1))
                x32[base:base + rl * OW] = 0
                x32[base + rh * OW:base + PL] = 0
                if rh == rl:
                    continue
                s = xo + c0 * HW + ((r0 + rl) * sh + a - ph) * W + q0 * sw + kw - pw  # x at (rl, q0)
                if sw == 1 and sh == 1 and q0 == 0 and q1 == OW and OW == W:  # whole rows: one run
                    _rows(x32, base + rl * OW, (rh - rl) * W, 0, (rh - rl) * W, x, s, s1, 0, 1, hm, 1)
                else:
                    _rows(x32, base + rl * OW, OW, q0, q1, x, s, s1, sh * W, sw, hm, rh - rl)


@njit(nogil=True, cache=True)
def _offsets(C2, KH, KW, sh, PL, OW, koff):
    """koff[c2 * KH * KW + tap]: where K pair (c2, tap) reads (uint16 elements) in Step 1's layout."""
    A = min(sh, KH)
    for c2 in range(C2):
        for kh in range(KH):
            for kw in range(KW):
                koff[(c2 * KH + kh) * KW + kw] = (((c2 * A + kh % sh) * KW + kw) * PL + (kh // sh) * OW) * 2


@njit(nogil=True, cache=True)
def _tiles(xp, wp, y, b, z, koff, g, i0, i1, cols, yo, M, S, has_z, relu):
    """Steps 3 and 4 for channel group g, tiles [i0, i1) of the block's `cols` positions (y offset yo):
    a called function, not inlined (Numba counts the references of the arrays an inlined function takes:
    atomic calls every tile)."""
    for i in range(i0, i1):
        p = i * NP
        n = min(NP, cols - p)
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
        # Step 4: channel m0 + j's epilogue on its two accumulators; channels past M store nothing (n = 0)
        m0, L = g * MR, M - 1
        o = m0 * S + yo + p
        bvepilogue(y, o, a00, a01, b[m0], z, o, has_z, relu, n)
        o += S
        bvepilogue(y, o, a10, a11, b[min(m0 + 1, L)], z, o, has_z, relu, n * (m0 + 1 < M))
        o += S
        bvepilogue(y, o, a20, a21, b[min(m0 + 2, L)], z, o, has_z, relu, n * (m0 + 2 < M))
        o += S
        bvepilogue(y, o, a30, a31, b[min(m0 + 3, L)], z, o, has_z, relu, n * (m0 + 3 < M))
        o += S
        bvepilogue(y, o, a40, a41, b[min(m0 + 4, L)], z, o, has_z, relu, n * (m0 + 4 < M))
        o += S
        bvepilogue(y, o, a50, a51, b[min(m0 + 5, L)], z, o, has_z, relu, n * (m0 + 5 < M))
        o += S
        bvepilogue(y, o, a60, a61, b[min(m0 + 6, L)], z, o, has_z, relu, n * (m0 + 6 < M))
        o += S
        bvepilogue(y, o, a70, a71, b[min(m0 + 7, L)], z, o, has_z, relu, n * (m0 + 7 < M))



@njit(nogil=True, cache=True)
def _tail(xp, wp, y, b, z, koff, g, p, n, yo, M, S, has_z, relu):
    """A strip's last n <= 16 positions (from p) for channel group g: one vector a channel, half _tiles'
    vdpbf16ps (a 14 x 14 map's 196 positions are 6 tiles and 4 positions: 7 tiles' work before, 6.5 now).
    Each lane sums its K pairs in _tiles' order: the same bits as a full tile's lanes."""
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = bvzero(xp)
    q = g * koff.size * MR * 2
    xo = p * 2
    for k in range(koff.size):
        x0 = bvload2(xp, xo + koff[k])
        a0, a1 = bvdot(a0, x0, bvbcast2(wp, q)), bvdot(a1, x0, bvbcast2(wp, q + 2))
        a2, a3 = bvdot(a2, x0, bvbcast2(wp, q + 4)), bvdot(a3, x0, bvbcast2(wp, q + 6))
        a4, a5 = bvdot(a4, x0, bvbcast2(wp, q + 8)), bvdot(a5, x0, bvbcast2(wp, q + 10))
        a6, a7 = bvdot(a6, x0, bvbcast2(wp, q + 12)), bvdot(a7, x0, bvbcast2(wp, q + 14))
        q += MR * 2
    m0, L, zero = g * MR, M - 1, bvzero(xp)
    o = m0 * S + yo + p
    bvepilogue(y, o, a0, zero, b[m0], z, o, has_z, relu, n)
    bvepilogue(y, o + S, a1, zero, b[min(m0 + 1, L)], z, o + S, has_z, relu, n * (m0 + 1 < M))
    bvepilogue(y, o + 2 * S, a2, zero, b[min(m0 + 2, L)], z, o + 2 * S, has_z, relu, n * (m0 + 2 < M))
    bvepilogue(y, o + 3 * S, a3, zero, b[min(m0 + 3, L)], z, o + 3 * S, has_z, relu, n * (m0 + 3 < M))
    bvepilogue(y, o + 4 * S, a4, zero, b[min(m0 + 4, L)], z, o + 4 * S, has_z, relu, n * (m0 + 4 < M))
    bvepilogue(y, o + 5 * S, a5, zero, b[min(m0 + 5, L)], z, o + 5 * S, has_z, relu, n * (m0 + 5 < M))
    bvepilogue(y, o + 6 * S, a6, zero, b[min(m0 + 6, L)], z, o + 6 * S, has_z, relu, n * (m0 + 6 < M))
    bvepilogue(y, o + 7 * S, a7, zero, b[min(m0 + 7, L)], z, o + 7 * S, has_z, relu, n * (m0 + 7 < M))

@njit(nogil=True, cache=True)
def bf16_conv(x, w, b, z, y, ws, geom, has_z, relu, block_idx, block_dim):
    """y = relu?(conv(x, w) + b + z) in bfloat16 bits for block block_idx's output rows; w is pack_weights'
    layout; geom as conv.py's (2-D convs: D = KD = OD = 1)."""
    N, C, H, W = geom[cg.N], geom[cg.C], geom[cg.H], geom[cg.W]
    M, OH, OW = geom[cg.M], geom[cg.OH], geom[cg.OW]
    KH, KW, sh, sw, ph, pw = geom[cg.KH], geom[cg.KW], geom[cg.SH], geom[cg.SW], geom[cg.PH], geom[cg.PW]
    t0, t1 = block_range(OH, 1, block_idx, block_dim)
    if t0 >= t1:
        return
    per = ws.size // block_dim
    xp = ws[block_idx * per:(block_idx + 1) * per]
    SR, C2, KT = strip_rows(C, OW, KH, KW, sh, t1 - t0), (C + 1) // 2, KH * KW
    PL, A = (SR + (KH - 1) // sh) * OW + SLACK, min(sh, KH)  # a plane's lanes; the row phases some tap reads
    koff = np.empty(C2 * KT, np.int64)
    _offsets(C2, KH, KW, sh, PL, OW, koff)
    S = OH * OW
    chunk = max(1, CHUNK_BYTES // (C2 * KT * 4 * NP))
    for n in range(N):
        yn = y[n * M * S:(n + 1) * M * S]
        zn = z[n * M * S:(n + 1) * M * S] if has_z else z
        for s0 in range(t0, t1, SR):  # a strip of output rows: Step 1, then its tiles
            rows = min(SR, t1 - s0)
            _pack_input(x, n * C * H * W, C, H, W, xp, PL, OW, rows + (KH - 1) // sh, s0, sh, sw, ph, pw, A, KW)
            cols = rows * OW
            tiles = (cols + NP - 1) // NP
            tail = cols - (tiles - 1) * NP <= NP // 2   # the last tile's positions fit one vector: _tail
            for c0 in range(0, tiles, chunk):  # a chunk of tiles (their input in L1 / L2) for every group
                c1 = min(tiles, c0 + chunk)
                last = tail and c1 == tiles
                for g in range((M + MR - 1) // MR):
                    _tiles(xp, w, yn, b, zn, koff, g, c0, c1 - 1 if last else c1, cols, s0 * OW, M, S, has_z, relu)
                    if last:
                        p = (tiles - 1) * NP
                        _tail(xp, w, yn, b, zn, koff, g, p, cols - p, s0 * OW, M, S, has_z, relu)


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
    if geom[cg.GROUP] != 1 or (geom[cg.DILATIONS] != 1).any():
        raise ctx.error("grouped or dilated convs are not supported")
    return [TensorSpec(out, BFLOAT16)]


@register("ConvBF16", domain="ge", infer=_infer)
def _prepare(ctx: KernelContext) -> Launch:
    """ge::ConvBF16(x:bf16, W packed:bf16, B:f32, [Z:bf16])[conv attributes, weight_shape, activation]."""
    geom, out = _conv_shape(_float_view(ctx))
    act = ctx.attr("activation", "") or ""
    if act not in ("", "Relu"):
        raise ctx.error(f"activation '{act}' is not supported here; supported: Relu")
    N, C, M, OH, OW = (int(v) for v in geom[[cg.N, cg.C, cg.M, cg.OH, cg.OW]])
    KH, KW, sh, sw = (int(v) for v in geom[[cg.KH, cg.KW, cg.SH, cg.SW]])
    has_z = ctx.has(3)
    if not ctx.has(2):
        raise ctx.error("the bias B is required (pack_bf16_convs gives zeros when the Conv has none)")
    if has_z and tuple(ctx.inputs[3].shape) != tuple(out):
        raise ctx.error(f"Z must have the output's shape {list(out)}, got {list(ctx.inputs[3].shape)}")
    bd = max(1, min(block_dim_for(N * M * C * KH * KW * OH * OW, ctx.cores, MIN_BLOCK_MACS), OH))
    per = workspace_size(C, OH, OW, KH, KW, sh, sw, largest_share(OH, 1, bd))
    # an absent Z is stood in for by x (never read): one specialization serves both
    return Launch(bf16_conv, (geom, int(has_z), int(act == "Relu")),
                  (TensorSpec((bd * per,), np.uint16),), (0, 1, 2, 3 if has_z else 0), tiled=True, block_dim=bd)
