"""Sequences and optionals on the host (OpKernel.host): the values torch's scripted loops carry.

A sequence is a Python list of numpy arrays, an optional is None or its element. Sequences are immutable
values: every op builds a new list, and an array entering one is copied (it may be a view of memory the
runtime reuses once its last reader ran).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import GEError

from .registry import register_host


def _pos(call, seq, p, insert=False):
    n = len(seq)
    i = int(np.asarray(p).reshape(()))
    hi = n if insert else n - 1
    if not -n <= i <= hi:
        raise call.error(f"position {i} is out of range for a sequence of {n}")
    return i % (n + 1) if insert and i >= 0 else (i + n if i < 0 else i)


@register_host("SequenceConstruct")
def sequence_construct(call, args):
    return [[np.array(a) for a in args]]


@register_host("SequenceEmpty")
def sequence_empty(call, args):
    return [[]]


@register_host("SequenceLength")
def sequence_length(call, args):
    return [np.array(len(args[0]), np.int64)]


@register_host("SequenceAt")
def sequence_at(call, args):
    seq = args[0]
    return [seq[_pos(call, seq, args[1])]]


@register_host("SequenceInsert")
def sequence_insert(call, args):
    seq = list(args[0])
    at = len(seq) if len(args) < 3 or args[2] is None else _pos(call, seq, args[2], insert=True)
    seq.insert(at, np.array(args[1]))
    return [seq]


@register_host("SequenceErase")
def sequence_erase(call, args):
    seq = list(args[0])
    if not seq:
        raise call.error("cannot erase from an empty sequence")
    del seq[len(seq) - 1 if len(args) < 2 or args[1] is None else _pos(call, seq, args[1])]
    return [seq]


@register_host("ConcatFromSequence")
def concat_from_sequence(call, args):
    seq, axis = args[0], int(call.attrs["axis"])
    if not seq:
        raise call.error("cannot concatenate an empty sequence")
    try:
        if call.attrs.get("new_axis", 0):
            return [np.stack(seq, axis=axis if axis >= 0 else axis + seq[0].ndim + 1)]
        return [np.concatenate(seq, axis=axis)]
    except (ValueError, np.exceptions.AxisError) as e:
        raise call.error(str(e)) from None


@register_host("SplitToSequence")
def split_to_sequence(call, args):
    x, split = args[0], args[1] if len(args) > 1 else None
    axis = int(call.attrs.get("axis", 0))
    if not -x.ndim <= axis < x.ndim:
        raise call.error(f"axis {axis} is out of range for rank {x.ndim}")
    axis %= x.ndim
    n = x.shape[axis]
    if split is None:
        parts = [np.take(x, [i], axis=axis) for i in range(n)]
        if not call.attrs.get("keepdims", 1):
            parts = [p.squeeze(axis) for p in parts]
        return [parts]
    split = np.asarray(split).astype(np.int64)
    if split.ndim == 0:
        size = int(split)
        if size <= 0:
            raise call.error(f"split size {size} must be positive")
        sizes = [size] * (n // size) + ([n % size] if n % size else [])
    else:
        sizes = [int(s) for s in split]
        if sum(sizes) != n or min(sizes, default=0) < 0:
            raise call.error(f"split sizes {sizes} do not add up to the axis length {n}")
    bounds = np.cumsum(sizes)[:-1]
    return [[np.array(p) for p in np.split(x, bounds, axis=axis)]]


@register_host("Optional")
def optional(call, args):
    return [args[0] if args else None]


@register_host("OptionalHasElement")
def optional_has_element(call, args):
    return [np.array(bool(args) and args[0] is not None)]


@register_host("OptionalGetElement")
def optional_get_element(call, args):
    if args[0] is None:
        raise call.error("the optional is empty")
    return [args[0]]


def identity(call, args):
    """Identity of a sequence or optional (the tensor Identity is an alias kernel)."""
    return [args[0]]


def host_kernel(op_type: str, name: str, kinds, kernel):
    """The kernel a node runs given its values' kinds ("tensor", "sequence", ...): a tensor kernel meeting
    sequences or optionals is refused, save Identity, which then runs on the host (`identity`)."""
    other = next((k for k in kinds if k != "tensor"), None)
    if kernel.host is None and other is not None:
        if op_type == "Identity":
            return dataclasses.replace(kernel, host=identity)
        raise GEError(f"{op_type} node '{name}' reads or gives a {other}: ge runs sequences and optionals through "
                      "the sequence, optional and control-flow ops only")
    return kernel
