"""fold_if: an If whose condition is a constant becomes the branch it picks (GE's CondRemovePass).

Control nodes are opaque to every other pass; this is the one fold through them, and only when the
condition is known at compile time (a constant, or folded into one by fold_constants).
Step 1: match If with a constant condition; pick then_branch or else_branch.
Step 2: inline the branch at the If's place: its constants become outer constants, its captures read the
        outer values the If passes for them, its nodes are copied under the name "<if>/<node>" with fresh
        value names (nested bodies move with their nodes: their captures are already ordinary inputs).
Step 3: each If output is re-made by an Identity of the branch's result, so graph outputs keep their
        names; remove_identity drops the Identities wherever a name need not stay.
Invariant: the graph computes the same values; afterwards a constant If needs no host-driven node, so a
static model with one runs on runtime_v1.
"""
from __future__ import annotations

import numpy as np


def fold_if(graph) -> bool:
    changed = False
    for node in list(graph.nodes):
        cond = node.inputs[0] if node.op_type == "If" and node.domain == "" and node.inputs else None
        if cond is None or not cond.is_const or cond.const.size != 1:
            continue
        attr = "then_branch" if bool(np.asarray(cond.const).reshape(())) else "else_branch"   # Step 1
        _inline(graph, node, attr)
        changed = True
    return changed


def _inline(graph, node, attr: str) -> None:
    body = node.bodies[attr]
    at = len(node.inputs) - node.n_captured
    outer: dict[int, object] = {}
    for a, b in node.bodies.items():
        for inner in b.captures:
            if a == attr:
                outer[id(inner)] = node.inputs[at]
            at += 1
    for v in body.initializers:                                                             # Step 2
        outer[id(v)] = graph.add_const(f"{node.name}/{v.name}", v.const)
    index = graph.nodes.index(node)
    graph._drop_uses(node)
    graph.nodes.remove(node)
    for n in body.nodes:
        names = [graph.fresh_name(f"{node.name}/{v.name}") for v in n.outputs]
        copy = graph.add_node(n.op_type, [None if v is None else outer[id(v)] for v in n.inputs], names,
                              dict(n.attrs), _fresh_node_name(graph, f"{node.name}/{n.name}"), n.domain, index)
        copy.bodies = n.bodies
        index += 1
        for v, w in zip(n.outputs, copy.outputs):
            w.dtype, w.shape, w.kind = v.dtype, v.shape, v.kind
            outer[id(v)] = w
    for v, result in zip(node.outputs, body.outputs):                                       # Step 3
        v.producer = None
        graph.add_node("Identity", [outer[id(result)]], [v.name], name=_fresh_node_name(graph, f"{node.name}/out"),
                       index=index)
        index += 1


def _fresh_node_name(graph, base: str) -> str:
    taken = {n.name for n in graph.nodes}
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    return name
