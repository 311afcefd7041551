"""MaxPool and AveragePool over 1-D and 2-D windows with strides 1 or 2 and no dilation, float32/float64:
the path pool.py's prepare takes for them (pool.py's walker keeps the rest: 3-D windows, wider strides,
dilations, Indices, LpPool and int8).

Straight from the input, an output row at a time, separable, in registers:
1. Per vector of output columns j, the input columns its windows start in (SW vectors from j*SW - PW) have
   their window rows kh reduced per column (vmax / vadd in kh order, from the pool's identity: -inf for
   max, 0 for sums); stride 2 splits the pair into even and odd columns (veven / vodd). Columns outside the
   image load as the identity (masked loads), so padding and ceil_mode's overhang cost nothing.
2. Tap kw of window i is column kw // SW past lane i of the (even, odd)[kw % SW] vector; the lanes past
   the vector come from the next vector's column results (vnext1 / vnext2: one valignd), which are read
   now and serve as the next j's start. So every input column is loaded once per output row and nothing
   goes through memory between the steps. Windows wider than 3 (stride 1) or 5 (stride 2) keep a row
   buffer of column results (_buffered), the version before.
Averages are scaled by 1 / (counted taps): the row's count here, the columns' from `rc` (pool.py's
counting rules). Each output is one chain in window order (kh per column, then kw), whatever the block:
the same bits for any core count, and the same bits as the buffered version.
The buffered form stored each row's column results and read them back at offsets 2j + kw, every load
spanning two earlier stores; in registers (one core, the same launches, alternating, shared machine):
MaxPool 3x3/2 ceil on 64 x 111 x 111 0.171 -> 0.151 ms, 128 x 55 x 55 0.084 -> 0.082, 256 x 27 x 27 0.057
-> 0.045; 3x3/1 on 1024 x 7 x 7 0.095 -> 0.086; 3x3/1 on 28 x 28 and 2x2/2 on 14 x 14 level. Before
that, the rows were reduced once per tap column (0.85 ms for squeezenet's three pools), and before that
copied into padded stride phases. More figures in pool.py's doc.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .simd import (host_has, vadd, veven, vlanes, vload, vload_in, vmax, vmul, vnext1, vnext2, vodd, vsplat, vstore,
                   vstore_n, vstore_until)
from .tiling import block_range

MAXP, AVG = 0, 2  # pool.py's modes
# Without AVX-512 every window goes through the row buffer: vnext's lane shifts across a pair of 16-lane
# vectors take several ymm shuffles each, unaligned loads from the buffer one (AMD EPYC, AVX2, one thread,
# bench/nodes_vs_ort.py: AveragePool 3x3/1 on 192 x 28 x 28 0.374 -> 0.220 ms, on 1024 x 7 x 7 0.314 -> 0.239)
BUFFERED = not host_has("avx512f")


def fits(strides, dilations) -> bool:
    """Whether pool2d serves a window with these strides and dilations."""
    return all(s in (1, 2) for s in strides) and all(d == 1 for d in dilations)


@njit(nogil=True, cache=True, inline="always")
def _acc(mode, a, v):
    return vmax(a, v) if mode == MAXP else vadd(a, v)


@njit(nogil=True, cache=True, inline="always")
def _window_rows(oh, H, KH, SH, PH, CLH, CHH, mode):
    """Output row oh's first input row, its window rows [kh0, kh1) inside the image, and (averages) the
    scale 1 / counted rows."""
    top = oh * SH - PH
    scale = 0.0
    if mode == AVG:
        cnt = 0
        for kh in range(KH):
            cnt += CLH <= top + kh < CHH
        scale = 1.0 / cnt
    return top, max(0, -top), min(KH, H - top), scale


@njit(nogil=True, cache=True, inline="always")
def _taps(mode, acc, KW, SW, e, o, ne, no):
    """The kw taps of L windows in kw order: column kw of window i is (e, o)[kw % SW] lane i + kw // SW,
    the lanes past the vector taken from the next vector's (ne, no)."""
    acc = _acc(mode, acc, e)
    if SW == 1:
        if KW > 1:
            acc = _acc(mode, acc, vnext1(e, ne))
        if KW > 2:
            acc = _acc(mode, acc, vnext2(e, ne))
    else:
        if KW > 1:
            acc = _acc(mode, acc, o)
        if KW > 2:
            acc = _acc(mode, acc, vnext1(e, ne))
        if KW > 3:
            acc = _acc(mode, acc, vnext1(o, no))
        if KW > 4:
            acc = _acc(mode, acc, vnext2(e, ne))
    return acc


