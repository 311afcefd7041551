"""Compile jobs: one kernel specialization (or one runtime_v1 thunk) as data another process can compile.

A job names what to compile by import path and argument types written out as plain JSON, never a pickle: a
worker (ge/npu/compile_workers.py) imports the module, rebuilds the Numba types and compiles into the shared
on-disk cache, from which the process that asked loads it.
  KernelJob   a jitted function and its argument types (ge.warmup.kernel_signatures: runtime_v2's calls)
  ThunkJob    a thunk Signature (runtime_v1's task-table adapters; compiling one compiles its kernel inside)
`missing()` says, without compiling, whether the job would compile: not in memory and not in Numba's index on
disk (the index is read as Numba reads it: its version, its source stamp, the key of the types and CPU).
`cost()` is a rough estimate of the compile's seconds on one core (COSTS, measured), used to run the longest
first and to decide whether workers pay for their start.
"""
from __future__ import annotations

import glob
import importlib
import os
import sys
from dataclasses import dataclass

import numpy as np
from numba.core import caching, config, types
from numba.core.types import BaseTuple
from numba.np.numpy_support import as_dtype, from_dtype

from . import thunks

# seconds of one cold compile of a kernel with its callees, one core (bench/cold_start.py, 2026-12-07, load 4):
# only the order and the sum matter (the longest first; workers only when the sum pays for their start)
COSTS = {"conv.conv": 40.0, "conv_implicit.conv_implicit": 40.0, "gemm.gemm_nn": 25.0, "gemm.gemm": 25.0,
         "matmul.matmul": 25.0, "attention.attention": 20.0, "pool_plane.pool2d": 12.0, "softmax.softmax": 9.0,
         "binary.where": 7.0, "binary.binary_arith": 6.0, "binary.compare": 6.0, "binary.logic": 5.0,
         "gemv.gemv": 6.0, "layer_norm.layer_norm": 6.0, "reduce.reduce": 4.0}
DEFAULT_COST = 3.0


class NotDescribable(Exception):
    """A type or kernel a worker could not rebuild (the process that has it compiles it)."""


# -- Numba types as JSON ---------------------------------------------------------------------------------

def describe(t) -> list:
    """A Numba argument type as a JSON-able list; NotDescribable for anything else."""
    if isinstance(t, types.Array):
        return ["array", as_dtype(t.dtype).str, t.ndim, t.layout, bool(t.mutable is False), bool(t.aligned)]
    if isinstance(t, (types.Boolean, types.Integer, types.Float, types.Complex)):
        return ["scalar", as_dtype(t).str]
    if isinstance(t, BaseTuple):
        return ["tuple", [describe(x) for x in t.types]]
    if isinstance(t, types.NoneType):
        return ["none"]
    raise NotDescribable(f"argument type {t} has no description")


def rebuild(d: list):
    kind = d[0]
    if kind == "array":
        _, dtype, ndim, layout, readonly, aligned = d
        return types.Array(from_dtype(np.dtype(dtype)), ndim, layout, readonly=readonly, aligned=aligned)
    if kind == "scalar":
        return from_dtype(np.dtype(d[1]))
    if kind == "tuple":
        return BaseTuple.from_types([rebuild(x) for x in d[1]])
    if kind == "none":
        return types.none
    raise NotDescribable(f"unknown type description {d!r:.60}")


def _importable(fn) -> tuple[str, str]:
    """(module, name) a worker imports `fn` by, or NotDescribable."""
    try:
        return thunks.kernel_ref(fn)
    except thunks.ThunkError as e:
        raise NotDescribable(str(e)) from e


def _has_disk_cache(fn) -> bool:
    return isinstance(getattr(fn, "_cache", None), caching.Cache)


# -- the jobs --------------------------------------------------------------------------------------------

class _Named:
    """A job's name (its group without the kernels' package) and its cost from the measured table."""

    @property
    def name(self) -> str:
        return self.group.removeprefix("ge.kernels.")

    def cost(self) -> float:
        return COSTS.get(self.name, DEFAULT_COST)


@dataclass(frozen=True)
class KernelJob(_Named):
    fn: object            # a Numba dispatcher
    types: tuple          # its argument types, as fn.compile takes them

    @property
    def group(self) -> str:
        """Jobs of one function go to one process (one index file holds all its specializations)."""
        py = self.fn.py_func
        return f"{py.__module__}.{py.__qualname__}"

    def describe(self) -> dict:
        if not _has_disk_cache(self.fn):
            raise NotDescribable(f"{self.name} has no disk cache (a worker's compile would not reach this process)")
        module, name = _importable(self.fn)
        desc = [describe(t) for t in self.types]
        if tuple(rebuild(d) for d in desc) != tuple(self.types):
            raise NotDescribable(f"the types of {self.name} do not survive their description")
        return {"kind": "kernel", "module": module, "name": name, "types": desc}

    def missing(self) -> bool:
        if tuple(self.types) in self.fn.overloads:
            return False
        cache = self.fn._cache
        key = cache._index_key(tuple(self.types), self.fn.targetctx.codegen())
        try:
            return key not in cache._cache_file._load_index()
        except Exception:  # noqa: BLE001 - an unreadable index: the compile will say what it finds
            return True

    def compile(self) -> None:
        self.fn.compile(tuple(self.types))


@dataclass(frozen=True)
class ThunkJob(_Named):
    sig: thunks.Signature

    @property
    def group(self) -> str:
        return f"{self.sig.module}.{self.sig.name}"

    def describe(self) -> dict:
        return {"kind": "thunk", "module": self.sig.module, "name": self.sig.name,
                "kinds": [list(k) for k in self.sig.kinds], "tiled": self.sig.tiled}

    def missing(self) -> bool:
        """Not loaded here and no index of its cfunc on disk (a thunk file is written once, never edited)."""
        if thunks.loaded(self.sig):
            return False
        try:
            path = thunks.generation_dir() / f"thunk_{self.sig.digest}.py"
        except Exception:  # noqa: BLE001 - no usable thunk cache: the load says so and falls back
            return False
        folder = (os.path.join(config.CACHE_DIR, caching._CacheLocator.get_suitable_cache_subpath(str(path)))
                  if config.CACHE_DIR else str(path.parent / "__pycache__"))
        return not glob.glob(os.path.join(glob.escape(folder), f"{path.stem}.thunk-*.nbi"))

    def compile(self) -> None:
        thunks.thunk_address(self.sig)


def from_description(d: dict):
    """The job a description names (in a worker): imports its module."""
    if d["kind"] == "thunk":
        return ThunkJob(thunks.Signature(d["module"], d["name"], tuple(tuple(k) for k in d["kinds"]), d["tiled"]))
    if d["kind"] == "kernel":
        fn = getattr(importlib.import_module(d["module"]), d["name"])
        return KernelJob(fn, tuple(rebuild(t) for t in d["types"]))
    raise NotDescribable(f"unknown job kind {d.get('kind')!r}")


def python_path() -> str:
    """The worker's PYTHONPATH: this process's sys.path (a script's own folder, a checkout added at run time)."""
    return os.pathsep.join(p or os.getcwd() for p in sys.path)
