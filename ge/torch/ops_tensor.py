"""ATen converters, part 2: elementwise arithmetic and comparisons (with torch's type promotion made explicit
as Casts), reductions, shapes and movement, indexing, and tensors made from sizes (folded to constants:
this backend compiles static shapes). The contract is registry.py's."""
from __future__ import annotations

import numpy as np
import torch
from torch._subclasses.fake_tensor import unset_fake_temporarily

from .registry import Unsupported, converter, np_dtype


def _axis(dim: int, rank: int) -> int:
    return dim + rank if dim < 0 else dim


# -- elementwise arithmetic ----------------------------------------------------------------------------

_BINARY = {"aten.add.Tensor": "Add", "aten.sub.Tensor": "Sub", "aten.mul.Tensor": "Mul",
           "aten.div.Tensor": "Div", "aten.maximum.default": "Max", "aten.minimum.default": "Min",
           "aten.pow.Tensor_Tensor": "Pow", "aten.pow.Tensor_Scalar": "Pow", "aten.add.Scalar": "Add",
           "aten.sub.Scalar": "Sub", "aten.mul.Scalar": "Mul", "aten.div.Scalar": "Div",
           "aten.remainder.Scalar": "Mod", "aten.remainder.Tensor": "Mod", "aten.pow.Scalar": "Pow"}


def _binary(b, x, y, alpha=1):
    """Both operands in the result's dtype (torch promotes int + float, bool * float...); alpha scales y."""
    op, dt = _BINARY[str(b.node.target)], b.out_dtype
    if op in ("Div", "Pow") and dt.kind != "f":
        raise Unsupported(f"integer {op} (torch's rounding differs from the kernel's)")
    if op == "Mod" and dt.kind == "f":
        raise Unsupported("floating-point remainder")
    x, y = b.tensor(x, dt), b.tensor(y, dt)
    if alpha != 1:
        y = b.op("Mul", [y, b.const(np.asarray(alpha, dt))])
    return b.op(op, [x, y], {"fmod": 0} if op == "Mod" else None)


for _name in _BINARY:
    converter(_name)(_binary)


@converter("aten.rsub.Scalar", "aten.rsub.Tensor")
def rsub(b, x, y, alpha=1):
    dt = b.out_dtype
    x = b.tensor(x, dt)
    if alpha != 1:
        x = b.op("Mul", [x, b.const(np.asarray(alpha, dt))])
    return b.op("Sub", [b.tensor(y, dt), x])


@converter("aten.div.Tensor_mode")
def div_mode(b, x, y, rounding_mode=None):
    dt = b.out_dtype
    if rounding_mode is None:
        return _binary_div(b, x, y, dt)
    if dt.kind == "f" and rounding_mode == "floor":
        return b.op("Floor", [_binary_div(b, x, y, dt)])
    if dt.kind in "iu" and rounding_mode == "trunc":   # ONNX's integer Div truncates, as torch's trunc
        return b.op("Div", [b.tensor(x, dt), b.tensor(y, dt)])
    if dt.kind in "iu" and rounding_mode == "floor":   # x - mod(x, y) (y's sign) is a multiple of y: exact
        x, y = b.tensor(x, dt), b.tensor(y, dt)
        return b.op("Div", [b.op("Sub", [x, b.op("Mod", [x, y], {"fmod": 0})]), y])
    raise Unsupported(f"div rounding_mode={rounding_mode!r} on {dt}")


def _binary_div(b, x, y, dt):
    return b.op("Div", [b.tensor(x, dt), b.tensor(y, dt)])


@converter("aten.where.self")
def where(b, cond, x, y):
    dt = b.out_dtype
    return b.op("Where", [b.cast(cond, np.bool_), b.tensor(x, dt), b.tensor(y, dt)])


# -- comparisons and logic -----------------------------------------------------------------------------

_COMPARE = {"eq": "Equal", "ne": "Equal", "lt": "Less", "le": "LessOrEqual", "gt": "Greater",
            "ge": "GreaterOrEqual"}


def _compare(b, x, y):
    name = str(b.node.target).split(".")[1]
    dt = np_dtype(torch.result_type(b.meta(x), b.meta(y)), f"the operands of {b.node.name}")
    out = b.op(_COMPARE[name], [b.tensor(x, dt), b.tensor(y, dt)])
    return b.op("Not", [out]) if name == "ne" else out


for _c in _COMPARE:
    converter(f"aten.{_c}.Tensor", f"aten.{_c}.Scalar")(_compare)

_LOGIC = {"logical_and": "And", "logical_or": "Or", "logical_xor": "Xor", "bitwise_and": "And",
          "bitwise_or": "Or", "bitwise_xor": "Xor"}
