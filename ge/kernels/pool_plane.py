"""MaxPool and AveragePool over 1-D and 2-D windows with strides 1 or 2 and no dilation, float32/float64:
the path pool.py's prepare takes for them (pool.py's walker keeps the rest: 3-D windows, wider strides,
dilations, Indices, LpPool and int8).

Straight from the input, an output row at a time, a vector of output columns at a time:
1. Per window column kw, the window rows kh inside the image are loaded at the columns that tap reads and
   reduced first (vmax / vadd, elementwise): the image edges are masked loads filled with the pool's
   identity (-inf for max, 0 for sums), so padding and ceil_mode's overhang cost nothing extra.
   Stride 2 loads the two vectors spanning 2L input columns and keeps their even or odd lanes
   (veven / vodd: the reduction commutes with the lane pick, so it is done once per kw, after the rows).
2. The kw results are reduced in order, averages scaled by 1 / (counted taps), separable: the row's
   count here, the columns' from `rc` (pool.py's counting rules), and the vector is stored once.
The version before copied each tile of input rows into padded stride phases first; on small planes the
copy's per-row work cost more than the pooling (squeezenet's three MaxPools 0.95 ms, onnxruntime 0.18).
Measured figures are in pool.py's module doc. Each output is one chain in window order (kw outer, kh
inner) whatever the block: the same bits for any core count.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .simd import vadd, veven, vlanes, vload, vload_in, vmax, vmul, vodd, vsplat, vstore_n
from .tiling import block_range

MAXP, AVG = 0, 2  # pool.py's modes


def fits(strides, dilations) -> bool:
    """Whether pool2d serves a window with these strides and dilations."""
    return all(s in (1, 2) for s in strides) and all(d == 1 for d in dilations)


@njit(nogil=True, cache=True, inline="always")
def _acc(mode, a, v):
    return vmax(a, v) if mode == MAXP else vadd(a, v)


@njit(nogil=True, cache=True, inline="always")
def _load(x, ro, c, W, ident, inside):
    """Input columns c .. c + L of the row at x[ro:], `ident` outside [0, W) (a plain load when `inside`:
    building the masks cost more than the pooling on rows of 13 to 28)."""
    L = vlanes(x)
    if inside:
        return vload(x, ro + c)
    return vload_in(x, ro + c, max(0, -c), min(L, W - c), ident)


@njit(nogil=True, cache=True)
def pool2d(x, y, rc, mode, ident, geom, block_idx, block_dim):
    """Pool x (NC, H, W) into y (NC, OH, OW); blocks split the NC*OH output rows. geom: NC H W OH OW KH
    KW SH SW PH PW, then the counted input rows [CLH, CHH) for averages; rc: per output column
    1 / counted kw taps, in x's dtype, a vector longer than OW."""
    NC, H, W, OH, OW, KH, KW = geom[0], geom[1], geom[2], geom[3], geom[4], geom[5], geom[6]
    SH, SW, PH, PW, CLH, CHH = geom[7], geom[8], geom[9], geom[10], geom[11], geom[12]
    L = vlanes(y)
    r0, r1 = block_range(NC * OH, 1, block_idx, block_dim)
    for row in range(r0, r1):
        q, oh = row // OH, row % OH
        top = oh * SH - PH  # the window's first input row
        kh0, kh1 = max(0, -top), min(KH, H - top)
        xo = q * H * W + top * W
        scale = 0.0
        if mode == AVG:
            cnt = 0
            for kh in range(KH):
                cnt += CLH <= top + kh < CHH
            scale = 1.0 / cnt
        for j in range(0, OW, L):
            # every column this vector's taps read lies inside the row: no masks
            lo, hi = SW * j - PW - (PW & 1), SW * j + SW * L + KW - PW
            inside = lo >= 0 and hi <= W
            acc = vsplat(y, ident)
            for kw in range(KW):
                if SW == 1:
                    c = j + kw - PW
                    m = vsplat(y, ident)
                    for kh in range(kh0, kh1):
                        m = _acc(mode, m, _load(x, xo + kh * W, c, W, ident, inside))
                    acc = _acc(mode, acc, m)
                else:  # two vectors of input columns; output column j + i reads 2(j + i) + kw - PW
                    d = kw - PW
                    c = 2 * j + d - (d & 1)
                    m0, m1 = vsplat(y, ident), vsplat(y, ident)
                    for kh in range(kh0, kh1):
                        m0 = _acc(mode, m0, _load(x, xo + kh * W, c, W, ident, inside))
                        m1 = _acc(mode, m1, _load(x, xo + kh * W, c + L, W, ident, inside))
                    acc = _acc(mode, acc, vodd(m0, m1) if d & 1 else veven(m0, m1))
            if mode == AVG:
                acc = vmul(acc, vmul(vsplat(y, scale), vload(rc, j)))
            vstore_n(y, row * OW + j, acc, min(L, OW - j))
