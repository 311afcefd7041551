"""Unary elementwise kernels: math, rounding, Relu/Neg/Abs/Sign, IsNaN/IsInf, Not and Clip.

A kernel is one flat loop over the tensor (broadcast.map1, written once for any scalar function f(v, p, q));
a family kernel picks f by op code outside the loop (an op switch inside the loop stops LLVM vectorizing,
measured 60x). Families group ops by the dtypes they accept, so a dtype only compiles what it can run:
  math_float  exp, log, sqrt, reciprocal, erf, rounding: the common float math
  trig        the trigonometric and hyperbolic functions, rarely used
  numeric     Relu, Neg, Abs, Sign on every numeric dtype
Constants are made in the input's dtype (`type(v)(1)`) so float32 stays float32 (a Python literal would
promote to float64). Scalar functions are plain @njit, which LLVM inlines into both of map1's loops;
inline="always" would have Numba type each copy again, doubling compile time (activation kernel float32:
6.3 s -> 2.9 s, measured). Only those too big for LLVM's inliner stay inline="always" (erf, softplus): a
call per element stops vectorization (10-20x). Activations live in activation.py, binary ops in
binary.py, Cast in cast.py; exp, log and erf for float32 in fastmath.py.

Blocks (AI cores): every kernel here is tiled; block b maps its contiguous slice of the tensor
(broadcast.part: ends on multiples of blocks.G = 64 elements, so vector loops and remainders cover the
same elements). A launch gets a second block once it holds 2 x blocks.MIN_BLOCK_NS of work at the ns per
element below: Relu ~250K float32 elements, Exp ~70K, Sin ~6K. Measured, 1x64x112x112 float32, one
thread vs 2 blocks on 2 threads: Relu 270 -> 207 us (memory bound), Exp 631 -> 438 us.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..ir.dtypes import HALF
from .blocks import flat_launch
from .broadcast import map1 as _map
from .broadcast import part as _part
from .cast import copy_launch
from .fastmath import erf, exp, log
from .half import native16
from .registry import KernelContext, TensorSpec, register, same_as_input
from .vector_half import relu_launch

F = tuple(np.dtype(t) for t in ("float32", "float64"))
I = tuple(np.dtype(t) for t in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"))
BOOL = np.dtype(np.bool_)


# -- float math -------------------------------------------------------------------------------------

@njit
def _exp(v, p, q):
    return exp(v)


@njit
def _log(v, p, q):
    return log(v)


@njit
def _sqrt(v, p, q):
    return math.sqrt(v)


@njit
def _reciprocal(v, p, q):
    return type(v)(1) / v


@njit(inline="always")  # erf is past LLVM's inlining threshold: a call per element
def _erf(v, p, q):
    return erf(v)


@njit
def _floor(v, p, q):
    return np.floor(v)


@njit
def _ceil(v, p, q):
    return np.ceil(v)


@njit
def _round(v, p, q):
    return np.rint(v)  # halves to even, as numpy.round


EXP, LOG, SQRT, RECIPROCAL, ERF, FLOOR, CEIL, ROUND = range(8)


@njit(nogil=True, cache=True, error_model="numpy")
def math_float(x, out, op, block_idx, block_dim):
    x, out = _part(x, out, block_idx, block_dim)
    if op == EXP:
        _map(_exp, x, out, 0, 0)
    elif op == LOG:
        _map(_log, x, out, 0, 0)
    elif op == SQRT:
        _map(_sqrt, x, out, 0, 0)
    elif op == RECIPROCAL:
        _map(_reciprocal, x, out, 0, 0)
    elif op == ERF:
        _map(_erf, x, out, 0, 0)
    elif op == FLOOR:
        _map(_floor, x, out, 0, 0)
    elif op == CEIL:
        _map(_ceil, x, out, 0, 0)
    else:
        _map(_round, x, out, 0, 0)


@njit
def _sin(v, p, q):
    return math.sin(v)


@njit
def _cos(v, p, q):
    return math.cos(v)


@njit
def _tan(v, p, q):
    return math.tan(v)


@njit
def _asin(v, p, q):
    return math.asin(v)


@njit
def _acos(v, p, q):
    return math.acos(v)


@njit
def _atan(v, p, q):
    return math.atan(v)


@njit
def _sinh(v, p, q):
    return math.sinh(v)


@njit
def _cosh(v, p, q):
    return math.cosh(v)


@njit
def _asinh(v, p, q):
    return math.asinh(v)


@njit
def _acosh(v, p, q):
    return math.acosh(v)


@njit
def _atanh(v, p, q):
    return math.atanh(v)


SIN, COS, TAN, ASIN, ACOS, ATAN, SINH, COSH, ASINH, ACOSH, ATANH = range(11)


@njit(nogil=True, cache=True, error_model="numpy")
def trig(x, out, op, block_idx, block_dim):
    x, out = _part(x, out, block_idx, block_dim)
    if op == SIN:
        _map(_sin, x, out, 0, 0)
    elif op == COS:
        _map(_cos, x, out, 0, 0)
    elif op == TAN:
        _map(_tan, x, out, 0, 0)
    elif op == ASIN:
        _map(_asin, x, out, 0, 0)
    elif op == ACOS:
        _map(_acos, x, out, 0, 0)
    elif op == ATAN:
        _map(_atan, x, out, 0, 0)
    elif op == SINH:
        _map(_sinh, x, out, 0, 0)
    elif op == COSH:
        _map(_cosh, x, out, 0, 0)
    elif op == ASINH:
        _map(_asinh, x, out, 0, 0)
    elif op == ACOSH:
        _map(_acosh, x, out, 0, 0)
    else:
        _map(_atanh, x, out, 0, 0)


# -- every numeric dtype ----------------------------------------------------------------------------

@njit
def _relu(v, p, q):
    return type(v)(0) if v < 0 else v  # NaN stays NaN, as numpy.maximum


@njit
def _neg(v, p, q):
    return -v


@njit
def _abs(v, p, q):
    return abs(v)


@njit
def _sign(v, p, q):
    return type(v)(1) if v > 0 else (-type(v)(1) if v < 0 else v)  # 0 and NaN map to themselves


RELU, NEG, ABS, SIGN = range(4)


@njit(nogil=True, cache=True, error_model="numpy")
def numeric(x, out, op, block_idx, block_dim):
    x, out = _part(x, out, block_idx, block_dim)
    if op == RELU:
        _map(_relu, x, out, 0, 0)
    elif op == NEG:
        _map(_neg, x, out, 0, 0)
    elif op == ABS:
        _map(_abs, x, out, 0, 0)
    else:
        _map(_sign, x, out, 0, 0)


# -- predicates and Not -----------------------------------------------------------------------------

@njit
def _isnan(v, p, q):
    return v != v


@njit
def _isinf(v, p, q):
    inf = type(v)(np.inf)
    return (p and v == inf) or (q and v == -inf)


@njit(nogil=True, cache=True, error_model="numpy")
def is_nan_inf(x, out, isinf, positive, negative, block_idx, block_dim):
    x, out = _part(x, out, block_idx, block_dim)
    if isinf:
        _map(_isinf, x, out, positive, negative)
    else:
        _map(_isnan, x, out, False, False)


@njit
def _not(v, p, q):
    return not v


@njit(nogil=True, cache=True)
def logical_not(x, out, block_idx, block_dim):
    x, out = _part(x, out, block_idx, block_dim)
    _map(_not, x, out, False, False)


# -- Clip -------------------------------------------------------------------------------------------

@njit
def _clip(v, lo, hi):
    v = lo if v < lo else v  # lo first: with lo > hi every value becomes hi, as numpy.clip
    return hi if v > hi else v


@njit
def _clip_lo(v, lo, hi):
    return lo if v < lo else v


@njit
def _clip_hi(v, lo, hi):
    return hi if v > hi else v


@njit(nogil=True, cache=True, error_model="numpy")
def clip(x, lo, hi, out, mode, block_idx, block_dim):
    """Clip with tensor bounds. mode bit 0: min given, bit 1: max given (one at least); a missing
    bound's slot carries another input and is not read."""
    x, out = _part(x, out, block_idx, block_dim)
    if mode == 3:
        _map(_clip, x, out, lo[0], hi[0])
    elif mode == 1:
        _map(_clip_lo, x, out, lo[0], lo[0])
    else:
        _map(_clip_hi, x, out, hi[0], hi[0])


