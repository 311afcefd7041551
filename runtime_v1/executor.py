"""runtime_v1's Executor: a loaded Model plus a small pool of instances; `run` binds I/O and executes.

An `Instance` owns the memory one run writes: its arena (the first instance: weights | feature_map | io in
ONE allocation, weights copied in once; further instances: feature_map | io, sharing the first one's
weights), its base-pointer table, and its fallback calls with views bound at load. Concurrent `run` calls
check out different instances (at most `Options.executor_instances`; more callers wait), and the
interpreter releases the GIL, so runs overlap. With `feature_base_refreshable` there is one instance and
its feature map can be re-bound to a caller's buffer between runs (`update_feature_memory_base`).

Per run (no per-node host work): reset the base table, patch the I/O slots — an input array of the right
dtype and size that is C-contiguous and 32-byte aligned (GE's zero-copy rule, ge.plan.zero_copy_aligned)
becomes its slot (zero copy), otherwise it is copied into the arena's slot; an output is computed straight
into the caller's bound array when that passes the same rule (zero copy), else into a fresh array — then
run each stream's program and copy out only outputs that alias an input or a
constant. Counters: `stats()`. A single-stream plan runs on the calling thread; a multi-stream plan runs
through the instance's `Dispatcher` (dispatch.py: the AI cores pull its streams, when kernels are tiled) or
its `Streams` (a persistent worker per extra stream thread, native event flags).
"""
from __future__ import annotations

import weakref
from typing import NamedTuple

import numpy as np

from ge.errors import GEError, InputError
from ge.kernels.registry import serial_blocks
from ge.npu.aicore import team
from ge.npu.device import memory_of
from ge.npu.memory import align_up
from ge.npu.instance_pool import InstancePool
from ge.plan import Plan, copy_only_io, io_aligned, zero_copy_aligned

from .dispatch import Dispatcher
from .host import HostTask
from .model import FEATURE_MAP, IO0, Model
from .weights import lend_constants
from .sink import interpret
from .stream_threads import Streams, _call, _raise
from .tables import NativeRun

_NO_TEAM = np.zeros(1, np.int64)  # the team argument of plans that launch no tiled task (never read)


class Spec(NamedTuple):
    """What a run checks of an input or output, computed once (PlanTensor.nbytes is not free)."""
    name: str
    dtype: np.dtype
    shape: tuple
    nbytes: int


def _spec(t) -> Spec:
    return Spec(t.name, t.dtype, tuple(t.shape), t.nbytes)


# How a run gives each graph output (Executor._output_plan, one per output position):
class BoundOutput(NamedTuple):
    """The first output of a produced I/O block: its slot bound to the output array (the caller's, or fresh)."""
    slot: int
    spec: Spec


class CopiedOutput(NamedTuple):
    """Copied from wherever it lives (an input, a constant, a shared block): `offset` bytes into slot `slot`."""
    slot: int
    offset: int
    spec: Spec


class StateOutput(NamedTuple):
    """A state pair's new value (Options.state_pairs), copied out of its block."""
    slot: int
    spec: Spec


class HeldOutput(NamedTuple):
    """A host value from the run's side table (host.py); `fed`: also a graph input (passed out as a copy)."""
    tensor: int
    fed: bool


def reserve(memory, nbytes: int, what: str, huge: bool = False):
    """(uint8 view of nbytes of device memory, ALIGN-aligned, zeroed, its release); DeviceMemoryError naming
    `what` when the device is full. `huge`: backed by 2 MiB pages where the OS allows (the weights)."""
    nbytes = max(int(nbytes), 1)
    off = memory.reserve(nbytes, what)
    if huge:
        memory.prefer_huge_pages(off, nbytes)
    return memory.view(off, nbytes), (lambda: memory.release(off, nbytes))


