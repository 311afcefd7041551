"""Progress of long steps, told to whoever listens: the compiler's phases, kernel compiles at load.

The compiler and the runtimes report here (runtimes may not import ge.progress_bar, so the hook lives on the
floor); the CLI listens (ge/progress_bar.py draws the bar and sums the time per phase). Nobody listens by
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
    # optional: note(what) names the work going on now without counting it (other processes' compiles)


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


def _ignore_note(what: str) -> None:
    pass


def noter():
    """The listener's note(what), callable from any thread (None listening, or no note: a no-op)."""
    return getattr(_listener.get(), "note", None) or _ignore_note


def phase(label: str):
    """A named stretch of work with nothing to count (the compiler's import, passes, planning...)."""
    return step(label, 0)
