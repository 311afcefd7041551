"""The native part of the task sink: the interpreter loops that run a stream's task table.

- `interpret(...)` runs tasks [start, stop) of one table. It is compiled once for the whole kernel library
  (it only calls addresses) and cached on disk; it releases the GIL. A task with block_dim 1 is one thunk
  call; a tiled task is launched on the device's AI cores (ge.npu.aicore.launch): this thread runs blocks
  too and the task ends when all blocks have. A kernel's exception cannot cross a C call: the thunk sets
  the STATUS slot of the base table; the loop stops there and returns the task index, and the executor
  re-runs that task from Python for the real message.
- `interpret_sync(...)` is the same loop for a stream thread of a multi-stream plan, whose table also
  holds event ops. Single-stream plans keep `interpret`: no event branch per task.
While a loop runs it holds one of the AI cores' tokens (ge.npu.aicore: at most as many threads compute as
there are cores); a stream thread gives its token back while it waits for an event, so a worker core can
take blocks of another stream's launch meanwhile.

Program encoding (model.py builds it): a table row is a task when its address is > 0, with its block_dim
in `blocks`; RECORD (-1) and WAIT (-2) rows are event ops with the event id in the row's int offset
(ioffs), the use of that id in its float offset (foffs: 0 unless ids are multiplexed). SWITCH (-3) and GOTO
(-4) are GE's label tasks (labels.py: static control flow): GOTO jumps to row ioffs; SWITCH reads the byte at
bases[itab[k]] + itab[k + 1] (k = ioffs) and jumps to row itab[k + 2] when it is zero (LabelSwitchByIndex
with two labels), else goes on. A jump never leaves the native run it sits in. SIGNAL (-5) and AWAIT (-6) are
counted flags of activated streams (labels.py: GE's StreamActive, and the events inside a body that runs many
times per run): SIGNAL adds foffs to the word of line ioffs; AWAIT, k = ioffs, waits until the word of line
itab[k] differs from the count this waiter has seen (kept in the line's third word), then counts one more, or
jumps to row itab[k + 1] when the word holds LEAVE plus that count (every activation taken, then the leave).
Both run between threads that never run ahead of each other (an activated stream is activated again only
after it signalled it was done), so a count is all a waiter needs; counted lines start from zero each run. Between the stream
threads of one instance, a control array (ge.npu.native.new_ctrl, one line per event) holds ABORT, the workers' GO / STOP and DONE counters, and line EV0 + e: event e's flag and its
waiter count. RECORD stores the run's value plus the row's use (release order); WAIT loads it (acquire)
until it equals that, so flags are never reset between runs (the executor passes generation * stride as
`generation`: ge.plan.event_uses). Waits on event flags time out every millisecond to
re-check ABORT (an abort changes no flag).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ge.npu.aicore import hold, launch, unhold
from ge.npu.native import (ABORT, LINE, STATUS, USER0, as_pointer, call_thunk, fetch_add, load_acquire,
                           store_seqcst, wait, wait_change, wake)

RECORD, WAIT = -1, -2   # event ops in a table's address column (the event id in ioffs)
SWITCH, GOTO = -3, -4   # label ops (static control flow)
SIGNAL, AWAIT = -5, -6  # counted flags (activated streams)
LEAVE = 1 << 40         # a SIGNAL of this much: the activated stream leaves its loop
SWITCH_SLOT, SWITCH_OFFSET, SWITCH_TO = 0, 1, 2   # a SWITCH's words in the int table, from itab[ioffs]
AWAIT_LINE, AWAIT_LEAVE = 0, 1                    # an AWAIT's words
SEEN = 2                # a counted line's word holding the count its waiter has seen
DONE_OK, ABORTED = -1, -2
EV0 = USER0


@njit(nogil=True, cache=True, inline="always")
def _jump(a, t, ioffs, itab, bases):
    """The row after label op `a` at row t."""
    if a == GOTO:
        return ioffs[t]
    k = ioffs[t]
    if as_pointer(bases[itab[k + SWITCH_SLOT]] + itab[k + SWITCH_OFFSET], np.uint8)[0] == 0:
        return itab[k + SWITCH_TO]
    return t + 1


@njit(nogil=True, cache=True)
def interpret(addrs, ioffs, foffs, blocks, itab, ftab, bases, team, slot, start, stop):
    """Run tasks [start, stop); -1, or the index of the task whose kernel raised (the run stops there)."""
    ip, fp, bp = itab.ctypes.data, ftab.ctypes.data, bases.ctypes.data
    if slot >= 0:
        hold(team)
    failed = -1
    t = start
    while t < stop:
        a = addrs[t]
        if a < 0:   # one stream has no event ops: a label op
            t = _jump(a, t, ioffs, itab, bases)
            continue
        if blocks[t] == 1:
            call_thunk(a, ip + 8 * ioffs[t], fp + 8 * foffs[t], bp, 0, 1)
        else:
            launch(team, slot, a, ip + 8 * ioffs[t], fp + 8 * foffs[t], bp, blocks[t])
        if bases[STATUS] != 0:
            failed = t
            break
        t += 1
    if slot >= 0:
        unhold(team)
    return failed


@njit(nogil=True, cache=True)
def interpret_sync(addrs, ioffs, foffs, blocks, itab, ftab, bases, team, slot, ctrl, generation, start, stop):
    """Run rows [start, stop) of a stream with event ops: DONE_OK, ABORTED (a wait saw ABORT), or the
    index of the task whose kernel raised."""
    ip, fp, bp, base = itab.ctypes.data, ftab.ctypes.data, bases.ctypes.data, ctrl.ctypes.data
    if slot >= 0:
        hold(team)
    result = DONE_OK
    t = start
    while t < stop:
        a = addrs[t]
        if a > 0:
            if blocks[t] == 1:
                call_thunk(a, ip + 8 * ioffs[t], fp + 8 * foffs[t], bp, 0, 1)
            else:
                launch(team, slot, a, ip + 8 * ioffs[t], fp + 8 * foffs[t], bp, blocks[t])
            if bases[STATUS] != 0:
                result = t
                break
        elif a == SWITCH or a == GOTO:
            t = _jump(a, t, ioffs, itab, bases)
            continue
        elif a == SIGNAL:
            word = base + 8 * (EV0 + LINE * ioffs[t])
            fetch_add(word, foffs[t])
            wake(ctrl, word)
        elif a == AWAIT:
            k = ioffs[t]
            word = EV0 + LINE * itab[k + AWAIT_LINE]
            seen = load_acquire(base + 8 * (word + SEEN))
            now = load_acquire(base + 8 * word)
            if now == seen:
                if slot >= 0:
                    unhold(team)
                now = wait_change(ctrl, word, seen, ABORT, True)
                if slot >= 0:
                    hold(team)
                if now == -1:
                    result = ABORTED
                    break
            if now - LEAVE == seen:   # every activation taken, then the leave
                t = itab[k + AWAIT_LEAVE]
                continue
            store_seqcst(base + 8 * (word + SEEN), seen + 1)
        elif a == RECORD:
            word = EV0 + LINE * ioffs[t]
            store_seqcst(base + 8 * word, generation + foffs[t])
            wake(ctrl, base + 8 * word)
        else:
            word = EV0 + LINE * ioffs[t]
            value = generation + foffs[t]
            if load_acquire(base + 8 * word) == value:
                t += 1
                continue
            if slot >= 0:   # waiting: this core may serve another stream's blocks meanwhile
                unhold(team)
            ok = wait(ctrl, word, value, ABORT, True)
            if slot >= 0:
                hold(team)
            if not ok:
                result = ABORTED
                break
        t += 1
    if slot >= 0:
        unhold(team)
    return result


@njit(nogil=True, cache=True)
def abort(ctrl, n_events):
    """Set ABORT and wake every sleeping waiter (a waiter that misses it re-checks within 1 ms)."""
    base = ctrl.ctypes.data
    store_seqcst(base + 8 * ABORT, 1)
    for e in range(n_events):
        wake(ctrl, base + 8 * (EV0 + LINE * e))
