"""Vector ops on 16-bit feature maps (float16 / bfloat16 bits in and out), for the Casts drop_half_casts
removes: Relu, inference BatchNormalization and LRN, each computing in float32 exactly as its float32
kernel (elementwise.py, norm.py) does and rounding once, so the bits equal the float32 op's between Casts.
Relu needs no arithmetic at all: a negative number's bits become +0 (a NaN keeps its bits).
Blocks split flat rows of G elements (Relu), or the (N*C, HW) planes as flat rows (blocks.row_range).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .blocks import G, blocks, own, per_block, row_range, tiled
from .half import BF16, F16, _as_f32, _bf16_bits, _f16_to_f32, _f32_to_f16, narrow_run, widen_run
from .registry import KernelContext, Launch
from .tiling import block_range

_NS = 0.3  # ns per element, one thread: these are memory bound


@njit(nogil=True, cache=True)
def relu16(x, y, kind, block_idx, block_dim):
    """y = max(x, 0) on 16-bit float bits: negatives (not NaNs) to +0."""
    inf = np.uint16(0x7C00) if kind == F16 else np.uint16(0x7F80)
    lo, hi = block_range(y.size, G, block_idx, block_dim)
    for i in range(lo, hi):
        b = x[i]
        y[i] = np.uint16(0) if b >= np.uint16(0x8000) and (b & np.uint16(0x7FFF)) <= inf else b


@njit(nogil=True, cache=True)
def batch_norm16(x, scale, bias, mean, var, y, kind, N, C, HW, eps, block_idx, block_dim):
    """norm.batch_norm (inference) on 16-bit x and y: y = x * a + c per channel, a and c float32."""
    ab = np.empty(2, np.float32)
    lo, hi = row_range(N * C * HW, HW, G, block_idx, block_dim)
    for p in range(lo // max(HW, 1), (hi + HW - 1) // max(HW, 1)):
        c = p % C
        j0, j1 = max(lo - p * HW, 0), min(hi - p * HW, HW)
        a = scale[c] / np.sqrt(var[c] + eps)
        ab[0], ab[1] = a, bias[c] - mean[c] * a
        a1, c1 = ab[0], ab[1]
        b = np.uint64(p * HW + j0)
        if kind == F16:  # a loop per kind, so each vectorizes
            for j in range(np.uint64(j1 - j0)):
                y[b + j] = _f32_to_f16(_f16_to_f32(x[b + j]) * a1 + c1)
        else:
            for j in range(np.uint64(j1 - j0)):
                y[b + j] = _bf16_bits(_as_f32(np.uint32(x[b + j]) << np.uint32(16)) * a1 + c1)


@njit(nogil=True, cache=True)
def lrn16(x, y, sq, kind, N, C, HW, size, alpha, beta, bias, block_idx, block_dim):
    """norm.lrn on 16-bit x and y (sq: 2*HW float32 per block, the sums and a plane's row as float32)."""
    before = (size - 1) // 2
    after = size - 1 - before
    k = alpha / size
    s2 = own(sq, 2 * HW, block_idx, block_dim)
    s, v = s2[:HW], s2[HW:]
    lo, hi = row_range(N * C * HW, HW, G, block_idx, block_dim)
    for p in range(lo // max(HW, 1), (hi + HW - 1) // max(HW, 1)):
        n, c = p // C, p % C
        u0, u1 = np.uint64(max(lo - p * HW, 0)), np.uint64(min(hi - p * HW, HW))
        for j in range(u0, u1):
            s[j] = 0
        for cc in range(max(0, c - before), min(C, c + after + 1)):
            widen_run(x, (n * C + cc) * HW + u0, v, u0, u1 - u0, kind)
            for j in range(u0, u1):
                s[j] += v[j] * v[j]
        widen_run(x, p * HW + u0, v, u0, u1 - u0, kind)
        if beta == 0.75:
            for j in range(u0, u1):
                t = bias + k * s[j]
                r = np.sqrt(t)
                v[j] = v[j] / (r * np.sqrt(r))
        else:
            for j in range(u0, u1):
                v[j] = v[j] / (bias + k * s[j]) ** beta
        narrow_run(v, u0, y, p * HW + u0, u1 - u0, kind)


def _kind(ctx: KernelContext) -> int:
    return F16 if ctx.inputs[0].dtype == np.float16 else BF16


def relu_launch(ctx: KernelContext) -> Launch:
    return tiled(relu16, (_kind(ctx),), blocks(ctx, ctx.inputs[0].size, _NS))


def batch_norm_launch(ctx: KernelContext, N: int, C: int, HW: int, eps: float) -> Launch:
    if any(ctx.inputs[i].dtype != np.float32 for i in range(1, 5)):
        raise ctx.error(f"a {ctx.inputs[0].dtype} input takes float32 scale, bias, mean and var here")
    return tiled(batch_norm16, (_kind(ctx), N, C, HW, eps), blocks(ctx, N * C * HW, _NS))


def lrn_launch(ctx: KernelContext, args: tuple, nb: int) -> Launch:
    """norm's LRN launch arguments (N, C, HW, size, alpha, beta, bias) and block count."""
    return tiled(lrn16, (_kind(ctx), *args), nb, (per_block(2 * args[2], np.float32, nb),))
