"""Where generated thunks live: a cache of code that gets imported, so it must be ge's own and the user's only.

Step 1 (the folder): $GE_THUNK_CACHE, else $XDG_CACHE_HOME/ge/thunks or ~/.cache/ge/thunks, else
        `ge-thunks-<uid>` under the temp dir. A folder is made 0700; one that exists must be owned by this
        user and not writable by group or others, and not be a symlink, else `ThunkCacheError` names it
        and nothing is imported from it (a temp dir is shared: someone else could have made it first).
Step 2 (the generation): one sub-folder per kernel library (`library_hash`: every module of the ge.kernels
        package and native.py), so an edit to any kernel starts a new generation. Each holds a marker file;
        only folders with that marker (and loose files named as ge names them) are ever deleted, when
        untouched for a day: a user's own files in the cache folder are never touched.
Step 3 (writes): a file is written to a unique temporary name, then renamed over its final name (atomic);
        the process umask is never changed (that would race with other threads).
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
from pathlib import Path

from ..errors import GEError

KERNEL_PACKAGE = "ge.kernels"
MARKER = ".ge-thunk-generation"
STALE_SECONDS = 24 * 3600
_GENERATION = re.compile(r"[0-9a-f]{16}")
_LOOSE = re.compile(r"thunk_[0-9a-f]{20}\.py(\.\d+\.\d+\.tmp)?")


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
    """Step 2: this library's folder; stale generations of ge's are removed, best effort (a process still
    running an older library keeps its loaded thunks in memory)."""
    base = cache_dir()
    current = base / library_hash()[:16]
    current.mkdir(mode=0o700, exist_ok=True)
    _trusted(current)
    marker = current / MARKER
    if not marker.exists():
        write_atomic(marker, "ge thunks of one kernel library\n")
    os.utime(current)
    cutoff = time.time() - STALE_SECONDS
    for entry in base.iterdir():
        try:
            if entry == current or entry.stat().st_mtime >= cutoff:
                continue
            if entry.is_dir() and not entry.is_symlink() and _GENERATION.fullmatch(entry.name) \
                    and (entry / MARKER).is_file():
                shutil.rmtree(entry)
            elif entry.is_file() and _LOOSE.fullmatch(entry.name):
                entry.unlink()
        except OSError:
            pass
    return current


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
