"""runtime_v1's Executor: a loaded Model plus a small pool of instances; `run` binds I/O and executes.

An `Instance` owns the memory one run writes: its arena (the first instance: weights | feature_map | io in
ONE allocation, weights copied in once; further instances: feature_map | io, sharing the first one's
weights), its base-pointer table, and its fallback calls with views bound at load. Concurrent `run` calls
check out different instances (at most `Options.executor_instances`; more callers wait), and the
interpreter releases the GIL, so runs overlap. With `feature_base_refreshable` there is one instance and
its feature map can be re-bound to a caller's buffer between runs (`update_feature_memory_base`).

Per run (no per-node host work): reset the base table, patch the I/O slots — an input array of the right
dtype and size that is C-contiguous and aligned for its dtype becomes its slot (zero copy), otherwise it is
copied into the arena's slot; an output is computed straight into the caller's bound array (zero copy)
or into a fresh array — then run each stream's program and copy out only outputs that alias an input or a
constant. Counters: `stats()`.
"""
from __future__ import annotations

import threading
from typing import NamedTuple

import numpy as np

from ge.errors import ExecutionError, GEError, InputError
from ge.plan import Plan

from .model import FEATURE_MAP, IO0, NATIVE, Model
from .native import interpret

ALIGN = 512
BIND, COPY = 0, 1


class Spec(NamedTuple):
    """What a run checks of an input or output, computed once (PlanTensor.nbytes is not free)."""
    name: str
    dtype: np.dtype
    shape: tuple
    nbytes: int


def _spec(t) -> Spec:
    return Spec(t.name, t.dtype, tuple(t.shape), t.nbytes)


def _aligned_empty(nbytes: int, device=None):
    """(uint8 array of nbytes, 512-aligned, zeroed, release fn)."""
    if device is not None:
        off = device.alloc(nbytes, ALIGN, "runtime_v1 arena")
        return device.view(off, np.uint8, nbytes), (lambda: device.free(off))
    raw = np.zeros(nbytes + ALIGN, np.uint8)
    start = -raw.ctypes.data % ALIGN
    return raw[start:start + nbytes], None


def _addr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


