"""The loaded model (GE's DavinciModel): load once, then every run only binds I/O and executes task lists.

`load(plan, device)` does all the work up front:
  1. Refuse dynamic plans (runtime v2 runs those) and plans without a static memory plan. Host ops (strings,
     ONNX-ML, static pieces) are host tasks (host.py): program steps like fallback calls, their values in a
     side table (strings, sequences, sizes the data decides) or a staging slot of the arena (a numeric output a
     task reads); a plan with one runs its tables on one thread in plan order.
  2. Base slots: every buffer argument is (base slot, byte offset). Slot 0 = weights, 1 = feature map
     (workspaces included; then the atomic region, which a run zeroes first), 2 = the static array
     arguments of all launches, 3 = the error status (not a buffer: native.STATUS), 4 = the fixed feature
     map (blocks of tasks that keep their addresses, Options.fixed_address_ops: never re-bound, so slot 1 is
     the refreshable part), 5 + k = the k-th I/O block (a graph input, or a produced graph output with its
     aliases; a state block, Options.state_pairs), then one slot per further piece of the feature-map slot
     when batch gears split it (`cuts`, runtime_v1/gear_memory.py). Per run only the I/O slots are patched: a user array
     becomes the slot (zero copy), so the task tables never change after load; a re-bound feature map
     (executor.py) is one slot too.
  3. Tasks: one per launched node (alias nodes and no-task Concats give none), in plan order, grouped per
     stream (`node.stream`). Per-op atomic clean (Options.atomic_clean_policy 1, GE's memset per op): a
     clean task per atomic output, in the producer's stream right before it (after its waits). A task is
     native when its launch has a table encoding and its thunk compiles (ge.npu.thunks); otherwise it is a fallback task: the kernel called from Python with views bound at
     load (a tiled one runs its blocks one after the other).
  4. Tables per stream (encoded by tables.py): thunk address, int-row offset, float-row offset and block_dim
     per native task; one int table and one float table for all; a program per stream alternates native runs
     [start, stop) and fallback calls (host tasks among them). Multi-stream with kernels tiled over 2+ cores:
     one table per plan stream, pulled by the AI cores (dispatch.py; only tasks and RECORD / WAIT rows: else
     stream threads). Otherwise one table per
     stream thread (ge.npu.programs: the thread budget, at most one per stream; stream s on thread s mod
     threads). A thread's rows are its program's steps: per node
     its waits, its task, its records, the plan's events between threads becoming RECORD / WAIT rows
     (sink.py). A node without a task (an alias) keeps its events in that sequence, so a record lands
     after the last task at or before it, a wait before the first task at or after it, and a record never
     moves ahead of an earlier wait. Event rows sit inside native runs, so they are honoured around
     fallback calls too.
     A static If / Loop / Scan puts its rows where its task would be (labels.py: label ops and the bodies'
     tasks, their memory in the control region, one more slot after the pieces); a body whose streams are
     activated adds a table per further stream (activation.py), and counted lines after the event lines.
  5. Weights are copied once, into the first instance's arena (executor.py: weights | feature_map | io).
Switches: GE_V1_FALLBACK=all (or a comma list of op types) puts those tasks on the fallback, for bisecting;
GE_V1_DISPATCH=0 runs a multi-stream plan on stream threads even when its kernels are tiled (for comparing);
GE_V1_STREAMS=0 builds one list in plan order (no events, no threads) for a multi-stream plan, as do hosts
without a way to wait natively (native.AVAILABLE). One stream builds exactly one table and no event rows.
Tiled tasks (block_dim > 1) need launch slots on the AI cores (one per stream thread): `uses_cores`.
"""
from __future__ import annotations

import bisect
import dataclasses
import os
import time
from dataclasses import dataclass

import numpy as np

from ge.errors import GEError
from ge.kernels.registry import Launch
from ge.kernels.tensor import fill
from ge.npu import native, progress, thunks
from ge.npu.compile_jobs import ThunkJob
from ge.npu.compile_workers import compile_ahead
from ge.npu.memory import align_up
from ge.npu.native import STATUS
from ge.npu.programs import cross_thread_events, dispatch_cores, stream_threads, thread_budget, thread_programs
from ge.npu.thunks import TaskArgs, ThunkError
from ge.plan import Plan, PlanNode, event_uses, host_task, static_control_reason

from . import labels
from .dispatch import MAX_CORES
from .host import HostTask, host_values
from .rows import Labels, Record, Wait
from .sink import RECORD, WAIT
from .tables import Encoder, StreamTables

