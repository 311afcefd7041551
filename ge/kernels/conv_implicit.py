"""IMPLICIT: a conv as the GEMM y^T[positions, channels] = im2col(x)^T @ W^T, output channels across the
vector lanes (conv.py's module doc says when it runs).

The register tile is 8 output positions x 2 vectors of output channels (16 zmm, gemm's micro-kernel turned
around): per k = (input channel, kh, kw), two vector loads of the packed weights and eight broadcasts of
input values. A position's input value for tap k sits at its base + koff[k], so the 8 positions of a
tile may lie anywhere (across output rows, at any stride or dilation): no im2col, no grid of padded
columns, no lanes lost to a 7- or 14-wide plane. The tile is transposed in registers (vtrans8) and stored
as 8 positions of each channel. Measured on one core against the positions-across-lanes lowerings
(SHIFTED, POINTWISE; see conv.py's doc for the figures).

- Weights: packed (`pack`) as [group][panel][k][panel width]: panels of 2 vectors of channels, the last
  one vector wide when the group's channels (rounded up to a vector) end there. A FusedConv with a
  `weight_shape` attribute holds them packed (passes/pack_conv_weights); convs without run the other
  lowerings (conv.py).
- Input: read in place when the conv has no padding; else a tile of output rows copies the input rows it
  reads, zero-padded (all its channels: conv_lowering._pad_copy without stride phases), sized to stay in
  L2 while every panel of weights sweeps it.
- Loops per tile of output rows: panels (each K x 2 vectors, from L2) outside, tiles of 8 positions inside;
  a panel's first two tiles prefetch the next panel into L2, a cache line a k step (K lines: its first
  half, then its second; the tails the second half again). Before, the last tile prefetched one line of
  each of its rows (half of it), too late when the last tile is short: a 7 x 7 plane's is one position.
  In a model the weights come from memory (ResNet-50's 100 MB): on the Zen 5 EPYC, one core, four convs'
  weights in turn (2026-12-07), 512 -> 2048 1x1 on 7 x 7 0.78-0.84 -> 0.57-0.64 ms, 2048 -> 512 0.73 ->
  0.57, 14 x 14 .. 56 x 56 planes within the noise;
  bias and ReLU or Clip (epilogue.vclamp) on the accumulators of the 8-position tiles before the
  transpose (a vector of channels: a vector of biases); a residual, another activation, or the 4- and
  1-position tails per channel over the rows just written (the epilogue). In registers, one core, the
  same launches alternating (shared machine): 16 -> 64 1x1 on 55 x 55 (SqueezeNet's fire) 0.101 -> 0.093
  ms, 32 -> 128 1x1 on 27 x 27 0.076 -> 0.072, 64 -> 256 1x1 with Clip on 13 x 13 0.075 -> 0.067, 3x3s
  within 2%; same bits. Costs ~10 s of cold compile (all four in-register activations and the tails: 24 s).
Every output element is one FMA chain over k in increasing order from 0, as in gemm.py: the bits equal
SHIFTED's and IM2COL's and do not depend on tiles, blocks or the core count.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .conv_lowering import _channel_stride, _pad_copy
from .epilogue import CLIP, NONE, RELU, epilogue, vclamp
from .simd import vbcast, vfma, vlanes, vload, vload_n, vprefetch_l2, vsplat, vstore_hi, vstore_n, vtrans8, vzero
from .specialize import by_type

A_BYTES = 1 << 19  # a tile of output rows reads at most this much input (padded copy or in place): half of L2;
# 1 << 18 swept every panel twice on a 512 x 14 x 14 3x3 conv: 9.3 -> 8.6 ms (onnxruntime 8.5), ResNet-50 the same


def padded_channels(Mg: int, lanes: int) -> int:
    """A group's output channels rounded up to whole vectors (the packed panels' width)."""
    return -(-Mg // lanes) * lanes


def pack(w: np.ndarray, group: int) -> np.ndarray:
    """W [M, Cg, k...] in IMPLICIT's packed layout (pack_group's, group after group), 1-D."""
    M, K = w.shape[0], int(np.prod(w.shape[1:]))
    Mg, lanes = M // group, 64 // w.dtype.itemsize
    flat = np.ascontiguousarray(w.reshape(-1))
    out = np.empty(group * K * padded_channels(Mg, lanes), w.dtype)
    for g in range(group):
        pack_group(flat, g, Mg, K, out, g * K * padded_channels(Mg, lanes))
    return out


IN_PLACE, PADDED, COMPACT = range(3)  # how a tile reads its input


@njit(nogil=True, cache=True)
def input_layout(H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw):
    """(how, Wp, sh, sw, ext): the input read in place (no padding), a zero-padded copy of the rows a tile
    reads, or for a strided 1x1 conv a compact copy of just the positions it reads (ResNet-50's 1024 x
    14 x 14 -> 2048 /2: the strided rows in place spanned 4x the input, and tiles of them streamed its 8 MB
    of weights 4 times); then the row width, strides and input rows per output row of that layout."""
    if ph == 0 and pw == 0 and (OH - 1) * sh + (KH - 1) * dh < H and (OW - 1) * sw + (KW - 1) * dw < W:
        if KH * KW == 1 and (sh > 1 or sw > 1):
            return COMPACT, OW, 1, 1, 1
        return IN_PLACE, W, sh, sw, (KH - 1) * dh + 1
    return PADDED, (OW - 1) * sw + (KW - 1) * dw + 1, sh, sw, (KH - 1) * dh + 1


@njit(nogil=True, cache=True)
def pack_group(w, g, Mg, K, wp, wo):
    """Group g of w [G*Mg, K] into wp[wo:] as panels: panel j (channels 2L*j...) at wo + 2L*j*K, its row k
    at + k*width; channels past Mg are zeros."""
    L = vlanes(wp)
    Mp = (Mg + L - 1) // L * L
    for j0 in range(0, Mp, 2 * L):
        width = min(2 * L, Mp - j0)
        o = wo + j0 * K
        for k in range(K):
            for c in range(width):
                m = j0 + c
                wp[o + k * width + c] = w[(g * Mg + m) * K + k] if m < Mg else 0.0


@njit(nogil=True, cache=True, inline="always")
def _store(y, yo, S, T, ch, n, nch):
    """A transposed tile's vectors T (vtrans8 of one vector of channels) into channels ch.. of y (rows
    S apart), n positions each; channels from nch on are not stored."""
    per = vlanes(y) // 8
    for j in range(8):
        m = ch + j * per
        if m < nch:
            vstore_n(y, yo + m * S, T[j], n)
        if per == 2 and m + 1 < nch:
            vstore_hi(y, yo + (m + 1) * S, T[j], n)


@njit(nogil=True, cache=True, inline="always")
def _finish8(fin, bv, c0, c1, c2, c3, c4, c5, c6, c7):
    """vclamp on 8 positions' vectors of the same channels (bias vector bv)."""
    _, _, _, act, k0, k1, lo = fin
    return (vclamp(c0, bv, act, k0, k1, lo), vclamp(c1, bv, act, k0, k1, lo), vclamp(c2, bv, act, k0, k1, lo),
            vclamp(c3, bv, act, k0, k1, lo), vclamp(c4, bv, act, k0, k1, lo), vclamp(c5, bv, act, k0, k1, lo),
            vclamp(c6, bv, act, k0, k1, lo), vclamp(c7, bv, act, k0, k1, lo))