@njit(nogil=True, cache=True, error_model="numpy")
def clip_attr(x, out, lo, hi, block_idx, block_dim):
    """Clip before opset 11: the bounds are float attributes."""
    x, out = _part(x, out, block_idx, block_dim)
    _map(_clip, x, out, x.dtype.type(lo), x.dtype.type(hi))


# -- registration -----------------------------------------------------------------------------------
# ns per element, one thread, float32 over 1x16x112x112, best of 40: what a block of blocks.MIN_BLOCK_NS
# must hold. flat_launch scales them by the dtypes' widths; float64 math runs libm (Exp 5.8 ns), so its
# launches tile later than they could.
_NS_MATH = {EXP: 0.7, LOG: 1.0, SQRT: 0.3, RECIPROCAL: 0.2, ERF: 2.1, FLOOR: 0.2, CEIL: 0.2, ROUND: 0.2}
_NS_TRIG = 8.0  # libm calls, scalar (Sin)
_NS_CHEAP = 0.2  # Relu, Neg, Abs, Sign, IsNaN, IsInf, Not, Clip: memory bound


def float_infer(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, F)
    return same_as_input()(ctx)


def _numeric_infer(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, F + I)
    return same_as_input()(ctx)


def _relu_infer(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, F + I + HALF)   # 16-bit: vector_half.relu16 (drop_half_casts)
    return same_as_input()(ctx)


