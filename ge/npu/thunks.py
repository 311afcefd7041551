"""Thunks: one C-callable adapter per distinct launch signature, generated as source and cached on disk.

A thunk has the signature `void(int64 *iargs, float64 *fargs, int64 *bases, int64 block_idx, int64
block_dim)` (native.THUNK_SIG): the device's kernel-launch ABI. It decodes its launch's arguments from the
task's slots in the int and float tables and calls the njit kernel with them (a tiled kernel gets the
block arguments last), so runtime_v1's interpreter and the AI-core team (aicore.py) call any kernel
through one function-pointer type, and runtime_v2 reaches the team through the same thunks.

A thunk depends only on the launch's argument *kinds*, never on a graph: the `Signature` is the kernel
(module + name) and one kind per flat argument, in call order (`*varargs` kernels are called with flat
arguments; Numba packs them):
  (BUF, dtype)   a buffer: 3 int slots (base slot, byte offset from that base, element count). Tensors,
                 workspaces and static array arguments (any dtype, 1-D contiguous) are all buffers.
  (INT, type)    an integer or bool scalar: 1 int slot (type: int64, int32, ..., bool).
  (FLOAT, type)  a float scalar: 1 float slot (type: float64 or float32).
A kernel that raises sets the base table's STATUS slot (native.STATUS) instead: exceptions cannot cross C.
`layout(kinds)` is the one place that says which slot holds what; the encoder (`encode`) and the generator
(`source`) both read it.

Cache (thunk_cache.py): the source goes to `<cache>/<library hash>/thunk_<hash>.py`, the hash covering the
signature and the encoding version; the folder is the kernel library's generation. The file is written
once (atomically) and never rewritten, so Numba's on-disk cache (`cache=True`, kept in `__pycache__` beside
it) stays valid across processes.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
import threading
from dataclasses import dataclass

import numpy as np
from numba import typeof

from .thunk_cache import ThunkCacheError, generation_dir, library_hash, owned, record, report, write_atomic

BUF, INT, FLOAT = "buf", "int", "float"
ENCODING_VERSION = 3
_INT_TYPES = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"}
_FLOAT_TYPES = {"float32", "float64"}
_BUF_DTYPES = {"float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
               "uint32", "uint64", "bool"}
_BITS16 = {"float16": "uint16", "bfloat16": "uint16"}  # kernels see 16-bit floats as their bit patterns


def _buf_name(dtype) -> str:
    name = np.dtype(dtype).name
    return _BITS16.get(name, name)


class ThunkError(Exception):
    """This launch cannot go native (it runs on the threaded fallback); the message says why."""


@dataclass(frozen=True, slots=True)
class Signature:
    module: str
    name: str
    kinds: tuple  # ((BUF | INT | FLOAT, type name), ...)
    tiled: bool = False   # the kernel takes (block_idx, block_dim) last

    @property
    def digest(self) -> str:
        h = hashlib.sha1(repr((ENCODING_VERSION, self.module, self.name, self.kinds, self.tiled)).encode())
        h.update(library_hash().encode())
        return h.hexdigest()[:20]


# -- the encoding: one place -------------------------------------------------------------------------

def layout(kinds) -> tuple[tuple[int, int], ...]:
    """Per argument: (first int slot, float slot) in the task's rows; -1 where unused."""
    out, i, f = [], 0, 0
    for kind, _ in kinds:
        if kind == BUF:
            out.append((i, -1))
            i += 3
        elif kind == INT:
            out.append((i, -1))
            i += 1
        else:
            out.append((-1, f))
            f += 1
    return tuple(out)


def widths(kinds) -> tuple[int, int]:
    """Int and float slots one task of this signature takes."""
    n_i = sum(3 if k == BUF else 1 if k == INT else 0 for k, _ in kinds)
    return n_i, sum(1 for k, _ in kinds if k == FLOAT)


