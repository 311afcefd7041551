"""A static piece of a dynamic plan (ge/partition.py: GE's PartitionedCall) run by runtime_v1's task sink.

The compiler cut the plan's maximal static subgraphs into static plans of their own (each with its own memory
plan); the outer plan holds one `PartitionedCall` node per piece, and runtime_v2's host loop reaches it as a
dynamic step. A `SunkNode` loads the piece on runtime_v1 once (its task tables, weights and arena) and per run
feeds it the outer buffers (read in place: the arena's views and aligned feeds pass GE's 32-byte zero-copy
rule), runs its tables natively as one step, and puts the piece's outputs into the buffer table. GE's RT2
calls a known-shape subgraph's DavinciModel the same way, with refreshed input and output addresses
(docs/ge-reference.md §4.4).

The host loop's thread holds an AI-core token for the run (executor.py); it gives it back while the task
sink runs, whose own threads and the calling thread then take the tokens as runtime_v1 alone would.
"""
from __future__ import annotations

import numpy as np

import runtime_v1   # the other runtime (the import floors keep runtimes off the compiler, not off each other)
from ge.npu.aicore import hold, unhold
from ge.plan import sunk_plan


class SunkNode:
    __slots__ = ("node", "body", "pairs", "outs")

    def __init__(self, step, closed_with: list):
        self.node = step.node
        plan = sunk_plan(self.node)
        self.body = runtime_v1.load(plan)   # its tables, weights and arena: loaded once
        closed_with.append(self.body)       # the outer executor closes it
        self.pairs = tuple(zip(plan.inputs, self.node.inputs))
        # per output: (position, outer tensor, shape, elements)
        self.outs = tuple((k, t, tuple(plan.tensors[b].shape), plan.tensors[b].nbytes // plan.tensors[b].dtype.itemsize)
                          for k, (b, t) in enumerate(zip(plan.outputs, self.node.outputs)))

    def __call__(self, bufs, shapes, spans, alloc, core=None) -> None:
        feeds = {b: bufs[t] for b, t in self.pairs}
        # an output already given its memory this run (a caller's bound output, a state pair's next block:
        # executor.py, states.py) is computed into it, as run_static does for a static step's host outputs
        into = {k: bufs[t].reshape(shape) for k, t, shape, n in self.outs
                if isinstance(bufs[t], np.ndarray) and bufs[t].size == n}
        if core is not None:
            unhold(core[0])
        try:
            outs = self.body.run(feeds, into)
        finally:
            if core is not None:
                hold(core[0])
        for (k, t, _, _), a in zip(self.outs, outs):
            if k not in into:
                bufs[t], shapes[t] = a.reshape(-1), a.shape
