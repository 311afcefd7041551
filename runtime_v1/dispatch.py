"""The stream scheduler: a static plan's streams as queues that the AI cores pull from, as on the NPU.

On Ascend, a stream is a queue of tasks, not a thread: the hardware scheduler hands the blocks of the task
at a stream's head to whichever AI cores are free, and a free core takes the next stream whose head may go
(its event waits satisfied). `Dispatcher` models that for a plan with several streams and tiled kernels:
`aicore_num` native threads (the caller and cores - 1 workers, parked between runs) run one loop,
`dispatch`, over every stream's table (model.py: a table per plan stream, RECORD / WAIT rows between them):
  1. blocks first: a core claims an unstarted block of any launched task (a CAS setting the block's bit in
     the stream's NEXT word, generation-tagged as in ge.npu.aicore; core c tries block c mod block_dim
     first, the part it computed of the last launch), and the core that finishes a task's last block owns
     its stream and drives it on (`_drive`), so the stream's next task starts with no hand-over;
  2. else a stream: of the streams no core owns, the one whose head has the earliest plan step (plan order
     is topological: the critical path of one stream first); `_drive` runs its event ops and untiled tasks
     until a tiled task (launched: its blocks go to step 1), an unmet WAIT (the stream is free again), a
     launched task elsewhere with a block left (the stream is freed, the block taken: a BERT-like encoder's
     V projection waited 250 us for its second block behind a stream's chain of small tasks) or the end;
  3. else wait for SEQ, a counter every launch, record and finished stream bumps (spin, yield, futex).
A core is idle only when no stream can move and no launched block is left: streams fill the tails of one
another's tasks, which one stream with a barrier per task cannot (measured in bench/aicores_report.py).
Each core holds one of the device's core tokens for the run: the caller takes one as a runtime's thread does,
a worker only when one is free (it waits otherwise), so other sessions' threads and these never oversubscribe.
A kernel that raised sets its stream's STATUS; the first failure is kept in FAILED (row + 1) and ABORT
stops every core at its next step; the executor re-runs that task from Python for the message.

Per-stream line (one 64-byte line each, after the event lines): STREAM_STATE (FREE, OWNED, LAUNCHED,
ENDED), PC (the head row), NEXT (generation << MASK_BITS | a bit per claimed block), DONE (blocks finished),
BDIM, GEN.
Workers never touch Python between runs (`core_loop`): a run does not wait for one to take the GIL (a
Python loop per worker made SqueezeNet and the BERT-like encoder 4-6% slower than one stream; native, par).
"""
from __future__ import annotations

import os
import threading

import numpy as np
from numba import njit

from ge.npu import native
from ge.npu.aicore import hold, trace_block, try_hold, unhold
from ge.npu.native import (ABORT, LINE, STATUS, bump, call_thunk, cas, cycles, fetch_add, load_acquire, store_seqcst,
                           wait_change)

from .sink import EV0, RECORD

STREAM_STATE, PC, NEXT, DONE, BDIM, GEN = 0, 1, 2, 3, 4, 5   # words of a stream's line
FREE, OWNED, LAUNCHED, ENDED = 0, 1, 2, 3
SEQ, FIN, FAILED = 0, 2, 3   # words of the line after the streams' (SEQ's futex waiter count at 1)
MAX_CORES = MASK_BITS = 40   # block_dim <= cores (tiling.block_dim_for): a bit per block in the claim word
ADDRS, IOFFS, FOFFS, BLOCKS = 0, 1, 2, 3   # rows of `tab`: the streams' tables' columns, end to end
STREAM_LINES, SHARED_LINE = 0, 1           # entries of `lay`: the word where the streams' lines start, the
                                           # word of the line after them (SEQ, FIN, FAILED)


@njit(nogil=True, cache=True)
def _fail(ctrl, lay, t):
    """Keep the first failing row, stop every core."""
    base = ctrl.ctypes.data
    cas(base + 8 * (lay[SHARED_LINE] + FAILED), 0, t + 1)
    store_seqcst(base + 8 * ABORT, 1)
    bump(ctrl, lay[SHARED_LINE] + SEQ)


