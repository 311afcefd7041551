"""Numba's on-disk cache, kept fresh across modules.

Numba stamps a cached function with its own source file only, but a jitted function compiles its jitted
callees from other modules into itself: after an edit of gemm.py, conv.py's cached kernels would still run
the old GEMM, and after an edit of aicore.py, runtime_v1's cached interpreter would still post launches in
the old layout (seen while building the AI cores: blocks silently missing from traces). So the modules of a
*group* share one stamp, a hash of all their sources: an edit anywhere in the group recompiles the group.
Groups: the kernel library (every module of ge/kernels) and the native floor (ge/npu/native.py, aicore.py,
runtime_v1/sink.py and dispatch.py, and runtime_v2/queues.py, whose loops inline them). The cache files stay
where Numba puts them.
"""
from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from numba.core import caching

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
    h = hashlib.sha1()
    for f in GROUPS[group]():
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()


class GroupCacheLocator(caching.InTreeCacheLocator):
    """In the module's __pycache__ as usual, stamped with its group's hash instead of its own file's."""

    def get_source_stamp(self):
        return group_stamp(_group_of(self._py_file))

    @classmethod
    def from_function(cls, py_func, py_file):
        if _group_of(py_file) is None:
            return None
        return super().from_function(py_func, py_file)


if GroupCacheLocator not in caching.CacheImpl._locator_classes:
    caching.CacheImpl._locator_classes.insert(0, GroupCacheLocator)
