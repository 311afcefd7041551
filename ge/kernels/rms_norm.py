"""RMSNormalization (opset 23): y = x / sqrt(mean(x^2) + epsilon) * scale over the trailing axes from `axis`.

Rows are x reshaped to (prod(shape[:axis]), prod(shape[axis:])), as LayerNormalization's (norm.py); the
mean of squares accumulates in float64 (stash_type 1, the default, asks for at least float32) and the
row is then scaled in x's dtype, which vectorizes. Scale must hold the normalized shape's values (the
node cases' and exporters' form); a scale that only broadcasts to it is a ShapeError.

Blocks (AI cores): whole rows (a row's statistic is never split), at ~0.4 ns per element.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .blocks import blocks, tiled
from .registry import KernelContext, Launch, TensorSpec, normalize_axis, register
from .tiling import block_range

_FLOATS = (np.float32, np.float64)
_NS = 0.4


@njit(nogil=True, cache=True)
def rms_norm(x, scale, y, rows, n, eps, block_idx, block_dim):
    inv = np.empty(1, y.dtype)  # the row's factor rounded to y's dtype
    r0, r1 = block_range(rows, 1, block_idx, block_dim)
    for r in range(r0, r1):
        row, out = x[r * n:(r + 1) * n], y[r * n:(r + 1) * n]
        q = 0.0
        for j in range(n):
            q += np.float64(row[j]) * row[j]
        inv[0] = 1.0 / np.sqrt(q / max(n, 1) + eps)
        f = inv[0]
        for j in range(n):
            out[j] = row[j] * f * scale[j]


def _axis(ctx: KernelContext) -> int:
    return normalize_axis(ctx, ctx.attr("axis", -1), len(ctx.inputs[0].shape))


def _infer(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, _FLOATS)
    x, s = ctx.inputs[0], ctx.inputs[1]
    if s.dtype != x.dtype:
        raise ctx.error(f"scale has dtype {s.dtype}, X has {x.dtype}")
    _axis(ctx)
    return [x]


@register("RMSNormalization", infer=_infer, since=23)
def _prepare(ctx: KernelContext) -> Launch:
    x, s = ctx.inputs[0], ctx.inputs[1]
    axis = _axis(ctx)
    rows, n = math.prod(x.shape[:axis]), math.prod(x.shape[axis:])
    if s.size != n:
        raise ctx.error(f"scale of shape {s.shape} must have the normalized shape {x.shape[axis:]}; "
                        "broadcasting it is not supported")
    return tiled(rms_norm, (rows, n, float(ctx.attr("epsilon", 1e-5))), blocks(ctx, rows, _NS * n))