@njit(nogil=True, cache=True)
def pool2d(x, y, rc, mode, ident, geom, block_idx, block_dim):
    """Pool x (NC, H, W) into y (NC, OH, OW); blocks split the NC*OH output rows. geom: NC H W OH OW KH
    KW SH SW PH PW, then the counted input rows [CLH, CHH) for averages; rc: per output column
    1 / counted kw taps, in x's dtype, a vector longer than OW."""
    KW, SW = geom[6], geom[8]
    if BUFFERED or KW > (3 if SW == 1 else 5):
        _buffered(x, y, rc, mode, ident, geom, block_idx, block_dim)
        return
    NC, H, W, OH, OW, KH = geom[0], geom[1], geom[2], geom[3], geom[4], geom[5]
    SH, PH, PW, CLH, CHH = geom[7], geom[9], geom[10], geom[11], geom[12]
    L = vlanes(y)
    r0, r1 = block_range(NC * OH, 1, block_idx, block_dim)
    q, oh = r0 // OH, r0 % OH - 1
    for row in range(r0, r1):
        oh += 1
        if oh == OH:  # the next plane (no division per row: it cost a third of a 13-wide row's time)
            q, oh = q + 1, 0
        top, kh0, kh1, scale = _window_rows(oh, H, KH, SH, PH, CLH, CHH, mode)
        xo = q * H * W + top * W
        # Per vector of outputs j: the column results of the input columns its windows start in (SW
        # vectors from j*SW - PW, as even and odd columns at stride 2) were read as the previous vector's
        # "next" (ne, no); its windows end in the next vector's first columns, read now. Each input column
        # is read once per output row, every load whole (masked where it leaves the image).
        e, o = vsplat(y, ident), vsplat(y, ident)
        for j in range(-L, OW, L):
            jn = j + L
            n = min(L, OW - j)
            parts = SW if jn < OW else 1 if j >= 0 and (n - 1) * SW + KW > SW * L else 0
            m0, m1 = vsplat(y, ident), vsplat(y, ident)
            for part in range(parts):  # the column results, window rows in kh order
                cb = jn * SW - PW + part * L
                m = vsplat(y, ident)
                if 0 <= cb and cb + L <= W:
                    for kh in range(kh0, kh1):
                        m = _acc(mode, m, vload(x, xo + kh * W + cb))
                else:
                    lo, hi = max(0, -cb), min(L, W - cb)
                    for kh in range(kh0, kh1):
                        m = _acc(mode, m, vload_in(x, xo + kh * W + cb, lo, hi, ident))
                if part == 0:
                    m0 = m
                else:
                    m1 = m
            ne, no = (m0, m0) if SW == 1 else (veven(m0, m1), vodd(m0, m1))
            if j >= 0:
                acc = _taps(mode, vsplat(y, ident), KW, SW, e, o, ne, no)
                if mode == AVG:
                    acc = vmul(acc, vmul(vsplat(y, scale), vload(rc, j)))
                vstore_n(y, row * OW + j, acc, n)
            e, o = ne, no


@njit(nogil=True, cache=True)
def _buffered(x, y, rc, mode, ident, geom, block_idx, block_dim):
    """pool2d for wider windows (every window without AVX-512): the column results go through a row buffer."""
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
        if oh == OH:
            q, oh = q + 1, 0
        top, kh0, kh1, scale = _window_rows(oh, H, KH, SH, PH, CLH, CHH, mode)
        xo = q * H * W + top * W
        for c in range(0, cols, L):  # the window rows reduced per input column, into buf[PW:], in kh order
            m = vsplat(y, ident)
            last = xo + (kh1 - 1) * W + c + L > x.size
            for kh in range(kh0, kh1):
                ro = xo + kh * W + c
                m = _acc(mode, m, vload_in(x, ro, 0, min(L, cols - c), ident) if last else vload(x, ro))
            vstore(buf, PW + c, m)
        vstore(buf, PW + cols, vsplat(y, ident))  # the columns past the image (or unread) are the identity
        for j in range(0, OW, L):  # the kw columns of each window reduced in order
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
            # whole where the overhang lands in this block's later rows: 7- or 14-wide rows end in a masked
            # store every row (1024 x 7 x 7: 0.239 -> 0.174 ms)
            vstore_until(y, row * OW + j, acc, min(L, OW - j), r1 * OW)
