"""The Plan: an immutable description of how to run a graph, produced by the compiler, read by runtimes.

The plan is the only contract between the compiler and the runtimes: its nodes (bound kernels and launches,
engines, streams), its sync events between streams, and its static memory plan are all defined here.

Names are kept for errors and dumps; runtimes work on the integer indices. A node's `launch` is bound at
compile time when all its shapes are static; a dynamic node (symbolic shapes, run-time shape values) has
`launch=None` and is prepared per run by runtime_v2. A static node whose kernel declares `alias` and
whose prepare gave no task is an alias: its output is a view of an input. A `no_task` node (a Concat laid
out in place by the memory plan) keeps its launch but runs nothing.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, Protocol, runtime_checkable

import numpy as np

from .ir.dtypes import short
from .kernels.host_tasks import is_host_task
from .kernels.registry import Launch, OpKernel
from .npu.engines import ENGINE_INFO, LABEL_OPS
from .npu.memory import IO_ALIGN
from .options import Options

INPUT, CONST, ACTIVATION = "input", "const", "activation"
# a static piece of a dynamic plan (ge/partition.py, GE's PartitionedCall): a host node whose one body ("f") is
# a static plan that runtime_v2 runs by runtime_v1's task sink (runtime_v2/sunk.py)
SUNK_OP, SUNK_DOMAIN = "PartitionedCall", "ge"


def sunk_plan(node) -> "Plan | None":
    """The static plan a PartitionedCall node runs (None for any other node)."""
    if node.op_type == SUNK_OP and node.domain == SUNK_DOMAIN and node.bodies:
        return node.bodies[0][1]
    return None


@dataclass(frozen=True, slots=True)
class SyncEvent:
    """An event between streams (ge.schedule.events): recorded on `src_stream` right after step
    `record_after`, waited for on `dst_stream` right before step `wait_before`. With event multiplexing
    (Options.event_multiplexing) several events share an id, one use after the other (event_uses)."""
    id: int
    record_after: int
    wait_before: int
    src_stream: int
    dst_stream: int


# -- the static memory plan (ge.memory), attached as `plan.memory` -----------------------------------
# Segments (each its own address space, offsets from 0):
# - weights:     constants, back to back, 512-aligned; never reused.
# - feature_map: activations and workspaces, reused across lifetimes (the arena runtimes allocate once).
# - fixed:       feature-map blocks of tasks that keep their load-time addresses (Options.fixed_address_ops):
#                reused among themselves, resident; the feature_map segment is then the refreshable part
#                (GE's fixed / refreshable feature memory, docs/ge-reference.md §2.11, §4.1, §8.7).
# - atomic:      outputs a kernel accumulates into (Launch.atomic): never reused; runtimes zero the segment
#                once per run before anything runs (GE's centralized AtomicAddrClean, atomicCleanPolicy 0).
# - io:          graph inputs and outputs (zero copy: the user's buffers in GE); never reused; produced outputs
#                first, then graph inputs by size ascending (GE's zero-copy layout).
# - variable:    state carried from run to run (Options.state_pairs: an output that is the next run's input,
#                a KV cache): per pair the input's block then the output's, never reused (GE's
#                VariableMemoryAssigner); the runtimes swap the two blocks' roles after every run.
# - dynamic:     not a segment: tensors with run-time shapes, allocated by runtime_v2 (offset None).
# Workspaces live in feature_map with a one-step life, as in GE.


def event_uses(events) -> tuple[int, dict]:
    """(stride, {(kind, step, id): k}) for events whose ids may repeat (ge.schedule.multiplex): the uses of
    one id, in record order, are k = 0, 1, ...; in run r the k-th record stores r * stride + k and its wait
    waits for that value, so one flag per id serves every use. kind is "record" (step = record_after) or
    "wait" (step = wait_before). Without repeats stride is 1 and every k is 0 (the value is the run)."""
    uses, count = {}, {}
    for e in sorted(events, key=lambda e: (e.record_after, e.wait_before)):
        k = count.get(e.id, 0)
        count[e.id] = k + 1
        uses["record", e.record_after, e.id] = uses["wait", e.wait_before, e.id] = k
    return max(count.values(), default=1), uses


def zero_copy_aligned(a: np.ndarray) -> bool:
    """GE's zero-copy rule for a caller's input or output buffer: bound as the tensor's memory only when its
    address is IO_ALIGN (32) byte aligned (docs/ge-reference.md §8.1: zero-copy memory is 32-byte aligned,
    and §2.2: GE's option reference asks the same of user I/O buffers used with input/output reuse).
    Both runtimes copy a buffer that fails it (the counters in their stats() say how often)."""
    return io_aligned(a.__array_interface__["data"][0])


def io_aligned(address: int) -> bool:
    """zero_copy_aligned's rule on an address already read (a run reads each input's once)."""
    return address % IO_ALIGN == 0


def fixed_address_steps(plan) -> frozenset:
    """Steps of the nodes whose tasks keep every address they were loaded with, feature map included
    (Options.fixed_address_ops by node name or op type, or the node attribute `_no_address_refresh`; GE:
    ATTR_NAME_IS_FIXED_ADDR_PRIOR): their blocks form the fixed segment, their graph I/O is copied."""
    names = set(plan.options.fixed_address_ops)
    return frozenset(n.step for n in plan.nodes
                     if n.name in names or n.op_type in names or n.attrs.get("_no_address_refresh"))


def no_zero_copy_steps(plan) -> frozenset:
    """Steps whose graph I/O is never bound zero copy: the fixed-address ones, and the tasks whose kernel
    contract says so (their engine's EngineInfo.address_refresh is False: the Hcom ops, as GE's
    HcclTaskInfo::Init calls DisableZeroCopy on its I/O). Those keep their feature-map blocks in the
    feature map: GE re-bases an HCCL task's feature-map addresses with the model (IsFeatureBaseRefreshable)."""
    return fixed_address_steps(plan) | frozenset(
        n.step for n in plan.nodes
        if not ENGINE_INFO[n.engine].address_refresh and n.launch is not None and not n.no_task)


