"""Native stream threads for runtime_v2's dynamic multi-stream runs: the host thread posts, they run.

Python stream threads lose what the streams gain: both need the GIL between kernels, and each hand-off of
it is an OS wake-up (inception_like at batch 1: 0.5-0.8x of one stream). Here, as GE's host launches onto
device streams, the calling thread walks the plan (launcher.py) and every stream thread is a native loop
(`serve`, GIL released for its life) that runs what the host posts to its queue, in order:
  TASK    a kernel thunk (ge.npu.thunks: addr, int row, float row, base table, block_dim); a tiled one runs
          on the AI cores from this thread's launch slot (ge.npu.aicore.launch)
  RECORD  store the run's number in an event's flag (and wake its sleeper): each flag is one (event, use),
          recorded once per run, so flags are never reset
  WAIT    until an event's flag holds the run's number
Each queue is a ring of ROW-word entries; the host stores the stream's TAIL after writing a step's
entries, the stream stores HEAD after running each (the host waits on HEAD to drain a stream). Every word
is in one control array (ge.npu.native's layout): per stream a TAIL line and a HEAD line (HEAD's line also
holds FAIL, the step whose kernel raised), then one line per event flag. Waits spin, yield, then sleep on
the word's futex.
A stream holds an AI-core token while it runs entries and gives it back while it waits (for an entry or an
event), so the AI cores serve the other launches meanwhile. A kernel that raised sets ABORT: every stream
skips what is left (consuming it, so HEAD still reaches TAIL), the host re-runs the kernel for its message.
"""
from __future__ import annotations

import os
import threading

import numpy as np
from numba import njit

from ge.npu import native
from ge.npu.aicore import hold, launch, unhold
from ge.npu.native import (ABORT, LINE, STATUS, STOP, USER0, ZERO, call_thunk, load_acquire, store_seqcst,
                           wait, wait_change, wake)

TASK, RECORD, WAIT = 1, 2, 3
ROW = 8   # words per entry: op, addr | flag word, ip | value, fp, bp, block_dim, step, unused


@njit(nogil=True, cache=True)
def serve(ctrl, queue, tail, head, team, slot, cap):
    """A stream thread's life: run the entries posted at ctrl[tail] in order, until STOP."""
    base = ctrl.ctypes.data
    done = load_acquire(base + 8 * head)
    held = False
    while True:
        if load_acquire(base + 8 * tail) == done:   # idle: the token goes back while nothing is posted
            if held:
                unhold(team)
                held = False
            wait_change(ctrl, tail, done, STOP)
        if load_acquire(base + 8 * STOP) != 0:
            if held:
                unhold(team)
            return
        if not held:
            hold(team)
            held = True
        e = (done % cap) * ROW
        op = queue[e]
        if load_acquire(base + 8 * ABORT) == 0:
            if op == TASK:
                bp = queue[e + 4]
                if queue[e + 5] == 1:
                    call_thunk(queue[e + 1], queue[e + 2], queue[e + 3], bp, 0, 1)
                else:
                    launch(team, slot, queue[e + 1], queue[e + 2], queue[e + 3], bp, queue[e + 5])
                if load_acquire(bp + 8 * STATUS) != 0:
                    ctrl[head + 2] = queue[e + 6]
                    store_seqcst(base + 8 * ABORT, 1)
            elif op == RECORD:
                store_seqcst(base + 8 * queue[e + 1], queue[e + 2])
                wake(ctrl, base + 8 * queue[e + 1])
            elif load_acquire(base + 8 * queue[e + 1]) != queue[e + 2]:
                unhold(team)
                wait(ctrl, queue[e + 1], queue[e + 2], ABORT, True)
                hold(team)
        done += 1
        store_seqcst(base + 8 * head, done)
        wake(ctrl, base + 8 * head)


@njit(nogil=True, cache=True)
def publish(ctrl, word, posted):
    """The host made entries up to `posted` visible to a stream (and woke it if it sleeps)."""
    addr = ctrl.ctypes.data + 8 * word
    store_seqcst(addr, posted)
    wake(ctrl, addr)


@njit(nogil=True, cache=True)
def abort(ctrl):
    store_seqcst(ctrl.ctypes.data + 8 * ABORT, 1)


def flag_word(threads: int, j: int) -> int:
    """The control word of event flag j (after the streams' TAIL and HEAD lines)."""
    return USER0 + 2 * LINE * threads + LINE * j


class StreamQueues:
    """The stream threads of one instance as native loops, started at its first run. `capacity`: per
    thread, the most entries one run posts (rings never wrap over unread entries: a run ends with every
    queue drained)."""

    def __init__(self, threads: int, flags: int, capacity: list, team, slots, name: str = "ge-stream"):
        self.threads, self.team, self.slots, self.name = threads, team, slots, name
        self.ctrl = native.new_ctrl(2 * threads + flags)
        self.tails = [self.tail(g) for g in range(threads)]
        self.caps = [max(c, 1) for c in capacity]
        self.queues = [np.zeros(c * ROW, np.int64) for c in self.caps]
        self.posted = [0] * threads
        self.run_id = 0
        self._threads: list[threading.Thread] = []
        self._pid = os.getpid()

    def tail(self, g: int) -> int:
        return USER0 + 2 * LINE * g

    def head(self, g: int) -> int:
        return USER0 + 2 * LINE * g + LINE

    def begin(self) -> int:
        """A new run (every stream idle): its number, ABORT and FAIL cleared, the threads started (again in
        a forked child, which inherits no threads)."""
        if self._pid != os.getpid():
            self._pid, self._threads = os.getpid(), []
            self.ctrl[STOP] = 0
        if not self._threads:
            for g in range(self.threads):
                t = threading.Thread(target=serve, daemon=True, name=f"{self.name}-{g}", args=(
                    self.ctrl, self.queues[g], self.tail(g), self.head(g), self.team, int(self.slots[g]),
                    self.caps[g]))
                t.start()
                self._threads.append(t)
        self.ctrl[ABORT] = 0
        for g in range(self.threads):
            self.ctrl[self.head(g) + 2] = -1
        self.run_id += 1
        return self.run_id

    def post(self, g: int, op: int, a: int, b: int = 0, fp: int = 0, bp: int = 0, bd: int = 0,
             step: int = -1) -> None:
        """Write an entry for stream g; it sees it at the next `flush(g)`."""
        q, n = self.queues[g], self.posted[g]
        e = (n % self.caps[g]) * ROW
        q[e], q[e + 1], q[e + 2], q[e + 3], q[e + 4], q[e + 5], q[e + 6] = op, a, b, fp, bp, bd, step
        self.posted[g] = n + 1

    def flush(self, g: int) -> None:
        """Stream g may run every entry written so far (one store and wake for a step's entries)."""
        if self.ctrl[self.tails[g]] != self.posted[g]:
            publish(self.ctrl, self.tails[g], self.posted[g])

    def drain(self, g: int) -> None:
        """Until stream g ran everything posted to it."""
        self.flush(g)
        if self.ctrl[self.head(g)] != self.posted[g]:
            wait(self.ctrl, self.head(g), self.posted[g], ZERO, False)

    def failed_steps(self) -> list[int]:
        return [int(self.ctrl[self.head(g) + 2]) for g in range(self.threads)
                if self.ctrl[self.head(g) + 2] >= 0]

    def close(self) -> None:
        """Stop the stream threads (between runs)."""
        if not self._threads:
            return
        native.stop(self.ctrl)
        for g in range(self.threads):
            native.bump(self.ctrl, self.tail(g))
        for t in self._threads:
            t.join(timeout=10)
        self._threads = []
        self.ctrl[STOP] = 0
