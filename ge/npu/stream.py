"""Streams: one worker thread per stream running a FIFO of tasks, like an NPU stream (rtStream).

Tasks are kernel launches (a Python callable, typically a nogil Numba kernel over arena views), event
records, event waits and memcpys. The host enqueues and returns at once; `synchronize()` waits until the
queue is drained.

Errors: an exception inside a task is captured with the task's name; later kernels and memcpys on that
stream are skipped (their inputs are suspect) but records and waits still run, so other streams never
deadlock; `synchronize()` re-raises it as an ExecutionError naming the task and clears it, after which
the stream is usable again.

Priorities: streams that share a `Gate` (a budget of concurrently running tasks, e.g. the cores given
to stream threads) take a free slot in priority order; lower value first, as in ACL/CUDA. Without a gate,
priority is informational. `close()` drains nothing more, stops and joins the thread.
"""
from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..errors import ExecutionError, GEError
from .event import Event

KERNEL, RECORD, WAIT, MEMCPY = "kernel", "record", "wait", "memcpy"


@dataclass(slots=True)
class Task:
    kind: str
    name: str
    fn: Callable | None = None
    args: tuple = ()
    event: Event | None = None
    generation: int = 0


class Gate:
    """At most `slots` tasks run at once across the streams sharing it; waiters served by priority."""

    def __init__(self, slots: int):
        if slots < 1:
            raise GEError(f"a gate needs at least one slot, got {slots}")
        self.slots = slots
        self._cond = threading.Condition()
        self._waiting: list = []   # heap of (priority, ticket)
        self._tickets = itertools.count()

    def acquire(self, priority: int) -> None:
        with self._cond:
            me = (priority, next(self._tickets))
            heapq.heappush(self._waiting, me)
            self._cond.wait_for(lambda: self.slots > 0 and self._waiting[0] == me)
            heapq.heappop(self._waiting)
            self.slots -= 1
            self._cond.notify_all()

    def release(self) -> None:
        with self._cond:
            self.slots += 1
            self._cond.notify_all()


class Stream:
    def __init__(self, stream_id: int = 0, priority: int = 0, name: str | None = None,
                 tracer=None, gate: Gate | None = None):
        self.id, self.priority = stream_id, priority
        self.name = name or f"stream{stream_id}"
        self.tracer, self.gate = tracer, gate
        self._queue: deque[Task] = deque()
        self._cond = threading.Condition()
        self._pending = 0          # tasks enqueued and not finished
        self._error: tuple[Task, BaseException] | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name=f"ge-{self.name}", daemon=True)
        self._thread.start()

    # -- enqueue (host side) -------------------------------------------------------------------------
    def launch(self, fn: Callable, *args: Any, name: str = "kernel") -> None:
        self._submit(Task(KERNEL, name, fn, args))

    def memcpy(self, dst: np.ndarray, src: np.ndarray, name: str = "memcpy") -> None:
        self._submit(Task(MEMCPY, name, np.copyto, (dst, src)))

    def record(self, event: Event, name: str | None = None) -> int:
        """Enqueue a record of `event`; returns the generation it will reach."""
        gen = event._issue(self.id)
        self._submit(Task(RECORD, name or f"record {event.name}", event=event, generation=gen))
        return gen

    def wait(self, event: Event, generation: int | None = None, name: str | None = None) -> None:
        """Later tasks wait until `event` reaches `generation` (default: its latest enqueued record)."""
        gen = event.issued if generation is None else generation
        self._submit(Task(WAIT, name or f"wait {event.name}", event=event, generation=gen))

    def _submit(self, task: Task) -> None:
        with self._cond:
            if self._closed:
                raise GEError(f"{self.name} is closed")
            self._queue.append(task)
            self._pending += 1
            self._cond.notify_all()

    # -- host synchronization ------------------------------------------------------------------------
    def query(self) -> bool:
        """True when every enqueued task has finished."""
        with self._cond:
            return self._pending == 0

    def synchronize(self, timeout: float | None = None) -> None:
        """Wait for every enqueued task; re-raise the first task error (then the stream is usable)."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._pending == 0, timeout):
                raise GEError(f"timeout after {timeout} s synchronizing {self.name} "
                              f"({self._pending} tasks pending)")
            error, self._error = self._error, None
        if error is not None:
            task, exc = error
            raise ExecutionError(f"while running {task.kind} task '{task.name}' on {self.name}: "
                                 f"{type(exc).__name__}: {exc}") from exc

    def close(self, timeout: float | None = 10.0) -> None:
        """Stop after the tasks already enqueued, and join the worker thread."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise GEError(f"{self.name} did not stop within {timeout} s (a wait that never completes?)")

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- the worker ------------------------------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._queue or self._closed)
                if not self._queue:
                    return
                task = self._queue[0]
            self._run(task)
            with self._cond:
                self._queue.popleft()
                self._pending -= 1
                self._cond.notify_all()

    def _run(self, task: Task) -> None:
        start = time.perf_counter()
        if task.kind == WAIT:
            while not task.event.wait_for(task.generation, 0.05):
                if self._closed:
                    return
        elif task.kind == RECORD:
            task.event._reach(task.generation)
        elif self._error is None:
            self._execute(task)
        if self.tracer is not None:
            self.tracer.add(self, task, start, time.perf_counter())

    def _execute(self, task: Task) -> None:
        if self.gate is not None:
            self.gate.acquire(self.priority)
        try:
            task.fn(*task.args)
        except BaseException as exc:  # noqa: BLE001 - handed to the host on synchronize
            self._error = (task, exc)
        finally:
            if self.gate is not None:
                self.gate.release()