@njit(nogil=True, cache=True, inline="always")
def _bases(ao, pb, t0, npos, r):
    return ao + pb[min(t0 + r, npos - 1)]


@njit(nogil=True, cache=True, inline="always")
def _tile2(a, ao, pb, t0, npos, koff, K, w, bo, y, yo, S, nch, R, pf, fin):
    """R (8, 4 or 1, a literal) positions from t0 (the last one repeated past npos; position i reads
    a[ao + pb[i] + koff[k]]) x channels [0, 2L) of a panel at w[bo:]: y[yo + m*S + i] for
    i < min(R, npos - t0), m < nch. Fewer rows cost fewer FMAs: 4 rows still keep 8 FMA chains. Step k
    also prefetches the cache line at w[pf + k*L] into L2 (the caller's stream: the next panel's halves, or
    this panel's own lines, already there). fin: (in registers, the bias vectors of the
    panel's two channel vectors, act and its splat parameters) for vclamp before the transposes, in tiles
    of 8 (_panels_fused's `full` positions: inlined into the 4- and 1-row tails too, it compiled 24 s longer)."""
    L = vlanes(y)
    P = 2 * L
    q0 = _bases(ao, pb, t0, npos, 0)
    q1, q2, q3 = _bases(ao, pb, t0, npos, 1), _bases(ao, pb, t0, npos, 2), _bases(ao, pb, t0, npos, 3)
    q4, q5 = _bases(ao, pb, t0, npos, 4), _bases(ao, pb, t0, npos, 5)
    q6, q7 = _bases(ao, pb, t0, npos, 6), _bases(ao, pb, t0, npos, 7)
    z = vzero(y)
    c00, c01, c10, c11, c20, c21, c30, c31 = z, z, z, z, z, z, z, z
    c40, c41, c50, c51, c60, c61, c70, c71 = z, z, z, z, z, z, z, z
    for k in range(K):
        t, o = koff[k], bo + k * P
        b0, b1 = vload(w, o), vload(w, o + L)
        vprefetch_l2(w, pf + k * L)
        x = vbcast(a, q0 + t)
        c00, c01 = vfma(x, b0, c00), vfma(x, b1, c01)
        if R > 1:
            x = vbcast(a, q1 + t)
            c10, c11 = vfma(x, b0, c10), vfma(x, b1, c11)
            x = vbcast(a, q2 + t)
            c20, c21 = vfma(x, b0, c20), vfma(x, b1, c21)
            x = vbcast(a, q3 + t)
            c30, c31 = vfma(x, b0, c30), vfma(x, b1, c31)
        if R > 4:
            x = vbcast(a, q4 + t)
            c40, c41 = vfma(x, b0, c40), vfma(x, b1, c41)
            x = vbcast(a, q5 + t)
            c50, c51 = vfma(x, b0, c50), vfma(x, b1, c51)
            x = vbcast(a, q6 + t)
            c60, c61 = vfma(x, b0, c60), vfma(x, b1, c61)
            x = vbcast(a, q7 + t)
            c70, c71 = vfma(x, b0, c70), vfma(x, b1, c71)
    n = min(R, npos - t0)
    if R == 8 and fin[0]:
        c00, c10, c20, c30, c40, c50, c60, c70 = _finish8(fin, fin[1], c00, c10, c20, c30, c40, c50, c60, c70)
        c01, c11, c21, c31, c41, c51, c61, c71 = _finish8(fin, fin[2], c01, c11, c21, c31, c41, c51, c61, c71)
    _store(y, yo, S, vtrans8(c00, c10, c20, c30, c40, c50, c60, c70), 0, n, nch)
    _store(y, yo, S, vtrans8(c01, c11, c21, c31, c41, c51, c61, c71), L, n, nch)