_BITWISE = {"And": "BitwiseAnd", "Or": "BitwiseOr", "Xor": "BitwiseXor"}


def _logic(b, x, y):
    name = str(b.node.target).split(".")[1]
    op, dt = _LOGIC[name], b.out_dtype
    if name.startswith("bitwise") and dt != np.bool_:
        return b.op(_BITWISE[op], [b.tensor(x, dt), b.tensor(y, dt)])
    return b.op(op, [b.tensor(x, np.bool_), b.tensor(y, np.bool_)])


for _l in _LOGIC:
    converter(f"aten.{_l}.default" if _l.startswith("logical") else f"aten.{_l}.Tensor")(_logic)


@converter("aten.bitwise_not.default")
def bitwise_not(b, x):
    return b.op("Not" if x.dtype == np.bool_ else "BitwiseNot", [x])


# -- reductions ----------------------------------------------------------------------------------------

def _dims(x, dim) -> list[int]:
    rank = len(x.shape)
    if dim is None or (isinstance(dim, (list, tuple)) and not dim):
        return list(range(rank))
    return [_axis(d, rank) for d in (dim if isinstance(dim, (list, tuple)) else [dim])]


@converter("aten.mean.dim", "aten.sum.dim_IntList", "aten.amax.default", "aten.amin.default",
           "aten.mean.default", "aten.sum.default")
def reduce(b, x, dim=None, keepdim=False, dtype=None):
    kind = str(b.node.target).split(".")[1]
    op = {"mean": "ReduceMean", "sum": "ReduceSum", "amax": "ReduceMax", "amin": "ReduceMin"}[kind]
    x = b.cast(x, b.out_dtype)
    axes, keep = _dims(x, dim), int(bool(keepdim))
    if op == "ReduceSum":   # opset 13+: axes an input; the others take an attribute until opset 18
        return b.op(op, [x, b.int64(axes)], {"keepdims": keep})
    return b.op(op, [x], {"axes": axes, "keepdims": keep})


@converter("aten.linalg_vector_norm.default")
def vector_norm(b, x, ord=2, dim=None, keepdim=False, dtype=None):
    """The 2-norm (ReduceL2) and 1-norm (ReduceL1); other orders are left to torch."""
    if ord not in (1, 2) or b.out_dtype.kind != "f":
        raise Unsupported(f"linalg_vector_norm of order {ord} on {b.out_dtype}")
    op = "ReduceL2" if ord == 2 else "ReduceL1"
    return b.op(op, [b.cast(x, b.out_dtype)], {"axes": _dims(x, dim), "keepdims": int(bool(keepdim))})


@converter("aten.argmax.default", "aten.argmin.default")
def argmax(b, x, dim=None, keepdim=False):
    """ArgMax / ArgMin of integers (CLIP's end-of-text position): the first index of the extreme value, as
    torch's; no dim: over the flattened tensor. Floats stay in torch: its NaN is the extreme, the kernel's not."""
    if x.dtype.kind not in "iub":
        raise Unsupported(f"argmax/argmin of {x.dtype} (torch picks a NaN, ge's kernel skips it)")
    op = "ArgMin" if str(b.node.target).startswith("aten.argmin") else "ArgMax"
    if dim is None:
        flat = b.op("Reshape", [x, b.int64([-1])])
        flat.dtype, flat.shape = x.dtype, (int(np.prod(x.shape)),)
        x, dim = flat, 0
        keepdim = False
    return b.op(op, [x], {"axis": _axis(dim, b.rank(x)), "keepdims": int(bool(keepdim)),
                         "select_last_index": 0})


@converter("aten.any.dim", "aten.any.dims", "aten.any.default", "aten.all.dim", "aten.all.dims",
           "aten.all.default")
def any_all(b, x, dim=None, keepdim=False):
    """any / all: each element as 0 or 1 (torch's truth: nonzero), reduced by max / min, back to bool."""
    ones = b.cast(b.cast(x, np.bool_), np.float32)
    op = "ReduceMax" if str(b.node.target).startswith("aten.any") else "ReduceMin"
    return b.cast(b.op(op, [ones], {"axes": _dims(x, dim), "keepdims": int(bool(keepdim))}), np.bool_)


@converter("aten.cumsum.default")
def cumsum(b, x, dim, dtype=None):
    return b.op("CumSum", [b.cast(x, b.out_dtype), b.int64(_axis(dim, b.rank(x)))])


# -- shapes and movement -------------------------------------------------------------------------------

@converter("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default")
def view(b, x, size):
    return b.op("Reshape", [x, b.int64(b.out_shape)])


