"""DEPTHWISE: a conv with one input channel per group (conv.py's module doc says when it runs), one call
per block for all its planes.

Per plane and tile of output rows: the zero-padded input rows in their stride phases (_pad_copy: each tap of
an output row then reads one contiguous run), then the output rows in register tiles (_dw_rows: four rows x
two vectors, every tap accumulated in registers, y written once), then the bias, residual and activation on
the rows just written, while they are in L1. The earlier form (a zeroed grid, one axpy pass per tap, a copy
out) loaded and stored the grid once per tap.

Calls inside the plane loop are few on purpose: a jitted call that passes arrays costs Numba two atomic
reference counts per array (~20 cycles each), and with a call per row (or per channel from conv) those took
longer than the multiply-adds on 14 x 14 planes (EfficientNet's 5x5 on 672 x 14 x 14: 1.2 ms, 57% of it in
NRT_incref/decref, measured with perf).
"""
from __future__ import annotations

from numba import njit

from .conv_lowering import _channel_stride, _pad_copy
from .epilogue import CLIP, HARD_SIGMOID, HARD_SWISH, NONE, RELU, epilogue
from .simd import vadd, vbcast, vfma, vlanes, vload, vload_n, vmax, vmin, vmul, vsplat, vstore, vstore_n, vtrans16, vzero
from .specialize import by_type


