"""Shape ops, no-task views and generators: Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout, Shape,
Size, ConstantOfShape, Constant, Range, EyeLike, OneHot.

Tensors are flat contiguous buffers, so Reshape, Flatten, Squeeze, Unsqueeze, Identity and inference
Dropout only rename a buffer: they register `alias=0` and prepare returns None (GE's no-task ops).
Dropout needs a task only when it must also write its mask, or runs in training mode.

The generators write values known at compile time (shapes, attributes) into their output, passed
as int64 or float64 args and cast on store, so one kernel serves every output dtype.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..ir.dtypes import from_onnx
from .registry import AICPU, KernelContext, Launch, TensorSpec, normalize_axis, register, same_as_input
from ..ir.dtypes import HALF
from .strided import DTYPES, copy_run, fill_scalar, int_values


def _view(ctx: KernelContext) -> None:
    return None


# -- views ------------------------------------------------------------------------------------------

def _infer_reshape(ctx: KernelContext) -> list[TensorSpec]:
    x = ctx.inputs[0]
    target = ctx.attr("shape") if ctx.opset < 5 else int_values(ctx, 1)
    allowzero = ctx.attr("allowzero", 0)
    shape = [x.shape[i] if d == 0 and not allowzero and i < len(x.shape) else d for i, d in enumerate(target)]
    if shape.count(-1) > 1 or min(shape, default=0) < -1:
        raise ctx.error(f"bad target shape {target}")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        if known == 0 or x.size % known:
            raise ctx.error(f"cannot infer -1 in {target} for {x.size} elements")
        shape[shape.index(-1)] = x.size // known
    if math.prod(shape) != x.size:
        raise ctx.error(f"cannot reshape {x.shape} to {target}")
    return [TensorSpec(shape, x.dtype)]


register("Reshape", infer=_infer_reshape, value_inputs=(1,), alias=0)(_view)


def _infer_flatten(ctx: KernelContext) -> list[TensorSpec]:
    x = ctx.inputs[0]
    r = len(x.shape)
    axis = ctx.attr("axis", 1)
    if not -r <= axis <= r:
        raise ctx.error(f"axis {axis} is out of range for rank {r}")
    axis = axis + r if axis < 0 else axis
    return [TensorSpec((math.prod(x.shape[:axis]), math.prod(x.shape[axis:])), x.dtype)]


register("Flatten", infer=_infer_flatten, alias=0)(_view)


def _axes(ctx: KernelContext) -> list[int] | None:
    """Squeeze/Unsqueeze axes: an attribute before opset 13, an input since."""
    if ctx.opset < 13:
        return ctx.attr("axes")
    return int_values(ctx, 1) if ctx.has(1) else None


def _infer_squeeze(ctx: KernelContext) -> list[TensorSpec]:
    x = ctx.inputs[0]
    axes = _axes(ctx)
    if axes is None:
        drop = {d for d, n in enumerate(x.shape) if n == 1}
    else:
        drop = {normalize_axis(ctx, a, len(x.shape)) for a in axes}
        if any(x.shape[d] != 1 for d in drop):
            raise ctx.error(f"cannot squeeze axes {axes} of shape {x.shape}")
    return [TensorSpec([n for d, n in enumerate(x.shape) if d not in drop], x.dtype)]


register("Squeeze", infer=_infer_squeeze, value_inputs=(1,), alias=0)(_view)


def _infer_unsqueeze(ctx: KernelContext) -> list[TensorSpec]:
    x = ctx.inputs[0]
    axes = _axes(ctx)
    r = len(x.shape) + len(axes or ())
    new = {normalize_axis(ctx, a, r) for a in axes or ()}
    if not axes or len(new) != len(axes):
        raise ctx.error(f"bad axes {axes}")
    dims = iter(x.shape)
    return [TensorSpec([1 if d in new else next(dims) for d in range(r)], x.dtype)]


register("Unsqueeze", infer=_infer_unsqueeze, value_inputs=(1,), alias=0)(_view)
register("Identity", infer=same_as_input(), alias=0)(_view)


# -- Dropout ----------------------------------------------------------------------------------------

@njit(nogil=True, cache=True)
def dropout_copy(x, out, mask):
    copy_run(x, 0, out, 0, x.size)
    mask[:] = True


@njit(nogil=True, cache=True)
def dropout_train(x, out, mask, seed, ratio):
    """Keep each element with probability 1 - ratio, scaled up; numpy's legacy generator for `seed`."""
    np.random.seed(seed)
    scale = 1.0 / (1.0 - ratio)
    for i in range(x.size):
        keep = np.random.random() >= ratio
        mask[i] = keep
        out[i] = x[i] * scale if keep else 0


