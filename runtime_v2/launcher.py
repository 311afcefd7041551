"""The host side of a dynamic plan's streams on native threads (queues.py): one walk of the plan per run.

The calling thread walks the steps in plan order (topological, so every event a step waits for was
recorded or posted before) and, per step k on thread g:
  1. Waits: g = 0 (the host's own streams) waits for the event flags here; another thread gets WAIT
     entries. The MIF recycle state travels with the event as before (`memory.wait(g, token)`).
  2. The step: on thread 0 it runs here, as on one thread. On another thread, a dynamic node is bound
     here (shapes, output blocks from thread g's allocator view, its base table) and posted as a TASK;
     what cannot be posted (value inputs read on the host, atomic outputs, host ops, no thunk) runs here
     after thread g drained its queue, i.e. after g's earlier steps and waits.
  3. MIF: the block shares and frees of the step (stream_memory.py), on the host, in plan order: a block
     freed on g may serve g's later launches at once (g runs them after), another thread's only after an
     event, as MIF decides.
  4. Records: a RECORD entry on g (or the flag set here for thread 0), with `memory.record(g)`'s token.
All Python runs on one thread: no GIL hand-offs between streams, which cost more than the streams gained
(README "Stream modes and their cost"). At the end every queue is drained (GE's LastWaitEvents).
A failing step (here or a posted kernel) aborts the run: the streams skip the rest, the host stops
posting, and the earliest failing step's error is reported (a posted kernel is re-run here for it).
"""
from __future__ import annotations

import numpy as np

from ge.kernels.registry import serial_blocks
from ge.npu.aicore import hold, unhold
from ge.npu.native import ABORT

from .dynamic import DynamicNode
from .lowering import ALIAS, ALLOC, BOUND, DYNAMIC, HOST
from .queues import RECORD, WAIT, StreamQueues, abort, flag_word, signal


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
    return StreamQueues(ex.stream_threads, flags, cap, inst.team, inst.slots, first=1 if HOST_STREAM else 0)


HOST_STREAM = False   # thread 0 on the host too (measured against all-native threads)


def run_launched(ex, inst, bufs, shapes, spans):
    """One run (module doc); (step, exception) of the earliest failing step, or None."""
    q, steps, allocs, memory = inst.queues, inst.steps, inst.stream_allocs, inst.alloc
    table, (shares, frees), team, slots = ex.launch_table[0], ex.stream_memory, inst.team, inst.slots
    run = q.begin()
    ctrl, tokens = q.ctrl, {}
    posted: dict = {}   # step -> (task, buffers) of posted kernels: alive until drained, to name a failure
    failed = None
    k = -1
    here = q.first   # threads below it run on the host
    if here:
        hold(team)
    try:
        for k, (g, waits, records) in enumerate(table):
            if ctrl[ABORT]:   # a posted kernel raised
                break
            kind, fn, ins, tail, _ = steps[k]
            alloc = allocs[g]
            if g < here:
                if not all([q.wait_flag(w, run) for _, w in waits]):
                    break   # aborted meanwhile
                for j, _ in waits:
                    memory.wait(g, tokens[j])
            else:
                for j, w in waits:
                    if ctrl[w] != run:   # not recorded yet: the stream waits for it
                        q.post(g, WAIT, w, run)
                    memory.wait(g, tokens[j])
            done = None
            if g >= here and kind == DYNAMIC and type(fn) is DynamicNode:
                done = fn.post(bufs, shapes, spans, alloc, q, g, int(slots[g]), k)
                if done:
                    posted[k] = done
            if done is None:   # runs here: on another thread's behalf after it drained
                if g >= here:
                    q.drain(g)
                if kind == BOUND:
                    fn(*[bufs[i] for i in ins], *tail)
                elif kind == ALIAS:
                    bufs[tail] = bufs[ins]
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
                if g < here:
                    signal(ctrl, w, run)
                else:
                    q.post(g, RECORD, w, run)
            if g >= here:
                q.flush(g)
    except Exception as e:  # noqa: BLE001 - reported to the caller of run()
        failed = (k, e)
        abort(ctrl)
    finally:
        for g in range(here, q.threads):
            q.drain(g)
        if here:
            unhold(team)
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
            sp = spans[o.tensor] = alloc.alloc(o.nbytes)
            a = bufs[o.tensor] = sp.as_array(o.dtype, o.count)
        else:
            a = bufs[o.tensor]
        arrays.append(a)
    fn(*[bufs[i] for i in ins], *arrays, *rest)
