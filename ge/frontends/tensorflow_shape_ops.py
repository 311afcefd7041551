"""TensorFlow op table, part 2: shapes, data movement, indexing and resize (see tensorflow_ops.py)."""
from __future__ import annotations

import numpy as np

from ..errors import ModelLoadError
from ..ir.dtypes import to_onnx
from .tensorflow_graphdef import np_dtype
from .tensorflow_registry import INT64_MAX, tf_op


# -- shapes and data movement --------------------------------------------------------------------------

@tf_op("Pad", "PadV2", "MirrorPad")
def _pad(b, x, paddings, value=None):
    p = np.asarray(b.value_of(paddings, "paddings"), np.int64).reshape(-1, 2)
    attrs = {}
    if b.node.op == "MirrorPad":
        if b.attr("mode") != "REFLECT":
            raise ModelLoadError(f"node '{b.node.name}' (MirrorPad): only mode REFLECT is supported")
        attrs["mode"] = "reflect"
    extra = [] if value is None else [value]
    src = b.in_nchw(x)
    if src is not None and len(p) == 4:
        q = p[[0, 3, 1, 2]]
        return b.nhwc(b.op("Pad", [src, b.int64(np.concatenate([q[:, 0], q[:, 1]]))] + extra, attrs))
    return b.op("Pad", [x, b.int64(np.concatenate([p[:, 0], p[:, 1]]))] + extra, attrs)


@tf_op("ConcatV2", "Concat")
def _concat(b, *args):
    if b.node.op == "Concat":
        axis, xs = args[0], list(args[1:])
    else:
        axis, xs = args[-1], list(args[:-1])
    a = int(b.value_of(axis, "axis"))
    srcs = [b.in_nchw(x) for x in xs]
    if all(s is not None for s in srcs) and all(x.shape is not None and len(x.shape) == 4 for x in xs):
        return b.nhwc(b.op("Concat", srcs, {"axis": [0, 2, 3, 1][a % 4]}))
    return b.op("Concat", xs, {"axis": a})


@tf_op("Split")
def _split(b, axis, x):
    n = int(b.attr("num_split"))
    return list(b.op("Split", [x], {"axis": int(b.value_of(axis, "axis"))}, outputs=n)) \
        if n > 1 else [x]


@tf_op("SplitV")
def _split_v(b, x, sizes, axis):
    a = int(b.value_of(axis, "axis"))
    sizes = np.asarray(b.value_of(sizes, "size_splits"), np.int64).copy()
    if (sizes < 0).any():
        sizes[sizes < 0] = b.graph_dim(x, a) - sizes[sizes >= 0].sum()
    n = len(sizes)
    return list(b.op("Split", [x, b.int64(sizes)], {"axis": a}, outputs=n)) if n > 1 else [x]


@tf_op("Unpack")
def _unpack(b, x):
    axis, n = int(b.attr("axis", 0)), int(b.attr("num"))
    parts = b.op("Split", [x, b.int64([1] * n)], {"axis": axis}, outputs=n) if n > 1 else [x]
    return [b.op("Squeeze", [p, b.int64([axis])]) for p in parts]


@tf_op("Reshape")
def _reshape(b, x, shape):
    return b.op("Reshape", [x, b.as_int64(shape)])


@tf_op("Squeeze")
def _squeeze(b, x):
    axes = b.attr("squeeze_dims") or []
    return b.op("Squeeze", [x, b.int64(axes)] if axes else [x])


@tf_op("ExpandDims")
def _expand_dims(b, x, axis):
    return b.op("Unsqueeze", [x, b.int64(np.asarray(b.value_of(axis, "axis")).reshape(-1))])


@tf_op("Transpose")
def _transpose(b, x, perm):
    return b.op("Transpose", [x], {"perm": [int(p) for p in b.value_of(perm, "perm")]})


@tf_op("Shape")
def _shape(b, x):
    out = np_dtype(b.attr("out_type", 3), f"node '{b.node.name}'")
    s = b.op("Shape", [x])
    return s if out == np.int64 else b.op("Cast", [s], {"to": to_onnx(out)})


@tf_op("Size")
def _size(b, x):
    out = np_dtype(b.attr("out_type", 3), f"node '{b.node.name}'")
    s = b.op("Size", [x])
    return s if out == np.int64 else b.op("Cast", [s], {"to": to_onnx(out)})


@tf_op("Cast")
def _cast(b, x):
    return b.op("Cast", [x], {"to": to_onnx(np_dtype(b.attr("DstT"), f"node '{b.node.name}'"))})


@tf_op("Pack")
def _pack(b, *xs):
    axis = int(b.attr("axis", 0))  # Unsqueeze and Concat count a negative axis from the output's end too
    parts = [b.op("Unsqueeze", [x, b.int64([axis])]) for x in xs]
    return parts[0] if len(parts) == 1 else b.op("Concat", parts, {"axis": axis})


