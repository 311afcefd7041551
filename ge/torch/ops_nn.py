"""ATen converters, part 1: convolutions, normalizations, pooling, matrix products, softmax, embedding,
activations. The contract is registry.py's; every attribute is checked against what the ONNX-named ge op
computes, and anything else is `Unsupported` (the node stays in PyTorch)."""
from __future__ import annotations

import numpy as np

from .registry import Unsupported, converter


def _pair(v, n: int) -> list[int]:
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return v * n if len(v) == 1 else v


# -- convolution ---------------------------------------------------------------------------------------

@converter("aten.convolution.default")
def convolution(b, x, w, bias, stride, padding, dilation, transposed, output_padding, groups):
    n = b.rank(x) - 2
    if n == 1:
        return _conv1d(b, x, w, bias, stride, padding, dilation, transposed, output_padding, groups)
    if n != 2:
        raise Unsupported(f"a {n}-D convolution (ge's Conv kernels are 2-D)")
    pads = _pair(padding, n)
    attrs = {"strides": _pair(stride, n), "dilations": _pair(dilation, n), "pads": pads + pads,
             "group": int(groups)}
    ins = [x, w] + ([bias] if bias is not None else [])
    if transposed:   # torch's and ONNX's ConvTranspose weights are both (C_in, C_out / group, kH, kW)
        return b.op("ConvTranspose", ins, {**attrs, "output_padding": _pair(output_padding, n)})
    return b.op("Conv", ins, attrs)


def _conv1d(b, x, w, bias, stride, padding, dilation, transposed, output_padding, groups):
    """A 1-D convolution as a 2-D one over (N, C, 1, L): a height of one, the 1-D window along the width."""
    s, d = ([1] + _pair(v, 1) for v in (stride, dilation))
    p, op = ([0] + _pair(v, 1) for v in (padding, output_padding))
    x2, w2 = (_height_one(b, v) for v in (x, w))
    y = convolution(b, x2, w2, bias, s, p, d, transposed, op, groups)
    return b.op("Squeeze", [y, b.int64([2])])


def _height_one(b, v):
    out = b.op("Unsqueeze", [v, b.int64([2])])
    out.dtype, out.shape = v.dtype, (*v.shape[:2], 1, *v.shape[2:])
    return out


# -- normalization -------------------------------------------------------------------------------------

def _channel_param(b, v, channels: int, fill: float, dtype):
    return v if v is not None else b.const(np.full(channels, fill, dtype))


@converter("aten._native_batch_norm_legit_no_training.default")
def batch_norm(b, x, weight, bias, mean, var, momentum, eps):
    """Inference batch norm: the running statistics; the saved mean / rstd outputs are empty in torch and not
    produced (a reader of them is refused at getitem)."""
    c, dt = x.shape[1], x.dtype
    ins = [x, _channel_param(b, weight, c, 1.0, dt), _channel_param(b, bias, c, 0.0, dt), mean, var]
    return [b.op("BatchNormalization", ins, {"epsilon": float(eps)}), None, None]


@converter("aten.native_layer_norm.default")
def layer_norm(b, x, normalized_shape, weight, bias, eps):
    """LayerNormalization over the last len(normalized_shape) axes; mean and rstd are not produced."""
    k, size = len(normalized_shape), int(np.prod(normalized_shape))
    if k > 1 and (weight is not None or bias is not None):
        raise Unsupported("a layer norm over several axes with affine parameters")
    ins = [x, _channel_param(b, weight, size, 1.0, x.dtype)]
    if k > 1:
        ins[1] = b.const(np.ones(tuple(normalized_shape), x.dtype))
    if bias is not None:
        ins.append(bias)
    return [b.op("LayerNormalization", ins, {"axis": -k, "epsilon": float(eps)}), None, None]


