"""Numba's on-disk cache, kept fresh across modules.

Numba stamps a cached function with its own source file only, but a jitted function compiles its jitted
callees from other modules into itself: after an edit of gemm.py, conv.py's cached kernels would still run
the old GEMM, and after an edit of aicore.py, runtime_v1's cached interpreter would still post launches in
the old layout (seen while building the AI cores: blocks silently missing from traces). So the modules of a
*group* share one stamp, a hash of all their sources: an edit anywhere in the group recompiles the group.
Groups: the kernel library (every module of ge/kernels) and the native floor (ge/npu/native.py, aicore.py,
runtime_v1/sink.py and dispatch.py, and runtime_v2/queues.py, whose loops inline them). The cache files stay
where Numba puts them: `__pycache__` beside the module, or under NUMBA_CACHE_DIR when that is set.

Within the kernel library a module's stamp covers only the kernel modules it can reach by importing
(`kernel_closure`: its `from .x import ...` / `from . import x` lines, followed transitively): a jitted
function can call, and so compile into itself, only what its module's globals hold, and a kernel module's
globals come from those imports. An edit of attention.py then recompiles attention's kernels and their
importers, not the GEMM's or the convs' (every kernel, minutes, before). A module every kernel imports
(registry.py, tiling.py) still recompiles them all.

One compile a specialization across processes (`_Locks`): a cache miss of a grouped function takes an exclusive
lock on `<its index>.<hash of the argument types>.lock` beside the cache files, looks again (another process
may have saved it while this one waited), and keeps the lock until its compile is saved (or fails); the save
itself (read the index, add the entry, write it) holds `<its index>.lock`, briefly. Two processes that meet a
cold cache at once (pytest-xdist's workers, compile workers, `ge warmup` beside a `ge run`) then compile each
specialization once, not once each, compile different specializations of one function (a callee two kernels
share, with their own types) side by side, and never overwrite each other's index entries. Locks follow the
call graph (a caller's compile takes its callees' locks inside its own), which has no cycles, and the index
lock is taken with nothing inside it, so waits end; a wait longer than LOCK_WAIT seconds, a lock that cannot
be made (a read-only cache folder) or a process holding it already compiles without it.
"""
from __future__ import annotations

import functools
import hashlib
import logging
import os
import time
from pathlib import Path

from numba.core import caching, event

try:
    import fcntl
except ImportError:  # Windows: no advisory locks here; processes may compile the same function twice
    fcntl = None

log = logging.getLogger("ge")
LOCK_WAIT = 1800.0   # seconds: longer than any one kernel's compile measured on a loaded 2-core machine

from . import cache_heal  # noqa: F401 - damaged cache entries quarantined, not fatal (installs on import)

_ROOT = Path(__file__).resolve().parents[2]
GROUPS = {
    "kernels": lambda: sorted((_ROOT / "ge" / "kernels").glob("*.py")),
    "native": lambda: [_ROOT / "ge" / "npu" / "native.py", _ROOT / "ge" / "npu" / "aicore.py",
                       _ROOT / "runtime_v1" / "sink.py", _ROOT / "runtime_v1" / "dispatch.py",
                       _ROOT / "runtime_v2" / "queues.py"],
}


@functools.lru_cache(maxsize=None)
def _group_of(py_file: str) -> str | None:
    path = Path(py_file).resolve()
    return next((g for g, files in GROUPS.items() if path in files()), None)


@functools.lru_cache(maxsize=None)
def group_stamp(group: str) -> str:
    return _stamp(GROUPS[group]())


def _stamp(files) -> str:
    h = hashlib.sha1()
    for f in files:
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def _kernel_imports(path: Path) -> frozenset[Path]:
    """The ge/kernels modules `path` imports (anywhere in it: inside functions too). Cached: every module's
    closure walks its imports' imports, and parsing each module again for each closure made `import ge` take
    4.7 of its 5.1 s (429 parses of ~70 modules)."""
    import ast
    here, out = path.parent, set()
    for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                names = [node.module] if node.module else [a.name for a in node.names]
            elif node.level == 0 and (node.module or "").startswith("ge.kernels"):
                rest = node.module.removeprefix("ge.kernels").lstrip(".")
                names = [rest] if rest else [a.name for a in node.names]
            else:
                continue
        elif isinstance(node, ast.Import):
            names = [a.name.removeprefix("ge.kernels.") for a in node.names if a.name.startswith("ge.kernels.")]
        else:
            continue
        out.update(here / f"{n.split('.')[0]}.py" for n in names if (here / f"{n.split('.')[0]}.py").exists())
    return frozenset(out)


