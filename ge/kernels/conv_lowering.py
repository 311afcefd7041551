"""The per-(image, group) pieces of conv.py's lowerings (conv.py's module doc says which runs when):
row primitives, im2col, the padded phase-split copy, DIRECT, SHIFTED and ConvTranspose's col2im
(DEPTHWISE is conv_depthwise.py). A tiled conv block calls them on its share: output channels [c0, c1) of a group, or output
rows [t0, t1) of an image (tiles of rows inside it), with its own slice of the workspace.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .gemm import gemm_block
from .simd import host_has, veven, vlanes, vload, vload_in, vload_n, vodd, vstore, vstore_n
from .specialize import by_type

# _pad_copy at stride 2 splits a row into its two column phases in vectors (veven / vodd) with AVX-512 only:
# on AVX2 each is several ymm shuffles and the scalar strided copy is faster (AMD EPYC, the depthwise 3x3/2
# convs of ShuffleNet, one thread: 272 x 14 x 14 0.265 -> 0.114 ms, 136 x 28 x 28 0.200 -> 0.122, 112 x 56 x 56
# 0.395 -> 0.278, the same bits)
PAIR = host_has("avx512f")


@njit(nogil=True, cache=True)
def _valid(start, step, size, count):
    """[lo, hi): the i in [0, count) with 0 <= start + i*step < size."""
    lo = 0 if start >= 0 else (step - 1 - start) // step
    hi = (size - 1 - start) // step + 1 if start < size else 0
    hi = min(hi, count)
    return lo, max(hi, lo)


# Row primitives. Offsets go unsigned: Numba wraps negative signed indices, and that select in the
# loop body stops LLVM vectorizing (measured 4x on these copies, 12x on the epilogue). The axpys are
# inlined into DIRECT's short rows (25% faster there); inlining the copies slowed im2col 3x, so not those.

@by_type
@njit(nogil=True, cache=True)
def _zero(dst, o, n):
    uo = np.uint64(o)
    for j in range(np.uint64(n)):
        dst[uo + j] = 0


@by_type
@njit(nogil=True, cache=True)
def _gather(dst, o, src, so, n, step):
    """dst[o + j] = src[so + j*step] for j < n."""
    uo, uso, ustep = np.uint64(o), np.uint64(so), np.uint64(step)
    if step == 1:
        for j in range(np.uint64(n)):
            dst[uo + j] = src[uso + j]
    else:
        for j in range(np.uint64(n)):
            dst[uo + j] = src[uso + j * ustep]


@njit(nogil=True, cache=True, inline="always")
def _axpy(dst, o, a, src, so, n, step):
    """dst[o + j] += a * src[so + j*step] for j < n."""
    uo, uso, ustep = np.uint64(o), np.uint64(so), np.uint64(step)
    if step == 1:
        for j in range(np.uint64(n)):
            dst[uo + j] += a * src[uso + j]
    else:
        for j in range(np.uint64(n)):
            dst[uo + j] += a * src[uso + j * ustep]


@njit(nogil=True, cache=True, inline="always")
def _axpy3(dst, o, a0, a1, a2, src, so, n, d):
    """dst[o + j] += a0*src[so + j] + a1*src[so + d + j] + a2*src[so + 2d + j]: three taps, one pass."""
    uo, s0 = np.uint64(o), np.uint64(so)
    s1 = s0 + np.uint64(d)
    s2 = s1 + np.uint64(d)
    for j in range(np.uint64(n)):
        dst[uo + j] += a0 * src[s0 + j] + a1 * src[s1 + j] + a2 * src[s2 + j]


@njit(nogil=True, cache=True)
def _scatter_add(dst, o, src, so, n, step):
    """dst[o + j*step] += src[so + j] for j < n."""
    uo, uso, ustep = np.uint64(o), np.uint64(so), np.uint64(step)
    for j in range(np.uint64(n)):
        dst[uo + j * ustep] += src[uso + j]


@njit(nogil=True, cache=True)
def _split_phases(x, xo, xs, rows, W, sw):
    """xs[row, p, j] = x[xo + row*W + j*sw + p]: each input row cut into its sw stride phases."""
    Wq = (W + sw - 1) // sw
    for r in range(rows):
        for p in range(sw):
            n = (W - p + sw - 1) // sw
            _gather(xs, (r * sw + p) * Wq, x, xo + r * W + p, n, sw)


@njit(nogil=True, cache=True)
def _im2col(x, xo, col, xs, phased, t0, t1, C, D, H, W, OD, OH, OW, KD, KH, KW, sd, sh, sw, pd, ph, pw,
            dd, dh, dw):
    """col[(c,kd,kh,kw), (od,oh,ow)] = x[xo + (c, od*sd-pd+kd*dd, ...)] or 0 in the padding, for the
    output rows od*OH + oh in [t0, t1) (col holds (t1 - t0) * OW columns).

    With a column stride (sw > 1) and a wide kernel, the input rows were split into their stride phases
    (xs, by _split_phases, when it has room), so that every run of col is a contiguous copy of one phase.
    """
    T = (t1 - t0) * OW
    Wq = (W + sw - 1) // sw
    r = 0
    for c in range(C):
        for kd in range(KD):
            for kh in range(KH):
                for kw in range(KW):
                    start = kw * dw - pw
                    lo, hi = _valid(start, sw, W, OW)
                    iw = start + lo * sw  # first input column read, >= 0
                    ip = (iw % sw) * Wq + iw // sw  # where it sits in its phase row
                    for t in range(t0, t1):
                        od = t // OH
                        oh = t - od * OH
                        i_d = od * sd - pd + kd * dd
                        ih = oh * sh - ph + kh * dh
                        o = r * T + (t - t0) * OW
                        if i_d < 0 or i_d >= D or ih < 0 or ih >= H:
                            _zero(col, o, OW)
                            continue
                        _zero(col, o, lo)
                        row = (c * D + i_d) * H + ih
                        if phased:
                            _gather(col, o + lo, xs, row * sw * Wq + ip, hi - lo, 1)
                        else:
                            _gather(col, o + lo, x, xo + row * W + iw, hi - lo, sw)
                        _zero(col, o + hi, OW - hi)
                    r += 1


@njit(nogil=True, cache=True)
def _channel_stride(R, Wp):
    """Elements between channels of the padded input: R*Wp rounded up to an odd number of 64-byte lines
    (float32), since a GEMM walks it as B's row stride and a power-of-two stride (14x14: 16 rows of 16)
    maps its panel onto a few L1 sets (measured 1.4x slower)."""
    cs = (R * Wp + 15) // 16 * 16
    return cs + 16 if cs % 32 == 0 else cs


@by_type
@njit(nogil=True, cache=True)
def _pad_copy(x, xo, p, fill, C, H, W, ph, pw, sh, sw, A, B, i0, R, Wq, cs, tail):
    """The stride phases of the padded input, R phase rows from row i0 on: phase (a, b) < (A, B) of
    channel c at p[((a*B + b)*C + c)*cs:], its row i, column j = padded input (i0 + i)*sh + a, j*sw + b
    (input row - ph, column - pw; `fill` outside: 0 for convs, the identity for pools), and `tail` more
    past the end. Stride 1: one phase.
    Rows are copied in vectors inline: a call per row passing arrays costs Numba's atomic reference counts
    (two per array), which took as long as depthwise's multiply-adds on EfficientNet's 672 x 14 x 14."""
    fv = p.dtype.type(fill)
    for j in range(np.uint64(A * B * C * cs + tail)):
        p[j] = fv
    L = vlanes(p)
    pair = PAIR and sw == 2 and B == 2  # both column phases in one loop: an interleave group LLVM vectorizes
    for a in range(A):
        for c in range(C):
            for i in range(R):
                ih = (i0 + i) * sh + a - ph
                if ih < 0 or ih >= H:
                    continue
                row = xo + (c * H + ih) * W
                if pair:  # two vectors of the row from column 2j - pw -> a vector of each phase, columns
                    # outside the input loaded as `fill` (a masked load): every phase column written, no
                    # scalar ends (the one-element loops that copied them cost 200 ns a 14 x 14 plane)
                    d0, d1 = ((a * 2) * C + c) * cs + i * Wq, ((a * 2 + 1) * C + c) * cs + i * Wq
                    for j in range(0, Wq, L):
                        c0 = 2 * j - pw
                        v0 = vload_in(x, row + c0, max(0, -c0), max(0, min(L, W - c0)), fill)
                        v1 = vload_in(x, row + c0 + L, max(0, -c0 - L), max(0, min(L, W - c0 - L)), fill)
                        vstore_n(p, d0 + j, veven(v0, v1), min(L, Wq - j))
                        vstore_n(p, d1 + j, vodd(v0, v1), min(L, Wq - j))
                    continue
                for b in range(B):
                    lo, hi = _valid(b - pw, sw, W, Wq)  # the phase columns inside the input
                    n = hi - lo
                    d, s = ((a * B + b) * C + c) * cs + i * Wq + lo, row + lo * sw + b - pw
                    if sw == 1:
                        j = 0
                        while j + L <= n:
                            vstore(p, d + j, vload(x, s + j))
                            j += L
                        if j < n:
                            vstore_n(p, d + j, vload_n(x, s + j, n - j), n - j)
                    else:
                        ud, us, ustep = np.uint64(d), np.uint64(s), np.uint64(sw)
                        for j in range(np.uint64(n)):
                            p[ud + j] = x[us + j * ustep]


@njit(nogil=True, cache=True)
def _from_grid(y, yo, q, qo, rows, OW, Wp):
    """y[yo + r*OW + ow] = q[qo + r*Wp + ow]: the valid columns of one channel's padded-width grid."""
    for r in range(rows):
        _gather(y, yo + r * OW, q, qo + r * Wp, OW, 1)


