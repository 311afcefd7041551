"""ge::QGemm: a QDQ model's classifier, DQ(a) -> Gemm(., DQ(w), bias) with a float output, in integers.

    ge::QGemm[weight_shape=[N, K]](aq, a_scale, a_zero_point, wp, w_scale, w_rowsum, [bias])   (fuse_qdq)

aq [M, K] 8-bit, per tensor; the weights int8 [N, K] (Gemm's transB = 1) without zero point, per tensor or
per output, packed once by fuse_qdq into conv_vnni's panels (32 outputs, 4 bytes of K a lane) with their
row sums. y[m, n] = float32(sum_k (aq - a_zero_point) * w) * (a_scale * w_scale[n]) + bias[n], float32:
onnxruntime's QGemm with a float output (its scale-and-bias output stage), the sums exact in int32.
The float form it replaces read the weights dequantized, 4 bytes each: MobileNetV2's 1280 -> 1000
classifier took ~1 ms of a 7.7 ms int8 run (5 MB of weights a run; 1.3 MB here).
Blocks take ranges of 32-output panels (no sum is split: the same bits for any block count).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .blocks import own, per_block, tiled
from .conv_vnni import NR, packed_size
from .registry import KernelContext, Launch, TensorSpec, register
from .simd_int8 import ivbcast4, ivdpbusd, ivload, ivstore, ivzero
from .tiling import block_dim_for, block_range

_Q8 = {np.dtype(np.uint8): 0, np.dtype(np.int8): 128}


@njit(nogil=True, cache=True)
def qgemm(a, as_, azp, wp, ws, wsum, c, y, row, tile, M, N, K, a_off, n_ws, has_c, block_idx, block_dim):
    """Panels [p0, p1) of every row of a; a_off: 128 for int8 a (shifted to uint8, vpdpbusd's operand)."""
    K4 = (K + 3) // 4 * 4
    G4 = K4 // 4
    p0, p1 = block_range((N + NR - 1) // NR, 1, block_idx, block_dim)
    if p0 >= p1:
        return
    pr, pt = own(row, K4 + 64, block_idx, block_dim), own(tile, NR, block_idx, block_dim)
    xz = np.int32(azp[0]) + a_off
    for m in range(M):
        pr[:] = np.uint8(xz)   # K's padding: any byte (its weights are 0)
        for k in range(K):
            pr[k] = np.uint8(np.int32(a[m * K + k]) + a_off)
        for p in range(p0, p1):
            c0 = c1 = ivzero(pr)
            q = p * G4 * NR * 4
            for g in range(G4):
                v = ivbcast4(pr, 4 * g)
                c0, c1 = ivdpbusd(c0, v, ivload(wp, q)), ivdpbusd(c1, v, ivload(wp, q + 64))
                q += NR * 4
            ivstore(pt, 0, c0)
            ivstore(pt, 16, c1)
            for j in range(min(NR, N - p * NR)):
                n = p * NR + j
                v = np.float32(pt[j] - xz * wsum[n]) * np.float32(as_[0] * ws[n if n_ws > 1 else 0])
                y[m * N + n] = v + c[n] if has_c else v


def _infer(ctx: KernelContext) -> list[TensorSpec]:
    a = ctx.inputs[0]
    shape = ctx.attr("weight_shape")
    if a.dtype not in _Q8 or len(a.shape) != 2:
        raise ctx.error(f"A must be 8-bit [M, K], got {a.dtype}{list(a.shape)}")
    if shape is None or len(shape) != 2 or int(shape[1]) != a.shape[1]:
        raise ctx.error(f"weight_shape {shape} must be [N, K] with K = {a.shape[1]}")
    N, K = (int(d) for d in shape)
    if ctx.inputs[3].dtype != np.int8 or tuple(ctx.inputs[3].shape) != (packed_size(N, K, 1, 1),):
        raise ctx.error(f"the packed weights must be int8 [{packed_size(N, K, 1, 1)}], got "
                        f"{ctx.inputs[3].dtype}{list(ctx.inputs[3].shape)}")
    if ctx.inputs[4].dtype != np.float32 or ctx.inputs[4].size not in (1, N):
        raise ctx.error(f"w_scale must be float32 of 1 or {N} values, got "
                        f"{ctx.inputs[4].dtype}{list(ctx.inputs[4].shape)}")
    if ctx.inputs[5].dtype != np.int32 or tuple(ctx.inputs[5].shape) != (N,):
        raise ctx.error(f"the row sums must be int32 [{N}]")
    if ctx.has(6) and (ctx.inputs[6].dtype != np.float32 or ctx.inputs[6].size != N):
        raise ctx.error(f"bias must be float32 of {N} values, got {ctx.inputs[6].dtype}{list(ctx.inputs[6].shape)}")
    return [TensorSpec((a.shape[0], N), np.float32)]


@register("QGemm", domain="ge", infer=_infer)
def _prepare(ctx: KernelContext) -> Launch:
    M, K = ctx.inputs[0].shape
    N = int(ctx.attr("weight_shape")[0])
    panels = -(-N // NR)
    bd = block_dim_for(panels, ctx.cores, max(1, 2 ** 17 // max(1, M * K * NR)))
    ws = (per_block(-(-K // 4) * 4 + 64, np.uint8, bd), per_block(NR, np.int32, bd))
    args = (M, N, K, _Q8[ctx.inputs[0].dtype], int(ctx.inputs[4].size), int(ctx.has(6)))
    return tiled(qgemm, args, bd, ws, inputs=(0, 1, 2, 3, 4, 5, 6 if ctx.has(6) else 0))
