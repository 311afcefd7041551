"""QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear: float32 <-> 8/16-bit integers (and int32 bias).

ONNX's rules, followed to the bit (onnx.reference is the oracle): Quantize is saturate(rint(x / scale) +
zero_point), a float32 division (not a multiplication by the reciprocal: they round differently) and
round-half-to-even; Dequantize is (float32(q) - float32(zero_point)) * scale. Types: int8, uint8, int16,
uint16 (and int32 input for Dequantize, the QDQ form of a bias); float16/bfloat16 scales and the float8 /
int4 / int2 / float4 types are refused by name. float8 saturate is not needed (no float8 type).

One layout covers the three granularities: the tensor is seen as [outer, D, inner] around `axis`, and the
scale and zero point of element (o, d, i) sit at o*so + (d // block)*sd + i*si:
  per tensor   so = sd = si = 0 (a scalar or a one-element 1-D scale)
  per axis     so = si = 0, sd = 1, block = 1 (a 1-D scale of D values)
  blocked      so = nb*inner, sd = inner, si = 1 (scale shaped as x with D -> nb = ceil(D / block))
`layout` checks scale and zero point against it and names the node when they do not fit.

Blocks (AI cores): Quantize and Dequantize are tiled over flat element ranges (elementwise, no reduction);
DynamicQuantizeLinear reduces all of x to one scale, so it runs as one block.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..ir.dtypes import from_onnx
from ..errors import ModelLoadError
from .blocks import G, flat_launch
from .registry import KernelContext, Launch, TensorSpec, normalize_axis, register
from .tiling import block_range

QTYPES = {np.dtype(t): (int(np.iinfo(t).min), int(np.iinfo(t).max))
          for t in (np.int8, np.uint8, np.int16, np.uint16)}
DQ_TYPES = {**QTYPES, np.dtype(np.int32): (int(np.iinfo(np.int32).min), int(np.iinfo(np.int32).max))}
_NS = 0.3  # ns per element, one thread, 1M elements per tensor: Quantize 0.12, Dequantize 0.27 (per-element index walk: 10.6, 9.1)


@njit(nogil=True, cache=True, inline="always")
def _run(e, hi, D, inner, bs, so, sd, si):
    """The run of flat elements from e that shares one row (o, d): its end, and the scale index at e."""
    i = e % inner
    d = (e // inner) % D
    o = e // (inner * D)
    return min(hi, e - i + inner), o * so + (d // bs) * sd + i * si


@njit(nogil=True, cache=True)
def quantize(x, s, zp, y, D, inner, bs, so, sd, si, has_zp, qmin, qmax, block_idx, block_dim):
    """y = saturate(rint(x / s) + zp) over block block_idx's flat range of y, one row run at a time (a
    scale that is constant along the run keeps the loop vectorized)."""
    lo, hi = block_range(y.size, G, block_idx, block_dim)
    e = lo
    while e < hi:
        end, j = _run(e, hi, D, inner, bs, so, sd, si)
        if si == 0:
            sc, z = s[j], np.float32(zp[j]) if has_zp else np.float32(0.0)
            xs, ys = x[e:end], y[e:end]  # views indexed from 0 vectorize (cast.py)
            lo_, hi_ = np.float32(qmin), np.float32(qmax)
            for k in range(ys.size):
                ys[k] = min(max(np.rint(xs[k] / sc) + z, lo_), hi_)
        else:
            for k in range(e, end):
                z = np.float32(zp[j + k - e]) if has_zp else np.float32(0.0)
                y[k] = min(max(np.rint(x[k] / s[j + k - e]) + z, qmin), qmax)
        e = end


@njit(nogil=True, cache=True)
def dequantize(x, s, zp, y, D, inner, bs, so, sd, si, has_zp, block_idx, block_dim):
    """y = (float32(x) - float32(zp)) * s over block block_idx's flat range of y, run by run."""
    lo, hi = block_range(y.size, G, block_idx, block_dim)
    e = lo
    while e < hi:
        end, j = _run(e, hi, D, inner, bs, so, sd, si)
        if si == 0:
            sc, z = s[j], np.float32(zp[j]) if has_zp else np.float32(0.0)
            xs, ys = x[e:end], y[e:end]
            for k in range(ys.size):
                ys[k] = (np.float32(xs[k]) - z) * sc
        else:
            for k in range(e, end):
                z = np.float32(zp[j + k - e]) if has_zp else np.float32(0.0)
                y[k] = (np.float32(x[k]) - z) * s[j + k - e]
        e = end


@njit(nogil=True, cache=True)
def dynamic_quantize(x, y, y_scale, y_zp):
    """uint8 with scale (max(0, max x) - min(0, min x)) / 255 and the zero point that maps 0 exactly."""
    hi, lo = np.float32(0.0), np.float32(0.0)
    for e in range(x.size):
        hi = max(hi, x[e])
        lo = min(lo, x[e])
    scale = (np.float32(1.0) if hi == lo else hi - lo) / np.float32(255.0)
    zp = np.rint(min(max(np.float32(0.0) - lo / scale, np.float32(0.0)), np.float32(255.0)))
    for e in range(x.size):
        y[e] = min(max(np.rint(x[e] / scale) + zp, 0.0), 255.0)
    y_scale[0] = scale
    y_zp[0] = zp


# -- scales and zero points -------------------------------------------------------------------------