@converter("aten.native_group_norm.default")
def group_norm(b, x, weight, bias, n, c, hw, group, eps):
    """GroupNormalization as a layer norm over (N, group, C / group * HxW), then the per-channel affine
    (opset 17 has no GroupNormalization); mean and rstd are not produced."""
    ones = b.const(np.ones(c // group * hw, x.dtype))
    y = b.op("LayerNormalization", [b.op("Reshape", [x, b.int64([n, group, -1])]), ones],
             {"axis": -1, "epsilon": float(eps)})
    y = b.op("Reshape", [y, b.int64(x.shape)])
    per_channel = b.int64([c] + [1] * (len(x.shape) - 2))
    if weight is not None:
        y = b.op("Mul", [y, b.op("Reshape", [weight, per_channel])])
    if bias is not None:
        y = b.op("Add", [y, b.op("Reshape", [bias, per_channel])])
    return [y, None, None]


# -- pooling -------------------------------------------------------------------------------------------

def _pool_attrs(b, x, kernel, stride, padding, dilation, ceil_mode) -> dict:
    if b.rank(x) != 4:
        raise Unsupported("pooling of a tensor that is not N, C, H, W")
    k = _pair(kernel, 2)
    s = _pair(stride, 2) if stride else k
    p, d = _pair(padding, 2), _pair(dilation, 2)
    # ONNX sizes ceil-mode windows without torch's "start inside the input" rule: the shapes must agree
    want = b.out_shape[2:] if not isinstance(b.val, (tuple, list)) else tuple(b.val[0].shape[2:])
    onnx = tuple((-(-(sz + 2 * pp - dd * (kk - 1) - 1) // ss) if ceil_mode else
                  (sz + 2 * pp - dd * (kk - 1) - 1) // ss) + 1 for sz, kk, ss, pp, dd in zip(x.shape[2:], k, s, p, d))
    if onnx != tuple(want):
        raise Unsupported(f"ceil_mode windows: ONNX pooling gives {onnx}, torch {tuple(want)}")
    attrs = {"kernel_shape": k, "strides": s, "pads": p + p, "ceil_mode": int(bool(ceil_mode))}
    if any(dd != 1 for dd in d):
        attrs["dilations"] = d
    return attrs


@converter("aten.max_pool2d_with_indices.default")
def max_pool2d_with_indices(b, x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False):
    return [b.op("MaxPool", [x], _pool_attrs(b, x, kernel, stride, padding, dilation, ceil_mode)), None]


@converter("aten.max_pool2d.default")
def max_pool2d(b, x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False):
    return b.op("MaxPool", [x], _pool_attrs(b, x, kernel, stride, padding, dilation, ceil_mode))


@converter("aten.avg_pool2d.default")
def avg_pool2d(b, x, kernel, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    if divisor_override is not None:
        raise Unsupported("avg_pool2d with divisor_override")
    attrs = _pool_attrs(b, x, kernel, stride, padding, 1, ceil_mode)
    return b.op("AveragePool", [x], {**attrs, "count_include_pad": int(bool(count_include_pad))})


@converter("aten._adaptive_avg_pool2d.default", "aten.adaptive_avg_pool2d.default")
def adaptive_avg_pool2d(b, x, output_size):
    if b.rank(x) != 4:
        raise Unsupported("adaptive pooling of a tensor that is not N, C, H, W")
    h, w = x.shape[2:]
    oh, ow = _pair(output_size, 2)
    if (oh, ow) == (1, 1):
        return b.op("GlobalAveragePool", [x])
    if h % oh or w % ow:   # torch's windows then overlap unevenly: no ONNX pool computes them
        raise Unsupported(f"adaptive pooling of {h}x{w} to {oh}x{ow} (not a whole multiple)")
    k = [h // oh, w // ow]
    return b.op("AveragePool", [x], {"kernel_shape": k, "strides": k})


# -- matrix products -----------------------------------------------------------------------------------

@converter("aten.addmm.default")
def addmm(b, bias, m1, m2, beta=1, alpha=1):
    return b.op("Gemm", [m1, m2, b.tensor(bias, b.out_dtype)], {"alpha": float(alpha), "beta": float(beta)})


@converter("aten.mm.default", "aten.bmm.default", "aten.matmul.default")
def matmul(b, x, y):
    if x.dtype.kind != "f":
        raise Unsupported(f"an integer ({x.dtype}) matrix product")
    return b.op("MatMul", [x, y])


# -- softmax -------------------------------------------------------------------------------------------

@converter("aten._softmax.default", "aten._log_softmax.default")
def softmax(b, x, dim, half_to_float):
    if half_to_float:
        raise Unsupported("softmax with half_to_float")
    op = "LogSoftmax" if "log" in str(b.node.target) else "Softmax"
    return b.op(op, [x], {"axis": int(dim)})


@converter("aten.embedding.default")
def embedding(b, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """Rows of the table (padding_idx only matters to the gradient)."""
    return b.op("Gather", [weight, b.cast(indices, np.int64)], {"axis": 0})


# -- activations ---------------------------------------------------------------------------------------

_UNARY = {"aten.relu.default": "Relu", "aten.sigmoid.default": "Sigmoid", "aten.tanh.default": "Tanh",
          "aten.exp.default": "Exp", "aten.log.default": "Log", "aten.sqrt.default": "Sqrt",
          "aten.neg.default": "Neg", "aten.abs.default": "Abs", "aten.reciprocal.default": "Reciprocal",
          "aten.erf.default": "Erf", "aten.sin.default": "Sin", "aten.cos.default": "Cos",
          "aten.floor.default": "Floor", "aten.ceil.default": "Ceil", "aten.round.default": "Round",
          "aten.sign.default": "Sign", "aten.hardswish.default": "HardSwish", "aten.logical_not.default": "Not"}


def _unary(b, x):
    op = _UNARY[str(b.node.target)]
    if op not in ("Neg", "Abs", "Sign", "Relu", "Not") and x.dtype.kind != "f":
        x = b.cast(x, b.out_dtype)   # torch computes exp(int) etc. in the default float dtype
    return b.op(op, [x])


for _name in _UNARY:
    converter(_name)(_unary)


@converter("aten.rsqrt.default")
def rsqrt(b, x):
    return b.op("Reciprocal", [b.op("Sqrt", [b.cast(x, b.out_dtype)])])


@converter("aten.silu.default")
def silu(b, x):
    return b.op("Silu", [x], domain="ge")


@converter("aten.gelu.default")
def gelu(b, x, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise Unsupported(f"gelu approximate={approximate!r}")
    return b.op("Gelu", [x], {"approximate": approximate}, domain="ge")


@converter("aten.hardsigmoid.default")
def hardsigmoid(b, x):
    return b.op("HardSigmoid", [x], {"alpha": 1.0 / 6.0, "beta": 0.5})


@converter("aten.leaky_relu.default")
def leaky_relu(b, x, negative_slope=0.01):
    return b.op("LeakyRelu", [x], {"alpha": float(negative_slope)})


@converter("aten.elu.default")
def elu(b, x, alpha=1.0, scale=1.0, input_scale=1.0):
    if scale != 1 or input_scale != 1:
        raise Unsupported("elu with scale or input_scale (selu-like)")
    return b.op("Elu", [x], {"alpha": float(alpha)})


@converter("aten.hardtanh.default", "aten.clamp.default")
def clamp(b, x, lo=None, hi=None):
    """Clip; hardtanh's defaults are -1 and 1 (ReLU6 is hardtanh(0, 6))."""
    if "hardtanh" in str(b.node.target):
        lo, hi = (-1.0 if lo is None else lo), (1.0 if hi is None else hi)
    dt = b.out_dtype
    ins = [b.cast(x, dt)] + [None if v is None else b.const(np.asarray(v, dt)) for v in (lo, hi)]
    while ins[-1] is None:
        ins.pop()
    return b.op("Clip", ins)
