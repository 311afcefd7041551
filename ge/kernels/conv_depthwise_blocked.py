"""DEPTHWISE on blocks of 16 channels (BLOCKED): the 16 planes transposed row by row into positions x
channels, so that a tap is one vector multiply-add for 16 outputs with every lane used, then transposed back.

conv_depthwise's rows put a plane's columns across the lanes: a 28-wide row fills 28 of 32 lanes, each
tile pays for a padded copy and a row's two stores, and stride 2 splits rows into phases. Here (float32 with
AVX-512, strides 1 or 2, one output channel per input channel, kernels 3, 5 or 7 wide), per block of 16
channels and output row:
1. the padded input rows it reads sit in a ring of KH rows, each row transposed in once (vtrans16: 16
   channels' 16 columns -> 16 positions' 16 channels; zeros in the pads);
2. tiles of 8 output positions: per tap in (kh, kw) order, the tap's weight vector (the 16 channels'
   weights, transposed once per block) times the 8 input positions it reads (stride apart), one FMA
   chain an output from zero: the rows' sums;
3. the row's positions finished (bias, a vector of 16, and an in-register activation) as they are
   transposed back and stored per channel; other activations and a residual go through the same epilogue
   pass per plane.
Only the tiles are compiled per kernel width and stride (constants in them); the ring, the finish and the
transposes once: conv's cold compile +2.7 s (five copies of it all: +17 s).
The same FMA chains with the same zeros for the pads, so the bits are conv_depthwise's rows'.
"""
from __future__ import annotations

from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from .epilogue import NONE, epilogue, in_registers, vfinish, vfinish_consts
from .simd import Vec, vfma, vload, vload_n, vstore, vstore_until, vzero

CB = 16  # channels a block: float32 lanes
TILE = 8  # output positions a register tile


@njit(nogil=True, cache=True)
def blocked_fits(sh, sw, Mg, KW, lanes):
    """Whether depthwise's whole blocks of 16 channels can run here (conv_depthwise.BLOCKED: whether they do)."""
    return lanes == CB and Mg == 1 and sh == sw and (sh == 1 and KW in (3, 5, 7) or sh == 2 and KW in (3, 5))


