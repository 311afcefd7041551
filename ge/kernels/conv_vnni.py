"""QLinearConv on AVX512-VNNI: uint8 activations x int8 weights -> int32 with vpdpbusd (simd_int8.py).

Taken for 2-D, ungrouped, undilated convs whose weights are int8 with zero point 0 (absent: fuse_qdq drops
an all-zero one; onnxruntime's quantizer makes weights symmetric int8 by default). Per image:
  Step 1: the input is copied to a padded NHWC byte image xp[Hp, Wp, C4] (C rounded up to 4 channels),
          int8 activations shifted to uint8 (x + 128, the zero point too); the padding and the extra
          channels hold the (shifted) zero point, so they add exactly what the correction removes.
  Step 2: the weights are packed as panels of NR = 32 output channels: for each (kh, kw, 4-channel group)
          32 lanes of 4 bytes, the vpdpbusd operand; with their row sums (the zero-point correction).
  Step 3: implicit GEMM, no im2col: a tile of MR = 6 output positions of one output row x 32 channels is
          12 zmm accumulators; each k step broadcasts the 4 channel bytes a position reads (contiguous in
          NHWC) and issues 12 vpdpbusd against 2 weight vectors. Sums are exact int32; the tile is then
          corrected (- xzp * row sum), biased and requantized (gemm_int8.requantize's rounding, onnxruntime's
          float32 steps) into NCHW y. At stride 1 a tile's positions run on across output rows (_rows).
NHWC (passes/nhwc_int8.py): x and y may instead be byte images [N, H, W, C4] already shifted to uint8; an
unpadded x is then Step 1's image as it is (no copy) and a padded one costs one row copy a row; y's
positions get their 32 channels in one vector loop. bench/vnni_layouts.py, one core (NCHW in and out ->
NHWC in and out): SqueezeNet's 16 -> 64 1x1 on 55x55 353 -> 102 us, its 3x3 467 -> 231, 64 -> 16 1x1 252 -> 57.
pack_qconv_weights (a LOWERING pass) does Step 2 once for constant weights: packing per run cost ResNet-50
more than its GEMMs on the 14x14 and 7x7 stages (3x3 256 -> 256 on 14x14: 5.0 ms, 23 GMAC/s).
Blocks (AI cores) take ranges of output rows of every image; each has its own padded image and panels.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from . import conv_geom as cg
from .simd import host_has
from .gemm_int8 import multiplier
from .simd_int8 import (ivadd, ivbcast4, ivdpbusd, ivload, ivrequant, ivstore, ivstore_bytes,
                        ivzero)
from .tiling import block_range

MR, NR = 6, 32


HAS_VNNI = host_has("avx512vnni")


@njit(nogil=True, cache=True)
def pack_input(x, xo, C, H, W, off, fill, xp, C4, Wp, ph, pw):
    """xp[(h + ph) * Wp + w + pw, c] = x[xo + (c, h, w)] + off; fill elsewhere."""
    xp[:] = fill
    for c in range(C):
        for h in range(H):
            src = x[xo + (c * H + h) * W:xo + (c * H + h + 1) * W]
            dst = xp[((h + ph) * Wp + pw) * C4 + c:]
            for w in range(W):
                dst[w * C4] = np.uint8(np.int32(src[w]) + off)


@njit(nogil=True, cache=True)
def packed_size(M, C, KH, KW) -> int:
    return -(-M // NR) * KH * KW * (-(-C // 4) * 4) * NR


@njit(nogil=True, cache=True)
def pack_weights(w, M, C, KH, KW, C4, wp, wsum):
    """wp[panel, (kh, kw, c // 4), lane, c % 4] = w[panel * 32 + lane, c, kh, kw] (0 past M or C)."""
    G4 = KH * KW * (C4 // 4)
    wp[:] = 0
    wsum[:] = 0
    for m in range(M):
        p, j = m // NR, m % NR
        for c in range(C):
            for kh in range(KH):
                for kw in range(KW):
                    v = w[((m * C + c) * KH + kh) * KW + kw]
                    gi = (kh * KW + kw) * (C4 // 4) + c // 4
                    wp[((p * G4 + gi) * NR + j) * 4 + c % 4] = v
                    wsum[m] += np.int32(v)


@njit(nogil=True, cache=True)
def _tile(xp, wp, tile, a0, astep, rows, p, G4, KH, KW, C4, Wp):
    """tile[r, 0:32] = sums of positions a0 + r * astep (r < 6; rows past `rows` repeat the last) x panel p."""
    e = rows - 1
    a1, a2, a3, a4, a5 = (a0 + min(1, e) * astep, a0 + min(2, e) * astep, a0 + min(3, e) * astep,
                          a0 + min(4, e) * astep, a0 + min(5, e) * astep)
    c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 = ivzero(xp)
    q = p * G4 * NR * 4
    for kh in range(KH):
        for kw in range(KW):
            off = (kh * Wp + kw) * C4
            for g in range(C4 // 4):
                b0, b1 = ivload(wp, q), ivload(wp, q + 64)
                q += NR * 4
                o = off + g * 4
                v = ivbcast4(xp, a0 + o)
                c00, c01 = ivdpbusd(c00, v, b0), ivdpbusd(c01, v, b1)
                v = ivbcast4(xp, a1 + o)
                c10, c11 = ivdpbusd(c10, v, b0), ivdpbusd(c11, v, b1)
                v = ivbcast4(xp, a2 + o)
                c20, c21 = ivdpbusd(c20, v, b0), ivdpbusd(c21, v, b1)
                v = ivbcast4(xp, a3 + o)
                c30, c31 = ivdpbusd(c30, v, b0), ivdpbusd(c31, v, b1)
                v = ivbcast4(xp, a4 + o)
                c40, c41 = ivdpbusd(c40, v, b0), ivdpbusd(c41, v, b1)
                v = ivbcast4(xp, a5 + o)
                c50, c51 = ivdpbusd(c50, v, b0), ivdpbusd(c51, v, b1)
    ivstore(tile, 0, c00); ivstore(tile, 16, c01); ivstore(tile, 32, c10); ivstore(tile, 48, c11)  # noqa: E702
    ivstore(tile, 64, c20); ivstore(tile, 80, c21); ivstore(tile, 96, c30); ivstore(tile, 112, c31)  # noqa: E702
    ivstore(tile, 128, c40); ivstore(tile, 144, c41); ivstore(tile, 160, c50); ivstore(tile, 176, c51)  # noqa: E702


@njit(nogil=True, cache=True)
def vnni_conv(x, xs, xzp, w, wsc, ys, yzp, b, wsum_in, y, xp, wp, ws, qm, geom, off, has_xzp, n_ws, has_b, has_yzp,
              qmin, qmax, relu, packed, x_nhwc, y_nhwc, y_off, block_idx, block_dim):
    """y = requantized conv(x, w) for block block_idx's output rows; off: 128 for int8 x, 0 for uint8.
    packed: w is already pack_weights' panels and wsum_in their row sums (pack_qconv_weights).
    x_nhwc / y_nhwc: x / y are nhwc_int8's byte images [N, H, W, C4] (shifted by off / y_off) instead of NCHW."""
    C, H, W, M, OH, OW = geom[cg.C], geom[cg.H], geom[cg.W], geom[cg.M], geom[cg.OH], geom[cg.OW]
    KH, KW, sh, sw, ph, pw = geom[cg.KH], geom[cg.KW], geom[cg.SH], geom[cg.SW], geom[cg.PH], geom[cg.PW]
    C4 = (C + 3) // 4 * 4
    Hp, Wp = max(H + ph, (OH - 1) * sh + KH), max(W + pw, (OW - 1) * sw + KW)
    G4, panels = KH * KW * (C4 // 4), (M + NR - 1) // NR
    t0, t1 = block_range(OH, 1, block_idx, block_dim)
    if t0 >= t1:
        return
    per = xp.size // block_dim
    pxp = xp[block_idx * per:block_idx * per + Hp * Wp * C4 + 64]
    per = ws.size // block_dim
    wsum, tile = ws[block_idx * per:block_idx * per + M], ws[block_idx * per + M:block_idx * per + M + MR * NR]
    corr = ws[block_idx * per + M + MR * NR:block_idx * per + 2 * M + MR * NR]
    per = qm.size // block_dim
    mult = qm[block_idx * per:block_idx * per + M]
    per = wp.size // block_dim
    pwp = wp[block_idx * per:block_idx * per + panels * G4 * NR * 4]
    xz = (np.int32(xzp[0]) if has_xzp else 0) + off
    if packed:
        _images(x, xs, wsc, ys, yzp, b, y, pxp, w, wsum_in, tile, corr, mult, geom, off, xz, n_ws, has_b, has_yzp,
                qmin, qmax, relu, x_nhwc, y_nhwc, y_off, t0, t1)
    else:
        pack_weights(w, M, C, KH, KW, C4, pwp, wsum)
        _images(x, xs, wsc, ys, yzp, b, y, pxp, pwp, wsum, tile, corr, mult, geom, off, xz, n_ws, has_b, has_yzp,
                qmin, qmax, relu, x_nhwc, y_nhwc, y_off, t0, t1)


@njit(nogil=True, cache=True)
def _images(x, xs, wsc, ys, yzp, b, y, pxp, pwp, wsum, tile, corr, mult, geom, off, xz, n_ws, has_b, has_yzp,
            qmin, qmax, relu, x_nhwc, y_nhwc, y_off, t0, t1):
    """Output rows [t0, t1) of every image: Step 1 and Step 3 (xz: the shifted input zero point)."""
    N, C, H, W = geom[cg.N], geom[cg.C], geom[cg.H], geom[cg.W]
    M, OH, OW = geom[cg.M], geom[cg.OH], geom[cg.OW]
    KH, KW, sh, sw, ph, pw = geom[cg.KH], geom[cg.KW], geom[cg.SH], geom[cg.SW], geom[cg.PH], geom[cg.PW]
    C4 = (C + 3) // 4 * 4
    Hp, Wp = max(H + ph, (OH - 1) * sh + KH), max(W + pw, (OW - 1) * sw + KW)
    for m in range(M):  # the requantization's multiplier (gemm_int8.multiplier) and zero-point correction
        mult[m] = multiplier(xs[0], wsc[m if n_ws > 1 else 0], ys[0])
        corr[m] = (np.int32(b[m]) if has_b else 0) - xz * wsum[m]
    z = np.float64(yzp[0]) if has_yzp else 0.0
    lo = max(qmin, z) if relu else qmin  # Relu after the conv: Q(max(y, 0)) = max(Q(y), yzp)
    direct = x_nhwc and Hp == H and Wp == W  # an unpadded NHWC image is the kernel's operand as it is
    for n in range(N):
        if direct:
            img = x.view(np.uint8)[n * H * W * C4:(n + 1) * H * W * C4]
        elif x_nhwc:
            pad_nhwc(x.view(np.uint8), n * H * W * C4, H, W * C4, np.uint8(xz), pxp, Wp * C4, ph, pw * C4)
            img = pxp
        else:
            pack_input(x, n * C * H * W, C, H, W, off, np.uint8(xz), pxp, C4, Wp, ph, pw)
            img = pxp
        _rows(img, pwp, tile, mult, corr, y, geom, n, Wp, z, lo, qmax, y_nhwc, y_off, t0, t1)


@njit(nogil=True, cache=True)
def pad_nhwc(x, xo, H, row, fill, xp, prow, ph, pw):
    """xp[(h + ph) * prow + pw:][:row] = x[xo + h * row:][:row]; fill elsewhere (rows of bytes)."""
    xp[:] = fill
    for h in range(H):
        xp[(h + ph) * prow + pw:(h + ph) * prow + pw + row] = x[xo + h * row:xo + (h + 1) * row]


@njit(nogil=True, cache=True, inline="always")
def _store(tile, r, corr, mult, y, yo, ystep, mn, lo, hi, zo):
    """y[yo + j * ystep] = tile row r's sums of channels j < mn requantized in onnxruntime's float32 steps
    (MlasRequantizeOutput): float32(sum + correction) * multiplier, clamped to [lo, hi], rounded to even,
    plus the (shifted) zero point zo. corr and mult start at the tile's panel."""
    tr = tile[r * NR:r * NR + NR]
    if ystep == 1:  # 16 channels a vector, the last ones of a ragged panel one by one
        j = 0
        while j + 16 <= mn:
            ivstore_bytes(y, yo + j, ivrequant(ivadd(ivload(tile, r * NR + j), ivload(corr, j)), mult, j, lo, hi, zo))
            j += 16
        for i in range(j, mn):
            y[yo + i] = np.int32(np.rint(min(max(np.float32(tr[i] + corr[i]) * mult[i], lo), hi))) + zo
    else:
        for j in range(mn):
            y[yo + j * ystep] = np.int32(np.rint(min(max(np.float32(tr[j] + corr[j]) * mult[j], lo), hi))) + zo


@njit(nogil=True, cache=True)
def _rows(img, pwp, tile, mult, corr, y, geom, n, Wp, z, lo, qmax, y_nhwc, y_off, t0, t1):
    """Step 3 for output rows [t0, t1) of image n, whose padded byte image is img. At stride 1 a tile's 6
    positions run on across output rows: position a of the padded image's rows (Wp wide) is the window
    at a * C4, and the Wp - OW positions past a row's end are computed and dropped (ResNet-50's 7x7
    maps: 7 of 12 lanes busy a row, 49 of 54 flat; 1x1 maps have none to drop)."""
    C, M, OH, OW = geom[cg.C], geom[cg.M], geom[cg.OH], geom[cg.OW]
    KH, KW, sh, sw = geom[cg.KH], geom[cg.KW], geom[cg.SH], geom[cg.SW]
    C4, M4 = (C + 3) // 4 * 4, (M + 3) // 4 * 4
    G4, panels, S = KH * KW * (C4 // 4), (M + NR - 1) // NR, OH * OW
    lo32, hi32 = np.float32(lo - z), np.float32(qmax - z)
    zo = np.int32(z) + (y_off if y_nhwc else 0)
    flat = sh == 1 and sw == 1
    for p in range(panels):
        mn = min(NR, M - p * NR)
        cp, mp = corr[p * NR:], mult[p * NR:]
        if flat:
            q1 = (t1 - 1) * Wp + OW
            for a in range(t0 * Wp, q1, MR):
                rows = min(MR, q1 - a)
                _tile(img, pwp, tile, a * C4, C4, rows, p, G4, KH, KW, C4, Wp)
                for r in range(rows):
                    oh, ow = (a + r) // Wp, (a + r) % Wp
                    if ow < OW:
                        q = (n * OH + oh) * OW + ow
                        if y_nhwc:
                            _store(tile, r, cp, mp, y, q * M4 + p * NR, 1, mn, lo32, hi32, zo)
                        else:
                            _store(tile, r, cp, mp, y, (n * M + p * NR) * S + oh * OW + ow, S, mn, lo32, hi32, zo)
            continue
        for oh in range(t0, t1):
            for ow0 in range(0, OW, MR):
                rows = min(MR, OW - ow0)
                _tile(img, pwp, tile, (oh * sh * Wp + ow0 * sw) * C4, sw * C4, rows, p, G4, KH, KW, C4, Wp)
                for r in range(rows):
                    q = (n * OH + oh) * OW + ow0 + r
                    if y_nhwc:
                        _store(tile, r, cp, mp, y, q * M4 + p * NR, 1, mn, lo32, hi32, zo)
                    else:
                        _store(tile, r, cp, mp, y, (n * M + p * NR) * S + oh * OW + ow0 + r, S, mn, lo32, hi32, zo)
    if y_nhwc and M4 > M:  # the channels past M hold the zero point (read by no kernel: defined bytes)
        for q in range((n * OH + t0) * OW, (n * OH + t1) * OW):
            for j in range(M, M4):
                y[q * M4 + j] = np.uint8(np.int32(z) + y_off)
