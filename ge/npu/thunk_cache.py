"""Where generated thunks live: a cache of code that gets imported, so it must be ge's own and the user's only.

Step 1 (the folder): $GE_THUNK_CACHE, else $XDG_CACHE_HOME/ge/thunks or ~/.cache/ge/thunks, else
        `ge-thunks-<uid>` under the temp dir. A folder is made 0700; one that exists must be owned by this
        user and not writable by group or others, and not be a symlink, else `ThunkCacheError` names it
        and nothing is imported from it (a temp dir is shared: someone else could have made it first).
Step 2 (the generation): one sub-folder per kernel library (`library_hash`: every module of the ge.kernels
        package and native.py), so an edit to any kernel starts a new generation. Pruning deletes only what ge
        wrote, by manifest, never by name: the cache folder's MANIFEST lists the generations ge made, each
        generation's own MANIFEST the thunk files ge wrote in it; a stale generation (untouched for a day)
        loses those files and Numba's cache entries of them, then the folder if nothing else is left in it.
        A user's file (even one named like a thunk, or in a folder bearing ge's marker) is never touched.
Step 3 (writes): a file is written to a unique temporary name, then renamed over its final name (atomic);
        the process umask is never changed (that would race with other threads).
Step 4 (problems are said): a refused folder or a damaged thunk moves tasks to the slower Python path;
        `report` warns once naming it and keeps it for `problems()` (Session.stats()'s "thunk_cache").
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import inspect
import os
import re
import shutil
import stat
import tempfile
import threading
import time
import warnings
from pathlib import Path

from ..errors import GEError

KERNEL_PACKAGE = "ge.kernels"
MARKER = ".ge-thunk-generation"
STALE_SECONDS = 24 * 3600
MANIFEST = ".ge-manifest"
_GENERATION = re.compile(r"[0-9a-f]{16}")
_THUNK = re.compile(r"thunk_[0-9a-f]{20}\.py")
_problems: dict[str, str] = {}   # what -> message, each warned once (Step 4)


class CacheWarning(UserWarning):
    """A cache ge reads (thunks, Numba's) was refused or damaged: work goes on, slower or recompiled."""


def report(what: str, message: str) -> None:
    """Step 4: warn once per `what` and remember it."""
    if what not in _problems:
        _problems[what] = message
        warnings.warn(message, CacheWarning, stacklevel=3)


def problems() -> list[str]:
    return list(_problems.values())


class ThunkCacheError(GEError):
    """The thunk cache folder cannot be trusted (another owner, or writable by others)."""


def _trusted(d: Path) -> None:
    st = os.lstat(d)
    uid = os.getuid() if hasattr(os, "getuid") else st.st_uid
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode) or st.st_uid != uid \
            or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise ThunkCacheError(f"thunk cache folder '{d}' is not this user's own (owner uid {st.st_uid}, mode "
                              f"{stat.filemode(st.st_mode)}): ge imports code from it, so it refuses it. Remove "
                              "it, or set GE_THUNK_CACHE to a folder of your own")


@functools.lru_cache(maxsize=1)
def cache_dir() -> Path:
    """Step 1."""
    candidates = []
    if os.environ.get("GE_THUNK_CACHE"):
        candidates.append(Path(os.environ["GE_THUNK_CACHE"]))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    candidates.append(Path(base) / "ge" / "thunks")
    candidates.append(Path(tempfile.gettempdir()) / f"ge-thunks-{os.getuid() if hasattr(os, 'getuid') else 0}")
    for d in candidates:
        try:
            d.parent.mkdir(parents=True, exist_ok=True)
            d.mkdir(mode=0o700, exist_ok=True)
        except OSError:
            continue
        _trusted(d)
        if os.access(d, os.W_OK):
            return d
    raise ThunkCacheError("no writable folder for the thunk cache (set GE_THUNK_CACHE)")


@functools.lru_cache(maxsize=1)
def generation_dir() -> Path:
    """Step 2: this library's folder; stale generations of ge's are pruned, best effort (a process still
    running an older library keeps its loaded thunks in memory)."""
    base = cache_dir()
    current = base / library_hash()[:16]
    made = not current.exists()
    current.mkdir(mode=0o700, exist_ok=True)
    _trusted(current)
    if made or current.name not in owned(base):
        record(base, current.name)
    marker = current / MARKER
    if not marker.exists():
        write_atomic(marker, "ge thunks of one kernel library\n")
    os.utime(current)
    prune(base, keep=current.name)
    return current


def owned(folder: Path) -> set[str]:
    """The names ge recorded in `folder`'s manifest (each a file or generation ge wrote there)."""
    try:
        return {ln for ln in (folder / MANIFEST).read_text().splitlines() if ln and "/" not in ln and ln != ".."}
    except (OSError, UnicodeDecodeError):
        return set()


def record(folder: Path, name: str) -> None:
    """Add `name` to `folder`'s manifest (one short append: atomic between processes)."""
    fd = os.open(folder / MANIFEST, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, f"{name}\n".encode())
    finally:
        os.close(fd)


def prune(base: Path, keep: str, stale_seconds: float = STALE_SECONDS) -> list[Path]:
    """Step 2: delete the files ge wrote in its stale generations; returns what was deleted."""
    cutoff, gone = time.time() - stale_seconds, []
    for name in owned(base) - {keep}:
        gen = base / name
        try:
            if not _GENERATION.fullmatch(name) or gen.is_symlink() or not gen.is_dir() \
                    or gen.stat().st_mtime >= cutoff:
                continue
            mine = {f for f in owned(gen) if _THUNK.fullmatch(f)}
            cache = gen / "__pycache__"
            for f in sorted(mine):
                for p in [gen / f] + (sorted(cache.glob(f"{f[:-3]}.*")) if cache.is_dir() else []):
                    if p.is_file() and not p.is_symlink():
                        p.unlink()
                        gone.append(p)
            for p in (gen / MARKER, gen / MANIFEST):
                if p.is_file() and not p.is_symlink():
                    p.unlink()
            for d in (cache, gen):   # only when nothing but ge's was in it
                try:
                    d.rmdir()
                except OSError:
                    pass
        except OSError:
            pass
    return gone


def write_atomic(path: Path, text: str) -> None:
    """Step 3."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


@functools.lru_cache(maxsize=1)
def library_hash() -> str:
    from . import native
    h = hashlib.sha1()
    spec = importlib.util.find_spec(KERNEL_PACKAGE)   # located, not imported: the device sits below the kernels
    folder = Path(spec.origin).parent
    files = sorted(folder.glob("*.py")) + [Path(inspect.getfile(native))]
    for f in files:
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()