def _dropout_mode(ctx: KernelContext) -> tuple[bool, float]:
    """(training, ratio): inputs since opset 12; older opsets run inference only."""
    if ctx.opset < 12:
        return False, float(ctx.attr("ratio", 0.5))
    training = ctx.has(2) and bool(int_values(ctx, 2)[0])
    ratio = float(np.asarray(ctx.value(1)).reshape(-1)[0]) if training and ctx.has(1) else 0.5
    return training and ratio > 0, ratio


def _infer_dropout(ctx: KernelContext) -> list[TensorSpec]:
    x = ctx.inputs[0]
    if _dropout_mode(ctx)[0] or ctx.n_outputs > 1:
        ctx.require_dtype(0, DTYPES)
    outs = [x]
    if ctx.n_outputs > 1:
        outs.append(TensorSpec(x.shape, np.bool_ if ctx.opset >= 10 else x.dtype))
    return outs


@register("Dropout", infer=_infer_dropout, value_inputs=(1, 2), alias=0)
def _prepare_dropout(ctx: KernelContext) -> Launch | None:
    training, ratio = _dropout_mode(ctx)
    mask = () if ctx.n_outputs > 1 else (TensorSpec(ctx.inputs[0].shape, np.bool_),)
    if training:
        seed = ctx.attr("seed")
        seed = int(np.random.randint(2 ** 31)) if seed is None else int(seed) % 2 ** 32
        return Launch(dropout_train, (seed, ratio), workspaces=mask, inputs=(0,))
    return Launch(dropout_copy, inputs=(0,)) if ctx.n_outputs > 1 else None


# -- generators -------------------------------------------------------------------------------------

@njit(nogil=True, cache=True)
def fill_values(out, vals):
    for i in range(out.size):
        out[i] = vals[i]


@njit(nogil=True, cache=True)
def fill(out, value):
    out[:] = value


def _int_values(vals) -> Launch:
    return Launch(fill_values, (np.asarray(vals, np.int64).reshape(-1),), inputs=())


def _shape_range(ctx: KernelContext) -> tuple[int, int]:
    r = len(ctx.inputs[0].shape)
    start, end = ctx.attr("start", 0), ctx.attr("end", r)
    start, end = start + r if start < 0 else start, end + r if end < 0 else end
    return min(max(start, 0), r), min(max(end, 0), r)


def _infer_shape(ctx: KernelContext) -> list[TensorSpec]:
    start, end = _shape_range(ctx)
    return [TensorSpec((max(end - start, 0),), np.int64)]


@register("Shape", infer=_infer_shape, engine=AICPU)
def _prepare_shape(ctx: KernelContext) -> Launch:
    start, end = _shape_range(ctx)
    return _int_values(ctx.inputs[0].shape[start:end])


@register("Size", infer=lambda ctx: [TensorSpec((), np.int64)], engine=AICPU)
def _prepare_size(ctx: KernelContext) -> Launch:
    return _int_values([ctx.inputs[0].size])


def _constant_value(ctx: KernelContext) -> np.ndarray:
    a = ctx.attrs
    if "value" in a:
        v = a["value"]
    elif "value_float" in a or "value_floats" in a:
        v = np.array(a.get("value_float", a.get("value_floats")), np.float32)
    elif "value_int" in a or "value_ints" in a:
        v = np.array(a.get("value_int", a.get("value_ints")), np.int64)
    else:
        raise ctx.error(f"unsupported value attribute(s) {sorted(a)} (sparse and string constants)")
    if not isinstance(v, np.ndarray) or v.dtype not in DTYPES:
        raise ctx.error(f"unsupported constant of type {getattr(v, 'dtype', type(v))}")
    return v


def _infer_constant(ctx: KernelContext) -> list[TensorSpec]:
    v = _constant_value(ctx)
    return [TensorSpec(v.shape, v.dtype)]


@register("Constant", infer=_infer_constant)
def _prepare_constant(ctx: KernelContext) -> Launch:
    v = _constant_value(ctx).reshape(-1)
    if v.dtype in HALF:
        v = v.view(np.uint16)  # its kernel sees the bits
    vals = v.astype(np.float64) if v.dtype.kind == "f" else v.astype(np.int64)  # exact for every dtype
    return Launch(fill_values, (vals,), inputs=())


