"""Elementwise kernels: unary activations and math, binary arithmetic with ONNX broadcasting.

Each op is its own small jitted loop (a switch inside the loop would stop LLVM vectorizing it, measured
60x slower). Binary ops share one broadcasting walker: the output is visited as an outer multi-index
over all dims but the last and a contiguous inner run; inputs advance by their own strides (0 where
broadcast). Shapes are collapsed first so the inner run is as long as possible.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .registry import KernelContext, Launch, TensorSpec, broadcast_shapes, register, same_as_input

# -- unary ------------------------------------------------------------------------------------------


@njit(nogil=True, cache=True)
def relu(x, out):
    for i in range(x.size):
        v = x[i]
        out[i] = v if v > 0 else v * 0


register("Relu", infer=same_as_input(), inplace=((0, 0),))(lambda ctx: Launch(relu))

# -- binary with broadcasting -----------------------------------------------------------------------

ADD, SUB, MUL, DIV = 0, 1, 2, 3


@njit(nogil=True, cache=True)
def binary_arith(a, b, out, op, shape, sa, sb):
    """out = a <op> b over a collapsed broadcast `shape`, with per-input strides sa, sb (elements)."""
    r = shape.shape[0]
    n = shape[r - 1]
    if out.size == 0:
        return
    ia, ib = sa[r - 1], sb[r - 1]
    idx = np.zeros(r, np.int64)
    pa = pb = po = 0
    for _ in range(out.size // n):
        if op == ADD:
            for j in range(n):
                out[po + j] = a[pa + j * ia] + b[pb + j * ib]
        elif op == SUB:
            for j in range(n):
                out[po + j] = a[pa + j * ia] - b[pb + j * ib]
        elif op == MUL:
            for j in range(n):
                out[po + j] = a[pa + j * ia] * b[pb + j * ib]
        else:
            for j in range(n):
                out[po + j] = a[pa + j * ia] / b[pb + j * ib]
        po += n
        d = r - 2
        while d >= 0:  # carry the outer multi-index
            idx[d] += 1
            pa += sa[d]
            pb += sb[d]
            if idx[d] < shape[d]:
                break
            pa -= sa[d] * shape[d]
            pb -= sb[d] * shape[d]
            idx[d] = 0
            d -= 1


def broadcast_strides(out_shape, *in_shapes):
    """Collapse a broadcast to (shape, strides per input) as int64 arrays of rank >= 1.

    Adjacent dims merge when every input is either contiguous across both or broadcast across both.
    """
    r = len(out_shape)
    strides = []
    for s in in_shapes:
        s = (1,) * (r - len(s)) + tuple(s)
        st, acc = [0] * r, 1
        for d in range(r - 1, -1, -1):
            st[d] = 0 if s[d] == 1 and out_shape[d] != 1 else acc
            acc *= s[d]
        strides.append(st)
    shape = list(out_shape) or [1]
    strides = [st or [0] for st in strides]
    d = len(shape) - 1
    while d > 0:  # merge dim d-1 into d when every input walks them as one
        if all(st[d - 1] == st[d] * shape[d] for st in strides):
            shape[d] *= shape[d - 1]
            del shape[d - 1]
            for st in strides:
                del st[d - 1]
        d -= 1
    return (np.array(shape, np.int64),) + tuple(np.array(st, np.int64) for st in strides)


def _infer_binary(ctx: KernelContext) -> list[TensorSpec]:
    a, b = ctx.inputs[0], ctx.inputs[1]
    if a.dtype != b.dtype:
        raise ctx.error(f"inputs have different dtypes {a.dtype} and {b.dtype}")
    return [TensorSpec(broadcast_shapes(ctx, a.shape, b.shape), a.dtype)]


def _prepare_arith(op):
    def prepare(ctx: KernelContext) -> Launch:
        shape, sa, sb = broadcast_strides(ctx.outputs[0].shape, ctx.inputs[0].shape, ctx.inputs[1].shape)
        return Launch(binary_arith, (op, shape, sa, sb))
    return prepare


for _op, _code in (("Add", ADD), ("Sub", SUB), ("Mul", MUL), ("Div", DIV)):
    register(_op, infer=_infer_binary, inplace=((0, 0), (1, 0)))(_prepare_arith(_code))
