"""The GEMM core under Conv, ConvTranspose, Gemm and MatMul: plain Numba loops, no BLAS.

Why not BLAS: (1) every output element here is computed by the same sequence of operations, whatever its
row or column, so channels with equal weights give bitwise-equal results (the ONNX light models fill all
weights with one constant, and SqueezeNet's reference output is uniform only under that property; the
OpenBLAS kernel this machine runs breaks it by ~1 ulp per layer, which its logits of ~1e10 amplify);
(2) kernels stay single-threaded, so the thread budget belongs to the streams; (3) measured faster than
the OpenBLAS build here on ResNet-50's shapes (AVX-512 code from LLVM vs a Haswell kernel).

A is read through strides (element (m, k) at a[m*sam + k*sak]), so a transposed A costs nothing.
gemm_nn: C[M,N] (+)= A[M,K] @ B[K,N]. Blocks of 512 columns x 128 depth keep the B panel in L2; four rows
of A at a time, four k at a time: per column j, 4 loads of B and 16 FMAs into 4 rows of C, a loop LLVM
vectorizes over j. Indices are unsigned: Numba's negative-index wraparound on signed indices would stop
the vectorizer (measured 4 GF/s signed vs 150 GF/s unsigned).
gemm_nt: C[M,N] (+)= A[M,K] @ B[N,K]^T as row-by-row dot products, for N == 1 and transposed B.
"""
from __future__ import annotations

from numba import njit, uint64

NB, KB = 512, 128


@njit(nogil=True, cache=True, fastmath={"contract"})
def gemm_nn(a, b, c, M, N, K, sam, sak, accumulate):
    """c[:M*N] (+)= A @ b[:K*N], row-major flat arrays, A[m, k] = a[m*sam + k*sak]."""
    if not accumulate:
        c[:M * N] = 0
    M, N, K, sam, sak = uint64(M), uint64(N), uint64(K), uint64(sam), uint64(sak)
    one, four = uint64(1), uint64(4)
    for n0 in range(uint64(0), N, uint64(NB)):
        n1 = min(n0 + uint64(NB), N)
        for k0 in range(uint64(0), K, uint64(KB)):
            k1 = min(k0 + uint64(KB), K)
            m = uint64(0)
            while m + four <= M:
                r0 = m * N
                r1, r2, r3 = r0 + N, r0 + N + N, r0 + N + N + N
                q0 = m * sam
                q1, q2, q3 = q0 + sam, q0 + sam + sam, q0 + sam + sam + sam
                k = k0
                while k + four <= k1:
                    t0, t1, t2, t3 = k * sak, (k + one) * sak, (k + uint64(2)) * sak, (k + uint64(3)) * sak
                    a00, a01, a02, a03 = a[q0 + t0], a[q0 + t1], a[q0 + t2], a[q0 + t3]
                    a10, a11, a12, a13 = a[q1 + t0], a[q1 + t1], a[q1 + t2], a[q1 + t3]
                    a20, a21, a22, a23 = a[q2 + t0], a[q2 + t1], a[q2 + t2], a[q2 + t3]
                    a30, a31, a32, a33 = a[q3 + t0], a[q3 + t1], a[q3 + t2], a[q3 + t3]
                    b0 = k * N
                    b1, b2, b3 = b0 + N, b0 + N + N, b0 + N + N + N
                    for j in range(n0, n1):
                        x0, x1, x2, x3 = b[b0 + j], b[b1 + j], b[b2 + j], b[b3 + j]
                        c[r0 + j] = c[r0 + j] + a00 * x0 + a01 * x1 + a02 * x2 + a03 * x3
                        c[r1 + j] = c[r1 + j] + a10 * x0 + a11 * x1 + a12 * x2 + a13 * x3
                        c[r2 + j] = c[r2 + j] + a20 * x0 + a21 * x1 + a22 * x2 + a23 * x3
                        c[r3 + j] = c[r3 + j] + a30 * x0 + a31 * x1 + a32 * x2 + a33 * x3
                    k += four
                while k < k1:
                    t0 = k * sak
                    a00, a10, a20, a30 = a[q0 + t0], a[q1 + t0], a[q2 + t0], a[q3 + t0]
                    b0 = k * N
                    for j in range(n0, n1):
                        x0 = b[b0 + j]
                        c[r0 + j] = c[r0 + j] + a00 * x0
                        c[r1 + j] = c[r1 + j] + a10 * x0
                        c[r2 + j] = c[r2 + j] + a20 * x0
                        c[r3 + j] = c[r3 + j] + a30 * x0
                    k += one
                m += four
            while m < M:  # leftover rows: the same operations per element as above
                r0, q0 = m * N, m * sam
                k = k0
                while k + four <= k1:
                    t0, t1, t2, t3 = k * sak, (k + one) * sak, (k + uint64(2)) * sak, (k + uint64(3)) * sak
                    a00, a01, a02, a03 = a[q0 + t0], a[q0 + t1], a[q0 + t2], a[q0 + t3]
                    b0 = k * N
                    b1, b2, b3 = b0 + N, b0 + N + N, b0 + N + N + N
                    for j in range(n0, n1):
                        c[r0 + j] = c[r0 + j] + a00 * b[b0 + j] + a01 * b[b1 + j] + a02 * b[b2 + j] \
                            + a03 * b[b3 + j]
                    k += four
                while k < k1:
                    a00 = a[q0 + k * sak]
                    b0 = k * N
                    for j in range(n0, n1):
                        c[r0 + j] = c[r0 + j] + a00 * b[b0 + j]
                    k += one
                m += one


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