WEIGHTS, FEATURE_MAP, ARGS = 0, 1, 2
FIXED = STATUS + 1
IO0 = STATUS + 2
ARG_ALIGN = 64


@dataclass(slots=True)
class Task:
    node: PlanNode
    args: TaskArgs          # args.sig None: a fallback task (args.reason says why)

    @property
    def sig(self):
        return self.args.sig

    @property
    def reason(self) -> str:
        return self.args.reason


@dataclass(frozen=True, slots=True)
class IoSlot:
    slot: int
    tensor: int             # the block's root tensor
    offset: int             # in its segment
    nbytes: int
    segment: str = "io"     # io, or variable (a state block: its base alternates between runs)


class Model:
    """What every run of a loaded plan shares: tables, thunks, weights, argument pool, I/O binding plan."""

    def __init__(self, plan: Plan, cuts: tuple[int, ...] = (), executor_of=None):
        # cuts: offsets of the feature-map slot where pieces 1.. start, each piece its own buffer and slot;
        # executor_of(plan): an Executor for a static piece's plan (host.py; executor.py passes its class)
        self._executor_of = executor_of
        t0 = time.perf_counter()
        self.plan = plan
        _check_static(plan)
        mem = plan.memory
        self.segments = {k: int(v) for k, v in mem.segments.items()}
        # the feature-map slot holds the feature map, then the atomic region (zeroed per run)
        self.atomic_at = align_up(self.segments["feature_map"])
        self.feature_bytes = feature_bytes(plan)
        # Step 2: base slots
        index = {t.name: t.index for t in plan.tensors}
        self.root = [index[m.alias_of] if m.alias_of else m.index for m in mem.tensors]
        # host values (host.py): held in a side table, or staged for the tasks that read them
        self.host = host_values(plan)
        io_roots = sorted({self.root[t.index] for t, m in zip(plan.tensors, mem.tensors)
                           if m.segment in ("io", "variable") and m.part_of is None  # parts: in their output's
                           and self.root[t.index] not in self.host.held and t.index not in self.host.held})
        self.io = tuple(IoSlot(IO0 + k, r, mem.tensors[r].offset, plan.tensors[r].nbytes, mem.tensors[r].segment)
                        for k, r in enumerate(io_roots))
        self.io_slot = {s.tensor: s for s in self.io}
        self.pieces = IO0 + len(self.io)      # piece k >= 1 of the feature-map slot is slot pieces + k - 1
        self.cuts = tuple(cuts)
        self.n_slots = self.pieces + len(self.cuts)
        self.host_slot = self.n_slots         # the staging region of host values (host.py), when some are staged
        self.control_slot = self.n_slots + (self.host.nbytes > 0)   # the control region (labels.py), when some
                                                                     # node has bodies
        self.atomic = self._atomic_spans()   # [(slot, start, stop)]: the region a run zeroes first
        # state pairs (Options.state_pairs): (input slot, output slot); a run reads one block, writes the other
        self.states = tuple((self.io_slot[i].slot, self.io_slot[o].slot) for i, o in plan.states)
        per_op = plan.options.atomic_clean_policy == 1
        self.atomic_io = () if per_op else tuple(sorted({
            self.io_slot[self.root[n.outputs[k]]].slot for n in plan.nodes if n.launch is not None
            and not n.no_task for k in n.launch.atomic if mem.tensors[n.outputs[k]].segment == "io"}))
        # Step 3: tasks, argument pool
        self.where = labels.Where(plan, self._locate, lambda off, fixed: (FIXED, off) if fixed else self._fm(off))
        self._pool: list[tuple[int, bytes]] = []
        self._pool_bytes = 0
        self.tasks = [self.task(n) for n in plan.nodes if n.launch is not None and not n.no_task]
        self.bodies: list = []   # executors of static pieces (host.py), closed with the model's executor
        self.host_tasks = {n.step: HostTask(n, plan, self.host.held, self._locate, self.host.staged, self.host_slot,
                                            self._body) for n in plan.nodes if host_task(n)}
        self.cleans = {n.step: [self.clean(n, k) for k in n.launch.atomic] for n in plan.nodes
                       if per_op and n.launch is not None and not n.no_task and n.launch.atomic}
        # a body of several streams runs them side by side (activation.py) when asked and threads may run
        self.activation = plan.options.activate_body_streams and self._threads_allowed() and thread_budget(
            plan.options) > 1
        self.control, self.control_bytes = self._control()
        self.args = np.zeros(max(self._pool_bytes, 1), np.uint8)
        for off, chunk in self._pool:
            self.args[off:off + len(chunk)] = np.frombuffer(chunk, np.uint8)
        # Step 4: thunks and tables
        self.thunk_errors: dict[str, str] = {}
        addr = self._thunks()
        self._check_control()
        self.streams = self._tables(addr)
        self.load_seconds = time.perf_counter() - t0

    # -- Step 3 --------------------------------------------------------------------------------
    def _fm(self, off: int) -> tuple[int, int]:
        """(slot, offset) of a byte offset of the feature-map slot: its piece when cut."""
        k = bisect.bisect_right(self.cuts, off)
        return (FEATURE_MAP, off) if k == 0 else (self.pieces + k - 1, off - self.cuts[k - 1])

    def _atomic_spans(self) -> tuple[tuple[int, int, int], ...]:
        """The atomic region [atomic_at, feature_bytes) as (slot, start, stop) per piece it covers."""
        bounds = (0, *self.cuts, self.feature_bytes)
        spans = []
        for lo, hi in zip(bounds, bounds[1:]):
            a, b = max(lo, self.atomic_at), min(hi, self.feature_bytes)
            if a < b:
                slot, off = self._fm(a)
                spans.append((slot, off, off + b - a))
        return tuple(spans)

    def _body(self, plan: Plan):
        if self._executor_of is None:
            raise GEError(f"plan '{self.plan.name}' has a static piece: load it with runtime_v1.load")
        ex = self._executor_of(plan)
        self.bodies.append(ex)
        return ex

    def _locate(self, t: int) -> tuple[int, int]:
        m = self.plan.memory.tensors[t]
        if self.root[t] in self.host.staged:   # a host task's output a task reads (host.py)
            return self.host_slot, self.host.staged[self.root[t]]
        if m.segment == "weights":
            return WEIGHTS, m.offset
        if m.segment == "feature_map":
            return self._fm(m.offset)
        if m.segment == "fixed":
            return FIXED, m.offset
        if m.segment == "atomic":
            return self._fm(self.atomic_at + m.offset)
        if m.segment in ("io", "variable") and m.part_of is not None:  # a no-task Concat's part, in its output
            out = self.plan.tensor(m.part_of).index
            return self.io_slot[self.root[out]].slot, m.offset - self.plan.memory.tensors[out].offset
        if m.segment in ("io", "variable"):
            return self.io_slot[self.root[t]].slot, 0
        raise GEError(f"tensor '{m.name}' has no static placement ({m.segment}); runtime_v1 needs a static plan")

    def task(self, node: PlanNode, where: labels.Where | None = None) -> Task:
        """The task of `node` of where.plan (default: the model's), its buffers where `where` places them."""
        where = where or self.where
        plan, locate = where.plan, where.locate
        launch = node.launch
        picked = (launch.inputs if launch.inputs is not None
                  else [i for i, t in enumerate(node.inputs) if t >= 0])
        buffers = []
        for t in [node.inputs[i] for i in picked] + list(node.outputs):
            spec = plan.tensors[t]
            buffers.append((*locate(t), spec.nbytes // spec.dtype.itemsize, spec.dtype))
        planned = plan.memory.workspaces[node.step]
        fixed = node.step in plan.memory.fixed_workspaces
        for k, w in enumerate(launch.workspaces):
            off = planned[k][0] if k < len(planned) else 0
            buffers.append((*where.workspace(off, fixed), w.size, w.dtype))
        forced = os.environ.get("GE_V1_FALLBACK", "")
        reason = "forced by GE_V1_FALLBACK" if forced and (forced == "all" or node.op_type in forced.split(",")) \
            else ""
        return Task(node, thunks.task_args(launch, buffers, self.place_array, reason))

    def clean(self, node: PlanNode, k: int, where: labels.Where | None = None) -> Task:
        """A task zeroing atomic output k of `node` (its bytes as uint8: one thunk for every dtype)."""
        where = where or self.where
        plan, locate = where.plan, where.locate
        t = node.outputs[k]
        launch = Launch(fill, (0,), inputs=())
        clean = dataclasses.replace(node, name=f"{node.name}/atomic_clean{k}", op_type="AtomicAddrClean",
                                    inputs=(), outputs=(t,), launch=launch)
        buffers = [(*locate(t), plan.tensors[t].nbytes, np.dtype(np.uint8))]
        return Task(clean, thunks.task_args(launch, buffers, self.place_array))

    def place_weights(self, plan: Plan) -> tuple[int, int]:
        """(slot, offset) of a body plan's weights segment, copied into the argument pool (labels.py)."""
        buf = np.zeros(plan.memory.segments["weights"], np.uint8)
        copy_weights(plan, buf)
        return self.place_array(buf)

    def place_array(self, a: np.ndarray) -> tuple[int, int]:
        """(slot, offset) of a static array in the argument pool (shared by every instance)."""
        return ARGS, self._pool_add(a)

    @staticmethod
    def rts_task(node: PlanNode, args: TaskArgs) -> Task:
        """A task of a control node's rows that is no node's launch (labels.py: copies, loop counters)."""
        return Task(node, args)

    def _control(self) -> tuple[dict, int]:
        """{step: rows} of the static control nodes (labels.py), and the bytes of the control region; the
        activated streams' tables (activation.py), the counted lines, the events activation pruned."""
        rows, at, ids = {}, 0, Labels()
        for n in self.plan.nodes:
            if n.bodies and not host_task(n):   # (a static piece is a host task: host.py)
                rows[n.step], need = labels.expand(self, n, dataclasses.replace(self.where, base=at), ids)
                at = align_up(at + need)
        self.activated, self.n_lines, self.pruned_events = ids.activated, ids.lines, ids.pruned
        return rows, at

    def producer_stream(self, t: int) -> int | None:
        """The stream of the node that produces tensor t (None: an input or a constant)."""
        return next((n.stream for n in self.plan.nodes if t in n.outputs), None)

    @staticmethod
    def _threads_allowed() -> bool:
        return native.AVAILABLE and os.environ.get("GE_V1_STREAMS") != "0"

    def _check_control(self) -> None:
        """Control rows are native (a jump cannot cross a call from Python), after their thunks compiled."""
        for step, rows in (*self.control.items(), *self.activated):
            bad = next((r for r in rows if isinstance(r, Task) and r.sig is None), None)
            if bad is not None:
                node = self.plan.nodes[step]
                raise GEError(f"runtime_v1 cannot run {node.op_type} node '{node.name}' from its task tables: its "
                              f"task '{bad.node.name}' has no native encoding ({bad.reason}); use runtime='v2'")

    def _pool_add(self, a: np.ndarray) -> int:
        off = self._pool_bytes
        chunk = np.ascontiguousarray(a).tobytes()
        self._pool.append((off, chunk))
        self._pool_bytes += -(-max(len(chunk), 1) // ARG_ALIGN) * ARG_ALIGN
        return off

    # -- Step 4 --------------------------------------------------------------------------------
    def _thunks(self) -> dict:
        addr = {}
        tasks = self.tasks + [c for cs in self.cleans.values() for c in cs] + [
            r for _, rows in (*self.control.items(), *self.activated) for r in rows if isinstance(r, Task)]
        sigs = list(dict.fromkeys(t.sig for t in tasks if t.sig is not None))
        # the first load of a kernel library compiles every thunk (seconds each): told to the CLI's bar
        with progress.step("compiling kernels", len(sigs)) as advance:
            ahead = compile_ahead([ThunkJob(s) for s in sigs], advance, self.plan.options.compile_workers,
                                  progress.noter())   # a cold cache: worker processes compile beside this one
            for sig in sigs:
                known = thunks.loaded(sig)
                try:
                    addr[sig] = thunks.thunk_address(sig)
                except ThunkError as e:
                    addr[sig] = None
                    self.thunk_errors[f"{sig.module}.{sig.name}"] = str(e)
                if ThunkJob(sig) not in ahead:
                    advance(sig.name, None if known else thunks.from_cache(sig))
        for task in tasks:
            if task.sig is not None and addr[task.sig] is None:
                task.args.reason = self.thunk_errors[f"{task.sig.module}.{task.sig.name}"]
                task.args.sig = None
        return addr

    def _tables(self, addr: dict) -> tuple[StreamTables, ...]:
        """Step 4: the tables: one per plan stream when the AI cores pull the streams (dispatch.py), else one per
        stream thread; in each, per step its waits, its task, its records."""
        cores = dispatch_cores(self.plan) if self._threads_allowed() and not (self.control or self.activated) \
            and os.environ.get("GE_V1_DISPATCH") != "0" else 0
        self.dispatch_cores = 0
        if 2 <= cores <= MAX_CORES:
            tables = self._build(addr, len({n.stream for n in self.plan.nodes}))
            if all(not st.fallback and set(st.addrs[st.addrs < 0].tolist()) <= {RECORD, WAIT} for st in tables):
                self.dispatch_cores = cores
                return tables
            # else stream threads: a task run from Python cannot be called from the cores' native loop
        threads = stream_threads(self.plan)
        # host tasks: one thread in plan order (a static piece's node has no events to the nodes after it)
        if threads < 2 or not self._threads_allowed() or self.host_tasks:
            threads = 1  # one stream (or the switch): every task in plan order, no events
        return self._build(addr, threads)

    def _build(self, addr: dict, threads: int) -> tuple[StreamTables, ...]:
        self.events = cross_thread_events(self.plan, threads)
        # flags are indexed by event id; a multiplexed id's k-th use in run r is the value r * stride + k;
        # the counted lines of activated streams (sink.SIGNAL / AWAIT) follow
        self.lines0 = max((e.id for e in self.events), default=-1) + 1
        self.n_events = self.lines0 + self.n_lines
        self.event_stride, uses = event_uses(self.events)
        task_of = {t.node.step: t for t in self.tasks}
        encoder = Encoder(addr, self.lines0)
        tables = []
        programs = thread_programs(self.plan, threads) or [()]   # a plan of no node: one empty table
        for k, program in enumerate(programs):
            rows, track = [], {}
            for step, waits, records in program:
                first = len(rows)
                rows += [Wait(e, uses["wait", step, e]) for e in waits]
                rows += self.cleans.get(step, [])
                if step in task_of:
                    rows.append(task_of[step])
                if step in self.host_tasks:
                    rows.append(self.host_tasks[step])
                rows += self.control.get(step, [])
                rows += [Record(e, uses["record", step, e]) for e in records]
                track.update((id(r), self.plan.nodes[step].stream) for r in rows[first:])
            tables.append(encoder.table(k, rows, track))
        for _, rows in self.activated:   # a thread each; they wait for their activation
            tables.append(encoder.table(len(tables), rows, {}))
        self.itab, self.ftab = encoder.finish()
        return tuple(tables)

    # -- introspection ---------------------------------------------------------------------------
    @property
    def native_tasks(self) -> int:
        return sum(t.sig is not None for t in self.tasks)

    @property
    def fallback_tasks(self) -> int:
        return sum(t.sig is None for t in self.tasks)

    @property
    def uses_cores(self) -> bool:
        """Some native task has block_dim > 1: its stream threads need launch slots on the AI cores."""
        return any(int(st.blocks.max(initial=1)) > 1 for st in self.streams)

    def fallback_reasons(self) -> dict[str, str]:
        """{node name: why it is not native}."""
        return {t.node.name: t.reason for t in self.tasks if t.sig is None}


def copy_weights(plan, buf: np.ndarray) -> None:
    """The plan's constants into a weights segment, each at its planned offset."""
    for t, a in plan.constants.items():
        if a.dtype.hasobject:   # a string constant: host tasks read it from the plan (host.py)
            continue
        off = plan.memory.tensors[t].offset
        b = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
        buf[off:off + b.size] = b


def feature_bytes(plan: Plan) -> int:
    """Bytes of the feature-map slot: the feature map (workspaces included), then the atomic region."""
    seg = plan.memory.segments
    return align_up(seg["feature_map"]) + int(seg.get("atomic", 0))


def _check_static(plan: Plan) -> None:
    for n in plan.nodes:
        # (host tasks, static pieces among them, run from the tables: host.py; the others are named below)
        why = static_control_reason(plan, n) if n.kernel.host is not None and not host_task(n) else ""
        if why:   # static If / Loop become label tasks (labels.py); the rest runs host-driven on runtime_v2
            raise GEError(f"runtime_v1 cannot run {n.op_type} node '{n.name}' from its task tables: {why}; use "
                          "runtime='v2' (or 'auto', which picks it)")
    dyn = [n for n in plan.nodes if n.is_dynamic and not n.bodies and not host_task(n)]
    if dyn:
        n = dyn[0]
        raise GEError(f"runtime_v1 runs static plans only: {n.op_type} node '{n.name}' (and {len(dyn) - 1} "
                      "more) has shapes known only at run time; use runtime='v2' (ge.Session(..., "
                      "runtime='v2')), which runs dynamic shapes")
    if plan.memory is None:
        raise GEError("runtime_v1 needs the plan's static memory plan (plan.memory is None)")