def _fill_value(ctx: KernelContext) -> np.ndarray:
    v = ctx.attr("value")
    v = np.zeros(1, np.float32) if v is None else np.asarray(v).reshape(-1)
    if v.dtype not in DTYPES or v.size != 1:
        raise ctx.error(f"value must hold one element of a supported dtype, got {v.dtype}[{v.size}]")
    return v


def _infer_constant_of_shape(ctx: KernelContext) -> list[TensorSpec]:
    shape = int_values(ctx, 0)
    if min(shape, default=0) < 0:
        raise ctx.error(f"negative shape {shape}")
    return [TensorSpec(shape, _fill_value(ctx).dtype)]


@register("ConstantOfShape", infer=_infer_constant_of_shape, value_inputs=(0,), engine=AICPU)
def _prepare_constant_of_shape(ctx: KernelContext) -> Launch:
    v = _fill_value(ctx)
    return Launch(fill, (fill_scalar(v[0], v.dtype),), inputs=())


@njit(nogil=True, cache=True)
def arange(out, start, delta):
    for i in range(out.size):
        out[i] = start + i * delta


def _range_plan(ctx: KernelContext):
    dt = ctx.inputs[0].dtype
    start, limit, delta = (fill_scalar(np.asarray(ctx.value(i)).reshape(-1)[0], dt) for i in range(3))
    if delta == 0:
        raise ctx.error("delta cannot be 0")
    n = -((start - limit) // delta) if isinstance(delta, int) else math.ceil((limit - start) / delta)
    return start, delta, max(n, 0)


def _infer_range(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, DTYPES)
    return [TensorSpec((_range_plan(ctx)[2],), ctx.inputs[0].dtype)]


@register("Range", infer=_infer_range, value_inputs=(0, 1, 2), engine=AICPU)
def _prepare_range(ctx: KernelContext) -> Launch:
    start, delta, _ = _range_plan(ctx)
    return Launch(arange, (start, delta), inputs=())


@njit(nogil=True, cache=True)
def eye(out, rows, cols, k):
    out[:] = 0
    for i in range(max(0, -k), min(rows, cols - k)):
        out[i * cols + i + k] = 1


def _infer_eye_like(ctx: KernelContext) -> list[TensorSpec]:
    x = ctx.inputs[0]
    if len(x.shape) != 2:
        raise ctx.error(f"needs a 2-d input, got shape {x.shape}")
    dt = x.dtype if ctx.attr("dtype") is None else from_onnx(ctx.attr("dtype"), f"EyeLike node '{ctx.name}'")
    if dt not in DTYPES:
        raise ctx.error(f"unsupported output dtype {dt}")
    return [TensorSpec(x.shape, dt)]


@register("EyeLike", infer=_infer_eye_like)
def _prepare_eye_like(ctx: KernelContext) -> Launch:
    rows, cols = ctx.inputs[0].shape
    return Launch(eye, (rows, cols, int(ctx.attr("k", 0))), inputs=())


@njit(nogil=True, cache=True)
def one_hot(idx, values, out, depth, inner):
    """out[o, i, q] = values[1] where i == idx[o, q] (negative counts from the end), else values[0]."""
    out[:] = values[0]
    for t in range(idx.size):
        o, q = t // inner, t % inner
        i = np.int64(idx[t])
        if i < 0:
            i += depth
        if 0 <= i < depth:
            out[(o * depth + i) * inner + q] = values[1]


def _one_hot_plan(ctx: KernelContext):
    idx = ctx.inputs[0]
    depth = int_values(ctx, 1)[0]
    axis = normalize_axis(ctx, ctx.attr("axis", -1), len(idx.shape) + 1)
    if depth < 1 or ctx.inputs[2].shape not in ((2,), (1, 2)):
        raise ctx.error(f"needs depth >= 1 and 2 values, got {depth} and shape {ctx.inputs[2].shape}")
    return depth, axis


def _infer_one_hot(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(2, DTYPES)
    depth, axis = _one_hot_plan(ctx)
    shape = ctx.inputs[0].shape
    return [TensorSpec(shape[:axis] + (depth,) + shape[axis:], ctx.inputs[2].dtype)]


@register("OneHot", infer=_infer_one_hot, value_inputs=(1,), engine=AICPU)
def _prepare_one_hot(ctx: KernelContext) -> Launch:
    depth, axis = _one_hot_plan(ctx)
    return Launch(one_hot, (depth, math.prod(ctx.inputs[0].shape[axis:])), inputs=(0, 2))
