"""The TensorFlow op table, part 1: one converter per TF op, onto ge's ONNX-named ops (opset 17); the
converter contract is tensorflow_registry.py's. Part 2 (shapes, movement, resize): tensorflow_shape_ops.py.
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelLoadError
from ..ir.dtypes import to_onnx
from .tensorflow_builder import NCHW_TO_NHWC
from .tensorflow_graphdef import np_dtype, tensor_to_array
from .tensorflow_registry import tf_op

# -- sources and pass-throughs -------------------------------------------------------------------------

@tf_op("Const")
def _const(b):
    return b.graph.add_const(b.node.name, tensor_to_array(b.node.attr["value"].tensor,
                                                          f"Const node '{b.node.name}'"))


@tf_op("Identity", "StopGradient", "Snapshot", "PlaceholderWithDefault", "PreventGradient")
def _identity(b, x):
    return x


@tf_op("IdentityN")
def _identity_n(b, *xs):
    return list(xs)


@tf_op("NoOp")
def _noop(b, *_):
    return []


# -- NHWC convolution family ---------------------------------------------------------------------------

def _fmt(b) -> str:
    return b.attr("data_format", "NHWC")


def _spatial_attr(b, name, default=1):
    """A 4-entry NHWC/NCHW attribute (strides, dilations, ksize) -> its [h, w]."""
    v = b.attr(name) or [default] * 4
    return list(v[2:4]) if _fmt(b).startswith("NC") else list(v[1:3])


def _padding(b) -> dict:
    pad = b.attr("padding")
    if pad == "SAME":
        return {"auto_pad": "SAME_UPPER"}  # TF puts the odd pixel at the end, like SAME_UPPER
    if pad == "VALID":
        return {"pads": [0, 0, 0, 0]}
    if pad == "EXPLICIT":
        p = np.asarray(b.attr("explicit_paddings"), np.int64).reshape(4, 2)
        hw = p[2:4] if _fmt(b).startswith("NC") else p[1:3]
        return {"pads": [int(hw[0, 0]), int(hw[1, 0]), int(hw[0, 1]), int(hw[1, 1])]}
    raise ModelLoadError(f"node '{b.node.name}' ({b.node.op}): unsupported padding {pad!r}")


def _weight(b, w, perm, reshape=None):
    """A filter as an ONNX weight: transposed (and reshaped) at import when constant."""
    if w.const is not None:
        a = w.const.transpose(perm)
        return b.const(np.ascontiguousarray(a if reshape is None else a.reshape(reshape)))
    if reshape is not None:
        raise ModelLoadError(f"node '{b.node.name}' ({b.node.op}): the filter must be a constant")
    return b.op("Transpose", [w], {"perm": list(perm)})


@tf_op("Conv2D")
def _conv2d(b, x, w):
    attrs = {"strides": _spatial_attr(b, "strides"), "dilations": _spatial_attr(b, "dilations"), **_padding(b)}
    weight = _weight(b, w, (3, 2, 0, 1))  # HWIO -> OIHW
    return b.spatial(_fmt(b), x, lambda xc: b.op("Conv", [xc, weight], attrs))


@tf_op("DepthwiseConv2dNative")
def _depthwise(b, x, w):
    h, wd, c, m = b.value_of(w, "filter").shape
    weight = _weight(b, w, (2, 3, 0, 1), (c * m, 1, h, wd))  # HWCM -> (C*M, 1, H, W), group C
    attrs = {"strides": _spatial_attr(b, "strides"), "dilations": _spatial_attr(b, "dilations"),
             "group": int(c), **_padding(b)}
    return b.spatial(_fmt(b), x, lambda xc: b.op("Conv", [xc, weight], attrs))


@tf_op("Conv2DBackpropInput")
def _conv2d_transpose(b, sizes, w, dy):
    """The gradient of a Conv2D by its input (Keras Conv2DTranspose) as ConvTranspose: the forward conv's
    pads, and an output_padding that reaches TF's given input size."""
    n_hwc = [int(d) for d in b.value_of(sizes, "input_sizes")]
    hw = n_hwc[2:4] if _fmt(b).startswith("NC") else n_hwc[1:3]
    kh, kw = b.value_of(w, "filter").shape[:2]
    strides, dil = _spatial_attr(b, "strides"), _spatial_attr(b, "dilations")
    dy_shape = dy.shape or (None,) * 4
    dy_hw = dy_shape[2:4] if _fmt(b).startswith("NC") else dy_shape[1:3]
    if any(not isinstance(d, int) for d in dy_hw):
        raise ModelLoadError(f"node '{b.node.name}' (Conv2DBackpropInput): its gradient input needs a static "
                             "height and width")
    pad = _padding(b)
    begin, end = [0, 0], [0, 0]
    for i, (size, k, s, d) in enumerate(zip(hw, (kh, kw), strides, dil)):
        k_eff = (k - 1) * d + 1
        if "auto_pad" in pad:  # SAME: the forward conv's padding of an input of this size
            total = max((-(-size // s) - 1) * s + k_eff - size, 0)
            begin[i], end[i] = total // 2, total - total // 2
        elif "pads" in pad:
            begin[i], end[i] = pad["pads"][i], pad["pads"][i + 2]
    opad = [size - ((n - 1) * s + (k - 1) * d + 1 - p0 - p1)
            for size, n, k, s, d, p0, p1 in zip(hw, dy_hw, (kh, kw), strides, dil, begin, end)]
    attrs = {"strides": strides, "dilations": dil, "pads": begin + end, "output_padding": opad}
    weight = _weight(b, w, (3, 2, 0, 1))  # HWIO of the forward conv -> (C_in of ConvTranspose, C_out, H, W)
    return b.spatial(_fmt(b), dy, lambda dyc: b.op("ConvTranspose", [dyc, weight], attrs))


@tf_op("BiasAdd", "BiasAddV1")
def _bias_add(b, x, bias):
    if _fmt(b).startswith("NC"):
        rank = b.rank(x)
        bias = (b.const(bias.const.reshape((-1,) + (1,) * (rank - 2))) if bias.const is not None else
                b.op("Unsqueeze", [bias, b.int64(list(range(1, rank - 1)))]))
        return b.op("Add", [x, bias])
    return b.pointwise([x, bias], lambda p, q: b.op("Add", [p, q]))


@tf_op("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
def _fused_bn(b, x, scale, offset, mean, var, *_):
    if b.attr("is_training", False):
        raise ModelLoadError(f"node '{b.node.name}' ({b.node.op}) is in training mode; freeze the graph for "
                             "inference (is_training=False)")
    attrs = {"epsilon": float(b.attr("epsilon", 1e-4))}
    y = b.spatial(_fmt(b), x, lambda xc: b.op("BatchNormalization", [xc, scale, offset, mean, var], attrs))
    return [y]  # the batch statistics outputs are training-only


def _pool(onnx_op):
    def convert(b, x):
        attrs = {"kernel_shape": _spatial_attr(b, "ksize"), "strides": _spatial_attr(b, "strides"),
                 **_padding(b)}
        if onnx_op == "AveragePool":
            attrs["count_include_pad"] = 0  # TF's SAME average ignores the padding
        return b.spatial(_fmt(b), x, lambda xc: b.op(onnx_op, [xc], attrs))
    return convert


tf_op("MaxPool")(_pool("MaxPool"))
tf_op("AvgPool")(_pool("AveragePool"))


# -- elementwise ---------------------------------------------------------------------------------------

def _unary(*chain, **attrs):
    def convert(b, x):
        def run(v):
            for op in chain:
                v = b.op(op, [v], attrs)
            return v
        return b.pointwise([x], run)
    return convert


for _tf, _onnx in {"Relu": "Relu", "Sigmoid": "Sigmoid", "Tanh": "Tanh", "Elu": "Elu", "Exp": "Exp",
                   "Log": "Log", "Neg": "Neg", "Abs": "Abs", "Sqrt": "Sqrt", "Floor": "Floor", "Ceil": "Ceil",
                   "Softplus": "Softplus", "Softsign": "Softsign", "Erf": "Erf", "Reciprocal": "Reciprocal",
                   "Inv": "Reciprocal", "Selu": "Selu", "Sign": "Sign", "Round": "Round",
                   "LogicalNot": "Not"}.items():
    tf_op(_tf)(_unary(_onnx))
tf_op("Rsqrt")(_unary("Sqrt", "Reciprocal"))


@tf_op("LeakyRelu")
def _leaky_relu(b, x):
    alpha = float(b.attr("alpha", 0.2))
    return b.pointwise([x], lambda v: b.op("LeakyRelu", [v], {"alpha": alpha}))


@tf_op("Relu6")
def _relu6(b, x):
    lo, hi = b.const(np.array(0, x.dtype)), b.const(np.array(6, x.dtype))
    return b.pointwise([x], lambda v: b.op("Clip", [v, lo, hi]))


def _binary(onnx_op):
    return lambda b, x, y: b.pointwise([x, y], lambda p, q: b.op(onnx_op, [p, q]))


for _tf, _onnx in {"Add": "Add", "AddV2": "Add", "Sub": "Sub", "Mul": "Mul", "RealDiv": "Div", "Div": "Div",
                   "Maximum": "Max", "Minimum": "Min", "Pow": "Pow", "Greater": "Greater", "Less": "Less",
                   "Equal": "Equal", "GreaterEqual": "GreaterOrEqual", "LessEqual": "LessOrEqual",
                   "LogicalAnd": "And", "LogicalOr": "Or"}.items():
    tf_op(_tf)(_binary(_onnx))


@tf_op("ClipByValue")
def _clip_by_value(b, x, lo, hi):
    return b.pointwise([x, lo, hi], lambda v, p, q: b.op("Clip", [v, p, q]) if p.shape == () == q.shape else
                       b.op("Min", [b.op("Max", [v, p]), q]))


@tf_op("SelectV2", "Select")
def _select(b, cond, x, y):
    if b.node.op == "Select" and cond.shape is not None and x.shape is not None and len(cond.shape) == 1 \
            and len(x.shape) > 1:  # TF1 Select picks whole rows by a vector condition
        cond = b.op("Unsqueeze", [cond, b.int64(list(range(1, len(x.shape))))])
    return b.op("Where", [cond, x, y])


@tf_op("FloorMod")
def _floor_mod(b, x, y):
    return b.pointwise([x, y], lambda p, q: b.op("Mod", [p, q], {"fmod": 0}))


@tf_op("FloorDiv")
def _floor_div(b, x, y):
    if x.dtype is not None and x.dtype.kind != "f":
        raise ModelLoadError(f"node '{b.node.name}' (FloorDiv): only floating-point FloorDiv is supported")
    return b.pointwise([x, y], lambda p, q: b.op("Floor", [b.op("Div", [p, q])]))


@tf_op("Square")
def _square(b, x):
    return b.pointwise([x], lambda v: b.op("Mul", [v, v]))


@tf_op("SquaredDifference")
def _squared_difference(b, x, y):
    def run(p, q):
        d = b.op("Sub", [p, q])
        return b.op("Mul", [d, d])
    return b.pointwise([x, y], run)


@tf_op("AddN")
def _add_n(b, *xs):
    return xs[0] if len(xs) == 1 else b.pointwise(list(xs), lambda *vs: b.op("Sum", list(vs)))


@tf_op("Softmax", "LogSoftmax")
def _softmax(b, x):
    return b.op(b.node.op, [x], {"axis": -1})


# -- matrix products -----------------------------------------------------------------------------------

def _swap_last(b, v):
    rank = b.rank(v)
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    return b.const(np.ascontiguousarray(v.const.transpose(perm))) if v.const is not None else \
        b.op("Transpose", [v], {"perm": perm})


@tf_op("MatMul")
def _matmul(b, x, y):
    x = _swap_last(b, x) if b.attr("transpose_a", False) else x
    y = _swap_last(b, y) if b.attr("transpose_b", False) else y
    return b.op("MatMul", [x, y])


@tf_op("BatchMatMul", "BatchMatMulV2", "BatchMatMulV3")
def _batch_matmul(b, x, y):
    x = _swap_last(b, x) if b.attr("adj_x", False) else x
    y = _swap_last(b, y) if b.attr("adj_y", False) else y
    return b.op("MatMul", [x, y])


# -- reductions ----------------------------------------------------------------------------------------

def _reduce(onnx_op):
    def convert(b, x, axes):
        rank = b.rank(x)
        axes = sorted({int(a) % rank for a in np.asarray(b.value_of(axes, "axis")).reshape(-1)})
        keep = int(bool(b.attr("keep_dims", False)))
        src = b.in_nchw(x)
        if src is not None and rank == 4:
            moved = sorted(NCHW_TO_NHWC[a] for a in axes)
            kept = [NCHW_TO_NHWC[a] for a in range(4) if a not in axes]
            if keep:
                return b.nhwc(_reduce_node(b, onnx_op, src, moved, 1))
            if kept == sorted(kept):  # the remaining dims are in the same order in both layouts
                return _reduce_node(b, onnx_op, src, moved, 0)
        return _reduce_node(b, onnx_op, x, axes, keep)
    return convert


def _reduce_node(b, onnx_op, x, axes, keep):
    if not axes:
        return x
    if onnx_op == "ReduceSum":  # axes became an input at opset 13, for the others at 18
        return b.op(onnx_op, [x, b.int64(axes)], {"keepdims": keep})
    return b.op(onnx_op, [x], {"axes": axes, "keepdims": keep})


for _tf, _onnx in {"Mean": "ReduceMean", "Sum": "ReduceSum", "Max": "ReduceMax", "Min": "ReduceMin",
                   "Prod": "ReduceProd"}.items():
    tf_op(_tf)(_reduce(_onnx))


@tf_op("ArgMax", "ArgMin")
def _arg(b, x, axis):
    a = int(np.asarray(b.value_of(axis, "axis")).reshape(-1)[0])
    y = b.op(b.node.op, [x], {"axis": a, "keepdims": 0})
    out = np_dtype(b.attr("output_type", 9), f"node '{b.node.name}'")
    return y if out == np.int64 else b.op("Cast", [y], {"to": to_onnx(out)})
