"""runtime_v2: a host-driven executor. Node by node: allocate outputs, launch, free after the last reader.

One `Executor` per model holds what every request shares: the lowered steps (lowering.py), the constants
(weights, never copied per instance), the dynamic-node caches (dynamic.py), and the device (L1 of the
unified allocator, allocator.py). A request runs on an `Instance` checked out of a pool: the instance owns
the planned feature-map arena (one device allocation, GE's "static subgraph as one allocation"), the
argument tuples of its static steps bound to arena views, and its own single-thread caching allocator for
dynamic-shape tensors. Concurrent `run` calls get different instances, so `Session.run` is thread-safe and
scales with kernels that release the GIL; at most `executor_instances` instances exist at once (more
callers wait for one).

The loop works on integers and tuples only: (kind, fn, inputs, tail, releases) per step. Static nodes were
prepared at compile time and are never re-prepared; dynamic nodes are prepared per new input shape.

Multi-stream (streams.py): a plan with several streams runs one host thread per stream, joined by the
plan's events; the kernels release the GIL, so streams overlap on real cores. A plan with dynamic steps or
caching-allocator tensors (GE's dynamic-shape multi-stream, ENABLE_DYNAMIC_SHAPE_MULTI_STREAM) gives each
instance a multi-stream allocator instead (mif.py: GE's MIF protocol), each thread frees what it is done
with (stream_memory.py), and the events carry the allocator's recycle state; its stream threads are native
loops that the calling thread feeds with the bound launches (launcher.py, queues.py: all Python on one
thread). A budget of one thread runs the plan in plan order.

State (Options.state_pairs, the plan's variable segment): one device region per executor holds each pair's
two blocks; a run reads the input from one (unless the caller feeds it) and writes the output into the
other, then they swap. Runs of such a plan take turns (the state is the executor's, not an instance's).
"""
from __future__ import annotations

import weakref

import numpy as np

from ge.errors import DeviceMemoryError, ExecutionError, GEError
from ge.npu.aicore import hold, team, unhold
from ge.npu.instance_pool import InstancePool
from ge.npu.memory import align_up
from ge.npu.programs import stream_threads, thread_of, thread_programs
from ge.npu.thunks import ThunkError
from ge.plan import aligned_empty, event_uses, runs_on_v1, sunk_plan, zero_copy_aligned

from .address import address_need
from .allocator import DeviceMemory, ScalableAllocator, ThreadSafeScalableAllocator
from .control import HostNode
from .dynamic import DynamicNode
from .host_cpu import HostCpuNode, host_cpu_steps
from .launcher import launch_table, queues_for, run_launched, run_static
from .lowering import ALIAS, ALLOC, BOUND, DYNAMIC, HOST, STATIC, lower
from .mif import MultiStreamAllocator
from .record import stable_regions
from .replay import Replays, capture_limit
from .states import States
from .stream_memory import StreamAlloc, stream_tables
from .stream_runner import StreamRunner
from .sunk import SunkNode
from .tiled import TiledCall


def _check_static_outputs(ex: "Executor") -> None:
    """The plan's static graph outputs are host arrays a run makes: with the arena, they count against the
    cap before anything is reserved (runtime_v1 holds them in its arena and refuses such a plan at load)."""
    outs = [(o.nbytes, o.tensor) for s in ex.lowered.steps if s.kind != DYNAMIC for o in s.outs if o.place == HOST]
    host = sum(n for n, _ in outs)
    if host and ex.arena_bytes + host + ex.device.in_use > ex.device.capacity:
        names = ", ".join(f"'{ex.plan.tensors[t].name}' ({n} bytes)" for n, t in sorted(outs, reverse=True)[:4])
        raise DeviceMemoryError(ex.arena_bytes + host, ex.device.capacity, ex.device.in_use,
                                f"the graph outputs {names} (on the host) with the planned arena of "
                                f"{ex.arena_bytes} bytes")


