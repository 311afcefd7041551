"""MaxPool and AveragePool (2-D, undilated) on 16-bit feature maps: float16 / bfloat16 bits in and out,
each input row converted to float32 once per window row that reads it, taps reduced in float32 and the
result rounded once (the float32 pools between Casts round the same sums: bits equal for MaxPool,
AveragePool within one rounding of its scale). Beside pool.py's float32 kernels, not instead of them.

Per output row: the row of results starts at the identity (-inf or 0) in a float32 scratch row; each
window row inside the image is converted into a padded float32 row (identity at the pads and past a
ceil_mode window's end) and every kw tap is one strided run over it; averages divide by pool.py's
separable count (count_include_pad, ceil_mode overhang). Blocks split the N*C*OH output rows, each with
its own two scratch rows a cache line apart (blocks.per_block).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .blocks import per_block, tiled, blocks, own
from .half import BF16, F16, narrow_run, widen_run
from .registry import KernelContext, Launch
from .tiling import block_range

MAXP, AVG = 0, 2  # pool.py's mode numbers
_NS_TAP = 0.5  # ns per output and tap, one thread (the strided runs do not vectorize well)


@njit(nogil=True, cache=True)
def pool16(x, y, ws, kind, mode, g, block_idx, block_dim):
    """y (NC, OH, OW) = the pool of x (NC, IH, IW), 16-bit bits of `kind`; g: NC IH IW OH OW KH KW SH SW
    PH PW CLH CHH CLW CHW (the counted window ends of averages)."""
    NC, IH, IW, OH, OW, KH, KW, SH, SW, PH, PW = g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10]
    CLH, CHH, CLW, CHW = g[11], g[12], g[13], g[14]
    Lp = max(PW + IW, (OW - 1) * SW + KW)
    sc = own(ws, Lp + OW, block_idx, block_dim)
    row, acc = sc[:Lp], sc[Lp:Lp + OW]
    ident = np.float32(-np.inf) if mode == MAXP else np.float32(0.0)
    rcw = np.empty(OW, np.float32)
    for ow in range(OW):
        n = 0
        for kw in range(KW):
            if CLW <= ow * SW + kw - PW < CHW:
                n += 1
        rcw[ow] = 1.0 / max(n, 1)
    row[:] = ident
    r0, r1 = block_range(NC * OH, 1, block_idx, block_dim)
    for r in range(r0, r1):
        nc, oh = r // OH, r % OH
        acc[:] = ident
        cnt = 0
        for kh in range(KH):
            ih = oh * SH + kh - PH
            if CLH <= ih < CHH:
                cnt += 1
            if ih < 0 or ih >= IH:
                continue
            xb = np.uint64((nc * IH + ih) * IW)
            widen_run(x, xb, row, PW, IW, kind)
            for kw in range(KW):
                if mode == MAXP:
                    for ow in range(np.uint64(OW)):
                        acc[ow] = max(acc[ow], row[ow * np.uint64(SW) + np.uint64(kw)])
                else:
                    for ow in range(np.uint64(OW)):
                        acc[ow] += row[ow * np.uint64(SW) + np.uint64(kw)]
        yb = np.uint64(r * OW)
        if mode == AVG:
            rdh = np.float32(1.0 / max(cnt, 1))
            for ow in range(np.uint64(OW)):
                acc[ow] = acc[ow] * (rdh * rcw[ow])
        narrow_run(acc, 0, y, yb, OW, kind)


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
    g = np.array([x.shape[0] * x.shape[1], *sp, *out, *k, *s, *pb, lo[0], hi[0], lo[1], hi[1]], np.int64)
    nb = blocks(ctx, int(g[0] * out[0]), out[1] * k[0] * k[1] * _NS_TAP)
    lp = max(pb[1] + sp[1], (out[1] - 1) * s[1] + k[1])
    kind = F16 if x.dtype == np.float16 else BF16
    return tiled(pool16, (kind, mode, g), nb, (per_block(lp + out[1], np.float32, nb),))
