"""Events: cross-stream (and stream-to-host) synchronization, reusable across runs.

An Event counts generations. `stream.record(event)` enqueues a record task and returns its generation g
(1, 2, ...); when the task runs, the event reaches generation g. `stream.wait(event)` enqueues a wait for
the latest generation enqueued so far (CUDA's rule: record before wait in host order), or for an explicit
generation: a runtime that replays prebuilt per-stream task lists waits for generation `run + 1` in its run
`run`, whatever order the streams' tasks were enqueued in. Waiting for generation 0 (never recorded)
returns at once.

`query()` tells whether the latest enqueued record has run; `synchronize()` blocks the host until it has.
"""
from __future__ import annotations

import itertools
import threading

from ..errors import GEError

_ids = itertools.count()


class Event:
    def __init__(self, name: str | None = None):
        self.id = next(_ids)
        self.name = name or f"event{self.id}"
        self._cond = threading.Condition()
        self._issued = 0    # generations handed out by record()
        self._reached = 0   # generations whose record task has run
        self.record_stream: int | None = None

    @property
    def generation(self) -> int:
        """The generation reached so far (records that have run)."""
        return self._reached

    @property
    def issued(self) -> int:
        return self._issued

    def query(self) -> bool:
        """True when every record enqueued so far has run."""
        with self._cond:
            return self._reached >= self._issued

    def synchronize(self, timeout: float | None = None, generation: int | None = None) -> None:
        """Block the host until the latest enqueued record (or `generation`) has run."""
        target = self._issued if generation is None else generation
        if not self.wait_for(target, timeout):
            raise GEError(f"timeout after {timeout} s waiting for {self.name} generation {target} "
                          f"(reached {self._reached})")

    def record(self, stream) -> int:
        """Record on `stream` (same as stream.record(event)); returns the generation."""
        return stream.record(self)

    def wait(self, stream, generation: int | None = None) -> None:
        """Make `stream` wait for this event (same as stream.wait(event))."""
        stream.wait(self, generation)

    # -- used by streams ---------------------------------------------------------------------------
    def _issue(self, stream_id: int | None) -> int:
        with self._cond:
            self._issued += 1
            self.record_stream = stream_id
            return self._issued

    def _reach(self, generation: int) -> None:
        with self._cond:
            self._reached = max(self._reached, generation)
            self._cond.notify_all()

    def wait_for(self, generation: int, timeout: float | None = None) -> bool:
        """Block until `generation` is reached; False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self._reached >= generation, timeout)

    def reset(self) -> None:
        """Forget all generations (only when no stream holds a pending record or wait on it)."""
        with self._cond:
            self._issued = self._reached = 0

    def __repr__(self) -> str:
        return f"Event({self.name}: issued {self._issued}, reached {self._reached})"