@njit(nogil=True, cache=True)
def _direct(x, xo, w, wo, y, yo, lohi, Cg, D, H, W, OD, OH, OW, KD, KH, KW, sd, sh, sw, pd, ph, pw, dd, dh, dw):
    """One output plane y[yo:] from Cg input planes x[xo:] (weights w[wo:], channel-major), row by row:
    each output row (in L1) gets the sum over channels and taps of w[tap] * a shifted input row.
    lohi[kw], lohi[KW+kw]: the valid ow range."""
    for od in range(OD):
        for oh in range(OH):
            yr = yo + (od * OH + oh) * OW
            _zero(y, yr, OW)
            for c in range(Cg):
                for kd in range(KD):
                    i_d = od * sd - pd + kd * dd
                    for kh in range(KH):
                        ih = oh * sh - ph + kh * dh
                        if i_d < 0 or i_d >= D or ih < 0 or ih >= H:
                            continue
                        xr = xo + ((c * D + i_d) * H + ih) * W - pw
                        wr = wo + ((c * KD + kd) * KH + kh) * KW
                        L, R = OW, OW  # a 3-tap stride-1 row does [L, R), where all taps are valid, in one pass
                        if KW == 3 and sw == 1:
                            l3, r3 = max(lohi[0], lohi[1], lohi[2]), min(lohi[3], lohi[4], lohi[5])
                            if l3 < r3:
                                _axpy3(y, yr + l3, w[wr], w[wr + 1], w[wr + 2], x, xr + l3, r3 - l3, dw)
                                L, R = l3, r3
                        for kw in range(KW):  # each tap over its valid range outside [L, R)
                            lo, hi = lohi[kw], lohi[KW + kw]
                            h, l = min(hi, L), max(lo, R)
                            if lo < h:
                                _axpy(y, yr + lo, w[wr + kw], x, xr + kw * dw + lo * sw, h - lo, sw)
                            if l < hi:
                                _axpy(y, yr + l, w[wr + kw], x, xr + kw * dw + l * sw, hi - l, sw)


