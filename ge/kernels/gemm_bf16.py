"""MatMul / Gemm with constant weights in bfloat16 on AVX512-BF16: bfloat16 rows x bfloat16 weights -> float32
sums with vdpbf16ps (simd_bf16.py), then the float32 path's own epilogue (bias, activation) -> float32
(GE's Cube unit on bfloat16: 16-bit in, float32 accumulate; the Cast after it narrows, as before).

The lowering pack_bf16_matmuls picks the MatMul / FusedMatMul / Gemm nodes that allow_mix_precision_bf16
brackets (A a bfloat16 value widened by a Cast, B a constant whose values are bfloat16): ViT's and BERT's
projections and MLPs, ResNet's classifier.
  Step 1: B [K, N] is packed once (pack_b) in panels of NP = 32 columns: for each K pair (k, k + 1) the 32
          columns' bfloat16 pairs, two zmm loads (columns in the lanes: y's rows are contiguous in N).
  Step 2: a tile of MR = 8 rows x 32 columns is 16 zmm accumulators; each K pair broadcasts 8 pairs of A
          straight from A's bfloat16 rows (K even: a pair is one 32-bit lane), loads the panel's 2 vectors
          and issues 16 vdpbf16ps. Rows past M read row M - 1 and store nothing.
  Step 3: the raw sums are stored (masked past N); after a chunk of rows, epilogue.py's float32 epilogue
          (the float path's, the same bits from the same sums) adds the bias and applies the activation.
Loops: chunks of rows whose A stays in L2 (CHUNK_BYTES) outside, panels, then the chunk's row tiles (_tiles,
a called function: Numba counts the references of the arrays an inlined function takes, conv_bf16.py).
Blocks (AI cores) take ranges of panels; K is never split and every sum runs over K pairs in one order, so
the bits are the same for any block count.
Against the float32 path on the same (bfloat16) operands: the sums run in another order (vdpbf16ps adds a
pair's two products into the lane) and bfloat16 denormal operands read as 0: results agree to float32
rounding of the sums, before the Cast to bfloat16 after the node rounds them.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..ir.dtypes import BFLOAT16
from .epilogue import activation_args, epilogue
from .gemm import MIN_BLOCK_MACS
from .registry import KernelContext, Launch, TensorSpec, register
from .simd_bf16 import bvbcast2, bvdot, bvload2, bvstore2, bvzero
from .tiling import block_dim_for, block_range

MR, NP = 8, 32           # a register tile: rows x columns (2 vectors)
CHUNK_BYTES = 1 << 18    # A's rows a chunk: they stay in L2 while every panel of the block passes


def packed_size(K: int, N: int) -> int:
    """uint16 elements of pack_b's layout."""
    return -(-N // NP) * (-(-K // 2)) * NP * 2


@njit(nogil=True, cache=True)
def pack_b(w, K, N, wp):
    """wp[panel, k // 2, j, k % 2] = w[k, panel * 32 + j] (bfloat16 bits of B [K, N]; 0 past K or N)."""
    K2 = (K + 1) // 2
    wp[:] = 0
    for k in range(K):
        for n in range(N):
            p, j = n // NP, n % NP
            wp[((p * K2 + k // 2) * NP + j) * 2 + k % 2] = w[k * N + n]


@njit(nogil=True, cache=True)
def _tiles(a, wp, y, p, r0, r1, M, N, K):
    """Steps 2 and 3 (the raw sums) for panel p and rows [r0, r1)."""
    K2 = K // 2
    c0 = p * NP
    n = min(NP, N - c0)
    for m0 in range(r0, r1, MR):
        a00 = a01 = a10 = a11 = a20 = a21 = a30 = a31 = bvzero(wp)
        a40 = a41 = a50 = a51 = a60 = a61 = a70 = a71 = bvzero(wp)
        L = M - 1
        o0, o1, o2, o3 = m0 * K, min(m0 + 1, L) * K, min(m0 + 2, L) * K, min(m0 + 3, L) * K
        o4, o5, o6, o7 = min(m0 + 4, L) * K, min(m0 + 5, L) * K, min(m0 + 6, L) * K, min(m0 + 7, L) * K
        q = p * K2 * NP * 2
        for k in range(0, K, 2):
            x0, x1 = bvload2(wp, q), bvload2(wp, q + 32)
            w = bvbcast2(a, o0 + k)
            a00, a01 = bvdot(a00, x0, w), bvdot(a01, x1, w)
            w = bvbcast2(a, o1 + k)
            a10, a11 = bvdot(a10, x0, w), bvdot(a11, x1, w)
            w = bvbcast2(a, o2 + k)
            a20, a21 = bvdot(a20, x0, w), bvdot(a21, x1, w)
            w = bvbcast2(a, o3 + k)
            a30, a31 = bvdot(a30, x0, w), bvdot(a31, x1, w)
            w = bvbcast2(a, o4 + k)
            a40, a41 = bvdot(a40, x0, w), bvdot(a41, x1, w)
            w = bvbcast2(a, o5 + k)
            a50, a51 = bvdot(a50, x0, w), bvdot(a51, x1, w)
            w = bvbcast2(a, o6 + k)
            a60, a61 = bvdot(a60, x0, w), bvdot(a61, x1, w)
            w = bvbcast2(a, o7 + k)
            a70, a71 = bvdot(a70, x0, w), bvdot(a71, x1, w)
            q += NP * 2
        # rows past M store nothing (count 0)
        o = m0 * N + c0
        bvstore2(y, o, a00, a01, n)
        bvstore2(y, o + N, a10, a11, n * (m0 + 1 < M))
        bvstore2(y, o + 2 * N, a20, a21, n * (m0 + 2 < M))
        bvstore2(y, o + 3 * N, a30, a31, n * (m0 + 3 < M))
        bvstore2(y, o + 4 * N, a40, a41, n * (m0 + 4 < M))
        bvstore2(y, o + 5 * N, a50, a51, n * (m0 + 5 < M))
        bvstore2(y, o + 6 * N, a60, a61, n * (m0 + 6 < M))
        bvstore2(y, o + 7 * N, a70, a71, n * (m0 + 7 < M))

@njit(nogil=True, cache=True)
def chunk_rows(K):
    """Rows of A a chunk: a multiple of MR whose bfloat16 rows fit CHUNK_BYTES (at least MR)."""
    return max(MR, CHUNK_BYTES // (K * 2) // MR * MR)


@njit(nogil=True, cache=True)
def matmul_bf16(a, wp, c, y, M, N, K, act, p0, p1, block_idx, block_dim):
    """y[M, N] = act(a[M, K] @ B + c) in float32, a in bfloat16 bits, B pack_b's: block block_idx's panels."""
    q0, q1 = block_range((N + NP - 1) // NP, 1, block_idx, block_dim)
    if q0 >= q1:
        return
    n0, n1 = q0 * NP, min(N, q1 * NP)
    rows = chunk_rows(K)
    for r0 in range(0, M, rows):
        r1 = min(M, r0 + rows)
        for p in range(q0, q1):
            _tiles(a, wp, y, p, r0, r1, M, N, K)
        for m in range(r0, r1):
            epilogue(y, m * N + n0, n1 - n0, 1.0, 0.0, c, n0, 1.0, True, act, p0, p1)


# -- the op ---------------------------------------------------------------------------------------------

def _dims(ctx: KernelContext) -> tuple[int, int, int]:
    """(M, K, N): A's rows (its leading dims folded), B's weight_shape."""
    shape = tuple(int(d) for d in ctx.attr("weight_shape", ()))
    if len(shape) != 2 or min(shape) < 1 or tuple(ctx.inputs[1].shape) != (packed_size(*shape),):
        raise ctx.error(f"packed weights of shape {list(ctx.inputs[1].shape)} do not hold a matrix of "
                        f"weight_shape {list(shape)}")
    a = ctx.inputs[0]
    K, N = shape
    if len(a.shape) < 2 or a.shape[-1] != K or K % 2:
        raise ctx.error(f"A of shape {list(a.shape)} does not end in weight_shape's even K = {K}")
    return int(np.prod(a.shape[:-1])), K, N


def _infer(ctx: KernelContext) -> list[TensorSpec]:
    for i in (0, 1):
        if ctx.inputs[i].dtype != BFLOAT16:
            raise ctx.error(f"input {i} has dtype {ctx.inputs[i].dtype}, expected bfloat16")
    _, _, N = _dims(ctx)
    if not ctx.has(2) or ctx.inputs[2].dtype != np.float32 or tuple(ctx.inputs[2].shape) != (N,):
        raise ctx.error(f"the bias must be {N} float32 values (pack_bf16_matmuls gives zeros when there is none)")
    return [TensorSpec(tuple(ctx.inputs[0].shape[:-1]) + (N,), np.float32)]


@register("MatMulBF16", domain="ge", infer=_infer)
def _prepare(ctx: KernelContext) -> Launch:
    """ge::MatMulBF16(A:bf16 [..., K], B packed:bf16, bias:f32 [N])[weight_shape=[K, N], activation] -> f32."""
    M, K, N = _dims(ctx)
    act, p0, p1 = activation_args(ctx)
    bd = max(1, min(block_dim_for(M * N * K, ctx.cores, MIN_BLOCK_MACS), -(-N // NP)))
    return Launch(matmul_bf16, (M, N, K, act, p0, p1), (), tiled=True, block_dim=bd)