@njit(nogil=True, cache=True)
def _ring_width(W, OW, KW, pw, st):
    """Positions a ring row holds: the padded row, whole transposed chunks of 16 and the last tile's reach."""
    return max(st * (-(-OW // TILE) * TILE - 1) + KW, pw + -(-W // CB) * CB)


def blocked_workspace(W, OW, KH, KW, pw, st) -> int:
    """Workspace elements: transposed weights and biases, the ring of KH rows, an output row."""
    return CB * (KH * KW + 1 + KH * int(_ring_width(W, OW, KW, pw, st)) + -(-OW // CB) * CB)


@intrinsic
def vtrans16(typingctx, r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13, r14, r15):
    """16 vectors of 16 lanes (rows r, lanes m) -> their transpose: out[m] lane r = rows[r] lane m. Four
    stages of 2-input shuffles, stage s swapping bit s of the vector index with bit s of the lane index."""
    rows = (r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13, r14, r15)
    if not (len(rows) == 16 and isinstance(rows[0], Vec) and rows[0].lanes == 16 and all(r == rows[0] for r in rows)):
        raise TypeError(f"vtrans16: expected 16 equal 16-lane Vec types, got {rows}")
    out = types.UniTuple(rows[0], 16)

    def codegen(context, builder, sig, args):
        vec, n = list(args), 16
        mask_t = ir.VectorType(ir.IntType(32), n)
        for s in range(4):
            b, new = 1 << s, list(vec)
            mi = [lane if not lane & b else n + lane - b for lane in range(n)]
            mj = [lane + b if not lane & b else n + lane for lane in range(n)]
            for i in (v for v in range(n) if not v & b):
                j = i | b
                new[i] = builder.shuffle_vector(vec[i], vec[j], ir.Constant(mask_t, mi))
                new[j] = builder.shuffle_vector(vec[i], vec[j], ir.Constant(mask_t, mj))
            vec = new
        return context.make_tuple(builder, out, vec)
    return out(*rows), codegen


@njit(nogil=True, cache=True)
def depthwise_blocked(x, w, b, z, y, ws, q0, q1, G, H, W, OH, OW, KH, KW, st, ph, pw, has_b, has_z, act, p0, p1):
    """y = act(depthwise(x, w) + b + z) for channels [q0, q1), q1 - q0 a multiple of 16 (blocked_fits)."""
    KT, Wr = KH * KW, _ring_width(W, OW, KW, pw, st)
    wo, ro = 0, CB * (KT + 1)           # transposed weights (and the bias vector after them), the ring
    oo = ro + CB * KH * Wr              # the output row, positions x channels
    fused = in_registers(act, has_z)
    ract = act if fused else NONE       # the activation the rows finish with (the others: the epilogue)
    c0, c1, lo, hi = vfinish_consts(y, act, p0, p1)
    zero = vzero(y)
    S = OH * OW
    for qb in range(q0, q1, CB):
        for k in range(CB):  # weights and biases, channel k in lane k
            g = (qb + k) % G
            for t in range(KT):
                ws[wo + t * CB + k] = w[g * KT + t]
            ws[wo + KT * CB + k] = b[g] if has_b and fused else 0.0
        bv = vload(ws, wo + KT * CB)
        r = 0  # the next padded input row to transpose in
        for oh in range(OH):
            while r < st * oh + KH:
                _ring_row(x, ws, ro, Wr, qb, H, W, r % KH, r - ph, pw, zero)
                r += 1
            # the tiles, one copy per kernel width and stride (constants there: with the stride a variable
            # they ran 1.5-2.6x slower, 96 x 56 x 56 7x7 0.18 -> 0.47 ms; with the width, 3x3 and 7x7 up to 1.2x)
            if st == 1:
                if KW == 3:
                    _tiles(ws, ro, Wr, oo, wo, OW, KH, 3, 1, oh, zero)
                elif KW == 5:
                    _tiles(ws, ro, Wr, oo, wo, OW, KH, 5, 1, oh, zero)
                else:
                    _tiles(ws, ro, Wr, oo, wo, OW, KH, 7, 1, oh, zero)
            elif KW == 3:
                _tiles(ws, ro, Wr, oo, wo, OW, KH, 3, 2, oh, zero)
            else:
                _tiles(ws, ro, Wr, oo, wo, OW, KH, 5, 2, oh, zero)
            for j in range(0, OW, CB):  # the row finished and back to its 16 planes
                o = oo + j * CB
                t = vtrans16(_fin(ws, o, bv, ract, c0, c1, lo, hi), _fin(ws, o + CB, bv, ract, c0, c1, lo, hi),
                             _fin(ws, o + 2 * CB, bv, ract, c0, c1, lo, hi),
                             _fin(ws, o + 3 * CB, bv, ract, c0, c1, lo, hi),
                             _fin(ws, o + 4 * CB, bv, ract, c0, c1, lo, hi),
                             _fin(ws, o + 5 * CB, bv, ract, c0, c1, lo, hi),
                             _fin(ws, o + 6 * CB, bv, ract, c0, c1, lo, hi),
                             _fin(ws, o + 7 * CB, bv, ract, c0, c1, lo, hi),
                             _fin(ws, o + 8 * CB, bv, ract, c0, c1, lo, hi),
                             _fin(ws, o + 9 * CB, bv, ract, c0, c1, lo, hi),
                             _fin(ws, o + 10 * CB, bv, ract, c0, c1, lo, hi),
                             _fin(ws, o + 11 * CB, bv, ract, c0, c1, lo, hi),
                             _fin(ws, o + 12 * CB, bv, ract, c0, c1, lo, hi),
                             _fin(ws, o + 13 * CB, bv, ract, c0, c1, lo, hi),
                             _fin(ws, o + 14 * CB, bv, ract, c0, c1, lo, hi),
                             _fin(ws, o + 15 * CB, bv, ract, c0, c1, lo, hi))
                n, yo = min(CB, OW - j), qb * S + oh * OW + j
                for k in range(CB):
                    vstore_until(y, yo + k * S, t[k], n, (qb + k + 1) * S)
        if not fused:
            for k in range(CB):
                g, yo = (qb + k) % G, (qb + k) * S
                epilogue(y, yo, S, 1.0, b[g] if has_b else 0.0, z, yo, 1.0, has_z, act, p0, p1)


@njit(nogil=True, cache=True, inline="always")
def _fin(ws, o, bv, act, c0, c1, lo, hi):
    return vfinish(vload(ws, o), bv, act, c0, c1, lo, hi)


@njit(nogil=True, cache=True, inline="always")
def _tiles(ws, ro, Wr, oo, wo, OW, KH, KW, st, oh, zero):
    """Output row oh's sums in tiles of 8 positions, into the output row at oo (positions x channels)."""
    for j in range(0, OW, TILE):
        a0, a1, a2, a3, a4, a5, a6, a7 = zero, zero, zero, zero, zero, zero, zero, zero
        for kh in range(KH):
            p = ro + (((st * oh + kh) % KH) * Wr + st * j) * CB
            a0, a1, a2, a3, a4, a5, a6, a7 = _row_taps(ws, p, wo + kh * KW * CB, KW, st,
                                                       a0, a1, a2, a3, a4, a5, a6, a7)
        o = oo + j * CB
        vstore(ws, o, a0)
        vstore(ws, o + CB, a1)
        vstore(ws, o + 2 * CB, a2)
        vstore(ws, o + 3 * CB, a3)
        vstore(ws, o + 4 * CB, a4)
        vstore(ws, o + 5 * CB, a5)
        vstore(ws, o + 6 * CB, a6)
        vstore(ws, o + 7 * CB, a7)


@njit(nogil=True, cache=True, inline="always")
def _row_taps(ws, p, wk, KW, st, a0, a1, a2, a3, a4, a5, a6, a7):
    """One kernel row's taps on a tile of 8 outputs from ring position p, in kw order: weight kw on the
    positions kw + st*i."""
    for kw in range(KW):
        wv, q = vload(ws, wk + kw * CB), p + kw * CB
        d = st * CB
        a0 = vfma(wv, vload(ws, q), a0)
        a1 = vfma(wv, vload(ws, q + d), a1)
        a2 = vfma(wv, vload(ws, q + 2 * d), a2)
        a3 = vfma(wv, vload(ws, q + 3 * d), a3)
        a4 = vfma(wv, vload(ws, q + 4 * d), a4)
        a5 = vfma(wv, vload(ws, q + 5 * d), a5)
        a6 = vfma(wv, vload(ws, q + 6 * d), a6)
        a7 = vfma(wv, vload(ws, q + 7 * d), a7)
    return a0, a1, a2, a3, a4, a5, a6, a7


@njit(nogil=True, cache=True, inline="always")
def _ring_row(x, ws, ro, Wr, qb, H, W, slot, ih, pw, zero):
    """Input row ih of channels qb .. qb+15 into ring slot `slot`, positions x channels, zero-padded: pw
    zeros, the row, zeros to the ring's width (a row outside the image: all zeros)."""
    base = ro + slot * Wr * CB
    if ih < 0 or ih >= H:
        for i in range(Wr):
            vstore(ws, base + i * CB, zero)
        return
    for i in range(pw):
        vstore(ws, base + i * CB, zero)
    for i in range(pw + -(-W // CB) * CB, Wr):
        vstore(ws, base + i * CB, zero)
    S, xo = H * W, qb * H * W + ih * W
    for c in range(0, W, CB):
        n = min(CB, W - c)
        t = vtrans16(vload_n(x, xo + c, n), vload_n(x, xo + S + c, n), vload_n(x, xo + 2 * S + c, n),
                     vload_n(x, xo + 3 * S + c, n), vload_n(x, xo + 4 * S + c, n), vload_n(x, xo + 5 * S + c, n),
                     vload_n(x, xo + 6 * S + c, n), vload_n(x, xo + 7 * S + c, n), vload_n(x, xo + 8 * S + c, n),
                     vload_n(x, xo + 9 * S + c, n), vload_n(x, xo + 10 * S + c, n),
                     vload_n(x, xo + 11 * S + c, n), vload_n(x, xo + 12 * S + c, n),
                     vload_n(x, xo + 13 * S + c, n), vload_n(x, xo + 14 * S + c, n),
                     vload_n(x, xo + 15 * S + c, n))
        d = base + (pw + c) * CB
        for i in range(CB):
            vstore(ws, d + i * CB, t[i])
