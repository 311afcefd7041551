"""The host CPU engine's ops (host_cpu.py): numpy twins of the AI-core kernels, for tiny integer/bool tensors.

Each op takes the node's bound KernelContext (inputs as specs, attributes; its outputs set by the kernel's
own infer, so shapes, dtypes and errors are the kernel's), the kernel's Launch (the generators' values are
read from it: the same numbers the kernel would store) and the input arrays in their shapes, and returns
the output arrays. Semantics are the Numba kernels', bit for bit (tests/runtime_v2/test_host_cpu.py runs
both on the same cases):
  - integers wrap (numpy and Numba both store modulo 2^bits); bools are nonzero;
  - Div of integers truncates towards zero (binary._trunc_div), Mod takes the divisor's sign (fmod=0) or
    the dividend's (fmod=1, binary._int_fmod); a zero divisor gives 0 in both (Numba's error_model="numpy"),
    and so does int64's min // -1 in Numba (numpy wraps it to min: matched here);
  - Gather's indices count from the end when negative; out of range -> IndexError, as indexing._wrap raises.
Nothing here is jitted, and nothing here may import a module that compiles on import.
"""
from __future__ import annotations

import numpy as np

from ge.kernels.movement import _slice_plan
from ge.kernels.registry import normalize_axis


def _generated(ctx, launch, xs):
    """Shape, Size, Constant (fill_values), ConstantOfShape (fill) and Range (arange): the launch's values."""
    out = ctx.outputs[0]
    name = launch.fn.__name__
    if name == "fill_values":
        return [np.asarray(launch.args[0]).astype(out.dtype)]
    if name == "fill":
        return [np.full(out.shape, launch.args[0]).astype(out.dtype)]
    start, delta = launch.args   # arange: out[i] = start + i * delta, in int64 (Python ints) then stored
    n = int(np.prod(out.shape, dtype=np.int64))
    return [(np.int64(start) + np.arange(n, dtype=np.int64) * np.int64(delta)).astype(out.dtype)]


def _copy(ctx, launch, xs):
    """Reshape, Flatten, Squeeze, Unsqueeze, Identity: the elements in order."""
    return [xs[0]]


def _binary(f):
    def op(ctx, launch, xs):
        return [f(xs[0], xs[1])]
    return op


def _trunc_div(a, b):
    q = np.floor_divide(a, b)
    q = q + ((np.remainder(a, b) != 0) & ((a < 0) != (b < 0))).astype(q.dtype)
    if q.dtype == np.int64:   # Numba's int64 floor division answers 0 for min // -1 (narrower ints widen first)
        q = np.where((a == np.iinfo(np.int64).min) & (b == -1), 0, q)
    return q


def _mod(ctx, launch, xs):
    a, b = xs
    r = np.remainder(a, b)   # the divisor's sign
    if ctx.attr("fmod", 0):  # the dividend's: one step back where the signs differ
        r = r - np.where((r != 0) & ((a < 0) != (b < 0)), b, 0).astype(r.dtype)
    return [r]


def _variadic(f):
    def op(ctx, launch, xs):
        out = xs[0]
        for x in xs[1:]:
            out = f(out, x)
        return [out]
    return op


def _where(ctx, launch, xs):
    return [np.where(xs[0], xs[1], xs[2])]


def _cast(ctx, launch, xs):
    return [xs[0]]   # stored into the output's dtype (astype's rules: the kernel's store)


def _gather(ctx, launch, xs):
    x, idx = xs
    axis = normalize_axis(ctx, ctx.attr("axis", 0), x.ndim)
    n = x.shape[axis]
    i = idx.astype(np.int64)
    i = np.where(i < 0, i + n, i)
    if i.size and (i.min() < 0 or i.max() >= n):
        raise IndexError("index out of range")
    return [np.take(x, i, axis=axis)]


def _concat(ctx, launch, xs):
    axis = normalize_axis(ctx, ctx.attr("axis", 1), xs[0].ndim)
    return [np.concatenate(xs, axis=axis)]


def _slice(ctx, launch, xs):
    out, first, step = _slice_plan(ctx)
    index = np.ix_(*[f + s * np.arange(n, dtype=np.int64) for n, f, s in zip(out, first, step)])
    return [xs[0][index] if xs[0].ndim else xs[0]]


def _expand(ctx, launch, xs):
    return [np.broadcast_to(xs[0], ctx.outputs[0].shape)]


def _not(ctx, launch, xs):
    return [np.logical_not(xs[0])]


# op -> its numpy twin; the inputs it reads as data (others are value inputs read by infer, or absent)
HOST_OPS = {
    "Shape": (_generated, ()), "Size": (_generated, ()), "ConstantOfShape": (_generated, ()),
    "Range": (_generated, ()),
    "Reshape": (_copy, (0,)), "Flatten": (_copy, (0,)), "Squeeze": (_copy, (0,)), "Unsqueeze": (_copy, (0,)),
    "Identity": (_copy, (0,)),
    "Add": (_binary(np.add), (0, 1)), "Sub": (_binary(np.subtract), (0, 1)),
    "Mul": (_binary(np.multiply), (0, 1)), "Div": (_binary(_trunc_div), (0, 1)), "Mod": (_mod, (0, 1)),
    "Equal": (_binary(np.equal), (0, 1)), "Less": (_binary(np.less), (0, 1)),
    "LessOrEqual": (_binary(np.less_equal), (0, 1)), "Greater": (_binary(np.greater), (0, 1)),
    "GreaterOrEqual": (_binary(np.greater_equal), (0, 1)),
    "And": (_binary(np.logical_and), (0, 1)), "Or": (_binary(np.logical_or), (0, 1)),
    "Xor": (_binary(np.logical_xor), (0, 1)), "Not": (_not, (0,)),
    "Max": (_variadic(np.maximum), None), "Min": (_variadic(np.minimum), None), "Sum": (_variadic(np.add), None),
    "Where": (_where, (0, 1, 2)), "Cast": (_cast, (0,)), "Gather": (_gather, (0, 1)), "Concat": (_concat, None),
    "Slice": (_slice, (0,)), "Expand": (_expand, (0,)),
}


def run_host_op(ctx, launch, arrays: list) -> list:
    """The outputs of ctx's op on `arrays` (node input k's array in its shape, None when absent), each in
    the output's dtype and shape."""
    fn, reads = HOST_OPS[ctx.op_type]
    xs = [a for a in arrays if a is not None] if reads is None else [arrays[i] for i in reads]
    with np.errstate(all="ignore"):   # wrapping and zero divisors: the kernels' answers, no warnings
        outs = fn(ctx, launch, xs)
    return [np.asarray(o).astype(s.dtype, copy=False).reshape(s.shape) for o, s in zip(outs, ctx.outputs)]
