"""The host CPU engine's ops (GE's DNN_VM_HOST_CPU): numpy twins of the AI-core kernels for small integer/bool
tensors, an export's shape arithmetic. Constant folding runs them at compile time (passes/fold_constants.py)
and runtime_v2 places run-time shape arithmetic on them (runtime_v2/host_cpu.py), so neither compiles the
int64/bool variants of the elementwise, compare, logic, gather, concat and copy kernels for a few numbers.
No kernel module imports this one (nothing here is jitted): it joins no other kernel's cache stamp.

`host_step(ctx, launch)` makes, once per prepared shape, the step a run calls on flat buffers (the node's
inputs, None where absent, then its outputs): from the node's bound KernelContext (its outputs set by the
kernel's own infer, so shapes, dtypes and errors are the kernel's) and the kernel's Launch (the generators'
values are read from it: the same numbers the kernel would store, computed once here since the prepared
shapes and values fix them). What can be decided per shape is decided here (broadcasts that need no
reshape, the gathered slices), so a call is a ufunc or two on views: ~1-2 us (bench/host_cpu.py).
Semantics are the Numba kernels', bit for bit (tests/runtime_v2/test_host_cpu.py runs both on the same
cases):
  - integers wrap (numpy and Numba both store modulo 2^bits); bools are nonzero;
  - Div of integers truncates towards zero (binary._trunc_div), Mod takes the divisor's sign (fmod=0) or
    the dividend's (fmod=1, binary._int_fmod); a zero divisor gives 0 in both (Numba's error_model="numpy"),
    and so does int64's min // -1 in Numba (numpy wraps it to min: matched here);
  - Gather's indices count from the end when negative; out of range -> IndexError, as indexing._wrap raises.
Nothing here is jitted, and nothing here may import a module that compiles on import.
"""
from __future__ import annotations

import numpy as np

from .movement import _slice_plan
from .registry import KernelContext, OpKernel, normalize_axis

MAX_ELEMENTS = 1024   # per tensor, at run time (runtime_v2/host_cpu.py says why); folding has no bound
_FLOAT_OUT = ("Cast", "Constant", "ConstantOfShape")   # exact: int -> float rounds as the kernel's store does
_READS_NO_DATA = ("Shape", "Size")
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))   # not the 16-bit ones: their kernels store bits


def _flat(ctx, ks) -> bool:
    """Every input of ks has one element or the output's count: read flat, the same elements in the same
    order (no reshape per call)."""
    return all(ctx.inputs[k].size in (1, ctx.outputs[0].size) for k in ks)


def _views(ctx, ks, flat: bool):
    """Per input k of ks: its flat buffer -> what the op reads (itself, or the view in its shape)."""
    if flat:
        return [lambda b: b for _ in ks]
    return [lambda b, s=ctx.inputs[k].shape: b.reshape(s) for k in ks]


def _out_view(ctx, flat: bool):
    shape = ctx.outputs[0].shape
    return (lambda o: o) if flat else (lambda o: o.reshape(shape))


def _generated(ctx, launch):
    """Shape, Size, ConstantOfShape (fill_values / fill) and Range (arange): values fixed by the prepared
    shapes and values, computed once."""
    out = ctx.outputs[0]
    name = launch.fn.__name__
    if name == "fill_values":
        v = np.asarray(launch.args[0]).astype(out.dtype)
    elif name == "fill":
        v = np.full(out.size, launch.args[0], dtype=out.dtype)   # the value came from this dtype: exact
    else:   # arange: out[i] = start + i * delta in int64 (the kernel's Python ints), then stored
        start, delta = launch.args
        v = (np.int64(start) + np.arange(out.size, dtype=np.int64) * np.int64(delta)).astype(out.dtype)
    v = v.reshape(-1)

    def step(*b):
        b[-1][:] = v
    return step


def _elementwise(f, k_in):
    """A ufunc (or a function of arrays with out=) over inputs 0..k_in-1, broadcast as the kernels do."""
    def make(ctx, launch):
        ks = range(k_in)
        flat = _flat(ctx, ks)
        views, ov = _views(ctx, ks, flat), _out_view(ctx, flat)
        if k_in == 1:
            v0 = views[0]
            return lambda *b: f(v0(b[0]), out=ov(b[-1]))
        v0, v1 = views
        return lambda *b: f(v0(b[0]), v1(b[1]), out=ov(b[-1]))
    return make


