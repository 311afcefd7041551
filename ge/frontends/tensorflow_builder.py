"""The TensorFlow frontend's graph builder: converters add IR nodes through it (see tensorflow.py, Step 4).

Every node it adds gets dtypes and shapes from the kernel's infer right away (symbolic dims are probed with
two stand-in sizes), and a node whose inputs are all constant is folded at once: converters see through
the constant subgraphs of frozen graphs (Keras' BatchNormalization arithmetic, shape computations).
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelLoadError, ShapeError
from ..ir import Graph, Value
from ..kernels.bind import node_context, node_kernel
from ..kernels.registry import TensorSpec, UnknownValueError, run_kernel
from .tensorflow_graphdef import attr

NHWC_TO_NCHW, NCHW_TO_NHWC = [0, 3, 1, 2], [0, 2, 3, 1]
PROBES = (97, 131)  # stand-in sizes of symbolic dims while inferring shapes at import


class Builder:
    """Adds IR nodes for one TF node at a time; converters (tensorflow_ops.py) call its methods."""

    def __init__(self, graph: Graph, track_layout: bool = True):
        self.graph = graph
        self.track_layout = track_layout
        self.node = None  # the TF node being converted
        self._nchw_of: dict[int, Value] = {}  # NHWC value -> the NCHW value it transposes

    # naming and nodes
    def op(self, op_type: str, inputs, attrs: dict | None = None, outputs: int = 1, domain: str = ""):
        """Add one IR node (named after the TF node being converted); its output Value(s), with shapes
        inferred when the inputs are static."""
        base = f"{self.node.name}/{op_type}" if self.node is not None else op_type
        names = [self.graph.fresh_name(base if i == 0 else f"{base}:{i}") for i in range(outputs)]
        node = self.graph.add_node(op_type, inputs, names, attrs, names[0], domain)
        self._infer(node)
        if all(v is None or v.const is not None for v in node.inputs) and any(node.inputs):
            self._fold(node)  # constants stay constants: converters can see through them
        return node.outputs[0] if outputs == 1 else node.outputs

    def _fold(self, node) -> None:
        kernel = node_kernel(self.graph, node)
        arrays = [None if v is None else v.const for v in node.inputs]
        self.graph.fold_node(node, run_kernel(kernel, node_context(self.graph, node, kernel, values=arrays),
                                              arrays))

    def _infer(self, node) -> None:
        """Output dtypes and shapes from the kernel's infer. Symbolic dims (an unknown batch) are probed
        with two stand-in sizes: dims that follow them stay symbolic, the others are static."""
        if any(v is not None and (v.dtype is None or v.shape is None) for v in node.inputs):
            return
        kernel = node_kernel(self.graph, node)
        symbols = sorted({d for v in node.inputs if v is not None for d in v.shape if isinstance(d, str)})
        runs = []
        for probe in PROBES if symbols else (0,):
            sub = {s: probe + 2 * j for j, s in enumerate(symbols)}
            specs = [None if v is None else TensorSpec(tuple(sub.get(d, d) for d in v.shape), v.dtype)
                     for v in node.inputs]
            try:
                runs.append((sub, kernel.infer(node_context(self.graph, node, kernel, specs))))
            except UnknownValueError:
                return
            except ShapeError as e:
                if symbols:  # a stand-in size may not fit (a Reshape to a fixed size): shape unknown here
                    return
                raise ShapeError(f"TensorFlow node '{self.node.name}' ({self.node.op}): {e}") from None
        for k, v in enumerate(node.outputs):
            spec = runs[0][1][k]
            v.dtype, v.shape = spec.dtype, spec.shape
            if symbols:
                back = {(runs[0][0][s], runs[1][0][s]): s for s in symbols}
                v.shape = tuple(a if a == b else back.get((a, b), f"{v.name}_d{i}")
                                for i, (a, b) in enumerate(zip(spec.shape, runs[1][1][k].shape)))

    def const(self, array, dtype=None) -> Value:
        a = np.asarray(array, dtype)
        return self.graph.add_const(f"{self.node.name}/const" if self.node is not None else "const", a)

    def int64(self, values) -> Value:
        return self.const(np.asarray(values, np.int64))

    # attributes and constant inputs
    def attr(self, name: str, default=None):
        return attr(self.node, name, default)

    def value_of(self, v: Value, what: str) -> np.ndarray:
        """The constant value of an input the mapping needs at import (an axis, a perm, paddings...)."""
        if v.const is None:
            raise ModelLoadError(f"node '{self.node.name}' ({self.node.op}): its {what} must be a constant "
                                 "(a frozen graph folds it); this one is computed at run time")
        return v.const

    def rank(self, v: Value) -> int:
        if v.shape is None:
            raise ModelLoadError(f"node '{self.node.name}' ({self.node.op}): the rank of '{v.name}' is "
                                 "unknown; give the Placeholders full shapes")
        return len(v.shape)

    def graph_dim(self, v: Value, axis: int) -> int:
        """A static dim of v, needed at import."""
        d = None if v.shape is None else v.shape[axis]
        if not isinstance(d, int):
            raise ModelLoadError(f"node '{self.node.name}' ({self.node.op}): dim {axis} of '{v.name}' must be "
                                 "static")
        return d

    def as_int64(self, v: Value) -> Value:
        """An index/shape input as int64 (ONNX wants int64 where TF allows int32)."""
        if v.const is not None:
            return self.int64(v.const)
        return v if v.dtype == np.int64 else self.op("Cast", [v], {"to": 7})

    # layout
    def nchw(self, v: Value) -> Value:
        """The NCHW form of an NHWC value: the value it was transposed from, or a new Transpose."""
        src = self._nchw_of.get(id(v))
        if src is None:
            src = self.op("Transpose", [v], {"perm": NHWC_TO_NCHW})
            self._nchw_of.setdefault(id(v), src)  # one transpose per value, shared by its readers
        return src

    def nhwc(self, v: Value) -> Value:
        """An NCHW result back in NHWC; remembered so readers that follow NCHW skip the transpose."""
        out = self.op("Transpose", [v], {"perm": NCHW_TO_NHWC})
        if self.track_layout:
            self._nchw_of[id(out)] = v
        return out

    def in_nchw(self, v: Value) -> Value | None:
        """The NCHW value v is a transpose of (only while tracking layouts), else None."""
        return self._nchw_of.get(id(v)) if self.track_layout else None

    def spatial(self, data_format: str, x: Value, fn) -> Value:
        """fn(x in NCHW) -> NCHW result, returned in the node's data format."""
        if data_format.startswith("NC"):
            return fn(x)
        return self.nhwc(fn(self.nchw(x)))

    def pointwise(self, inputs: list[Value], fn) -> Value:
        """fn(*inputs) for a pointwise op; computed in NCHW when every non-constant input is a tracked
        NHWC value of rank 4 (constants are transposed to match), which keeps transposes away."""
        if self.track_layout:
            moved = []
            for v in inputs:
                if v.const is not None and v.const.ndim <= 4:
                    c = v.const.reshape((1,) * (4 - v.const.ndim) + v.const.shape)
                    moved.append(c.transpose(NHWC_TO_NCHW))
                elif self.in_nchw(v) is not None and v.shape is not None and len(v.shape) == 4:
                    moved.append(self.in_nchw(v))
                else:
                    break
            else:
                if any(not isinstance(m, np.ndarray) for m in moved):
                    return self.nhwc(fn(*[self.const(m) if isinstance(m, np.ndarray) else m for m in moved]))
        return fn(*inputs)
