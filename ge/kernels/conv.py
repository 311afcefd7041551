"""Conv, ConvTranspose and the fused "ge" FusedConv: convolution lowered to GEMM, batch loop outside.

Every conv is seen as 3-D (1-D and 2-D get leading spatial dims of 1), so one compiled kernel per dtype
serves all ranks. Per image and group, `prepare` picks one of four ways:
  POINTWISE  1x1, stride 1, no pad: the input already is the GEMM operand, y[Mg,S] = W[Mg,Cg] @ x[Cg,S].
  SHIFTED    2-D (or 1-D), undilated ("implicit im2col"): copy the input
             rows a tile of output rows reads, zero-padded and split into its stride phases, to a workspace
             (rows Wq = OW + (KW-1)//sw wide); then one GEMM grid[Mg, rows*Wq] = W[Mg, Cg*KT] @ B whose row
             (c, kh, kw) is channel c of phase (kh%sh, kw%sw) shifted by (kh//sh, kw//sw): B is that copy
             read through a table of row offsets (gemm_nn_rows), nothing is unfolded. The grid has the
             padded width: the extra columns of each row are garbage, dropped when its valid columns are
             copied to y.
  IM2COL     otherwise (dilated, 3-D): unfold the input into col[Cg*kD*kH*kW, rows*OW] for
             a tile of output rows at a time (a few MiB at most), then one GEMM W[Mg, Cg*k] @ col into
             those rows of y. Each col row is filled as runs of output rows: the valid middle of a run is a
             straight (or strided) copy, the padded ends are zeroed, so no per-element bounds test.
  DIRECT     one input channel per group (depthwise): a GEMM with K = kH*kW is all overhead, so each
             output plane accumulates w[k] * shifted input plane, tap by tap, in vectorizable row loops.
Every output element of a conv is one FMA chain (gemm.py) over k = (channel, tap) in the same order,
whatever its channel or position (tiles change nothing), so channels with equal weights stay bitwise
equal; SHIFTED and IM2COL even give the same bits. Workspaces: SHIFTED needs the padded rows
and the grid tile, about (Cg + Mg) * rows * Wq elements (VGG-19's largest: 110 MiB of im2col -> 3.4 MiB).
GEMMs are gemm.py's (no BLAS: see gemm.py for why). Bias, FusedConv's residual Z and its activation are one
epilogue pass per output row (see epilogue.py).

ConvTranspose is the adjoint: col[Mg*k, S_in] = W_g^T @ x_g (W_g read transposed through strides), then
col2im scatters and adds col into the output, zeroed beforehand by the runtime (an atomic output, as
GE's scatter-add kernels: `Launch.atomic`), and the bias epilogue runs.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .epilogue import activation_args, epilogue
from .gemm import gemm_nn, gemm_nn_ld, gemm_nn_rows
from .registry import KernelContext, Launch, TensorSpec, register

POINTWISE, IM2COL, DIRECT, SHIFTED, DEPTHWISE = range(5)
_FLOATS = (np.float32, np.float64)
USE_SHIFTED = True  # False: IM2COL wherever SHIFTED would run (the same bits, more memory: for bisecting)
USE_DEPTHWISE = True  # False: DIRECT wherever DEPTHWISE would run (for bisecting)
DEPTHWISE_GRID = 2048  # DEPTHWISE: output rows per tile so that the grid stays in L1
GEMM_MIN_COLUMNS = 1024  # SHIFTED: a tile of output rows is at least this many grid columns wide ...
GRID_ELEMS = 1 << 18      # ... and more while padded input + grid stay under this many elements
COL_ELEMS = 1 << 19       # IM2COL: output rows per tile so that col stays under this (at least one row)


# -- kernels ----------------------------------------------------------------------------------------

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

@njit(nogil=True, cache=True)
def _zero(dst, o, n):
    uo = np.uint64(o)
    for j in range(np.uint64(n)):
        dst[uo + j] = 0


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


@njit(nogil=True, cache=True)
def _pad_copy(x, xo, p, C, H, W, ph, pw, sh, sw, A, B, i0, R, Wq, cs, tail):
    """The stride phases of the zero-padded input, R phase rows from row i0 on: phase (a, b) < (A, B) of
    channel c at p[((a*B + b)*C + c)*cs:], its row i, column j = padded input (i0 + i)*sh + a, j*sw + b
    (input row - ph, column - pw; zero outside), and `tail` zeros past the end. Stride 1: one phase."""
    _zero(p, 0, A * B * C * cs + tail)
    for a in range(A):
        for b in range(B):
            lo, hi = _valid(b - pw, sw, W, Wq)  # the phase columns inside the input
            for c in range(C):
                o = ((a * B + b) * C + c) * cs
                for i in range(R):
                    ih = (i0 + i) * sh + a - ph
                    if 0 <= ih < H:
                        _gather(p, o + i * Wq + lo, x, xo + (c * H + ih) * W + lo * sw + b - pw, hi - lo, sw)


@njit(nogil=True, cache=True)
def _from_grid(y, yo, q, qo, rows, OW, Wp):
    """y[yo + r*OW + ow] = q[qo + r*Wp + ow]: the valid columns of one channel's padded-width grid."""
    for r in range(rows):
        _gather(y, yo + r * OW, q, qo + r * Wp, OW, 1)