def encode(kinds, values, irow: np.ndarray, frow: np.ndarray) -> None:
    """Write one task's values into its int and float rows. A BUF value is (base slot, offset, count)."""
    for (kind, ty), (i, f), v in zip(kinds, layout(kinds), values):
        if kind == BUF:
            irow[i:i + 3] = v
        elif kind == INT:
            irow[i] = int(v)
        else:
            frow[f] = float(v)


def scalar_kind(value) -> tuple[str, str]:
    """The kind of a static scalar argument, or ThunkError."""
    if isinstance(value, (bool, np.bool_, int, np.integer, float, np.floating)):
        ty = str(typeof(value))
        ty = "bool" if ty == "bool" else ty
        if ty in _INT_TYPES:
            return INT, ty
        if ty in _FLOAT_TYPES:
            return FLOAT, ty
    raise ThunkError(f"argument of type {type(value).__name__} ({value!r:.40}) has no table encoding")


def buffer_kind(dtype) -> tuple[str, str]:
    name = _buf_name(dtype)
    if name not in _BUF_DTYPES:
        raise ThunkError(f"buffers of dtype {name} have no table encoding")
    return BUF, name


@dataclass(slots=True)
class TaskArgs:
    """A launch as thunk arguments: one kind and value per flat argument, and its Signature (None: the launch
    has no table encoding or forced off; `reason` says why)."""
    kinds: tuple
    values: list            # BUF: (slot, offset, count); scalars as given
    buffers: list           # per argument: (slot, offset, count, dtype) for buffers, None for scalars
    n_buf: int              # tensors and workspaces: the first n_buf arguments
    sig: Signature | None
    reason: str = ""

    def rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The task's int and float rows."""
        wi, wf = widths(self.kinds)
        irow, frow = np.zeros(wi, np.int64), np.zeros(wf, np.float64)
        encode(self.kinds, self.values, irow, frow)
        return irow, frow


def task_args(launch, buffers, place_array, reason: str = "") -> TaskArgs:
    """`buffers`: (slot, offset, count, dtype) of the tensors and workspaces in call order;
    `place_array(a) -> (slot, offset)` places a static 1-D array argument of the launch."""
    kinds, values, bufs = [], [], []

    def buffer(slot, off, count, dtype):
        kinds.append((BUF, _buf_name(dtype)))
        values.append((slot, off, count))
        bufs.append((slot, off, count, np.dtype(dtype)))

    for b in buffers:
        buffer(*b)
    n_buf = len(bufs)
    for a in launch.args:
        if isinstance(a, np.ndarray) and a.ndim == 1:
            buffer(*place_array(a), a.size, a.dtype)
            continue
        try:
            kinds.append(scalar_kind(a))
        except ThunkError as e:
            kinds.append(("?", type(a).__name__))
            reason = reason or str(e)
        values.append(a)
        bufs.append(None)
    sig = None
    if not reason:
        try:
            for kind, ty in kinds:
                if kind == BUF:
                    buffer_kind(ty)
            sig = Signature(*kernel_ref(launch.fn), tuple(kinds), launch.tiled)
        except ThunkError as e:
            reason = str(e)
    return TaskArgs(tuple(kinds), values, bufs, n_buf, sig, reason)


# -- the generator ---------------------------------------------------------------------------------

def kernel_ref(fn) -> tuple[str, str]:
    """(module, name) under which `fn` can be imported, or ThunkError."""
    py = getattr(fn, "py_func", None)
    if py is None or not hasattr(fn, "compile"):
        raise ThunkError(f"{getattr(fn, '__name__', fn)!r} is not a Numba @njit function")
    module, name = py.__module__, py.__qualname__
    if "<" in name or "." in name:
        raise ThunkError(f"kernel {name} is not a module-level function")
    if getattr(importlib.import_module(module), name, None) is not fn:
        raise ThunkError(f"kernel {module}.{name} is not importable by name")
    return module, name


