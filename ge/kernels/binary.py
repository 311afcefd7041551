"""Binary, variadic and ternary elementwise ops with ONNX multidirectional broadcasting.

Each kernel applies one shared walker (broadcast.walk2 / walk3) to a small scalar function, picked by an op
code outside the loops. Ops are grouped into kernels whose dtype rules agree, so a dtype only compiles
loops it can use:

  binary_arith    Add Sub Mul                           out dtype = input dtype
  divide          Div (floats): apart from binary_arith so integer dtypes never compile a float division
  int_divmod      Div (ints, truncates like C), Mod     integers only
  float_mod       Mod (fmod=0 like numpy.mod, fmod=1 like C fmod)
  compare         Equal Less LessOrEqual -> bool; Greater and GreaterOrEqual are Less and LessOrEqual with
                  the inputs swapped (exact, NaN included)
  logic           And Or Xor on bool
  bitshift        BitShift; shifts outside [0, bits) give 0 (or -1 for a negative value shifted right)
  power           Pow; the exponent may have another dtype, the result has the base's
  prelu           PRelu, the slope broadcast to X (or matched to the one dim of X with its length)
  variadic        Sum Max Min Mean: a left fold over 2..N inputs into the output (one input: a copy)
  where           Where (3-way broadcast)

Before opset 7, binary ops broadcast only with attribute broadcast=1, aligning B at `axis` of A.

Blocks (AI cores): every kernel is tiled over its output through the walkers (broadcast.py, step 4); the
variadic kernel's star-args end with the block arguments. A launch's cost is output elements at the ns
below (scaled by the dtypes' widths) plus ROW_NS per broadcast row. Measured, 1x64x112x112 float32, one
thread vs 2 blocks on 2 threads: Add 390 -> 261 us, Add of a 64x1x1 bias 269 -> 175 us.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .arity import padded_inputs
from .blocks import G, blocks, byte_scale, row_range, tiled
from .broadcast import broadcast_strides, commute, walk2, walk2_strided, walk3
from .cast import copy_launch
from .registry import KernelContext, Launch, TensorSpec, broadcast_shapes, register

F = tuple(np.dtype(t) for t in ("float32", "float64"))
I = tuple(np.dtype(t) for t in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"))
BOOL = np.dtype(np.bool_)
NUM = F + I

# -- scalar functions (inlined into the walker loops) -----------------------------------------------


@njit(inline="always")
def _add(x, y):
    return x + y


@njit(inline="always")
def _sub(x, y):
    return x - y


@njit(inline="always")
def _mul(x, y):
    return x * y


@njit(inline="always")
def _div(x, y):
    return x / y


@njit(inline="always")
def _trunc_div(x, y):
    q = x // y  # floors; step back towards zero when the signs differ and there is a remainder
    return q + 1 if (x % y != 0) and ((x < 0) != (y < 0)) else q


@njit(inline="always")
def _mod(x, y):
    return x % y  # sign of the divisor, as numpy.mod


@njit(inline="always")
def _int_fmod(x, y):
    r = x % y  # sign of the dividend, as C fmod
    return r - y if (r != 0) and ((x < 0) != (y < 0)) else r


@njit(inline="always")
def _float_fmod(x, y):
    return np.fmod(x, y)


@njit(inline="always")
def _eq(x, y):
    return x == y


@njit(inline="always")
def _lt(x, y):
    return x < y


@njit(inline="always")
def _le(x, y):
    return x <= y


@njit(inline="always")
def _and(x, y):
    return x & y


@njit(inline="always")
def _or(x, y):
    return x | y


@njit(inline="always")
def _xor(x, y):
    return x ^ y


@njit(inline="always")
def _max(x, y):
    return x if (x >= y or x != x) else y  # a NaN on either side wins, as numpy.maximum


@njit(inline="always")
def _min(x, y):
    return x if (x <= y or x != x) else y


@njit(inline="always")
def _shl(x, y):
    # Numba shifts in 64 bits and the store truncates, which is ONNX's answer for every count in
    # [bits, 64); counts outside [0, 64) are undefined in LLVM, so they are caught here.
    return x - x if (y < 0 or y >= 64) else x << y


@njit(inline="always")
def _shr(x, y):
    fill = x - x - 1 if x < 0 else x - x  # what shifting right by >= the width leaves (-1 only if signed)
    return fill if (y < 0 or y >= 64) else x >> y


@njit(inline="always")
def _pow(x, y):
    return x ** y


@njit(inline="always")
def _prelu(x, s):
    return x if x > 0 else x * s


@njit(inline="always")
def _select(c, x, y):
    return x if c else y


# -- kernels ----------------------------------------------------------------------------------------

ADD, SUB, MUL = 0, 1, 2
TRUNC_DIV, MOD, FMOD = 0, 1, 2
EQ, LT, LE = 0, 1, 2
AND, OR, XOR = 0, 1, 2
SUM, MAX, MIN, MEAN = 0, 1, 2, 3


@njit(nogil=True, cache=True, error_model="numpy")
def binary_arith(a, b, out, op, shape, sa, sb, block_idx, block_dim):
    if op != SUB:
        a, b, sa, sb = commute(a, b, sa, sb, out)
    if op == ADD:
        walk2(_add, a, b, out, shape, sa, sb, block_idx, block_dim)
    elif op == SUB:
        walk2(_sub, a, b, out, shape, sa, sb, block_idx, block_dim)
    else:
        walk2(_mul, a, b, out, shape, sa, sb, block_idx, block_dim)


@njit(nogil=True, cache=True, error_model="numpy")
def divide(a, b, out, shape, sa, sb, block_idx, block_dim):
    walk2(_div, a, b, out, shape, sa, sb, block_idx, block_dim)


@njit(nogil=True, cache=True, error_model="numpy")
def int_divmod(a, b, out, op, shape, sa, sb, block_idx, block_dim):
    if op == TRUNC_DIV:
        walk2_strided(_trunc_div, a, b, out, shape, sa, sb, block_idx, block_dim)
    elif op == MOD:
        walk2_strided(_mod, a, b, out, shape, sa, sb, block_idx, block_dim)
    else:
        walk2_strided(_int_fmod, a, b, out, shape, sa, sb, block_idx, block_dim)


@njit(nogil=True, cache=True, error_model="numpy")
def float_mod(a, b, out, op, shape, sa, sb, block_idx, block_dim):
    if op == MOD:
        walk2_strided(_mod, a, b, out, shape, sa, sb, block_idx, block_dim)
    else:
        walk2_strided(_float_fmod, a, b, out, shape, sa, sb, block_idx, block_dim)


@njit(nogil=True, cache=True, error_model="numpy")
def compare(a, b, out, op, shape, sa, sb, block_idx, block_dim):
    if op == EQ:
        walk2(_eq, a, b, out, shape, sa, sb, block_idx, block_dim)
    elif op == LT:
        walk2(_lt, a, b, out, shape, sa, sb, block_idx, block_dim)
    else:
        walk2(_le, a, b, out, shape, sa, sb, block_idx, block_dim)


@njit(nogil=True, cache=True, error_model="numpy")
def logic(a, b, out, op, shape, sa, sb, block_idx, block_dim):
    a, b, sa, sb = commute(a, b, sa, sb, out)
    if op == AND:
        walk2(_and, a, b, out, shape, sa, sb, block_idx, block_dim)
    elif op == OR:
        walk2(_or, a, b, out, shape, sa, sb, block_idx, block_dim)
    else:
        walk2(_xor, a, b, out, shape, sa, sb, block_idx, block_dim)


@njit(nogil=True, cache=True, error_model="numpy")
def bitshift(a, b, out, left, shape, sa, sb, block_idx, block_dim):
    if left:
        walk2(_shl, a, b, out, shape, sa, sb, block_idx, block_dim)
    else:
        walk2(_shr, a, b, out, shape, sa, sb, block_idx, block_dim)


@njit(nogil=True, cache=True, error_model="numpy")
def power(a, b, out, shape, sa, sb, block_idx, block_dim):
    walk2(_pow, a, b, out, shape, sa, sb, block_idx, block_dim)


@njit(nogil=True, cache=True, error_model="numpy")
def prelu(x, slope, out, shape, sx, ss, block_idx, block_dim):
    walk2(_prelu, x, slope, out, shape, sx, ss, block_idx, block_dim)


@njit(nogil=True, cache=True, error_model="numpy")
def where(c, x, y, out, shape, sc, sx, sy, block_idx, block_dim):
    walk3(_select, c, x, y, out, shape, sc, sx, sy, block_idx, block_dim)


@njit(nogil=True, cache=True, error_model="numpy")
def variadic(*xs):
    """xs = (x_0, ..., out, k, op, shape, strides, block_idx, block_dim), k >= 2 inputs read (the x's past
    them are arity.py's fillers): strides holds k+1 rows of shape.size, the last row the output's.
    out = x_0 op x_1, then out = out op x_i, then Mean scales by 1/k; every step over the block's part only
    (the star-args carry the block arguments)."""
    ins, out, k, op, shape, strides = xs[:-7], xs[-7], xs[-6], xs[-5], xs[-4], xs[-3]
    block_idx, block_dim = xs[-2], xs[-1]
    r = shape.size
    for i in range(1, k):
        a = ins[0] if i == 1 else out
        sa = strides[:r] if i == 1 else strides[k * r:]
        b, sb = ins[i], strides[i * r:(i + 1) * r]
        a, b, sa, sb = commute(a, b, sa, sb, out)
        if op == MAX:
            walk2(_max, a, b, out, shape, sa, sb, block_idx, block_dim)
        elif op == MIN:
            walk2(_min, a, b, out, shape, sa, sb, block_idx, block_dim)
        else:
            walk2(_add, a, b, out, shape, sa, sb, block_idx, block_dim)
    if op == MEAN:
        c = out.dtype.type(k)
        lo, hi = row_range(out.size, shape[r - 1], G, block_idx, block_dim)  # walk2's part
        for i in range(lo, hi):
            out[i] = out[i] / c


# -- shapes and registration ------------------------------------------------------------------------


def operand_shapes(ctx: KernelContext) -> list[tuple[int, ...]]:
    """The shapes of A and B as they broadcast: before opset 7, B aligns at `axis` of A when broadcast=1,
    and otherwise the shapes must be equal."""
    shapes = [ctx.inputs[0].shape, ctx.inputs[1].shape]
    if ctx.opset < 7 and (ctx.attr("broadcast", 0) or shapes[0] != shapes[1]):
        a, b = shapes
        if not ctx.attr("broadcast", 0):
            raise ctx.error(f"shapes {a} and {b} differ and broadcast=0")
        axis = ctx.attr("axis", len(a) - len(b))
        axis = axis + len(a) if axis < 0 else axis
        if not 0 <= axis <= len(a) - len(b) or any(d not in (1, a[axis + i]) for i, d in enumerate(b)):
            raise ctx.error(f"cannot broadcast {b} into {a} at axis {axis}")
        shapes[1] = (1,) * axis + tuple(b) + (1,) * (len(a) - len(b) - axis)
    return shapes


def _infer(dtypes, out_dtype=None, variadic=False):
    """infer for ops whose inputs share one dtype from `dtypes`; out_dtype defaults to it."""
    def infer(ctx: KernelContext) -> list[TensorSpec]:
        ctx.require_dtype(0, dtypes)
        dt = ctx.inputs[0].dtype
        for s in ctx.inputs[1:]:
            if s.dtype != dt:
                raise ctx.error(f"inputs have different dtypes {dt} and {s.dtype}")
        shapes = [s.shape for s in ctx.inputs] if variadic else operand_shapes(ctx)
        return [TensorSpec(broadcast_shapes(ctx, *shapes), dt if out_dtype is None else out_dtype)]
    return infer


# ns per output element, one thread, float32, 1x16x112x112, best of 40: Add 0.2-0.4 (bias / same shape),
# Pow 5.9, int32 Div 12 and Mod 8.6 (a division and a sign fix-up per element), float Mod 10 (libm fmod);
# short broadcast rows add ROW_NS per row (Mul over 16-element rows: 0.4-0.9 ns per element)
_NS, _NS_POW, _NS_INT_DIV, _NS_MOD, _ROW_NS = 0.3, 6.0, 12.0, 10.0, 6.0


def _launch(ctx: KernelContext, fn, args, ns=_NS, **kw) -> Launch:
    """Tiled over the output (blocks.row_range through the walkers): cost ~ elements + rows."""
    shape = next(a for a in args if isinstance(a, np.ndarray))  # the collapsed broadcast shape
    size = ctx.outputs[0].size
    rows = size // max(int(shape[-1]), 1)
    return tiled(fn, args, blocks(ctx, size, ns * byte_scale(ctx) + _ROW_NS * rows / max(size, 1)), **kw)


def _strides(ctx: KernelContext):
    return broadcast_strides(ctx.outputs[0].shape, *operand_shapes(ctx))


def _is_int(ctx: KernelContext) -> bool:
    return ctx.inputs[0].dtype.kind in "iu"


_INPLACE = ((0, 0),)  # the in-place loops read the first operand from out
_COMMUTATIVE = ((0, 0), (1, 0))  # these kernels swap operands when out is the second


for _op, _code, _inplace in (("Add", ADD, _COMMUTATIVE), ("Sub", SUB, _INPLACE), ("Mul", MUL, _COMMUTATIVE)):
    register(_op, infer=_infer(NUM), inplace=_inplace)(
        lambda ctx, code=_code: _launch(ctx, binary_arith, (code, *_strides(ctx))))


@register("Div", infer=_infer(NUM), inplace=_INPLACE)
def _prepare_div(ctx):
    if _is_int(ctx):
        return _launch(ctx, int_divmod, (TRUNC_DIV, *_strides(ctx)), _NS_INT_DIV)
    return _launch(ctx, divide, _strides(ctx))


@register("Mod", infer=_infer(NUM), inplace=_INPLACE)
def _prepare_mod(ctx):
    op = FMOD if ctx.attr("fmod", 0) else MOD
    return _launch(ctx, int_divmod if _is_int(ctx) else float_mod, (op, *_strides(ctx)), _NS_MOD)


def _prepare_compare(op, swap=False):
    def prepare(ctx):
        shape, sa, sb = _strides(ctx)
        if swap:  # a > b is b < a
            return _launch(ctx, compare, (op, shape, sb, sa), inputs=(1, 0))
        return _launch(ctx, compare, (op, shape, sa, sb))
    return prepare


for _op, _code, _swap in (("Equal", EQ, False), ("Less", LT, False), ("LessOrEqual", LE, False),
                          ("Greater", LT, True), ("GreaterOrEqual", LE, True)):
    register(_op, infer=_infer(NUM + (BOOL,), BOOL))(_prepare_compare(_code, _swap))

for _op, _code in (("And", AND), ("Or", OR), ("Xor", XOR)):
    register(_op, infer=_infer((BOOL,)), inplace=_COMMUTATIVE)(
        lambda ctx, code=_code: _launch(ctx, logic, (code, *_strides(ctx))))


@register("BitShift", infer=_infer(I), inplace=_INPLACE)
def _prepare_bitshift(ctx):
    direction = ctx.attr("direction", "")
    if direction not in ("LEFT", "RIGHT"):
        raise ctx.error(f"direction must be LEFT or RIGHT, got {direction!r}")
    shape, sa, sb = _strides(ctx)
    return _launch(ctx, bitshift, (int(direction == "LEFT"), shape, sa, sb))


def _infer_pow(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, NUM)
    ctx.require_dtype(1, NUM)
    return [TensorSpec(broadcast_shapes(ctx, *operand_shapes(ctx)), ctx.inputs[0].dtype)]


@register("Pow", infer=_infer_pow, inplace=_INPLACE)
def _prepare_pow(ctx):
    return _launch(ctx, power, _strides(ctx), _NS_POW)


def _slope_shape(ctx: KernelContext) -> tuple[int, ...]:
    """PRelu's slope as it broadcasts to X: as is when it can, else (1-D) placed at the one dim of X
    with its length (what onnx.reference accepts)."""
    x, s = ctx.inputs[0].shape, ctx.inputs[1].shape
    try:
        np.broadcast_shapes(x, s)
        return s
    except ValueError:
        dims = [d for d, n in enumerate(x) if len(s) == 1 and n == s[0]]
        if len(dims) != 1:
            raise ctx.error(f"slope shape {s} does not broadcast to {x}") from None
        return tuple(n if d == dims[0] else 1 for d, n in enumerate(x))


def _infer_prelu(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, NUM)
    if ctx.inputs[1].dtype != ctx.inputs[0].dtype:
        raise ctx.error(f"slope dtype {ctx.inputs[1].dtype} differs from X's {ctx.inputs[0].dtype}")
    return [TensorSpec(broadcast_shapes(ctx, ctx.inputs[0].shape, _slope_shape(ctx)), ctx.inputs[0].dtype)]


@register("PRelu", infer=_infer_prelu, inplace=_INPLACE)
def _prepare_prelu(ctx):
    return _launch(ctx, prelu, broadcast_strides(ctx.outputs[0].shape, ctx.inputs[0].shape, _slope_shape(ctx)))


def _prepare_variadic(op):
    def prepare(ctx):
        if len(ctx.inputs) == 1:
            return copy_launch(ctx)
        out = ctx.outputs[0].shape
        shape, *strides = broadcast_strides(out, *[s.shape for s in ctx.inputs], out)
        k = len(ctx.inputs)
        return _launch(ctx, variadic, (k, op, shape, np.concatenate(strides)), _NS * (k - 1),
                       inputs=padded_inputs(k))
    return prepare


for _op, _code, _dtypes in (("Sum", SUM, NUM), ("Mean", MEAN, F), ("Max", MAX, NUM), ("Min", MIN, NUM)):
    register(_op, infer=_infer(_dtypes, variadic=True), inplace=_COMMUTATIVE)(_prepare_variadic(_code))


def _infer_where(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, (BOOL,))
    ctx.require_dtype(1, NUM + (BOOL,))
    if ctx.inputs[2].dtype != ctx.inputs[1].dtype:
        raise ctx.error(f"X and Y have different dtypes {ctx.inputs[1].dtype} and {ctx.inputs[2].dtype}")
    shapes = [s.shape for s in ctx.inputs]
    return [TensorSpec(broadcast_shapes(ctx, *shapes), ctx.inputs[1].dtype)]


@register("Where", infer=_infer_where, since=9)
def _prepare_where(ctx):
    return _launch(ctx, where, broadcast_strides(ctx.outputs[0].shape, *[s.shape for s in ctx.inputs]))
