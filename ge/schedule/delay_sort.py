"""GE's delayed topological sort (DelayTopoSort in graph_metadef/graph/normal_graph/compute_graph.cc): move a
chain that starts from long-lived inputs to right before its first consumer, so its outputs are born when
they are needed (docs/ge-reference.md §8.4: the delayed sort moves chains next to their consumers).

GE runs it after the sort when the memory-priority policy is on (any mode but StableRDFS) and always after
RDFS. The rule, over groups that start as one node each, in order position i = 0, 1, ...:

Step 1. A group may move when it is still movable and
        - it is one node whose every input is long-lived (a constant or a graph input; at least one input),
          or it is a chain already gathered whose last node has exactly one input;
        - the last node has consumers (a graph output counts as a consumer at the end: GE's NetOutput).
Step 2. Its target is the smallest position among the last node's consumers; it moves only when that is
        more than one step ahead (target > i + 1). The group is put in front of the target's group (which
        may itself move later, carrying the chain along, unless the moved group's last node had more than
        one consumer: then the target's group stays).
Step 3. The order is the groups' nodes, group by group.
Positions are those of the input order (GE sets the ids once before the walk), so a chain moves toward
where its consumer was, and every move keeps the order topological: the chain's nodes depend only on
long-lived inputs and on each other, and each lands before its first consumer.
"""
from __future__ import annotations


def delay_sort(graph, order: list) -> list:
    n = len(order)
    pos = {id(node): i for i, node in enumerate(order)}
    out_pos = [[] for _ in range(n)]   # consumer positions per node, one per use; n = a graph output
    for i, node in enumerate(order):
        for v in node.outputs:
            out_pos[i] += [pos[id(u)] for u in v.users if id(u) in pos]
    for v in graph.outputs:
        if v.producer is not None and id(v.producer) in pos:
            out_pos[pos[id(v.producer)]].append(n)
    groups = [[i] for i in range(n)] + [[]]   # the last group: the virtual NetOutput, never moved
    movable = [True] * n + [False]
    moved = 0
    for i in range(n):
        # Step 1: may this group move?
        g = groups[i]
        if not g or not movable[i]:
            continue
        last = g[-1]
        if len(g) == 1 and not _long_lived_inputs(graph, order[last]):
            continue
        if len(g) > 1 and len(order[last].inputs) != 1:
            continue
        if not out_pos[last]:
            continue
        # Step 2: to the front of its first consumer's group
        target = min(out_pos[last])
        if target <= i + 1:
            continue
        groups[target][:0] = g
        if len(out_pos[last]) > 1:
            movable[target] = False
        groups[i] = []
        moved += 1
    if not moved:
        return list(order)
    # Step 3
    return [order[k] for g in groups for k in g]


def _long_lived_inputs(graph, node) -> bool:
    """GE's InputIsLongLifeTimeNode: every input is a constant, a variable or a graph input (and one is)."""
    inputs = [v for v in node.inputs if v is not None]
    return bool(inputs) and all(v.is_const or (v.producer is None and v in graph.inputs) for v in inputs)
