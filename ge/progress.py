"""What the CLI shows while it works, and where the time went.

`Progress` listens to ge.npu.progress (the compiler's phases, runtime_v1's thunk compiles, the kernel
warm-up) and to Numba's compile events (whatever triggers a compile: a pass folding constants, a runtime
loading, a first call). On a terminal it redraws one status line on stderr (the phase, a bar for counted
steps, elapsed time, the kernel Numba compiles right now) from a ticker thread, so a long compile still
shows its clock; elsewhere it draws nothing. Either way it keeps each phase's time, counts and cache hits
for the summary (`timings`).
"""
from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass

from .npu import progress as npu_progress


@dataclass
class Timing:
    label: str
    seconds: float = 0.0     # wall time, nested phases included
    own: float = 0.0         # wall time less the phases nested in it
    total: int = 0           # counted items (0: a phase)
    done: int = 0
    cached: int = 0          # items loaded from a disk cache
    compiled: int = 0        # items compiled now


class _Open:
    __slots__ = ("timing", "t0", "children")

    def __init__(self, timing: Timing):
        self.timing, self.t0, self.children = timing, time.perf_counter(), 0.0


class Progress:
    """A ge.npu.progress listener: `with Progress() as p:` ... `p.timings`."""

    def __init__(self, stream=None, interval: float = 0.2):
        self.stream = stream or sys.stderr
        self.live = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.interval = interval
        self.timings: list[Timing] = []
        self._stack: list[_Open] = []
        self._numba: list[str] = []          # kernels Numba is compiling now (nested)
        self._what = ""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._width = 0
        self._t0 = time.perf_counter()
        self._ctx = self._ticker = self._numba_ctx = None

    # -- the context: listen, tick, stop ----------------------------------------------------------------
    def __enter__(self) -> "Progress":
        self._ctx = npu_progress.listening(self)
        self._ctx.__enter__()
        self._numba_ctx = _numba_listener(self)
        if self._numba_ctx is not None:
            self._numba_ctx.__enter__()
        if self.live:
            self._ticker = threading.Thread(target=self._tick, name="ge-progress", daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if self._numba_ctx is not None:
            self._numba_ctx.__exit__(*exc)
        self._ctx.__exit__(*exc)
        self._clear()

    def phase(self, label: str):
        """A phase the CLI itself times (load, first run...)."""
        return npu_progress.phase(label)

    # -- the listener ----------------------------------------------------------------------------------
    def begin(self, label: str, total: int) -> None:
        with self._lock:
            self._stack.append(_Open(Timing(label, total=total)))
            self._what = ""
        self._draw()

    def advance(self, what: str = "", cached: bool | None = None) -> None:
        with self._lock:
            if not self._stack:
                return
            t = self._stack[-1].timing
            t.done += 1
            t.cached += cached is True
            t.compiled += cached is False
            self._what = what
        self._draw()

    def end(self, label: str) -> None:
        with self._lock:
            if not self._stack:
                return
            o = self._stack.pop()
            t = o.timing
            t.seconds = time.perf_counter() - o.t0
            t.own = t.seconds - o.children
            if self._stack:
                self._stack[-1].children += t.seconds
            self.timings.append(t)
        self._draw()

    def numba_compiling(self, name: str | None) -> None:
        with self._lock:
            if name is None:
                if self._numba:
                    self._numba.pop()
            else:
                self._numba.append(name)

    # -- the summary -----------------------------------------------------------------------------------
    def total(self, label: str) -> Timing:
        """Every finished phase or step of this label, summed."""
        out = Timing(label)
        for t in self.timings:
            if t.label == label:
                out.seconds += t.seconds
                out.own += t.own
                out.total += t.total
                out.done += t.done
                out.cached += t.cached
                out.compiled += t.compiled
        return out

    # -- drawing ---------------------------------------------------------------------------------------
    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            self._draw()

    def _line(self) -> str:
        with self._lock:
            if not self._stack:
                return ""
            labels = " > ".join(o.timing.label for o in self._stack)
            top = self._stack[-1]
            t = top.timing
            line = f"ge: {labels}"
            if t.total:
                filled = 20 * min(t.done, t.total) // t.total
                line += f" [{'#' * filled}{'.' * (20 - filled)}] {t.done}/{t.total}"
            line += f"  {time.perf_counter() - self._stack[0].t0:5.1f} s"
            now = self._numba[-1] if self._numba else self._what
            if now:
                line += f"  {'numba compiling ' if self._numba else ''}{now}"
        return line

    def _draw(self) -> None:
        if not self.live:
            return
        line = self._line()
        if not line:
            return self._clear()
        line = line[:_columns(self.stream) - 1]
        pad = max(self._width - len(line), 0)
        self._width = len(line)
        try:
            self.stream.write("\r" + line + " " * pad)
            self.stream.flush()
        except (OSError, ValueError):
            self.live = False

    def _clear(self) -> None:
        if self.live and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0


def _columns(stream) -> int:
    import os
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return 100


def _numba_listener(progress: Progress):
    """Numba's compile events (a cache miss of any jitted function) name the kernel compiling now."""
    try:
        from numba.core import event
    except ImportError:  # an older or newer Numba without the event API: the bar still counts
        return None

    class _Compiles(event.Listener):
        def on_start(self, ev):
            d = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
            progress.numba_compiling(getattr(getattr(d, "py_func", None), "__name__", "a kernel"))

        def on_end(self, ev):
            progress.numba_compiling(None)

    return event.install_listener("numba:compile", _Compiles())
