"""The IR: a Graph owns ordered Nodes; a Value is defined once and knows its producer and users.

Change a graph only through Graph methods (add_node, erase_node, replace_all_uses_with, ...) so that
producer/user links never go stale. Shapes are tuples of ints, or of strings for symbolic dims; a shape
of None means the rank is unknown.

Control flow (If, Loop, Scan): a node may own subgraphs (`Node.bodies`, ONNX graph attributes), as torch.fx
nodes own submodules. A body reads outer values by reference only through its `captures`: one body-local
stand-in per outer value, and the node lists the outer values themselves as its last inputs (the
captures of each body in turn), so uses, lifetimes and dead-code elimination see them as ordinary reads.
A value is a tensor unless `kind` says "sequence" or "optional" (dtype: the element type; an optional of
a sequence is "optional_sequence"): only the sequence and optional ops (and control bodies) carry them.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

Dim = int | str
Shape = tuple[Dim, ...]


@dataclass(eq=False, slots=True)
class Value:
    name: str
    dtype: np.dtype | None = None
    shape: Shape | None = None
    producer: Node | None = None
    users: list[Node] = field(default_factory=list)
    const: np.ndarray | None = None
    kind: str = "tensor"  # | "sequence" | "optional" | "optional_sequence"
    # a small integer tensor's value as far as it follows from shapes (the exporters' shape arithmetic): its
    # elements in order, each an int or a symbolic dim string (ge/ir/symbolic.py); set by fold_symbolic
    sym: tuple | None = None

    @property
    def is_tensor(self) -> bool:
        return self.kind == "tensor"

    @property
    def is_const(self) -> bool:
        return self.const is not None

    @property
    def is_static(self) -> bool:
        return self.shape is not None and all(isinstance(d, int) for d in self.shape)

    def __repr__(self) -> str:
        from .printer import format_value
        return format_value(self)


@dataclass(eq=False, slots=True)
class Node:
    op_type: str
    name: str
    inputs: list[Value | None]
    outputs: list[Value]
    attrs: dict[str, Any] = field(default_factory=dict)
    domain: str = ""
    bodies: dict[str, "Graph"] = field(default_factory=dict)  # subgraphs by attribute name (control flow)

    @property
    def n_captured(self) -> int:
        """How many of the last inputs are outer values the bodies capture."""
        return sum(len(b.captures) for b in self.bodies.values())

    @property
    def formal_inputs(self) -> list:
        """The inputs the op itself defines (the ONNX node's inputs), without the captured values."""
        return self.inputs[:len(self.inputs) - self.n_captured]

    def __repr__(self) -> str:
        from .printer import format_node
        return format_node(self)


class Graph:
    """A dataflow graph in topological order, with named inputs, outputs and constants."""

    def __init__(self, name: str = "graph", opsets: dict[str, int] | None = None):
        self.name = name
        self.opsets: dict[str, int] = dict(opsets or {"": 17})
        self.nodes: list[Node] = []
        self.inputs: list[Value] = []
        self.outputs: list[Value] = []
        self.values: dict[str, Value] = {}
        self.captures: list[Value] = []  # a body's stand-ins for outer values (see the module doc)
        self._counter = itertools.count()

    # -- values ------------------------------------------------------------------------------
    def fresh_name(self, base: str) -> str:
        name = base
        while name in self.values:
            name = f"{base}_{next(self._counter)}"
        return name

    def add_value(self, name: str, dtype=None, shape: Shape | None = None) -> Value:
        if name in self.values:
            raise ValueError(f"value '{name}' is defined twice")
        v = Value(name, None if dtype is None else np.dtype(dtype),
                  None if shape is None else tuple(shape))
        self.values[name] = v
        return v

    def add_const(self, name: str, array: np.ndarray) -> Value:
        array = np.asarray(array)
        v = self.add_value(self.fresh_name(name), array.dtype, array.shape)
        v.const = array
        return v

    def add_input(self, name: str, dtype, shape: Shape | None) -> Value:
        v = self.add_value(name, dtype, shape)
        self.inputs.append(v)
        return v

    def add_capture(self, name: str, dtype, shape: Shape | None, kind: str = "tensor") -> Value:
        v = self.add_value(name, dtype, shape)
        v.kind = kind
        self.captures.append(v)
        return v

    @property
    def opset(self) -> int:
        return self.opsets.get("", self.opsets.get("ai.onnx", 17))

    # -- nodes -------------------------------------------------------------------------------
    def add_node(self, op_type: str, inputs: Iterable[Value | None], outputs: int | Iterable[str] = 1,
                 attrs: dict | None = None, name: str | None = None, domain: str = "",
                 index: int | None = None) -> Node:
        """Create a node (appended, or inserted at `index`) and its output values."""
        name = name or self.fresh_name(op_type.lower())
        out_names = ([self.fresh_name(f"{name}_out{i}") for i in range(outputs)]
                     if isinstance(outputs, int) else list(outputs))
        node = Node(op_type, name, list(inputs), [], dict(attrs or {}), domain)
        for vname in out_names:
            v = self.values.get(vname)
            # a value made here is nobody's yet (the inputs' list is only searched for an existing one:
            # a node added to a graph of 10,000 inputs would search it every time)
            if v is not None and (v.producer is not None or v.const is not None or v in self.inputs):
                raise ValueError(f"value '{vname}' is defined twice (by node '{name}')")
            v = v or self.add_value(vname)
            v.producer = node
            node.outputs.append(v)
        for v in node.inputs:
            if v is not None:
                v.users.append(node)
        self.nodes.insert(len(self.nodes) if index is None else index, node)
        return node

    def erase_node(self, node: Node) -> None:
        """Remove a node whose outputs are unused."""
        for v in node.outputs:
            if v.users or v in self.outputs:
                raise ValueError(f"cannot erase node '{node.name}': output '{v.name}' is still used")
            del self.values[v.name]
        for v in node.outputs:   # no cycle node <-> output: the node, and the inputs only it read (old
            v.producer = None    # weights), are freed when the pass lets go, not at Python's next cyclic GC
        self._drop_uses(node)
        self.nodes.remove(node)

    def set_input(self, node: Node, index: int, value: Value | None) -> None:
        old = node.inputs[index]
        if old is not None:
            old.users.remove(node)
        node.inputs[index] = value
        if value is not None:
            value.users.append(node)

    def replace_all_uses_with(self, old: Value, new: Value) -> None:
        """Every reader of `old` (and the graph outputs) reads `new` instead."""
        for user in list(old.users):
            for i, v in enumerate(user.inputs):
                if v is old:
                    self.set_input(user, i, new)
        self.outputs = [new if v is old else v for v in self.outputs]

    def fold_node(self, node: Node, arrays: list[np.ndarray]) -> None:
        """Replace a node by constants: its outputs keep their names and readers."""
        for v, a in zip(node.outputs, arrays):
            v.const = np.asarray(a)
            v.dtype, v.shape, v.producer = v.const.dtype, v.const.shape, None
        self._drop_uses(node)
        self.nodes.remove(node)

    def _drop_uses(self, node: Node) -> None:
        for v in node.inputs:
            if v is not None and node in v.users:
                v.users.remove(node)

    # -- views -------------------------------------------------------------------------------
    @property
    def initializers(self) -> list[Value]:
        return [v for v in self.values.values() if v.const is not None and v.producer is None]

    def forget_if_unused(self, v: Value | None) -> None:
        """Forget a constant nobody reads now, so its array is freed at once rather than at the next
        eliminate_dead_code (a pass that rewrites weights would otherwise hold every old copy beside the new)."""
        if (v is not None and v.const is not None and v.producer is None and not v.users
                and self.values.get(v.name) is v and v not in self.outputs and v not in self.inputs
                and v not in self.captures):
            del self.values[v.name]
            v.const = None   # a pass's list of nodes may still hold the erased reader, and it this value

    def prune_values(self) -> None:
        """Forget constants and values nobody defines or reads."""
        keep = set(map(id, self.inputs)) | set(map(id, self.outputs)) | set(map(id, self.captures))
        for name, v in list(self.values.items()):
            if id(v) not in keep and v.producer is None and not v.users:
                del self.values[name]

    def __str__(self) -> str:
        from .printer import format_graph
        return format_graph(self)
