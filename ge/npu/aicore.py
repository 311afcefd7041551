"""The AI cores of the modelled NPU: a team of native threads that run the blocks of tiled kernel launches.

Ascend launches a kernel with a `blockDim`: its blocks run on that many AI cores, each computing the part
`GetBlockIdx()` names, and the task ends when every block has. Here a *launch* is a kernel thunk
(thunks.py) with its argument rows and `block_dim`; `launch(team, slot, ...)` runs it on the team and
returns when all blocks are done. The launching thread is a core too: it posts the launch, runs blocks
itself, then waits for the blocks other cores took.

The team (`AICores`, one per device, `team()` for the default one) is `cores - 1` worker threads started
on first use, each in `core_loop` with the GIL released for good. Everything is in one control array
(native.py's layout) of int64 words:
  - IDLE: core tokens. A thread that runs kernels holds one (a runtime's calling or stream thread from its
    run's start to its end, except while it waits for an event); a worker must take one before it runs a
    block, so at most `cores` threads compute at once, whatever the number of streams and sessions
    (no oversubscription). ACTIVE: launches posted and not finished.
  - GO: bumped by every post. An idle worker spins briefly on it while a token is free (launches follow
    each other within microseconds in a run), then yields, then sleeps on its futex: parked, no spinning
    when nothing runs.
  - One slot (3 lines) per launching thread (`acquire_slots`): line 0 holds the launch (SLOT_STATE = its
    generation, 0 when idle; thunk address, argument row addresses, block_dim), line 1 NEXT = generation
    << GEN_SHIFT | next block, line 2 DONE = blocks finished (and its futex waiter count).
Claiming a block is a compare-and-swap on NEXT that checks the generation, so a worker that read an old
launch's fields can never take a block of the next launch in the same slot (the owner reposts only after
DONE reached block_dim, i.e. after every block of the old generation was claimed and finished).
A block whose kernel raised sets the base table's STATUS word (thunk ABI); the blocks not yet started see
it and are skipped (counted as done), so a failure aborts the task on every core and the caller sees it.
Without a way to wait natively, or with one core, every slot is -1: `launch` runs the blocks one after
the other on the caller.
"""
from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager

import numpy as np
from numba import njit

from ..errors import GEError
from . import native
from .native import (GO, LINE, STATUS, STOP, USER0, ZERO, bump, call_thunk, cas, cycles, fetch_add,
                     load_acquire, store_seqcst, wait, wait_change, wake)

IDLE, ACTIVE, SLOTS_USED = USER0, USER0 + 1, USER0 + 2
TRACE, TRACE_N, TRACE_CAP = USER0 + 3, USER0 + 4, USER0 + 5   # block records: buffer address, count, capacity
RECORD_WORDS = 5        # per block: task row address (ip), block, core (< 0: the launcher of slot -1 - core), t0, t1
SLOT0 = USER0 + LINE
SLOT_WORDS = 3 * LINE
SLOT_STATE, ADDR, IP, FP, BP, BDIM, GEN = 0, 1, 2, 3, 4, 5, 6   # line 0 of a slot (GEN: the owner's counter)
NEXT, DONE = LINE, 2 * LINE
GEN_SHIFT = 24          # block indices below 2**24
MAX_SLOTS = 256
CORE_TRACK0 = 1000      # trace track of worker core k: CORE_TRACK0 + k


@njit(nogil=True, cache=True, inline="always")
def trace_block(base, ip, b, core, t0):
    """A block's trace record, when tracing is on (TRACE holds a buffer address)."""
    buf = load_acquire(base + 8 * TRACE)
    if buf != 0:
        t1 = cycles()
        i = fetch_add(base + 8 * TRACE_N, 1)
        if i < load_acquire(base + 8 * TRACE_CAP):
            rec = buf + 8 * RECORD_WORDS * i
            store_seqcst(rec, ip)
            store_seqcst(rec + 8, b)
            store_seqcst(rec + 16, core)
            store_seqcst(rec + 24, t0)
            store_seqcst(rec + 32, t1)


@njit(nogil=True, cache=True, inline="always")
def _blocks(team, s, gen, addr, ip, fp, bp, block_dim, core):
    """Claim and run blocks of the launch in slot word `s` while it is generation `gen`; how many ran."""
    base = team.ctypes.data
    ran = 0
    while True:
        v = load_acquire(base + 8 * (s + NEXT))
        b = v & ((1 << GEN_SHIFT) - 1)
        if (v >> GEN_SHIFT) != gen or b >= block_dim:
            return ran
        if cas(base + 8 * (s + NEXT), v, v + 1) != v:
            continue
        if load_acquire(bp + 8 * STATUS) == 0:   # a block failed: skip the rest, count them done
            t0 = cycles()
            call_thunk(addr, ip, fp, bp, b, block_dim)
            trace_block(base, ip, b, core, t0)
        ran += 1
        if fetch_add(base + 8 * (s + DONE), 1) + 1 == block_dim:
            wake(team, base + 8 * (s + DONE))


