"""What ge shows while it works, and where the time went.

`Progress` listens to ge.npu.progress (the compiler's phases, runtime_v1's thunk compiles, the kernel
warm-up) and to Numba's compile events (whatever triggers a compile: a pass folding constants, a runtime
loading, a first call). It keeps each phase's time, counts and cache hits (`timings`) and each jitted
function's compile seconds and specializations (`compiles`) for the summary, and tells the user:
  on a terminal   one status line on stderr redrawn by a ticker thread (phase, bar, k of n, clock, the
                  kernel Numba compiles now), fitted to the width by shortening the bar and the phase
                  chain first, never the kernel's name;
  piped           the same facts as plain lines, one every `every` seconds while work is open (a CI log, a
                  `| tee`, a notebook: a Numba compile of minutes is otherwise minutes of silence);
  logging         (log=True: the Python API) records on the logger "ge": each phase and counted item as it
                  ends (INFO), each kernel Numba starts and ends compiling (INFO; its callees: DEBUG).
Step 1 (listen): __enter__ installs both listeners and the ticker; __exit__ removes them.
Step 2 (record): begin/advance/end (ge.npu.progress) and the Numba events update the open stack.
Step 3 (tell): the ticker draws or prints; logging records go out as events end.
`reporting(options)` is the Python API's: Options(progress=True) or GE_PROGRESS=1 draws, logging always.
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from dataclasses import dataclass

from .npu import progress as npu_progress

log = logging.getLogger("ge")
EVERY = 2.0   # seconds between plain lines while work is open (the issue: at least every 2 s)


def _every() -> float:
    """GE_PROGRESS_EVERY=seconds between plain lines; 0: a line at every event (phase begun, item done)."""
    try:
        return max(float(os.environ.get("GE_PROGRESS_EVERY", EVERY)), 0.0)
    except ValueError:
        return EVERY


@dataclass
class Timing:
    label: str
    seconds: float = 0.0     # wall time, nested phases included
    own: float = 0.0         # wall time less the phases nested in it
    total: int = 0           # counted items (0: a phase)
    done: int = 0
    cached: int = 0          # items loaded from a disk cache
    compiled: int = 0        # items compiled now


@dataclass
class Compile:
    """One jitted function's Numba compiles in this process (disk-cache loads fire no event)."""
    name: str                # module.function, e.g. conv.conv
    seconds: float = 0.0     # wall time of its compiles, callees compiled inside them included
    own: float = 0.0         # less the callees' compiles
    count: int = 0           # specializations compiled (one per argument types)
    outer: int = 0           # compiles of it that nothing else was compiling around (a kernel, not a callee)


class _Open:
    __slots__ = ("timing", "t0", "children", "t_item")

    def __init__(self, timing: Timing):
        self.timing, self.t0, self.children = timing, time.perf_counter(), 0.0
        self.t_item = self.t0


def how(t: Timing) -> str:
    """'3 compiled, 2 from cache' (what the disk cache gave); 'in memory' when neither."""
    return ", ".join(x for x in (f"{t.compiled} compiled" if t.compiled else "",
                                 f"{t.cached} from cache" if t.cached else "") if x) or "in memory"