def layout(ctx: KernelContext, x_shape, s_index: int = 1, zp_index: int = 2):
    """(D, inner, block, so, sd, si) of the scale and zero point of a Quantize/Dequantize-like node
    for a tensor of x_shape; a typed error naming the node when their shapes or types do not fit."""
    s = ctx.inputs[s_index]
    if s.dtype != np.float32:
        raise ctx.error(f"scale has dtype {s.dtype}, supported: float32")
    zp = ctx.inputs[zp_index] if ctx.has(zp_index) else None
    one = lambda t: t.size == 1 and len(t.shape) <= 1  # noqa: E731 - a scalar or [1]: one parameter
    # torch's quantized exports pair a scalar zero point with a [1] scale (onnxruntime runs them): both one
    if zp is not None and tuple(zp.shape) != tuple(s.shape) and not (one(zp) and one(s)):
        raise ctx.error(f"zero point shape {list(zp.shape)} differs from the scale's {list(s.shape)}")
    rank, bs = len(x_shape), int(ctx.attr("block_size", 0) or 0)
    if s.size == 1 and len(s.shape) <= 1 and not bs:
        return 1, max(1, int(np.prod(x_shape, dtype=np.int64))), 1, 0, 0, 0  # one run
    if not rank:
        raise ctx.error(f"a scalar input needs a one-element scale, got shape {list(s.shape)}")
    axis = normalize_axis(ctx, int(ctx.attr("axis", 1)), rank)
    D = int(x_shape[axis])
    inner = int(np.prod(x_shape[axis + 1:], dtype=np.int64))
    if not bs:
        if tuple(s.shape) != (D,):
            raise ctx.error(f"per-axis scale must have shape [{D}] (axis {axis} of {list(x_shape)}), "
                            f"got {list(s.shape)}")
        return D, inner, 1, 0, 1, 0
    nb = -(-D // bs)
    want = tuple(x_shape[:axis]) + (nb,) + tuple(x_shape[axis + 1:])
    if bs < 0 or tuple(s.shape) != want:
        raise ctx.error(f"block_size {bs} on axis {axis} of {list(x_shape)} needs a scale of shape "
                        f"{list(want)}, got {list(s.shape)}")
    return D, inner, bs, nb * inner, inner, 1


def _quant_type(ctx: KernelContext) -> np.dtype:
    """Output type of QuantizeLinear: the zero point's, else output_dtype, else uint8."""
    if ctx.has(2):
        dt = ctx.inputs[2].dtype
    elif ctx.attr("output_dtype"):
        try:
            dt = from_onnx(int(ctx.attr("output_dtype")))
        except ModelLoadError as e:
            raise ctx.error(str(e)) from None
    else:
        dt = np.dtype(np.uint8)
    if dt not in QTYPES:
        raise ctx.error(f"quantized type {dt} is not supported: {', '.join(map(str, QTYPES))}")
    if ctx.has(2) and ctx.attr("output_dtype") and from_onnx(int(ctx.attr("output_dtype"))) != dt:
        raise ctx.error(f"output_dtype {ctx.attr('output_dtype')} differs from the zero point's type {dt}")
    return dt


def _infer_quantize(ctx: KernelContext) -> list[TensorSpec]:
    if ctx.inputs[0].dtype != np.float32:
        raise ctx.error(f"input has dtype {ctx.inputs[0].dtype}, supported: float32")
    dt = _quant_type(ctx)
    layout(ctx, ctx.inputs[0].shape)
    return [TensorSpec(ctx.inputs[0].shape, dt)]


def _prepare_quantize(ctx: KernelContext) -> Launch:
    qmin, qmax = QTYPES[ctx.outputs[0].dtype]
    has_zp = ctx.has(2)
    # an absent zero point is stood in for by the scale (never read)
    return flat_launch(ctx, quantize, (*layout(ctx, ctx.inputs[0].shape), int(has_zp), float(qmin), float(qmax)),
                       _NS, inputs=(0, 1, 2 if has_zp else 1))


def _infer_dequantize(ctx: KernelContext) -> list[TensorSpec]:
    x = ctx.inputs[0]
    if x.dtype not in DQ_TYPES:
        raise ctx.error(f"input has dtype {x.dtype}, supported: {', '.join(map(str, DQ_TYPES))}")
    if ctx.has(2) and ctx.inputs[2].dtype != x.dtype:
        raise ctx.error(f"zero point has dtype {ctx.inputs[2].dtype}, the input {x.dtype}")
    if ctx.attr("output_dtype") not in (None, 0, 1):
        raise ctx.error(f"output_dtype {ctx.attr('output_dtype')} is not supported: float32 (1)")
    layout(ctx, x.shape)
    return [TensorSpec(x.shape, np.float32)]


def _prepare_dequantize(ctx: KernelContext) -> Launch:
    has_zp = ctx.has(2)
    # an absent zero point is stood in for by x (the same dtype, never read)
    return flat_launch(ctx, dequantize, (*layout(ctx, ctx.inputs[0].shape), int(has_zp)), _NS,
                       inputs=(0, 1, 2 if has_zp else 0))


def _infer_dynamic(ctx: KernelContext) -> list[TensorSpec]:
    if ctx.inputs[0].dtype != np.float32:
        raise ctx.error(f"input has dtype {ctx.inputs[0].dtype}, supported: float32")
    return [TensorSpec(ctx.inputs[0].shape, np.uint8), TensorSpec((), np.float32), TensorSpec((), np.uint8)]


register("QuantizeLinear", infer=_infer_quantize, since=10)(_prepare_quantize)
register("DequantizeLinear", infer=_infer_dequantize, since=10)(_prepare_dequantize)
register("DynamicQuantizeLinear", infer=_infer_dynamic, since=11)(lambda ctx: Launch(dynamic_quantize))
