"""runtime_v1's stream threads (executor.py's Instance holds one `Streams` for a multi-stream plan) and the
fallback call of a task from Python, with the error that names its node.
"""
from __future__ import annotations

import ctypes
import os
import threading
import time

import numpy as np

from ge.errors import ExecutionError
from ge.npu import native

from .sink import (ABORTED, AWAIT, AWAIT_LEAVE, AWAIT_LINE, DONE_OK, EV0, GOTO, LEAVE, RECORD, SEEN, SIGNAL, SWITCH,
                   SWITCH_OFFSET, SWITCH_SLOT, SWITCH_TO, WAIT, abort, interpret_sync)
from .tables import NativeRun


class Streams:
    """The stream threads of one instance of a multi-stream plan (sink.py: flags, waits, wake-ups).

    A run: 1. bump the generation, clear ABORT, `release` every parked worker with one futex bump;
    2. the calling thread runs table 0 while worker k runs table k (the streams of thread k), each its
    program (native rows with event ops, fallback calls between them); 3. `join`: wait until every worker
    arrived; 4. raise the error of the earliest failing node, if any. A failing stream sets ABORT first, so waits on events it
    would have recorded give up instead of hanging. Workers start at load (and again in a forked child) and
    stop at close.
    """

    def __init__(self, inst):   # an executor.Instance
        self.inst, self.model = inst, inst.model
        self.n_events = self.model.n_events
        self.errors: list = []
        self.keep, self.tracer = None, None
        self._fresh()
        self._start(len(self.model.streams))  # preloaded: the stream threads wait for the first run

    def _fresh(self) -> None:
        """New flags, no workers yet (at creation, and in a forked child, which inherits no threads)."""
        self.ctrl = native.new_ctrl(self.n_events)
        self.generation = 0
        self.workers: list[threading.Thread] = []
        self.pid = os.getpid()

    def run(self, keep: dict, tracer=None) -> None:
        n = len(self.model.streams)
        if self.pid != os.getpid():  # a forked child: its parent's workers are not here to join
            self._fresh()
        if not self.workers and n > 1:
            self._start(n)
        self.generation += 1
        self.ctrl[native.ABORT] = 0
        c0 = EV0 + native.LINE * self.model.lines0
        self.ctrl[c0::native.LINE] = 0       # counted lines (activated streams) count from zero each run,
        self.ctrl[c0 + 2::native.LINE] = 0   # and so do their waiters' counts
        self.errors, self.keep, self.tracer = [], keep, tracer
        native.release(self.ctrl)
        try:
            self._stream(0)
        finally:
            native.join(self.ctrl, self.generation * (n - 1))
            self.keep = self.tracer = None
        if self.errors:
            raise min(self.errors, key=lambda e: e[0])[1]

    def _start(self, n: int) -> None:
        for s in range(1, n):
            t = threading.Thread(target=self._worker, args=(s, self.generation), daemon=True,
                                 name=f"ge-v1-stream{self.model.streams[s].stream}")
            t.start()
            self.workers.append(t)

    def _worker(self, s: int, generation: int) -> None:
        while True:
            generation += 1
            if not native.park(self.ctrl, generation) or self.ctrl[native.STOP]:
                return
            try:
                self._stream(s)
            finally:
                native.arrive(self.ctrl)

    def _stream(self, s: int) -> None:
        try:
            failed = _program(self, s)
        except BaseException as e:  # noqa: BLE001 - not a task's error (those come back as `failed`)
            failed = (float("inf"), e)
        if failed is not None:
            abort(self.ctrl, self.n_events)
            self.errors.append(failed)

    def close(self) -> None:
        """Stop the workers (between runs)."""
        native.stop(self.ctrl)
        for t in self.workers:
            t.join(timeout=10)
        self.workers = []


