"""Static pieces of a dynamic graph (GE's DynamicShapePartitioner, graph/partition/dynamic_shape_partition.cc,
and the PartitionedCall nodes it leaves in the root graph).

A plan that stays dynamic runs on runtime_v2, node by node. Most of its nodes may still have static shapes:
a detector's backbone before its NonMaxSuppression, the part of a graph before a NonZero. GE cuts such a
graph into known-shape and unknown-shape clusters, compiles each known cluster of enough ops as a static
model (its own memory plan, its tasks sunk) and runs the root graph dynamically, calling the static models
as single nodes. ge does the same:

Step 1: known or unknown. A node is unknown when the compiler could not bind a launch for it (a symbolic
        input shape, a value known only at run time, a data-sized output) or it runs on the host (control
        flow, sequences); every other node is known, aliases included.
Step 2: GE's contagion: a known node that has an unknown node above it and one below it becomes unknown
        (contracting a cluster that such a node joins would close a cycle through the unknown ones).
Step 3: clusters: the known nodes with no unknown node above them ("before") and those with one ("after")
        are joined separately along the graph's edges; no path leaves a cluster and comes back (a path that
        leaves a "before" cluster through an unknown node reaches only "after" nodes, and one that leaves an
        "after" cluster through an unknown node would have made its start unknown in Step 2).
Step 4: a cluster of at least Options.static_model_ops_lower_limit tasks (GE's ge.exec.static_model_ops_lower_limit,
        default 4 as GE's static_model_ops_lower_limit_; no-task aliases do not count) is a piece: its inputs are
        the values it reads from outside (constants stay inside), its outputs the values it makes that a node
        outside or the graph's outputs read.
Step 5: the units (pieces and the nodes left) in a topological order, each at the place of its first node
        where its inputs allow (Kahn's order by first step), so the host loop keeps the compiler's order.

The compiler (ge/compiler.py) compiles each piece into a static Plan of its own and puts a `PartitionedCall`
node carrying it (PlanNode.bodies, attribute "f") in the outer plan; runtime_v2 runs such a node by
runtime_v1's task sink (runtime_v2/sunk.py); runtime_v1 runs it as a host task (runtime_v1/host.py) when every
other node of the outer plan is a task or a host task, and refuses the outer plan otherwise.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

from .ir import Graph
from .kernels.registry import register_host
from .plan import SUNK_DOMAIN as DOMAIN, SUNK_OP as OP, sunk_plan

BODY = "f"


@register_host(OP, domain=DOMAIN)
def partitioned_call(call, args):
    """A piece run as a body (runtime_v2's generic host path; runtime_v2/sunk.py runs it on runtime_v1)."""
    return call.bodies[BODY](list(args))


@dataclass
class Piece:
    """A static piece: its nodes in the compiler's order, the values it reads and the ones it gives."""
    nodes: list
    inputs: list
    outputs: list
    tasks: int

    @property
    def name(self) -> str:
        return f"{OP}_{self.nodes[0].name}"


def static_pieces(graph: Graph, order: list, known: list[bool], tasks: list[bool], limit: int) -> list[Piece]:
    """The pieces of `order` (Steps 1-4): known[k] / tasks[k] say whether order[k] has a static launch and a task."""
    n = len(order)
    at = {id(node): k for k, node in enumerate(order)}
    producer = {id(v): at[id(node)] for node in order for v in node.outputs if v is not None}
    preds = [sorted({producer[id(v)] for v in node.inputs if v is not None and id(v) in producer})
             for node in order]
    succs: list[list[int]] = [[] for _ in range(n)]
    for k, ps in enumerate(preds):
        for p in ps:
            succs[p].append(k)
    known = list(known)
    # Step 2: an unknown node above (forward, in order) and one below (backward)
    above = [False] * n
    for k in range(n):
        above[k] = any(not known[p] or above[p] for p in preds[k])
    below = [False] * n
    for k in reversed(range(n)):
        below[k] = any(not known[s] or below[s] for s in succs[k])
    for k in range(n):
        if known[k] and above[k] and below[k]:
            known[k] = False
    # Step 3: union-find over edges between known nodes on the same side
    parent = list(range(n))

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a
    for k in range(n):
        if known[k]:
            for p in preds[k]:
                if known[p] and above[p] == above[k]:
                    parent[find(p)] = find(k)
    groups: dict[int, list[int]] = {}
    for k in range(n):
        if known[k]:
            groups.setdefault(find(k), []).append(k)
    # Step 4
    outputs = {id(v) for v in graph.outputs}
    pieces = []
    for members in sorted(groups.values()):
        count = sum(tasks[k] for k in members)
        if count < max(limit, 1):
            continue
        inside = set(members)
        made = {id(v) for k in members for v in order[k].outputs if v is not None}
        ins, seen = [], set()
        for k in members:
            for v in order[k].inputs:
                if v is not None and not v.is_const and id(v) not in made and id(v) not in seen:
                    seen.add(id(v))
                    ins.append(v)
        read_outside = {id(v) for k in range(n) if k not in inside for v in order[k].inputs if v is not None}
        outs = [v for k in members for v in order[k].outputs
                if v is not None and (id(v) in read_outside or id(v) in outputs)]
        pieces.append(Piece([order[k] for k in members], ins, outs, count))
    return pieces


def unit_order(order: list, pieces: list[Piece]) -> list:
    """Step 5: nodes not in a piece and the pieces, topologically, by the first step of each."""
    at = {id(node): k for k, node in enumerate(order)}
    unit_of = {}
    units: list = []
    for p in pieces:
        for node in p.nodes:
            unit_of[id(node)] = len(units)
        units.append(p)
    for node in order:
        if id(node) not in unit_of:
            unit_of[id(node)] = len(units)
            units.append(node)
    first = [min(at[id(x)] for x in u.nodes) if isinstance(u, Piece) else at[id(u)] for u in units]
    producer = {id(v): unit_of[id(node)] for node in order for v in node.outputs if v is not None}
    deps: list[set] = [set() for _ in units]
    for node in order:
        u = unit_of[id(node)]
        for v in node.inputs:
            if v is not None and id(v) in producer and producer[id(v)] != u:
                deps[u].add(producer[id(v)])
    waiting = [len(d) for d in deps]
    users: list[list[int]] = [[] for _ in units]
    for u, d in enumerate(deps):
        for p in d:
            users[p].append(u)
    ready = [(first[u], u) for u in range(len(units)) if not waiting[u]]
    heapq.heapify(ready)
    out = []
    while ready:
        _, u = heapq.heappop(ready)
        out.append(units[u])
        for w in users[u]:
            waiting[w] -= 1
            if not waiting[w]:
                heapq.heappush(ready, (first[w], w))
    if len(out) != len(units):   # Step 3 rules this out; a failure here is a bug in it, not the user's
        raise AssertionError("static pieces would close a cycle")
    return out


def piece_graph(graph: Graph, piece: Piece) -> Graph:
    """The piece as a graph of its own (the same values and nodes: build_plan only reads them)."""
    g = Graph(piece.name, graph.opsets)
    g.nodes = list(piece.nodes)
    g.inputs = list(piece.inputs)
    g.outputs = list(piece.outputs)
    for node in piece.nodes:
        for v in (*node.inputs, *node.outputs):
            if v is not None:
                g.values[v.name] = v
    return g


def summary(plan) -> dict:
    """What sank: {"pieces": n, "sunk_nodes": nodes in pieces, "nodes": all, "host_driven": [op (name)...]}
    of a plan (its PartitionedCall nodes' bodies); pieces 0 when none."""
    calls = [n for n in plan.nodes if sunk_plan(n) is not None]
    sunk = sum(len(sunk_plan(n).nodes) for n in calls)
    host = [f"{n.op_type} '{n.name}'" for n in plan.nodes if n.is_dynamic and sunk_plan(n) is None]
    return {"pieces": len(calls), "sunk_nodes": sunk, "nodes": sunk + len(plan.nodes) - len(calls),
            "host_driven": host}


def describe(plan) -> str:
    """One line for `ge plan` / stats(): "2 static pieces sunk, 24 of 28 nodes; host-driven: ..." ("" if none)."""
    s = summary(plan)
    if not s["pieces"]:
        return ""
    host = s["host_driven"]
    shown = ", ".join(host[:4]) + (f" and {len(host) - 4} more" if len(host) > 4 else "")
    return (f"{s['pieces']} static piece{'s' * (s['pieces'] != 1)} sunk, {s['sunk_nodes']} of {s['nodes']} "
            f"nodes; host-driven: {shown or 'none'}")


def pieces_table(plan) -> list[str]:
    """`ge plan`'s lines on the pieces: the summary, then one line a piece (nodes, tasks' feature map)."""
    line = describe(plan)
    if not line:
        return []
    out = [f"sunk      {line}", "  (each piece a static plan on runtime_v1's task sink inside runtime_v2's host loop; "
                                "static_model_ops_lower_limit " f"{plan.options.static_model_ops_lower_limit})"]
    for n in plan.nodes:
        body = sunk_plan(n)
        if body is not None:
            fm = body.memory.segments.get("feature_map", 0) / 2**20 if body.memory else 0.0
            out.append(f"  {n.name}: {len(body.nodes)} nodes, feature map {fm:.2f} MiB, "
                       f"{len(body.inputs)} in / {len(body.outputs)} out")
    return out


def stats(plan) -> dict:
    """Session.stats()'s "static_pieces": summary() with its one line ("" when nothing sank)."""
    return {**summary(plan), "line": describe(plan)}


def piece_memory(plan) -> tuple[int, int]:
    """(weight bytes, planned feature-map bytes) of a plan's static pieces (each has its own memory plan)."""
    weights = fm = 0
    for n in plan.nodes:
        body = sunk_plan(n)
        if body is not None:
            weights += sum(a.nbytes for a in body.constants.values())
            fm += body.memory.segments.get("feature_map", 0) if body.memory is not None else 0
    return weights, fm


def task_nodes(plan) -> list:
    """The plan's nodes with those of its static pieces in place of their PartitionedCall nodes."""
    out = []
    for n in plan.nodes:
        body = sunk_plan(n)
        out.extend(body.nodes if body is not None else (n,))
    return out
