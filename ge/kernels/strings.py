"""String tensors on the host: the ONNX string ops, and the data-movement ops when they meet strings.

A string tensor is a numpy object array of Python `str` (ge.ir.dtypes.STRING, as onnxruntime gives them).
No Numba kernel sees one: a node that reads or gives strings runs on the host (OpKernel.host): runtime_v2's
buffer table holds host values next to device views, runtime_v1 runs it as a host task with the strings in a
side table (runtime_v1/host.py); the memory planner leaves such values out of the feature map (they are
outputs of dynamic nodes). Output shapes at compile time: host_tasks.py. Two kinds of op:
- the string ops (`register_host`): StringNormalizer, RegexFullMatch, StringConcat, StringSplit;
- ops ge has numeric kernels for (Identity, Reshape, Concat, Gather, Equal, Cast...): `on_strings` gives
  the node the host function of `GENERIC` instead of its kernel (bind.node_kernel, when a value of the
  node is a string tensor); an op not in GENERIC meeting strings is an UnsupportedOpError naming the node.
Step per op: read the attributes, compute with numpy on the object arrays, return new arrays.
Casts follow onnxruntime (onnxruntime/core/providers/cpu/tensor/cast_op.cc): a float or double as "%.8g"
prints it ("1", "0.1", "1.2345679e+08"; "NaN", "INF", "-INF"), an integer in decimal, a bool as "1"/"0"; text to a number
parses it (case-insensitive "nan"/"inf"), text that is no number is an ExecutionError naming the node.
"""
from __future__ import annotations

import dataclasses
import operator
import re

import numpy as np

from ..errors import ExecutionError, UnsupportedOpError
from ..ir.dtypes import STRING, as_strings, from_onnx
from .registry import AICPU, OpKernel, _host_infer, _host_prepare, register_host, registered_ops

_concat = np.frompyfunc(operator.add, 2, 1)


def _text(x) -> np.ndarray:
    a = np.asarray(x)
    return a if a.dtype == STRING else as_strings(a)


def _attr(call, name, default=None):
    v = call.attrs.get(name, default)
    return v.decode() if isinstance(v, bytes) else v


# -- the string ops -------------------------------------------------------------------------------------

@register_host("StringNormalizer", since=10)
def string_normalizer(call, args):
    x = _text(args[0])
    if x.ndim not in (1, 2) or (x.ndim == 2 and x.shape[0] != 1):
        raise call.error(f"input must be [C] or [1, C], got {list(x.shape)}")
    action = _attr(call, "case_change_action", "NONE")
    if action not in ("NONE", "LOWER", "UPPER"):
        raise call.error(f"case_change_action '{action}': one of NONE, LOWER, UPPER")
    sensitive = bool(call.attrs.get("is_case_sensitive", 0))
    stop = [s.decode() if isinstance(s, bytes) else s for s in call.attrs.get("stopwords", [])]
    stop = set(stop) if sensitive else {s.lower() for s in stop}
    words = [w for w in x.reshape(-1) if (w if sensitive else w.lower()) not in stop]
    if action == "LOWER":
        words = [w.lower() for w in words]
    elif action == "UPPER":
        words = [w.upper() for w in words]
    out = np.array(words or [""], dtype=object)   # all dropped: one empty string (the spec's rule)
    return [out.reshape(1, -1) if x.ndim == 2 else out]


@register_host("RegexFullMatch", since=20)
def regex_full_match(call, args):
    pattern = _attr(call, "pattern", "")
    try:
        rx = re.compile(pattern)
    except re.error as e:   # RE2 syntax in ONNX; Python's re reads the common subset
        raise call.error(f"pattern {pattern!r} is not a valid regular expression: {e}") from None
    x = _text(args[0])
    return [np.array([rx.fullmatch(s) is not None for s in x.reshape(-1)], bool).reshape(x.shape)]


@register_host("StringConcat", since=20)
def string_concat(call, args):
    x, y = _text(args[0]), _text(args[1])
    try:
        out = _concat(x, y)
    except ValueError as e:
        raise call.error(f"inputs {list(x.shape)} and {list(y.shape)} do not broadcast ({e})") from None
    return [np.asarray(out, dtype=object).reshape(np.broadcast_shapes(x.shape, y.shape))]


@register_host("StringSplit", since=20)
def string_split(call, args):
    x = _text(args[0])
    delim = _attr(call, "delimiter", "") or None   # unset or "": runs of whitespace, as str.split()
    maxsplit = call.attrs.get("maxsplit")
    maxsplit = -1 if maxsplit is None else int(maxsplit)
    if maxsplit < -1:
        maxsplit = -1
    parts = [s.split(delim, maxsplit) if s else [] for s in x.reshape(-1)]   # "": no parts (onnxruntime's)
    width = max((len(p) for p in parts), default=0)
    y = np.full((len(parts), width), "", dtype=object)
    for i, p in enumerate(parts):
        y[i, :len(p)] = p
    counts = np.array([len(p) for p in parts], np.int64).reshape(x.shape)
    return [y.reshape(*x.shape, width), counts]


