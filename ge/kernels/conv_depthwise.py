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
from .epilogue import epilogue
from .simd import vbcast, vfma, vlanes, vload, vstore, vstore_n, vzero


@njit(nogil=True, cache=True)
def depthwise(x, w, b, z, y, ws, taps, q0, q1, G, Mg, H, W, OH, OW, KH, KW, sh, sw, ph, pw, tile,
              has_b, has_z, act, p0, p1):
    """y = act(depthwise(x, w) + b + z) for pairs (image, group) [q0, q1): each input channel and its Mg
    output channels. taps: KH*KW int64 scratch; ws: this block's workspace (conv._plan's DEPTHWISE size)."""
    KT, A, B, S = KH * KW, min(sh, KH), min(sw, KW), OH * OW
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
                _dw_rows(ws, Wq, taps, w, (g * Mg + m) * KT, y, o, OW, rows)
                bias = b[g * Mg + m] if has_b else 0.0
                epilogue(y, o, rows * OW, 1.0, bias, z, o, 1.0, has_z, act, p0, p1)


@njit(nogil=True, cache=True)
def _dw_rows(p, Wq, taps, w, wo, y, yo, OW, rows):
    """y[yo + r*OW + j] = sum over taps t of w[wo+t] * p[r*Wq + taps[t] + j], r < rows, j < OW. Four rows
    at a time, two vectors each (the weight broadcast once for eight FMAs: one row's taps form one FMA chain,
    whose 4-cycle latency bounded a row at a time on planes under four vectors wide), then single rows.
    A tail's loads may run up to a vector past the row (into the workspace's slack: read, never stored)."""
    L = vlanes(y)
    KT = taps.size
    r = 0
    while r + 4 <= rows:
        po, yr = r * Wq, yo + r * OW
        j = 0
        while j + 2 * L <= OW:
            a0, a1, a2, a3 = vzero(y), vzero(y), vzero(y), vzero(y)
            b0, b1, b2, b3 = vzero(y), vzero(y), vzero(y), vzero(y)
            for t in range(KT):
                s, wv = po + taps[t] + j, vbcast(w, wo + t)
                a0 = vfma(wv, vload(p, s), a0)
                b0 = vfma(wv, vload(p, s + L), b0)
                a1 = vfma(wv, vload(p, s + Wq), a1)
                b1 = vfma(wv, vload(p, s + Wq + L), b1)
                a2 = vfma(wv, vload(p, s + 2 * Wq), a2)
                b2 = vfma(wv, vload(p, s + 2 * Wq + L), b2)
                a3 = vfma(wv, vload(p, s + 3 * Wq), a3)
                b3 = vfma(wv, vload(p, s + 3 * Wq + L), b3)
            vstore(y, yr + j, a0)
            vstore(y, yr + j + L, b0)
            vstore(y, yr + OW + j, a1)
            vstore(y, yr + OW + j + L, b1)
            vstore(y, yr + 2 * OW + j, a2)
            vstore(y, yr + 2 * OW + j + L, b2)
            vstore(y, yr + 3 * OW + j, a3)
            vstore(y, yr + 3 * OW + j + L, b3)
            j += 2 * L
        while j < OW:
            a0, a1, a2, a3 = vzero(y), vzero(y), vzero(y), vzero(y)
            for t in range(KT):
                s, wv = po + taps[t] + j, vbcast(w, wo + t)
                a0 = vfma(wv, vload(p, s), a0)
                a1 = vfma(wv, vload(p, s + Wq), a1)
                a2 = vfma(wv, vload(p, s + 2 * Wq), a2)
                a3 = vfma(wv, vload(p, s + 3 * Wq), a3)
            n = min(L, OW - j)
            vstore_n(y, yr + j, a0, n)
            vstore_n(y, yr + OW + j, a1, n)
            vstore_n(y, yr + 2 * OW + j, a2, n)
            vstore_n(y, yr + 3 * OW + j, a3, n)
            j += L
        r += 4
    while r < rows:
        po, yr = r * Wq, yo + r * OW
        j = 0
        while j + 2 * L <= OW:
            a0, b0 = vzero(y), vzero(y)
            for t in range(KT):
                s, wv = po + taps[t] + j, vbcast(w, wo + t)
                a0 = vfma(wv, vload(p, s), a0)
                b0 = vfma(wv, vload(p, s + L), b0)
            vstore(y, yr + j, a0)
            vstore(y, yr + j + L, b0)
            j += 2 * L
        while j < OW:
            a0 = vzero(y)
            for t in range(KT):
                a0 = vfma(vbcast(w, wo + t), vload(p, po + taps[t] + j), a0)
            vstore_n(y, yr + j, a0, min(L, OW - j))
            j += L
        r += 1
