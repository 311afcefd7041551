"""The integer GEMM of the quantized ops: int16 operands (8-bit values less their zero points), int32 sums.

acc[M, N] = A[M, K] @ B[K, N], A and B int16 holding q - zero_point (so every product is exact: |q - zp| <=
255, and the int32 sums cannot overflow for K < 33000), as ONNX's MatMulInteger / ConvInteger define it
and as onnxruntime computes QLinearConv (int32 accumulation, then one requantization).

Choices: subtracting the zero points while copying to int16 (rather than correcting uint8 sums with row and
column sums afterwards) keeps one simple kernel for per-tensor, per-row and per-column zero points; the
loop runs over column chunks of CHUNK sums (a 1 KiB int32 row, L1-resident across k) with the k loop
outside the vectorized column loop, which LLVM turns into 16-lane vpmovsxwd/vpmulld/vpaddd.
`requantize` is the output stage shared by QLinearConv and QLinearMatMul, onnxruntime's float32 steps
(MlasRequantizeOutput): y = rint(clamp(float32(acc + bias) * multiplier, qmin - y_zp, qmax - y_zp)) + y_zp,
the multiplier x_scale * w_scale / y_scale in float32, rounding to even. onnx.reference multiplies in
float64: where float32(acc) * multiplier lands within one float32 rounding of a half (or |acc| >= 2^24 is
rounded to float32), the two differ by 1; ge gives onnxruntime's bits.
"""
from __future__ import annotations

import numpy as np
from numba import njit

CHUNK = 256


@njit(nogil=True, cache=True)
def igemm(a, ao, b, bo, ldb, acc, co, ldc, M, N, K):
    """acc[co + m*ldc + n] = sum_k a[ao + m*K + k] * b[bo + k*ldb + n] for m < M, n < N (int32)."""
    for n0 in range(0, N, CHUNK):
        n1 = min(N, n0 + CHUNK)
        for m in range(M):
            c = acc[co + m * ldc + n0:co + m * ldc + n1]
            c[:] = 0
            for k in range(K):
                av = np.int32(a[ao + m * K + k])
                if av == 0:
                    continue
                bk = b[bo + k * ldb + n0:bo + k * ldb + n1]
                for n in range(c.size):
                    c[n] += av * np.int32(bk[n])


@njit(nogil=True, cache=True)
def shift(src, so, n, zp, dst, do):
    """dst[do:do+n] = int16(src[so:so+n]) - zp."""
    for i in range(n):
        dst[do + i] = np.int16(np.int32(src[so + i]) - zp)


@njit(nogil=True, cache=True, inline="always")
def multiplier(xs, ws, ys):
    """x_scale * w_scale / y_scale in float32, as onnxruntime's QLinearConv computes its output scales."""
    return np.float32(np.float32(xs * ws) / ys)


@njit(nogil=True, cache=True)
def requantize(acc, ao, n, bias, mult, yzp, qmin, qmax, y, yo):
    """y[yo:yo+n] = rint(clamp(float32(acc[ao:ao+n] + bias) * mult, qmin - yzp, qmax - yzp)) + yzp, in
    float32 (mult float32): onnxruntime's MlasRequantizeOutput, step for step."""
    lo, hi, z = np.float32(qmin - yzp), np.float32(qmax - yzp), np.int32(yzp)
    for i in range(n):
        y[yo + i] = np.int32(np.rint(min(max(np.float32(acc[ao + i] + bias) * mult, lo), hi))) + z