@tf_op("GatherV2", "Gather")
def _gather(b, params, indices, axis=None):
    if int(b.attr("batch_dims", 0)) != 0:
        raise ModelLoadError(f"node '{b.node.name}' ({b.node.op}): batch_dims != 0 is not supported")
    a = 0 if axis is None else int(np.asarray(b.value_of(axis, "axis")).reshape(-1)[0])
    return b.op("Gather", [params, indices], {"axis": a})


@tf_op("Fill")
def _fill(b, dims, value):
    if dims.const is not None and value.const is not None:
        return b.const(np.full(dims.const, value.const, value.const.dtype))
    return b.op("Expand", [value, b.as_int64(dims)])


@tf_op("Range")
def _range(b, start, limit, delta):
    return b.op("Range", [start, limit, delta])


@tf_op("Tile")
def _tile(b, x, multiples):
    return b.op("Tile", [x, b.as_int64(multiples)])


@tf_op("Slice")
def _slice(b, x, begin, size):
    start = np.asarray(b.value_of(begin, "begin"), np.int64)
    size = np.asarray(b.value_of(size, "size"), np.int64)
    end = np.where(size < 0, INT64_MAX, start + size)
    return b.op("Slice", [x, b.int64(start), b.int64(end), b.int64(np.arange(len(start)))])


@tf_op("StridedSlice")
def _strided_slice(b, x, begin, end, strides):
    """The sparse slice spec -> Slice over the input dims, Squeeze of shrunk dims, Unsqueeze of new axes."""
    bg, en, st = (np.asarray(b.value_of(v, what), np.int64).reshape(-1)
                  for v, what in ((begin, "begin"), (end, "end"), (strides, "strides")))
    mask = {m: int(b.attr(f"{m}_mask", 0)) for m in ("begin", "end", "ellipsis", "new_axis", "shrink_axis")}
    bit = lambda m, i: bool(mask[m] >> i & 1)  # noqa: E731
    consumed = sum(1 for i in range(len(bg)) if not bit("new_axis", i) and not bit("ellipsis", i))
    axis = out = 0
    starts, ends, axes, steps, shrink, new = [], [], [], [], [], []
    for i in range(len(bg)):
        if bit("ellipsis", i):
            k = b.rank(x) - consumed
            axis, out = axis + k, out + k
        elif bit("new_axis", i):
            new.append(out)
            out += 1
        elif bit("shrink_axis", i):
            starts.append(bg[i])
            ends.append(INT64_MAX if bg[i] == -1 else bg[i] + 1)
            axes.append(axis), steps.append(1), shrink.append(axis)
            axis += 1
        else:
            s = int(st[i])
            starts.append((0 if s > 0 else INT64_MAX) if bit("begin", i) else bg[i])
            ends.append((INT64_MAX if s > 0 else -INT64_MAX) if bit("end", i) else en[i])
            axes.append(axis), steps.append(s)
            axis, out = axis + 1, out + 1
    full = [k for k in range(len(axes)) if starts[k] == 0 and ends[k] == INT64_MAX and steps[k] == 1]
    keep = [k for k in range(len(axes)) if k not in full]
    y = x
    if keep:
        y = b.op("Slice", [y] + [b.int64([lst[k] for k in keep]) for lst in (starts, ends, axes, steps)])
    if shrink:
        y = b.op("Squeeze", [y, b.int64(shrink)])
    if new:
        y = b.op("Unsqueeze", [y, b.int64(new)])
    return y if y is not x else b.op("Identity", [x])


# -- resize --------------------------------------------------------------------------------------------

def _resize(mode):
    def convert(b, x, size):
        hw = np.asarray(b.value_of(size, "size"), np.int64).reshape(2)
        align, half = bool(b.attr("align_corners", False)), bool(b.attr("half_pixel_centers", False))
        coord = "align_corners" if align else "half_pixel" if half else "asymmetric"
        attrs = {"mode": mode, "coordinate_transformation_mode": coord}
        if mode == "nearest":  # TF rounds half up with align_corners/half_pixel, floors otherwise
            attrs["nearest_mode"] = "round_prefer_ceil" if (align or half) else "floor"

        def run(xc):
            if xc.shape is not None and all(isinstance(d, int) for d in xc.shape[:2]):
                sizes = b.int64(list(xc.shape[:2]) + list(hw))
            else:
                nc = b.op("Slice", [b.op("Shape", [xc]), b.int64([0]), b.int64([2])])
                sizes = b.op("Concat", [nc, b.int64(hw)], {"axis": 0})
            y = b.op("Resize", [xc, None, None, sizes], attrs)
            if y.shape is None and xc.shape is not None:  # sizes known at run time only: N, C follow x
                y.dtype, y.shape = xc.dtype, tuple(xc.shape[:2]) + tuple(int(d) for d in hw)
            return y
        return b.spatial("NHWC", x, run)
    return convert


tf_op("ResizeBilinear")(_resize("linear"))
tf_op("ResizeNearestNeighbor")(_resize("nearest"))
