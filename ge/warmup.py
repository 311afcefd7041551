"""Compile (or load from Numba's cache) every kernel specialization a plan will call, before it runs.

The first run of a model otherwise pays each compile inside the run. Types are taken from what the
runtimes pass: flat 1-D contiguous buffers (constants flattened from the plan's arrays, which keeps their
read-only flag), then the launch's static arguments.
"""
from __future__ import annotations

import inspect
import logging

import numpy as np
from numba import typeof
from numba.core.types import BaseTuple

from .ir.dtypes import HALF
from .npu import progress
from .npu.compile_workers import compile_ahead
from .npu.compile_jobs import KernelJob

log = logging.getLogger("ge")


def _buffer_type(plan, t: int, bits16: bool):
    a = np.ascontiguousarray(plan.constants[t]).reshape(-1) if t in plan.constants else np.empty(0, plan.tensors[t].dtype)
    return typeof(_as_bits(a, bits16))


def _as_bits(a: np.ndarray, bits16: bool) -> np.ndarray:
    """float16 / bfloat16 reach a `bits16` launch's kernel as uint16 (registry.serial_blocks, the thunks)."""
    return a.view(np.uint16) if bits16 and a.dtype in HALF else a


def kernel_signatures(plan, host_steps=frozenset()) -> dict:
    """{(kernel function, argument types): first node name} for every static launch of the plan, but those of
    `host_steps` (the runtime runs them on its host CPU engine: no kernel)."""
    sigs = {}
    for node in plan.nodes:
        launch = node.launch
        if launch is None or not hasattr(launch.fn, "compile") or node.step in host_steps:
            continue
        picked = (launch.inputs if launch.inputs is not None
                  else [i for i, t in enumerate(node.inputs) if t >= 0])
        types = [_buffer_type(plan, node.inputs[i], launch.bits16) for i in picked]
        types += [_buffer_type(plan, t, launch.bits16) for t in node.outputs]
        types += [typeof(_as_bits(np.empty(0, w.dtype), launch.bits16)) for w in launch.workspaces]
        types += [typeof(a) for a in launch.args]
        types += [typeof(0), typeof(0)] if launch.tiled else []   # (block_idx, block_dim)
        sigs.setdefault((launch.fn, _pack_star_args(launch.fn, types)), node.name)
    return sigs


def _pack_star_args(fn, types: list) -> tuple:
    """Numba types a `*xs` parameter as one tuple of the trailing arguments."""
    params = inspect.signature(fn.py_func).parameters.values()
    if not any(p.kind is p.VAR_POSITIONAL for p in params):
        return tuple(types)
    fixed = sum(1 for p in params if p.kind is p.POSITIONAL_OR_KEYWORD)
    return tuple(types[:fixed]) + (BaseTuple.from_types(types[fixed:]),)


def compile_kernels(plan, host_steps=frozenset()) -> int:
    """Compile (or load from Numba's cache) every distinct kernel specialization of the plan (but those of
    `host_steps`); returns how many. Reported as the step "compiling kernels" (ge.npu.progress), each item
    cached or compiled."""
    sigs = kernel_signatures(plan, host_steps)
    with progress.step("compiling kernels", len(sigs)) as advance:
        ahead = compile_ahead([KernelJob(fn, types) for fn, types in sigs], advance,
                              plan.options.compile_workers, progress.noter())   # cold: in worker processes too
        for (fn, types), name in sigs.items():
            if KernelJob(fn, types) in ahead:   # told as it was compiled; loaded from the disk cache now
                fn.compile(types)
                continue
            hits, misses = _counts(fn)
            fn.compile(types)
            now_hits, now_misses = _counts(fn)
            advance(f"{fn.__name__} ({name})", False if now_misses > misses else True if now_hits > hits else None)
    return len(sigs)


def _counts(fn) -> tuple[int, int]:
    """Numba's disk-cache hits and misses of a dispatcher (neither moves for a specialization in memory)."""
    st = fn.stats
    return sum(st.cache_hits.values()), sum(st.cache_misses.values())


def before_first_run(sess) -> int:
    """Compile (or load) what a session's first run would, reported kernel by kernel: runtime_v2 calls every
    kernel from Python. runtime_v1 compiled its thunks at load; its few fallback tasks compile at their first
    call (named by the progress's Numba listener): typed here, every kernel reading a constant would get a
    second, read-only specialization that no thunk uses. A specialization warm-up cannot type is left to
    the run (it compiles it, or says why it cannot); returns how many were compiled or loaded here."""
    if sess.runtime == "v1":
        return 0
    try:
        # runtime_v2's host CPU engine runs the export's shape arithmetic in numpy: nothing to compile there
        return compile_kernels(sess.plan, getattr(sess._executor, "host_cpu_steps", frozenset()))
    except Exception as e:  # noqa: BLE001 - the run itself reports a kernel that cannot compile, with its node
        log.debug("warm-up left the kernels to the first run: %s", str(e).splitlines()[0] if str(e) else e)
        return 0
