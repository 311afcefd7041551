"""MaxPool and AveragePool over 1-D and 2-D windows, float32/float64: the path pool.py's prepare takes
for them (pool.py's walker keeps 3-D windows, Indices, LpPool and int8).

Per tile of output rows of one plane:
1. The input rows the tile reads are copied once into the workspace, padded with the pool's identity
   (-inf for max, 0 for sums) and split into their row and column stride phases (conv_lowering's
   _pad_copy, as the depthwise conv does): tap (kh, kw) of a run of output columns is then one
   contiguous run, and output rows follow each other Wq apart.
2. `_rows`: four output rows at a time, a vector of output columns each, every tap accumulated in
   registers (vmax / vadd: four independent chains), y stored once.
3. Averages scale each row by 1 / (counted taps): separable, rows here, columns from `rc` (pool.py's
   counting rules: count_include_pad, ceil_mode's overhang not counted).
The walker before it ran an output row at a time, a pass over y per three taps and loops per row that
on small planes cost more than the work: MaxPool 3x3 on 1024 x 7 x 7 0.52 ms (onnxruntime 0.05),
AveragePool 3x3 on 576 x 14 x 14 0.75 ms (0.08); the numbers after are in pool.py's module doc.
Sums run in tap order (kh, then kw) from 0, so every block count gives the same bits.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .conv_lowering import _channel_stride, _pad_copy
from .simd import vadd, vlanes, vload, vmax, vsplat, vstore_n
from .tiling import block_range

MAXP, AVG = 0, 2  # pool.py's modes
L1_ELEMS = 4096  # a tile's padded rows (all phases) stay under this many elements: 16 KiB of float32


def phases(k: int, s: int, d: int) -> int:
    """Stride phases a window of k taps, stride s, dilation d reads (all of them when dilated)."""
    return s if d > 1 else min(s, k)


def plan(OW: int, OH: int, KH: int, KW: int, SH: int, SW: int, DH: int, DW: int) -> tuple[int, int, int]:
    """(rows per tile, planes per tile, workspace elements per block): a tile is some rows of one plane,
    or whole planes, as many as fit L1_ELEMS (small planes: the calls per tile cost Numba's reference
    counts, ~20 cycles per array each, more than a 7 x 7 plane's work)."""
    Wq, extra = OW + (KW - 1) * DW // SW, (KH - 1) * DH // SH
    ab = phases(KH, SH, DH) * phases(KW, SW, DW)
    tile = min(OH, max(1, L1_ELEMS // (ab * Wq) - extra))
    cs = int(_channel_stride(tile + extra, Wq))
    planes = max(1, L1_ELEMS // (ab * cs)) if tile == OH else 1
    return tile, planes, ab * cs * planes + 16


@njit(nogil=True, cache=True, inline="always")
def _acc(mode, a, v):
    return vmax(a, v) if mode == MAXP else vadd(a, v)


@njit(nogil=True, cache=True)
def _rows(p, cs, planes, Wq, taps, y, yo, OW, rows, mode, ident):
    """For each plane c < planes (its phases at p[c*cs:], its outputs at y[yo + c*rows*OW:]):
    y[. + r*OW + j] = the pool of taps t at p[c*cs + r*Wq + taps[t] + j], r < rows, j < OW. A row's
    last vector may read up to a vector past it (into the workspace's slack: read, never stored)."""
    L = vlanes(y)
    for c in range(planes):
        r, pc, yc = 0, c * cs, yo + c * rows * OW
        while r + 4 <= rows:
            po, yr = pc + r * Wq, yc + r * OW
            for j in range(0, OW, L):
                a0, a1, a2, a3 = vsplat(y, ident), vsplat(y, ident), vsplat(y, ident), vsplat(y, ident)
                for t in range(taps.size):
                    s = po + taps[t] + j
                    a0 = _acc(mode, a0, vload(p, s))
                    a1 = _acc(mode, a1, vload(p, s + Wq))
                    a2 = _acc(mode, a2, vload(p, s + 2 * Wq))
                    a3 = _acc(mode, a3, vload(p, s + 3 * Wq))
                n = min(L, OW - j)
                vstore_n(y, yr + j, a0, n)
                vstore_n(y, yr + OW + j, a1, n)
                vstore_n(y, yr + 2 * OW + j, a2, n)
                vstore_n(y, yr + 3 * OW + j, a3, n)
            r += 4
        while r < rows:
            po, yr = pc + r * Wq, yc + r * OW
            for j in range(0, OW, L):
                a0 = vsplat(y, ident)
                for t in range(taps.size):
                    a0 = _acc(mode, a0, vload(p, po + taps[t] + j))
                vstore_n(y, yr + j, a0, min(L, OW - j))
            r += 1


@njit(nogil=True, cache=True)
def _taps(taps, KH, KW, SH, SW, DH, DW, B, planes, cs, Wq):
    """Where tap (kh, kw) of output row 0, column 0 reads in the phases of `planes` planes."""
    for kh in range(KH):
        for kw in range(KW):
            phase = (kh * DH % SH) * B + kw * DW % SW
            taps[kh * KW + kw] = phase * planes * cs + (kh * DH // SH) * Wq + kw * DW // SW


@njit(nogil=True, cache=True)
def pool2d(x, y, ws, rc, mode, ident, geom, tile, planes, block_idx, block_dim):
    """Pool x (NC, H, W) into y (NC, OH, OW), tiles of `tile` rows or of `planes` whole planes (plan).
    Blocks split the NC*OH output rows (whole planes when there are enough), each with its own part of
    ws. geom: NC H W OH OW KH KW SH SW DH DW PH PW, then the counted input rows [CLH, CHH) for
    averages; rc: per output column 1 / counted kw taps."""
    NC, H, W, OH, OW, KH, KW = geom[0], geom[1], geom[2], geom[3], geom[4], geom[5], geom[6]
    SH, SW, DH, DW, PH, PW, CLH, CHH = geom[7], geom[8], geom[9], geom[10], geom[11], geom[12], geom[13], geom[14]
    A, B = (SH if DH > 1 else min(SH, KH)), (SW if DW > 1 else min(SW, KW))
    Wq, extra = OW + (KW - 1) * DW // SW, (KH - 1) * DH // SH
    cs = _channel_stride(tile + extra, Wq)
    per = ws.size // block_dim
    p = ws[block_idx * per:(block_idx + 1) * per]
    taps = np.empty(KH * KW, np.int64)
    _taps(taps, KH, KW, SH, SW, DH, DW, B, planes, cs, Wq)
    r0, r1 = block_range(NC * OH, OH if NC >= block_dim else 1, block_idx, block_dim)
    row = r0
    while row < r1:
        q, oh0 = row // OH, row % OH
        c, n = 1, min(tile, OH - oh0, r1 - row)
        if n == OH:  # whole planes
            c = min(planes, (r1 - row) // OH)
            if c != planes:
                _taps(taps, KH, KW, SH, SW, DH, DW, B, c, cs, Wq)
        elif planes != 1:
            _taps(taps, KH, KW, SH, SW, DH, DW, B, 1, cs, Wq)
        _pad_copy(x, q * H * W, p, ident, c, H, W, PH, PW, SH, SW, A, B, oh0, n + extra, Wq, cs, 16)
        _rows(p, cs, c, Wq, taps, y, row * OW, OW, n, mode, ident)
        if mode == AVG:
            for i in range(n):
                cnt = 0
                for kh in range(KH):
                    cnt += CLH <= (oh0 + i) * SH + kh * DH - PH < CHH
                s = 1.0 / cnt
                for k in range(c):
                    o = np.uint64((row + k * OH + i) * OW)
                    for j in range(np.uint64(OW)):
                        y[o + j] = y[o + j] * (s * rc[j])
        if c != planes:
            _taps(taps, KH, KW, SH, SW, DH, DW, B, planes, cs, Wq)
        row += c * n
