"""Multi-stream execution for runtime_v2: one host thread per stream group, events between them.

This runner serves static plans, traced runs (`run_traced`) and instances without AI-core launch slots; a
dynamic plan's untraced runs go to native stream threads fed by the caller instead (queues.py, launcher.py:
Python threads there spent more on GIL hand-offs than the streams gained).

A plan with several streams (PlanNode.stream) and its sync events (Plan.events) runs as follows:
  1. Threads: ge.npu.programs.stream_threads (the thread budget, at most one per stream); stream s runs on
     thread s mod that number. With one thread the plan runs in plan order, as one stream.
  2. Programs (ge.npu.programs.thread_programs, as runtime_v1's tables): each thread runs the steps of its
     streams in plan order, waiting before a step for the events recorded on other threads and recording
     after it those other threads wait for.
  3. Events count generations, as ge.npu.Event does: run r records generation r + 1 and waits for it, so
     the tables are built once and replayed per run, never reset. A multiplexed id (several events, one
     use after the other: ge.plan.event_uses) records (r + 1) * stride + k at its k-th use.
  4. Failure: the failing thread notes (step, error) and aborts the run; every waiting thread wakes and
     stops, the caller gets the error of the earliest failing step, and the next run starts clean.
The calling thread runs the first group itself; the others are persistent workers of the instance (started
at its first run, stopped when the instance is released or its executor is collected). With a `team` (the
AI cores' control array) every thread holds a core token while it runs its program, except while it waits
for an event (ge.npu.aicore: no more threads compute than there are cores).
With a `memory` (mif.MultiStreamAllocator, a dynamic plan's caching allocator; stream_memory.py) every
event carries the recycle state of its thread: a record takes `memory.record(thread)` after the step, a
wait hands it to `memory.wait(thread, token)` before the step, so a block freed on one thread serves
another only after that one waited on an event recorded after the free (GE's MIF).
With a `tracer` (ge.npu.Tracer), every step is a slice on its stream's track and every event record and
wait a slice joined by a flow arrow (event id, generation): `ge profile` writes it as a Chrome trace.
"""
from __future__ import annotations

import threading
import time

from ge.npu.aicore import hold, unhold


class StreamRunner:
    """Runs `body(step)` over the programs on threads, with generation-counted events (steps 3-4)."""

    def __init__(self, programs, num_events: int, team=None, name: str = "ge-stream", uses=(1, {}),
                 memory=None):
        self.team, self.memory = team, memory
        self.tokens: dict = {}   # (event id, use) -> the memory token of its last record
        stride, use = uses   # per (kind, step, id) its use k: programs carry (id, k) pairs
        self.stride = stride
        self.programs = [tuple((step, tuple((e, use.get(("wait", step, e), 0)) for e in w),
                                tuple((e, use.get(("record", step, e), 0)) for e in r)) for step, w, r in p)
                         for p in programs]
        self.gen = [0] * num_events
        self.conds = [threading.Condition() for _ in range(num_events)]
        self.run_id = 0
        self.body = None
        self.abort = False
        self.errors: list = []
        self._lock = threading.Lock()
        self._go = [threading.Semaphore(0) for _ in programs]
        self._done = threading.Semaphore(0)
        self._stopping = False
        self._threads: list[threading.Thread] = []
        self._name = name
        self.tracer = self.labels = None

    def _start(self) -> None:
        for g in range(1, len(self.programs)):
            t = threading.Thread(target=self._worker, args=(g,), name=f"{self._name}-{g}", daemon=True)
            t.start()
            self._threads.append(t)

    def run(self, body, tracer=None, labels=None) -> tuple | None:
        """Run every program once; returns (step, exception) of the earliest failing step, or None.
        `tracer` with `labels` (per step: (stream, node name)) records slices and event flows."""
        self.tracer, self.labels = tracer, labels
        if not self._threads and len(self.programs) > 1:
            self._start()
        self.run_id += 1
        self.body, self.abort, self.errors = body, False, []
        for g in range(1, len(self.programs)):
            self._go[g].release()
        try:
            self._run_group(0)
        finally:
            for _ in range(1, len(self.programs)):
                self._done.acquire()
            self.body = None
        return min(self.errors, key=lambda e: e[0]) if self.errors else None

    def _worker(self, g: int) -> None:
        while True:
            self._go[g].acquire()
            if self._stopping:
                return
            try:
                self._run_group(g)
            finally:
                self._done.release()

    def _run_group(self, g: int) -> None:
        run, body, gen, conds, team = self.run_id, self.body, self.gen, self.conds, self.team
        memory, tokens = self.memory, self.tokens
        base = run * self.stride
        step = -1
        if self.tracer is not None:
            body = self._traced(body, run)
        if team is not None:
            hold(team)
        try:
            for step, waits, records in self.programs[g]:
                for e, k in waits:
                    target = base + k
                    if gen[e] < target:
                        if team is not None:
                            unhold(team)
                        with conds[e]:
                            while gen[e] < target and not self.abort:
                                conds[e].wait()
                        if team is not None:
                            hold(team)
                if self.abort:
                    return
                if memory is not None:
                    for e, k in waits:
                        memory.wait(g, tokens[e, k])
                body(step)
                for e, k in records:
                    if memory is not None:
                        tokens[e, k] = memory.record(g)
                    with conds[e]:
                        gen[e] = base + k
                        conds[e].notify_all()
        except BaseException as exc:  # noqa: BLE001 - reported to the caller of run()
            with self._lock:
                self.errors.append((step, exc))
            self._abort()
        finally:
            if team is not None:
                unhold(team)

    def _traced(self, body, target):
        tr, labels, now = self.tracer, self.labels, time.perf_counter
        waits, records = {}, {}
        for prog in self.programs:
            for step, w, r in prog:
                waits[step], records[step] = [e for e, _ in w], [e for e, _ in r]

        def slice_(step, kind, name, t0, flow=None):
            s = labels[step][0]
            tr.add_slice(s, f"stream {s}", kind, name, t0 - tr.t0, now() - tr.t0, flow)

        def traced(step):
            for e in waits[step]:   # already waited for: a zero-length mark that ends the flow arrow
                slice_(step, "wait", f"wait e{e}", now(), (e, target))
            t0 = now()
            body(step)
            slice_(step, "kernel", labels[step][1], t0)
            for e in records[step]:
                slice_(step, "record", f"record e{e}", now(), (e, target))
        return traced

    def _abort(self) -> None:
        self.abort = True
        for c in self.conds:
            with c:
                c.notify_all()

    def close(self) -> None:
        """Stop the worker threads (between runs)."""
        self._stopping = True
        for g in range(1, len(self.programs)):
            self._go[g].release()
        for t in self._threads:
            t.join(timeout=10)
        self._threads = []
