"""Helpers shared by the rewriting passes: matching a chain of nodes and replacing it by one node.

`replace_pattern` keeps the names, dtypes, shapes and readers of the pattern's results, so a rewrite never
renames a graph output (ONNX Runtime users ask for outputs by name) and dumps stay readable. It changes
the graph only through Graph methods:
  Step 1: a temporary node computing the results is inserted after the pattern and takes over its readers
          (and graph outputs), so the pattern's values fall unused.
  Step 2: the pattern's nodes are erased, latest first; this frees the result names.
  Step 3: the final node is added under those names, takes the readers back, and the temporary goes.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node, Value


def only_reader(graph: Graph, v: Value | None, node: Node) -> bool:
    """`node` is the one reader of `v` (reading it once), and `v` is not a graph output."""
    return v is not None and len(v.users) == 1 and v.users[0] is node and v not in graph.outputs


def producer(v: Value | None, op_types, domain: str = "") -> Node | None:
    """The node defining `v` when its op is one of `op_types` in `domain`, else None."""
    p = None if v is None else v.producer
    return p if p is not None and p.op_type in op_types and p.domain == domain else None


def const_of(v: Value | None) -> np.ndarray | None:
    return None if v is None else v.const


def is_float(v: Value | None) -> bool:
    return v is not None and v.dtype is not None and v.dtype.kind == "f"


def replace_pattern(graph: Graph, nodes: list[Node], op_type: str, inputs: list, attrs: dict,
                    domain: str = "", name: str | None = None,
                    results: list[Value] | None = None) -> Node:
    """Replace `nodes` by one node computing `results` (default: the outputs of the last node).

    The callers guarantee that every other output of the pattern is read only inside the pattern and
    is not a graph output, and that every input of the new node is defined before the last node.
    """
    last = max(nodes, key=graph.nodes.index)
    read = [v for n in nodes for v in n.inputs if v is not None and v.const is not None]
    results = list(last.outputs if results is None else results)
    kept = [(v.name, v.dtype, v.shape) for v in results]
    name = name or nodes[0].name
    # Step 1: a temporary node takes over the readers of the results
    tmp = graph.add_node(op_type, inputs, len(kept), attrs, graph.fresh_name(f"{name}__fusing"), domain,
                         index=graph.nodes.index(last) + 1)
    for old, new in zip(results, tmp.outputs):
        graph.replace_all_uses_with(old, new)
    # Step 2: erase the pattern, readers before producers
    for n in sorted(nodes, key=graph.nodes.index, reverse=True):
        graph.erase_node(n)
    # Step 3: the final node under the freed names
    node = graph.add_node(op_type, inputs, [k[0] for k in kept], attrs, name, domain,
                          index=graph.nodes.index(tmp))
    for v, (_, dtype, shape) in zip(node.outputs, kept):
        v.dtype, v.shape = dtype, shape
    for old, new in zip(tmp.outputs, node.outputs):
        graph.replace_all_uses_with(old, new)
    graph.erase_node(tmp)
    # Step 4: the pattern's constants nobody reads now go (old weights beside folded or packed ones)
    for v in read:
        graph.forget_if_unused(v)
    return node