def source(sig: Signature) -> str:
    """The Python source of the thunk module for `sig`."""
    dtypes = sorted({ty for kind, ty in sig.kinds if kind == BUF or ty not in ("int64", "float64", "bool")})
    lines = ["# generated by runtime_v1.thunks: do not edit (a changed kernel gets a new file)",
             f"# {sig.module}.{sig.name}{list(sig.kinds)}",
             "import numpy as np", "from numba import carray, cfunc",
             "from ge.npu.native import STATUS, THUNK_SIG, as_pointer",
             f"from {sig.module} import {sig.name} as kernel", ""]
    lines += [f"T_{ty} = np.dtype('{ty}').type" for ty in dtypes]
    lines += ["", "", "@cfunc(THUNK_SIG, cache=True, nopython=True)", "def thunk(ip, fp, bp, block_idx, block_dim):"]
    call = []
    for k, ((kind, ty), (i, f)) in enumerate(zip(sig.kinds, layout(sig.kinds))):
        if kind == BUF:
            lines.append(f"    a{k} = carray(as_pointer(bp[ip[{i}]] + ip[{i + 1}], T_{ty}), ip[{i + 2}])")
            call.append(f"a{k}")
        elif kind == INT:
            call.append(f"ip[{i}]" if ty == "int64" else f"ip[{i}] != 0" if ty == "bool" else f"T_{ty}(ip[{i}])")
        else:
            call.append(f"fp[{f}]" if ty == "float64" else f"T_{ty}(fp[{f}])")
    if sig.tiled:
        call += ["block_idx", "block_dim"]
    lines += ["    try:", f"        kernel({', '.join(call)})", "    except Exception:  # noqa: BLE001",
              "        bp[STATUS] = 1"]
    return "\n".join(lines) + "\n"


# -- the cache ---------------------------------------------------------------------------------------

_loaded: dict[Signature, object] = {}   # signature -> cfunc (kept alive: its address is in task tables)
_cached: dict[Signature, bool] = {}     # signature -> its cfunc came from Numba's disk cache
_lock = threading.Lock()
_recorded: dict = {}                    # generation folder -> thunk files its manifest lists


def thunk_address(sig: Signature) -> int:
    """Generate (once), import and compile-or-load the thunk of `sig`; its C address. ThunkError on failure."""
    with _lock:
        fn = _loaded.get(sig)
        if fn is None:
            try:
                fn = _import(sig)
            except Exception as e:  # noqa: BLE001 - any typing/lowering failure means "not native"
                raise ThunkError(f"thunk for {sig.module}.{sig.name} failed to compile: "
                                 f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from e
            _loaded[sig] = fn
            _cached[sig] = getattr(fn, "_cache_hits", 0) > 0   # cfunc compiles (or loads) at import
        return fn.address


def loaded(sig: Signature) -> bool:
    """The thunk of `sig` is in this process already."""
    return sig in _loaded


def from_cache(sig: Signature) -> bool | None:
    """Whether the thunk of `sig` was loaded from Numba's disk cache (None: not loaded)."""
    return _cached.get(sig)


def _import(sig: Signature):
    try:
        gen = generation_dir()
    except (ThunkCacheError, OSError) as e:   # said once (thunk_cache Step 4), then each task falls back
        report("folder", f"ge: the thunk cache is not usable ({e}); tasks run on the slower Python path")
        raise
    path, text = gen / f"thunk_{sig.digest}.py", source(sig)
    try:
        found = path.read_text()
    except FileNotFoundError:
        found = None
    except (OSError, UnicodeDecodeError) as e:
        found = f"unreadable: {e}"
    if found != text:   # absent, or damaged / foreign: never import what ge did not write
        if found is not None:
            quarantine = path.with_name(f"{path.name}.{os.getpid()}.damaged")
            try:
                os.replace(path, quarantine)
            except FileNotFoundError:   # another process moved it first
                pass
            report(str(path), f"ge: thunk file '{path}' was not what ge writes (damaged or foreign); moved to "
                              f"'{quarantine.name}' and generated again")
        write_atomic(path, text)
    if path.name not in _recorded.setdefault(gen, owned(gen)):   # the manifest: what pruning may delete
        record(gen, path.name)
        _recorded[gen].add(path.name)
    name = f"_ge_thunk_{sig.digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module.thunk