# -- ops with numeric kernels, on strings -----------------------------------------------------------------

def _ints(a) -> list[int]:
    return [int(v) for v in np.asarray(a).reshape(-1)]


def _axes(call, args, k, ndim, attr="axes"):
    """Axes from input k (newer opsets) or the attribute, made non-negative against `ndim`."""
    raw = _ints(args[k]) if len(args) > k and args[k] is not None else call.attrs.get(attr)
    if raw is None:
        return None
    out = []
    for a in raw:
        if not -ndim <= int(a) < ndim:
            raise call.error(f"axis {a} is out of range for rank {ndim}")
        out.append(int(a) % ndim)
    return out


def _identity(call, args):
    return [np.array(args[0], dtype=object)]


def _reshape(call, args):
    x, shape = args[0], _ints(args[1]) if len(args) > 1 else _ints(call.attrs.get("shape", []))
    allowzero = call.attrs.get("allowzero", 0)
    shape = [x.shape[i] if d == 0 and not allowzero and i < x.ndim else d for i, d in enumerate(shape)]
    try:
        return [np.array(x, dtype=object).reshape(shape)]
    except ValueError as e:
        raise call.error(f"cannot reshape {list(x.shape)} to {shape}: {e}") from None


def _flatten(call, args):
    x, axis = args[0], int(call.attrs.get("axis", 1))
    axis = axis + x.ndim if axis < 0 else axis
    lead = int(np.prod(x.shape[:axis], dtype=np.int64))
    return [np.array(x, dtype=object).reshape(lead, -1 if lead else int(np.prod(x.shape[axis:])))]


def _squeeze(call, args):
    x = args[0]
    axes = _axes(call, args, 1, x.ndim)
    axes = [i for i, d in enumerate(x.shape) if d == 1] if axes is None else axes
    return [np.squeeze(x, axis=tuple(axes)).copy()]


def _unsqueeze(call, args):
    x = args[0]
    raw = _ints(args[1]) if len(args) > 1 and args[1] is not None else call.attrs.get("axes", [])
    out_rank = x.ndim + len(raw)
    axes = sorted(int(a) % out_rank for a in raw)
    y = x
    for a in axes:
        y = np.expand_dims(y, a)
    return [y.copy()]


def _transpose(call, args):
    x = args[0]
    perm = call.attrs.get("perm") or list(range(x.ndim))[::-1]
    return [np.transpose(x, perm).copy()]


def _concat_op(call, args):
    xs = [a for a in args if a is not None]
    axis = int(call.attrs.get("axis", 0))
    return [np.concatenate(xs, axis=axis).astype(object)]


def _gather(call, args):
    x, idx = args[0], np.asarray(args[1]).astype(np.int64)
    axis = int(call.attrs.get("axis", 0)) % max(x.ndim, 1)
    n = x.shape[axis]
    if ((idx < -n) | (idx >= n)).any():
        raise call.error(f"an index is out of range [-{n}, {n - 1}]")
    return [np.take(x, np.where(idx < 0, idx + n, idx), axis=axis)]


def _gather_elements(call, args):
    x, idx = args[0], np.asarray(args[1]).astype(np.int64)
    axis = int(call.attrs.get("axis", 0)) % x.ndim
    n = x.shape[axis]
    return [np.take_along_axis(x, np.where(idx < 0, idx + n, idx), axis=axis)]


def _slice(call, args):
    x = args[0]
    if len(args) > 1:
        starts, ends = _ints(args[1]), _ints(args[2])
        axes = _ints(args[3]) if len(args) > 3 and args[3] is not None else list(range(len(starts)))
        steps = _ints(args[4]) if len(args) > 4 and args[4] is not None else [1] * len(starts)
    else:
        starts, ends = call.attrs["starts"], call.attrs["ends"]
        axes = call.attrs.get("axes", list(range(len(starts))))
        steps = [1] * len(starts)
    index = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        index[int(a) % x.ndim] = slice(*slice(s, e, st).indices(x.shape[int(a) % x.ndim]))
    return [x[tuple(index)].copy()]


def _expand(call, args):
    x, shape = args[0], _ints(args[1])
    return [np.broadcast_to(x, np.broadcast_shapes(x.shape, tuple(shape))).copy()]


def _tile(call, args):
    return [np.tile(args[0], _ints(args[1]))]


def _where(call, args):
    cond, x, y = args
    return [np.where(np.asarray(cond, bool), x, y).astype(object)]


def _equal(call, args):
    x, y = _text(args[0]), _text(args[1])
    return [np.asarray(np.equal(x, y), dtype=bool)]


