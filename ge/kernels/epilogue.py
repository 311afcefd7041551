"""The GEMM epilogue of Conv, ConvTranspose, Gemm and MatMul and their fused "ge" forms.

    y[off:off+n] = act(alpha * y + s + beta * v[voff:voff+n])

applied row by row right after the GEMM wrote the row (while it is still in cache), in ONE pass: `s` is
a per-row scalar (a conv bias, or a Gemm C broadcast along the row) and `v` an optional contiguous
vector (a fused residual Z, or a Gemm C row). The activation is picked by one switch per row, never
inside the loop (a switch there stops LLVM vectorizing): each kind has its own loop calling a small
jitted scalar function that LLVM inlines. (Passing the scalar function as an argument instead would
bake its address into the machine code, and Numba then refuses to cache the caller.)

Scalars (alpha, beta, bias, activation parameters) are cast to the output dtype once per row, so a
float32 epilogue stays float32 and vectorizes 8 wide.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .registry import KernelContext

NONE, RELU, LEAKY_RELU, CLIP, SIGMOID, HARD_SIGMOID, TANH, HARD_SWISH = range(8)
ACTIVATIONS = {"": NONE, "Relu": RELU, "LeakyRelu": LEAKY_RELU, "Clip": CLIP, "Sigmoid": SIGMOID,
               "HardSigmoid": HARD_SIGMOID, "Tanh": TANH, "HardSwish": HARD_SWISH}
# ONNX defaults of each activation's attributes, in activation_params order
_DEFAULT_PARAMS = {"LeakyRelu": [0.01], "Clip": [-np.inf, np.inf], "HardSigmoid": [0.2, 0.5]}


def activation_args(ctx: KernelContext) -> tuple[int, float, float]:
    """(code, p0, p1) from a fused node's `activation` and `activation_params` attributes."""
    name = ctx.attr("activation", "") or ""
    if name not in ACTIVATIONS:
        raise ctx.error(f"unsupported activation '{name}'; supported: {', '.join(a for a in ACTIVATIONS if a)}")
    params = list(ctx.attr("activation_params", []) or [])
    default = _DEFAULT_PARAMS.get(name, [])
    params = [float(p) for p in params[:len(default)]] + default[len(params):]
    params += [0.0] * (2 - len(params))
    return ACTIVATIONS[name], params[0], params[1]


# -- scalar activations f(v, a, b, lo, hi): a, b are parameters, lo, hi bounds, all in v's dtype ---------

@njit(nogil=True, cache=True)
def _identity(v, a, b, lo, hi):
    return v


@njit(nogil=True, cache=True)
def _relu(v, a, b, lo, hi):
    return max(v, lo)


@njit(nogil=True, cache=True)
def _leaky_relu(v, a, b, lo, hi):
    return v if v >= lo else v * a


@njit(nogil=True, cache=True)
def _clip(v, a, b, lo, hi):
    return min(max(v, lo), hi)


@njit(nogil=True, cache=True)
def _sigmoid(v, a, b, lo, hi):
    return hi / (hi + np.exp(-v))


@njit(nogil=True, cache=True)
def _hard_sigmoid(v, a, b, lo, hi):
    return min(max(a * v + b, lo), hi)


@njit(nogil=True, cache=True)
def _tanh(v, a, b, lo, hi):
    return np.tanh(v)


@njit(nogil=True, cache=True)
def _hard_swish(v, a, b, lo, hi):
    return v * min(max(a * v + b, lo), hi)


@njit(nogil=True, cache=True)
def epilogue(y, off, n, alpha, s, v, voff, beta, has_v, act, p0, p1):
    """y[off:off+n] = act(alpha*y + s + beta*v[voff:voff+n]), computed in y's dtype."""
    dt = y.dtype
    alpha, s, beta, a, b = dt.type(alpha), dt.type(s), dt.type(beta), dt.type(p0), dt.type(p1)
    lo, hi = dt.type(0), dt.type(1)
    if act == CLIP:
        lo, hi = a, b
    elif act == HARD_SWISH:
        a, b = dt.type(1 / 6), dt.type(0.5)
    if act == NONE and alpha == hi and s == lo and not has_v:
        return
    # one loop per (activation, has_v): the scalar helpers inline, so each loop vectorizes
    if act == NONE:
        if has_v:
            for i in range(n):
                y[off + i] = _identity(alpha * y[off + i] + s + beta * v[voff + i], a, b, lo, hi)
        else:
            for i in range(n):
                y[off + i] = _identity(alpha * y[off + i] + s, a, b, lo, hi)
    elif act == RELU:
        if has_v:
            for i in range(n):
                y[off + i] = _relu(alpha * y[off + i] + s + beta * v[voff + i], a, b, lo, hi)
        else:
            for i in range(n):
                y[off + i] = _relu(alpha * y[off + i] + s, a, b, lo, hi)
    elif act == LEAKY_RELU:
        if has_v:
            for i in range(n):
                y[off + i] = _leaky_relu(alpha * y[off + i] + s + beta * v[voff + i], a, b, lo, hi)
        else:
            for i in range(n):
                y[off + i] = _leaky_relu(alpha * y[off + i] + s, a, b, lo, hi)
    elif act == CLIP:
        if has_v:
            for i in range(n):
                y[off + i] = _clip(alpha * y[off + i] + s + beta * v[voff + i], a, b, lo, hi)
        else:
            for i in range(n):
                y[off + i] = _clip(alpha * y[off + i] + s, a, b, lo, hi)
    elif act == SIGMOID:
        if has_v:
            for i in range(n):
                y[off + i] = _sigmoid(alpha * y[off + i] + s + beta * v[voff + i], a, b, lo, hi)
        else:
            for i in range(n):
                y[off + i] = _sigmoid(alpha * y[off + i] + s, a, b, lo, hi)
    elif act == HARD_SIGMOID:
        if has_v:
            for i in range(n):
                y[off + i] = _hard_sigmoid(alpha * y[off + i] + s + beta * v[voff + i], a, b, lo, hi)
        else:
            for i in range(n):
                y[off + i] = _hard_sigmoid(alpha * y[off + i] + s, a, b, lo, hi)
    elif act == TANH:
        if has_v:
            for i in range(n):
                y[off + i] = _tanh(alpha * y[off + i] + s + beta * v[voff + i], a, b, lo, hi)
        else:
            for i in range(n):
                y[off + i] = _tanh(alpha * y[off + i] + s, a, b, lo, hi)
    else:  # HARD_SWISH
        if has_v:
            for i in range(n):
                y[off + i] = _hard_swish(alpha * y[off + i] + s + beta * v[voff + i], a, b, lo, hi)
        else:
            for i in range(n):
                y[off + i] = _hard_swish(alpha * y[off + i] + s, a, b, lo, hi)