@njit(nogil=True, cache=True)
def _shifted(x, xo, wg, y, yo, ws, pk, Cg, H, W, Mg, OH, OW, KH, KW, sh, sw, ph, pw, tile, c0, c1, t0, t1):
    """SHIFTED for one image and group, output channels [c0, c1) and rows [t0, t1): per tile of output rows,
    copy the input rows it reads, zero-padded and split into stride phases, to ws; then one GEMM
    grid[c1-c0, rows*Wq] = W[c0:c1, Cg*KT] @ B where B's row (c, kh, kw) is channel c of phase
    (kh % sh, kw % sw) shifted by (kh // sh, kw // sw) (a table of row offsets: no im2col); then copy the
    grid's valid columns (ow < OW) into y (or, with no padding columns, the GEMM writes y). pk: the GEMM's
    packing workspace."""
    KT, A, B = KH * KW, min(sh, KH), min(sw, KW)
    K, Wq = Cg * KT, OW + (KW - 1) // sw
    R = tile + (KH - 1) // sh  # phase rows per tile
    cs = _channel_stride(R, Wq)
    tail = (KW - 1) // sw
    P = (A * B * Cg * cs + tail + 15) // 16 * 16  # where the grid starts
    brow = np.empty(K, np.int64)
    for c in range(Cg):
        for t in range(KT):
            kh, kw = t // KW, t % KW
            brow[c * KT + t] = (((kh % sh) * B + kw % sw) * Cg + c) * cs + (kh // sh) * Wq + kw // sw
    for oh0 in range(t0, t1, tile):
        rows = min(tile, t1 - oh0)
        _pad_copy(x, xo, ws, 0.0, Cg, H, W, ph, pw, sh, sw, A, B, oh0, R, Wq, cs, tail)
        nq = rows * Wq
        if Wq == OW:  # no padding columns (1x1 strided): the grid is y's rows themselves
            gemm_block(wg, ws, brow, 0, y[yo + oh0 * OW:], OH * OW, K, K, 1, False, c0, c1, 0, nq, pk, False)
            continue
        lq = (nq + 15) // 16 * 16  # grid rows start 64-byte aligned
        gemm_block(wg[c0 * K:], ws, brow, 0, ws[P:], lq, K, K, 1, False, 0, c1 - c0, 0, nq, pk, False)
        for m in range(c0, c1):
            _from_grid(y, yo + m * OH * OW + oh0 * OW, ws, P + (m - c0) * lq, rows, OW, Wq)


@njit(nogil=True, cache=True)
def _im2col_gemm(x, xo, wg, y, yo, ws, pk, phased, Cg, D, H, W, Mg, OD, OH, OW, KD, KH, KW, sd, sh, sw,
                 pd, ph, pw, dd, dh, dw, tile, c0, c1, t0, t1):
    """IM2COL for one image and group, output channels [c0, c1) and rows [t0, t1) (od*OH + oh): per tile
    of output rows, unfold into col (ws), then y[c0:c1, tile] = W[c0:c1] @ col. With a column stride and
    a wide kernel the input rows are first split into their stride phases (after col in ws)."""
    K, S, T = Cg * KD * KH * KW, OD * OH * OW, tile * OW
    if phased:
        _split_phases(x, xo, ws[K * T:], Cg * D * H, W, sw)
    for r0 in range(t0, t1, tile):
        r1 = min(r0 + tile, t1)
        n = (r1 - r0) * OW
        _im2col(x, xo, ws, ws[K * T:], phased, r0, r1, Cg, D, H, W, OD, OH, OW, KD, KH, KW,
                sd, sh, sw, pd, ph, pw, dd, dh, dw)
        gemm_block(wg, ws, np.empty(0, np.int64), n, y[yo + r0 * OW:], S, K, K, 1, False, c0, c1, 0, n, pk,
                   False)


@njit(nogil=True, cache=True)
def _col2im(col, y, yo, M, D, H, W, OD, OH, OW, KD, KH, KW, sd, sh, sw, pd, ph, pw, dd, dh, dw):
    """y[yo + (m, i*s - p + k*d)] += col[(m,k), i] over the positions that land inside the output."""
    S_in, S = D * H * W, OD * OH * OW
    r = 0
    for m in range(M):
        for kd in range(KD):
            for kh in range(KH):
                for kw in range(KW):
                    start = kw * dw - pw
                    lo, hi = _valid(start, sw, OW, W)
                    for i_d in range(D):
                        od = i_d * sd - pd + kd * dd
                        if od < 0 or od >= OD:
                            continue
                        for ih in range(H):
                            oh = ih * sh - ph + kh * dh
                            if 0 <= oh < OH:
                                _scatter_add(y, yo + m * S + (od * OH + oh) * OW + start + lo * sw, col,
                                             r * S_in + (i_d * H + ih) * W + lo, hi - lo, sw)
                    r += 1