class Instance:
    """One request's worth of state: arena, bound steps, buffer table template, caching allocator."""

    def __init__(self, ex: "Executor", alloc):
        self.alloc = alloc
        self.arena = None  # (offset, bytes) of the planned feature-map arena on the device
        bufs = list(ex._consts)
        mem = ex.plan.memory
        base = None
        _check_static_outputs(ex)
        if mem is not None:
            if ex.arena_bytes:  # device extents are 64 KiB aligned: every planned 512 B offset stays aligned
                off = ex.device.reserve(ex.arena_bytes, "the planned feature-map arena")
                self.arena = (off, ex.arena_bytes)
                base = ex.device.view(off, ex.arena_bytes)
            else:  # only empty tensors (or none) in the feature map
                base = np.empty(0, np.uint8)
            for t in ex.lowered.arena:   # the fixed segment (if any) follows the feature map in the arena
                spec = ex.plan.tensors[t]
                off = mem.tensors[t].offset + (ex.fixed_at if mem.tensors[t].segment == "fixed" else 0)
                bufs[t] = base[off:off + spec.nbytes].view(spec.dtype)
        self.bufs = bufs
        # the AI cores: a launch slot per stream thread when some launch may be tiled
        self.cores = ex.cores
        self.slots = self.cores.acquire_slots(ex.stream_threads) if self.cores is not None else None
        self.team = self.cores.ctrl if self.cores is not None else None
        self.steps = [self._bind(ex, s, base) for s in ex.lowered.steps]
        # GE's 32-byte zero-copy rule at the I/O boundary (ge.plan.zero_copy_aligned); summed by stats()
        self.counters = dict.fromkeys(("zero_copy_inputs", "copied_inputs", "zero_copy_outputs",
                                       "misaligned_outputs"), 0)
        # a dynamic plan on several threads: one allocator view per thread's stream (stream_memory.py)
        self.stream_allocs = [StreamAlloc(alloc, g) for g in range(ex.stream_threads)] \
            if ex.stream_memory is not None else None
        self.runner = StreamRunner(ex.programs, len(ex.plan.events), self.team, uses=event_uses(ex.plan.events),
                                   memory=alloc if self.stream_allocs else None) if ex.programs else None
        # a dynamic plan's other threads as native loops fed by the caller (launcher.py), when they can wait
        self.queues = queues_for(ex, self) if self.stream_allocs else None
        # recorded shapes replayed from native tables (replay.py): one thread, no state carried run to run
        limit = capture_limit(ex.plan.options) if ex.programs is None and ex._states is None else 0
        self.replays = Replays(ex.device, limit) if limit else None
        self.stable_regions = stable_regions(ex, self.steps) if limit else ((), ())

    def core(self, ex, step: int):
        """(team, slot) of the thread that runs `step`, or None when the plan launches nothing tiled."""
        return None if self.cores is None else (self.team, int(self.slots[ex.thread_of[step]]))

    def _bind(self, ex, s, base):
        if s.kind == DYNAMIC:
            return DYNAMIC, ex._dynamic[s.node.step], None, None, s.release
        if s.kind == ALIAS:
            return ALIAS, None, s.ins[0], s.node.outputs[0], s.release
        ws = self._workspaces(ex, s, base)
        outs = [self.bufs[o.tensor] for o in s.outs] if s.kind == BOUND else None
        tiled = self._tiled(ex, s, outs, ws)
        if tiled is not None:   # the blocks go to the AI cores; the call takes buffers only
            if s.kind == BOUND:
                return BOUND, tiled, s.ins, (*outs, *ws), s.release
            return STATIC, tiled, s.ins, (s.outs, tuple(ws)), s.release
        if s.kind == BOUND:
            return BOUND, s.fn, s.ins, (*outs, *ws, *s.args), s.release
        return STATIC, s.fn, s.ins, (s.outs, (*ws, *s.args)), s.release

    def _tiled(self, ex, s, outs, ws):
        """The step's launch on the AI cores (None: block_dim 1, no cores, or no table encoding)."""
        launch = s.node.launch
        if launch.block_dim < 2 or self.cores is None:
            return None
        tensors = ex.plan.tensors
        specs = [(tensors[t].nbytes // tensors[t].dtype.itemsize, tensors[t].dtype) for t in s.ins]
        specs += [(o.count, o.dtype) for o in s.outs] + [(w.size, w.dtype) for w in ws]
        n_in, n_out = len(s.ins), len(s.outs)
        fixed = {n_in + n_out + k: w for k, w in enumerate(ws)}
        if outs is not None:
            fixed.update({n_in + k: o for k, o in enumerate(outs)})
        try:
            return TiledCall(launch, specs, n_in).bound(*self.core(ex, s.node.step), fixed)
        except ThunkError:
            return None

    @staticmethod
    def _workspaces(ex, s, base) -> list:
        specs = s.node.launch.workspaces
        planned = ex.plan.memory.workspaces[s.node.step] if (base is not None and ex.plan.memory) else ()
        shift = ex.fixed_at if planned and s.node.step in ex.plan.memory.fixed_workspaces else 0
        out = []
        for k, w in enumerate(specs):
            if k < len(planned) and planned[k][1]:
                off = planned[k][0] + shift
                out.append(base[off:off + w.nbytes].view(w.dtype))
            else:
                out.append(np.empty(w.size, w.dtype))
        return out

    def release(self, device: DeviceMemory, shared: bool) -> None:
        """Stop the stream threads, give the launch slots and the arena back (once: also the finalizer's)."""
        if self.runner is not None:
            self.runner.close()
            self.runner = None
        if self.replays is not None:
            self.replays.close()
        if self.queues is not None:
            self.queues.close()
            self.queues = None
        if self.cores is not None:
            self.cores.release_slots(self.slots)
            self.cores = None
        if not shared or self.stream_allocs is not None:   # a multi-stream allocator is the instance's own
            self.alloc.empty_cache()
        if self.arena is not None:
            device.release(*self.arena)
            self.arena = None


class Executor:
    def __init__(self, plan, device: DeviceMemory | None = None, shared_allocator: bool = False,
                 max_instances: int | None = None):
        self.plan = plan
        opts = plan.options
        self.max_instances = max_instances or opts.executor_instances
        self.lowered = lower(plan, host_cpu_steps(plan))
        seg = plan.memory.segments if plan.memory is not None else {}
        # one arena: the feature map, then the fixed segment (tasks keeping their addresses: no difference here)
        self.fixed_at = align_up(seg.get("feature_map", 0))
        self.arena_bytes = self.fixed_at + seg.get("fixed", 0) if seg.get("fixed") else seg.get("feature_map", 0)
        self._owns_device = device is None   # then it maps what one instance needs, and grows (address.py)
        self.device = device or DeviceMemory(opts.device_memory_bytes, reserve=address_need(
            plan, self.lowered, self.arena_bytes, 1))
        self._consts: list = [None] * len(plan.tensors)
        for i, a in plan.constants.items():
            self._consts[i] = np.ascontiguousarray(a).reshape(-1)
        self._shapes = [t.shape if t.is_static else None for t in plan.tensors]
        self._bodies: list = []   # executors of control-flow bodies (control.py), closed with this one
        self._dynamic = {s.node.step: SunkNode(plan, s, self._bodies) if sunk_plan(s.node) is not None
                         else HostNode(plan, s, self._body_executor) if s.node.kernel.host
                         else HostCpuNode(plan, s) if s.node.step in self.lowered.host_cpu
                         else DynamicNode(plan, s) for s in self.lowered.steps if s.kind == DYNAMIC}
        self._outputs = tuple((t, t in self.lowered.copy_out) for t in plan.outputs)
        self.last_run = "none"   # how the latest run ran: replayed, recorded or host (stats())
        self._shared = ThreadSafeScalableAllocator(self.device, on_oom=_weak(self._recycle_idle)) \
            if shared_allocator else None
        self._states = States(plan, self.device) if plan.states else None
        self.stream_threads = self._stream_threads()
        self.programs = thread_programs(plan, self.stream_threads) if self.stream_threads > 1 else None
        self.thread_of = thread_of(plan, self.stream_threads)
        self.stream_memory = stream_tables(plan, self.lowered, self.thread_of) \
            if self.programs and not self._stream_threads_possible() else None
        self.launch_table = launch_table(self.programs, event_uses(plan.events), self.stream_threads) \
            if self.stream_memory is not None else None
        tiled = any(n.launch is not None and n.launch.block_dim > 1 for n in plan.nodes)
        self.cores = team() if tiled or (plan.is_dynamic and opts.aicore_num > 1) else None
        me, device, shared = weakref.ref(self), self.device, self._shared is not None  # no pool <-> self cycle
        self._instances = InstancePool(lambda: me()._new_instance(), self.max_instances,
                                       lambda inst: inst.release(device, shared))
        weakref.finalize(self, _collected, self._instances.all, device, shared)

    def _body_executor(self, body_plan) -> "Executor":
        ex = Executor(body_plan, self.device, max_instances=self.max_instances)
        self._bodies.append(ex)
        return ex

    def _stream_threads(self) -> int:
        """Threads for the plan's streams (1: the plan runs in plan order on the calling thread)."""
        if len({n.stream for n in self.plan.nodes}) < 2:
            return 1
        return stream_threads(self.plan)

    # -- instances ------------------------------------------------------------------------------
    def _new_instance(self) -> Instance:
        if self.stream_memory is not None:   # an instance's threads share it: never the executor's shared one
            return Instance(self, MultiStreamAllocator(self.device, self.stream_threads))
        return Instance(self, self._shared or ScalableAllocator(self.device, on_oom=_weak(self._recycle_idle)))

    def _recycle_idle(self) -> None:
        """Out of device memory: idle instances give back their cached spans and arenas."""
        self._instances.drop_idle()

    def empty_cache(self) -> None:
        """Release every cached span and idle arena to the device."""
        self._recycle_idle()
        if self._shared is not None:
            self._shared.empty_cache()

    def close(self) -> None:
        for ex in self._bodies:
            ex.close()
        self._instances.close()
        if self._shared is not None:
            self._shared.empty_cache()
        if self._states is not None:
            self._states.release()
        if self._owns_device:   # the address range goes back (ge/npu/memory.py)
            self.device.close()

    @property
    def host_cpu_steps(self) -> frozenset:
        """The plan steps on the host CPU engine (host_cpu.py): no kernel of theirs runs (ge.warmup skips them)."""
        return self.lowered.host_cpu

    # -- running --------------------------------------------------------------------------------
    binds_outputs = True  # Session may pass bound outputs: {output position: array}

    def run(self, feeds: dict[int, np.ndarray], outputs: dict | None = None) -> list[np.ndarray]:
        """Run on feeds keyed by tensor index (contiguous arrays); returns the graph outputs.

        `outputs` {output position: array}: an output computed into its own buffer (not a view of
        another tensor) is written straight into that array when dtype and size fit (zero copy)."""
        if self._states is not None:   # one state: runs take turns
            with self._states.lock, self._instances.lease() as inst:
                return self._states.after(self._run(inst, feeds, outputs), self.plan)
        with self._instances.lease() as inst:
            return self._run(inst, feeds, outputs)

    def run_body(self, feeds: dict) -> list:
        """A control-flow body's run (runtime_v2/control.py): the feeds are values inside the device, not
        the caller's buffers, so GE's 32-byte zero-copy rule of the I/O boundary does not apply (an
        unaligned feed is read in place, not copied: a 5-node Loop body, alternating in one process on a
        busy machine, 296 -> 145 us per iteration)."""
        with self._instances.lease() as inst:
            return self._run(inst, feeds, inner=True)

    def run_traced(self, feeds: dict[int, np.ndarray], tracer) -> list[np.ndarray]:
        """One run recording each step's slice and each event on `tracer` (ge.npu.Tracer): one track per
        stream, and the blocks of tiled steps per AI core. A single-stream plan is traced on one host thread;
        it must be static (no dynamic step)."""
        if self._states is not None:
            with self._states.lock:
                return self._states.after(self._traced(feeds, tracer), self.plan)
        return self._traced(feeds, tracer)

    def _traced(self, feeds, tracer) -> list[np.ndarray]:
        with self._instances.lease() as inst:
            runner = inst.runner
            if runner is None:
                if not self._stream_threads_possible():
                    hint = "; runtime_v1 traces it (ge profile --runtime v1)" if runs_on_v1(self.plan) else ""
                    raise GEError("runtime_v2 traces a plan with dynamic-shape or caching-allocator steps only on "
                                  f"several streams (enable_dynamic_shape_multi_stream){hint}")
                runner = StreamRunner(thread_programs(self.plan, 1), len(self.plan.events), inst.team)
            bufs, shapes = inst.bufs.copy(), self._shapes.copy()
            _feed(inst, feeds, bufs, shapes)
            if self._states is not None:
                self._states.bind(feeds, bufs, shapes, None)
            labels = [(n.stream, n.name) for n in self.plan.nodes]
            if inst.cores is None:
                return self._run_streams(inst, bufs, shapes, None, runner, tracer, labels)
            names = {step[1].keep[0].irow.ctypes.data: labels[k] for k, step in enumerate(inst.steps)
                     if hasattr(step[1], "keep")}
            with inst.cores.tracing(tracer, names):
                return self._run_streams(inst, bufs, shapes, None, runner, tracer, labels)

    def _stream_threads_possible(self) -> bool:
        """No dynamic step and no caching-allocator tensor: the threads need no allocator of their own."""
        return not any(s.kind == DYNAMIC or any(o.place == ALLOC for o in s.outs) for s in self.lowered.steps)

    def _run(self, inst: Instance, feeds, bound=None, inner=False) -> list[np.ndarray]:
        if inst.replays is not None and not bound and self._states is None and inst.runner is None:
            fed, fed_shapes = {}, {}   # a replay reads only the feeds: no copy of the whole buffer table
            _feed(inst, feeds, fed, fed_shapes, inner)
            return inst.replays.run(self, inst, fed, fed_shapes, lambda: self._table(inst, fed, fed_shapes))
        bufs = inst.bufs.copy()
        shapes = self._shapes.copy()
        _feed(inst, feeds, bufs, shapes, inner)
        if bound:
            bound = self._bind_outputs(bound, bufs, inst.counters)
        if self._states is not None:
            self._states.bind(feeds, bufs, shapes, bound)
        if inst.runner is not None:
            return self._run_streams(inst, bufs, shapes, bound)
        self.last_run = "host"
        return self._loop(inst, bufs, shapes, bound)

    def _table(self, inst: Instance, fed: dict, fed_shapes: dict) -> tuple[list, list]:
        """The buffer and shape tables of a run that records or runs host-driven, with its feeds."""
        bufs, shapes = inst.bufs.copy(), self._shapes.copy()
        for t, a in fed.items():
            bufs[t], shapes[t] = a, fed_shapes[t]
        return bufs, shapes

    def _loop(self, inst: Instance, bufs, shapes, bound) -> list[np.ndarray]:
        """The host loop: node by node on this thread."""
        spans = [None] * len(bufs)
        alloc = inst.alloc
        k = -1
        if inst.team is not None:   # this thread computes: it holds an AI-core token for the run
            hold(inst.team)
        try:
            for k, (kind, fn, ins, tail, release) in enumerate(inst.steps):
                if kind == BOUND:
                    fn(*[bufs[i] for i in ins], *tail)
                elif kind == ALIAS:
                    bufs[tail] = bufs[ins]
                elif kind == DYNAMIC:
                    fn(bufs, shapes, spans, alloc, inst.core(self, k))
                else:
                    run_static(fn, ins, tail, bufs, spans, alloc)
                if release:
                    for t in release:
                        sp = spans[t]
                        if sp is not None:
                            alloc.free(sp)
                            spans[t] = None
            return self._collect(bufs, shapes, bound)
        except Exception as e:
            if k < 0:
                raise
            raise self._error(k, e) from e
        finally:
            if inst.team is not None:
                unhold(inst.team)
            for sp in spans:  # only after a failure (or unreleased outputs) is anything left here
                if sp is not None:
                    alloc.free(sp)

    def _error(self, k: int, e: BaseException) -> GEError:
        node = self.lowered.steps[k].node
        where = f"while running {node.op_type} node '{node.name}' (op {node.op_type}, opset {node.opset}, " \
                f"step {node.step}, stream {node.stream})"
        if isinstance(e, DeviceMemoryError):  # stays catchable as such, and names the node
            what = getattr(e, "what", "") or "a tensor"   # host_outputs.py names the output
            if getattr(e, "tensor", None) is not None:     # a caching-allocator span (dynamic.alloc_for)
                what = what.replace("a runtime_v2 tensor", f"tensor '{self.plan.tensors[e.tensor].name}'")
            return DeviceMemoryError(e.requested, e.capacity, e.in_use, f"{what} {where}")
        detail = str(e) if isinstance(e, GEError) else f"{type(e).__name__}: {e}"
        return ExecutionError(f"{where}: {detail}")

    def _run_streams(self, inst: Instance, bufs, shapes, bound, runner=None, tracer=None,
                     labels=None) -> list[np.ndarray]:
        """The plan's streams on host threads; a dynamic plan's caching-allocator blocks follow MIF's rules
        (stream_memory.py: per thread its frees, the other readers registered after the producing step)."""
        steps, allocs = inst.steps, inst.stream_allocs
        spans = shares = frees = group = None
        if allocs is not None:
            spans, (shares, frees), group = [None] * len(bufs), self.stream_memory, self.thread_of

        def body(k):
            kind, fn, ins, tail, _ = steps[k]
            alloc = None if allocs is None else allocs[group[k]]   # a static plan: the arena, no blocks
            if kind == BOUND:
                fn(*[bufs[i] for i in ins], *tail)
            elif kind == ALIAS:
                bufs[tail] = bufs[ins]
            elif kind == DYNAMIC:
                fn(bufs, shapes, spans, alloc, inst.core(self, k))
            else:
                run_static(fn, ins, tail, bufs, spans, alloc)
            if alloc is None:
                return
            for t, readers in shares[k]:
                if spans[t] is not None:
                    for g in readers:
                        alloc.mif.access(spans[t], g)
            for t in frees[k]:
                if spans[t] is not None:
                    alloc.free(spans[t])
        if inst.queues is not None and runner is None and tracer is None:
            failed = run_launched(self, inst, bufs, shapes, spans)
        else:
            failed = (runner or inst.runner).run(body, tracer, labels)
        if allocs is not None:   # every thread is idle: GE's LastWaitEvents
            if failed is None:
                inst.alloc.synchronize()
            else:
                inst.alloc.abandon(spans)
        if failed is not None:
            k, e = failed
            if not isinstance(e, Exception):
                raise e
            raise self._error(k, e) from e
        return self._collect(bufs, shapes, bound)

    def _collect(self, bufs, shapes, bound) -> list[np.ndarray]:
        """The graph outputs: the caller's bound array where the kernel wrote into it, else the buffer
        (copied when it is a view of something the caller must not keep: an input, a constant, the arena)."""
        out = []
        for t, copy in self._outputs:
            if bound and t in bound and bufs[t] is bound[t][0]:
                out.append(bound[t][1])
            elif not isinstance(bufs[t], np.ndarray):  # a sequence or optional
                out.append(list(bufs[t]) if isinstance(bufs[t], list) else bufs[t])
            else:
                a = bufs[t].reshape(shapes[t])
                out.append(a.copy() if copy else a)
        return out

    def _bind_outputs(self, bound: dict, bufs: list, counters: dict) -> dict:
        """{output position: array} -> {tensor: (flat view, array)} for the outputs a kernel writes (HOST),
        placed in `bufs` where the HOST allocation finds them. A misaligned array is not bound (GE's 32-byte
        rule, as GE's EnsureTensorAtOutMemory falls back to allocate + copy): Session copies into it."""
        out = {}
        for k, a in bound.items():
            t = self.plan.outputs[k]
            if (self.lowered.place.get(t) == HOST and isinstance(a, np.ndarray) and a.flags.c_contiguous
                    and a.flags.writeable and a.dtype == self.plan.tensors[t].dtype):
                if not zero_copy_aligned(a):
                    counters["misaligned_outputs"] += 1
                    continue
                counters["zero_copy_outputs"] += 1
                out[t] = (a.reshape(-1), a)
                bufs[t] = out[t][0]
        return out

    @property
    def _pool(self) -> list[Instance]:
        """The idle instances (the name earlier tests know the arena pool by)."""
        return self._instances.idle

    # -- stats ------------------------------------------------------------------------------------
    def stats(self) -> dict:
        """Steps by kind, instances, stream threads, and the I/O binding counters summed over instances."""
        kinds = [s.kind for s in self.lowered.steps]
        host = len(self.lowered.host_cpu)
        out = {"steps": len(kinds), "dynamic_steps": sum(s.kind == DYNAMIC and s.node.is_dynamic for s in
                                                         self.lowered.steps),
               "host_cpu_steps": host, "alias_steps": kinds.count(ALIAS),
               "instances": len(self._instances.all), "stream_threads": self.stream_threads}
        with self._instances.cond:
            for inst in self._instances.all:
                for key, v in inst.counters.items():
                    out[key] = out.get(key, 0) + v
                if inst.replays is not None:
                    for key, v in inst.replays.counters.items():
                        out[key] = out.get(key, 0) + v
            reps = [i.replays for i in self._instances.all if i.replays is not None]
            out["replays"] = bool(reps)   # replays on (Options.capture_limit, GE_V2_REPLAY)
            out["last_run"] = self.last_run   # replayed | recorded | host: how the latest run ran
            out["replay_refused"] = {f"{k}": why for r in reps for k, why in r.refused.items()}
            out["replay_arena_bytes"] = sum(r.arena[1] for r in reps if r.arena)
        return out

    def allocator_stats(self) -> dict:
        pool = self._instances
        with pool.cond:
            shared = self._shared is not None and self.stream_memory is None
            allocs = [self._shared] if shared else [i.alloc for i in pool.all]
            dyn: dict = {}
            for a in allocs:
                for d in a.stats() if isinstance(a, MultiStreamAllocator) else [a.stats.as_dict()]:
                    for key, v in d.items():
                        dyn[key] = dyn.get(key, 0) + v
                if isinstance(a, MultiStreamAllocator):   # how blocks crossed streams (mif.py)
                    for key, v in dict(a.counters, borrow_hits=a.borrow_hits).items():
                        dyn[key] = dyn.get(key, 0) + v
            return {"capacity": self.device.capacity, "device_in_use": self.device.in_use,
                    "device_peak": self.device.peak, "device_mapped": self.device.mapped,
                    "arena_bytes": self.arena_bytes,
                    "instances": len(pool.all), "idle_instances": len(pool.idle),
                    "stream_threads": self.stream_threads,
                    "replay_arena_bytes": sum(i.replays.arena[1] for i in pool.all
                                              if i.replays is not None and i.replays.arena),
                    "shared_allocator": shared, "dynamic": dyn}


def _collected(instances, device, shared: bool) -> None:
    """When an executor is collected without close(): its instances are released as on close() (stream
    threads stopped, launch slots and arenas given back)."""
    for inst in list(instances):
        inst.release(device, shared)


def _weak(method):
    """A callback to a method that does not keep its object alive (no executor <-> allocator cycle, so a
    dropped session gives its device memory back at once)."""
    ref = weakref.WeakMethod(method)

    def call():
        m = ref()
        if m is not None:
            m()
    return call


def _feed(inst: Instance, feeds: dict, bufs: list, shapes: list, inner: bool = False) -> None:
    """The caller's inputs into the buffer table: read in place when 32-byte aligned (GE's zero-copy
    rule) and writable, else copied into an aligned array first (Numba types a read-only array apart:
    reading one in place would compile each kernel it reaches a second time). `inner`: a body's feeds,
    read in place."""
    c = inst.counters
    for t, a in feeds.items():
        if not isinstance(a, np.ndarray):   # a sequence (list) or an empty optional (None): host values
            bufs[t], shapes[t] = a, None
            continue
        if a.dtype.kind == "O":   # a string tensor: a host value (ge/kernels/strings.py), read as it is
            bufs[t], shapes[t] = a.reshape(-1), a.shape
            continue
        if inner and a.flags.writeable:
            pass
        elif zero_copy_aligned(a) and a.flags.writeable:
            c["zero_copy_inputs"] += 1
        else:
            b = aligned_empty(a.shape, a.dtype)
            np.copyto(b, a)
            a = b
            c["copied_inputs"] += 1
        bufs[t] = a.reshape(-1)
        shapes[t] = a.shape
