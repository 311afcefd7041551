"""The ATen converter registry: one small function per ATen op builds ge IR nodes (ONNX-named ops, opset 17).

The idea is TorchAir's `register_fx_node_ge_converter` (torchair/core/_concrete_graph, the ge_converter
package): each converter receives the FX node's arguments with tensors replaced by ir.Values and adds nodes
through a Builder. A converter that cannot honour its arguments (a dtype ge lacks, a mode it does not
implement) raises `Unsupported(reason)`: the partitioner (partition.py) then leaves that node to PyTorch,
so an op ge cannot run exactly is never run approximately.

    @converter("aten.relu.default")
    def relu(b, x):
        return b.op("Relu", [x])

The Builder sets each FX node's result dtype and shape from its `meta["val"]` (the fake tensor AOTAutograd
traced); values inside a converter are typed later by ge's own inference (passes/infer_shapes.py).
"""
from __future__ import annotations

import numpy as np
import torch

from ..ir import Graph, Value
from ..ir.dtypes import to_onnx
from .streams import stream_label

CONVERTERS: dict[str, callable] = {}

# torch dtypes ge's kernels compile for (ge/ir/dtypes.py); others (complex, float8, uint1-7...) are refused
DTYPES = {torch.float32: np.float32, torch.float64: np.float64, torch.float16: np.float16,
          torch.int8: np.int8, torch.int16: np.int16, torch.int32: np.int32, torch.int64: np.int64,
          torch.uint8: np.uint8, torch.bool: np.bool_}


class Unsupported(Exception):
    """A converter declines a node; the message says why (logged as the graph break's reason)."""


def converter(*names: str):
    """Register `fn(b, *args, **kwargs)` for the ATen overloads named like "aten.add.Tensor"."""
    def deco(fn):
        for name in names:
            if name in CONVERTERS:
                raise ValueError(f"two converters for {name}")
            CONVERTERS[name] = fn
        return fn
    return deco


def op_name(target) -> str:
    """The registry's key of an FX call_function target ("aten.add.Tensor", "getitem")."""
    return getattr(target, "__name__", str(target)) if not isinstance(target, torch._ops.OpOverload) \
        else str(target)


def np_dtype(dtype: torch.dtype, what: str) -> np.dtype:
    if dtype not in DTYPES:
        raise Unsupported(f"{what} is {dtype}, which ge has no kernels for")
    return np.dtype(DTYPES[dtype])


class Builder:
    """Adds IR nodes for one FX node at a time; converters call its methods."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.node = None   # the torch.fx.Node being converted
        self.vals: dict[int, object] = {}   # id(Value) -> the fake tensor of the FX node it stands for

    def meta(self, x):
        """An operand as torch sees it (for type promotion): the FX node's fake tensor, or the number."""
        return self.vals[id(x)] if isinstance(x, Value) else x

    @property
    def val(self):
        """The FX node's result as AOTAutograd traced it (a FakeTensor, or a tuple of them)."""
        return self.node.meta.get("val")

    @property
    def out_dtype(self) -> np.dtype:
        return np_dtype(self.val.dtype, f"the result of {self.node.name}")

    @property
    def out_shape(self) -> tuple[int, ...]:
        return static_shape(self.val, self.node.name)

    def op(self, op_type: str, inputs, attrs: dict | None = None, outputs: int = 1, domain: str = ""):
        """One IR node named after the FX node; its output Value (or list of them)."""
        base = self.node.name if self.node is not None else op_type.lower()
        names = [self.graph.fresh_name(f"{base}/{op_type}" if i == 0 else f"{base}/{op_type}:{i}")
                 for i in range(outputs)]
        label = stream_label(self.node)   # ge.torch.stream_scope (streams.py)
        if label is not None:
            attrs = {**(attrs or {}), "_stream_label": label}
        node = self.graph.add_node(op_type, inputs, names, attrs, names[0], domain)
        return node.outputs[0] if outputs == 1 else list(node.outputs)

    def const(self, array, dtype=None) -> Value:
        a = np.asarray(array, dtype)
        return self.graph.add_const(f"{self.node.name}/const" if self.node is not None else "const", a)

    def int64(self, values) -> Value:
        return self.const(np.asarray(values, np.int64))

    def cast(self, v: Value, dtype) -> Value:
        dtype = np.dtype(dtype)
        if v.dtype == dtype:
            return v
        if v.const is not None:
            return self.const(v.const.astype(dtype))
        out = self.op("Cast", [v], {"to": to_onnx(dtype)})
        out.dtype = dtype
        return out

    def tensor(self, x, dtype) -> Value:
        """A converter's operand as a Value of `dtype`: a Python scalar becomes a 0-d constant, a tensor is
        cast when torch's type promotion gave the result another dtype (int + float, bool masks...)."""
        if isinstance(x, Value):
            return self.cast(x, dtype)
        if isinstance(x, (bool, int, float)):
            return self.const(np.asarray(x, dtype))
        raise Unsupported(f"operand {x!r} of type {type(x).__name__} is not a tensor or a number")

    def rank(self, v: Value) -> int:
        if v.shape is None:
            raise Unsupported(f"the rank of '{v.name}' is unknown")
        return len(v.shape)

    def typed(self, v: Value, val) -> Value:
        """Give v the dtype and static shape of the FX value `val` (a FakeTensor)."""
        v.dtype = np_dtype(val.dtype, f"'{v.name}'")
        v.shape = static_shape(val, v.name)
        return v


def static_shape(val, where: str) -> tuple[int, ...]:
    """A fake tensor's shape as ints; symbolic sizes are refused (this slice compiles static shapes)."""
    if not isinstance(val, torch.Tensor):
        raise Unsupported(f"'{where}' is a {type(val).__name__}, not a tensor")
    out = []
    for d in val.shape:
        if not isinstance(d, int):
            raise Unsupported(f"'{where}' has a symbolic size {d} (dynamic shapes: not in this backend yet)")
        out.append(d)
    return tuple(out)
