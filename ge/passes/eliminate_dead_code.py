"""eliminate_dead_code: drop nodes none of whose outputs reaches a graph output, then unused values."""
from __future__ import annotations


def eliminate_dead_code(graph) -> bool:
    outputs = set(map(id, graph.outputs))
    dead = 0
    for node in reversed(list(graph.nodes)):
        if not any(v.users or id(v) in outputs for v in node.outputs):
            graph.erase_node(node)
            dead += 1
    before = len(graph.values)
    graph.prune_values()
    return bool(dead) or len(graph.values) != before