def copy_only_io(plan) -> frozenset:
    """Graph inputs and outputs (their I/O blocks' root tensors) that a task keeping its load-time addresses
    reads or writes (Options.fixed_address_ops by node name or op type, or the node attribute
    `_no_address_refresh`): GE copies the I/O of peers whose task cannot take address refresh, never zero
    copy (docs/ge-reference.md §2.9, §4.1 DisableZeroCopy; §8.2: HCOM and similar ops take no address refresh)."""
    fixed = [plan.nodes[s] for s in sorted(no_zero_copy_steps(plan))]
    if not fixed or plan.memory is None:
        return frozenset()
    index = {t.name: t.index for t in plan.tensors}
    root = [index[m.alias_of] if m.alias_of else m.index for m in plan.memory.tensors]
    io = {root[t] for t in (*plan.inputs, *plan.outputs)}
    return frozenset(root[t] for n in fixed for t in (*n.inputs, *n.outputs) if t >= 0 and root[t] in io)


def aligned_empty(shape, dtype) -> np.ndarray:
    """An uninitialised array that passes zero_copy_aligned (64-byte aligned). numpy's own allocations are
    16-byte aligned (here mostly 16 or 48 mod 64), so a caller who wants zero copy allocates with this."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + 64, np.uint8)
    start = -raw.ctypes.data % 64
    return raw[start:start + nbytes].view(dtype).reshape(shape)


@dataclass(frozen=True, slots=True)
class TensorMemory:
    index: int
    name: str
    segment: str              # weights | feature_map | atomic | io | dynamic
    offset: int | None        # inside the segment; None for dynamic (and symbolic-shaped io)
    bytes: int | None         # the tensor's own bytes
    alias_of: str | None      # the tensor whose block this one is a view of
    first: int | None = None  # feature map: first and last step of the symbol's life
    last: int | None = None
    part_of: str | None = None  # a no-task Concat's output this tensor is a slice of (at `offset`)


@dataclass(frozen=True)
class MemoryStats:
    feature_map_bytes: int
    no_reuse_bytes: int       # sum of every feature-map request, 512-aligned
    lower_bound_bytes: int    # max over steps of live bytes on this order
    assigner: str             # the winner (or the only one run)
    totals: Mapping[str, int]  # bytes per assigner tried
    seconds: float            # planning time

    @property
    def ratio(self) -> float:
        """Planned / lower bound (1.0 is optimal for this order)."""
        return self.feature_map_bytes / self.lower_bound_bytes if self.lower_bound_bytes else 1.0

    @property
    def reduction(self) -> float:
        """Fraction saved versus no reuse."""
        return 1 - self.feature_map_bytes / self.no_reuse_bytes if self.no_reuse_bytes else 0.0


@dataclass(frozen=True)
class MemoryPlan:
    tensors: tuple[TensorMemory, ...]                 # by tensor index
    workspaces: tuple[tuple[tuple[int, int], ...], ...]  # per step: (offset, bytes) per workspace
    segments: Mapping[str, int]                       # segment -> bytes
    stats: MemoryStats
    fixed_workspaces: frozenset = frozenset()         # steps whose workspaces are in the fixed segment

    def summary(self) -> str:
        s = self.stats
        return (f"memory: no reuse {s.no_reuse_bytes / 2**20:.2f} MiB -> planned "
                f"{s.feature_map_bytes / 2**20:.2f} MiB ({s.reduction:.1%} saved; {s.ratio:.3f}x the live "
                f"lower bound {s.lower_bound_bytes / 2**20:.2f} MiB) by {s.assigner}")


@dataclass(frozen=True, slots=True)
class PlanTensor:
    index: int
    name: str
    dtype: np.dtype
    shape: tuple  # ints, or str for symbolic dims
    kind: str     # input | const | activation
    value_kind: str = "tensor"  # | sequence | optional | optional_sequence (host values; dtype: the element's)

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)

    @property
    def nbytes(self) -> int | None:
        # math.prod: exact (np.prod in int64 wraps on hostile dims) and ~10x faster on a short tuple (the
        # memory planner asks for it per tensor: 10,000-input nodes)
        return math.prod(self.shape) * self.dtype.itemsize if self.is_static else None


@dataclass(frozen=True, slots=True)
class PlanNode:
    step: int
    name: str
    op_type: str
    domain: str
    opset: int
    attrs: Mapping
    inputs: tuple[int, ...]   # tensor indices, -1 for an absent optional input
    outputs: tuple[int, ...]
    kernel: OpKernel
    launch: Launch | None
    is_dynamic: bool
    engine: str
    stream: int = 0
    # the memory plan does the node's work: a Concat whose inputs are written straight into their slices of
    # its output (GE's no-task node with continuous input memory); runtimes skip it, `launch` is kept
    no_task: bool = False
    # control flow (If/Loop/Scan): per body (attribute name, its own Plan, how many of its inputs are the
    # captured outer values: the node's last inputs, body after body); the node is dynamic, runs on the host
    bodies: tuple = ()

    @property
    def is_alias(self) -> bool:
        return self.launch is None and not self.is_dynamic

    @property
    def may_alias(self) -> bool:
        """The output may be a view of an input (an alias now, or possibly once shapes are known)."""
        return self.kernel.alias is not None and self.launch is None


@dataclass(frozen=True)
class Plan:
    name: str
    tensors: tuple[PlanTensor, ...]
    nodes: tuple[PlanNode, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    constants: Mapping[int, np.ndarray]
    options: Options = field(default_factory=Options)
    memory: MemoryPlan | None = None  # static memory plan (ge.memory), set by the compiler
    events: tuple[SyncEvent, ...] = ()  # sync events between streams; empty on one stream
    single_stream_reason: str | None = None  # why the compiler kept one stream (None: multi-stream allowed)

    def __post_init__(self):
        object.__setattr__(self, "constants", MappingProxyType(dict(self.constants)))

    @property
    def is_dynamic(self) -> bool:
        return any(n.is_dynamic for n in self.nodes)

    @property
    def states(self) -> tuple[tuple[int, int], ...]:
        """(input tensor, output tensor) per Options.state_pairs entry (output name, input name): the output
        of one run is that input of the next (ge.memory.variables checks the pairs)."""
        index = {t.name: t.index for t in self.tensors}
        return tuple((index[i], index[o]) for o, i in self.options.state_pairs if i in index and o in index)

    @property
    def num_streams(self) -> int:
        return len({n.stream for n in self.nodes}) if self.nodes else 0

    def tensor(self, name: str) -> PlanTensor:
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(name)

    def summary(self) -> str:
        lines = [f"plan {self.name}: {len(self.nodes)} nodes, {len(self.tensors)} tensors, "
                 f"{sum(c.nbytes for c in self.constants.values())} weight bytes",
                 f"  streams: {self.num_streams}, events: {len(self.events)}" + (
                     f" (single stream: {self.single_stream_reason})" if self.single_stream_reason else "")]
        waits, records = {}, {}
        for e in self.events:
            waits.setdefault(e.wait_before, []).append(f"wait e{e.id}")
            records.setdefault(e.record_after, []).append(f"record e{e.id}")
        for n in self.nodes:
            outs = ", ".join(f"%{self.tensors[o].name}:{short(self.tensors[o].dtype)}"
                             f"{list(self.tensors[o].shape)}" for o in n.outputs)
            ins = ", ".join("None" if i < 0 else f"%{self.tensors[i].name}" for i in n.inputs)
            tag = " (alias)" if n.is_alias else " (dynamic)" if n.is_dynamic else " (no task)" if n.no_task else ""
            if sunk_plan(n) is not None:   # a static piece: its own plan, on runtime_v1's task sink
                tag = f" (static piece of {len(sunk_plan(n).nodes)} nodes: sunk)"
            elif n.bodies:   # control flow: label tasks on runtime_v1, or host-driven
                tag = f" (bodies {', '.join(a for a, _, _ in n.bodies)}: " + (
                    "host-driven)" if static_control_reason(self, n) else "label tasks)")
            sync = waits.get(n.step, []) + records.get(n.step, [])
            tag += f"  [{', '.join(sync)}]" if sync else ""
            lines.append(f"  {n.step:4d} s{n.stream} {n.engine:6s} {outs} = {n.op_type}({ins}){tag}")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """The plan as plain data (the schema is documented in docs/memory.md, "Plan JSON")."""
        mem = self.memory
        name = lambda i: None if i < 0 else self.tensors[i].name  # noqa: E731
        nodes = []
        for n in self.nodes:
            ws = mem.workspaces[n.step] if mem else ()
            nodes.append({"name": n.name, "op_type": n.op_type, "step": n.step, "stream": n.stream,
                          "engine": n.engine, "no_task": n.no_task, "inputs": [name(i) for i in n.inputs],
                          "outputs": [name(o) for o in n.outputs],
                          "workspaces": [{"offset": o, "bytes": b} for o, b in ws]})
        tensors = []
        for t in self.tensors:
            m = mem.tensors[t.index] if mem else None
            tensors.append({"name": t.name, "dtype": t.dtype.name, "shape": list(t.shape), "bytes": t.nbytes,
                            "segment": m.segment if m else None, "offset": m.offset if m else None,
                            "alias_of": m.alias_of if m else None, "part_of": m.part_of if m else None,
                            "first": m.first if m else None, "last": m.last if m else None})
        events = [{"id": e.id, "record_after": self.nodes[e.record_after].name,
                   "wait_before": self.nodes[e.wait_before].name, "src_stream": e.src_stream,
                   "dst_stream": e.dst_stream} for e in self.events]
        out = {"name": self.name, "nodes": nodes, "events": events, "num_streams": self.num_streams,
               "single_stream_reason": self.single_stream_reason, "tensors": tensors,
               "inputs": [name(i) for i in self.inputs], "outputs": [name(i) for i in self.outputs],
               "segments": dict(mem.segments) if mem else {}, "memory": None}
        if mem:
            s = mem.stats
            out["memory"] = {"feature_map_bytes": s.feature_map_bytes, "no_reuse_bytes": s.no_reuse_bytes,
                             "lower_bound_bytes": s.lower_bound_bytes, "assigner": s.assigner,
                             "assigners": dict(s.totals), "topo_sorting_mode": self.options.topo_sorting_mode,
                             "disable_reuse_memory": self.options.disable_reuse_memory}
        return out

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent)


# -- static control flow: which control nodes runtime_v1's task sink runs from its tables -------------
# (runtime_v1/labels.py, GE's label tasks). A static If, Loop or Scan does: every value a tensor of static
# shape, each body value the same dtype and shape as the outer value it stands for (the label tasks read and
# write them in place: a mismatch would overrun a buffer, so an offline plan is held to it too), bodies that
# are static plans (their control nodes recursively), Scan's axes 0 (its rows contiguous). Such a node's
# outputs get the static memory plan like any task's (ge.memory.lifetime); runtime_v2 runs it host-driven;
# `runs_on_v1` is what runtime="auto" asks.

def static_control_reason(plan: Plan, node: PlanNode) -> str:
    """Why the task sink cannot run control node `node` from its tables ("" when it can)."""
    what = f"{node.op_type} node '{node.name}'"
    if sunk_plan(node) is not None:
        return f"{what} is a static piece of a dynamic plan (runtime_v2 runs it on runtime_v1's task sink)"
    if node.op_type not in LABEL_OPS or not node.bodies:
        return f"{what} runs host-driven (sequences and optionals have no label tasks)"
    if node.op_type == "Scan" and node.opset < 9:
        return f"{what}: Scan-8 (a batch axis, sequence lengths) runs host-driven"
    outer = [plan.tensors[t] for t in (*node.inputs, *node.outputs) if t >= 0]
    bad = next((t for t in outer if t.value_kind != "tensor" or not t.is_static), None)
    if bad is not None:
        return f"{what}: value '{bad.name}' is a {bad.value_kind} of shape {list(bad.shape)}, not a static tensor"
    at = len(node.inputs) - sum(c for _, _, c in node.bodies)
    for attr, body, n_cap in node.bodies:
        if body.memory is None:
            return f"{what}: its {attr} has no static memory plan"
        bad = next((t for t in body.tensors if t.value_kind != "tensor" or not t.is_static), None)
        if bad is not None:
            return f"{what}: value '{bad.name}' of its {attr} is not a static tensor"
        pairs = _pairs(plan, node, body, node.inputs[at:at + n_cap])
        at += n_cap
        if isinstance(pairs, str):
            return f"{what}: {pairs}"
        for name, got, allowed in pairs:
            if got not in allowed:
                return f"{what}: its {attr}'s {name} is {got}, the node's {allowed[0]}"
        for n in body.nodes:
            if n.bodies:
                why = static_control_reason(body, n)
                if why:
                    return why
            elif n.is_dynamic:
                return f"{what}: {n.op_type} node '{n.name}' of its {attr} has shapes known only at run time"
    return ""


def _spec(p, t):
    return None if t < 0 else (p.tensors[t].dtype, tuple(p.tensors[t].shape))


def _scalar(dt):
    return [(np.dtype(dt), ()), (np.dtype(dt), (1,))]


def _pairs(plan, node, body, caps):
    """[(what, the body's (dtype, shape), the allowed ones)] for every value the node and `body` share, or why
    they cannot share them."""
    ins, outs = list(body.inputs), list(body.outputs)
    n_cap = len(caps)
    pairs = [(f"captured input {k}", _spec(body, t), [_spec(plan, c)])
             for k, (t, c) in enumerate(zip(ins[len(ins) - n_cap:], caps))]
    formal = ins[:len(ins) - n_cap]
    if node.op_type == "If":
        if len(outs) != len(node.outputs):
            return f"a branch has {len(outs)} outputs, the node {len(node.outputs)}"
        pairs.append(("condition", _spec(plan, node.inputs[0]), _scalar(np.bool_)))
        return pairs + [(f"output {k}", _spec(body, o), [_spec(plan, t)])
                        for k, (o, t) in enumerate(zip(outs, node.outputs)) if t >= 0]
    if node.op_type == "Loop":
        lead, n = 2, len(formal) - 2          # (iteration, condition, carried...) -> (condition, carried, scans)
        if n < 0 or len(outs) < 1 + n or len(node.outputs) != len(outs) - 1 or len(node.inputs) < 2 + n:
            return "its body's inputs and outputs do not match the node's"
        pairs += [("iteration number", _spec(body, ins[0]), _scalar(np.int64)),
                  ("condition", _spec(body, ins[1]), _scalar(np.bool_)),
                  ("condition out", _spec(body, outs[0]), _scalar(np.bool_))]
        pairs += [(name, _spec(plan, t), _scalar(dt)) for name, t, dt in (
            ("trip count", node.inputs[0], np.int64), ("condition input", node.inputs[1], np.bool_)) if t >= 0]
        outs = outs[1:]
    else:                                     # Scan: (states..., rows of the scan inputs) -> (states, scan rows)
        m = int(node.attrs.get("num_scan_inputs", 0))
        lead, n = 0, len(formal) - m
        if n < 0 or len(outs) < n or len(node.outputs) != len(outs) or len(node.inputs) != len(formal) + n_cap:
            return "its body's inputs and outputs do not match the node's"
        if any(int(a) != 0 for key in ("scan_input_axes", "scan_output_axes") for a in node.attrs.get(key) or ()):
            return "a scan axis other than 0 runs host-driven (its rows are not contiguous)"
        lengths = {plan.tensors[t].shape[0] if plan.tensors[t].shape else None for t in node.inputs[n:n + m]}
        rows = {plan.tensors[t].shape[0] for t in node.outputs[n:] if t >= 0 and plan.tensors[t].shape}
        if len(lengths) != 1 or None in lengths or not rows <= lengths:
            return f"its scan inputs and outputs disagree in length ({sorted(map(str, lengths | rows))})"
        for j, (t, b) in enumerate(zip(node.inputs[n:n + m], formal[n:])):
            dt, shape = _spec(plan, t)
            pairs.append((f"scan input {j} row", _spec(body, b), [(dt, shape[1:])]))
    for k in range(n):
        want = [_spec(plan, node.inputs[lead + k])]
        pairs += [(f"carried value {k}", _spec(body, formal[lead + k]), want),
                  (f"carried value {k} out", _spec(body, outs[k]), want)]
        if node.outputs[k] >= 0:
            pairs.append((f"output {k}", _spec(plan, node.outputs[k]), want))
    for j, (o, t) in enumerate(zip(outs[n:], node.outputs[n:])):
        if t >= 0:
            dt, shape = _spec(plan, t)
            pairs.append((f"scan output {j} row", _spec(body, o), [(dt, shape[1:])]))
    return pairs


def host_driven(plan: Plan) -> list:
    """The nodes runtime_v2 drives from the host: dynamic ones, not the static pieces it sinks (sunk_plan)."""
    return [n for n in plan.nodes if n.is_dynamic and sunk_plan(n) is None]


def host_task(node) -> bool:
    """A node runtime_v1 runs as a host task (runtime_v1/host.py): a string or ONNX-ML host op
    (ge/kernels/host_tasks.py), or a static piece (PartitionedCall)."""
    return (not node.bodies and is_host_task(node.kernel)) or sunk_plan(node) is not None


def host_only(t: "PlanTensor") -> bool:
    """A value only host tasks can hold: Python objects (strings), a sequence or map, or a size the data decides."""
    return t.kind != CONST and (t.dtype.hasobject or t.value_kind != "tensor" or not t.is_static)


def runs_on_v1(plan: Plan) -> bool:
    """The task sink can run every node: static, static control flow, or a host task; and no task reads a value
    only host tasks can hold (a string tensor, a length the data decides)."""
    for n in plan.nodes:
        if host_task(n):
            continue
        if n.is_dynamic and not (n.bodies and not static_control_reason(plan, n)):
            return False
        if any(t >= 0 and host_only(plan.tensors[t]) for t in (*n.inputs, *n.outputs)):
            return False
    return True


@dataclass(frozen=True)
class GearPlans:
    """One static plan per batch gear (Options.dynamic_batch) of a model whose inputs share the symbolic
    batch dim `symbol`, or per dims gear (Options.dynamic_dims: `dims` names the dims that vary, each gear
    is their sizes in that order, `symbol` is ""). ge.compiler.compile_gears; runtime_v1/gears.py runs them."""
    symbol: str
    plans: Mapping                         # gear (batch int, or dims sizes tuple) -> static plan
    inputs: tuple[PlanTensor, ...]         # as the model declares them: the batch dim is `symbol`
    outputs: tuple[PlanTensor, ...]        # batched ones have `symbol` as their leading dim
    batched: tuple[bool, ...]              # per output: leading dim is the batch (sliced to the real batch)
    dims: tuple[tuple[str, int], ...] = ()  # dims gears: (input name, axis) of each of input_shape's -1s
    fallback: Plan | None = None           # dims gears: the dynamic plan for shapes no gear matches (v2)

    @property
    def gears(self) -> tuple[int, ...]:
        return tuple(self.plans)


@runtime_checkable
class Executor(Protocol):
    """What a runtime gives `ge.Session` for a loaded plan (runtime_v1 and runtime_v2 implement it; each
    runtime package has `load(plan | GearPlans) -> Executor`). Feeds are {input tensor index: array}."""
    binds_outputs: bool   # run() may take outputs={output position: array} and compute into them

    def run(self, feeds: dict, outputs: dict | None = None) -> list[np.ndarray]: ...

    def run_traced(self, feeds: dict, tracer) -> list[np.ndarray]: ...

    def stats(self) -> dict: ...

    def allocator_stats(self) -> dict: ...

    def empty_cache(self) -> None: ...

    def close(self) -> None: ...

    @property
    def stream_threads(self) -> int: ...
