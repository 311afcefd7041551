"""The GEMM core under Conv, ConvTranspose, Gemm and MatMul: Numba micro-kernels, no BLAS.

Why not BLAS: (1) every output element here is computed by the same sequence of operations, whatever its
row or column, so channels with equal weights give bitwise-equal results (the ONNX light models fill all
weights with one constant, and SqueezeNet's reference output is uniform only under that property; the
OpenBLAS kernel this machine runs breaks it by ~1 ulp per layer, which its logits of ~1e10 amplify);
(2) kernels stay single-threaded, so the thread budget belongs to the streams; (3) measured faster than
the OpenBLAS build here on ResNet-50's shapes (AVX-512 code from LLVM vs a Haswell kernel).

A is read through strides (element (m, k) at a[m*sam + k*sak]), so a transposed A costs nothing; C has a
row stride, and B a row stride (gemm_nn_ld) or any row offsets (gemm_nn_rows: a conv reads its shifted,
zero-padded input as B without unfolding it, see conv.py's SHIFTED).
gemm_nn: C[M,N] (+)= A[M,K] @ B[K,N] as a register-blocked micro-kernel on explicit vectors (simd.py):
a tile of 8 rows x 2 vectors of C (16 zmm registers) stays in registers over a block of KC k; per k,
2 vector loads of B, 8 broadcasts of A and 16 FMAs (8 rows: channel counts are multiples of 8). A panel's
second vector is masked when N ends inside it (or the panel is a single masked vector); rows left over are
done one at a time. Every C element, wherever it sits in a tile, is one chain c = fma(a[m,k], b[k,j], c)
over k in increasing order, starting from 0 (or from C when accumulating): the same operations as the
scalar loops this replaced (bitwise-equal results), at 1.2-2x their speed (~250 GF/s on big shapes).
gemm_nt: C[M,N] (+)= A[M,K] @ B[N,K]^T as row-by-row dot products, for N == 1 and transposed B.
"""
from __future__ import annotations

import numpy as np
from numba import njit, uint64

from .simd import vbcast, vfma, vlanes, vload, vload_n, vstore, vstore_n, vzero

KC = 256  # depth of a k block: the B panel it reads (KC x 2 vectors, 32 KiB in float32) stays in L1
# When B's row stride is a multiple of 2 KiB, a panel's rows fall into a few L1 sets and evict each other:
# then each panel is first copied to a contiguous buffer (BERT's FFN 1.37x; 0.9x where it is not needed).
PACK_STRIDE_BYTES, PACK_MIN_ROWS = 2048, 16


@njit(nogil=True, cache=True)
def gemm_nn(a, b, c, M, N, K, sam, sak, accumulate):
    """c[:M*N] (+)= A @ b[:K*N], row-major flat arrays, A[m, k] = a[m*sam + k*sak]."""
    gemm_nn_ld(a, b, c, M, N, K, sam, sak, N, N, accumulate)


@njit(nogil=True, cache=True)
def gemm_nn_ld(a, b, c, M, N, K, sam, sak, ldb, ldc, accumulate):
    """C (+)= A @ B with row strides: B[k, j] = b[k*ldb + j], C[m, j] = c[m*ldc + j], j < N."""
    _gemm(a, b, np.empty(0, np.int64), ldb, c, M, N, K, sam, sak, ldc, accumulate)


@njit(nogil=True, cache=True)
def gemm_nn_rows(a, b, brow, c, M, N, K, sam, sak, ldc, accumulate):
    """C (+)= A @ B, B's row k starting at b[brow[k]] (any offsets: a conv's shifted taps, with no im2col),
    C[m, j] at c[m*ldc + j], j < N."""
    _gemm(a, b, brow, 0, c, M, N, K, sam, sak, ldc, accumulate)


@njit(nogil=True, cache=True, inline="always")
def _gemm(a, b, brow, ldb, c, M, N, K, sam, sak, ldc, accumulate):
    """gemm_nn_ld (brow empty) or gemm_nn_rows: k blocks of KC, panels of 2 vectors, tiles of 8 rows."""
    L = vlanes(c)
    P = 2 * L  # panel width
    MR = M - M % 8  # rows in whole tiles
    packed = M >= PACK_MIN_ROWS and N > L and _conflicting(brow, ldb, K, c.itemsize)
    bp = np.zeros(KC * P if packed else 0, c.dtype)
    for k0 in range(0, K, KC):
        kn = min(KC, K - k0)
        load = accumulate or k0 > 0  # else a tile starts from zeros
        rows = brow[k0:k0 + kn] if brow.size else brow
        for j in range(0, N, P):
            w = min(P, N - j)
            if packed:  # the panel B[k0:k0+kn, j:j+P] copied contiguous (zero-padded) first
                _pack(b, rows, ldb, k0, kn, j, w, bp)
                _panel(a, bp, brow[:0], P, c, M, MR, j, w, k0, kn, sam, sak, 0, ldc, load)
            else:
                _panel(a, b, rows, ldb, c, M, MR, j, w, k0, kn, sam, sak, j + k0 * ldb, ldc, load)
    if K == 0 and not accumulate:
        for m in range(M):
            c[m * ldc:m * ldc + N] = 0