def _addr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def arena_parts(model: Model, own_feature_map: bool = True) -> tuple:
    """(feature_map, fixed, io, variable, staging, control) bytes of one instance's arena, each ALIGN-aligned."""
    seg = model.segments
    f = align_up(model.feature_bytes) if own_feature_map else 0  # else: the caller's
    fx, io, var = align_up(seg.get("fixed", 0)), align_up(max(seg["io"], 1)), align_up(seg.get("variable", 0))
    # staging: host tasks' outputs that tasks read (host.py); control: the bodies of static control flow (labels.py)
    return f, fx, io, var, align_up(model.host.nbytes), model.control_bytes


def address_need(model: Model, instances: int) -> int:
    """The device addresses an executor reserves at most: the weights once, an arena per instance."""
    return align_up(max(model.segments["weights"], 1)) + instances * align_up(max(sum(arena_parts(model)), 1))


class Instance:
    def __init__(self, model: Model, weights: np.ndarray, memory, feature_map=None):
        # feature_map: the caller's buffer, or its buffers (piece 0, 1, ...) when the slot is cut (model.cuts)
        pieces = list(feature_map[1:]) if isinstance(feature_map, (list, tuple)) else []
        feature_map = feature_map[0] if isinstance(feature_map, (list, tuple)) else feature_map
        seg = model.segments
        f, fx, io, var, hs, ctl = arena_parts(model, feature_map is None)
        self.arena, self._release = reserve(memory, f + fx + io + var + hs + ctl,
                                            f"runtime_v1's arena of '{model.plan.name}' (feature_map {f} | fixed "
                                            f"{fx} | io {seg['io']} | variable {var} | staging {hs} | control "
                                            f"{ctl} bytes)")
        self.weights = weights
        self.fm = self.arena[:f] if feature_map is None else feature_map
        self.fixed = self.arena[f:f + fx]   # resident: re-basing the feature map never moves it
        self.io = self.arena[f + fx:f + fx + io]
        self.var = self.arena[f + fx + io:f + fx + io + var]   # state blocks, zeros until a run writes them
        self.flipped = False             # the state pairs' blocks have swapped roles (every other run)
        self.seg = [self.weights, self.fm, model.args, None, self.fixed]  # slot STATUS holds no buffer
        self.seg += [(self.io if s.segment == "io" else self.var)[s.offset:s.offset + s.nbytes] for s in model.io]
        self.seg += pieces
        if hs:
            self.seg.append(self.arena[f + fx + io + var:f + fx + io + var + hs])   # slot model.host_slot
        if ctl:
            self.seg.append(self.arena[f + fx + io + var + hs:])   # slot model.control_slot
        # a run's host values (host.py: string feeds, host tasks' outputs) and its bound I/O arrays
        self.values: dict = {}
        self.keep: dict = {}
        self.defaults = np.array([0 if a is None else _addr(a) for a in self.seg], np.int64)
        # one base table per stream (a thunk reports a failure in its own table's STATUS slot); row 0 is
        # `bases`, the others are copied from it per run
        self.rows = np.tile(self.defaults, (len(model.streams), 1))
        self.bases = self.rows[0]
        self.model = model
        # the AI cores: one launch slot per stream thread when some task is tiled (block_dim > 1); cores that
        # pull the streams (dispatch.py) post no launches
        self.cores = team() if model.uses_cores else None
        launches = self.cores is not None and not model.dispatch_cores
        self.slots = (self.cores.acquire_slots(len(model.streams)) if launches
                      else np.full(len(model.streams), -1, np.int64))
        self.team = self.cores.ctrl if self.cores is not None else _NO_TEAM
        self.streams = (Dispatcher(self, model.dispatch_cores) if model.dispatch_cores else
                        Streams(self) if len(model.streams) > 1 else None)
        self.fallback = [self._bind_fallback(st) for st in model.streams]
        # misaligned_*: buffers that failed only GE's 32-byte zero-copy rule (also counted as copied/fresh)
        # copy_only_inputs: read by a task that keeps its load-time addresses (Options.fixed_address_ops)
        self.counters = dict.fromkeys(("zero_copy_inputs", "copied_inputs", "misaligned_inputs", "copy_only_inputs",
                                       "zero_copy_outputs", "fresh_outputs", "copied_outputs",
                                       "misaligned_outputs", "runs"), 0)

    def rebind_feature_map(self, buf: np.ndarray) -> None:
        self.fm = self.seg[FEATURE_MAP] = buf
        self.defaults[FEATURE_MAP] = _addr(buf)
        self.fallback = [self._bind_fallback(st) for st in self.model.streams]

    def _bind_fallback(self, st) -> list:
        return [self.bind_call(task) for task in st.fallback]

    def bind_call(self, task) -> tuple:
        """A task as a Python call: (fn, argument list with views bound, [(position, slot, off, count,
        dtype)] to patch per run: buffers in I/O slots); a host task reads this instance's run (host.py)."""
        if isinstance(task, HostTask):
            return task.bind(self), [], ()
        args, patches = [], []
        for k, (slot, off, count, dtype) in enumerate(task.args.buffers[:task.args.n_buf]):
            if IO0 <= slot < self.model.pieces:
                patches.append((k, slot, off, count, dtype))
                args.append(None)
            else:
                args.append(self.seg[slot][off:off + count * dtype.itemsize].view(dtype))
        return serial_blocks(task.node.launch), args + list(task.node.launch.args), tuple(patches)

    def close(self) -> None:
        """Stop the stream threads, give the launch slots and the arena back (once: also the finalizer's)."""
        if self.streams is not None:
            self.streams.close()
            self.streams = None
        if self.cores is not None:
            self.cores.release_slots(self.slots)
            self.cores = None
        if self._release is not None:
            self._release()
            self._release = None


