"""DEPTHWISE: a conv with one input channel per group (conv.py's module doc says when it runs), one call
per block for all its planes.

Per plane and tile of output rows: the zero-padded input rows (stride 1: _pad_rows, whole vectors with the
padding in masked-off lanes; else _pad_copy's stride phases), so each tap of an output row reads one contiguous
run; then the output rows in register tiles (_dw_rows: four rows x two vectors, every tap accumulated in
registers, y written once), then the bias, residual and activation on the rows just written, while they are
in L1. The earlier form (a zeroed grid, one axpy pass per tap, a copy out) loaded and stored the
grid once per tap. Three variations, each with its flag and measured effect where it is defined:
- REUSE: at stride 1 with kernels 5 or 7 wide, tiles of four rows load each input vector once for all
  the output rows it serves (_reused) instead of once per tap (_wide).
- FLAT: "same" stride-1 planes at most half a vector wide (7 x 7) run as one flat run per plane, no
  padded copy, row edges masked (_flat).
- DIRECT (Zen 4 only): the rows shifted in registers straight from x (below).

At stride 1 with 3-, 5- or 7-wide kernels on planes wider than a vector (MobileNetV2's 3x3 on 56 and 112,
MBConv's 5x5 on 28, ConvNeXt's 7x7 on 56), whole tiles of four rows skip the padded copy on AMD's AVX-512
(`DIRECT`): _direct reads x's rows once per two output vectors and moves them on by kw in registers (same
sums in the same order: the same bits). Against the padded copy and _wide, one core, the same arguments,
alternating (shared machine, medians of 40): 240 x 28 x 28 5x5 0.264 -> 0.225 ms, 144 x 56 x 56 3x3 0.368
-> 0.293, 32 x 112 x 112 3x3 0.220 -> 0.171, 96 x 20 x 20 3x3 0.042 -> 0.028; 7x7 (issue #17's earlier
attempt) 96 x 56 x 56 0.566 -> 0.427. Without AVX-512 (AVX2, AMD EPYC, 2026-12-06, medians of 100, copies
of `depthwise` compiled either way: bench/kernel_paths.py) the direct path is
the slower one: 240 x 28 x 28 5x5 0.873 -> 0.583 ms on the padded copy, 144 x 56 x 56 3x3 1.189 -> 0.907,
120 x 28 x 28 5x5 0.303 -> 0.293, 96 x 56 x 56 7x7 1.548 -> 1.360. On Intel's AVX-512 too (a Xeon, LLVM's
"rocketlake", 2026-12-06, the same script), 4-5x slower: 144 x 56 x 56 3x3 1.334 -> 0.248 ms on the padded
copy, 240 x 28 x 28 5x5 0.763 -> 0.189, 120 x 28 x 28 5x5 0.493 -> 0.095, 96 x 56 x 56 7x7 1.922 -> 0.510
(its shifts, valignd, and masked loads cost more there). On Zen 5 too (AMD EPYC, LLVM's "znver5", 2026-12-06, the
same script), 3-4x slower: 144 x 56 x 56 3x3 0.733 -> 0.171 ms on the padded copy, 240 x 28 x 28 5x5 0.482 ->
0.140, 120 x 28 x 28 5x5 0.241 -> 0.076, 96 x 56 x 56 7x7 1.110 -> 0.363. So DIRECT on Zen 4 ("znver4") only.

Measured and not taken (2026-12-02): a channels-blocked path (16 planes transposed into NCHW16c in the workspace,
a tap one aligned load + FMA for 16 outputs, then transposed back): on 240 x 28 x 28 5x5 its two transposes cost
0.076 ms against the padded copy's 0.06, and its 16-chain tap loop ran 0.6 ns per FMA against these register
tiles' 0.41 (one core); no faster overall (branch dw's history has it).

Calls inside the plane loop are few on purpose: a jitted call that passes arrays costs Numba two atomic
reference counts per array (~20 cycles each), and with a call per row (or per channel from conv) those took
longer than the multiply-adds on 14 x 14 planes (EfficientNet's 5x5 on 672 x 14 x 14: 1.2 ms, 57% of it in
NRT_incref/decref, measured with perf).
"""
from __future__ import annotations