@njit(nogil=True, cache=True)
def depthwise(x, w, b, z, y, ws, taps, q0, q1, G, Mg, H, W, OH, OW, KH, KW, sh, sw, ph, pw, tile,
              has_b, has_z, act, p0, p1):
    """y = act(depthwise(x, w) + b + z) for pairs (image, group) [q0, q1): each input channel and its Mg
    output channels. taps: KH*KW int64 scratch; ws: this block's workspace (conv._plan's DEPTHWISE size)."""
    KT, A, B, S = KH * KW, min(sh, KH), min(sw, KW), OH * OW
    fused = not has_z and (act == NONE or act == RELU or act == CLIP or act == HARD_SIGMOID or act == HARD_SWISH)
    if use_blocked(G, Mg, vlanes(y), sw):
        _blocked(x, w, b, y, ws, taps, q0, q1, G, H, W, OH, OW, KH, KW, sh, sw, ph, pw, has_b, fused, act, p0, p1)
        for q in range(q0, q1):
            if not fused:
                epilogue(y, q * S, S, 1.0, b[q % G] if has_b else 0.0, z, q * S, 1.0, has_z, act, p0, p1)
        return
    Wq, tail = OW + (KW - 1) // sw, (KW - 1) // sw
    cs = _channel_stride(tile + (KH - 1) // sh, Wq)
    for kh in range(KH):  # where tap (kh, kw) of output row 0, column 0 reads in the phases
        for kw in range(KW):
            taps[kh * KW + kw] = ((kh % sh) * B + kw % sw) * cs + (kh // sh) * Wq + kw // sw
    for q in range(q0, q1):
        g = q % G
        xo, yo = q * H * W, q * Mg * S
        for oh0 in range(0, OH, tile):
            rows = min(tile, OH - oh0)
            _pad_copy(x, xo, ws, 0.0, 1, H, W, ph, pw, sh, sw, A, B, oh0, rows + (KH - 1) // sh, Wq, cs, tail)
            for m in range(Mg):
                o = yo + m * S + oh0 * OW
                bias = b[g * Mg + m] if has_b else 0.0
                if fused:
                    _dw_rows(ws, Wq, taps, w, (g * Mg + m) * KT, y, o, OW, rows, bias, act, p0, p1)
                else:
                    _dw_rows(ws, Wq, taps, w, (g * Mg + m) * KT, y, o, OW, rows, 0.0, NONE, 0.0, 0.0)
                    epilogue(y, o, rows * OW, 1.0, bias, z, o, 1.0, has_z, act, p0, p1)


@njit(nogil=True, cache=True, inline="always")
def _finish(v, bias, act, c0, c1, lo, hi):
    """bias + an activation on a vector, with the epilogue's formulas (epilogue.py): the same bits."""
    v = vadd(v, bias)
    if act == RELU:
        v = vmax(v, lo)
    elif act == CLIP:
        v = vmin(vmax(v, c0), c1)
    elif act == HARD_SIGMOID:
        v = vmin(vmax(vadd(vmul(c0, v), c1), lo), hi)
    elif act == HARD_SWISH:
        v = vmul(v, vmin(vmax(vadd(vmul(c0, v), c1), lo), hi))
    return v


@njit(nogil=True, cache=True, inline="always")
def _wide(p, Wq, taps, w, wo, y, yo, OW, r, R, bv, act, c0, c1, lo, hi):
    """Rows r .. r+R of a plane wider than a vector (R = 4 or 1, a literal: 8 or 2 FMA chains), two
    vectors of columns at a time, the second masked at the row's end."""
    L = vlanes(y)
    po, yr = r * Wq, yo + r * OW
    for j in range(0, OW, 2 * L):
        a0, a1, a2, a3 = vzero(y), vzero(y), vzero(y), vzero(y)
        b0, b1, b2, b3 = vzero(y), vzero(y), vzero(y), vzero(y)
        for t in range(taps.size):
            s, wv = po + taps[t] + j, vbcast(w, wo + t)
            a0 = vfma(wv, vload(p, s), a0)
            b0 = vfma(wv, vload(p, s + L), b0)
            if R > 1:
                a1 = vfma(wv, vload(p, s + Wq), a1)
                b1 = vfma(wv, vload(p, s + Wq + L), b1)
                a2 = vfma(wv, vload(p, s + 2 * Wq), a2)
                b2 = vfma(wv, vload(p, s + 2 * Wq + L), b2)
                a3 = vfma(wv, vload(p, s + 3 * Wq), a3)
                b3 = vfma(wv, vload(p, s + 3 * Wq + L), b3)
        n0, n1 = min(L, OW - j), max(0, min(L, OW - j - L))
        vstore_n(y, yr + j, _finish(a0, bv, act, c0, c1, lo, hi), n0)
        vstore_n(y, yr + j + L, _finish(b0, bv, act, c0, c1, lo, hi), n1)
        if R > 1:
            vstore_n(y, yr + OW + j, _finish(a1, bv, act, c0, c1, lo, hi), n0)
            vstore_n(y, yr + OW + j + L, _finish(b1, bv, act, c0, c1, lo, hi), n1)
            vstore_n(y, yr + 2 * OW + j, _finish(a2, bv, act, c0, c1, lo, hi), n0)
            vstore_n(y, yr + 2 * OW + j + L, _finish(b2, bv, act, c0, c1, lo, hi), n1)
            vstore_n(y, yr + 3 * OW + j, _finish(a3, bv, act, c0, c1, lo, hi), n0)
            vstore_n(y, yr + 3 * OW + j + L, _finish(b3, bv, act, c0, c1, lo, hi), n1)


@njit(nogil=True, cache=True, inline="always")
def _narrow(p, Wq, taps, w, wo, y, yo, OW, r, R, bv, act, c0, c1, lo, hi):
    """Rows r .. r+R of a plane at most a vector wide (R = 8, 4, 2 or 1, a literal), one vector a row."""
    po, yr = r * Wq, yo + r * OW
    a0, a1, a2, a3 = vzero(y), vzero(y), vzero(y), vzero(y)
    a4, a5, a6, a7 = vzero(y), vzero(y), vzero(y), vzero(y)
    for t in range(taps.size):
        s, wv = po + taps[t], vbcast(w, wo + t)
        a0 = vfma(wv, vload(p, s), a0)
        if R > 1:
                a1 = vfma(wv, vload(p, s + Wq), a1)
        if R > 2:
                a2 = vfma(wv, vload(p, s + 2 * Wq), a2)
                a3 = vfma(wv, vload(p, s + 3 * Wq), a3)
        if R > 4:
                a4 = vfma(wv, vload(p, s + 4 * Wq), a4)
                a5 = vfma(wv, vload(p, s + 5 * Wq), a5)
                a6 = vfma(wv, vload(p, s + 6 * Wq), a6)
                a7 = vfma(wv, vload(p, s + 7 * Wq), a7)
    vstore_n(y, yr, _finish(a0, bv, act, c0, c1, lo, hi), OW)
    if R > 1:
        vstore_n(y, yr + OW, _finish(a1, bv, act, c0, c1, lo, hi), OW)
    if R > 2:
        vstore_n(y, yr + 2 * OW, _finish(a2, bv, act, c0, c1, lo, hi), OW)
        vstore_n(y, yr + 3 * OW, _finish(a3, bv, act, c0, c1, lo, hi), OW)
    if R > 4:
        vstore_n(y, yr + 4 * OW, _finish(a4, bv, act, c0, c1, lo, hi), OW)
        vstore_n(y, yr + 5 * OW, _finish(a5, bv, act, c0, c1, lo, hi), OW)
        vstore_n(y, yr + 6 * OW, _finish(a6, bv, act, c0, c1, lo, hi), OW)
        vstore_n(y, yr + 7 * OW, _finish(a7, bv, act, c0, c1, lo, hi), OW)


@by_type
@njit(nogil=True, cache=True)
def _dw_rows(p, Wq, taps, w, wo, y, yo, OW, rows, bias, act, p0, p1):
    """y[yo + r*OW + j] = act(sum over taps t of w[wo+t] * p[r*Wq + taps[t] + j] + bias), r < rows, j < OW,
    act one of IN_REGISTERS (NONE otherwise). Eight FMA chains at a time: four rows x two vectors, or
    eight rows x one vector on planes a vector wide; narrow planes' leftover rows in tiles of 4 and 2 (a single
    row's one or two chains wait on the FMA latency: 672 x 14 x 14 5x5 left 6 of 14 rows to them; 0.257 ->
    0.205 ms, one core). A row's last loads may run up to two vectors past it (into the workspace's slack: read, never
    stored)."""
    L = vlanes(y)
    bv, lo, hi = vsplat(y, bias), vsplat(y, 0.0), vsplat(y, 1.0)
    c0, c1 = vsplat(y, p0), vsplat(y, p1)
    if act == HARD_SWISH:
        c0, c1 = vsplat(y, 1 / 6), vsplat(y, 0.5)
    r = 0
    if OW > L:
        while r + 4 <= rows:
            _wide(p, Wq, taps, w, wo, y, yo, OW, r, 4, bv, act, c0, c1, lo, hi)
            r += 4
        while r < rows:  # planes this wide rarely leave rows (28, 56, 112 are multiples of 4): one variant less
            _wide(p, Wq, taps, w, wo, y, yo, OW, r, 1, bv, act, c0, c1, lo, hi)  # to compile (~7 s per dtype)
            r += 1
    else:
        while r + 8 <= rows:
            _narrow(p, Wq, taps, w, wo, y, yo, OW, r, 8, bv, act, c0, c1, lo, hi)
            r += 8
        if r + 4 <= rows:
            _narrow(p, Wq, taps, w, wo, y, yo, OW, r, 4, bv, act, c0, c1, lo, hi)
            r += 4
        if r + 2 <= rows:
            _narrow(p, Wq, taps, w, wo, y, yo, OW, r, 2, bv, act, c0, c1, lo, hi)
            r += 2
        if r < rows:
            _narrow(p, Wq, taps, w, wo, y, yo, OW, r, 1, bv, act, c0, c1, lo, hi)


# Channels-blocked (NCHW16c) path, Mg == 1 and float32: 16 planes at a time are transposed into a tile of
# pixels whose 16 lanes are the 16 channels, so a tap is one aligned load and one FMA for 16 outputs,
# where the NCHW rows above load unaligned vectors that split cache lines (onnxruntime keeps NCHWc between
# convs for the same reason; here the layout lives only in the workspace). Each output keeps the NCHW path's
# sum order (taps in order, one FMA chain from zero, then bias and activation): the same bits.
BLOCKED_TILE = 32768  # floats of blocked input per tile (128 KiB, in L2; the KH rows a row of outputs reads stay in L1)


@njit(cache=True)
def use_blocked(G, Mg, lanes, sw):
    """Whether DEPTHWISE runs blocked: one output channel per group, float32, at least a block of planes,
    unit column stride (a row's pixels one vector apart: their loads share one address register)."""
    return Mg == 1 and lanes == 16 and G >= 16 and sw == 1


@njit(cache=True)
def blocked_rows(OH, OW, KH, KW, sh, sw):
    """(output rows per tile, padded width, workspace floats) of the blocked path."""
    Wp = (OW - 1) * sw + KW
    rows = max(1, min(OH, (BLOCKED_TILE // (16 * Wp) - KH) // sh + 1))
    return rows, Wp, 16 * (KH * KW + 1) + 16 * (((rows - 1) * sh + KH) * Wp + 16 * sw + 16)


@njit(nogil=True, cache=True, inline="always")
def _nc(n, c, nc):
    return n if c < nc else 0


@njit(nogil=True, cache=True, inline="always")
def _blocked_in(x, xo, P, nc, H, W, i0, R, p, d0, Wp, pw):
    """Rows i0 .. i0+R of planes xo + c*P (c < nc; zeros for the others) zero-padded into p[d0:], pixel
    (i, j) at d0 + (i*Wp + j)*16. A row's last transposed vector may run past it: the next row rewrites
    that, and the tile's slack takes the last one's."""
    for i in range(R):
        d, ih = d0 + i * Wp * 16, i0 + i
        if ih < 0 or ih >= H:
            for k in range(Wp * 16):
                p[d + k] = 0.0
            continue
        for k in range(pw * 16):
            p[d + k] = 0.0
        s = xo + ih * W
        for j in range(0, W, 16):
            n = min(16, W - j)
            t = vtrans16(vload_n(x, s + j, _nc(n, 0, nc)), vload_n(x, s + P + j, _nc(n, 1, nc)),
                         vload_n(x, s + 2 * P + j, _nc(n, 2, nc)), vload_n(x, s + 3 * P + j, _nc(n, 3, nc)),
                         vload_n(x, s + 4 * P + j, _nc(n, 4, nc)), vload_n(x, s + 5 * P + j, _nc(n, 5, nc)),
                         vload_n(x, s + 6 * P + j, _nc(n, 6, nc)), vload_n(x, s + 7 * P + j, _nc(n, 7, nc)),
                         vload_n(x, s + 8 * P + j, _nc(n, 8, nc)), vload_n(x, s + 9 * P + j, _nc(n, 9, nc)),
                         vload_n(x, s + 10 * P + j, _nc(n, 10, nc)), vload_n(x, s + 11 * P + j, _nc(n, 11, nc)),
                         vload_n(x, s + 12 * P + j, _nc(n, 12, nc)), vload_n(x, s + 13 * P + j, _nc(n, 13, nc)),
                         vload_n(x, s + 14 * P + j, _nc(n, 14, nc)), vload_n(x, s + 15 * P + j, _nc(n, 15, nc)))
            e = d + (pw + j) * 16
            for k in range(16):
                vstore(p, e + 16 * k, t[k])
        for k in range((pw + W) * 16, Wp * 16):
            p[d + k] = 0.0


@njit(nogil=True, cache=True, inline="always")
def _blocked_out(p, d0, Wp, taps, y, yo, S, nc, OW, rows, sh, sw, bv, act, c0, c1, lo, hi):
    """Output rows 0 .. rows of planes yo + c*S (c < nc) from the tile at p[d0:] (the weights at p[0:], a
    vector a tap): 16 pixels of a row at a time in 16 FMA chains, transposed back into channel rows."""
    for r in range(rows):
        for j in range(0, OW, 16):
            s, n = d0 + (r * sh * Wp + j * sw) * 16, min(16, OW - j)
            a0, a1, a2, a3, a4, a5, a6, a7 = vzero(y), vzero(y), vzero(y), vzero(y), vzero(y), vzero(y), vzero(y), vzero(y)
            a8, a9, a10, a11, a12, a13, a14, a15 = vzero(y), vzero(y), vzero(y), vzero(y), vzero(y), vzero(y), vzero(y), vzero(y)
            for t in range(taps.size):
                wv, o = vload(p, 16 * t), s + taps[t]
                a0 = vfma(wv, vload(p, o), a0)
                a1 = vfma(wv, vload(p, o + 1 * 16), a1)
                a2 = vfma(wv, vload(p, o + 2 * 16), a2)
                a3 = vfma(wv, vload(p, o + 3 * 16), a3)
                a4 = vfma(wv, vload(p, o + 4 * 16), a4)
                a5 = vfma(wv, vload(p, o + 5 * 16), a5)
                a6 = vfma(wv, vload(p, o + 6 * 16), a6)
                a7 = vfma(wv, vload(p, o + 7 * 16), a7)
                a8 = vfma(wv, vload(p, o + 8 * 16), a8)
                a9 = vfma(wv, vload(p, o + 9 * 16), a9)
                a10 = vfma(wv, vload(p, o + 10 * 16), a10)
                a11 = vfma(wv, vload(p, o + 11 * 16), a11)
                a12 = vfma(wv, vload(p, o + 12 * 16), a12)
                a13 = vfma(wv, vload(p, o + 13 * 16), a13)
                a14 = vfma(wv, vload(p, o + 14 * 16), a14)
                a15 = vfma(wv, vload(p, o + 15 * 16), a15)
            v = vtrans16(_finish(a0, bv, act, c0, c1, lo, hi), _finish(a1, bv, act, c0, c1, lo, hi),
                         _finish(a2, bv, act, c0, c1, lo, hi), _finish(a3, bv, act, c0, c1, lo, hi),
                         _finish(a4, bv, act, c0, c1, lo, hi), _finish(a5, bv, act, c0, c1, lo, hi),
                         _finish(a6, bv, act, c0, c1, lo, hi), _finish(a7, bv, act, c0, c1, lo, hi),
                         _finish(a8, bv, act, c0, c1, lo, hi), _finish(a9, bv, act, c0, c1, lo, hi),
                         _finish(a10, bv, act, c0, c1, lo, hi), _finish(a11, bv, act, c0, c1, lo, hi),
                         _finish(a12, bv, act, c0, c1, lo, hi), _finish(a13, bv, act, c0, c1, lo, hi),
                         _finish(a14, bv, act, c0, c1, lo, hi), _finish(a15, bv, act, c0, c1, lo, hi))
            e = yo + r * OW + j
            for c in range(16):
                vstore_n(y, e + c * S, v[c], _nc(n, c, nc))


@njit(nogil=True, cache=True)
def _blocked(x, w, b, y, ws, taps, q0, q1, G, H, W, OH, OW, KH, KW, sh, sw, ph, pw, has_b, fused, act, p0, p1):
    """depthwise's planes [q0, q1) (Mg == 1), 16 at a time in the blocked layout; bias and activation in
    registers when `fused`, else left to the caller's epilogue."""
    KT, S = KH * KW, OH * OW
    tile, Wp, size = blocked_rows(OH, OW, KH, KW, sh, sw)
    d0 = 16 * (KT + 1)
    for k in range(d0 + ((tile - 1) * sh + KH) * Wp * 16, size):  # the slack only last rows' garbage lanes read
        ws[k] = 0.0
    for t in range(KT):
        taps[t] = ((t // KW) * Wp + t % KW) * 16
    lo, hi = vsplat(y, 0.0), vsplat(y, 1.0)
    c0, c1 = vsplat(y, p0), vsplat(y, p1)
    if act == HARD_SWISH:
        c0, c1 = vsplat(y, 1 / 6), vsplat(y, 0.5)
    if not fused:
        act = NONE
    for qa in range(q0, q1, 16):
        nc = min(16, q1 - qa)
        for c in range(16):  # this block's weights, a vector a tap, and its biases
            g = (qa + c) % G
            for t in range(KT):
                ws[16 * t + c] = w[g * KT + t] if c < nc else 0.0
            ws[16 * KT + c] = b[g] if has_b and fused and c < nc else 0.0
        bv = vload(ws, 16 * KT)
        for oh0 in range(0, OH, tile):
            rows = min(tile, OH - oh0)
            _blocked_in(x, qa * H * W, H * W, nc, H, W, oh0 * sh - ph, (rows - 1) * sh + KH, ws, d0, Wp, pw)
            _blocked_out(ws, d0, Wp, taps, y, qa * S + oh0 * OW, S, nc, OW, rows, sh, sw, bv, act, c0, c1, lo, hi)
