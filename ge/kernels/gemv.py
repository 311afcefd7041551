"""GEMV: one row of A times B, the decode step's every projection (a token a step: M = 1).

gemm.py's blocked loops are built for many rows: packing A, register tiles of several rows, and (Gemm's B
not packed at compile time) B packed again on every call. For one row all of that is overhead over a
stream through B: a decoder's projections at M = 1 measured 1.6-5.7x onnxruntime's MLAS (one thread, AMD
EPYC, loaded: 768 x 3072 2.46 vs 0.46 ms, 256 x 50257 15.5 vs 7.8 ms). Here y += a[k] * B[k, :] row after
row (eight rows a pass: 15-20% faster than four on GPT-2's projections, the same additions in the same order),
over column chunks that stay in L1 (CHUNK floats), so B is read once, in order, and the inner loop is one
vectorized FMA over contiguous memory:
  gemv        B [K, N] row-major (Gemm transB=0, MatMul), or [N, K] (transB=1: a dot product per column);
  gemv_packed B in gemm_packed.pack_b's panels (pack_matmul_weights): per k block, panel by panel, the
              panel's y (two vectors) held in registers over its rows, so B is one stream read in order and
              each of its vectors costs a load, a multiply and an add: GPT-2 12 x 768's projections at the
              read bandwidth of one thread (~24 GB/s; the rows above 16-21 GB/s: 12-28% less CPU, AMD EPYC,
              loaded, 12 layers' weights cold, CPU time; 3072 x 768 gained most: eight rows of 3 KB a pass
              are eight short streams).
Every y element is the chain y = 0; y += a[k] * b[k] for k = 0 .. K-1 in order in both, then the epilogue
(bias, activation) as gemm's: the same bits packed or not and for any core count (blocks cut the columns).
Tiled over AI cores by column panels (gemm_packed.panel_width).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .epilogue import epilogue
from .gemm import MIN_BLOCK_MACS
from .reduce import U
from .simd import vadd, vbcast, vlanes, vload, vmul, vstore, vzero
from .tiling import block_dim_for, block_range

CHUNK = 4096   # y columns kept in L1 while B's rows stream by (16 KB of float32; 1024 measured 5-15% slower
               # at GPT-2's 768 x 2304 / 3072, one thread, CPU time, load 13)
PANEL = 32     # tiling grain: gemm_packed's float32 panel


@njit(nogil=True, cache=True)
def _row(a, ao, sak, b, N, K, trans_b, y, yo, n0, n1):
    zero = y.dtype.type(0)
    if trans_b:   # b [N, K]: y[n] = a . b[n, :], k in order
        for n in range(n0, n1):
            s = zero
            bo = U(n * K)
            for k in range(K):
                s += a[ao + k * sak] * b[bo + U(k)]
            y[yo + n] = s
        return
    for j0 in range(n0, n1, CHUNK):
        w = U(min(CHUNK, n1 - j0))
        yb = U(yo + j0)
        for j in range(w):
            y[yb + j] = zero
        k = 0
        while k + 8 <= K:   # eight rows a pass: y loaded and stored once per eight products, added in k's order
            a0, a1, a2, a3 = a[ao + k * sak], a[ao + (k + 1) * sak], a[ao + (k + 2) * sak], a[ao + (k + 3) * sak]
            a4, a5, a6, a7 = a[ao + (k + 4) * sak], a[ao + (k + 5) * sak], a[ao + (k + 6) * sak], a[ao + (k + 7) * sak]
            b0 = U(k * N + j0)
            b1, b2, b3, b4 = b0 + U(N), b0 + U(2 * N), b0 + U(3 * N), b0 + U(4 * N)
            b5, b6, b7 = b0 + U(5 * N), b0 + U(6 * N), b0 + U(7 * N)
            for j in range(w):
                y[yb + j] = (((((((y[yb + j] + a0 * b[b0 + j]) + a1 * b[b1 + j]) + a2 * b[b2 + j]) + a3 * b[b3 + j])
                               + a4 * b[b4 + j]) + a5 * b[b5 + j]) + a6 * b[b6 + j]) + a7 * b[b7 + j]
            k += 8
        while k + 4 <= K:   # four rows a pass: y loaded and stored once per four FMAs, added in k's order
            a0, a1, a2, a3 = a[ao + k * sak], a[ao + (k + 1) * sak], a[ao + (k + 2) * sak], a[ao + (k + 3) * sak]
            b0 = U(k * N + j0)
            b1, b2, b3 = b0 + U(N), b0 + U(2 * N), b0 + U(3 * N)
            for j in range(w):   # unsigned indices: no wraparound test, the loop vectorizes
                y[yb + j] = (((y[yb + j] + a0 * b[b0 + j]) + a1 * b[b1 + j]) + a2 * b[b2 + j]) + a3 * b[b3 + j]
            k += 4
        while k < K:
            ak = a[ao + k * sak]
            bo = U(k * N + j0)
            for j in range(w):
                y[yb + j] += ak * b[bo + j]
            k += 1


@njit(nogil=True, cache=True)
def gemv(a, b, c, y, M, N, K, sam, sak, trans_b, alpha, beta, c_mode, act, p0, p1, block_idx, block_dim):
    """y[m, :] = act(alpha * a[m, :] @ B + beta * c) for m < M (a few rows), block block_idx's columns.
    c_mode as matmul.py's (0 none, 1 scalar, 2 column, 3 row, 4 full)."""
    n0, n1 = block_range(N, PANEL, block_idx, block_dim)
    if n1 <= n0:
        return
    has_v = 1 if c_mode == 3 or c_mode == 4 else 0
    for m in range(M):
        _row(a, m * sam, sak, b, N, K, trans_b, y, m * N, n0, n1)
        s = 0.0
        if c_mode == 1:
            s = beta * c[0]
        elif c_mode == 2:
            s = beta * c[m]
        voff = (m * N if c_mode == 4 else 0) + n0
        epilogue(y, m * N + n0, n1 - n0, alpha, s, c, voff, beta, has_v, act, p0, p1)