from numba import njit

from .conv_depthwise_blocked import CB, blocked_fits, depthwise_blocked
from .conv_lowering import _channel_stride, _pad_copy
from .epilogue import NONE, epilogue, in_registers, vfinish, vfinish_consts
from .simd import (host_cpu, host_has, vbcast, vfma, vlanes, vload, vload_in, vnext1, vnext2, vnext3, vnext4,
                   vnext5, vnext6, vpick, vsplat, vstore, vstore_until, vload_span, vzero)
from .specialize import by_type

# _direct's tiles hold 8 accumulators, 3 loaded and up to 12 shifted vectors: AVX-512's 32 registers; with
# AVX2's 16 (two halves a vector) they spill and the padded copy wins; on Intel and Zen 5 it loses (module doc)
DIRECT = host_has("avx512f") and host_cpu() == "znver4"
# _wide's rows a tile: 4 x 2 vectors of accumulators fill AVX2's registers and spill; 2 rows measured faster there
# (AVX2, medians of 100, alternating: 144x56x56 3x3 0.693 -> 0.630 ms, 240x28x28 5x5 0.510 -> 0.431, 120x28x28
# 5x5 0.254 -> 0.212, 96x56x56 7x7 1.275 -> 0.971; a first, noisier run 2-9%; one row a tile: no gain)
WIDE_ROWS = 4 if host_has("avx512f") else 2
# At stride 1 with AVX-512, kernels 5 or more wide take tiles of four rows that load each input vector once
# for every output row it serves (_reused: ~0.9 loads a multiply-add against _wide's 1.1; the tap loop is
# load-bound). One core, Zen 5, bench/kernel_paths.py --only REUSE, _wide -> _reused: 240 x 28 x 28 5x5
# 0.154 -> 0.140 ms, 120 x 28 x 28 5x5 0.078 -> 0.069, 96 x 56 x 56 7x7 0.375 -> 0.283; 3x3 lost (144 x 56 x
# 56 0.179 -> 0.197, 136 x 28 x 28 0.050 -> 0.057). Its 8 accumulators and 2 loaded vectors would spill
# AVX2's 16 registers (two each).
REUSE = host_has("avx512f")
# Whole blocks of 16 channels on the lanes with AVX-512 (conv_depthwise_blocked), the rest as rows. Against
# the rows (one core, Zen 5, bench/kernel_paths.py --only BLOCKED): 240 x 28 x 28 5x5 0.128 -> 0.089 ms,
# 672 x 14 x 14 5x5 0.148 -> 0.080, 144 x 56 x 56 3x3 0.162 -> 0.130, 96 x 56 x 56 7x7 0.261 -> 0.186, 1152 x 7 x 7
# 5x5 0.105 -> 0.066 and 768 x 7 x 7 7x7 0.140 -> 0.063 (flat planes there), 544 x 7 x 7 3x3 0.022 -> 0.020;
# stride 2: 272 x 14 x 14 3x3 0.039 -> 0.014, 112 x 56 x 56 0.077 -> 0.058. A tile loading each position once
# for every output it serves (12 loads for 40 FMAs at 5x5, not 9 for 8) ran 1.9x slower: its position-by-tap
# branches stayed in the loop.
BLOCKED = host_has("avx512f")
# _flat on "same" stride-1 planes at most half a vector wide. Against the row tiles (one core, Zen 5,
# bench/kernel_paths.py --only FLAT): 7 x 7 planes 3x3 0.42x the time, 5x5 0.68x, 7x7 0.86x; wider it
# loses (14 x 14 3x3 1.19x, 5x5 1.62x; 28 x 28 1.22x, 1.83x): a tap there is a load, a mask load and a
# select per vector, and the row tiles' rows fill most of theirs
FLAT = True