@njit(nogil=True, cache=True)
def _blocks_left(ctrl, lay, n):
    """Some launched task has a block no core claimed yet."""
    base = ctrl.ctypes.data
    for k in range(n):
        s = lay[STREAM_LINES] + LINE * k
        if load_acquire(base + 8 * (s + STREAM_STATE)) == LAUNCHED:
            full = (1 << ctrl[s + BDIM]) - 1
            if load_acquire(base + 8 * (s + NEXT)) & full != full:
                return True
    return False


@njit(nogil=True, cache=True)
def _drive(k, core, team, tab, stops, itab, ftab, rows, ctrl, lay, gen):
    """Run stream k (owned by this core) from its head: True when it moved or launched, False when its head
    is a WAIT not yet met (the stream is free again)."""
    base = ctrl.ctypes.data
    addrs, ioffs, foffs, blocks = tab[ADDRS], tab[IOFFS], tab[FOFFS], tab[BLOCKS]
    s = lay[STREAM_LINES] + LINE * k
    ip, fp = itab.ctypes.data, ftab.ctypes.data
    bp = rows.ctypes.data + 8 * rows.shape[1] * k
    t, stop = ctrl[s + PC], stops[k]
    moved = False
    while t < stop:
        if load_acquire(base + 8 * ABORT) != 0:
            return True
        a = addrs[t]
        if a > 0 and moved and _blocks_left(ctrl, lay, stops.size):   # blocks first: free the stream for later
            ctrl[s + PC] = t
            store_seqcst(base + 8 * (s + STREAM_STATE), FREE)
            bump(ctrl, lay[SHARED_LINE] + SEQ)
            return True
        if a > 0 and blocks[t] == 1:
            t0 = cycles()
            call_thunk(a, ip + 8 * ioffs[t], fp + 8 * foffs[t], bp, 0, 1)
            if team.size > 1:
                trace_block(team.ctypes.data, ip + 8 * ioffs[t], 0, core, t0)
            if load_acquire(bp + 8 * STATUS) != 0:
                _fail(ctrl, lay, t)
                return True
        elif a > 0:   # a tiled task: launched, its blocks taken by any core (this one first)
            tag = ctrl[s + GEN] + 1   # this launch's generation: NEXT's tag
            ctrl[s + GEN], ctrl[s + PC], ctrl[s + BDIM] = tag, t, blocks[t]
            store_seqcst(base + 8 * (s + DONE), 0)
            store_seqcst(base + 8 * (s + NEXT), tag << MASK_BITS)
            store_seqcst(base + 8 * (s + STREAM_STATE), LAUNCHED)
            bump(ctrl, lay[SHARED_LINE] + SEQ)
            return True
        elif a == RECORD:
            store_seqcst(base + 8 * (EV0 + LINE * ioffs[t]), gen + foffs[t])
            bump(ctrl, lay[SHARED_LINE] + SEQ)
        elif load_acquire(base + 8 * (EV0 + LINE * ioffs[t])) != gen + foffs[t]:   # a WAIT not met yet
            ctrl[s + PC] = t
            store_seqcst(base + 8 * (s + STREAM_STATE), FREE)
            return moved
        t += 1
        moved = True
    ctrl[s + PC] = stop
    store_seqcst(base + 8 * (s + STREAM_STATE), ENDED)
    fetch_add(base + 8 * (lay[SHARED_LINE] + FIN), 1)
    bump(ctrl, lay[SHARED_LINE] + SEQ)
    return True


