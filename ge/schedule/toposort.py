"""Execution order: the topological sort modes of GE (`ge.topoSortingMode`). The index is the clock.

- bfs: ready nodes in a FIFO queue.
- dfs (default, GE's inference default): ready nodes on a stack; a node's consumers run as soon as they are
  ready, so a branch is finished before the next one starts.
- rdfs: reverse DFS from the graph outputs: each node is emitted right after all its inputs (post-order),
  visiting inputs in their order.
- memory_priority: the ready set is ordered by (number of consumers, output bytes, name), smallest first,
  as GE's code does (TopoSortStack keyed by NodeOutInfo), so nodes that free memory run early.
Ties keep the graph's order, so every mode is deterministic.
"""
from __future__ import annotations

import heapq
from collections import deque

import numpy as np


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


def topological_order(graph, mode: str = "dfs") -> list:
    nodes = graph.nodes
    preds, succs = _deps(graph)
    if mode == "rdfs":
        return _reverse_dfs(graph, preds)
    indeg = [len(p) for p in preds]
    ready = [i for i, d in enumerate(indeg) if d == 0]
    order = []
    if mode == "memory_priority":
        key = lambda i: (len(succs[i]), _out_bytes(nodes[i]), nodes[i].name, i)  # noqa: E731
        heap = [key(i) for i in ready]
        heapq.heapify(heap)
        pop, push = (lambda: heapq.heappop(heap)[-1]), (lambda i: heapq.heappush(heap, key(i)))
        pending = lambda: bool(heap)  # noqa: E731
    elif mode == "bfs":
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


def _reverse_dfs(graph, preds) -> list:
    index = {id(n): i for i, n in enumerate(graph.nodes)}
    seen, order = set(), []
    roots = [index[id(v.producer)] for v in graph.outputs if v.producer is not None]
    roots += [i for i in range(len(graph.nodes))]  # nodes not reaching an output come last
    for root in roots:
        stack = [(root, 0)]
        while stack:
            i, k = stack.pop()
            if i in seen:
                continue
            if k < len(preds[i]):
                stack.append((i, k + 1))
                if preds[i][k] not in seen:
                    stack.append((preds[i][k], 0))
            else:
                seen.add(i)
                order.append(graph.nodes[i])
    return order