def _trunc_div(a, b, out):
    with np.errstate(all="ignore"):   # zero divisors: 0, as the kernel's error_model="numpy"
        q = np.floor_divide(a, b)
        q += (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
    if q.dtype == np.int64:   # Numba's int64 floor division answers 0 for min // -1 (narrower ints widen first)
        q[(a == np.iinfo(np.int64).min) & (b == -1)] = 0
    out[...] = q


def _make_mod(fmod: bool):
    def mod(a, b, out):
        with np.errstate(all="ignore"):
            r = np.remainder(a, b)   # the divisor's sign
        if fmod:   # the dividend's: one step back where the signs differ
            r = r - np.where((r != 0) & ((a < 0) != (b < 0)), b, 0).astype(r.dtype)
        out[...] = r
    return mod


def _mod(ctx, launch):
    return _elementwise(_make_mod(bool(ctx.attr("fmod", 0))), 2)(ctx, launch)


def _cast(ctx, launch):
    return lambda *b: np.copyto(b[-1], b[0], casting="unsafe")   # astype's rules: the kernel's store


def _variadic(f):
    def make(ctx, launch):
        ks = [k for k, s in enumerate(ctx.inputs) if s is not None]
        if len(ks) == 1:   # one input: a copy (the kernel's copy_launch)
            return lambda *b: np.copyto(b[-1], b[ks[0]])
        flat = _flat(ctx, ks)
        views, ov = _views(ctx, ks, flat), _out_view(ctx, flat)

        def step(*b):
            o = ov(b[-1])
            f(views[0](b[ks[0]]), views[1](b[ks[1]]), out=o)
            for v, k in zip(views[2:], ks[2:]):
                f(o, v(b[k]), out=o)
        return step
    return make


def _where(ctx, launch):
    flat = _flat(ctx, range(3))
    (vc, vx, vy), ov = _views(ctx, range(3), flat), _out_view(ctx, flat)

    def step(*b):
        o = ov(b[-1])
        np.copyto(o, vy(b[2]))
        np.copyto(o, vx(b[1]), where=vc(b[0]))
    return step


def _gather(ctx, launch):
    outer, n, inner = launch.args   # the kernel's (outer, n, inner) views
    m = ctx.inputs[1].size

    if outer == 1 and inner == 1 and m == 1:   # one element of a shape: Python ints, no array temporaries
        def one(*b):
            i = int(b[1][0])
            i = i + n if i < 0 else i
            if not 0 <= i < n:
                raise IndexError("index out of range")   # indexing._wrap's error
            b[-1][0] = b[0][i]
        return one

    def step(*b):
        idx = b[1].astype(np.int64)
        idx[idx < 0] += n
        if m and (idx.min() < 0 or idx.max() >= n):
            raise IndexError("index out of range")   # indexing._wrap's error
        if outer == 1 and inner == 1:
            b[-1][:] = b[0][idx]
        else:
            b[-1].reshape(outer, m, inner)[:] = b[0].reshape(outer, n, inner)[:, idx, :]
    return step


def _concat(ctx, launch):
    shape = ctx.outputs[0].shape
    axis = normalize_axis(ctx, ctx.attr("axis", 1), len(shape))
    ks = [k for k, s in enumerate(ctx.inputs) if s is not None]
    if int(np.prod(shape[:axis], dtype=np.int64)) == 1:   # one row: the inputs one after the other
        return lambda *b: np.concatenate([b[k] for k in ks], out=b[-1])
    shapes = [ctx.inputs[k].shape for k in ks]
    return lambda *b: np.concatenate([b[k].reshape(s) for k, s in zip(ks, shapes)], axis=axis,
                                     out=b[-1].reshape(shape))


def _slice(ctx, launch):
    out, first, step_ = _slice_plan(ctx)
    x = ctx.inputs[0].shape
    index = np.ix_(*[f + s * np.arange(n, dtype=np.int64) for n, f, s in zip(out, first, step_)])
    return lambda *b: b[-1].reshape(out).__setitem__(Ellipsis, b[0].reshape(x)[index])


def _expand(ctx, launch):
    x, shape = ctx.inputs[0].shape, ctx.outputs[0].shape
    return lambda *b: np.copyto(b[-1].reshape(shape), b[0].reshape(x))


def _view(ctx, launch):   # Reshape, Squeeze, Unsqueeze, Flatten, Identity: no task (launch None), never here
    raise AssertionError(f"{ctx.op_type} is a view")


# op -> the maker of its host step; the inputs it reads as data (the others are value inputs infer reads)
HOST_OPS = {
    "Shape": (_generated, ()), "Size": (_generated, ()), "ConstantOfShape": (_generated, ()),
    "Constant": (_generated, ()),
    "Range": (_generated, ()),
    "Reshape": (_view, (0,)), "Flatten": (_view, (0,)), "Squeeze": (_view, (0,)), "Unsqueeze": (_view, (0,)),
    "Identity": (_view, (0,)),
    "Add": (_elementwise(np.add, 2), (0, 1)), "Sub": (_elementwise(np.subtract, 2), (0, 1)),
    "Mul": (_elementwise(np.multiply, 2), (0, 1)), "Div": (_elementwise(_trunc_div, 2), (0, 1)),
    "Mod": (_mod, (0, 1)),
    "Equal": (_elementwise(np.equal, 2), (0, 1)), "Less": (_elementwise(np.less, 2), (0, 1)),
    "LessOrEqual": (_elementwise(np.less_equal, 2), (0, 1)), "Greater": (_elementwise(np.greater, 2), (0, 1)),
    "GreaterOrEqual": (_elementwise(np.greater_equal, 2), (0, 1)),
    "And": (_elementwise(np.logical_and, 2), (0, 1)), "Or": (_elementwise(np.logical_or, 2), (0, 1)),
    "Xor": (_elementwise(np.logical_xor, 2), (0, 1)), "Not": (_elementwise(np.logical_not, 1), (0,)),
    "Max": (_variadic(np.maximum), None), "Min": (_variadic(np.minimum), None), "Sum": (_variadic(np.add), None),
    "Where": (_where, (0, 1, 2)), "Cast": (_cast, (0,)), "Gather": (_gather, (0, 1)), "Concat": (_concat, None),
    "Slice": (_slice, (0,)), "Expand": (_expand, (0,)),
}


def host_step(ctx, launch):
    """The step of ctx's op for its prepared shapes: step(*inputs, *outputs) on flat buffers."""
    return HOST_OPS[ctx.op_type][0](ctx, launch)


def int_or_bool(dt) -> bool:
    return dt is not None and np.dtype(dt).kind in "iub"


def host_dtypes(op_type: str, inputs, outputs) -> bool:
    """The op has a twin here and its tensors' dtypes are the engine's: integer/bool in and out (Cast,
    Constant and ConstantOfShape may write floats; Shape and Size read any input's shape only)."""
    if op_type not in HOST_OPS:
        return False
    if not all(int_or_bool(d) or (op_type in _FLOAT_OUT and np.dtype(d) in _FLOATS) for d in outputs):
        return False
    return op_type in _READS_NO_DATA or all(int_or_bool(d) for d in inputs)


def fold_on_host(kernel: OpKernel, ctx: KernelContext, arrays: list) -> list | None:
    """Constant folding's call: a node of the engine's ops and dtypes folded here (its kernel's infer and
    prepare, then the twin), else None (the kernel folds it)."""
    if kernel.host is not None or not host_dtypes(ctx.op_type, [s.dtype for s in ctx.inputs if s is not None],
                                                  [v.dtype for v in kernel.infer(ctx)]):
        return None
    launch = kernel.bind(ctx)
    if launch is None:
        return None   # a view: no kernel runs anyway
    outs = [np.empty(s.size, s.dtype) for s in ctx.outputs]
    flat = [None if a is None else np.ascontiguousarray(a).reshape(-1) for a in arrays]
    host_step(ctx, launch)(*flat, *outs)
    return [o.reshape(s.shape) for o, s in zip(outs, ctx.outputs)]