def _dense(size, stride) -> bool:
    """Whether (size, stride) lays the elements out row-major with no gaps (size-1 dims' strides ignored)."""
    want = 1
    for n, st in reversed(list(zip(size, stride))):
        if n != 1 and st != want:
            return False
        want *= n
    return True


@converter("aten.as_strided.default")
def as_strided(b, x, size, stride, storage_offset=None):
    """A restriding that reads x's elements in order (x dense from its storage's start, the view dense too):
    a Reshape. Anything else reads torch's storage in a way a graph of values cannot see."""
    t = b.meta(x)
    if storage_offset or t.storage_offset() or not _dense(t.shape, t.stride()) or not _dense(size, stride) \
            or int(np.prod(size)) != int(np.prod(t.shape)):
        raise Unsupported(f"as_strided{tuple(size)}, strides {tuple(stride)} of a tensor with strides "
                          f"{tuple(t.stride())} (not a reshape)")
    return b.op("Reshape", [x, b.int64(size)])


@converter("aten.expand.default")
def expand(b, x, size, implicit=False):
    return b.op("Expand", [x, b.int64(b.out_shape)])


@converter("aten.permute.default")
def permute(b, x, dims):
    rank = b.rank(x)
    return b.op("Transpose", [x], {"perm": [_axis(d, rank) for d in dims]})


@converter("aten.transpose.int")
def transpose(b, x, d0, d1):
    perm = list(range(b.rank(x)))
    d0, d1 = _axis(d0, len(perm)), _axis(d1, len(perm))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return b.op("Transpose", [x], {"perm": perm})


@converter("aten.t.default")
def t(b, x):
    return b.op("Transpose", [x], {"perm": list(range(b.rank(x)))[::-1]})


@converter("aten.clone.default", "aten.alias.default", "aten.detach.default", "aten.lift_fresh_copy.default")
def identity(b, x, memory_format=None):
    """A copy or an alias of x: the same value in a graph of values (AOTAutograd functionalized it)."""
    return x


@converter("aten._to_copy.default")
def to_copy(b, x, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False,
            memory_format=None):
    if device is not None and torch.device(device).type != "cpu":
        raise Unsupported(f"a copy to device {device}")
    return b.cast(x, b.out_dtype)


@converter("prims.convert_element_type.default")
def convert_element_type(b, x, dtype):
    """What a retrace over symbolic sizes (specialize.py, gears.py) leaves of a dtype conversion."""
    return b.cast(x, b.out_dtype)


@converter("aten.unsqueeze.default")
def unsqueeze(b, x, dim):
    return b.op("Unsqueeze", [x, b.int64([_axis(dim, b.rank(x) + 1)])])


@converter("aten.squeeze.dim", "aten.squeeze.dims", "aten.squeeze.default")
def squeeze(b, x, dim=None):
    dims = [d for d in _dims(x, dim) if x.shape[d] == 1]   # torch skips dims that are not 1
    return b.op("Squeeze", [x, b.int64(dims)]) if dims else x


@converter("aten.slice.Tensor")
def slice_(b, x, dim=0, start=None, end=None, step=1):
    start, end = 0 if start is None else start, np.iinfo(np.int64).max if end is None else end
    if step < 1:
        raise Unsupported(f"slice step {step}")
    return b.op("Slice", [x, b.int64([start]), b.int64([end]), b.int64([_axis(dim, b.rank(x))]),
                          b.int64([step])])


@converter("aten.slice_scatter.default")
def slice_scatter(b, x, src, dim=0, start=None, end=None, step=1):
    """x with x[start:end] along dim replaced by src (Funnel's pooled tokens): x's head, src, x's tail
    concatenated; strided scatters are left to torch."""
    dim = _axis(dim, b.rank(x))
    n = x.shape[dim]
    start, end = (0 if start is None else start), (n if end is None else min(end, n))
    start, end = start + n if start < 0 else start, end + n if end < 0 else end
    if step != 1:
        raise Unsupported(f"slice_scatter with step {step}")
    parts = [b.op("Slice", [x, b.int64([a]), b.int64([e]), b.int64([dim])]) for a, e in ((0, start), (end, n))]
    pieces = [p for p, size in zip([parts[0], src, parts[1]], (start, end - start, n - end)) if size]
    return b.op("Concat", pieces, {"axis": dim}) if len(pieces) > 1 else b.op("Identity", pieces)


@converter("aten.select.int")
def select(b, x, dim, index):
    dim = _axis(dim, b.rank(x))
    return b.op("Gather", [x, b.int64(index + x.shape[dim] if index < 0 else index)], {"axis": dim})