@njit(nogil=True, cache=True)
def _conflicting(brow, ldb, K, itemsize):
    """Whether B's rows are a multiple of PACK_STRIDE_BYTES apart."""
    if not brow.size:
        return (ldb * itemsize) % PACK_STRIDE_BYTES == 0
    for k in range(1, K):
        if ((brow[k] - brow[k - 1]) * itemsize) % PACK_STRIDE_BYTES:
            return False
    return K > 1


@njit(nogil=True, cache=True, inline="always")
def _panel(a, b, brow, ldb, c, M, MR, j, w, k0, kn, sam, sak, bo, ldc, load):
    """C[:, j:j+w] (+)= A[:, k0:k0+kn] @ the B panel (w <= 2 vectors of columns) whose row k starts at
    b[brow[k] + bo], or at b[k*ldb + bo] when brow is empty (known per call site, so LLVM drops the test)."""
    L = vlanes(c)
    if w > L:
        for m in range(0, MR, 8):
            _tile(a, m * sam + k0 * sak, sam, sak, b, brow, ldb, bo, c, m * ldc + j, ldc, kn, load, w - L)
    else:
        for m in range(0, MR, 8):
            _tile_n(a, m * sam + k0 * sak, sam, sak, b, brow, ldb, bo, c, m * ldc + j, ldc, kn, load, w)
    for m in range(MR, M):
        ao, co = m * sam + k0 * sak, m * ldc + j
        _row(a, ao, sak, b, brow, ldb, bo, c, co, kn, load, min(L, w))
        if w > L:
            _row(a, ao, sak, b, brow, ldb, bo + L, c, co + L, kn, load, w - L)


@njit(nogil=True, cache=True)
def _pack(b, brow, ldb, k0, kn, j, w, bp):
    """bp[k, :w] = B[k0 + k, j:j+w] for k < kn (B's rows from brow, else k*ldb), rows of 2 vectors."""
    L = vlanes(bp)
    P = 2 * L
    for k in range(kn):
        s, d = (brow[k] if brow.size else (k0 + k) * ldb) + j, k * P
        if w == P:
            vstore(bp, d, vload(b, s))
            vstore(bp, d + L, vload(b, s + L))
        else:
            vstore(bp, d, vload_n(b, s, min(L, w)))
            vstore(bp, d + L, vload_n(b, s + L, max(w - L, 0)))


@njit(nogil=True, cache=True, inline="always")
def _tile(a, ao, sam, sak, b, brow, ldb, bo, c, co, ldc, kn, load, n2):
    """C[8 rows, 2 vectors] at c[co:] (+)= A[8 rows, kn] at a[ao:] @ B[kn, 2 vectors] at b[bo:], with n2 <= L
    columns in the second vector (masked): the 16 C vectors stay in registers over the kn steps."""
    L = vlanes(c)
    r0, r1, r2, r3 = co, co + ldc, co + 2 * ldc, co + 3 * ldc
    r4, r5, r6, r7 = co + 4 * ldc, co + 5 * ldc, co + 6 * ldc, co + 7 * ldc
    q0, q1, q2, q3 = ao, ao + sam, ao + 2 * sam, ao + 3 * sam
    q4, q5, q6, q7 = ao + 4 * sam, ao + 5 * sam, ao + 6 * sam, ao + 7 * sam
    if load:
        c00, c01 = vload(c, r0), vload_n(c, r0 + L, n2)
        c10, c11 = vload(c, r1), vload_n(c, r1 + L, n2)
        c20, c21 = vload(c, r2), vload_n(c, r2 + L, n2)
        c30, c31 = vload(c, r3), vload_n(c, r3 + L, n2)
        c40, c41 = vload(c, r4), vload_n(c, r4 + L, n2)
        c50, c51 = vload(c, r5), vload_n(c, r5 + L, n2)
        c60, c61 = vload(c, r6), vload_n(c, r6 + L, n2)
        c70, c71 = vload(c, r7), vload_n(c, r7 + L, n2)
    else:
        z = vzero(c)
        c00, c01, c10, c11, c20, c21, c30, c31 = z, z, z, z, z, z, z, z
        c40, c41, c50, c51, c60, c61, c70, c71 = z, z, z, z, z, z, z, z
    for k in range(kn):
        p, t = (brow[k] if brow.size else k * ldb) + bo, k * sak
        b0, b1 = vload(b, p), vload_n(b, p + L, n2)
        x = vbcast(a, q0 + t)
        c00, c01 = vfma(x, b0, c00), vfma(x, b1, c01)
        x = vbcast(a, q1 + t)
        c10, c11 = vfma(x, b0, c10), vfma(x, b1, c11)
        x = vbcast(a, q2 + t)
        c20, c21 = vfma(x, b0, c20), vfma(x, b1, c21)
        x = vbcast(a, q3 + t)
        c30, c31 = vfma(x, b0, c30), vfma(x, b1, c31)
        x = vbcast(a, q4 + t)
        c40, c41 = vfma(x, b0, c40), vfma(x, b1, c41)
        x = vbcast(a, q5 + t)
        c50, c51 = vfma(x, b0, c50), vfma(x, b1, c51)
        x = vbcast(a, q6 + t)
        c60, c61 = vfma(x, b0, c60), vfma(x, b1, c61)
        x = vbcast(a, q7 + t)
        c70, c71 = vfma(x, b0, c70), vfma(x, b1, c71)
    vstore(c, r0, c00)
    vstore_n(c, r0 + L, c01, n2)
    vstore(c, r1, c10)
    vstore_n(c, r1 + L, c11, n2)
    vstore(c, r2, c20)
    vstore_n(c, r2 + L, c21, n2)
    vstore(c, r3, c30)
    vstore_n(c, r3 + L, c31, n2)
    vstore(c, r4, c40)
    vstore_n(c, r4 + L, c41, n2)
    vstore(c, r5, c50)
    vstore_n(c, r5 + L, c51, n2)
    vstore(c, r6, c60)
    vstore_n(c, r6 + L, c61, n2)
    vstore(c, r7, c70)
    vstore_n(c, r7 + L, c71, n2)


