"""Progress of long steps, told to whoever listens: the compiler's phases, kernel compiles at load.

The compiler and the runtimes report here (runtimes may not import ge.progress, so the hook lives on the
floor); the CLI listens (ge/progress.py draws the bar and sums the time per phase). Nobody listens by
default: a report is then one context-variable read.

    with progress.phase("passes"):                # a named stretch of work, timed by the listener
        ...
    with progress.step("compiling kernels", n) as advance:   # n counted items
        for ...: advance(name, cached)            # cached: loaded from a disk cache (None: unknown)
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import Protocol


class Listener(Protocol):
    def begin(self, label: str, total: int) -> None: ...       # total 0: a phase, nothing counted
    def advance(self, what: str, cached: bool | None) -> None: ...
    def end(self, label: str) -> None: ...


_listener: contextvars.ContextVar = contextvars.ContextVar("ge_progress", default=None)


@contextlib.contextmanager
def listening(listener: Listener):
    """Report this thread's (and its context's) progress to `listener` inside the block."""
    token = _listener.set(listener)
    try:
        yield listener
    finally:
        _listener.reset(token)


def listener():
    """Who listens in this context (None: nobody)."""
    return _listener.get()


def _ignore(what: str = "", cached: bool | None = None) -> None:
    pass


@contextlib.contextmanager
def step(label: str, total: int = 0):
    """A long step of `total` counted items; yields advance(what, cached=None)."""
    lis = _listener.get()
    if lis is None:
        yield _ignore
        return
    lis.begin(label, total)
    try:
        yield lis.advance
    finally:
        lis.end(label)


def phase(label: str):
    """A named stretch of work with nothing to count (the compiler's import, passes, planning...)."""
    return step(label, 0)