@njit(nogil=True, cache=True)
def launch(team, slot, addr, ip, fp, bp, block_dim):
    """Run blocks 0..block_dim-1 of the thunk at `addr` over the team (ip, fp, bp: its argument rows);
    returns when every block is done. `slot` < 0 (none free) or block_dim 1: all on this thread."""
    if slot < 0 or block_dim <= 1:
        for b in range(block_dim):
            if load_acquire(bp + 8 * STATUS) != 0:
                return
            call_thunk(addr, ip, fp, bp, b, block_dim)
        return
    base = team.ctypes.data
    s = SLOT0 + slot * SLOT_WORDS
    gen = team[s + GEN] + 1
    team[s + GEN] = gen
    team[s + ADDR], team[s + IP], team[s + FP], team[s + BP], team[s + BDIM] = addr, ip, fp, bp, block_dim
    store_seqcst(base + 8 * (s + DONE), 0)
    store_seqcst(base + 8 * (s + NEXT), gen << GEN_SHIFT)
    store_seqcst(base + 8 * (s + SLOT_STATE), gen)
    fetch_add(base + 8 * ACTIVE, 1)
    bump(team, GO)
    _blocks(team, s, gen, addr, ip, fp, bp, block_dim, -1 - slot)
    wait(team, s + DONE, block_dim, ZERO, False)
    store_seqcst(base + 8 * (s + SLOT_STATE), 0)
    fetch_add(base + 8 * ACTIVE, -1)


@njit(nogil=True, cache=True)
def hold(team):
    """This thread computes now: it takes a core token (it may overdraw: runtimes never wait for one)."""
    fetch_add(team.ctypes.data + 8 * IDLE, -1)


@njit(nogil=True, cache=True)
def try_hold(team):
    """Take a core token if one is free (a worker's way in: it never overdraws); True when taken."""
    return _take_token(team.ctypes.data)


@njit(nogil=True, cache=True)
def unhold(team):
    """This thread stops computing (its run ended, or it waits for an event): its token goes back, and a
    parked worker is woken if a launch has blocks left."""
    base = team.ctypes.data
    fetch_add(base + 8 * IDLE, 1)
    if load_acquire(base + 8 * ACTIVE) > 0:
        bump(team, GO)


@njit(nogil=True, cache=True, inline="always")
def _take_token(base):
    while True:
        idle = load_acquire(base + 8 * IDLE)
        if idle <= 0:
            return False
        if cas(base + 8 * IDLE, idle, idle - 1) == idle:
            return True


@njit(nogil=True, cache=True)
def core_loop(team, core):
    """Worker core `core`: run posted blocks while a token is free, else park on GO; returns at STOP."""
    base = team.ctypes.data
    while True:
        seen = load_acquire(base + 8 * GO)
        if load_acquire(base + 8 * STOP) != 0:
            return
        ran = 0
        if load_acquire(base + 8 * ACTIVE) > 0 and _take_token(base):
            for k in range(load_acquire(base + 8 * SLOTS_USED)):
                s = SLOT0 + k * SLOT_WORDS
                gen = load_acquire(base + 8 * (s + SLOT_STATE))
                if gen != 0:
                    ran += _blocks(team, s, gen, team[s + ADDR], team[s + IP], team[s + FP], team[s + BP],
                                   team[s + BDIM], core)
            fetch_add(base + 8 * IDLE, 1)
        if ran == 0 and wait_change(team, GO, seen, STOP) == -1:
            return


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


CPUS = _cpus()


@njit(nogil=True, cache=True)
def _cycles():
    return cycles()


def _now() -> tuple[int, float]:
    """(cycle counter, perf_counter) at nearly the same moment."""
    return _cycles(), time.perf_counter()


def aicore_num(options) -> int:
    """The AI cores a plan is tiled for: Options.aicore_num, else the thread budget, else the CPUs; a GEError
    naming the option when it is outside 1..CPUS."""
    n = options.aicore_num or min(options.thread_budget or CPUS, CPUS)
    if not 1 <= n <= CPUS:
        raise GEError(f"aicore_num (ge.aicoreNum) must be between 1 and {CPUS}, the CPUs this process may use; "
                      f"got {n}")
    return n