def _collected(instances: list) -> None:
    """The executor was collected without close(): its instances close as on close() (stream workers must not
    park forever; launch slots go back, else after MAX_SLOTS dropped sessions every launch ran on one core)."""
    for inst in list(instances):
        inst.close()


class Executor:
    """runtime_v1 for one plan: `run(feeds, outputs=None)` -> list of output arrays."""

    binds_outputs = True  # Session may pass bound outputs: {output position: array}

    def __init__(self, plan: Plan, device=None, *, weights=None, feature_map=None, cuts=()):
        # device: a ge.npu.Device or DeviceMemory to reserve in (default: a memory of the plan's
        # device_memory_bytes); weights / feature_map: the caller's buffers (gears.py: batch gears share
        # them); an executor on a caller's feature map keeps one instance, since a second would write the
        # same bytes
        self.plan = plan
        self.model = Model(plan, cuts, Executor)   # cuts: the feature map in pieces (gears.py), feature_map their buffers
        opts = plan.options
        self.refreshable = opts.feature_base_refreshable
        # one instance when the feature map is the caller's or re-bindable, or state is carried run to run
        max_instances = 1 if self.refreshable or feature_map is not None or plan.states \
            else opts.executor_instances
        # a memory of its own reserves the addresses the plan needs, not the whole capacity (issue 46)
        self._owns_memory = device is None
        self.memory = memory = memory_of(device, opts.device_memory_bytes, address_need(self.model, max_instances))
        release = None
        if weights is None and self.model.segments["weights"] == 0:
            weights = np.zeros(1, np.uint8)   # no constants: nothing to reserve on the device
        elif weights is None:   # the instances share one copy, released when the last one goes
            weights, release = reserve(memory, self.model.segments["weights"], f"the weights of '{plan.name}'",
                                       huge=True)
            release = lend_constants(plan, weights, release)   # copied, one copy kept (runtime_v1/weights.py)
        try:
            first = Instance(self.model, weights, memory, feature_map)
        except BaseException:
            if release is not None:   # the arena did not fit: the weights go back too
                release()
            raise
        self._instances = InstancePool(lambda: Instance(first.model, weights, memory), max_instances,
                                       Instance.close, first, on_empty=release)
        held = self.model.host.held   # string feeds: into the run's side table (host.py)
        self._inputs = {t: (self.model.io_slot[t].slot, _spec(plan.tensors[t])) for t in plan.inputs if t not in held}
        self._held_inputs = tuple((t, plan.tensors[t].name) for t in plan.inputs if t in held)
        # I/O a task keeps the load-time address of: always the arena's slot, copied in or out
        self._copy_only = {self.model.io_slot[r].slot for r in copy_only_io(plan)}
        self._outputs = self._output_plan()
        weakref.finalize(self, _collected, self._instances.all)

    def _output_plan(self) -> tuple:
        """Per output position: a BoundOutput, CopiedOutput, StateOutput or HeldOutput."""
        m, plan, claimed, out = self.model, self.plan, set(), []
        states = {o for _, o in m.states}
        for t in plan.outputs:
            spec, root = plan.tensors[t], m.root[t]
            if t in m.host.held:   # from the run's side table (host.py)
                out.append(HeldOutput(t, t in plan.inputs))
                continue
            slot, off = m._locate(t)
            if slot in states and root not in claimed:   # the new state: copied out of its block
                claimed.add(root)
                out.append(StateOutput(slot, _spec(spec)))
            elif slot >= IO0 and root not in self._inputs and root not in claimed and slot not in self._copy_only \
                    and spec.nbytes == plan.tensors[root].nbytes:
                claimed.add(root)
                out.append(BoundOutput(slot, _spec(spec)))
            else:
                off = plan.memory.tensors[t].offset if slot < IO0 else off if slot == m.host_slot else 0
                out.append(CopiedOutput(slot, off, _spec(spec)))
        return tuple(out)

    def close(self) -> None:
        self._instances.close()
        for body in self.model.bodies:   # static pieces run by host tasks (host.py)
            body.close()
        if self._owns_memory:   # the address range goes back (ge/npu/memory.py)
            self.memory.close()

    # -- feature-map base refresh --------------------------------------------------------------
    @property
    def feature_memory_size(self) -> int:
        return self.model.feature_bytes

    def update_feature_memory_base(self, buf: np.ndarray) -> None:
        """Re-bind the feature-map segment to `buf` (C-contiguous, >= feature_memory_size bytes) for the
        next runs (GE's UpdateGraphFeatureMemoryBase; needs Options(feature_base_refreshable=True))."""
        if not self.refreshable:
            raise GEError("the feature-map base is fixed: compile with Options(feature_base_refreshable=True) "
                          "(ge.featureBaseRefreshable=1) to re-bind it")
        if not isinstance(buf, np.ndarray) or not buf.flags.c_contiguous or buf.nbytes < self.feature_memory_size:
            raise InputError(f"feature memory must be a C-contiguous array of at least "
                             f"{self.feature_memory_size} bytes")
        with self._instances.lease() as inst:
            inst.rebind_feature_map(buf.reshape(-1).view(np.uint8))

    # -- running -----------------------------------------------------------------------------------
    def run(self, feeds: dict, outputs: dict | None = None) -> list[np.ndarray]:
        """feeds {input tensor index: array}; outputs {output position: array} computed in place."""
        with self._instances.lease() as inst:
            return self._run(inst, feeds, outputs or {})

    execute = run  # GE's name (DavinciModel::NnExecute)

    def run_traced(self, feeds: dict, tracer) -> list[np.ndarray]:
        """One run recording every task and event op as a slice on `tracer` (ge.npu.Tracer), one track per
        stream, rows stepped one at a time (slower; for profiles and overlap evidence); the blocks of tiled
        tasks on a track per AI core. Streams the cores pull run natively: every task a block slice on its
        core's track and a kernel slice on its stream's (no event ops)."""
        with self._instances.lease() as inst:
            if inst.cores is None:
                return self._run(inst, feeds, {}, tracer)
            with inst.cores.tracing(tracer, self.task_names(), tasks=isinstance(inst.streams, Dispatcher)):
                return self._run(inst, feeds, {}, tracer)

    def task_names(self) -> dict:
        """{a task's int-row address: (its stream's track, its node's name)}: how the AI cores' trace records
        (ge.npu.aicore.AICores.tracing) name the task a block belongs to."""
        m = self.model
        return {int(m.itab.ctypes.data + 8 * st.ioffs[t]): (st.tracks[t], task.node.name)
                for st in m.streams for t, task in enumerate(st.native) if task is not None}

    def _run(self, inst: Instance, feeds: dict, bound_out: dict, tracer=None) -> list[np.ndarray]:
        bases, c = inst.bases, inst.counters
        bases[:] = inst.defaults
        keep = {}  # slot -> the array bound there this run (also keeps it alive)
        inst.values, inst.keep = {}, keep   # host tasks' side table and view of the bound I/O (host.py)
        for t, name in self._held_inputs:
            if feeds.get(t) is None:
                raise InputError(f"missing input '{name}'")
            inst.values[t] = feeds[t]
        try:
            return self._execute(inst, feeds, bound_out, keep, tracer)
        finally:
            inst.values, inst.keep = {}, {}

    def _execute(self, inst: Instance, feeds: dict, bound_out: dict, keep: dict, tracer) -> list[np.ndarray]:
        bases, c = inst.bases, inst.counters
        state_in = self._bind_states(inst, keep)
        for t, (slot, spec) in self._inputs.items():
            a = feeds.get(t)
            if slot in state_in:   # fed: it sets the state; else the last run's output is read
                if a is not None:
                    np.copyto(keep[slot].view(spec.dtype), a.reshape(-1), casting="same_kind")
                    c["copied_inputs"] += 1
                continue
            if a is None:
                raise InputError(f"missing input '{spec.name}'")
            fits = a.dtype == spec.dtype and a.nbytes == spec.nbytes and a.flags.c_contiguous
            addr = _addr(a)   # read once: __array_interface__ makes a dict
            if slot in self._copy_only:
                c["copy_only_inputs"] += 1
            elif fits and io_aligned(addr):
                bases[slot] = addr
                keep[slot] = a
                c["zero_copy_inputs"] += 1
                continue
            else:
                c["misaligned_inputs"] += fits
            dst = inst.seg[slot].view(spec.dtype)   # copied into the arena's slot
            if a.size != dst.size:
                raise InputError(f"input '{spec.name}' has {a.size} elements, expected {dst.size}")
            np.copyto(dst, a.reshape(-1), casting="same_kind")
            c["copied_inputs"] += 1
        results = [None] * len(self._outputs)
        for k, o in enumerate(self._outputs):
            if type(o) is not BoundOutput:
                continue
            spec = o.spec
            buf = bound_out.get(k)
            if buf is not None and not _bindable(buf, spec, keep.values()):
                buf = None
            elif buf is not None and not zero_copy_aligned(buf):
                c["misaligned_outputs"] += 1
                buf = None
            if buf is not None:
                c["zero_copy_outputs"] += 1
            else:
                buf = np.empty(spec.shape, spec.dtype)
                c["fresh_outputs"] += 1
            bases[o.slot] = _addr(buf)
            keep[o.slot] = buf
            results[k] = buf
        m = self.model  # the atomic outputs start clean (GE's centralized AtomicAddrClean)
        for slot, start, stop in m.atomic:
            inst.seg[slot][start:stop] = 0
        for slot in m.atomic_io:
            (keep[slot].reshape(-1).view(np.uint8) if slot in keep else inst.seg[slot])[:] = 0
        runner = inst.streams
        if tracer is not None and (runner is None or (inst.cores is None and isinstance(runner, Dispatcher))):
            runner = Streams(inst)   # rows stepped from Python, a slice each (cores record their tasks themselves)
        if runner is None:  # one stream: on the calling thread, no events
            self._stream(self.model.streams[0], inst.fallback[0], inst, keep)
        else:
            inst.rows[1:] = bases
            try:
                failed = runner.run(keep, tracer)   # Streams raise; the cores (dispatch.py) name the task
            finally:
                if runner is not inst.streams:
                    runner.close()
            if failed is not None:   # re-run it from Python: the kernel's own exception and message
                _call(inst.bind_call(failed), inst, keep, failed.node)
                _raise(failed.node, "the kernel raised (native task; it did not raise when re-run)")
        for k, o in enumerate(self._outputs):
            kind = type(o)
            if kind is CopiedOutput:
                slot, off, spec = o
                src = keep[slot].reshape(-1).view(np.uint8) if slot in keep else inst.seg[slot]
                results[k] = src[off:off + spec.nbytes].view(spec.dtype).reshape(spec.shape).copy()
                c["copied_outputs"] += 1
            elif kind is HeldOutput:   # a feed passed straight out is a copy (onnxruntime's)
                v = inst.values[o.tensor]
                results[k] = (v.copy() if isinstance(v, np.ndarray) else list(v)) if o.fed else v
            elif kind is StateOutput:
                spec = o.spec
                results[k] = keep[o.slot].view(spec.dtype).reshape(spec.shape).copy()
                c["copied_outputs"] += 1
            elif k in bound_out and results[k] is not bound_out[k] and _fits(bound_out[k], results[k]):
                np.copyto(bound_out[k], results[k])
                results[k] = bound_out[k]
                c["copied_outputs"] += 1
        c["runs"] += 1
        inst.flipped ^= bool(self.model.states)   # this run's output block is the next run's input
        return results

    def _bind_states(self, inst, keep) -> set:
        """Each state pair's input slot on its current block, its output slot on the other; the input slots."""
        for si, so in self.model.states:
            cur, nxt = (inst.seg[so], inst.seg[si]) if inst.flipped else (inst.seg[si], inst.seg[so])
            inst.bases[si], inst.bases[so] = _addr(cur), _addr(nxt)
            keep[si], keep[so] = cur, nxt
        return {si for si, _ in self.model.states}

    def _stream(self, st, calls, inst, keep) -> None:
        m = self.model
        for step in st.program:
            if type(step) is NativeRun:
                failed = interpret(st.addrs, st.ioffs, st.foffs, st.blocks, m.itab, m.ftab, inst.bases, inst.team,
                                   inst.slots[0], step.start, step.stop)
                if failed >= 0:  # re-run the task from Python: the kernel's own exception and message
                    task = st.native[failed]
                    _call(inst.bind_call(task), inst, keep, task.node)
                    _raise(task.node, "the kernel raised (native task; it did not raise when re-run)")
            else:
                _call(calls[step.index], inst, keep, st.fallback[step.index].node)

    # -- stats -------------------------------------------------------------------------------------
    def stats(self) -> dict:
        """Binding counters summed over instances, the native/fallback split, streams and events."""
        pool = self._instances
        with pool.cond:
            out = dict.fromkeys(pool.all[0].counters, 0)
            for inst in pool.all:
                for key, v in inst.counters.items():
                    out[key] += v
            out["instances"] = len(pool.all)
        m = self.model
        out.update(native_tasks=m.native_tasks, fallback_tasks=m.fallback_tasks, host_tasks=len(m.host_tasks),
                   load_seconds=m.load_seconds,
                   streams=len(m.streams), events=len(m.events),  # tables run in parallel, event pairs in them
                   pulled_by_cores=m.dispatch_cores)              # the cores that pull the streams, 0: threads
        return out

    def allocator_stats(self) -> dict:
        """Device memory: capacity, in use (arenas of every instance), peak, instances."""
        return {"capacity": self.memory.capacity, "device_in_use": self.memory.in_use,
                "device_peak": self.memory.peak, "device_mapped": self.memory.mapped, "instances": len(self._instances.all)}

    def empty_cache(self) -> None:
        """Nothing is cached: runtime_v1's arenas are static for the executor's life."""

    @property
    def stream_threads(self) -> int:
        """Threads that run the streams: the cores that pull them (dispatch.py), else one per table."""
        return self.model.dispatch_cores or len(self.model.streams)


def _fits(buf, r) -> bool:
    return isinstance(buf, np.ndarray) and buf.shape == r.shape and buf.dtype == r.dtype and buf.flags.writeable


def _bindable(buf, spec, inputs) -> bool:
    """A caller's output array can be the slot itself: right dtype/shape, contiguous, aligned, writable,
    sharing no memory with an input of this run."""
    return (isinstance(buf, np.ndarray) and buf.dtype == spec.dtype and buf.shape == tuple(spec.shape)
            and buf.flags.c_contiguous and buf.flags.aligned and buf.flags.writeable
            and not any(np.may_share_memory(buf, a) for a in inputs))

