"""Bitwise ops on integers: BitwiseAnd, BitwiseOr, BitwiseXor (broadcasting), BitwiseNot.

And/Or/Xor reuse binary.py's `logic` kernel: its scalar functions are `&`, `|` and `^`, which are the
logical ops on bool and the bitwise ones on integers, so the family adds no new loops, only the integer
specializations a model uses. BitwiseNot is `~` over a flat map (elementwise.py's Not is logical: `not v`
on an integer would give a bool).

Blocks (AI cores): as binary.py's and elementwise.py's kernels (memory bound, ~0.2 ns per element).
"""
from __future__ import annotations

from numba import njit

from .binary import AND, OR, XOR, I, _infer, _launch, _strides, logic
from .blocks import flat_launch
from .broadcast import map1 as _map
from .broadcast import part as _part
from .registry import KernelContext, TensorSpec, register, same_as_input

_NS = 0.2

for _op, _code in (("BitwiseAnd", AND), ("BitwiseOr", OR), ("BitwiseXor", XOR)):
    register(_op, infer=_infer(I), inplace=((0, 0), (1, 0)))(
        lambda ctx, code=_code: _launch(ctx, logic, (code, *_strides(ctx))))


@njit
def _invert(v, p, q):
    return ~v


@njit(nogil=True, cache=True, error_model="numpy")
def bitwise_not(x, out, block_idx, block_dim):
    x, out = _part(x, out, block_idx, block_dim)
    _map(_invert, x, out, 0, 0)


def _infer_not(ctx: KernelContext) -> list[TensorSpec]:
    ctx.require_dtype(0, I)
    return same_as_input()(ctx)


@register("BitwiseNot", infer=_infer_not, inplace=((0, 0),))
def _prepare_not(ctx: KernelContext):
    return flat_launch(ctx, bitwise_not, (), _NS)