@converter("aten.cat.default")
def cat(b, tensors, dim=0):
    # torch skips 1-D empty tensors in a cat (a legacy rule); ONNX would refuse their rank
    kept = [v for v in tensors if not (v.shape == (0,) and len(b.out_shape) != 1)]
    dt = b.out_dtype
    if len(kept) == 1:
        return b.cast(kept[0], dt)
    return b.op("Concat", [b.cast(v, dt) for v in kept], {"axis": _axis(dim, len(b.out_shape))})


@converter("aten.split_with_sizes.default", "aten.split.Tensor")
def split(b, x, sizes, dim=0):
    dim = _axis(dim, b.rank(x))
    if isinstance(sizes, int):
        n = x.shape[dim]
        sizes = [min(sizes, n - i) for i in range(0, n, sizes)]
    return b.op("Split", [x, b.int64(sizes)], {"axis": dim}, outputs=len(sizes))


@converter("aten.constant_pad_nd.default")
def constant_pad_nd(b, x, pad, value=0):
    rank = b.rank(x)
    if any(p < 0 for p in pad):
        raise Unsupported("negative padding (a crop)")
    begins, ends = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):   # torch pads the last dim first: (left, right, top, bottom, ...)
        begins[rank - 1 - i], ends[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    return b.op("Pad", [x, b.int64(begins + ends), b.const(np.asarray(value, x.dtype))], {"mode": "constant"})


@converter("aten.repeat.default")
def repeat(b, x, repeats):
    if len(repeats) > b.rank(x):
        x = b.op("Reshape", [x, b.int64((1,) * (len(repeats) - len(x.shape)) + tuple(x.shape))])
    return b.op("Tile", [x, b.int64(repeats)])


# -- indexing ------------------------------------------------------------------------------------------

@converter("aten.index.Tensor")
def index(b, x, indices):
    """x[idx] on one axis (the others None): a Gather; x[i0, i1, ...] on the leading axes: GatherND over
    the index tensors broadcast together and stacked on a last axis."""
    given = [(k, v) for k, v in enumerate(indices) if v is not None]
    if any(v.dtype == np.bool_ for _, v in given):
        raise Unsupported("indexing with a boolean mask (the result's shape follows the data)")
    if len(given) == 1:
        axis, idx = given[0]
        return b.op("Gather", [x, b.cast(idx, np.int64)], {"axis": axis})
    axes, rank = [k for k, _ in given], b.rank(x)
    rest = [k for k in range(rank) if k not in axes]
    if axes != list(range(len(axes))):   # the indexed axes moved to the front for GatherND
        x = b.op("Transpose", [x], {"perm": axes + rest})
    shape = tuple(np.broadcast_shapes(*[v.shape for _, v in given]))
    stacked = [b.op("Unsqueeze", [b.op("Expand", [b.cast(v, np.int64), b.int64(shape)]), b.int64([-1])])
               for _, v in given]
    y = b.op("GatherND", [x, b.op("Concat", stacked, {"axis": -1})])
    first, m = axes[0], len(shape)
    if axes == list(range(first, first + len(axes))) and first > 0:   # adjacent: torch keeps their place
        perm = list(range(m, m + first)) + list(range(m)) + list(range(m + first, m + len(rest)))
        y = b.op("Transpose", [y], {"perm": perm})
    return y


@converter("aten.gather.default")
def gather(b, x, dim, idx, sparse_grad=False):
    return b.op("GatherElements", [x, b.cast(idx, np.int64)], {"axis": _axis(dim, b.rank(x))})


# -- tensors made from sizes (static here: folded to constants) -----------------------------------------

def _device_ok(device):
    if device is not None and torch.device(device).type != "cpu":
        raise Unsupported(f"a tensor made on device {device}")


@converter("aten.full.default")
def full(b, size, fill_value, dtype=None, layout=None, device=None, pin_memory=None):
    _device_ok(device)
    return b.const(np.full(b.out_shape, fill_value, b.out_dtype))


@converter("aten.full_like.default")
def full_like(b, x, fill_value, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    _device_ok(device)
    return b.const(np.full(b.out_shape, fill_value, b.out_dtype))


@converter("aten.arange.start_step", "aten.arange.start", "aten.arange.default")
def arange(b, *args, dtype=None, layout=None, device=None, pin_memory=None):
    _device_ok(device)
    with unset_fake_temporarily():   # AOTAutograd traces under a fake mode: this one is a real tensor
        return b.const(torch.arange(*args, dtype=b.val.dtype).numpy())


@converter("aten.scalar_tensor.default")
def scalar_tensor(b, value, dtype=None, layout=None, device=None, pin_memory=None):
    _device_ok(device)
    return b.const(np.asarray(value, b.out_dtype))