def _program(sync: Streams, s: int):
    """Run stream s's program once; None, or (node step, ExecutionError) of the task that failed."""
    inst, m, ctrl, tracer = sync.inst, sync.model, sync.ctrl, sync.tracer
    gen = sync.generation * m.event_stride   # a multiplexed event's k-th use waits for gen + k
    st, calls, bases, keep = m.streams[s], inst.fallback[s], inst.rows[s], sync.keep
    for step in st.program:
        if type(step) is NativeRun:
            if tracer is None:
                r = interpret_sync(st.addrs, st.ioffs, st.foffs, st.blocks, m.itab, m.ftab, bases, inst.team,
                                   inst.slots[s], ctrl, gen, step.start, step.stop)
            else:
                r = _traced_rows(sync, st, bases, step.start, step.stop)
            if r == ABORTED:
                return None
            if r >= 0:  # abort the other streams first, then re-run the task from Python for the message
                abort(ctrl, sync.n_events)
                node = st.native[r].node
                try:
                    _call(inst.bind_call(st.native[r]), inst, keep, node)
                    _raise(node, "the kernel raised (native task; it did not raise when re-run)")
                except ExecutionError as e:
                    return node.step, e
        else:
            node = st.fallback[step.index].node
            try:
                t0 = time.perf_counter()
                _call(calls[step.index], inst, keep, node)
                if tracer is not None:
                    _slice(tracer, node.stream, "kernel", node.name, t0)   # fallback tasks are the plan's nodes
            except ExecutionError as e:
                return node.step, e
    return None


def _traced_rows(sync: Streams, st, bases, a: int, b: int) -> int:
    """Rows [a, b) one at a time, each a slice on the stream's track (event ops with their flow arrow)."""
    m, tracer, inst = sync.model, sync.tracer, sync.inst
    k = m.streams.index(st)
    t = a
    while t < b:
        op = int(st.addrs[t])
        if op in (SWITCH, GOTO):   # a label op: its jump taken here (sink._jump)
            t = _jump(op, t, st, m.itab, bases)
            continue
        t0 = time.perf_counter()
        r = interpret_sync(st.addrs, st.ioffs, st.foffs, st.blocks, m.itab, m.ftab, bases, inst.team,
                           inst.slots[k], sync.ctrl, sync.generation * m.event_stride, t, t + 1)
        if r != DONE_OK:
            return r
        task = st.native[t]
        if task is not None:
            _slice(tracer, st.tracks[t], "kernel", task.node.name, t0)
        elif op in (RECORD, WAIT):
            kind = "record" if op == RECORD else "wait"
            e = int(st.ioffs[t])
            _slice(tracer, st.tracks[t], kind, f"{kind} e{e}", t0, (e, sync.generation))
        else:   # a counted line of activated streams; an AWAIT that saw LEAVE jumped past the loop
            line = int(st.ioffs[t]) if op == SIGNAL else int(m.itab[st.ioffs[t] + AWAIT_LINE])
            kind = "record" if op == SIGNAL else "wait"
            _slice(tracer, st.tracks[t], kind, f"{'activate' if op == SIGNAL else 'await'} l{line}", t0)
            word = sync.ctrl[EV0 + native.LINE * line]
            if op == AWAIT and word - LEAVE == sync.ctrl[EV0 + native.LINE * line + SEEN]:
                t = int(m.itab[st.ioffs[t] + AWAIT_LEAVE])
                continue
        t += 1
    return DONE_OK


def _jump(op: int, t: int, st, itab, bases) -> int:
    if op == GOTO:
        return int(st.ioffs[t])
    k = int(st.ioffs[t])
    flag = ctypes.c_uint8.from_address(int(bases[itab[k + SWITCH_SLOT]]) + int(itab[k + SWITCH_OFFSET])).value
    return t + 1 if flag else int(itab[k + SWITCH_TO])


def _slice(tracer, stream: int, kind: str, name: str, t0: float, flow=None) -> None:
    tracer.add_slice(stream, f"stream {stream}", kind, name, t0 - tracer.t0, time.perf_counter() - tracer.t0,
                     flow)


def _call(call, inst, keep, node) -> None:
    fn, args, patches = call
    if patches:
        args = list(args)
        for pos, slot, off, count, dtype in patches:
            src = keep[slot].reshape(-1).view(np.uint8) if slot in keep else inst.seg[slot]
            args[pos] = src[off:off + count * dtype.itemsize].view(dtype)
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001
        _raise(node, f"{type(e).__name__}: {e}", e)


def _raise(node, detail, cause=None):
    raise ExecutionError(f"while running {node.op_type} node '{node.name}' (op {node.op_type}, "
                         f"opset {node.opset}, step {node.step}): {detail}") from cause