@njit(nogil=True, cache=True)
def flat_plane(H, W, OH, OW, sh, sw, lanes):
    """Whether depthwise runs the planes as flat runs (_flat, when FLAT); conv._plan sizes the workspace for
    both forms then."""
    return sh == 1 and sw == 1 and OH == H and OW == W and H > 1 and 2 * W <= lanes


def flat_workspace(H, W, KW) -> int:
    """_flat's workspace elements: a mask of H*W + 4 vectors per kernel column."""
    return KW * (H * W + 64)


@njit(nogil=True, cache=True)
def depthwise(x, w, b, z, y, ws, taps, q0, q1, G, Mg, H, W, OH, OW, KH, KW, sh, sw, ph, pw, tile,
              has_b, has_z, act, p0, p1):
    """y = act(depthwise(x, w) + b + z) for pairs (image, group) [q0, q1): each input channel and its Mg
    output channels. taps: KH*KW int64 scratch; ws: this block's workspace (conv._plan's DEPTHWISE size)."""
    KT, A, B, S = KH * KW, min(sh, KH), min(sw, KW), OH * OW
    if BLOCKED and blocked_fits(sh, sw, Mg, KW, vlanes(y)):  # whole blocks of 16 channels; the rest below
        qe = q0 + (q1 - q0) // CB * CB
        if qe > q0:
            depthwise_blocked(x, w, b, z, y, ws, q0, qe, G, H, W, OH, OW, KH, KW, sh, ph, pw, has_b, has_z, act,
                              p0, p1)
        q0 = qe
    if FLAT and flat_plane(H, W, OH, OW, sh, sw, vlanes(y)):
        _flat(x, w, b, z, y, ws, q0, q1, G, Mg, H, W, KH, KW, ph, pw, has_b, has_z, act, p0, p1)
        return
    fused = in_registers(act, has_z)
    Wq, tail = OW + (KW - 1) // sw, (KW - 1) // sw
    cs = _channel_stride(tile + (KH - 1) // sh, Wq)
    for kh in range(KH):  # where tap (kh, kw) of output row 0, column 0 reads in the phases
        for kw in range(KW):
            taps[kh * KW + kw] = ((kh % sh) * B + kw % sw) * cs + (kh // sh) * Wq + kw // sw
    # stride 1, KW 3, 5 or 7, planes wider than a vector, whole tiles of four rows: straight from x (_direct)
    direct = DIRECT and sh == 1 and sw == 1 and (KW == 3 or KW == 5 or KW == 7) and OW > vlanes(y)
    unit = KH if REUSE and sh == 1 and sw == 1 and KW >= 5 else 0  # _dw_rows' tiles by _reused (stride 1)
    for q in range(q0, q1):
        g = q % G
        xo, yo = q * H * W, q * Mg * S
        for oh0 in range(0, OH, tile):
            rows = min(tile, OH - oh0)
            whole = direct and rows % 4 == 0
            if whole:
                pass
            elif sh == 1 and sw == 1:
                _pad_rows(x, xo, ws, H, W, ph, pw, oh0, rows + KH - 1, Wq)
            else:
                _pad_copy(x, xo, ws, 0.0, 1, H, W, ph, pw, sh, sw, A, B, oh0, rows + (KH - 1) // sh, Wq, cs, tail)
            for m in range(Mg):
                o = yo + m * S + oh0 * OW
                # rows of one or two vectors are stored in order: a row's last vector may run on, whole,
                # into the plane's later rows (simd.vstore_until); wider ones store each row's columns in pieces
                wend = yo + (m + 1) * S if OW <= 2 * vlanes(y) else 0
                bias = b[g * Mg + m] if has_b else 0.0
                if whole:
                    _direct(x, xo, H, W, ph, pw, oh0, KH, KW, w, (g * Mg + m) * KT, y, o, OW, rows, wend,
                            bias if fused else 0.0, act if fused else NONE, p0, p1)
                elif fused:
                    _dw_rows(ws, Wq, taps, w, (g * Mg + m) * KT, y, o, OW, rows, wend, bias, act, p0, p1, unit)
                else:
                    _dw_rows(ws, Wq, taps, w, (g * Mg + m) * KT, y, o, OW, rows, wend, 0.0, NONE, 0.0, 0.0, unit)
                if not fused:
                    epilogue(y, o, rows * OW, 1.0, bias, z, o, 1.0, has_z, act, p0, p1)


@njit(nogil=True, cache=True)
def _flat(x, w, b, z, y, ws, q0, q1, G, Mg, H, W, KH, KW, ph, pw, has_b, has_z, act, p0, p1):
    """depthwise on stride-1 planes that keep their size, at most half a vector wide: each plane one flat
    run of H*W, four whole vectors at a time (a 7 x 7 plane is 4 vectors, not 7 rows of 7 of 16 lanes), no
    padded copy. Tap (kh, kw) of flat position f reads x at f + (kh - ph)*W + kw - pw: a
    row outside the plane is outside the run (a masked load: 0); a column outside its row lands in the next
    or previous row and is zeroed by that kernel column's mask (made here in ws: 1 where the column is
    inside). The taps in (kh, kw) order from zero, a zero for every pad: _dw_rows' sums, the same bits."""
    S, L = H * W, vlanes(y)
    n = S + 4 * L
    for kw in range(KW):  # the column masks, and zeros for the last tile's lanes past the plane
        for r in range(H):
            for c in range(W):
                ws[kw * n + r * W + c] = 1.0 if 0 <= c + kw - pw < W else 0.0
        for f in range(S, n):
            ws[kw * n + f] = 0.0
    fused = in_registers(act, has_z)
    zero = vzero(y)
    c0, c1, lo, hi = vfinish_consts(y, act, p0, p1)
    end = q1 * Mg * S
    for q in range(q0, q1):
        g, xo = q % G, q * S
        for m in range(Mg):
            wo, yo = (g * Mg + m) * KH * KW, (q * Mg + m) * S
            bias = b[g * Mg + m] if has_b else 0.0
            bv = vsplat(y, bias if fused else 0.0)
            for f in range(0, S, 4 * L):  # four FMA chains (a tile past the plane's end is masked)
                a0, a1, a2, a3 = zero, zero, zero, zero
                for kh in range(KH):
                    for kw in range(KW):
                        wv, s, mo = vbcast(w, wo + kh * KW + kw), f + (kh - ph) * W + kw - pw, kw * n + f
                        a0 = vfma(wv, _flat_tap(x, xo, s, S, kw != pw, ws, mo, zero), a0)
                        a1 = vfma(wv, _flat_tap(x, xo, s + L, S, kw != pw, ws, mo + L, zero), a1)
                        a2 = vfma(wv, _flat_tap(x, xo, s + 2 * L, S, kw != pw, ws, mo + 2 * L, zero), a2)
                        a3 = vfma(wv, _flat_tap(x, xo, s + 3 * L, S, kw != pw, ws, mo + 3 * L, zero), a3)
                _flat_store(y, yo + f, S - f, end, fused, a0, bv, act, c0, c1, lo, hi)
                _flat_store(y, yo + f + L, S - f - L, end, fused, a1, bv, act, c0, c1, lo, hi)
                _flat_store(y, yo + f + 2 * L, S - f - 2 * L, end, fused, a2, bv, act, c0, c1, lo, hi)
                _flat_store(y, yo + f + 3 * L, S - f - 3 * L, end, fused, a3, bv, act, c0, c1, lo, hi)
            if not fused:
                epilogue(y, yo, S, 1.0, bias, z, yo, 1.0, has_z, act, p0, p1)


@njit(nogil=True, cache=True, inline="always")
def _flat_tap(x, xo, s, S, masked, ws, mo, zero):
    """The plane's flat positions s .. s+L (0 outside the plane), zeroed where ws[mo:] is 0 when masked."""
    v = vload_span(x, xo, s, S, 0.0)
    return vpick(vload(ws, mo), v, zero) if masked else v


@njit(nogil=True, cache=True, inline="always")
def _flat_store(y, i, left, end, fused, v, bv, act, c0, c1, lo, hi):
    if left > 0:
        vstore_until(y, i, vfinish(v, bv, act, c0, c1, lo, hi) if fused else v, min(vlanes(y), left), end)


@njit(nogil=True, cache=True, inline="always")
def _pad_rows(x, xo, p, H, W, ph, pw, i0, R, Wq):
    """Stride 1's padded rows (what _pad_copy writes for one phase): p[i*Wq + j] = input row i0 + i - ph,
    column j - pw, 0 outside, i < R; then zeros for two vectors past them (the last rows' tap loads read
    there). Whole vectors, the padding in their masked-off lanes: no fill pass, no scalar row ends, which
    took a quarter of EfficientNet's 5x5 depthwise on 240 x 28 x 28 (0.06 of 0.24 ms). A row's last vector
    runs past it; the next row, or the zeros after the last, overwrite that."""
    L, zero = vlanes(p), vzero(p)
    for i in range(R):
        ih, d = i0 + i - ph, i * Wq
        if ih < 0 or ih >= H:
            for j in range(0, Wq, L):
                vstore(p, d + j, zero)
            continue
        s = xo + ih * W - pw
        for j in range(0, Wq, L):
            lo, hi = max(0, pw - j), min(L, pw + W - j)
            if lo == 0 and hi == L:  # inside the row: a plain load (masked ones measured 7% slower on 112 wide)
                vstore(p, d + j, vload(x, s + j))
            else:
                vstore(p, d + j, vload_in(x, s + j, lo, max(lo, hi), 0.0))
    vstore(p, R * Wq, zero)
    vstore(p, R * Wq + L, zero)


@njit(nogil=True, cache=True, inline="always")
def _wide(p, Wq, taps, w, wo, y, yo, OW, r, R, yend, bv, act, c0, c1, lo, hi):
    """Rows r .. r+R of a plane wider than a vector (R = 4, 2 or 1, a constant: 8, 4 or 2 FMA chains), two
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
            if R > 2:
                a2 = vfma(wv, vload(p, s + 2 * Wq), a2)
                b2 = vfma(wv, vload(p, s + 2 * Wq + L), b2)
                a3 = vfma(wv, vload(p, s + 3 * Wq), a3)
                b3 = vfma(wv, vload(p, s + 3 * Wq + L), b3)
        if R > 2:
            _store4(y, yr, OW, j, yend, bv, act, c0, c1, lo, hi, a0, a1, a2, a3, b0, b1, b2, b3)
            continue
        n0, n1 = min(L, OW - j), max(0, min(L, OW - j - L))
        vstore_until(y, yr + j, vfinish(a0, bv, act, c0, c1, lo, hi), n0, yend)
        vstore_until(y, yr + j + L, vfinish(b0, bv, act, c0, c1, lo, hi), n1, yend)
        if R > 1:
            vstore_until(y, yr + OW + j, vfinish(a1, bv, act, c0, c1, lo, hi), n0, yend)
            vstore_until(y, yr + OW + j + L, vfinish(b1, bv, act, c0, c1, lo, hi), n1, yend)


@njit(nogil=True, cache=True, inline="always")
def _reused(p, Wq, KH, KW, w, wo, y, yo, OW, r, yend, bv, act, c0, c1, lo, hi):
    """_wide's four rows at stride 1, each input vector loaded once for the output rows it serves: input
    row i of the tile at column kw feeds output row i - kh with weight (kh, kw). An accumulator still takes
    its taps in (kh, kw) order (i ascending, then kw): _wide's bits."""
    L = vlanes(y)
    yr = yo + r * OW
    for j in range(0, OW, 2 * L):
        a0, a1, a2, a3 = vzero(y), vzero(y), vzero(y), vzero(y)
        b0, b1, b2, b3 = vzero(y), vzero(y), vzero(y), vzero(y)
        for i in range(4 + KH - 1):
            o = (r + i) * Wq + j
            for kw in range(KW):
                d0, d1 = vload(p, o + kw), vload(p, o + kw + L)
                if i < KH:
                    wv = vbcast(w, wo + i * KW + kw)
                    a0, b0 = vfma(wv, d0, a0), vfma(wv, d1, b0)
                if 1 <= i < KH + 1:
                    wv = vbcast(w, wo + (i - 1) * KW + kw)
                    a1, b1 = vfma(wv, d0, a1), vfma(wv, d1, b1)
                if 2 <= i < KH + 2:
                    wv = vbcast(w, wo + (i - 2) * KW + kw)
                    a2, b2 = vfma(wv, d0, a2), vfma(wv, d1, b2)
                if 3 <= i:
                    wv = vbcast(w, wo + (i - 3) * KW + kw)
                    a3, b3 = vfma(wv, d0, a3), vfma(wv, d1, b3)
        _store4(y, yr, OW, j, yend, bv, act, c0, c1, lo, hi, a0, a1, a2, a3, b0, b1, b2, b3)


@njit(nogil=True, cache=True, inline="always")
def _store4(y, yr, OW, j, yend, bv, act, c0, c1, lo, hi, a0, a1, a2, a3, b0, b1, b2, b3):
    """Four rows x two vectors of accumulators from column j on: bias and activation, then stored."""
    L = vlanes(y)
    n0, n1 = min(L, OW - j), max(0, min(L, OW - j - L))
    vstore_until(y, yr + j, vfinish(a0, bv, act, c0, c1, lo, hi), n0, yend)
    vstore_until(y, yr + j + L, vfinish(b0, bv, act, c0, c1, lo, hi), n1, yend)
    vstore_until(y, yr + OW + j, vfinish(a1, bv, act, c0, c1, lo, hi), n0, yend)
    vstore_until(y, yr + OW + j + L, vfinish(b1, bv, act, c0, c1, lo, hi), n1, yend)
    vstore_until(y, yr + 2 * OW + j, vfinish(a2, bv, act, c0, c1, lo, hi), n0, yend)
    vstore_until(y, yr + 2 * OW + j + L, vfinish(b2, bv, act, c0, c1, lo, hi), n1, yend)
    vstore_until(y, yr + 3 * OW + j, vfinish(a3, bv, act, c0, c1, lo, hi), n0, yend)
    vstore_until(y, yr + 3 * OW + j + L, vfinish(b3, bv, act, c0, c1, lo, hi), n1, yend)


@njit(nogil=True, cache=True, inline="always")
def _row_taps(a0, a1, KW, w, k, x0, x1, x2, x3, x4, x5, x6, u0, u1, u2, u3, u4, u5, u6):
    """a0 (a1) += the KW taps of one kernel row (weights w[k:k+KW]), in kw order, over columns x0.. (u0..)
    moved on by kw."""
    a0, a1 = _tap(a0, a1, vbcast(w, k), x0, u0)
    a0, a1 = _tap(a0, a1, vbcast(w, k + 1), x1, u1)
    a0, a1 = _tap(a0, a1, vbcast(w, k + 2), x2, u2)
    if KW >= 5:
        a0, a1 = _tap(a0, a1, vbcast(w, k + 3), x3, u3)
        a0, a1 = _tap(a0, a1, vbcast(w, k + 4), x4, u4)
    if KW == 7:
        a0, a1 = _tap(a0, a1, vbcast(w, k + 5), x5, u5)
        a0, a1 = _tap(a0, a1, vbcast(w, k + 6), x6, u6)
    return a0, a1


@njit(nogil=True, cache=True, inline="always")
def _tap(a0, a1, wv, x, u):
    return vfma(wv, x, a0), vfma(wv, u, a1)


@by_type
@njit(nogil=True, cache=True)
def _direct(x, xo, H, W, ph, pw, i0, KH, KW, w, wo, y, yo, OW, rows, yend, bias, act, p0, p1):
    """_dw_rows at stride 1 with KW 3, 5 or 7 on planes wider than a vector, rows a multiple of 4, straight
    from x (no padded copy): four output rows x two vectors at a time; each input row's columns are loaded
    once for them (three vectors, masked where they leave the image, zeros for rows outside it) and moved
    on by kw in registers (vnext1..4: valignd), then serve the output rows below it with kernel row kh =
    its row - theirs. _wide reloads every tap's columns from the padded copy, unaligned (one load a
    multiply-add, most across two cache lines). The sums run in the same order (kh, then kw, from zero,
    the padding's zeros included), so the bits are _dw_rows'."""
    L = vlanes(y)
    bv = vsplat(y, bias)
    c0, c1, lo, hi = vfinish_consts(y, act, p0, p1)
    for r in range(0, rows, 4):
        yr = yo + r * OW
        for j in range(0, OW, 2 * L):
            a0, a1, a2, a3 = vzero(y), vzero(y), vzero(y), vzero(y)
            b0, b1, b2, b3 = vzero(y), vzero(y), vzero(y), vzero(y)
            n1 = max(0, min(L, OW - j - L))
            parts = 3 if j + 2 * L < OW or n1 + KW - 1 > L else 2  # the second vector's windows end in a third
            for i in range(4 + KH - 1):  # the input rows of output rows r .. r+3
                ih = i0 + r + i - ph
                v0, v1, v2 = vzero(y), vzero(y), vzero(y)
                if 0 <= ih < H:
                    for k in range(parts):
                        c = j - pw + k * L
                        if 0 <= c and c + L <= W:
                            v = vload(x, xo + ih * W + c)
                        else:
                            v = vload_in(x, xo + ih * W + c, max(0, -c), max(0, min(L, W - c)), 0.0)
                        if k == 0:
                            v0 = v
                        elif k == 1:
                            v1 = v
                        else:
                            v2 = v
                x1, x2, u1, u2 = vnext1(v0, v1), vnext2(v0, v1), vnext1(v1, v2), vnext2(v1, v2)
                x3, x4, x5, x6, u3, u4, u5, u6 = x2, x2, x2, x2, u2, u2, u2, u2
                if KW >= 5:
                    x3, x4, u3, u4 = vnext3(v0, v1), vnext4(v0, v1), vnext3(v1, v2), vnext4(v1, v2)
                if KW == 7:
                    x5, x6, u5, u6 = vnext5(v0, v1), vnext6(v0, v1), vnext5(v1, v2), vnext6(v1, v2)
                if i < KH:  # output row r, kernel row i
                    a0, b0 = _row_taps(a0, b0, KW, w, wo + i * KW,
                                       v0, x1, x2, x3, x4, x5, x6, v1, u1, u2, u3, u4, u5, u6)
                if 1 <= i < KH + 1:
                    a1, b1 = _row_taps(a1, b1, KW, w, wo + (i - 1) * KW,
                                       v0, x1, x2, x3, x4, x5, x6, v1, u1, u2, u3, u4, u5, u6)
                if 2 <= i < KH + 2:
                    a2, b2 = _row_taps(a2, b2, KW, w, wo + (i - 2) * KW,
                                       v0, x1, x2, x3, x4, x5, x6, v1, u1, u2, u3, u4, u5, u6)
                if 3 <= i:
                    a3, b3 = _row_taps(a3, b3, KW, w, wo + (i - 3) * KW,
                                       v0, x1, x2, x3, x4, x5, x6, v1, u1, u2, u3, u4, u5, u6)
            _store4(y, yr, OW, j, yend, bv, act, c0, c1, lo, hi, a0, a1, a2, a3, b0, b1, b2, b3)


@njit(nogil=True, cache=True, inline="always")
def _narrow(p, Wq, taps, w, wo, y, yo, OW, r, R, yend, bv, act, c0, c1, lo, hi):
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
    vstore_until(y, yr, vfinish(a0, bv, act, c0, c1, lo, hi), OW, yend)
    if R > 1:
        vstore_until(y, yr + OW, vfinish(a1, bv, act, c0, c1, lo, hi), OW, yend)
    if R > 2:
        vstore_until(y, yr + 2 * OW, vfinish(a2, bv, act, c0, c1, lo, hi), OW, yend)
        vstore_until(y, yr + 3 * OW, vfinish(a3, bv, act, c0, c1, lo, hi), OW, yend)
    if R > 4:
        vstore_until(y, yr + 4 * OW, vfinish(a4, bv, act, c0, c1, lo, hi), OW, yend)
        vstore_until(y, yr + 5 * OW, vfinish(a5, bv, act, c0, c1, lo, hi), OW, yend)
        vstore_until(y, yr + 6 * OW, vfinish(a6, bv, act, c0, c1, lo, hi), OW, yend)
        vstore_until(y, yr + 7 * OW, vfinish(a7, bv, act, c0, c1, lo, hi), OW, yend)


@by_type
@njit(nogil=True, cache=True)
def _dw_rows(p, Wq, taps, w, wo, y, yo, OW, rows, yend, bias, act, p0, p1, unit):
    """y[yo + r*OW + j] = act(sum over taps t of w[wo+t] * p[r*Wq + taps[t] + j] + bias), r < rows, j < OW,
    act one of IN_REGISTERS (NONE otherwise). Eight FMA chains at a time: four rows x two vectors (WIDE_ROWS;
    two rows, four chains, without AVX-512), or
    eight rows x one vector on planes a vector wide; narrow planes' leftover rows in tiles of 4 and 2 (a single
    row's one or two chains wait on the FMA latency: 672 x 14 x 14 5x5 left 6 of 14 rows to them; 0.257 ->
    0.205 ms, one core). A row's last loads may run up to two vectors past it (into the workspace's slack: read, never
    stored)."""
    L = vlanes(y)
    bv = vsplat(y, bias)
    c0, c1, lo, hi = vfinish_consts(y, act, p0, p1)
    r = 0
    if OW > L:
        while unit and r + 4 <= rows:
            _reused(p, Wq, unit, taps.size // unit, w, wo, y, yo, OW, r, yend, bv, act, c0, c1, lo, hi)
            r += 4
        while r + WIDE_ROWS <= rows:
            _wide(p, Wq, taps, w, wo, y, yo, OW, r, WIDE_ROWS, yend, bv, act, c0, c1, lo, hi)
            r += WIDE_ROWS
        while r < rows:  # planes this wide rarely leave rows (28, 56, 112 are multiples of 4): one variant less
            _wide(p, Wq, taps, w, wo, y, yo, OW, r, 1, yend, bv, act, c0, c1, lo, hi)  # to compile (~7 s per dtype)
            r += 1
    else:
        while r + 8 <= rows:
            _narrow(p, Wq, taps, w, wo, y, yo, OW, r, 8, yend, bv, act, c0, c1, lo, hi)
            r += 8
        if r + 4 <= rows:
            _narrow(p, Wq, taps, w, wo, y, yo, OW, r, 4, yend, bv, act, c0, c1, lo, hi)
            r += 4
        if r + 2 <= rows:
            _narrow(p, Wq, taps, w, wo, y, yo, OW, r, 2, yend, bv, act, c0, c1, lo, hi)
            r += 2
        if r < rows:
            _narrow(p, Wq, taps, w, wo, y, yo, OW, r, 1, yend, bv, act, c0, c1, lo, hi)
