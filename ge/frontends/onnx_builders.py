"""ge's own ONNX functions for expanded ops whose schema defines none (onnx_functions.py binds them).

Each builder gets the node, its inputs' TypeProtos and the schema's attribute defaults, and returns a
FunctionProto over inputs i0, i1, ... and outputs o0, o1, ... in ops ge has kernels for:
- Momentum, Adagrad, Adam (ai.onnx.preview.training): the spec's update rules, elementwise, once per
  optimized tensor (the inputs are R, T, then the tensors' groups); constants in X's dtype, the step count
  T cast to it; `T > 0` picks the bias-corrected rates with Where (both sides stay finite).
- Binarizer, ArrayFeatureExtractor (ai.onnx.ml): Greater + Cast; Gather on the last axis (a 1-D X gives
  [1, k], as onnxruntime and the reference do).
- TensorScatter: ScatterElements along `axis` at write_indices[b] + s (mod the cache length if circular).
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..errors import ModelLoadError

OPSET = 17  # the default-domain ops used here all have this form since opset 13 or before


class _Function:
    def __init__(self, n, defaults):
        self.n, self.nodes, self.k = n, [], 0
        self.attrs = {**defaults, **{a.name: helper.get_attribute_value(a) for a in n.attribute}}

    def attr(self, name):
        v = self.attrs.get(name)
        if v is None:
            raise ModelLoadError(f"{self.n.op_type} node '{self.n.name or self.n.op_type}' lacks attribute '{name}'")
        return v.decode() if isinstance(v, bytes) else v

    def op(self, op_type, *inputs, out=None, **attrs) -> str:
        out = out or f"t{self.k}"
        self.k += 1
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], **attrs))
        return out

    def const(self, value, dtype) -> str:
        return self.op("Constant", value=numpy_helper.from_array(np.array(value, dtype)))

    def done(self, n_outputs) -> onnx.FunctionProto:
        return helper.make_function("ge", self.n.op_type, [f"i{k}" for k in range(len(self.n.input))],
                                    [f"o{k}" for k in range(n_outputs)], self.nodes,
                                    [helper.make_opsetid("", OPSET)])

    def error(self, msg) -> ModelLoadError:
        return ModelLoadError(f"{self.n.op_type} node '{self.n.name or self.n.op_type}': {msg}")


def _dtype(f: _Function, t: onnx.TypeProto, what: str) -> np.dtype:
    if not t.HasField("tensor_type") or not t.tensor_type.elem_type:
        raise f.error(f"the type of {what} is unknown (ge builds the op's function from it)")
    return np.dtype(helper.tensor_dtype_to_np_dtype(t.tensor_type.elem_type))


def _rank(f: _Function, t: onnx.TypeProto, what: str) -> int:
    if not t.tensor_type.HasField("shape"):
        raise f.error(f"the rank of {what} is unknown (ge builds the op's function from it)")
    return len(t.tensor_type.shape.dim)


def _groups(f: _Function, per: int) -> int:
    n = len(f.n.input) - 2
    if n <= 0 or n % per:
        raise f.error(f"takes R, T and {per} inputs per optimized tensor, got {len(f.n.input)} inputs")
    return n // per


def _optimizer(n, types, defaults, per: int, step) -> onnx.FunctionProto:
    f = _Function(n, defaults)
    k = _groups(f, per)
    dt = _dtype(f, types[2], "X")
    r = f.op("Cast", "i0", to=helper.np_dtype_to_tensor_dtype(dt))
    t = f.op("Cast", "i1", to=helper.np_dtype_to_tensor_dtype(dt))
    positive = f.op("Greater", "i1", f.const(0, np.int64))
    for j in range(k):
        outs = step(f, dt, r, t, positive, *[f"i{2 + j + g * k}" for g in range(per)])
        for g, o in enumerate(outs):  # outputs: every X_new, then every V_new (and H_new)
            f.op("Identity", o, out=f"o{j + g * k}")
    return f.done(k * (per - 1))


def _regularized(f, dt, x, g):
    return f.op("Add", f.op("Mul", f.const(f.attr("norm_coefficient"), dt), x), g)


def _momentum_step(f, dt, r, t, positive, x, g, v):
    g_reg = _regularized(f, dt, x, g)
    beta = f.op("Where", positive, f.const(f.attr("beta"), dt), f.const(1, dt))  # the first step takes all of g
    alpha = f.const(f.attr("alpha"), dt)
    v_new = f.op("Add", f.op("Mul", alpha, v), f.op("Mul", beta, g_reg))
    mode = f.attr("mode")
    if mode not in ("standard", "nesterov"):
        raise f.error(f"mode must be 'standard' or 'nesterov', got {mode!r}")
    step = v_new if mode == "standard" else f.op("Add", g_reg, f.op("Mul", alpha, v_new))
    return f.op("Sub", x, f.op("Mul", r, step)), v_new


def _adagrad_step(f, dt, r, t, positive, x, g, h):
    rate = f.op("Div", r, f.op("Add", f.const(1, dt), f.op("Mul", t, f.const(f.attr("decay_factor"), dt))))
    g_reg = _regularized(f, dt, x, g)
    h_new = f.op("Add", h, f.op("Mul", g_reg, g_reg))
    root = f.op("Add", f.op("Sqrt", h_new), f.const(f.attr("epsilon"), dt))
    return f.op("Sub", x, f.op("Div", f.op("Mul", rate, g_reg), root)), h_new


def _adam_step(f, dt, r, t, positive, x, g, v, h):
    alpha, beta = f.attr("alpha"), f.attr("beta")
    one = f.const(1, dt)
    g_reg = _regularized(f, dt, x, g)
    v_new = f.op("Add", f.op("Mul", f.const(alpha, dt), v), f.op("Mul", f.const(1 - alpha, dt), g_reg))
    h_new = f.op("Add", f.op("Mul", f.const(beta, dt), h), f.op("Mul", f.const(1 - beta, dt),
                                                                 f.op("Mul", g_reg, g_reg)))
    root = f.op("Add", f.op("Sqrt", h_new), f.const(f.attr("epsilon"), dt))
    # bias correction r * sqrt(1 - beta^t) / (1 - alpha^t) from the first step on (t = 0: r as it is)
    num = f.op("Sqrt", f.op("Sub", one, f.op("Pow", f.const(beta, dt), t)))
    den = f.op("Where", positive, f.op("Sub", one, f.op("Pow", f.const(alpha, dt), t)), one)
    rate = f.op("Where", positive, f.op("Div", f.op("Mul", r, num), den), r)
    x_new = f.op("Sub", x, f.op("Mul", rate, f.op("Div", v_new, root)))
    return f.op("Mul", f.const(1 - f.attr("norm_coefficient_post"), dt), x_new), v_new, h_new


def _binarizer(n, types, defaults) -> onnx.FunctionProto:
    f = _Function(n, defaults)
    dt = _dtype(f, types[0], "X")
    f.op("Cast", f.op("Greater", "i0", f.const(f.attr("threshold"), dt)), to=helper.np_dtype_to_tensor_dtype(dt),
         out="o0")
    return f.done(1)


def _array_feature_extractor(n, types, defaults) -> onnx.FunctionProto:
    f = _Function(n, defaults)
    rank = _rank(f, types[0], "X")
    flat = f.op("Reshape", "i1", f.const([-1], np.int64))
    if rank == 1:
        f.op("Reshape", f.op("Gather", "i0", flat, axis=0), f.const([1, -1], np.int64), out="o0")
    else:
        f.op("Gather", "i0", flat, axis=rank - 1, out="o0")
    return f.done(1)


def _tensor_scatter(n, types, defaults) -> onnx.FunctionProto:
    f = _Function(n, defaults)
    rank = _rank(f, types[0], "past_cache")
    axis = int(f.attr("axis"))
    if not -rank <= axis < rank or axis % rank == 0:
        raise f.error(f"axis {axis} must name a sequence axis after the batch axis (rank {rank})")
    axis %= rank
    mode = f.attr("mode")
    if mode not in ("linear", "circular"):
        raise f.error(f"mode must be 'linear' or 'circular', got {mode!r}")
    shape = f.op("Shape", "i1")
    length = f.op("Gather", shape, f.const(axis, np.int64), axis=0)
    steps = f.op("Range", f.const(0, np.int64), length, f.const(1, np.int64))
    at_axis = [1] * rank
    at_axis[axis] = -1
    idx = f.op("Reshape", steps, f.const(at_axis, np.int64))
    if len(n.input) > 2 and n.input[2]:
        idx = f.op("Add", idx, f.op("Reshape", "i2", f.const([-1] + [1] * (rank - 1), np.int64)))
    if mode == "circular":
        size = f.op("Gather", f.op("Shape", "i0"), f.const(axis, np.int64), axis=0)
        idx = f.op("Mod", idx, size)
    f.op("ScatterElements", "i0", f.op("Expand", idx, shape), "i1", axis=axis, out="o0")
    return f.done(1)


BUILDERS = {
    ("Momentum", "ai.onnx.preview.training"): lambda n, t, d: _optimizer(n, t, d, 3, _momentum_step),
    ("Adagrad", "ai.onnx.preview.training"): lambda n, t, d: _optimizer(n, t, d, 3, _adagrad_step),
    ("Adam", "ai.onnx.preview.training"): lambda n, t, d: _optimizer(n, t, d, 4, _adam_step),
    ("Binarizer", "ai.onnx.ml"): _binarizer,
    ("ArrayFeatureExtractor", "ai.onnx.ml"): _array_feature_extractor,
    ("TensorScatter", ""): _tensor_scatter,
}
