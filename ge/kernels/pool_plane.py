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

MaxPool 3x3 at stride 2, the most common pool, has these steps written out for its window (_max3s2): plain
loads wherever the window rows are whole, masks only at the plane's edges. One core, Zen 5, the same
arguments (session scratch timing, 2026-12-06): 64 x 111 x 111 0.099 -> 0.063 ms, 128 x 55 x 55 0.052 ->
0.036, 256 x 27 x 27 0.033 -> 0.024, 64 x 112 x 112 pad 1 0.102 -> 0.072; same bits (tests/kernels/
test_pool_max3s2.py against _buffered). MaxPool 2x2/2 the same way (_max2s2; 2026-12-07, the pool2d call
alone, medians of 50): 64 x 224 x 224 0.443 -> 0.343 ms, 128 x 112 x 112 0.172 -> 0.109, 256 x 56 x 56
0.100 -> 0.063, 512 x 28 x 28 0.066 -> 0.037, 512 x 14 x 14 0.036 -> 0.018 (VGG-19's five pools).

Stride-1 windows that keep the plane's size (Inception's 3x3 pad 1 pools) on planes up to FLAT_MAX_VECTORS
vectors wide run each plane as one flat run instead (_flat): a 7-wide row fills 7 of 16 lanes, a 7 x 7 plane
4 whole vectors. A window row kh - PH away is a flat offset of that many rows, and a row outside the plane
lies outside the run (a masked load gives the identity); the left and right columns come from the
neighbouring vectors' column results, the identity where they would cross a row's edge (masks the host
prepares, flat_aux). The same operations in the same order: the same bits as the rows. Single nodes,
ge / onnxruntime on one thread (bench/nodes_vs_ort.py, Zen 5, 2026-12-06), rows -> flat: AveragePool 3x3/1
on 192 x 28 x 28 2.23 -> 1.39, on 576 x 14 x 14 2.79 -> 1.42, on 1024 x 7 x 7 3.83 -> 1.53, MaxPool on
1024 x 7 x 7 3.24 -> 1.58 (the rest is mostly ge's per-run overhead: that node's kernel alone 21 us,
onnxruntime's whole run 22).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from . import pool_geom as pg
from .simd import (host_has, vadd, veven, vlanes, vload, vload_in, vmax, vmul, vnext1, vnext2, vodd, vpick, vprev1,
                   vsplat, vstore, vstore_n, vstore_until, vload_span)
from .tiling import block_range

MAXP, AVG = 0, 2  # pool.py's modes
# Without AVX-512 every window goes through the row buffer: vnext's lane shifts across a pair of 16-lane
# vectors take several ymm shuffles each, unaligned loads from the buffer one (AMD EPYC, AVX2, one thread,
# bench/nodes_vs_ort.py: AveragePool 3x3/1 on 192 x 28 x 28 0.374 -> 0.220 ms, on 1024 x 7 x 7 0.314 -> 0.239)
BUFFERED = not host_has("avx512f")
# _flat on planes narrower than this many vectors a row (flat()): it won on every width measured, 7 to 56
# (bench/kernel_paths.py --only FLAT_POOLS, Zen 5: 0.31x the rows' time on 1024 x 7 x 7, 0.84x on 64 x 56 x 56)
FLAT_MAX_VECTORS = 4


def fits(strides, dilations) -> bool:
    """Whether pool2d serves a window with these strides and dilations."""
    return all(s in (1, 2) for s in strides) and all(d == 1 for d in dilations)


def flat(H, W, OH, OW, KW, SH, SW, PW, lanes) -> bool:
    """Whether _flat serves the window: stride 1, the output the input's size (KW at most 3, the pads
    "same"), planes narrower than FLAT_MAX_VECTORS vectors a row."""
    return (SH == SW == 1 and (OH, OW) == (H, W) and KW <= 3 and PW <= 1 and KW - 1 - PW <= 1
            and W < FLAT_MAX_VECTORS * lanes)


def flat_aux(H, W, KH, PH, CLH, CHH, rc, mode, dtype, lanes):
    """_flat's per-position arrays, each H*W + lanes long, one after another: the average's scale (the
    counted rows' 1 / count times the column's rc, rounded as pool2d rounds them), then 1 where the column
    on the left is inside the image, then 1 where the one on the right is."""
    n = H * W + lanes
    aux = np.zeros(3 * n, dtype)
    cols = np.arange(W)
    for oh in range(H):
        if mode == AVG:
            counted = sum(CLH <= oh - PH + kh < CHH for kh in range(KH))
            aux[oh * W:(oh + 1) * W] = dtype.type(1.0 / max(1, counted)) * rc[:W]
        aux[n + oh * W:n + (oh + 1) * W] = cols >= 1
        aux[2 * n + oh * W:2 * n + (oh + 1) * W] = cols <= W - 2
    return aux


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
    """Pool x (NC, H, W) into y (NC, OH, OW); blocks split the NC*OH output rows. geom: pool_geom's
    layout; rc: per output column 1 / counted kw taps, in x's dtype, a vector longer than OW (_flat:
    flat_aux's arrays)."""
    KW, SW = geom[pg.KW], geom[pg.SW]
    if geom[pg.FLAT]:
        _flat(x, y, rc, mode, ident, geom, block_idx, block_dim)
        return
    if BUFFERED or KW > (3 if SW == 1 else 5):
        _buffered(x, y, rc, mode, ident, geom, block_idx, block_dim)
        return
    NC, H, W, OH, OW = geom[pg.NC], geom[pg.H], geom[pg.W], geom[pg.OH], geom[pg.OW]
    KH, SH, PH, PW, CLH, CHH = geom[pg.KH], geom[pg.SH], geom[pg.PH], geom[pg.PW], geom[pg.CLH], geom[pg.CHH]
    L = vlanes(y)
    r0, r1 = block_range(NC * OH, 1, block_idx, block_dim)
    if mode == MAXP and KH == 3 and KW == 3 and SH == 2 and SW == 2:
        _max3s2(x, y, ident, r0, r1, H, W, OH, OW, PH, PW)
        return
    if mode == MAXP and KH == 2 and KW == 2 and SH == 2 and SW == 2:
        _max2s2(x, y, ident, r0, r1, H, W, OH, OW, PH, PW)
        return
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


@njit(nogil=True, cache=True, inline="always")
def _next_row(q, oh, OH, H, W, PH, K):
    """A stride-2 window of K rows on the next output row (oh in plane q, oh == OH wrapping to the next plane:
    no division per row): (q, oh, its window rows inside the image [kh0, kh1), whether that is all K, the
    offset of its first input row)."""
    oh += 1
    if oh == OH:
        q, oh = q + 1, 0
    top = 2 * oh - PH
    kh0, kh1 = max(0, -top), min(K, H - top)
    return q, oh, kh0, kh1, kh0 == 0 and kh1 == K, q * H * W + top * W


@njit(nogil=True, cache=True, inline="always")
def _lanes_in(cb, W, L):
    """The lanes of the two vectors from column cb that lie inside a row of W columns: lo0, lo1, hi0, hi1."""
    lo0, lo1 = max(0, -cb), max(0, -cb - L)
    return lo0, lo1, max(lo0, min(L, W - cb)), max(lo1, min(L, W - cb - L))


@njit(nogil=True, cache=True, inline="always")
def _max3(idv, a, b, c):
    return vmax(vmax(vmax(idv, a), b), c)


@njit(nogil=True, cache=True)
def _max3s2(x, y, ident, r0, r1, H, W, OH, OW, PH, PW):
    """pool2d's rows for MaxPool 3x3 at stride 2 (AlexNet, SqueezeNet, ResNet, GoogLeNet, ShuffleNet): the
    same steps, written out for this window. A vector's three window rows load as plain vectors wherever
    the rows are whole; past a row's end too when no window reads there (floor mode without a right pad:
    those lanes end in outputs never stored), while the load stays inside x. Masked loads (and a loop over
    the window rows inside the image) only at the plane's edges. Arrays are read here, not in helpers: an
    inlined helper taking x cost two reference counts a call (Numba's), which made a first form 3x slower.
    The same vmax chains in the same order: pool2d's bits, NaN included."""
    L = vlanes(y)
    idv = vsplat(y, ident)
    q, oh = r0 // OH, r0 % OH - 1
    inside = 2 * OW - PW <= W - 1  # no window reads past a row's end
    for row in range(r0, r1):
        q, oh, kh0, kh1, full, xo = _next_row(q, oh, OH, H, W, PH, 3)
        e, o = idv, idv
        for j in range(-L, OW, L):
            n = min(L, OW - j)
            ne, no = idv, idv
            if j < 0 or n == L:  # the column results its windows end in (the next vector's first)
                cb = 2 * (j + L) - PW
                if full and cb >= 0 and (cb + 2 * L <= W or inside and xo + 2 * W + cb + 2 * L <= x.size):
                    m0 = _max3(idv, vload(x, xo + cb), vload(x, xo + W + cb), vload(x, xo + 2 * W + cb))
                    m1 = _max3(idv, vload(x, xo + cb + L), vload(x, xo + W + cb + L),
                               vload(x, xo + 2 * W + cb + L))
                else:
                    lo0, lo1, hi0, hi1 = _lanes_in(cb, W, L)
                    if full:
                        m0 = _max3(idv, vload_in(x, xo + cb, lo0, hi0, ident),
                                   vload_in(x, xo + W + cb, lo0, hi0, ident),
                                   vload_in(x, xo + 2 * W + cb, lo0, hi0, ident))
                        m1 = _max3(idv, vload_in(x, xo + cb + L, lo1, hi1, ident),
                                   vload_in(x, xo + W + cb + L, lo1, hi1, ident),
                                   vload_in(x, xo + 2 * W + cb + L, lo1, hi1, ident))
                    else:
                        m0, m1 = idv, idv
                        for kh in range(kh0, kh1):
                            m0 = vmax(m0, vload_in(x, xo + kh * W + cb, lo0, hi0, ident))
                            m1 = vmax(m1, vload_in(x, xo + kh * W + cb + L, lo1, hi1, ident))
                ne, no = veven(m0, m1), vodd(m0, m1)
            if j >= 0:
                vstore_until(y, row * OW + j, _max3(idv, e, o, vnext1(e, ne)), n, r1 * OW)
            e, o = ne, no


@njit(nogil=True, cache=True)
def _max2s2(x, y, ident, r0, r1, H, W, OH, OW, PH, PW):
    """pool2d's rows for MaxPool 2x2 at stride 2 (VGG, U-Nets): _max3s2's scheme for this window, whose
    windows do not overlap: a vector of outputs reads two vectors of each of its two window rows, takes
    their max, then the max of its even and odd columns. pool2d's vmax chains in the same order: its bits."""
    L = vlanes(y)
    idv = vsplat(y, ident)
    q, oh = r0 // OH, r0 % OH - 1
    inside = 2 * OW - PW <= W  # no window reads past a row's end
    for row in range(r0, r1):
        q, oh, kh0, kh1, full, xo = _next_row(q, oh, OH, H, W, PH, 2)
        for j in range(0, OW, L):
            cb = 2 * j - PW
            if full and cb >= 0 and (cb + 2 * L <= W or inside and xo + W + cb + 2 * L <= x.size):
                m0 = vmax(vmax(idv, vload(x, xo + cb)), vload(x, xo + W + cb))
                m1 = vmax(vmax(idv, vload(x, xo + cb + L)), vload(x, xo + W + cb + L))
            else:
                lo0, lo1, hi0, hi1 = _lanes_in(cb, W, L)
                m0, m1 = idv, idv
                for kh in range(kh0, kh1):
                    m0 = vmax(m0, vload_in(x, xo + kh * W + cb, lo0, hi0, ident))
                    m1 = vmax(m1, vload_in(x, xo + kh * W + cb + L, lo1, hi1, ident))
            vstore_until(y, row * OW + j, vmax(vmax(idv, veven(m0, m1)), vodd(m0, m1)), min(L, OW - j), r1 * OW)


@njit(nogil=True, cache=True)
def _flat(x, y, rc, mode, ident, geom, block_idx, block_dim):
    """pool2d for stride-1 windows that keep the plane's size, on narrow planes: each plane as one flat run
    of H*W elements, whole vectors across its rows (a 7 x 7 plane is 4 vectors, not 7 rows of 7 of 16
    lanes). Per vector: the window rows' column results, a flat offset of a row each (a row outside the
    plane is outside the run: the identity by the masked load); then the left and right columns from the
    neighbouring vectors' results (vprev1 / vnext1), the identity where they would cross a row's edge (flat_aux's
    masks in rc). The same operations in the same order as pool2d's rows: the same bits. Blocks split
    the planes."""
    NC, H, W = geom[pg.NC], geom[pg.H], geom[pg.W]
    KH, KW, PH, PW = geom[pg.KH], geom[pg.KW], geom[pg.PH], geom[pg.PW]
    S, L = H * W, vlanes(y)
    n = S + L   # flat_aux's arrays: scales, left-column and right-column masks
    q0, q1 = block_range(NC, 1, block_idx, block_dim)
    idv = vsplat(y, ident)
    for q in range(q0, q1):
        xo = q * S
        cp, cc = idv, _flat_columns(x, xo, 0, S, W, KH, PH, mode, idv, ident)
        for f in range(0, S, L):
            cn = _flat_columns(x, xo, f + L, S, W, KH, PH, mode, idv, ident) if f + L < S else idv
            acc = idv
            if PW == 1:
                acc = _acc(mode, acc, vpick(vload(rc, n + f), vprev1(cp, cc), idv))
            if KW - PW >= 1:
                acc = _acc(mode, acc, cc)
            if KW - PW == 2:
                acc = _acc(mode, acc, vpick(vload(rc, 2 * n + f), vnext1(cc, cn), idv))
            if mode == AVG:
                acc = vmul(acc, vload(rc, f))
            vstore_until(y, xo + f, acc, min(L, S - f), q1 * S)
            cp, cc = cc, cn


@njit(nogil=True, cache=True, inline="always")
def _flat_columns(x, xo, f, S, W, KH, PH, mode, idv, ident):
    """The column results of the plane's flat positions f .. f+L: window rows kh in order, row kh - PH away."""
    m = idv
    for kh in range(KH):
        m = _acc(mode, m, vload_span(x, xo, f + (kh - PH) * W, S, ident))
    return m


@njit(nogil=True, cache=True)
def _buffered(x, y, rc, mode, ident, geom, block_idx, block_dim):
    """pool2d for wider windows (every window without AVX-512): the column results go through a row buffer."""
    NC, H, W, OH, OW = geom[pg.NC], geom[pg.H], geom[pg.W], geom[pg.OH], geom[pg.OW]
    KH, KW = geom[pg.KH], geom[pg.KW]
    SH, SW, PH, PW, CLH, CHH = geom[pg.SH], geom[pg.SW], geom[pg.PH], geom[pg.PW], geom[pg.CLH], geom[pg.CHH]
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