for _kernel, _ops in ((math_float, ("Exp", "Log", "Sqrt", "Reciprocal", "Erf", "Floor", "Ceil", "Round")),
                      (trig, ("Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh",
                              "Atanh"))):
    for _code, _op in enumerate(_ops):
        _ns = _NS_MATH[_code] if _kernel is math_float else _NS_TRIG
        register(_op, infer=float_infer, inplace=((0, 0),))(
            lambda ctx, k=_kernel, c=_code, ns=_ns: flat_launch(ctx, k, (c,), ns))

for _code, _op in enumerate(("Relu", "Neg", "Abs", "Sign")):
    register(_op, infer=_relu_infer if _op == "Relu" else _numeric_infer, inplace=((0, 0),))(
        lambda ctx, c=_code: relu_launch(ctx) if c == 0 and ctx.inputs[0].dtype in HALF else
        flat_launch(ctx, numeric, (c,), _NS_CHEAP))
native16("Relu")  # 16-bit feature maps: vector_half.py


def _predicate_infer(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, F)
    return same_as_input(dtype=np.bool_)(ctx)


@register("IsNaN", infer=_predicate_infer)
def _prepare_isnan(ctx):
    return flat_launch(ctx, is_nan_inf, (False, False, False), _NS_CHEAP)


@register("IsInf", infer=_predicate_infer)
def _prepare_isinf(ctx):
    positive, negative = bool(ctx.attr("detect_positive", 1)), bool(ctx.attr("detect_negative", 1))
    return flat_launch(ctx, is_nan_inf, (True, positive, negative), _NS_CHEAP)


def _not_infer(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, (BOOL,))
    return same_as_input()(ctx)


register("Not", infer=_not_infer, inplace=((0, 0),))(lambda ctx: flat_launch(ctx, logical_not, (), _NS_CHEAP))


def _clip_infer(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, F + I)
    for i in (1, 2):
        if ctx.has(i):
            if ctx.inputs[i].dtype != ctx.inputs[0].dtype:
                raise ctx.error(f"bound {i} has dtype {ctx.inputs[i].dtype}, input has {ctx.inputs[0].dtype}")
            if ctx.inputs[i].size != 1:
                raise ctx.error(f"bound {i} must be a scalar, got shape {ctx.inputs[i].shape}")
    return same_as_input()(ctx)


@register("Clip", infer=_clip_infer, inplace=((0, 0),), since=11)
def _prepare_clip(ctx):
    has_lo, has_hi = ctx.has(1), ctx.has(2)
    if not (has_lo or has_hi):
        return copy_launch(ctx, inputs=(0,))
    return flat_launch(ctx, clip, (has_lo + 2 * has_hi,), _NS_CHEAP,
                       inputs=(0, 1 if has_lo else 0, 2 if has_hi else 0))


@register("Clip", infer=float_infer, inplace=((0, 0),), until=10)
def _prepare_clip_attr(ctx):
    return flat_launch(ctx, clip_attr, (float(ctx.attr("min", -np.inf)), float(ctx.attr("max", np.inf))),
                       _NS_CHEAP)
