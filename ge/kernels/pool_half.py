"""MaxPool and AveragePool (2-D, undilated) on 16-bit feature maps: float16 / bfloat16 bits in and out,
each input row converted to float32 once per window row that reads it, taps reduced in float32 and the
result rounded once (the float32 pools between Casts round the same sums: bits equal for MaxPool,
AveragePool within one rounding of its scale). Beside pool.py's float32 kernels, not instead of them.

Per output row, separable like pool_plane.py (and in its order, so averages sum as the float32 path does):
  Step 1: each window row inside the image is converted and folded, in kh order, into column results
          (from the identity: -inf or 0) kept split into the stride phases (padded column P at (P % SW,
          P // SW): pool.py's walker layout; the pads and a ceil_mode window's overhang keep the identity).
  Step 2: the kw taps over the column results, in kw order from the identity: each tap is one contiguous
          run, three fused a pass; averages divide by pool.py's separable count (count_include_pad,
          ceil_mode overhang). The loops sit in the kernel's body: a call taking arrays counts references.
A window covering the whole image (ResNet's last AveragePool) is a reduction: PLANES planes converted at a
time, then reduce.fold, the loop the float32 path's reduction runs, so the sums agree in order too.
Blocks split the N*C*OH output rows (the planes, for a whole-image window), each with its own scratch a
cache line apart (blocks.per_block).
Measured (one core, bfloat16, ResNet-50's pools, the old and new kernels alternating in one process; the
float32 kernels in brackets): MaxPool 3x3/2 pad 1 on 64 x 112 x 112 0.62 -> 0.32 ms (0.14: every tap was a
strided run over the converted row, 3 passes per window row); AveragePool 7x7 on 2048 x 7 x 7 0.33 ->
0.019 ms (0.02: a window walk of 7-wide rows, a fold call a plane allocated 90 ns).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .blocks import per_block, tiled, blocks, own
from .half import BF16, F16, _as_f32, _f16_to_f32, narrow_run
from .reduce import MAX as R_MAX
from .reduce import SUM as R_SUM
from .reduce import fold
from .registry import KernelContext, Launch
from .tiling import block_range

MAXP, AVG = 0, 2  # pool.py's mode numbers
_NS_TAP = 0.1  # ns per output and tap, one thread
PLANES = 64  # a whole-image window's planes a fold call (it allocates: 90 ns a call), at most ...
SCRATCH = 1 << 12  # ... floats of planes and results (16 KB: 64 planes of 7 x 7, 24 of 13 x 13)
U = np.uint64


@njit(nogil=True, cache=True, inline="always")
def _widen(u, kind):
    return _f16_to_f32(u) if kind == F16 else _as_f32(np.uint32(u) << np.uint32(16))


@njit(nogil=True, cache=True)
def _whole(x, y, sc, kind, mode, NC, HW, block_idx, block_dim):
    """A window over the whole image: planes widened P at a time and folded as reduce.py folds them (its
    loop, so its order); sc holds P planes and their P results."""
    P = sc.size // (HW + 1)
    p0, p1 = block_range(NC, 1, block_idx, block_dim)
    so = np.array([1, 0], np.int64)
    for c0 in range(p0, p1, P):
        n = min(P, p1 - c0)
        for i in range(U(n * HW)):
            sc[i] = _widen(x[U(c0 * HW) + i], kind)
        res = sc[P * HW:P * HW + n]
        res[:] = np.float32(-np.inf) if mode == MAXP else np.float32(0.0)
        fold(sc, res, res, R_MAX if mode == MAXP else R_SUM, np.array([n, HW], np.int64), so, 0, 0, n)
        if mode == AVG:
            for i in range(n):
                res[i] = res[i] * (1.0 / HW)
        narrow_run(res, 0, y, c0, n, kind)


@njit(nogil=True, cache=True)
def pool16(x, y, ws, kind, mode, g, block_idx, block_dim):
    """y (NC, OH, OW) = the pool of x (NC, IH, IW), 16-bit bits of `kind`; g: NC IH IW OH OW KH KW SH SW
    PH PW CLH CHH CLW CHW (the counted window ends of averages) P (a whole-image window's planes a pass)."""
    NC, IH, IW, OH, OW, KH, KW, SH, SW, PH, PW = g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10]
    CLH, CHH, CLW, CHW = g[11], g[12], g[13], g[14]
    if OH == 1 and OW == 1 and KH == IH and KW == IW and PH == 0 and PW == 0 and CHH == IH and CHW == IW:
        _whole(x, y, own(ws, g[15] * (IH * IW + 1), block_idx, block_dim), kind, mode, NC, IH * IW, block_idx,
               block_dim)
        return
    Lq = max(OW + (KW - 1) // SW, (PW + IW - 1) // SW + 1)  # columns a phase
    sc = own(ws, SW * Lq + OW, block_idx, block_dim)
    ph, acc = sc[:SW * Lq], sc[SW * Lq:SW * Lq + OW]
    ident = np.float32(-np.inf) if mode == MAXP else np.float32(0.0)
    rcw = np.empty(OW, np.float32)
    for ow in range(OW):
        n = 0
        for kw in range(KW):
            if CLW <= ow * SW + kw - PW < CHW:
                n += 1
        rcw[ow] = 1.0 / max(n, 1)
    ph[:] = ident  # the padding columns keep it; the image columns restart from it every output row
    r0, r1 = block_range(NC * OH, 1, block_idx, block_dim)
    for r in range(r0, r1):
        nc, oh = r // OH, r % OH
        for p in range(SW):
            m0, m1 = max(0, -(-(PW - p) // SW)), (IW - 1 + PW - p) // SW + 1  # phase p's image columns
            for m in range(U(p * Lq + m0), U(p * Lq + max(m0, m1))):
                ph[m] = ident
        cnt = 0
        for kh in range(KH):  # Step 1: the window rows into the column results, in kh order
            ih = oh * SH + kh - PH
            if CLH <= ih < CHH:
                cnt += 1
            if ih < 0 or ih >= IH:
                continue
            xb = (nc * IH + ih) * IW
            if SW == 2 and kind == BF16:  # both phases in one loop: an interleave group vectorizes
                m0, m1 = (PW + 1) // 2, (IW + PW) // 2  # m with columns 2m - PW and 2m + 1 - PW inside
                i, L = U(xb - PW), U(Lq)
                for m in range(U(m0), U(max(m0, m1))):
                    e = _as_f32(np.uint32(x[i + U(2) * m]) << np.uint32(16))
                    o = _as_f32(np.uint32(x[i + U(2) * m + U(1)]) << np.uint32(16))
                    if mode == MAXP:
                        ph[m], ph[L + m] = max(ph[m], e), max(ph[L + m], o)
                    else:
                        ph[m], ph[L + m] = ph[m] + e, ph[L + m] + o
                for e in range(2 if IW > 1 else 1):  # the one column at each end the pair loop can miss
                    c = e * (IW - 1)
                    if (c + PW) // 2 < m0 or (c + PW) // 2 >= max(m0, m1):
                        j = (c + PW) % 2 * Lq + (c + PW) // 2
                        v = _as_f32(np.uint32(x[xb + c]) << np.uint32(16))
                        ph[j] = max(ph[j], v) if mode == MAXP else ph[j] + v
            else:
                for p in range(SW):
                    m0, m1 = max(0, -(-(PW - p) // SW)), (IW - 1 + PW - p) // SW + 1
                    o, i = U(p * Lq + m0), U(xb + m0 * SW + p - PW)
                    for m in range(U(max(m1 - m0, 0))):
                        v = _widen(x[i + m * U(SW)], kind)
                        ph[o + m] = max(ph[o + m], v) if mode == MAXP else ph[o + m] + v
        # Step 2: the kw taps over the column results, in kw order, three a pass
        acc[:] = ident
        kw, n = 0, U(OW)
        while kw < KW:
            b0 = U((kw % SW) * Lq + kw // SW)
            if kw + 3 <= KW:
                b1, b2 = U(((kw + 1) % SW) * Lq + (kw + 1) // SW), U(((kw + 2) % SW) * Lq + (kw + 2) // SW)
                if mode == MAXP:
                    for t in range(n):
                        acc[t] = max(max(max(acc[t], ph[b0 + t]), ph[b1 + t]), ph[b2 + t])
                else:
                    for t in range(n):
                        acc[t] = ((acc[t] + ph[b0 + t]) + ph[b1 + t]) + ph[b2 + t]
                kw += 3
            elif mode == MAXP:
                for t in range(n):
                    acc[t] = max(acc[t], ph[b0 + t])
                kw += 1
            else:
                for t in range(n):
                    acc[t] += ph[b0 + t]
                kw += 1
        if mode == AVG:
            rdh = np.float32(1.0 / max(cnt, 1))
            for ow in range(U(OW)):
                acc[ow] = acc[ow] * (rdh * rcw[ow])
        narrow_run(acc, 0, y, r * OW, OW, kind)


def fits16(attrs) -> bool:
    """pool16 runs it: a 2-D window, undilated (its rank is the kernel_shape's)."""
    return len(attrs.get("kernel_shape", ())) == 2 and all(int(d) == 1 for d in attrs.get("dilations", [1, 1]))


def launch16(ctx: KernelContext, mode: int, window) -> Launch:
    """pool.py's MaxPool / AveragePool on a 16-bit input; window: pool._window's result."""
    x = ctx.inputs[0]
    out, k, s, d, pb, pe = window
    if len(out) != 2 or set(d) != {1} or mode not in (MAXP, AVG):
        raise ctx.error(f"{x.dtype} pools are 2-D, undilated and without Indices here (kernel {k}, dilations {d}); others "
                        "compute between Casts (compute_in_float32)")
    sp = x.shape[2:]
    include = mode == AVG and ctx.attr("count_include_pad", 0)
    lo = [-b for b in pb] if include else [0, 0]
    hi = [i + e for i, e in zip(sp, pe)] if include else list(sp)
    planes = max(1, min(PLANES, SCRATCH // (sp[0] * sp[1] + 1)))
    g = np.array([x.shape[0] * x.shape[1], *sp, *out, *k, *s, *pb, lo[0], hi[0], lo[1], hi[1], planes], np.int64)
    kind = F16 if x.dtype == np.float16 else BF16
    if list(out) == [1, 1] and list(k) == list(sp) and not any(pb + pe):  # one window: per plane
        nb = blocks(ctx, int(g[0]), sp[0] * sp[1] * _NS_TAP)
        return tiled(pool16, (kind, mode, g), nb, (per_block(planes * (sp[0] * sp[1] + 1), np.float32, nb),))
    nb = blocks(ctx, int(g[0] * out[0]), out[1] * k[0] * k[1] * _NS_TAP)
    lq = max(out[1] + (k[1] - 1) // s[1], (pb[1] + sp[1] - 1) // s[1] + 1)
    return tiled(pool16, (kind, mode, g), nb, (per_block(s[1] * lq + out[1], np.float32, nb),))
