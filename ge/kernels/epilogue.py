"""The GEMM epilogue of Conv, ConvTranspose, Gemm and MatMul and their fused "ge" forms.

    y[off:off+n] = act(alpha * y + s + beta * v[voff:voff+n])

applied row by row right after the GEMM wrote the row (while it is still in cache), in ONE pass: `s` is
a per-row scalar (a conv bias, or a Gemm C broadcast along the row) and `v` an optional contiguous
vector (a fused residual Z, or a Gemm C row).

What keeps every loop vectorized (each measured on float32):
- one loop per activation kind; the kind is switched per row, never inside the loop;
- unsigned offsets: Numba wraps negative signed indices, and that select in the loop stops SIMD (12x);
- error_model="numpy" where there is a division (the ZeroDivisionError test stops SIMD, 5x), and
  fastmath's float32 exp for Sigmoid and Tanh (libm's is one scalar call per element, 20x for Tanh);
- scalars cast to y's dtype once per row, so float32 math stays float32.
The activations are small jitted functions called by name, which LLVM inlines. (Passing one as an
argument instead bakes its address into the machine code, and Numba then refuses to cache the caller.)
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .fastmath import erfc, exp, exp_bounded, expm1
from .simd import vadd, vmax, vmin, vmul, vsplat
from .registry import KernelContext
from .specialize import by_type

NONE, RELU, LEAKY_RELU, CLIP, SIGMOID, HARD_SIGMOID, TANH, HARD_SWISH, SILU, GELU, GELU_TANH = range(11)
ACTIVATIONS = {"": NONE, "Relu": RELU, "LeakyRelu": LEAKY_RELU, "Clip": CLIP, "Sigmoid": SIGMOID,
               "HardSigmoid": HARD_SIGMOID, "Tanh": TANH, "HardSwish": HARD_SWISH, "Silu": SILU, "Gelu": GELU,
               "GeluTanh": GELU_TANH}   # ge::Gelu[approximate='tanh'] (GPT-2's MLP)
# ONNX defaults of each activation's attributes, in activation_params order
_DEFAULT_PARAMS = {"LeakyRelu": [0.01], "Clip": [-np.inf, np.inf], "HardSigmoid": [0.2, 0.5]}


def activation_args(ctx: KernelContext) -> tuple[int, float, float]:
    """(code, p0, p1) from a fused node's `activation` and `activation_params` attributes."""
    name = ctx.attr("activation", "") or ""
    if name not in ACTIVATIONS:
        known = ", ".join(a for a in ACTIVATIONS if a)
        raise ctx.error(f"unsupported activation '{name}'; supported: {known}")
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


@njit(nogil=True, cache=True, error_model="numpy")  # no ZeroDivisionError branch: it blocks SIMD
def _sigmoid(v, a, b, lo, hi):
    return hi / (hi + exp_bounded(-v))   # v < -86: 2e-39 or less, for 0


@njit(nogil=True, cache=True)
def _hard_sigmoid(v, a, b, lo, hi):
    return min(max(a * v + b, lo), hi)


@njit(nogil=True, cache=True, error_model="numpy")
def _tanh(v, a, b, lo, hi):
    e = expm1(b * min(max(v, -a), a))  # a = 9 (tanh is 1 in float32 past it), b = 2
    return e / (e + b)


@njit(nogil=True, cache=True)
def _hard_swish(v, a, b, lo, hi):
    return v * min(max(a * v + b, lo), hi)


@njit(nogil=True, cache=True, error_model="numpy")
def _silu(v, a, b, lo, hi):
    return v / (hi + exp_bounded(-v))   # v < -88: v / 2e38, for v * sigmoid(v)


@njit(nogil=True, cache=True, inline="always")   # erfc is too big for LLVM to inline: a call per element
def _gelu(v, a, b, lo, hi):
    return a * v * erfc(v * b)   # a = 0.5, b = -1/sqrt 2


@njit(nogil=True, cache=True, error_model="numpy")
def _gelu_tanh(v, a, b, lo, hi):
    # 0.5 v (1 + tanh z) = v * sigmoid(2z) (activation.py's form); a = sqrt(2/pi), b = 0.044715
    z = a * (v + b * v * v * v)
    return v / (hi + exp(type(v)(-2) * z))


# -- the same in registers, on a kernel's accumulator vectors (no pass over y): the same formulas, the same bits

@njit(nogil=True, cache=True, inline="always")
def in_registers(act, has_v):
    """Whether vfinish serves act (and no residual): the activations without exp or erf."""
    return not has_v and (act == NONE or act == RELU or act == CLIP or act == HARD_SIGMOID or act == HARD_SWISH)


@njit(nogil=True, cache=True, inline="always")
def vfinish_consts(y, act, p0, p1):
    """(c0, c1, lo, hi) for vfinish on vectors of y's dtype: the activation's splat parameters (HardSwish's
    1/6 and 0.5 in place of p0, p1), 0 and 1."""
    if act == HARD_SWISH:
        return vsplat(y, 1 / 6), vsplat(y, 0.5), vsplat(y, 0.0), vsplat(y, 1.0)
    return vsplat(y, p0), vsplat(y, p1), vsplat(y, 0.0), vsplat(y, 1.0)