@njit(nogil=True, cache=True, inline="always")
def _tile1(a, ao, pb, t0, npos, koff, K, w, bo, y, yo, S, nch, R, pf, fin):
    """_tile2 for a panel one vector wide."""
    q0 = _bases(ao, pb, t0, npos, 0)
    q1, q2, q3 = _bases(ao, pb, t0, npos, 1), _bases(ao, pb, t0, npos, 2), _bases(ao, pb, t0, npos, 3)
    q4, q5 = _bases(ao, pb, t0, npos, 4), _bases(ao, pb, t0, npos, 5)
    q6, q7 = _bases(ao, pb, t0, npos, 6), _bases(ao, pb, t0, npos, 7)
    L = vlanes(y)
    z = vzero(y)
    c0, c1, c2, c3, c4, c5, c6, c7 = z, z, z, z, z, z, z, z
    for k in range(K):
        t = koff[k]
        b0 = vload(w, bo + k * L)
        vprefetch_l2(w, pf + k * L)
        c0 = vfma(vbcast(a, q0 + t), b0, c0)
        if R > 1:
            c1 = vfma(vbcast(a, q1 + t), b0, c1)
            c2 = vfma(vbcast(a, q2 + t), b0, c2)
            c3 = vfma(vbcast(a, q3 + t), b0, c3)
        if R > 4:
            c4 = vfma(vbcast(a, q4 + t), b0, c4)
            c5 = vfma(vbcast(a, q5 + t), b0, c5)
            c6 = vfma(vbcast(a, q6 + t), b0, c6)
            c7 = vfma(vbcast(a, q7 + t), b0, c7)
    if R == 8 and fin[0]:
        c0, c1, c2, c3, c4, c5, c6, c7 = _finish8(fin, fin[1], c0, c1, c2, c3, c4, c5, c6, c7)
    _store(y, yo, S, vtrans8(c0, c1, c2, c3, c4, c5, c6, c7), 0, min(R, npos - t0), nch)