@njit(nogil=True, cache=True, inline="always")
def _tile_n(a, ao, sam, sak, b, brow, ldb, bo, c, co, ldc, kn, load, n):
    """The same for 8 rows and one vector of n <= L columns (masked)."""
    r0, r1, r2, r3 = co, co + ldc, co + 2 * ldc, co + 3 * ldc
    r4, r5, r6, r7 = co + 4 * ldc, co + 5 * ldc, co + 6 * ldc, co + 7 * ldc
    q0, q1, q2, q3 = ao, ao + sam, ao + 2 * sam, ao + 3 * sam
    q4, q5, q6, q7 = ao + 4 * sam, ao + 5 * sam, ao + 6 * sam, ao + 7 * sam
    if load:
        c0, c1, c2, c3 = vload_n(c, r0, n), vload_n(c, r1, n), vload_n(c, r2, n), vload_n(c, r3, n)
        c4, c5, c6, c7 = vload_n(c, r4, n), vload_n(c, r5, n), vload_n(c, r6, n), vload_n(c, r7, n)
    else:
        z = vzero(c)
        c0, c1, c2, c3, c4, c5, c6, c7 = z, z, z, z, z, z, z, z
    for k in range(kn):
        b0, t = vload_n(b, (brow[k] if brow.size else k * ldb) + bo, n), k * sak
        c0 = vfma(vbcast(a, q0 + t), b0, c0)
        c1 = vfma(vbcast(a, q1 + t), b0, c1)
        c2 = vfma(vbcast(a, q2 + t), b0, c2)
        c3 = vfma(vbcast(a, q3 + t), b0, c3)
        c4 = vfma(vbcast(a, q4 + t), b0, c4)
        c5 = vfma(vbcast(a, q5 + t), b0, c5)
        c6 = vfma(vbcast(a, q6 + t), b0, c6)
        c7 = vfma(vbcast(a, q7 + t), b0, c7)
    vstore_n(c, r0, c0, n)
    vstore_n(c, r1, c1, n)
    vstore_n(c, r2, c2, n)
    vstore_n(c, r3, c3, n)
    vstore_n(c, r4, c4, n)
    vstore_n(c, r5, c5, n)
    vstore_n(c, r6, c6, n)
    vstore_n(c, r7, c7, n)


@njit(nogil=True, cache=True, inline="always")
def _row(a, ao, sak, b, brow, ldb, bo, c, co, kn, load, n):
    """One row, one (masked) vector of n <= L columns: the rows left over from the tiles of 8."""
    c0 = vload_n(c, co, n) if load else vzero(c)
    for k in range(kn):
        c0 = vfma(vbcast(a, ao + k * sak), vload_n(b, (brow[k] if brow.size else k * ldb) + bo, n), c0)
    vstore_n(c, co, c0, n)


@njit(nogil=True, cache=True, fastmath={"contract", "reassoc"})
def gemm_nt(a, b, c, M, N, K, sam, sak, accumulate):
    """c[:M*N] (+)= A @ b[:N*K]^T, A[m, k] = a[m*sam + k*sak]: each element one dot product."""
    M, N, K, sam, sak = uint64(M), uint64(N), uint64(K), uint64(sam), uint64(sak)
    for m in range(uint64(0), M):
        q = m * sam
        for n in range(uint64(0), N):
            p = n * K
            s = a[0] * 0
            for k in range(uint64(0), K):
                s += a[q + k * sak] * b[p + k]
            if accumulate:
                c[m * N + n] += s
            else:
                c[m * N + n] = s
