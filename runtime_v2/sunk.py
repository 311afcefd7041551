"""A static piece of a dynamic plan (ge/partition.py: GE's PartitionedCall) run by runtime_v1's task sink.

The compiler cut the plan's maximal static subgraphs into static plans of their own (each with its own memory
plan); the outer plan holds one `PartitionedCall` node per piece, and runtime_v2's host loop reaches it as a
dynamic step. A `SunkNode` loads the piece on runtime_v1 once (its task tables, weights and arena) and per run
feeds it the outer buffers (read in place: the arena's views and aligned feeds pass GE's 32-byte zero-copy
rule), gives its outputs their outer memory as a dynamic node's (the planned arena, a fresh graph output, or a
caching-allocator span) and runs its tables natively into them as one step. A replay (replay.py) calls the same
`run` from a piece row, on the buffers the recording found. GE's RT2
calls a known-shape subgraph's DavinciModel the same way, with refreshed input and output addresses
(docs/ge-reference.md §4.4).

The host loop's thread holds an AI-core token for the run (executor.py); it gives it back while the task
sink runs, whose own threads and the calling thread then take the tokens as runtime_v1 alone would.
"""
from __future__ import annotations

import numpy as np

import runtime_v1   # the other runtime (the import floors keep runtimes off the compiler, not off each other)
from ge.errors import DeviceMemoryError
from ge.npu.aicore import hold, unhold
from ge.plan import sunk_plan

from .host_outputs import host_output
from .lowering import HOST


class SunkNode:
    __slots__ = ("node", "plan", "body", "inputs", "outs")

    def __init__(self, plan, step, closed_with: list):
        self.node, self.plan = step.node, plan
        piece = sunk_plan(self.node)
        self.body = runtime_v1.load(piece)   # its tables, weights and arena: loaded once
        closed_with.append(self.body)        # the outer executor closes it
        self.inputs = tuple(piece.inputs)
        # per output: (outer tensor, shape, elements, dtype, bytes, placement: lowering.ARENA | HOST | ALLOC)
        self.outs = tuple((o.tensor, tuple(piece.tensors[b].shape), piece.tensors[b].nbytes //
                           piece.tensors[b].dtype.itemsize, piece.tensors[b].dtype, piece.tensors[b].nbytes, o.place)
                          for b, o in zip(piece.outputs, step.outs))

    def __call__(self, bufs, shapes, spans, alloc, core=None) -> None:
        outs = [self._output(o, bufs, shapes, spans, alloc) for o in self.outs]
        if core is not None:
            unhold(core[0])
        try:
            self.run([bufs[t] for t in self.node.inputs], outs)
        finally:
            if core is not None:
                hold(core[0])

    def run(self, ins: list, outs: list) -> None:
        """The piece on its inputs, into its outputs (flat arrays): a host-driven step, or a replay's piece
        row (replay.py). Every output is computed into its array (a bound slot), or copied there (an output
        runtime_v1 copies out: a view of an input or a constant)."""
        into = {k: a.reshape(o[1]) for k, (o, a) in enumerate(zip(self.outs, outs))}
        got = self.body.run(dict(zip(self.inputs, ins)), into)
        for k, a in enumerate(got):
            if a is not into[k]:
                np.copyto(into[k], a)

    def _output(self, o, bufs, shapes, spans, alloc) -> np.ndarray:
        """Output o's memory, as a dynamic node's (dynamic.py): given already this run (planned in the arena, a
        caller's bound output, a state pair's next block), else a fresh host array for a graph output, else a
        caching-allocator span: memory a recording finds (record.py), so a replay can bind it."""
        t, shape, count, dtype, nbytes, place = o
        a = bufs[t]
        if not (isinstance(a, np.ndarray) and a.size == count):
            if place == HOST or nbytes == 0:
                a = host_output(count, dtype, nbytes, alloc, self.plan, t, bufs)
            else:
                try:
                    sp = spans[t] = alloc.alloc(nbytes)
                except DeviceMemoryError as e:   # the executor names the tensor
                    e.tensor = t
                    raise
                a = sp.as_array(dtype, count)
        bufs[t], shapes[t] = a, shape
        return a