@functools.lru_cache(maxsize=None)
def kernel_closure(path: Path) -> tuple[Path, ...]:
    """`path` and every ge/kernels module it reaches by imports, sorted."""
    seen, todo = {path}, [path]
    while todo:
        for p in _kernel_imports(todo.pop()):
            if p not in seen:
                seen.add(p)
                todo.append(p)
    return tuple(sorted(seen))


@functools.lru_cache(maxsize=None)
def source_stamp(py_file: str) -> str:
    """The stamp of a grouped module's cache: its import closure's for a kernel module, else its group's."""
    path, group = Path(py_file).resolve(), _group_of(py_file)
    return _stamp(kernel_closure(path)) if group == "kernels" else group_stamp(group)


class _GroupStamp:
    """A kernel group's file: stamped with its import closure's (kernels) or its group's hash instead of its
    own file's; any other file is not this locator's."""

    def get_source_stamp(self):
        return source_stamp(self._py_file)

    @classmethod
    def from_function(cls, py_func, py_file):
        if _group_of(py_file) is None:
            return None
        return super().from_function(py_func, py_file)


class GroupCacheLocator(_GroupStamp, caching.InTreeCacheLocator):
    """In the module's __pycache__ as usual."""


class GroupUserCacheLocator(_GroupStamp, caching.UserProvidedCacheLocator):
    """NUMBA_CACHE_DIR set: the cache under that folder (a test's or a read-only install's)."""


_LOCATORS = (GroupUserCacheLocator, GroupCacheLocator)


class _Locks:
    """Per grouped function, the lock file this process holds while it compiles (see the module doc)."""

    def __init__(self):
        self.held: dict[str, int] = {}   # lock path -> open fd

    def path(self, cache, sig=None) -> str | None:
        """The lock of one specialization (`sig`) of a grouped function, or of its index file (None)."""
        if fcntl is None or not isinstance(getattr(cache, "_impl", None), caching.CompileResultCacheImpl) \
                or not isinstance(cache._impl.locator, _LOCATORS):
            return None
        index = cache._cache_file._index_path
        return index + ".lock" if sig is None else f"{index}.{hashlib.sha1(str(sig).encode()).hexdigest()[:12]}.lock"

    def release_all(self, cache) -> None:
        """Every specialization lock of this function held here (a compile that raised)."""
        index = self.path(cache)
        for path in [p for p in self.held if index and p.startswith(index[:-len(".lock")] + ".")]:
            self.release(path)

    def acquire(self, path: str) -> bool:
        """Wait (up to LOCK_WAIT) for the lock at `path`; False: go on without it."""
        if path in self.held:
            return False
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            return False
        deadline, said = time.monotonic() + LOCK_WAIT, False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self.held[path] = fd
                return True
            except BlockingIOError:
                if not said:   # the wait shows in the logs (the bar shows the kernel and its clock meanwhile)
                    log.info("waiting for another process compiling %s", Path(path).name.split(".py")[0])
                    said = True
                if time.monotonic() > deadline:
                    os.close(fd)
                    return False
                time.sleep(0.05)
            except OSError:
                os.close(fd)
                return False

    def release(self, path: str | None) -> None:
        fd = self.held.pop(path, None) if path else None
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


_locks = _Locks()
_load, _save = caching.Cache.load_overload, caching.Cache.save_overload


def _load_overload(self, sig, target_context):
    data = _load(self, sig, target_context)
    path = _locks.path(self, sig) if data is None and self._enabled else None
    if path is None or not _locks.acquire(path):
        return data
    data = _load(self, sig, target_context)   # saved by the process that held the lock?
    if data is not None:
        _locks.release(path)
    return data


def _save_overload(self, sig, data):
    index = _locks.path(self)
    took = index is not None and _locks.acquire(index)   # the index's read-add-write: one process at a time
    try:
        _save(self, sig, data)
    finally:
        if took:
            _locks.release(index)
        _locks.release(_locks.path(self, sig))


class _FailedCompiles(event.Listener):
    """A compile that raised saves nothing: its lock is let go at the end of its event."""

    def on_start(self, ev):
        pass

    def on_end(self, ev):
        if getattr(ev, "_exc_details", None) is not None and isinstance(ev.data, dict):   # Numba 0.68: no property
            _locks.release_all(getattr(ev.data.get("dispatcher"), "_cache", None))


if GroupCacheLocator not in caching.CacheImpl._locator_classes:
    caching.CacheImpl._locator_classes[:0] = _LOCATORS
    caching.Cache.load_overload, caching.Cache.save_overload = _load_overload, _save_overload
    event.register("numba:compile", _FailedCompiles())
