"""Cast and CastLike between bool, int8..uint64, float16, bfloat16, float32 and float64.

One loop, `out[i] = x[i]`: Numba converts on the store as numpy's astype does (floats truncate towards zero
into ints, ints wrap, anything is True where nonzero; NaN is True). Float-to-int of NaN or out-of-range
values is undefined, as in ONNX. To and from the 16-bit floats the kernels of half.py convert (round to
nearest even, rounded once; `saturate` only concerns float8); between two tensors of one 16-bit type the
copy moves bits. The float8/4 and int4/2 types and strings are not supported. Before opset 6, `to` was a
type name string.
BitCast (opset 26) copies the bytes into a type of the same width: one small specialization per pair of
types, since kernels see typed arrays.

Blocks (AI cores): `cast` is tiled over flat slices ending on multiples of blocks.G; it is also the
copy kernel of Clip without bounds and of a one-input Sum/Max/Min/Mean (`copy_launch`).
"""
from __future__ import annotations

import numpy as np
from numba import njit
from onnx import TensorProto

from ..errors import ModelLoadError
from ..ir.dtypes import BFLOAT16, HALF, from_onnx
from .blocks import G, flat_launch
from .half import BF16, F16, f32_to_half, from_half, half_to_half, to_half
from .registry import KernelContext, Launch, TensorSpec, register
from .tiling import block_range

SUPPORTED = {np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                   np.uint32, np.uint64, np.float32, np.float64)} | set(HALF)


@njit(nogil=True, cache=True)
def cast(x, out, block_idx, block_dim):
    lo, hi = block_range(out.size, G, block_idx, block_dim)
    xs, ys = x[lo:hi], out[lo:hi]  # views indexed by the range variable vectorize (strided.copy_run)
    for i in range(ys.size):
        ys[i] = xs[i]


_NS = 0.2  # ns per element, float32 -> int32 over 1x16x112x112, one thread (a copy costs the same)


def copy_launch(ctx: KernelContext, **kw) -> Launch:
    """`cast` as a copy or conversion of input 0 into output 0, tiled over the elements."""
    src, dst = ctx.inputs[0].dtype, ctx.outputs[0].dtype
    kind = lambda dt: BF16 if dt == BFLOAT16 else F16  # noqa: E731
    if src == dst or (src not in HALF and dst not in HALF):
        return flat_launch(ctx, cast, (), _NS, **kw)
    if src in HALF and dst in HALF:
        return flat_launch(ctx, half_to_half, (kind(src), kind(dst)), _NS, **kw)
    if src in HALF:
        return flat_launch(ctx, from_half, (kind(src),), _NS, **kw)
    fn = f32_to_half if src == np.float32 else to_half
    return flat_launch(ctx, fn, (kind(dst),), _NS, **kw)


def _target(ctx: KernelContext) -> np.dtype:
    to = ctx.attr("to")
    try:
        dt = from_onnx(TensorProto.DataType.Value(to.upper()) if isinstance(to, str) else int(to))
    except (ModelLoadError, ValueError, TypeError):
        dt = None
    if dt not in SUPPORTED:
        names = ", ".join(sorted(map(str, SUPPORTED)))
        raise ctx.error(f"cannot cast to {to!r}: supported targets are {names}")
    return dt


def _check_source(ctx: KernelContext) -> None:
    if ctx.inputs[0].dtype not in SUPPORTED:
        raise ctx.error(f"cannot cast from {ctx.inputs[0].dtype}")


def _infer_cast(ctx: KernelContext) -> list[TensorSpec]:
    _check_source(ctx)
    return [TensorSpec(ctx.inputs[0].shape, _target(ctx))]


def _infer_cast_like(ctx: KernelContext) -> list[TensorSpec]:
    _check_source(ctx)
    if ctx.inputs[1].dtype not in SUPPORTED:
        raise ctx.error(f"cannot cast to {ctx.inputs[1].dtype}")
    return [TensorSpec(ctx.inputs[0].shape, ctx.inputs[1].dtype)]


register("Cast", infer=_infer_cast)(lambda ctx: copy_launch(ctx))
register("CastLike", infer=_infer_cast_like, since=15)(lambda ctx: copy_launch(ctx, inputs=(0,)))


# -- BitCast: the same bits read as another type of the same width ----------------------------------


@njit(nogil=True, cache=True)
def bitcast(x, out):
    out.view(np.uint8)[:] = x.view(np.uint8)


def _infer_bitcast(ctx: KernelContext) -> list[TensorSpec]:
    _check_source(ctx)
    src, dst = ctx.inputs[0].dtype, _target(ctx)
    if src.itemsize != dst.itemsize:
        raise ctx.error(f"cannot bitcast {src} to {dst}: BitCast needs types of one width")
    return [TensorSpec(ctx.inputs[0].shape, dst)]


# 16-bit floats reach kernels as uint16 (Launch.bits16), so their bits pass through the same copy
register("BitCast", infer=_infer_bitcast, since=26)(lambda ctx: Launch(bitcast))