@njit(nogil=True, cache=True)
def _claim(k, core, team, tab, stops, itab, ftab, rows, ctrl, lay, gen):
    """Run one block of stream k's launched task, if one is left (True); the last block's core drives on."""
    base = ctrl.ctypes.data
    s = lay[STREAM_LINES] + LINE * k
    while True:
        if load_acquire(base + 8 * (s + STREAM_STATE)) != LAUNCHED:
            return False
        v = load_acquire(base + 8 * (s + NEXT))
        t, bd = ctrl[s + PC], ctrl[s + BDIM]   # stored before NEXT: this launch's, or NEXT moved on (CAS fails)
        claimed = v & ((1 << MASK_BITS) - 1)
        b = core % bd
        for _ in range(bd):   # this core's own block first (the part it computed of the last launch)
            if claimed & (1 << b) == 0:
                break
            b = b + 1 if b + 1 < bd else 0
        if claimed & (1 << b) != 0:
            return False
        if cas(base + 8 * (s + NEXT), v, v | (1 << b)) != v:
            continue
        bp = rows.ctypes.data + 8 * rows.shape[1] * k
        if load_acquire(bp + 8 * STATUS) == 0:   # a block failed: the rest are skipped, counted done
            t0 = cycles()
            ip = itab.ctypes.data + 8 * tab[IOFFS][t]
            call_thunk(tab[ADDRS][t], ip, ftab.ctypes.data + 8 * tab[FOFFS][t], bp, b, bd)
            if team.size > 1:
                trace_block(team.ctypes.data, ip, b, core, t0)
        if fetch_add(base + 8 * (s + DONE), 1) + 1 == bd:
            if load_acquire(bp + 8 * STATUS) != 0:
                _fail(ctrl, lay, t)
                return True
            ctrl[s + PC] = t + 1
            store_seqcst(base + 8 * (s + STREAM_STATE), OWNED)
            _drive(k, core, team, tab, stops, itab, ftab, rows, ctrl, lay, gen)
        return True


@njit(nogil=True, cache=True)
def dispatch(core, tab, prio, stops, itab, ftab, rows, ctrl, lay, gen, team):
    """One core's loop for a run (module doc); returns when every stream ended or a task failed."""
    base = ctrl.ctypes.data
    n = stops.size
    tried = np.zeros(n, np.bool_)
    held = core == 0 or team.size == 1   # the caller computes anyway (it may overdraw, as a runtime's thread)
    if core == 0 and team.size > 1:
        hold(team)
    while True:
        seen = load_acquire(base + 8 * (lay[SHARED_LINE] + SEQ))   # before FIN: a stream's end bumps SEQ after it
        if load_acquire(base + 8 * (lay[SHARED_LINE] + FIN)) == n or load_acquire(base + 8 * ABORT) != 0:
            break
        if not held and not try_hold(team):   # a worker computes only with a free token: no oversubscription
            wait_change(ctrl, lay[SHARED_LINE] + SEQ, seen, ABORT, True)
            continue
        held = True
        ran = False
        for k in range(n):   # 1. blocks of launched tasks
            if _claim(k, core, team, tab, stops, itab, ftab, rows, ctrl, lay, gen):
                ran = True
                break
        tried[:] = False
        while not ran:   # 2. the free stream with the earliest head that can move
            best, first = -1, 1 << 62
            for k in range(n):
                s = lay[STREAM_LINES] + LINE * k
                if not tried[k] and load_acquire(base + 8 * (s + STREAM_STATE)) == FREE and prio[ctrl[s + PC]] < first:
                    best, first = k, prio[ctrl[s + PC]]
            if best < 0:
                break
            tried[best] = True
            if cas(base + 8 * (lay[STREAM_LINES] + LINE * best + STREAM_STATE), FREE, OWNED) == FREE:
                ran = _drive(best, core, team, tab, stops, itab, ftab, rows, ctrl, lay, gen)
        if not ran:   # 3. nothing to do until a launch, a record or a stream's end
            wait_change(ctrl, lay[SHARED_LINE] + SEQ, seen, ABORT, True)
    if held and team.size > 1:
        unhold(team)


