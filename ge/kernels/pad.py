"""Pad in every mode: constant, reflect, edge and wrap (opsets 1-25; pads/value attributes before 11,
inputs since, axes since 18).

Negative pads crop first and the kept part is then padded. Constant padding fills the output and
copies the kept part with strided.strided_copy; the other modes are a per-axis index map (output
position -> input position), so they run on strided.gather_axes, whose plain-slice stretch covers
the interior.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .registry import KernelContext, Launch, TensorSpec, normalize_axis, register
from .strided import (DTYPES, contiguous_strides, copy_args, fill_scalar, gather_args, gather_axes, int_values,
                      strided_copy)


@njit(nogil=True, cache=True)
def pad_constant(x, out, value, s_off, d_off, shape, ss, ds):
    out[:] = value
    strided_copy(x, out, s_off, d_off, shape, ss, ds)


def _pad_plan(ctx: KernelContext):
    """(begin/end pad per dim, mode, constant value) across Pad's opset history."""
    r = len(ctx.inputs[0].shape)
    if ctx.opset < 11:
        pads, value, axes = ctx.attr("pads", ctx.attr("paddings")), ctx.attr("value", 0.0), None
    else:
        pads = int_values(ctx, 1)
        value = np.asarray(ctx.value(2)).reshape(-1) if ctx.has(2) else ()
        value = value[0] if len(value) else 0
        axes = int_values(ctx, 3) if ctx.has(3) else None
    axes = list(range(r)) if axes is None else [normalize_axis(ctx, a, r) for a in axes]
    if pads is None or len(pads) != 2 * len(axes):
        raise ctx.error(f"pads {pads} do not fit {len(axes)} axes")
    begin, end = [0] * r, [0] * r
    for i, a in enumerate(axes):
        begin[a], end[a] = int(pads[i]), int(pads[i + len(axes)])
    mode = ctx.attr("mode", "constant")
    if mode not in ("constant", "reflect", "edge", "wrap"):
        raise ctx.error(f"unsupported pad mode {mode!r}")
    return begin, end, mode, value


def _infer_pad(ctx: KernelContext) -> list[TensorSpec]:
    x = ctx.inputs[0]
    ctx.require_dtype(0, DTYPES)
    begin, end, _, _ = _pad_plan(ctx)
    shape = [n + b + e for n, b, e in zip(x.shape, begin, end)]
    if min(shape, default=0) < 0:
        raise ctx.error(f"pads {begin + end} crop more than the input shape {x.shape}")
    return [TensorSpec(shape, x.dtype)]


def _source_index(o: np.ndarray, n: int, mode: str) -> np.ndarray:
    """Input index read by padded positions o (o - begin, possibly outside [0, n))."""
    if mode == "edge":
        return np.clip(o, 0, n - 1)
    if mode == "wrap":
        return o % n
    if n == 1:
        return np.zeros_like(o)
    period = 2 * (n - 1)  # reflect: a triangle wave over the input
    o = o % period
    return np.where(o < n, o, period - o)


@register("Pad", infer=_infer_pad, value_inputs=(1, 2, 3))
def _prepare_pad(ctx: KernelContext) -> Launch:
    shape, out = ctx.inputs[0].shape, ctx.outputs[0].shape
    begin, end, mode, value = _pad_plan(ctx)
    st, ost = contiguous_strides(shape), contiguous_strides(out)
    if mode == "constant":
        keep = [max(0, n - max(-b, 0) - max(-e, 0)) for n, b, e in zip(shape, begin, end)]
        s_off = sum(max(-b, 0) * s for b, s in zip(begin, st))
        d_off = sum(max(b, 0) * s for b, s in zip(begin, ost))
        return Launch(pad_constant, (fill_scalar(value, ctx.inputs[0].dtype),)
                      + copy_args(keep, st, ost, s_off, d_off), inputs=(0,))
    # negative pads crop first; the kept part [lo, lo + keep) is then padded by mode
    tables = []
    for n, m, b, e, s in zip(shape, out, begin, end, st):
        lo, keep = max(-b, 0), n - max(-b, 0) - max(-e, 0)
        if keep <= 0 and m > 0:
            raise ctx.error(f"{mode} padding needs a non-empty input, got shape {shape} and pads {begin + end}")
        tables.append((lo + _source_index(np.arange(m) - max(b, 0), keep, mode)) * s)
    return Launch(gather_axes, gather_args(out, tables), inputs=(0,))
