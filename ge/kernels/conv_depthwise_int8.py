"""Depthwise QLinearConv on nhwc_int8's byte images (MobileNet's 3x3 convs between 1x1s): group = C = M.

x and y are byte images [N, H, W, C4] (qnhwc.py: 8-bit values shifted to uint8, channels rounded up to 4),
w the node's int8 weights [C, 1, KH, KW] without zero point (symmetric, as onnxruntime's quantizer makes
them). A depthwise conv has no reduction over channels, so it is no GEMM: in NHWC a position's channels
are contiguous, and every tap is a vector multiply-add over them (LLVM's loop vectorizer: 16 int32 lanes).

Per output row of an image (a block takes a range of rows, N * OH in all):
  Step 1: (once a block) the weights widened to int32 tap-major rows wt[KH * KW, C4] (zero past C), the
          bias and the requantization multipliers per channel (gemm_int8.multiplier, zero past C).
  Step 2: acc[ow, c] = sum over the taps inside the image of (x - x_zero_point) * w: exact int32; a tap
          in the padding adds (zero point - zero point) * w = 0 and is skipped. Positions whose window lies
          inside the image (most) sum their taps in registers, 16 channels a vector (simd_int8's ivmul);
          the border ones tap by tap over their row.
  Step 3: y = gemm_int8.requantize's float32 steps (onnxruntime's), 16 channels a vector, shifted; the
          channels past C get the zero point (multiplier 0).
The int16 im2col path (qlinear.qconv) stays for NCHW maps; both give the same bits.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from . import conv_geom as cg
from .blocks import own, per_block, tiled
from .gemm_int8 import multiplier
from .qnhwc import c4
from .simd_int8 import ivadd, ivload, ivmul, ivrequant, ivsplat, ivstore, ivstore_bytes, ivsub, ivzero, ivzext
from .tiling import block_dim_for, block_range

_NS_MAC = 0.15  # ns per multiply-add, one thread (16 lanes a vector, ~6 instructions)


@njit(nogil=True, cache=True)
def qdepthwise(x, xs, xzp, w, wsc, ys, yzp, b, y, wt, acc, qm, geom, n_ws, has_b, x_off, y_off, qmin, qmax, relu,
               block_idx, block_dim):
    """Rows [r0, r1) of the N * OH output rows; x_off / y_off: 128 for int8 x / y, 0 for uint8."""
    N, C, H, W, OH, OW = geom[cg.N], geom[cg.C], geom[cg.H], geom[cg.W], geom[cg.OH], geom[cg.OW]
    KH, KW, sh, sw, ph, pw = geom[cg.KH], geom[cg.KW], geom[cg.SH], geom[cg.SW], geom[cg.PH], geom[cg.PW]
    C4, KT = (C + 3) // 4 * 4, KH * KW
    r0, r1 = block_range(N * OH, 1, block_idx, block_dim)
    if r0 >= r1:
        return
    # Step 1: weights, bias and multipliers
    ww, pa, pq = own(wt, (KT + 1) * C4, block_idx, block_dim), own(acc, OW * C4, block_idx, block_dim), \
        own(qm, C4, block_idx, block_dim)
    ww[:] = 0
    pq[:] = 0
    for c in range(C):
        for t in range(KT):
            ww[t * C4 + c] = w[c * KT + t]
        ww[KT * C4 + c] = b[c] if has_b else 0
        pq[c] = multiplier(xs[0], wsc[c if n_ws > 1 else 0], ys[0])
    bias = ww[KT * C4:]
    xz = np.int32(xzp[0]) + x_off
    z = np.int32(yzp[0])
    lo = np.float32(max(qmin, z) - z) if relu else np.float32(qmin - z)  # Relu: Q(max(y, 0)) = max(Q(y), zp)
    hi, zo = np.float32(qmax - z), z + y_off
    for r in range(r0, r1):
        n, oh = r // OH, r % OH
        # Step 2: the taps; the windows wholly inside the image 16 channels a vector (ivmul: vpmulld)
        inner = oh * sh - ph >= 0 and oh * sh - ph + KH <= H
        a0, a1 = (-(-pw // sw), min(OW, (W - KW + pw) // sw + 1)) if inner else (0, 0)
        a1 = max(a0, a1)
        pa[:] = 0
        for kh in range(KH):
            h = oh * sh - ph + kh
            if h < 0 or h >= H:
                continue
            for kw in range(KW):
                ow0, ow1 = max(0, -((kw - pw) // sw)), min(OW, (W - 1 + pw - kw) // sw + 1)
                wr = ww[(kh * KW + kw) * C4:(kh * KW + kw + 1) * C4]
                for ow in range(ow0, ow1):
                    if a0 <= ow < a1:
                        continue
                    xi = ((n * H + h) * W + ow * sw - pw + kw) * C4
                    xr, ar = x[xi:xi + C4], pa[ow * C4:(ow + 1) * C4]
                    for c in range(C4):
                        ar[c] += (np.int32(xr[c]) - xz) * wr[c]
        _inner(x, ww, pa, n, oh, a0, a1, H, W, C4, KH, KW, sh, sw, ph, pw, xz)
        # Step 3: requantize
        for ow in range(OW):
            q = (r * OW + ow) * C4
            c = 0
            while c + 16 <= C4:
                ivstore_bytes(y, q + c, ivrequant(ivadd(ivload(pa, ow * C4 + c), ivload(bias, c)), pq, c, lo, hi, zo))
                c += 16
            for c in range(c, C4):
                y[q + c] = np.int32(np.rint(min(max(np.float32(pa[ow * C4 + c] + bias[c]) * pq[c], lo), hi))) + zo


@njit(nogil=True, cache=True)
def _inner(x, ww, pa, n, oh, a0, a1, H, W, C4, KH, KW, sh, sw, ph, pw, xz):
    """acc of output positions [a0, a1) of row oh, whose windows lie wholly inside the image: per 16
    channels, the taps' (x - xz) * w summed in registers; the channels past the last 16 one by one."""
    C16 = C4 // 16 * 16
    zv = ivsplat(xz)
    for ow in range(a0, a1):
        base = ((n * H + oh * sh - ph) * W + ow * sw - pw) * C4
        for c0 in range(0, C16, 16):
            acc = ivzero(x)
            for kh in range(KH):
                for kw in range(KW):
                    xv = ivsub(ivzext(x, base + (kh * W + kw) * C4 + c0), zv)
                    acc = ivadd(acc, ivmul(xv, ivload(ww, (kh * KW + kw) * C4 + c0)))
            ivstore(pa, ow * C4 + c0, acc)
        for c in range(C16, C4):
            s = np.int32(0)
            for kh in range(KH):
                for kw in range(KW):
                    s += (np.int32(x[base + (kh * W + kw) * C4 + c]) - xz) * ww[(kh * KW + kw) * C4 + c]
            pa[ow * C4 + c] = s


def launch(geom, n_ws: int, has_b: bool, x_off: int, y_off: int, qmin: int, qmax: int, relu: bool, cores: int,
           inputs: tuple):
    """The tiled launch over N * OH rows; inputs: the node's (x, xs, xzp, w, ws, ys, yzp, b) indices."""
    N, C, OH, OW, KH, KW = (int(geom[i]) for i in (cg.N, cg.C, cg.OH, cg.OW, cg.KH, cg.KW))
    C4 = c4(C)
    bd = block_dim_for(N * OH, cores, max(1, int(25_000 / max(1.0, OW * C4 * KH * KW * _NS_MAC))))
    ws = (per_block((KH * KW + 1) * C4, np.int32, bd), per_block(OW * C4, np.int32, bd), per_block(C4, np.float32, bd))
    args = (geom, n_ws, int(has_b), x_off, y_off, qmin, qmax, int(relu))
    return tiled(qdepthwise, args, bd, ws, inputs=inputs)
