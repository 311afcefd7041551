"""fuse_collectives: fused AllReduces over continuous input memory (GE's HCOM fusion with ContinuousMemMng,
docs/ge-reference.md §2.10). A LOWERING pass: it runs once the pipeline's folds are done.

HcomAllReduce nodes that GE would fuse: `fusion` 2 with the same `fusion_id`, or `fusion` 1 (GE's default
policy; ge fuses every such AllReduce, with no segment-size cap), with the same reduction, group and dtype.
Step 1: group them in graph order; a node joins a group only if no member is among its ancestors (the
        fused collective needs every member's input, so a member that depends on another would be a cycle).
Step 2: each group of two or more becomes Concat(axis 0) of the inputs -> one HcomAllReduce -> Split into
        the members' outputs (their values kept, so readers and graph outputs need no rewiring). One
        exchange then moves them all.
Step 3: the nodes are put back in a topological order (a member's readers may sit before the last member).
The Concat is the continuous input memory: it is marked `_continuous_input` (GE's ATTR_NAME_CONTINUOUS_INPUT)
and, with inputs whose dims after axis 0 agree, ge/memory/continuous.py keeps it in place whatever it costs
(the producers write into their slices of one buffer and the Concat runs nothing), as GE must for an HCOM
input; inputs it cannot place (a graph output, a view, differing dims: Reshaped to 1-D first) are copied by
the Concat (still one exchange). The Split copies the results out.
"""
from __future__ import annotations

import numpy as np

CONTINUOUS = "_continuous_input"   # on a Concat: its inputs must be laid out in its output (continuous.py)


def _key(node):
    a = node.attrs
    fusion = int(a.get("fusion", 0))
    if node.op_type != "HcomAllReduce" or fusion not in (1, 2):
        return None
    x = node.inputs[0]
    if x is None or not x.is_static or not x.shape:
        return None
    text = lambda v: v.decode() if isinstance(v, bytes) else str(v)  # noqa: E731
    return (fusion, int(a.get("fusion_id", -1)) if fusion == 2 else None, text(a.get("reduction", "sum")),
            text(a.get("group", "hccl_world_group")), str(x.dtype))


def _ancestors(node) -> set:
    seen, todo = set(), [v.producer for v in node.inputs if v is not None and v.producer is not None]
    while todo:
        n = todo.pop()
        if id(n) not in seen:
            seen.add(id(n))
            todo.extend(v.producer for v in n.inputs if v is not None and v.producer is not None)
    return seen


def fuse_collectives(graph) -> bool:
    """Fuse the graph's fusible AllReduces in place (changed: some were)."""
    # Step 1
    groups: dict = {}
    for node in graph.nodes:
        key = _key(node)
        if key is None:
            continue
        for members in groups.setdefault(key, []):
            if not any(id(m) in _ancestors(node) for m in members):
                members.append(node)
                break
        else:
            groups[key].append([node])
    removed = 0
    for members in (g for gs in groups.values() for g in gs if len(g) > 1):
        _fuse(graph, members)
        removed += len(members) - 1
    if removed:
        _resort(graph)   # Step 3
    return removed > 0


def _fuse(graph, members) -> None:
    """Step 2 for one group."""
    first = members[0]
    ins = [m.inputs[0] for m in members]
    tail = ins[0].shape[1:]
    flat = any(x.shape[1:] != tail for x in ins)
    if flat:   # differing trailing dims: concatenate them flat (a copy, not continuous memory)
        minus1 = graph.add_const(graph.fresh_name("fused/flat"), np.array([-1], np.int64))
        parts = []
        for x in ins:
            r = graph.add_node("Reshape", [x, minus1], name=graph.fresh_name(f"{x.name}/flat")).outputs[0]
            r.dtype, r.shape = x.dtype, (int(np.prod(x.shape)),)
            parts.append(r)
    else:
        parts = ins
    base = graph.fresh_name(f"{first.name}/fused")
    cat = graph.add_node("Concat", parts, name=f"{base}/concat", attrs={"axis": 0, CONTINUOUS: 1}).outputs[0]
    cat.dtype, cat.shape = ins[0].dtype, (sum(p.shape[0] for p in parts), *parts[0].shape[1:])
    attrs = {k: v for k, v in first.attrs.items()}
    red = graph.add_node("HcomAllReduce", [cat], name=base, attrs=attrs, domain=first.domain).outputs[0]
    red.dtype, red.shape = cat.dtype, cat.shape
    outs = [m.outputs[0] for m in members]
    for m in members:   # detach the members; their output values become the Split's
        graph._drop_uses(m)
        graph.nodes.remove(m)
        m.outputs[0].producer = None
    sizes = graph.add_const(graph.fresh_name(f"{base}/sizes"), np.array([p.shape[0] for p in parts], np.int64))
    if not flat:
        graph.add_node("Split", [red, sizes], [y.name for y in outs], name=f"{base}/split", attrs={"axis": 0})
        return
    pieces = graph.add_node("Split", [red, sizes], len(outs), name=f"{base}/split", attrs={"axis": 0}).outputs
    for p, x, y in zip(pieces, ins, outs):
        p.dtype, p.shape = x.dtype, (int(np.prod(x.shape)),)
        shape = graph.add_const(graph.fresh_name(f"{y.name}/shape"), np.array(x.shape, np.int64))
        graph.add_node("Reshape", [p, shape], [y.name], name=graph.fresh_name(f"{y.name}/unflat"))


def _resort(graph) -> None:
    """A stable topological order of graph.nodes (each node as early as the list allows)."""
    placed, order, pending = set(), [], list(graph.nodes)
    while pending:
        rest = []
        for n in pending:
            if all(v is None or v.producer is None or id(v.producer) in placed for v in n.inputs):
                placed.add(id(n))
                order.append(n)
            else:
                rest.append(n)
        if len(rest) == len(pending):
            raise AssertionError("fuse_collectives made a cycle")   # Step 1 rules it out
        pending = rest
    graph.nodes[:] = order