@njit(nogil=True, cache=True)
def core_loop(core, tab, prio, stops, itab, ftab, rows, ctrl, lay, stride, team):
    """Worker core `core`: each run (a GO bump) `dispatch`, then arrive; returns at STOP. All native: a run
    never waits for this thread to take the GIL."""
    generation = 0
    while True:
        generation += 1
        if not native.park(ctrl, generation) or ctrl[native.STOP] != 0:
            return
        dispatch(core, tab, prio, stops, itab, ftab, rows, ctrl, lay, generation * stride, team)
        native.arrive(ctrl)


class Dispatcher:
    """The cores that run one instance's stream tables (module doc)."""

    def __init__(self, inst, cores: int):
        m = self.model = inst.model
        self.cores = cores
        sizes = [len(st.addrs) for st in m.streams]
        stops = np.cumsum(sizes).astype(np.int64)
        self.starts = stops - sizes
        tab = np.stack([np.concatenate([getattr(st, f) for st in m.streams]).astype(np.int64)
                        for f in ("addrs", "ioffs", "foffs", "blocks")])   # rows ADDRS, IOFFS, FOFFS, BLOCKS
        prio = np.array(_priorities(m.streams) + [1 << 40], np.int64)   # PC may sit at a table's end
        self.ctrl = native.new_ctrl(m.n_events + len(sizes) + 1)
        self.lay = np.array([EV0 + LINE * m.n_events, EV0 + LINE * (m.n_events + len(sizes))], np.int64)
        self.tables = (tab, prio, stops, m.itab, m.ftab, inst.rows, self.ctrl, self.lay)
        self.team = inst.team
        self.generation = 0
        self.workers: list[threading.Thread] = []
        self.pid = None
        self._start()

    def _start(self) -> None:
        if self.pid == os.getpid():
            return
        if self.pid is not None:   # a forked child: fresh flags, no workers of its own yet
            self.ctrl[native.GO] = self.ctrl[native.DONE] = self.ctrl[native.STOP] = 0
            # and fresh events: a WAIT is met by the value `generation * stride + offset`, so the parent's
            # last run's records would meet the child's first run's waits before their producers ran
            # (test_a_forked_child_starts_its_own_cores failed 1 run in 4 in the full suite)
            self.ctrl[native.USER0:] = 0
            self.generation = 0
        self.pid, self.workers = os.getpid(), []
        for c in range(1, self.cores):
            t = threading.Thread(target=core_loop, args=(c, *self.tables, self.model.event_stride, self.team),
                                 daemon=True, name=f"ge-v1-core{c}")
            t.start()
            self.workers.append(t)

    def run(self, keep: dict, tracer=None):
        """One run of every stream (traced by the cores' own records: `tracer` unused); the task whose kernel
        raised first, if any (the executor re-runs it from Python for its message)."""
        self._start()
        c, (s0, shared) = self.ctrl, self.lay
        # the last run's workers have left its loop (joined here, not at its end: every stream had ended by
        # then, and waking a parked worker only to hear it arrive cost small models 1-3%)
        native.join(c, self.generation * (self.cores - 1))
        self.generation += 1
        c[ABORT] = c[shared + FIN] = c[shared + FAILED] = 0
        c[s0 + STREAM_STATE:shared:LINE] = FREE
        c[s0 + PC:shared:LINE] = self.starts
        native.release(c)
        dispatch(0, *self.tables, self.generation * self.model.event_stride, self.team)
        failed = int(c[shared + FAILED]) - 1
        if failed < 0:
            return None
        native.join(c, self.generation * (self.cores - 1))   # no core runs a block while the task re-runs
        k = int(np.searchsorted(self.starts, failed, side="right")) - 1
        return self.model.streams[k].native[failed - self.starts[k]]

    def close(self) -> None:
        native.stop(self.ctrl)
        for t in self.workers:
            t.join(timeout=10)
        self.workers, self.pid = [], None


def _priorities(tables) -> list[int]:
    """Per row of every table: the plan step of the next task at or after it (event rows: their task's)."""
    out = []
    for st in tables:
        nxt, mine = 1 << 40, []
        for task in reversed(st.native):
            if task is not None:
                nxt = task.node.step
            mine.append(nxt)
        out += mine[::-1]
    return out