@njit(nogil=True, cache=True, inline="always")
def vfinish(v, bias, act, c0, c1, lo, hi):
    """bias + act on a vector: c0, c1 the splat parameters (HardSwish: 1/6, 0.5), lo, hi splat 0 and 1."""
    v = vadd(v, bias)
    if act == RELU:
        v = vmax(v, lo)
    elif act == CLIP:
        v = vmin(vmax(v, c0), c1)
    elif act == HARD_SIGMOID:
        v = vmin(vmax(vadd(vmul(c0, v), c1), lo), hi)
    elif act == HARD_SWISH:
        v = vmul(v, vmin(vmax(vadd(vmul(c0, v), c1), lo), hi))
    return v


@njit(nogil=True, cache=True, inline="always")
def vclamp(v, bias, act, c0, c1, lo):
    """vfinish for NONE, RELU and CLIP only (act one of them): less code where it is inlined many times
    (IMPLICIT's tiles: all four activations there compiled 10 s longer)."""
    v = vadd(v, bias)
    if act == RELU:
        v = vmax(v, lo)
    elif act == CLIP:
        v = vmin(vmax(v, c0), c1)
    return v


@by_type
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
    elif act == TANH:
        a, b = dt.type(9), dt.type(2)
    elif act == GELU:
        a, b = dt.type(0.5), dt.type(-0.7071067811865476)
    elif act == GELU_TANH:
        a, b = dt.type(0.7978845608028654), dt.type(0.044715)
    if act == NONE and alpha == hi and s == lo and not has_v:
        return
    o, vo, un = np.uint64(off), np.uint64(voff), np.uint64(n)
    # one loop per (activation, has_v)
    if act == NONE:
        if has_v:
            for i in range(un):
                y[o + i] = _identity(alpha * y[o + i] + s + beta * v[vo + i], a, b, lo, hi)
        else:
            for i in range(un):
                y[o + i] = _identity(alpha * y[o + i] + s, a, b, lo, hi)
    elif act == RELU:
        if has_v:
            for i in range(un):
                y[o + i] = _relu(alpha * y[o + i] + s + beta * v[vo + i], a, b, lo, hi)
        else:
            for i in range(un):
                y[o + i] = _relu(alpha * y[o + i] + s, a, b, lo, hi)
    elif act == LEAKY_RELU:
        if has_v:
            for i in range(un):
                y[o + i] = _leaky_relu(alpha * y[o + i] + s + beta * v[vo + i], a, b, lo, hi)
        else:
            for i in range(un):
                y[o + i] = _leaky_relu(alpha * y[o + i] + s, a, b, lo, hi)
    elif act == CLIP:
        if has_v:
            for i in range(un):
                y[o + i] = _clip(alpha * y[o + i] + s + beta * v[vo + i], a, b, lo, hi)
        else:
            for i in range(un):
                y[o + i] = _clip(alpha * y[o + i] + s, a, b, lo, hi)
    elif act == SIGMOID:
        if has_v:
            for i in range(un):
                y[o + i] = _sigmoid(alpha * y[o + i] + s + beta * v[vo + i], a, b, lo, hi)
        else:
            for i in range(un):
                y[o + i] = _sigmoid(alpha * y[o + i] + s, a, b, lo, hi)
    elif act == HARD_SIGMOID:
        if has_v:
            for i in range(un):
                y[o + i] = _hard_sigmoid(alpha * y[o + i] + s + beta * v[vo + i], a, b, lo, hi)
        else:
            for i in range(un):
                y[o + i] = _hard_sigmoid(alpha * y[o + i] + s, a, b, lo, hi)
    elif act == TANH:
        if has_v:
            for i in range(un):
                y[o + i] = _tanh(alpha * y[o + i] + s + beta * v[vo + i], a, b, lo, hi)
        else:
            for i in range(un):
                y[o + i] = _tanh(alpha * y[o + i] + s, a, b, lo, hi)
    elif act == SILU:
        if has_v:
            for i in range(un):
                y[o + i] = _silu(alpha * y[o + i] + s + beta * v[vo + i], a, b, lo, hi)
        else:
            for i in range(un):
                y[o + i] = _silu(alpha * y[o + i] + s, a, b, lo, hi)
    elif act == GELU:
        if has_v:
            for i in range(un):
                y[o + i] = _gelu(alpha * y[o + i] + s + beta * v[vo + i], a, b, lo, hi)
        else:
            for i in range(un):
                y[o + i] = _gelu(alpha * y[o + i] + s, a, b, lo, hi)
    elif act == GELU_TANH:
        if has_v:
            for i in range(un):
                y[o + i] = _gelu_tanh(alpha * y[o + i] + s + beta * v[vo + i], a, b, lo, hi)
        else:
            for i in range(un):
                y[o + i] = _gelu_tanh(alpha * y[o + i] + s, a, b, lo, hi)
    else:  # HARD_SWISH
        if has_v:
            for i in range(un):
                y[o + i] = _hard_swish(alpha * y[o + i] + s + beta * v[vo + i], a, b, lo, hi)
        else:
            for i in range(un):
                y[o + i] = _hard_swish(alpha * y[o + i] + s, a, b, lo, hi)