class AICores:
    """A device's AI cores: the control array, the worker threads and the launch slots (module doc)."""

    def __init__(self, cores: int, name: str = "npu0"):
        if not 1 <= cores <= CPUS:
            raise GEError(f"aicore_num (ge.aicoreNum) must be between 1 and {CPUS}, the CPUs this process may "
                          f"use; got {cores}")
        self.cores, self.name = cores, name
        self.ctrl = native.new_ctrl(1 + MAX_SLOTS * 3)
        self.ctrl[IDLE] = cores
        self._free = list(range(MAX_SLOTS - 1, -1, -1))
        self._lock = threading.Lock()
        self._workers: list[threading.Thread] = []
        self._pid = None

    @property
    def native(self) -> bool:
        """Blocks run on several threads (else every launch runs its blocks on the caller)."""
        return self.cores > 1 and native.AVAILABLE

    def acquire_slots(self, n: int) -> np.ndarray:
        """n launch slots for n launching threads (-1 where none is left: those launch on their own)."""
        with self._lock:
            self._start()
            got = [self._free.pop() if self._free and self.native else -1 for _ in range(n)]
            self.ctrl[SLOTS_USED] = max([k + 1 for k in got] + [int(self.ctrl[SLOTS_USED])])
        return np.array(got, np.int64)

    def release_slots(self, slots) -> None:
        with self._lock:
            self._free.extend(int(k) for k in slots if k >= 0)

    def _start(self) -> None:
        """Start the workers (again in a forked child, which inherits no threads)."""
        if self._pid == os.getpid() or not self.native:
            return
        if self._pid is not None:   # a forked child: fresh flags, the parent's workers are not here
            self.ctrl[STOP] = 0
            self.ctrl[ACTIVE] = 0
            self.ctrl[IDLE] = self.cores
        self._pid = os.getpid()
        self._workers = []
        for k in range(1, self.cores):
            t = threading.Thread(target=core_loop, args=(self.ctrl, k), daemon=True, name=f"ge-{self.name}-core{k}")
            t.start()
            self._workers.append(t)

    @contextmanager
    def tracing(self, tracer, names: dict, capacity: int = 1 << 16, tasks: bool = False):
        """Record every block run meanwhile; at the end, a slice per block on `tracer`: on track "AI core k"
        for worker k, on the launching stream's track (`names`[(ip)] = (track, node name)) for its own
        blocks. `names` maps a task's int-row address to (stream track, node name). `tasks`: also a kernel
        slice per task on its stream's track, from its first block's start to its last block's end (when
        cores pull the streams, runtime_v1/dispatch.py, no thread stands for a stream)."""
        buf = np.zeros((capacity, RECORD_WORDS), np.int64)
        with self._lock:
            if self.ctrl[TRACE]:
                raise GEError("the AI cores are already being traced")
            self.ctrl[TRACE_N], self.ctrl[TRACE_CAP] = 0, capacity
            c0, t0 = _now()
            self.ctrl[TRACE] = buf.ctypes.data
        try:
            yield
        finally:
            self.ctrl[TRACE] = 0
            c1, t1 = _now()
            n = min(int(self.ctrl[TRACE_N]), capacity)
            rate = (t1 - t0) / max(c1 - c0, 1)
            spans: dict = {}   # per task (with `tasks`): its first block's start, its last block's end
            for ip, b, core, s, e in buf[:n].tolist():
                if tasks:
                    lo, hi = spans.get(ip, (s, e))
                    spans[ip] = min(lo, s), max(hi, e)
                track, name = names.get(ip, (None, f"task@{ip:x}"))
                if core >= 0:
                    track, label = CORE_TRACK0 + core, f"AI core {core}"
                else:
                    label = f"stream {track}" if track is not None else "launcher"
                tracer.add_slice(track if track is not None else CORE_TRACK0 - 1, label, "block", f"{name}[{b}]",
                                 t0 - tracer.t0 + (s - c0) * rate, t0 - tracer.t0 + (e - c0) * rate)
            for ip, (s, e) in spans.items():
                track, name = names.get(ip, (CORE_TRACK0 - 1, f"task@{ip:x}"))
                tracer.add_slice(track, f"stream {track}", "kernel", name, t0 - tracer.t0 + (s - c0) * rate,
                                 t0 - tracer.t0 + (e - c0) * rate)

    def close(self) -> None:
        """Stop the workers (no launch may be running)."""
        native.stop(self.ctrl)
        for t in self._workers:
            t.join(timeout=10)
        self._workers, self._pid = [], None
        self.ctrl[STOP] = 0

    def __repr__(self) -> str:
        return f"AICores({self.name}: {self.cores} cores, {len(self._workers)} worker threads)"


_teams: dict[int, AICores] = {}
_teams_lock = threading.Lock()


def team(cores: int | None = None) -> AICores:
    """The default device's AI cores (created with `cores`, default the CPUs this process may use)."""
    with _teams_lock:
        t = _teams.get(0)
        if t is None:
            t = _teams[0] = AICores(cores or CPUS)
        return t