@njit(nogil=True, cache=True, inline="always")
def _panel(a, ak, bp, o, kn, y, yj, w, more):
    """One panel's y[yj:yj+w] (+)= a[ak:ak+kn] @ its kn packed rows at bp[o:]: y = (y + a0*b0) + a1*b1 ... in
    k's order, two vectors held in registers (a whole panel) or lane by lane (the last, narrower one)."""
    L = vlanes(y)
    if w == 2 * L:
        if more:
            c0, c1 = vload(y, yj), vload(y, yj + L)
        else:
            c0 = c1 = vzero(y)
        for k in range(ak, ak + kn):
            x = vbcast(a, k)
            c0 = vadd(c0, vmul(x, vload(bp, o)))
            c1 = vadd(c1, vmul(x, vload(bp, o + U(L))))
            o += U(2 * L)
        vstore(y, yj, c0)
        vstore(y, yj + L, c1)
        return
    for j in range(w):
        s = y[yj + j] if more else y.dtype.type(0)
        oj = o + U(j)
        for k in range(ak, ak + kn):
            s += a[k] * bp[oj]
            oj += U(2 * L)
        y[yj + j] = s


@njit(nogil=True, cache=True)
def gemv_packed(a, bp, c, y, M, N, K, kc, has_c, act, p0, p1, block_idx, block_dim):
    """y[m, :] = act(a[m, :] @ B + c), B packed by gemm_packed.pack_b in k blocks of kc rows: per k block,
    panel by panel, the panel's y in two vector registers over its kc rows (B read once, in order)."""
    L = vlanes(y)
    P = 2 * L   # gemm_packed.panel_width
    Np = (N + P - 1) // P * P
    n0, n1 = block_range(N, P, block_idx, block_dim)
    if n1 <= n0:
        return
    for m in range(M):
        yo, ao = m * N, m * K
        for k0 in range(0, K, kc):
            kn = min(kc, K - k0)
            for j0 in range(n0, n1, P):
                _panel(a, ao + k0, bp, U(k0 * Np + j0 * kn), kn, y, yo + j0, min(P, N - j0), k0 > 0)
        epilogue(y, yo + n0, n1 - n0, 1.0, 0.0, c, n0, 1.0, has_c, act, p0, p1)


def gemv_blocks(N: int, K: int, cores: int) -> int:
    """Blocks for a GEMV of N columns over K: whole panels, each at least MIN_BLOCK_MACS."""
    return block_dim_for(-(-N // PANEL), cores, -(-MIN_BLOCK_MACS // max(1, K * PANEL)))
