"""MaxPool and AveragePool over 1-D and 2-D windows with strides 1 or 2 and no dilation, float32/float64:
the path pool.py's prepare takes for them (pool.py's walker keeps the rest: 3-D windows, wider strides,
dilations, Indices, LpPool and int8).

Straight from the input, an output row at a time, separable:
1. The window rows kh inside the image are reduced per input column (vmax / vadd, elementwise, in kh
   order) into a row buffer padded with the pool's identity (-inf for max, 0 for sums), so padding and
   ceil_mode's overhang cost nothing and step 2 needs no masks (only a row ending the tensor loads masked).
2. Per vector of output columns, the kw columns of the buffer are reduced in order; stride 2 loads the two
   vectors spanning 2L buffer columns once per even/odd pair of taps and keeps their even or odd lanes
   (veven / vodd). Averages are scaled by 1 / (counted taps): the row's count here, the columns' from
   `rc` (pool.py's counting rules). Each output is one chain in window order (kh sums per column, then
   kw), whatever the block: the same bits for any core count, and the same bits as the version before.
The version before reduced the rows once per tap column, each time through masked loads at the edges:
squeezenet's three MaxPools 3x3/2 (64 x 111 x 111, 128 x 55 x 55, 256 x 27 x 27) 0.85 -> 0.36 ms in the
model, one core (onnxruntime 0.15, in its NCHWc layout: 16 channels per vector, no lane shuffles). The one
before copied tiles of input rows into padded stride phases (0.95 ms). More figures in pool.py's doc.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .simd import vadd, veven, vlanes, vload, vload_in, vmax, vmul, vodd, vsplat, vstore, vstore_n
from .tiling import block_range

MAXP, AVG = 0, 2  # pool.py's modes


def fits(strides, dilations) -> bool:
    """Whether pool2d serves a window with these strides and dilations."""
    return all(s in (1, 2) for s in strides) and all(d == 1 for d in dilations)


@njit(nogil=True, cache=True, inline="always")
def _acc(mode, a, v):
    return vmax(a, v) if mode == MAXP else vadd(a, v)


@njit(nogil=True, cache=True)
def pool2d(x, y, rc, mode, ident, geom, block_idx, block_dim):
    """Pool x (NC, H, W) into y (NC, OH, OW); blocks split the NC*OH output rows. geom: NC H W OH OW KH
    KW SH SW PH PW, then the counted input rows [CLH, CHH) for averages; rc: per output column
    1 / counted kw taps, in x's dtype, a vector longer than OW."""
    NC, H, W, OH, OW, KH, KW = geom[0], geom[1], geom[2], geom[3], geom[4], geom[5], geom[6]
    SH, SW, PH, PW, CLH, CHH = geom[7], geom[8], geom[9], geom[10], geom[11], geom[12]
    L = vlanes(y)
    span = (OW - 1) * SW + KW  # padded columns the windows read
    cols = min(W, span - PW)   # input columns they read
    buf = np.full(max(span, PW + W) + 3 * L, ident, y.dtype)  # a padded row of column results
    r0, r1 = block_range(NC * OH, 1, block_idx, block_dim)
    q, oh = r0 // OH, r0 % OH - 1
    for row in range(r0, r1):
        oh += 1
        if oh == OH:  # the next plane (no division per row: it cost a third of a 13-wide row's time)
            q, oh = q + 1, 0
        top = oh * SH - PH  # the window's first input row
        kh0, kh1 = max(0, -top), min(KH, H - top)
        xo = q * H * W + top * W
        scale = 0.0
        if mode == AVG:
            cnt = 0
            for kh in range(KH):
                cnt += CLH <= top + kh < CHH
            scale = 1.0 / cnt
        # Step 1: the window rows reduced per input column, into buf[PW:], in kh order
        for c in range(0, cols, L):
            m = vsplat(y, ident)
            last = xo + (kh1 - 1) * W + c + L > x.size
            for kh in range(kh0, kh1):
                ro = xo + kh * W + c
                m = _acc(mode, m, vload_in(x, ro, 0, min(L, cols - c), ident) if last else vload(x, ro))
            vstore(buf, PW + c, m)
        vstore(buf, PW + cols, vsplat(y, ident))  # the columns past the image (or unread) are the identity
        # Step 2: the kw columns of each window reduced in order; stride 2 keeps the even or odd lanes
        for j in range(0, OW, L):
            acc = vsplat(y, ident)
            if SW == 1:
                for kw in range(KW):
                    acc = _acc(mode, acc, vload(buf, j + kw))
            else:  # output column j + i reads buf[2(j + i) + kw]
                m0, m1 = vsplat(y, ident), vsplat(y, ident)
                for kw in range(KW):
                    if kw & 1 == 0:
                        m0, m1 = vload(buf, 2 * j + kw), vload(buf, 2 * j + kw + L)
                    acc = _acc(mode, acc, vodd(m0, m1) if kw & 1 else veven(m0, m1))
            if mode == AVG:
                acc = vmul(acc, vmul(vsplat(y, scale), vload(rc, j)))
            vstore_n(y, row * OW + j, acc, min(L, OW - j))