def _split(call, args):
    x = args[0]
    axis = int(call.attrs.get("axis", 0)) % x.ndim
    n_out = len(call.out_dtypes)
    split = _ints(args[1]) if len(args) > 1 and args[1] is not None else call.attrs.get("split")
    if split is None:
        size = -(-x.shape[axis] // n_out)
        split = [min(size, x.shape[axis] - size * k) for k in range(n_out)]
    return [p.copy() for p in np.split(x, np.cumsum(split)[:-1], axis=axis)]


def _shape(call, args):
    x = args[0]
    rank = x.ndim
    start, end = call.attrs.get("start", 0), call.attrs.get("end", rank)
    start, end = (min(max(v + rank if v < 0 else v, 0), rank) for v in (start, end))
    return [np.array(x.shape[start:end], np.int64)]


def _size(call, args):
    return [np.array(np.asarray(args[0]).size, np.int64)]


def _float_text(v: float) -> str:
    if np.isnan(v):
        return "NaN"
    if np.isinf(v):
        return "INF" if v > 0 else "-INF"
    return "%.8g" % float(v)   # onnxruntime's snprintf "%.8g" (float and double): "1", "1e+16", "-0"


def to_text(x: np.ndarray) -> np.ndarray:
    """Cast to string (onnxruntime's rules, module doc)."""
    flat = np.asarray(x).reshape(-1)
    out = np.empty(flat.shape, object)
    if flat.dtype == np.bool_:
        out[:] = ["1" if v else "0" for v in flat]
    elif flat.dtype.kind in "iu":
        out[:] = [str(int(v)) for v in flat]
    elif flat.dtype == STRING:
        out[:] = flat
    else:   # float16 / bfloat16 through float32, as onnxruntime formats them
        f = flat if flat.dtype in (np.float32, np.float64) else flat.astype(np.float32)
        out[:] = [_float_text(v) for v in f]
    return out.reshape(np.shape(x))


def from_text(call, x: np.ndarray, dtype) -> np.ndarray:
    """Cast from string to a numeric type (module doc)."""
    dtype = np.dtype(dtype)
    flat = _text(x).reshape(-1)
    out = np.empty(flat.shape, dtype)
    for i, s in enumerate(flat):
        t = s.strip()
        try:
            if dtype == np.bool_:
                out[i] = float(t) != 0 if t.lower() not in ("true", "false") else t.lower() == "true"
            elif dtype.kind in "iu":
                out[i] = int(t)
            else:
                out[i] = float(t)
        except (ValueError, OverflowError):
            raise ExecutionError(f"{call.op_type} node '{call.name}': cannot read {s[:40]!r} as "
                                 f"{dtype}") from None
    return out.reshape(np.shape(x))


def _cast(call, args):
    x = args[0]
    to = call.out_dtypes[0] if call.out_dtypes and call.out_dtypes[0] is not None else from_onnx(call.attrs["to"])
    if np.dtype(to) == STRING:
        return [to_text(x)]
    if x.dtype == STRING:
        return [from_text(call, x, to)]
    return [np.asarray(x).astype(to)]


def _constant(call, args):
    value = call.attrs.get("value")
    if value is None:   # Constant(value_strings=[...]) (opset 12+), or value_string: a scalar
        value = call.attrs.get("value_strings", call.attrs.get("value_string"))
    return [np.array(value, dtype=object)]


GENERIC = {
    "Identity": _identity, "Reshape": _reshape, "Flatten": _flatten, "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze, "Transpose": _transpose, "Concat": _concat_op, "Gather": _gather,
    "GatherElements": _gather_elements, "Slice": _slice, "Expand": _expand, "Tile": _tile, "Where": _where,
    "Equal": _equal, "Split": _split, "Shape": _shape, "Size": _size, "Cast": _cast, "CastLike": _cast,
    "Constant": _constant,
}


FOLDABLE_OPS = frozenset({"StringNormalizer", "RegexFullMatch", "StringConcat", "StringSplit"})


def foldable(kernel: OpKernel) -> bool:
    """A host kernel of this module: pure, so constant inputs fold at compile time (fold_constants)."""
    return kernel.host is not None and (kernel.host in GENERIC.values() or kernel.op_type in FOLDABLE_OPS)


def on_strings(kernel: OpKernel, node: str, opset: int) -> OpKernel:
    """The kernel for a node one of whose values is a string tensor (module doc): its GENERIC host function,
    or an UnsupportedOpError naming the node."""
    if kernel.host is not None:
        return kernel
    fn = GENERIC.get(kernel.op_type) if kernel.domain == "" else None
    if fn is None:
        raise UnsupportedOpError(kernel.op_type, kernel.domain, opset, node, registered_ops(),
                                 "the node reads or gives a string tensor; ge runs strings through "
                                 f"{', '.join(sorted(GENERIC))} and the string and ONNX-ML ops")
    return dataclasses.replace(kernel, infer=_host_infer, prepare=_host_prepare, host=fn, engine=AICPU,
                               alias=None, inplace=(), value_inputs=())
