"""The host side of a dynamic plan's streams on native threads (queues.py): one walk of the plan per run.

The calling thread (the host) walks the steps in plan order (topological, so every event a step waits
for was recorded or posted before) and, per step k on stream thread g (every thread is native):
  1. Waits: a WAIT entry on g per event not recorded yet; the MIF recycle state travels with the event
     as before (`memory.wait(g, token)`).
  2. The step: a dynamic node is bound here (shapes, output blocks from thread g's allocator view, its
     base table) and posted as a TASK; an alias only sets its view; what cannot be posted (value inputs
     read here, atomic outputs, host ops, static launches, no thunk) runs here once g drained its queue,
     i.e. after g's earlier steps and waits.
  3. MIF: the block shares and frees of the step (stream_memory.py), here, in plan order: a block freed
     on g may serve g's later launches at once (g runs them after), another thread's only after an
     event, as MIF decides.
  4. Records: a RECORD entry on g per event, with `memory.record(g)`'s token; then g sees the step's
     entries (one store).
All Python runs on one thread: no GIL hand-offs between streams (with Python stream threads they cost
more than the streams gained, docs/streams.md, "Stream modes and their cost"), and the host runs ahead of the
kernels, as GE's host launches ahead of its streams. The host keeps no AI-core token (it runs no kernel
unless a step cannot be posted). At the end every queue is drained (GE's LastWaitEvents).
A failing step (here or a posted kernel) aborts the run: the streams skip the rest, the host stops
posting, and the earliest failing step's error is reported (a posted kernel is re-run here for it).
"""
from __future__ import annotations

import numpy as np

from ge.errors import DeviceMemoryError
from ge.kernels.registry import serial_blocks
from ge.npu.native import ABORT

from .dynamic import DynamicNode
from .lowering import ALIAS, ALLOC, BOUND, DYNAMIC, HOST
from .queues import RECORD, WAIT, StreamQueues, abort, flag_word


def launch_table(programs, uses, threads: int) -> tuple[list, int]:
    """Per step (thread, flags it waits for, flags it records) as (index, control word) pairs, and the
    number of flags: one per (event id, use), so each is recorded once per run and holds the run's number
    after."""
    _, use = uses
    flags: dict = {}
    table: list = []
    for g, prog in enumerate(programs):
        for step, waits, records in prog:
            w = tuple(flags.setdefault((e, use.get(("wait", step, e), 0)), len(flags)) for e in waits)
            r = tuple(flags.setdefault((e, use.get(("record", step, e), 0)), len(flags)) for e in records)
            table.append((step, g, w, r))
    table.sort()
    word = lambda js: tuple((j, flag_word(threads, j)) for j in js)  # noqa: E731
    return [(g, word(w), word(r)) for _, g, w, r in table], len(flags)


def queues_for(ex, inst) -> StreamQueues | None:
    """An instance's native stream threads (None: no AI-core team with a slot per thread, so no native
    waits: the Python stream threads run it)."""
    if inst.cores is None or not inst.cores.native or min(int(s) for s in inst.slots) < 0:
        return None
    table, flags = ex.launch_table
    cap = [0] * ex.stream_threads
    for g, w, r in table:
        cap[g] += len(w) + len(r) + 1
    return StreamQueues(ex.stream_threads, flags, cap, inst.team, inst.slots)


def run_launched(ex, inst, bufs, shapes, spans):
    """One run (module doc); (step, exception) of the earliest failing step, or None."""
    q, steps, allocs, memory = inst.queues, inst.steps, inst.stream_allocs, inst.alloc
    table, (shares, frees), team, slots = ex.launch_table[0], ex.stream_memory, inst.team, inst.slots
    run = q.begin()
    ctrl, tokens = q.ctrl, {}
    posted: dict = {}   # step -> (task, buffers) of posted kernels: alive until drained, to name a failure
    failed = None
    k = -1
    try:
        for k, (g, waits, records) in enumerate(table):
            if ctrl[ABORT]:   # a posted kernel raised
                break
            kind, fn, ins, tail, _ = steps[k]
            alloc = allocs[g]
            for j, w in waits:
                if ctrl[w] != run:   # not recorded yet: the stream waits for it
                    q.post(g, WAIT, w, run)
                memory.wait(g, tokens[j])
            done = None
            if kind == DYNAMIC and type(fn) is DynamicNode:
                done = fn.post(bufs, shapes, spans, alloc, q, g, int(slots[g]), k)
                if done:
                    posted[k] = done
            if kind == ALIAS:   # a view: nothing to wait for
                bufs[tail] = bufs[ins]
            elif done is None:   # runs here, on thread g's behalf, once g ran everything before it
                q.drain(g)
                if kind == BOUND:
                    fn(*[bufs[i] for i in ins], *tail)
                elif kind == DYNAMIC:
                    fn(bufs, shapes, spans, alloc, (team, int(slots[g])))
                else:
                    run_static(fn, ins, tail, bufs, spans, alloc)
            for t, readers in shares[k]:
                if spans[t] is not None:
                    for r in readers:
                        alloc.mif.access(spans[t], r)
            for t in frees[k]:
                if spans[t] is not None:
                    alloc.free(spans[t])
            for j, w in records:
                tokens[j] = memory.record(g)
                q.post(g, RECORD, w, run)
            q.flush(g)
    except Exception as e:  # noqa: BLE001 - reported to the caller of run()
        failed = (k, e)
        abort(ctrl)
    finally:
        for g in range(q.threads):
            q.drain(g)
    errors = [failed] if failed else []
    for s in q.failed_steps():
        errors.append((s, _rerun(*posted[s])))
    return min(errors, key=lambda e: e[0]) if errors else None


def _rerun(task, buffers) -> Exception:
    """A posted kernel that raised, re-run here for its own exception."""
    launch = task.launch
    try:
        serial_blocks(launch)(*buffers, *launch.args)
    except Exception as e:  # noqa: BLE001
        return e
    return RuntimeError("the kernel raised on the AI cores (it did not raise when re-run)")


def run_static(fn, ins, tail, bufs, spans, alloc) -> None:
    """A static launch with outputs outside the arena: HOST arrays or caching-allocator spans."""
    outs, rest = tail
    arrays = []
    for o in outs:
        if o.place == HOST or o.nbytes == 0:
            a = bufs[o.tensor]  # a caller's bound output array, or None
            if a is None or a.size != o.count:
                a = bufs[o.tensor] = np.empty(o.count, o.dtype)
        elif o.place == ALLOC:
            try:
                sp = spans[o.tensor] = alloc.alloc(o.nbytes)
            except DeviceMemoryError as e:   # the executor names the tensor (a try costs nothing)
                e.tensor = o.tensor
                raise
            a = bufs[o.tensor] = sp.as_array(o.dtype, o.count)
        else:
            a = bufs[o.tensor]
        arrays.append(a)
    fn(*[bufs[i] for i in ins], *arrays, *rest)
