"""Who frees a caching-allocator tensor where, when a dynamic plan's streams run on their own threads.

On one thread a tensor's span goes back at the last step (plan order) that reads its symbol. With a
thread per stream, plan order is not time order across threads, so each thread frees on its own, and the
MIF protocol (mif.py) decides when the block may serve another request:
  1. Occupants: the tensor's birth thread (its producer's) and every other thread with a step that uses its
     symbol after the producer. Right after the producing step the birth thread registers the others
     (GE's AccessMemCrossStream), before it can free its own use, so the block cannot be recycled while a
     reader on another thread has yet to run.
  2. Frees: each occupant frees the block after its own last step that uses the symbol.
  3. The runner (streams.py) carries the allocator's recycle state on the events: `record` after a step,
     `wait` before one; the end of a run is GE's LastWaitEvents (`synchronize`).
Threads are the MIF streams: streams merged on one thread run in order there, as one stream.
"""
from __future__ import annotations

from .lowering import ALLOC, symbols


class StreamAlloc:
    """The caching-allocator interface the steps call (alloc / free), bound to one thread's stream."""
    __slots__ = ("mif", "stream")

    def __init__(self, mif, stream: int):
        self.mif, self.stream = mif, stream

    @property
    def device(self):
        return self.mif.device

    def alloc(self, nbytes: int):
        return self.mif.alloc(nbytes, self.stream)

    def free(self, blk) -> None:
        self.mif.free(blk, self.stream)


def stream_tables(plan, lowered, thread_of) -> tuple[list, list]:
    """Per step: `shares` ((tensor, other occupant threads), ...) registered after the step on the birth
    thread (rule 1), and `frees` (tensors this step's thread is done with after it, rule 2)."""
    root, members = symbols(plan)
    out_roots = {root[t] for t in plan.outputs}
    uses: dict[int, list[tuple[int, int]]] = {}   # symbol -> (step, thread) of every step using it
    producer = {}
    for node in plan.nodes:
        for t in node.outputs:
            if t >= 0:
                producer[t] = node.step
        for t in {*node.inputs, *node.outputs} - {-1}:
            uses.setdefault(root[t], []).append((node.step, thread_of[node.step]))
    shares = [[] for _ in plan.nodes]
    frees = [[] for _ in plan.nodes]
    for r, steps in uses.items():
        if r in out_roots:
            continue
        for m in members[r]:
            if lowered.place.get(m) != ALLOC or m not in producer:
                continue
            born = producer[m]
            last: dict[int, int] = {}
            for step, g in steps:
                if step >= born:
                    last[g] = max(last.get(g, -1), step)
            others = tuple(sorted(g for g in last if g != thread_of[born]))
            if others:
                shares[born].append((m, others))
            for step in last.values():
                frees[step].append(m)
    return [tuple(s) for s in shares], [tuple(f) for f in frees]
