"""Execution order: the topological sort modes of GE (`ge.topoSortingMode`). The index is the clock.

Read from GE's graph_metadef/graph/normal_graph/compute_graph.cc (ComputeGraphImpl::DoTopologicalSorting):
- bfs (0): ready nodes in a FIFO queue.
- dfs (1, default, GE's inference default): ready nodes on a stack; a node's consumers run as soon as they
  are ready, so a branch is finished before the next one starts.
- rdfs (2): reverse DFS from the graph outputs (GE: from the nodes without consumers, NetOutput first): a
  node is emitted right after all its inputs (post-order). GE visits a node's inputs by output bytes, the
  *smallest* first (RDFSTopologicalSorting's NodeCmp set is read from the back of the stack), so the
  producer of the largest input is emitted last, right before its consumer. Then the delayed sort.
- stable_rdfs (3): reverse DFS started from every node in the graph's existing order, visiting inputs in
  that order (StableRDFSTopologicalSorting): an order that already is topological comes out unchanged,
  new nodes land right before their first consumer. No delayed sort.
- memory_priority (GE's ge.exec.memoryOptimizationPolicy=MemoryPriority with BFS/DFS): the ready set is a
  map keyed by NodeOutInfo = (number of consumers, output bytes, name) and its *smallest* key pops first
  (TopoSortStack::Pop takes mem_priority_stack_.cbegin()). GE's IR design note
  (docs/en/design/modules/graph_metadef/ascend-ir.md in GE's tree) and the article of docs/ge-reference.md
  §8.3 say larger outputs first; the code says smallest first, and the code is what runs: ge follows the
  code (docs/ge-reference.md §1.1; tests/schedule/test_toposort.py shows the difference).
  Then the delayed sort.
Delayed sort (delay_sort.py) runs after rdfs and memory_priority, as GE's DelayTopoSort does.
Ties keep the graph's order, so every mode is deterministic.
"""
from __future__ import annotations

import heapq
from collections import deque

import numpy as np

from .delay_sort import delay_sort


def _deps(graph):
    """Per node: its producers (data edges) and its consumers, as index lists in graph order."""
    index = {id(n): i for i, n in enumerate(graph.nodes)}
    preds = [[] for _ in graph.nodes]
    succs = [[] for _ in graph.nodes]
    for i, n in enumerate(graph.nodes):
        for v in n.inputs:
            if v is not None and v.producer is not None:
                p = index[id(v.producer)]
                if p not in preds[i]:
                    preds[i].append(p)
                    succs[p].append(i)
    return preds, succs


def _out_bytes(node) -> int:
    total = 0
    for v in node.outputs:
        if v.is_static and v.dtype is not None:
            total += int(np.prod(v.shape, dtype=np.int64)) * v.dtype.itemsize
    return total


def memory_priority_key(graph, succs):
    """GE's NodeOutInfo as a sort key: fewer consumers, then fewer output bytes, then the name."""
    nodes = graph.nodes
    return lambda i: (len(succs[i]), _out_bytes(nodes[i]), nodes[i].name, i)


def topological_order(graph, mode: str = "dfs") -> list:
    preds, succs = _deps(graph)
    if mode == "rdfs":
        return delay_sort(graph, _rdfs(graph, preds))
    if mode == "stable_rdfs":
        return _post_order(graph, range(len(graph.nodes)), [sorted(p) for p in preds])
    if mode == "memory_priority":
        return delay_sort(graph, ready_order(graph, preds, succs, memory_priority_key(graph, succs)))
    return ready_order(graph, preds, succs, mode)


def ready_order(graph, preds, succs, how) -> list:
    """Kahn's walk: `how` is "bfs", "dfs", or a key function over node indices (the smallest ready key
    pops first)."""
    nodes = graph.nodes
    indeg = [len(p) for p in preds]
    ready = [i for i, d in enumerate(indeg) if d == 0]
    order = []
    if callable(how):
        heap = [how(i) for i in ready]
        heapq.heapify(heap)
        pop, push = (lambda: heapq.heappop(heap)[-1]), (lambda i: heapq.heappush(heap, how(i)))
        pending = lambda: bool(heap)  # noqa: E731
    elif how == "bfs":
        queue = deque(ready)
        pop, push, pending = queue.popleft, queue.append, (lambda: bool(queue))
    else:  # dfs: a stack, pushed in reverse so the first-listed ready node pops first
        stack = ready[::-1]
        pop, pending = stack.pop, (lambda: bool(stack))
        push = None
    while pending():
        i = pop()
        order.append(nodes[i])
        newly = []
        for s in succs[i]:
            indeg[s] -= 1
            if indeg[s] == 0:
                newly.append(s)
        if push is None:
            stack.extend(reversed(newly))
        else:
            for s in newly:
                push(s)
    return order


def _rdfs(graph, preds) -> list:
    """GE's RDFS: from the graph outputs (NetOutput's inputs), then nodes nobody consumes; inputs visited
    smallest output first (ties: name)."""
    index = {id(n): i for i, n in enumerate(graph.nodes)}
    nodes = graph.nodes
    size = lambda i: (_out_bytes(nodes[i]), nodes[i].name)  # noqa: E731
    outs = list(dict.fromkeys(index[id(v.producer)] for v in graph.outputs if v.producer is not None))
    consumed = {p for ps in preds for p in ps}
    roots = sorted(outs, key=size) + [i for i in range(len(nodes)) if i not in consumed and i not in outs]
    return _post_order(graph, roots, [sorted(p, key=size) for p in preds])


def _post_order(graph, roots, inputs) -> list:
    """Reverse DFS post-order from each root in turn; `inputs[i]`: node i's producers, first visited first."""
    seen, order = set(), []
    for root in roots:
        stack = [(root, 0)]
        while stack:
            i, k = stack.pop()
            if i in seen:
                continue
            if k < len(inputs[i]):
                stack.append((i, k + 1))
                if inputs[i][k] not in seen:
                    stack.append((inputs[i][k], 0))
            else:
                seen.add(i)
                order.append(graph.nodes[i])
    return order