@njit(nogil=True, cache=True, inline="always")
def _eights(npos):
    """The positions _panels_fused runs in tiles of 8; the rest (1 to 4) as one tile of 4 (a tile of 1 of its
    own, 2 FMA chains, was no faster on one position than 4's 8 chains, and cost 4 s of cold compile)."""
    return npos - npos % 8 if npos % 8 < 5 else npos


@by_type
@njit(nogil=True, cache=True)
def _panels(a, ao, pb, npos, koff, K, w, wo, y, yo, S, Mp, Mg, c0, c1):
    """_panels_fused without the bias and activation (for kernels that sum into a scratch and finish there)."""
    _panels_fused(a, ao, pb, npos, koff, K, w, wo, y, yo, S, Mp, Mg, c0, c1, y, 0, False, False, 0, 0.0, 0.0)


@by_type
@njit(nogil=True, cache=True)
def _panels_fused(a, ao, pb, npos, koff, K, w, wo, y, yo, S, Mp, Mg, c0, c1, b, bb, has_b, fused, act, p0, p1):
    """Channels [c0, c1) of npos positions (a tile of output rows, y[yo:] its first position of channel
    0): each panel of packed weights (from w[wo:]) swept by the tiles of 8 positions. fused: the bias
    (b[bb + channel] when has_b) and act (NONE, RELU or CLIP) added in registers (epilogue.vclamp) in the
    tiles of 8, else left to the epilogue."""
    L = vlanes(y)
    k0, k1, lo = vsplat(y, p0), vsplat(y, p1), vsplat(y, 0.0)
    for j0 in range(c0, c1, 2 * L):
        bo, yj, nch = wo + j0 * K, yo + j0 * S, min(Mg, c1) - j0
        bv0, bv1 = vzero(y), vzero(y)
        if fused and has_b:  # the panel's channels past Mg get no bias (they are not stored)
            bv0 = vload_n(b, bb + j0, max(0, min(L, nch)))
            bv1 = vload_n(b, bb + j0 + L, max(0, min(L, nch - L)))
        fin = (fused, bv0, bv1, act, k0, k1, lo)
        full = _eights(npos)
        two = min(2 * L, Mp - j0) == 2 * L
        nxt = bo + K * min(2 * L, Mp - j0)  # the next panel: its first half, then its second (the module doc)
        for t0 in range(0, full, 8):
            pf = nxt + t0 // 8 * K * L if t0 < 16 else bo
            if two:
                _tile2(a, ao, pb, t0, npos, koff, K, w, bo, y, yj + t0, S, nch, 8, pf, fin)
            else:
                _tile1(a, ao, pb, t0, npos, koff, K, w, bo, y, yj + t0, S, nch, 8, pf, fin)
        if npos > full:
            if two:
                _tile2(a, ao, pb, full, npos, koff, K, w, bo, y, yj + full, S, nch, 4, nxt + K * L, fin)
            else:
                _tile1(a, ao, pb, full, npos, koff, K, w, bo, y, yj + full, S, nch, 4, nxt + K * L, fin)


