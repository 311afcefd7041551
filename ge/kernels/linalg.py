"""Det: the determinant of each trailing M x M matrix, by LU decomposition with partial pivoting.

Each matrix is copied into a float64 scratch (the elimination works in place there); the product of the
pivots, negated per row swap, is stored in the input's type. One block (M is small in practice).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .registry import KernelContext, Launch, TensorSpec, register

FLOATS = (np.float32, np.float64)


@njit(nogil=True, cache=True)
def det(x, out, m):
    a = np.empty((m, m), np.float64)
    for b in range(out.size):
        for i in range(m):
            for j in range(m):
                a[i, j] = x[(b * m + i) * m + j]
        d = 1.0
        for k in range(m):
            p = k
            for i in range(k + 1, m):
                if abs(a[i, k]) > abs(a[p, k]):
                    p = i
            if a[p, k] == 0.0:
                d = 0.0
                break
            if p != k:
                for j in range(m):
                    a[k, j], a[p, j] = a[p, j], a[k, j]
                d = -d
            d *= a[k, k]
            for i in range(k + 1, m):
                f = a[i, k] / a[k, k]
                for j in range(k + 1, m):
                    a[i, j] -= f * a[k, j]
        out[b] = d


def _infer(ctx: KernelContext) -> list[TensorSpec]:
    x = ctx.inputs[0]
    ctx.require_dtype(0, FLOATS)
    if len(x.shape) < 2 or x.shape[-1] != x.shape[-2]:
        raise ctx.error(f"needs square matrices in the last two axes, got shape {x.shape}")
    return [TensorSpec(x.shape[:-2], x.dtype)]


@register("Det", infer=_infer, since=11)
def _prepare(ctx: KernelContext) -> Launch:
    return Launch(det, (ctx.inputs[0].shape[-1],))