@njit(nogil=True, cache=True)
def _direct(x, xo, w, wo, y, yo, lohi, D, H, W, OD, OH, OW, KD, KH, KW, sd, sh, sw, pd, ph, pw, dd, dh, dw):
    """One output plane y[yo:] from one input plane x[xo:], row by row: each output row (in L1) gets
    the sum over taps of w[tap] * a shifted input row. lohi[kw], lohi[KW+kw]: the valid ow range."""
    for od in range(OD):
        for oh in range(OH):
            yr = yo + (od * OH + oh) * OW
            _zero(y, yr, OW)
            for kd in range(KD):
                i_d = od * sd - pd + kd * dd
                for kh in range(KH):
                    ih = oh * sh - ph + kh * dh
                    if i_d < 0 or i_d >= D or ih < 0 or ih >= H:
                        continue
                    xr = xo + (i_d * H + ih) * W - pw
                    wr = wo + (kd * KH + kh) * KW
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
def _depthwise(x, xo, w, wo, y, yo, ws, Mg, H, W, OH, OW, KH, KW, sh, sw, ph, pw, tile):
    """DEPTHWISE for one input channel and its Mg output channels: SHIFTED's layout with one channel and
    axpys for the GEMM. Per tile of output rows: the padded input rows in their stride phases (_pad_copy),
    then per output channel a grid of rows*Wq (padded width) accumulating w[tap] * the shifted phase, each
    tap ONE contiguous axpy over the whole tile (three at once for a stride-1 row of taps), then the valid
    columns to y. Small planes cost a few long loops instead of several short ones per output row."""
    KT, A, B = KH * KW, min(sh, KH), min(sw, KW)
    Wq, tail = OW + (KW - 1) // sw, (KW - 1) // sw
    cs = _channel_stride(tile + (KH - 1) // sh, Wq)
    P = (A * B * cs + tail + 15) // 16 * 16  # where the grid starts
    for oh0 in range(0, OH, tile):
        rows = min(tile, OH - oh0)
        _pad_copy(x, xo, ws, 1, H, W, ph, pw, sh, sw, A, B, oh0, rows + (KH - 1) // sh, Wq, cs, tail)
        nq = rows * Wq
        for m in range(Mg):
            wm = wo + m * KT
            _zero(ws, P, nq)
            for kh in range(KH):
                row = ((kh % sh) * B) * cs + (kh // sh) * Wq
                if sw == 1 and KW == 3:
                    _axpy3(ws, P, w[wm + kh * 3], w[wm + kh * 3 + 1], w[wm + kh * 3 + 2], ws, row, nq, 1)
                    continue
                for kw in range(KW):
                    src = row + (kw % sw) * cs + kw // sw
                    _axpy(ws, P, w[wm + kh * KW + kw], ws, src, nq, 1)
            _from_grid(y, yo + m * OH * OW + oh0 * OW, ws, P, rows, OW, Wq)


@njit(nogil=True, cache=True)
def _shifted(x, xo, wg, y, yo, ws, Cg, H, W, Mg, OH, OW, KH, KW, sh, sw, ph, pw, tile):
    """SHIFTED for one image and group: per tile of output rows, copy the input rows it reads, zero-padded
    and split into stride phases, to ws; then one GEMM grid[Mg, rows*Wq] = W[Mg, Cg*KT] @ B where B's row
    (c, kh, kw) is channel c of phase (kh % sh, kw % sw) shifted by (kh // sh, kw // sw) (a table of row
    offsets: no im2col); then copy the grid's valid columns (ow < OW) into y."""
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
    for oh0 in range(0, OH, tile):
        rows = min(tile, OH - oh0)
        _pad_copy(x, xo, ws, Cg, H, W, ph, pw, sh, sw, A, B, oh0, R, Wq, cs, tail)
        nq = rows * Wq
        lq = (nq + 15) // 16 * 16  # grid rows start 64-byte aligned
        gemm_nn_rows(wg, ws, brow, ws[P:], Mg, nq, K, K, 1, lq, False)
        for m in range(Mg):
            _from_grid(y, yo + m * OH * OW + oh0 * OW, ws, P + m * lq, rows, OW, Wq)


@njit(nogil=True, cache=True)
def conv(x, w, b, z, y, ws, geom, mode, has_b, has_z, act, p0, p1, tile):
    """y = act(conv(x, w) + b + z). geom: N C D H W, M OD OH OW, KD KH KW, strides, pads, dilations, G.
    tile: output rows per GEMM (IM2COL, SHIFTED)."""
    N, C, D, H, W = geom[0], geom[1], geom[2], geom[3], geom[4]
    M, OD, OH, OW = geom[5], geom[6], geom[7], geom[8]
    KD, KH, KW, sd, sh, sw = geom[9], geom[10], geom[11], geom[12], geom[13], geom[14]
    pd, ph, pw, dd, dh, dw, G = geom[15], geom[16], geom[17], geom[18], geom[19], geom[20], geom[21]
    Cg, Mg = C // G, M // G
    K, S_in, S = Cg * KD * KH * KW, D * H * W, OD * OH * OW
    lohi = np.empty(2 * KW, np.int64)  # valid output columns of each kw tap, for DIRECT
    for kw in range(KW):
        lohi[kw], lohi[KW + kw] = _valid(kw * dw - pw, sw, W, OW)
    phased = mode == IM2COL and sw > 1 and KW > 1
    T = tile * OW  # IM2COL: col columns per tile; the stride phases after col
    for n in range(N):
        for g in range(G):
            xo, yo = (n * C + g * Cg) * S_in, (n * M + g * Mg) * S
            wg = w[g * Mg * K:(g + 1) * Mg * K]
            if mode == POINTWISE:
                gemm_nn(wg, x[xo:xo + Cg * S_in], y[yo:yo + Mg * S], Mg, S, K, K, 1, False)
            elif mode == IM2COL:
                if phased:
                    _split_phases(x, xo, ws[K * T:], Cg * D * H, W, sw)
                for t0 in range(0, OD * OH, tile):
                    t1 = min(t0 + tile, OD * OH)
                    _im2col(x, xo, ws, ws[K * T:], phased, t0, t1, Cg, D, H, W, OD, OH, OW, KD, KH, KW,
                            sd, sh, sw, pd, ph, pw, dd, dh, dw)
                    gemm_nn_ld(wg, ws, y[yo + t0 * OW:], Mg, (t1 - t0) * OW, K, K, 1, (t1 - t0) * OW, S, False)
            elif mode == SHIFTED:
                _shifted(x, xo, wg, y, yo, ws, Cg, H, W, Mg, OH, OW, KH, KW, sh, sw, ph, pw, tile)
            elif mode == DEPTHWISE:
                _depthwise(x, xo, w, g * Mg * K, y, yo, ws, Mg, H, W, OH, OW, KH, KW, sh, sw, ph, pw, tile)
            else:
                for m in range(Mg):
                    _direct(x, xo, w, (g * Mg + m) * K, y, yo + m * S, lohi, D, H, W, OD, OH, OW, KD, KH, KW,
                            sd, sh, sw, pd, ph, pw, dd, dh, dw)
            for m in range(Mg):
                bias = b[g * Mg + m] if has_b else 0.0
                epilogue(y, yo + m * S, S, 1.0, bias, z, yo + m * S, 1.0, has_z, act, p0, p1)


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


@njit(nogil=True, cache=True)
def conv_transpose(x, w, b, y, col, geom, has_b):
    """y += conv_transpose(x, w) + b into a zeroed y (an atomic output: the runtime cleans it, GE's
    AtomicAddrClean); geom as conv's, with D H W the input's and OD OH OW the output's."""
    N, C, D, H, W = geom[0], geom[1], geom[2], geom[3], geom[4]
    M, OD, OH, OW = geom[5], geom[6], geom[7], geom[8]
    KD, KH, KW, sd, sh, sw = geom[9], geom[10], geom[11], geom[12], geom[13], geom[14]
    pd, ph, pw, dd, dh, dw, G = geom[15], geom[16], geom[17], geom[18], geom[19], geom[20], geom[21]
    Cg, Mg = C // G, M // G
    R, S_in, S = Mg * KD * KH * KW, D * H * W, OD * OH * OW
    for n in range(N):
        for g in range(G):
            xo, yo = (n * C + g * Cg) * S_in, (n * M + g * Mg) * S
            # col[R, S_in] = w_g^T @ x_g, w_g[Cg, R] read transposed through its strides
            gemm_nn(w[g * Cg * R:(g + 1) * Cg * R], x[xo:xo + Cg * S_in], col, R, S_in, Cg, 1, R, False)
            _col2im(col, y, yo, Mg, D, H, W, OD, OH, OW, KD, KH, KW, sd, sh, sw, pd, ph, pw, dd, dh, dw)
            if has_b:
                for m in range(Mg):
                    epilogue(y, yo + m * S, S, 1.0, float(b[g * Mg + m]), y, 0, 1.0, 0, 0, 0.0, 0.0)


# -- shapes and attributes --------------------------------------------------------------------------

def _ints(ctx, name, n, default):
    v = ctx.attr(name)
    v = [default] * n if v is None else [int(a) for a in v]
    if len(v) != n:
        raise ctx.error(f"attribute {name}={v} should have {n} values")
    return v


def _common(ctx: KernelContext, kernel_dims):
    """Spatial rank, kernel, strides, dilations, group and the explicit pads (begin, end) of a conv node."""
    x, w = ctx.inputs[0], ctx.inputs[1]
    nd = len(x.shape) - 2
    if not 1 <= nd <= 3 or len(w.shape) != nd + 2:
        raise ctx.error(f"expected 3-D to 5-D input and weight, got {x.shape} and {w.shape}")
    if x.dtype not in _FLOATS or w.dtype != x.dtype:
        raise ctx.error(f"input and weight must both be float32 or float64, got {x.dtype} and {w.dtype}")
    k = _ints(ctx, "kernel_shape", nd, 0) if ctx.attr("kernel_shape") is not None else list(kernel_dims)
    if k != list(kernel_dims):
        raise ctx.error(f"kernel_shape {k} does not match the weight's {list(kernel_dims)}")
    strides, dil = _ints(ctx, "strides", nd, 1), _ints(ctx, "dilations", nd, 1)
    pads = _ints(ctx, "pads", 2 * nd, 0)
    if min(strides) < 1 or min(dil) < 1 or min(pads) < 0:
        raise ctx.error(f"strides {strides} and dilations {dil} must be >= 1 and pads {pads} >= 0")
    return nd, k, strides, dil, pads[:nd], pads[nd:], int(ctx.attr("group", 1))


def _conv_shape(ctx: KernelContext):
    """(geom list, output shape) of a Conv/FusedConv node, resolving auto_pad."""
    x, w = ctx.inputs[0].shape, ctx.inputs[1].shape
    nd, k, s, d, pb, pe, G = _common(ctx, w[2:])
    (N, C), M, sp = x[:2], w[0], list(x[2:])
    if G < 1 or C % G or M % G or w[1] * G != C:
        raise ctx.error(f"input channels {C}, weight {w} and group {G} do not fit")
    auto = ctx.attr("auto_pad", "NOTSET")
    ext = [(k[i] - 1) * d[i] + 1 for i in range(nd)]  # dilated kernel extent
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        out = [-(-sp[i] // s[i]) for i in range(nd)]
        total = [max((out[i] - 1) * s[i] + ext[i] - sp[i], 0) for i in range(nd)]
        pb = [t // 2 if auto == "SAME_UPPER" else t - t // 2 for t in total]
    else:
        if auto == "VALID":
            pb = pe = [0] * nd
        out = [(sp[i] + pb[i] + pe[i] - ext[i]) // s[i] + 1 for i in range(nd)]
    if min(out) < 1:
        raise ctx.error(f"output spatial size {out} is empty (input {x}, kernel {k})")
    return _geom(N, C, sp, M, out, k, s, pb, d, G), (N, M, *out)


def _geom(N, C, sp, M, out, k, s, p, d, G):
    """The int64 geometry array the kernels read: every spatial list padded to 3-D with neutral values."""
    def three(v, fill):
        return [fill] * (3 - len(v)) + list(v)
    return np.array([N, C, *three(sp, 1), M, *three(out, 1), *three(k, 1), *three(s, 1), *three(p, 0),
                     *three(d, 1), G], np.int64)


def _infer_conv(ctx: KernelContext) -> list[TensorSpec]:
    return [TensorSpec(_conv_shape(ctx)[1], ctx.inputs[0].dtype)]


def _round16(n: int) -> int:
    return -(-n // 16) * 16


def _prepare_conv(ctx: KernelContext) -> Launch:
    geom, _ = _conv_shape(ctx)
    C, M, G = int(geom[1]), int(geom[5]), int(geom[21])
    D, H, W, OD, OH, OW = (int(v) for v in geom[[2, 3, 4, 6, 7, 8]])
    KD, KH, KW, sw = (int(v) for v in geom[[9, 10, 11, 14]])
    Cg, Mg, KT = C // G, M // G, KD * KH * KW
    dtype = ctx.inputs[0].dtype
    tile = 1
    if KT == 1 and (geom[12:15] == 1).all() and not geom[15:18].any():  # 1x1, stride 1, no pad
        mode, ws = POINTWISE, 1
    elif Cg == 1 and Mg <= 4 and D == KD == OD == 1 and (geom[18:21] == 1).all() and USE_DEPTHWISE:
        mode, sh = DEPTHWISE, int(geom[13])  # 2-D, undilated: long axpys over a padded plane
        Wq, A, B = OW + (KW - 1) // sw, min(sh, KH), min(sw, KW)
        tile = min(OH, max(1, DEPTHWISE_GRID // Wq))
        ws = _round16(A * B * int(_channel_stride(tile + (KH - 1) // sh, Wq)) + (KW - 1) // sw) + \
            _round16(tile * Wq)
    elif Cg == 1 and Mg <= 4:
        mode, ws = DIRECT, 1
    elif D == KD == OD == 1 and (geom[18:21] == 1).all() and USE_SHIFTED:
        mode, sh = SHIFTED, int(geom[13])  # 2-D (or 1-D), dilation 1: GEMMs on a shifted padded input
        Wq, A, B = OW + (KW - 1) // sw, min(sh, KH), min(sw, KW)
        tile = min(OH, max(-(-GEMM_MIN_COLUMNS // Wq), GRID_ELEMS // ((Mg + A * B * Cg) * Wq)))
        cs = int(_channel_stride(tile + (KH - 1) // sh, Wq))
        ws = _round16(A * B * Cg * cs + (KW - 1) // sw) + Mg * _round16(tile * Wq)
    else:
        mode, tile = IM2COL, min(OD * OH, max(1, COL_ELEMS // (Cg * KT * OW)))
        ws = Cg * KT * tile * OW
        if sw > 1 and KW > 1:  # room for the stride phases of one group's input rows
            ws += Cg * D * H * sw * -(-W // sw)
    has_b, has_z = ctx.has(2), ctx.has(3)
    act, p0, p1 = activation_args(ctx)
    # absent optional inputs are stood in for by W and X (never read), so one specialization serves all
    inputs = (0, 1, 2 if has_b else 1, 3 if has_z else 0)
    if has_z and ctx.inputs[3].shape != ctx.outputs[0].shape:
        raise ctx.error(f"Z has shape {ctx.inputs[3].shape}, expected the output's {ctx.outputs[0].shape}")
    return Launch(conv, (geom, mode, int(has_b), int(has_z), act, p0, p1, tile),
                  (TensorSpec((ws,), dtype),), inputs)


register("Conv", infer=_infer_conv)(_prepare_conv)
register("FusedConv", domain="ge", infer=_infer_conv)(_prepare_conv)


def _conv_transpose_shape(ctx: KernelContext):
    """(geom list, output shape) of a ConvTranspose node: output_shape, output_padding and auto_pad."""
    x, w = ctx.inputs[0].shape, ctx.inputs[1].shape
    nd, k, s, d, pb, pe, G = _common(ctx, w[2:])
    (N, C), M, sp = x[:2], w[1] * G, list(x[2:])
    if G < 1 or C % G or w[0] != C:
        raise ctx.error(f"input channels {C}, weight {w} and group {G} do not fit")
    opad = _ints(ctx, "output_padding", nd, 0)
    auto = ctx.attr("auto_pad", "NOTSET")
    full = [s[i] * (sp[i] - 1) + opad[i] + (k[i] - 1) * d[i] + 1 for i in range(nd)]  # before padding
    out = ctx.attr("output_shape")
    if out is not None:
        out = [int(o) for o in out][-nd:]
    elif auto in ("SAME_UPPER", "SAME_LOWER"):
        out = [sp[i] * s[i] for i in range(nd)]
    if out is not None and (ctx.attr("pads") is None or auto in ("SAME_UPPER", "SAME_LOWER")):
        total = [full[i] - out[i] for i in range(nd)]
        pb = [t // 2 if auto == "SAME_UPPER" else t - t // 2 for t in total]
    elif out is None:
        if auto == "VALID":
            pb = pe = [0] * nd
        out = [full[i] - pb[i] - pe[i] for i in range(nd)]
    if min(out) < 1:
        raise ctx.error(f"output spatial size {out} is empty")
    return _geom(N, C, sp, M, out, k, s, pb, d, G), (N, M, *out)


def _infer_conv_transpose(ctx: KernelContext) -> list[TensorSpec]:
    return [TensorSpec(_conv_transpose_shape(ctx)[1], ctx.inputs[0].dtype)]


@register("ConvTranspose", infer=_infer_conv_transpose)
def _prepare_conv_transpose(ctx: KernelContext) -> Launch:
    geom, _ = _conv_transpose_shape(ctx)
    ws = int(geom[5] // geom[21] * np.prod(geom[9:12]) * np.prod(geom[2:5]))  # Mg*k rows of S_in
    has_b = ctx.has(2)
    return Launch(conv_transpose, (geom, int(has_b)), (TensorSpec((ws,), ctx.inputs[0].dtype),),
                  (0, 1, 2 if has_b else 1), atomic=(0,))