class Progress:
    """A ge.npu.progress listener: `with Progress() as p:` ... `p.timings`, `p.compiles`."""

    def __init__(self, stream=None, interval: float = 0.2, *, draw: bool = True, log: bool = False,
                 every: float | None = None):
        self.stream = stream or sys.stderr
        tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.live = draw and tty                # the redrawn status line
        self.plain = draw and not tty           # plain lines every `every` s
        self.log = log
        self.interval, self.every = interval, _every() if every is None else every
        self.timings: list[Timing] = []
        self.compiles: dict[str, Compile] = {}
        self._stack: list[_Open] = []
        self._numba: list[list] = []            # [name, t0, callee seconds] of the compiles open (nested)
        self._what = ""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._width = 0
        self._printed = time.perf_counter()
        self._ctx = self._ticker = self._numba_ctx = None

    # -- Step 1: listen, tick, stop --------------------------------------------------------------------
    def __enter__(self) -> "Progress":
        self._ctx = npu_progress.listening(self)
        self._ctx.__enter__()
        self._numba_ctx = _numba_listener(self)
        if self._numba_ctx is not None:
            self._numba_ctx.__enter__()
        if self.live or self.plain:
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
        """A phase the caller itself times (load, first run...)."""
        return npu_progress.phase(label)

    # -- Step 2: the listener --------------------------------------------------------------------------
    def begin(self, label: str, total: int) -> None:
        with self._lock:
            self._stack.append(_Open(Timing(label, total=total)))
            self._what = ""
        if self.log:
            log.debug("%s%s", self._chain(), f" ({total} items)" if total else "")
        self._event()

    def advance(self, what: str = "", cached: bool | None = None) -> None:
        with self._lock:
            if not self._stack:
                return
            o = self._stack[-1]
            t = o.timing
            t.done += 1
            t.cached += cached is True
            t.compiled += cached is False
            self._what = what
            now = time.perf_counter()
            took, o.t_item = now - o.t_item, now
        if self.log:
            state = "in memory" if cached is None else "from cache" if cached else "compiled"
            log.info("%s %d/%d: %s %s in %.2f s", t.label, t.done, t.total, what, state, took)
        self._event()

    def note(self, what: str) -> None:
        """The work going on now, shown in the status without counting an item (compile workers' kernels)."""
        with self._lock:
            self._what = what

    def end(self, label: str) -> None:
        with self._lock:
            if not self._stack:
                return
            chain = " > ".join(o.timing.label for o in self._stack)
            o = self._stack.pop()
            t = o.timing
            t.seconds = time.perf_counter() - o.t0
            t.own = t.seconds - o.children
            if self._stack:
                self._stack[-1].children += t.seconds
            self.timings.append(t)
        if self.log:
            log.info("%s: %.2f s%s", chain, t.seconds, f" ({t.done} of {t.total}: {how(t)})" if t.total else "")
        if self.plain and (t.total and t.seconds >= self.every or not self.every):   # its outcome
            self._print(f"ge: {chain}{f' {t.done}/{t.total}' if t.total else ''} in {t.seconds:.2f} s"
                        f"{f' ({how(t)})' if t.total else ''}")
        self._draw()

    def numba_compiling(self, name: str | None) -> None:
        """A Numba compile of `name` starts (None: the innermost open one ends)."""
        now = time.perf_counter()
        with self._lock:
            if name is not None:
                self._numba.append([name, now, 0.0])
                outer = len(self._numba) == 1
            else:
                if not self._numba:
                    return
                name, t0, inner = self._numba.pop()
                c = self.compiles.setdefault(name, Compile(name))
                took = now - t0
                c.seconds += took
                c.own += took - inner
                c.count += 1
                outer = not self._numba
                c.outer += outer
                if self._numba:
                    self._numba[-1][2] += took
        if self.log:
            if name is not None and outer:
                log.info("numba compiling %s", name)
            elif name is not None:
                log.debug("numba compiling %s (a callee)", name)
            else:
                (log.info if outer else log.debug)("numba compiled %s in %.2f s", c.name, took)

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

    def numba_seconds(self) -> tuple[int, float]:
        """(kernels compiled, seconds): the Numba compiles nothing else was compiling around."""
        outer = [c for c in self.compiles.values() if c.outer]
        return sum(c.outer for c in outer), sum(c.own for c in self.compiles.values())

    # -- Step 3: telling -------------------------------------------------------------------------------
    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            if self.live:
                self._draw()
            elif time.perf_counter() - self._printed >= self.every:
                line = self._line(10 ** 6)
                if line:
                    self._print(line)
                else:
                    self._printed = time.perf_counter()   # nothing open: the next line after `every` of work

    def _chain(self) -> str:
        return " > ".join(o.timing.label for o in self._stack)

    def _line(self, width: int) -> str:
        """The status: phase chain, bar and k/n, clock, the kernel compiling now; fitted to `width`."""
        with self._lock:
            if not self._stack:
                return ""
            labels = [o.timing.label for o in self._stack]
            t = self._stack[-1].timing
            clock = f"{time.perf_counter() - self._stack[0].t0:.1f} s"
            numba = " > ".join(n[0] for n in (self._numba[:1] + self._numba[-1:] if len(self._numba) > 1
                                              else self._numba))
            what = self._what
        count = f"{t.done}/{t.total}" if t.total else ""
        now = f"numba compiling {numba}" if numba else ""
        # widest first; then without the bar, the chain cut to its last phase, the item (a node name) dropped
        for bar, chain, item in ((self.live, labels, what), (False, labels, what), (False, labels[-1:], what),
                                 (False, labels[-1:], ""), (False, [], "")):
            filled = 20 * min(t.done, t.total) // t.total if t.total else 0
            parts = [" > ".join(chain), f"[{'#' * filled}{'.' * (20 - filled)}]" if bar and t.total else "",
                     count, clock, item, now]
            line = "ge: " + "  ".join(x for x in parts if x)
            if len(line) < width:
                return line
        return line[:width - 1]

    def _event(self) -> None:
        if self.plain and not self.every:
            line = self._line(10 ** 6)
            if line:
                self._print(line)
        self._draw()

    def _print(self, line: str) -> None:
        try:
            self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            self.plain = False
        self._printed = time.perf_counter()

    def _draw(self) -> None:
        if not self.live:
            return
        line = self._line(_columns(self.stream))
        if not line:
            return self._clear()
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
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return 100


def kernel_name(dispatcher) -> str:
    """module.function of a Numba dispatcher: 'conv.conv', 'conv_depthwise.depthwise' (ge.kernels dropped)."""
    py = getattr(dispatcher, "py_func", None)
    if py is None:
        return "a jitted function"
    module = py.__module__.removeprefix("ge.kernels.").removeprefix("ge.")
    return f"{module}.{py.__qualname__}"


def _numba_listener(progress: Progress):
    """Numba's compile events (a cache miss of any jitted function) name the kernel compiling now."""
    try:
        from numba.core import event
    except ImportError:  # an older or newer Numba without the event API: the bar still counts
        return None

    class _Compiles(event.Listener):
        def on_start(self, ev):
            d = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
            progress.numba_compiling(kernel_name(d))

        def on_end(self, ev):
            progress.numba_compiling(None)

    return event.install_listener("numba:compile", _Compiles())


def wanted(options=None) -> bool:
    """The API's bar: Options(progress=True) or the environment's GE_PROGRESS=1."""
    return bool(getattr(options, "progress", False)) or os.environ.get("GE_PROGRESS", "0") not in ("", "0")


def reporting(options=None):
    """The Python API's progress around a step that may compile (Session(...), its first run): logging
    records on the logger "ge" always, the bar (or plain lines) on stderr when `wanted`. Inside a caller's
    own Progress (the CLI) nothing more is added."""
    if npu_progress.listener() is not None:
        return contextlib.nullcontext()
    return Progress(draw=wanted(options), log=True)