@njit(nogil=True, cache=True)
def implicit(x, w, b, z, y, ws, lw, q0, q1, c0, c1, s0, s1, G, Cg, Mg, H, W, OH, OW, KH, KW,
             sh, sw, ph, pw, dh, dw, tile, has_b, has_z, act, p0, p1):
    """y = act(conv(x, w) + b + z) for pairs (image, group) [q0, q1), output channels [c0, c1) (on panel
    boundaries) and output rows [s0, s1), tiles of `tile` rows; w packed (pack). ws: this block's
    workspace, the tile's copy of its input (lw elements; none when it is read in place: input_layout)."""
    L = vlanes(y)
    K, S, Mp = Cg * KH * KW, OH * OW, (Mg + L - 1) // L * L
    how, Wp, ush, usw, ext = input_layout(H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw)
    cs = H * W if how == IN_PLACE else _channel_stride(tile if how == COMPACT else (tile - 1) * sh + ext, Wp)
    koff = np.empty(K, np.int64)  # where tap k = (c, kh, kw) reads, from a position's base
    for c in range(Cg):
        for kh in range(KH):
            for kw in range(KW):
                koff[(c * KH + kh) * KW + kw] = c * cs + kh * dh * Wp + kw * dw
    pb = np.empty(tile * OW, np.int64)  # a position's base in the tile's input rows
    for i in range(tile * OW):
        pb[i] = (i // OW) * ush * Wp + (i % OW) * usw
    a = ws[:lw]
    fused = not has_z and (act == NONE or act == RELU or act == CLIP)  # epilogue.vclamp's
    for q in range(q0, q1):
        g = q % G
        xo, yo = q * Cg * H * W, q * Mg * S  # image n, group g: q = n*G + g
        wo = g * K * Mp
        for oh0 in range(s0, s1, tile):
            rows = min(tile, s1 - oh0)
            npos = rows * OW
            if how == IN_PLACE:
                _panels_fused(x, xo + oh0 * sh * W, pb, npos, koff, K, w, wo, y, yo + oh0 * OW, S, Mp, Mg, c0, c1,
                              b, g * Mg, has_b, fused, act, p0, p1)
            else:
                if how == COMPACT:  # stride phase (0, 0) of the input rows: the positions a strided 1x1 reads
                    _pad_copy(x, xo, a, 0.0, Cg, H, W, 0, 0, sh, sw, 1, 1, oh0, rows, OW, cs, 0)
                else:
                    _pad_copy(x, xo, a, 0.0, Cg, H, W, ph, pw, 1, 1, 1, 1, oh0 * sh, (rows - 1) * sh + ext, Wp, cs, 0)
                _panels_fused(a, 0, pb, npos, koff, K, w, wo, y, yo + oh0 * OW, S, Mp, Mg, c0, c1, b, g * Mg, has_b,
                              fused, act, p0, p1)
            done = _eights(npos) if fused else 0  # positions finished in registers
            for m in range(c0, min(c1, Mg)):
                o = yo + m * S + oh0 * OW + done
                if npos > done:
                    epilogue(y, o, npos - done, 1.0, b[g * Mg + m] if has_b else 0.0, z, o, 1.0, has_z, act, p0, p1)