class Instance:
    def __init__(self, model: Model, weights: np.ndarray | None, device=None):
        seg = model.segments
        w = -(-seg["weights"] // ALIGN) * ALIGN if weights is None else 0
        f = -(-seg["feature_map"] // ALIGN) * ALIGN
        total = w + f + max(seg["io"], 1)
        self.arena, self._release = _aligned_empty(total, device)
        if weights is None:  # the first instance: copy the weights in once
            weights = self.arena[:seg["weights"]]
            for t, a in model.plan.constants.items():
                off = model.plan.memory.tensors[t].offset
                b = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
                weights[off:off + b.size] = b
        self.weights = weights
        self.fm = self.arena[w:w + f]
        self.io = self.arena[w + f:]
        self.seg = [self.weights, self.fm, model.args, None]  # slot STATUS holds no buffer
        self.seg += [self.io[s.offset:s.offset + s.nbytes] for s in model.io]
        self.defaults = np.array([0 if a is None else _addr(a) for a in self.seg], np.int64)
        self.bases = self.defaults.copy()
        self.model = model
        self.fallback = [self._bind_fallback(st) for st in model.streams]
        self.counters = dict.fromkeys(("zero_copy_inputs", "copied_inputs", "zero_copy_outputs",
                                       "fresh_outputs", "copied_outputs", "runs"), 0)

    def rebind_feature_map(self, buf: np.ndarray) -> None:
        self.fm = self.seg[FEATURE_MAP] = buf
        self.defaults[FEATURE_MAP] = _addr(buf)
        self.fallback = [self._bind_fallback(st) for st in self.model.streams]

    def _bind_fallback(self, st) -> list:
        return [self.bind_call(task) for task in st.fallback]

    def bind_call(self, task) -> tuple:
        """A task as a Python call: (fn, argument list with views bound, [(position, slot, off, count,
        dtype)] to patch per run: buffers in I/O slots)."""
        args, patches = [], []
        for k, (slot, off, count, dtype) in enumerate(task.buffers[:task.n_buf]):
            if slot >= IO0:
                patches.append((k, slot, off, count, dtype))
                args.append(None)
            else:
                args.append(self.seg[slot][off:off + count * dtype.itemsize].view(dtype))
        return task.node.launch.fn, args + list(task.node.launch.args), tuple(patches)

    def close(self) -> None:
        if self._release is not None:
            self._release()
            self._release = None


class Executor:
    """runtime_v1 for one plan: `run(feeds, outputs=None)` -> list of output arrays."""

    binds_outputs = True  # Session may pass bound outputs: {output position: array}

    def __init__(self, plan: Plan, device=None):
        self.plan = plan
        self.model = Model(plan)
        self.device = device
        opts = plan.options
        self.refreshable = bool(getattr(opts, "feature_base_refreshable", False))
        self.max_instances = 1 if self.refreshable else getattr(opts, "executor_instances", 8)
        first = Instance(self.model, None, device)
        self._all, self._idle = [first], [first]
        self._creating = 0  # instances being built count against the cap (else two threads overshoot it)
        self._cond = threading.Condition()
        self._closed = False
        self._inputs = {t: (self.model.io_slot[t].slot, _spec(plan.tensors[t])) for t in plan.inputs}
        self._outputs = self._output_plan()

    def _output_plan(self) -> tuple:
        """Per output position: (BIND, slot, spec) for the first output of a produced I/O block, else
        (COPY, slot, offset, spec): copied from wherever it lives (an input, a constant, a shared block)."""
        m, plan, claimed, out = self.model, self.plan, set(), []
        for t in plan.outputs:
            spec, root = plan.tensors[t], m.root[t]
            slot, off = m._locate(t)
            if slot >= IO0 and root not in self._inputs and root not in claimed \
                    and spec.nbytes == plan.tensors[root].nbytes:
                claimed.add(root)
                out.append((BIND, slot, _spec(spec)))
            else:
                off = plan.memory.tensors[t].offset if slot < IO0 else 0
                out.append((COPY, slot, off, _spec(spec)))
        return tuple(out)

    # -- pool --------------------------------------------------------------------------------------
    def _checkout(self) -> Instance:
        with self._cond:
            while True:
                if self._closed:
                    raise GEError("the session is closed")
                if self._idle:
                    return self._idle.pop()
                if len(self._all) + self._creating < self.max_instances:
                    self._creating += 1
                    break
                self._cond.wait()
        try:
            inst = Instance(self.model, self._all[0].weights, self.device)
        finally:
            with self._cond:
                self._creating -= 1
                self._cond.notify()
        with self._cond:
            self._all.append(inst)
        return inst

    def _checkin(self, inst: Instance) -> None:
        with self._cond:
            if self._closed:
                inst.close()
            else:
                self._idle.append(inst)
            self._cond.notify()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            for inst in self._idle:
                inst.close()
            self._idle = []
            self._cond.notify_all()

    # -- feature-map base refresh --------------------------------------------------------------
    @property
    def feature_memory_size(self) -> int:
        return self.model.segments["feature_map"]

    def update_feature_memory_base(self, buf: np.ndarray) -> None:
        """Re-bind the feature-map segment to `buf` (C-contiguous, >= feature_memory_size bytes) for the
        next runs (GE's UpdateGraphFeatureMemoryBase; needs Options(feature_base_refreshable=True))."""
        if not self.refreshable:
            raise GEError("the feature-map base is fixed: compile with Options(feature_base_refreshable=True) "
                          "(ge.featureBaseRefreshable=1) to re-bind it")
        if not isinstance(buf, np.ndarray) or not buf.flags.c_contiguous or buf.nbytes < self.feature_memory_size:
            raise InputError(f"feature memory must be a C-contiguous array of at least "
                             f"{self.feature_memory_size} bytes")
        inst = self._checkout()
        try:
            inst.rebind_feature_map(buf.reshape(-1).view(np.uint8))
        finally:
            self._checkin(inst)

    # -- running -----------------------------------------------------------------------------------
    def run(self, feeds: dict, outputs: dict | None = None) -> list[np.ndarray]:
        """feeds {input tensor index: array}; outputs {output position: array} computed in place."""
        inst = self._checkout()
        try:
            return self._run(inst, feeds, outputs or {})
        finally:
            self._checkin(inst)

    execute = run  # GE's name (DavinciModel::NnExecute)

    def _run(self, inst: Instance, feeds: dict, bound_out: dict) -> list[np.ndarray]:
        bases, c = inst.bases, inst.counters
        bases[:] = inst.defaults
        keep = {}  # slot -> the array bound there this run (also keeps it alive)
        for t, (slot, spec) in self._inputs.items():
            a = feeds.get(t)
            if a is None:
                raise InputError(f"missing input '{spec.name}'")
            if a.dtype == spec.dtype and a.nbytes == spec.nbytes and a.flags.c_contiguous and a.flags.aligned:
                bases[slot] = _addr(a)
                keep[slot] = a
                c["zero_copy_inputs"] += 1
            else:
                dst = inst.seg[slot].view(spec.dtype)
                if a.size != dst.size:
                    raise InputError(f"input '{spec.name}' has {a.size} elements, expected {dst.size}")
                np.copyto(dst, a.reshape(-1), casting="same_kind")
                c["copied_inputs"] += 1
        results = [None] * len(self._outputs)
        for k, o in enumerate(self._outputs):
            if o[0] != BIND:
                continue
            spec = o[2]
            buf = bound_out.get(k)
            if buf is not None and _bindable(buf, spec, keep.values()):
                c["zero_copy_outputs"] += 1
            else:
                buf = np.empty(spec.shape, spec.dtype)
                c["fresh_outputs"] += 1
            bases[o[1]] = _addr(buf)
            keep[o[1]] = buf
            results[k] = buf
        for st, calls in zip(self.model.streams, inst.fallback):
            self._stream(st, calls, inst, keep)
        for k, o in enumerate(self._outputs):
            if o[0] == COPY:
                _, slot, off, spec = o
                src = keep[slot].reshape(-1).view(np.uint8) if slot in keep else inst.seg[slot]
                results[k] = src[off:off + spec.nbytes].view(spec.dtype).reshape(spec.shape).copy()
                c["copied_outputs"] += 1
            elif k in bound_out and results[k] is not bound_out[k] and _fits(bound_out[k], results[k]):
                np.copyto(bound_out[k], results[k])
                results[k] = bound_out[k]
                c["copied_outputs"] += 1
        c["runs"] += 1
        return results

    def _stream(self, st, calls, inst, keep) -> None:
        m = self.model
        for kind, a, b in st.program:
            if kind == NATIVE:
                failed = interpret(st.addrs, st.ioffs, st.foffs, m.itab, m.ftab, inst.bases, a, b)
                if failed >= 0:  # re-run the task from Python: the kernel's own exception and message
                    task = st.native[failed]
                    _call(inst.bind_call(task), inst, keep, task.node)
                    _raise(task.node, "the kernel raised (native task; it did not raise when re-run)")
            else:
                _call(calls[a], inst, keep, st.fallback[a].node)

    # -- stats -------------------------------------------------------------------------------------
    def stats(self) -> dict:
        """Binding counters summed over instances, and the native/fallback split."""
        with self._cond:
            out = dict.fromkeys(self._all[0].counters, 0)
            for inst in self._all:
                for key, v in inst.counters.items():
                    out[key] += v
            out["instances"] = len(self._all)
        m = self.model
        out.update(native_tasks=m.native_tasks, fallback_tasks=m.fallback_tasks, load_seconds=m.load_seconds)
        return out


def _call(call, inst, keep, node) -> None:
    fn, args, patches = call
    if patches:
        args = list(args)
        for pos, slot, off, count, dtype in patches:
            src = keep[slot].reshape(-1).view(np.uint8) if slot in keep else inst.seg[slot]
            args[pos] = src[off:off + count * dtype.itemsize].view(dtype)
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001
        _raise(node, f"{type(e).__name__}: {e}", e)


def _raise(node, detail, cause=None):
    raise ExecutionError(f"while running {node.op_type} node '{node.name}' (op {node.op_type}, "
                         f"opset {node.opset}, step {node.step}): {detail}") from cause


def _fits(buf, r) -> bool:
    return isinstance(buf, np.ndarray) and buf.shape == r.shape and buf.dtype == r.dtype and buf.flags.writeable


def _bindable(buf, spec, inputs) -> bool:
    """A caller's output array can be the slot itself: right dtype/shape, contiguous, aligned, writable,
    sharing no memory with an input of this run."""
    return (isinstance(buf, np.ndarray) and buf.dtype == spec.dtype and buf.shape == tuple(spec.shape)
            and buf.flags.c_contiguous and buf.flags.aligned and buf.flags.writeable
            and not any(np.may_share_memory(buf, a) for a in inputs))

