"""ge::ScaledConv: a conv whose input channels are scaled first, y = conv(x * s) (fold_channel_scale's op).

    ScaledConv(x, W, B, Z, s) = FusedConv(x * s, W, B, Z)    s: one factor per input channel, [1, C, 1, 1]

Squeeze-excitation ends in Mul(map, gate) feeding a 1x1 conv (EfficientNet's MBConv, MobileNetV3's bneck):
scaling the map is a full pass over it (read and write C x H x W) while the same scale applied to the conv's
weight columns, w[m, c, k] * s[c], costs M x C x k multiplies per run (MBConv's project conv: 9600 against
188160 elements of the map, read and written). Each block scales its own copy of the weights into its slice
of the workspace (a few KiB: no block waits for another), then runs conv.py's lowered kernel with them.
Measured (AVX2, one core, 2026-12-06): the MBConv project conv with its Mul, hot in cache, 0.387 -> 0.359 ms
(bench of the two kernels alternating); whole blocks within noise (MBConv 2.22 -> 2.23 ms, MobileNetV3 1.101
-> 1.100, medians of 60): there the Mul's output was in L2 for the conv, and h is now read from L2 instead.
Limits: float32, the modes `lowered` runs (POINTWISE, SHIFTED, IM2COL): fold_channel_scale leaves packed and
depthwise convs alone. Invariant: every block scales the same weights the same way and conv's tiling never
splits K, so the bits do not depend on block_dim; against Mul-then-Conv they differ by rounding
((w*s)*x instead of w*(s*x)).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .conv import _infer_conv, _prepare_conv, lowered
from . import conv_geom as cg
from .registry import KernelContext, Launch, TensorSpec, register

SCALE = 4   # the input holding s


def _weights_per_block(n: int) -> int:
    return -(-n // 16) * 16   # whole 64-byte lines: blocks' copies never share one


@njit(nogil=True, cache=True)
def scaled_conv(x, w, b, z, s, y, ws, geom, mode, has_b, has_z, act, p0, p1, tile, split, lw, block_idx, block_dim):
    """conv.lowered on w[m, c, taps] * s[input channel of c]; ws: block_dim weight copies, then conv's
    workspace. Block block_idx's share of y."""
    C, M, G = geom[cg.C], geom[cg.M], geom[cg.GROUP]
    KT = geom[cg.KD] * geom[cg.KH] * geom[cg.KW]
    Cg, Mg, n = C // G, M // G, w.size
    per = (n + 15) // 16 * 16
    sw = ws[block_idx * per:block_idx * per + n]
    for m in range(M):
        c0 = (m // Mg) * Cg   # the first input channel of m's group
        for c in range(Cg):
            f, o = s[c0 + c], (m * Cg + c) * KT
            for t in range(KT):
                sw[o + t] = w[o + t] * f
    lowered(x, sw, b, z, y, ws[block_dim * per:], geom, mode, has_b, has_z, act, p0, p1, tile, split, lw,
            block_idx, block_dim)


def _infer(ctx: KernelContext) -> list[TensorSpec]:
    spec = _infer_conv(ctx)
    s, c = ctx.inputs[SCALE] if ctx.has(SCALE) else None, ctx.inputs[0].shape[1]
    if s is None or s.dtype != np.float32 or ctx.inputs[0].dtype != np.float32:
        raise ctx.error("ScaledConv needs float32 x and W and its scale s (input 4)")
    if int(np.prod(s.shape)) != c or any(d != 1 for i, d in enumerate(s.shape) if len(s.shape) - i != 3):
        raise ctx.error(f"scale of shape {list(s.shape)}: expected one factor per input channel, [1, {c}, 1, 1]")
    return spec


@register("ScaledConv", domain="ge", infer=_infer)
def _prepare(ctx: KernelContext) -> Launch:
    if ctx.attr("weight_shape") is not None:
        raise ctx.error("ScaledConv reads unpacked weights (no weight_shape)")
    inner = _prepare_conv(ctx)
    if inner.fn is not lowered:   # PACKED, DEPTHWISE and float64's direct are kernels of their own
        raise ctx.error("ScaledConv runs the lowered conv modes only (not depthwise)")
    bd, per = inner.block_dim, _weights_per_block(int(np.prod(ctx.inputs[1].shape)))
    conv_ws = int(inner.workspaces[0].shape[0])
    return Launch(scaled_conv, inner.args, (TensorSpec((bd * per + conv_ws,), np.float32),),
                  tuple(inner.inputs) + (SCALE,), tiled=True, block_dim=bd)
