"""State carried from run to run (Options.state_pairs; the plan's variable segment, ge.memory.variables) for
runtime_v2: one device region per executor holds both blocks of every pair; a run reads the input from one
(unless the caller feeds it) and writes the output into the other, then they swap roles.
"""
from __future__ import annotations

import threading
import weakref


class States:
    """The variable segment of a plan with state pairs: both blocks of every pair, and which is current."""

    def __init__(self, plan, device):
        self.lock = threading.Lock()
        self.device, self.nbytes = device, max(int(plan.memory.segments.get("variable", 0)), 1)
        self.offset = device.reserve(self.nbytes, "the state blocks (variable segment)")
        base = device.view(self.offset, self.nbytes)
        base[:] = 0   # the first run reads zeros
        mem = plan.memory.tensors
        self.pairs = []
        for i, o in plan.states:
            t = plan.tensors[i]
            a, b = (base[mem[k].offset:mem[k].offset + t.nbytes].view(t.dtype) for k in (i, o))
            self.pairs.append((i, o, a, b, t.shape))
        self.flipped = False
        self.finalizer = weakref.finalize(self, device.release, self.offset, self.nbytes)

    def bind(self, feeds, bufs, shapes, bound) -> None:
        """The input reads the current block (unless fed), the output is computed into the other."""
        for i, o, a, b, shape in self.pairs:
            cur, nxt = (b, a) if self.flipped else (a, b)
            if i not in feeds:
                bufs[i], shapes[i] = cur, shape
            bufs[o] = nxt
            if bound:
                bound.pop(o, None)

    def after(self, results, plan) -> list:
        """The new state is copied out (its block is overwritten two runs on); the blocks swap roles."""
        out = {o for _, o, *_ in self.pairs}
        results = [r.copy() if t in out else r for t, r in zip(plan.outputs, results)]
        self.flipped = not self.flipped
        return results

    def release(self) -> None:
        self.finalizer()
