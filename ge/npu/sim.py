"""A modelled NPU clock: replay a schedule (streams + events) and report NPU time and AICORE utilization.

The model (an Ascend-910-like default, every number configurable in `NpuModel`):
- A task first pays its engine's launch latency on its stream (task dispatch; no compute units held), then
  runs its work phase on `blocks` units of its engine: its work is split into blocks of at least
  `min_block_s` seconds each (the tiling granularity), at most `units` blocks. Alone, the work phase takes
  max(flops / (blocks * unit rate), bytes / HBM bandwidth); cube work (conv, matmul) runs at the cube rate,
  the rest at the vector rate.
- Concurrent tasks share: when the running tasks of an engine ask for more units than it has, or all
  running tasks for more bandwidth than HBM gives, every one of them slows down in proportion
  (processor sharing, a fluid simulation between events).
- A stream runs its tasks in order; a task waiting on events starts `event_s` after the last record.
  GE_LOCAL (no-task) nodes take no time.
Reported: makespan, AICORE utilization (time-averaged fraction of AI cores computing: what the seeds call
compute utilization), AICORE busy fraction, achieved FLOP/s, per-stream busy time. `compare` runs one
plan on a single stream (its order, no events) and on its own streams and events, so a model is compiled
once. A task's `block_dim` (its launch's, or the tiling asked of the kernels for the modelled device's
cores: `retile`) caps how many AI cores its work phase may use.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .cost import node_work
from .engines import AICORE, AICPU, DVPP, GE_LOCAL, HCCL
from .ring import HCCS_RING, Ring


@dataclass(frozen=True)
class EngineModel:
    units: int               # parallel units (AI cores, AICPU cores, ...)
    rate: float              # cube FLOP/s per unit (or bytes/s for DVPP and HCCL)
    vector_rate: float       # vector FLOP/s per unit
    launch_s: float          # dispatch latency per task, serial on its stream
    min_block_s: float = 2e-6


@dataclass(frozen=True)
class NpuModel:
    engines: dict = field(default_factory=lambda: {
        AICORE: EngineModel(32, 8e12, 0.5e12, 3e-6),         # 256 TFLOPS fp16 cube, 16 TFLOPS vector
        AICPU: EngineModel(4, 2e10, 2e10, 10e-6),
        DVPP: EngineModel(1, 2e9, 2e9, 10e-6),                # bytes/s of decoded / resized images
        HCCL: EngineModel(1, 25e9, 25e9, 10e-6),              # bytes/s over the interconnect
    })
    hbm_bandwidth: float = 1.2e12
    event_s: float = 1e-6

    def engine(self, name: str) -> EngineModel:
        return self.engines.get(name) or self.engines[AICORE]


ASCEND_910 = NpuModel()


@dataclass(frozen=True, slots=True)
class SimTask:
    name: str
    engine: str
    stream: int
    flops: float = 0.0
    bytes: float = 0.0
    cube: bool = False
    block_dim: int = 0   # blocks the launch is tiled into (0: as many as the work fills, up to the units)
    seconds: float = 0.0  # a collective's work phase on the modelled ring (ring.py), instead of its flops


@dataclass(frozen=True)
class SimResult:
    makespan_s: float
    aicore_utilization: float   # time-averaged fraction of AI cores computing
    aicore_busy: float          # fraction of time some AICORE task computes
    flops_per_s: float
    stream_busy_s: dict
    num_streams: int
    num_events: int
    start_s: tuple = ()         # per task
    end_s: tuple = ()

    def summary(self) -> str:
        return (f"{self.num_streams} stream(s), {self.num_events} events: {self.makespan_s * 1e6:.1f} us, "
                f"AICORE utilization {self.aicore_utilization:.1%}, busy {self.aicore_busy:.1%}")


def tasks_from_plan(plan, block_dims=None, single_stream: bool = False, devices: int = 0,
                    ring: Ring = HCCS_RING) -> list[SimTask]:
    """One task per plan node (read, not imported: plan.nodes, plan.tensors); `block_dims` per step
    overrides the launches' (a tiling for another device); `single_stream` puts every task on stream 0;
    collectives (HCCL) take their time on `ring` of `devices` devices (0: the plan's device_count)."""
    devices = devices or getattr(plan.options, "device_count", 1)
    tasks = []
    for n in plan.nodes:
        local = n.engine == GE_LOCAL or n.no_task
        w = None if local else node_work(n.op_type, n.attrs, [plan.tensors[t] if t >= 0 else None for t in n.inputs],
                                         [plan.tensors[t] for t in n.outputs])
        bd = block_dims[n.step] if block_dims is not None else (n.launch.block_dim if n.launch else 0)
        secs = 0.0
        if n.engine == HCCL and not local:
            in_bytes = sum(plan.tensors[t].nbytes or 0 for t in n.inputs if t >= 0)
            secs = ring.collective_s(n.op_type, in_bytes, devices)
        tasks.append(SimTask(n.name, GE_LOCAL if local else n.engine, 0 if single_stream else n.stream,
                             w.flops if w else 0.0, w.bytes if w else 0.0, bool(w and w.cube), bd, secs))
    return tasks


def simulate(tasks, events=(), model: NpuModel = ASCEND_910, tracer=None) -> SimResult:
    """Replay tasks (in execution order, each with its stream) and events (record_after, wait_before)."""
    replay = _Replay(list(tasks), list(events), model)
    replay.run()
    if tracer is not None:
        replay.trace(tracer)
    return replay.result()


class _Replay:
    """The fluid simulation: between two moments where something changes, every task runs at a fixed rate."""

    def __init__(self, tasks, events, model):
        self.tasks, self.events, self.model = tasks, events, model
        self.waits: dict[int, list[int]] = {}
        for e in events:
            self.waits.setdefault(e.wait_before, []).append(e.record_after)
        self.queues: dict[int, list[int]] = {}
        for i, t in enumerate(tasks):
            self.queues.setdefault(t.stream, []).append(i)
        self.head = {s: 0 for s in self.queues}           # next task per stream
        self.stream_free = {s: 0.0 for s in self.queues}  # when the stream's previous task ended
        self.start, self.end = [0.0] * len(tasks), [math.inf] * len(tasks)
        self.running: dict[int, list] = {}  # task -> [remaining fraction, alone s, blocks, bw, launch end]
        self.now = self.core_time = self.busy_time = self.flops = 0.0

    def run(self) -> None:
        while True:
            for s in self.queues:
                self._start_heads(s)
            if not self._advance():
                break
        if any(e == math.inf for e in self.end):
            raise RuntimeError("simulation deadlock: a task never became ready (an event waits on a later task?)")

    def _ready_at(self, s) -> float | None:
        """When the head task of stream s may start (None: no head, running, or an event not yet recorded)."""
        k = self.head[s]
        if k >= len(self.queues[s]):
            return None
        i = self.queues[s][k]
        deps = [self.end[r] for r in self.waits.get(i, ())]
        if i in self.running or math.inf in deps:
            return None
        return max([self.stream_free[s]] + [d + self.model.event_s for d in deps])

    def _start_heads(self, s) -> None:
        while (t0 := self._ready_at(s)) is not None and t0 <= self.now + 1e-15:
            i = self.queues[s][self.head[s]]
            task = self.tasks[i]
            self.start[i] = t0
            alone, blocks, bw = _work_phase(task, self.model)
            launch = 0.0 if task.engine == GE_LOCAL else self.model.engine(task.engine).launch_s
            if alone > 0.0:
                self.running[i] = [1.0, alone, blocks, bw, t0 + launch]
                return
            self.end[i] = self.stream_free[s] = t0 + launch   # no work phase: done after the launch
            self.head[s] += 1

    def _advance(self) -> bool:
        """Run to the next moment something changes (a task ends, a launch ends, a head becomes ready)."""
        now, tasks = self.now, self.tasks
        active = {i: r for i, r in self.running.items() if r[4] <= now + 1e-15}   # past their launch
        rates = _rates(tasks, active, self.model)
        finish = {i: now + r[0] * r[1] / rates[i] for i, r in active.items()}
        horizon = list(finish.values()) + [r[4] for r in self.running.values() if r[4] > now + 1e-15]
        horizon += [t for t in map(self._ready_at, self.queues) if t is not None and t > now + 1e-15]
        if not horizon:
            return False
        nxt = min(horizon)
        dt = nxt - now
        cores = sum(r[2] * rates[i] for i, r in active.items() if tasks[i].engine == AICORE)
        self.core_time += min(cores, self.model.engine(AICORE).units) * dt
        self.busy_time += dt if any(tasks[i].engine == AICORE for i in active) else 0.0
        for i, r in active.items():
            r[0] -= dt * rates[i] / r[1]
            if finish[i] <= nxt or r[0] <= 1e-12:
                self.end[i] = self.stream_free[tasks[i].stream] = nxt
                self.flops += tasks[i].flops
                del self.running[i]
                self.head[tasks[i].stream] += 1
        self.now = nxt
        return True

    def result(self) -> SimResult:
        makespan = max(self.end, default=0.0)
        per_stream: dict[int, float] = {}
        for i, t in enumerate(self.tasks):
            per_stream[t.stream] = per_stream.get(t.stream, 0.0) + self.end[i] - self.start[i]
        frac = (lambda x: x / makespan if makespan else 0.0)  # noqa: E731
        return SimResult(makespan, frac(self.core_time / self.model.engine(AICORE).units),
                         frac(self.busy_time), frac(self.flops), per_stream, len(self.queues),
                         len(self.events), tuple(self.start), tuple(self.end))

    def trace(self, tracer) -> None:
        for i, t in enumerate(self.tasks):
            tracer.add_slice(t.stream, f"stream {t.stream}", "kernel", t.name, self.start[i], self.end[i],
                             args={"engine": t.engine, "flops": t.flops})
        for e in self.events:
            src, dst = self.tasks[e.record_after].stream, self.tasks[e.wait_before].stream
            at_record, at_wait = self.end[e.record_after], self.start[e.wait_before]
            tracer.add_slice(src, f"stream {src}", "record", f"record e{e.id}", at_record, at_record, (e.id, 1))
            tracer.add_slice(dst, f"stream {dst}", "wait", f"wait e{e.id}", at_wait, at_wait, (e.id, 1))


def _work_phase(task: SimTask, model: NpuModel):
    """(seconds alone, blocks, bandwidth demand) of a task's work phase."""
    if task.engine == GE_LOCAL:
        return 0.0, 0, 0.0
    if task.seconds:
        return task.seconds, 1, 0.0
    em = model.engine(task.engine)
    rate = em.rate if (task.cube or task.engine in (DVPP, HCCL)) else em.vector_rate
    one_unit = task.flops / rate
    if task.engine in (DVPP, HCCL):
        return one_unit, 1, 0.0
    blocks = max(1, min(em.units, math.ceil(one_unit / em.min_block_s)))
    if task.block_dim:
        blocks = min(blocks, task.block_dim)
    alone = max(one_unit / blocks, task.bytes / model.hbm_bandwidth)
    return alone, blocks, (task.bytes / alone if alone else 0.0)


def _rates(tasks, active, model: NpuModel) -> dict:
    """Speed (1 = as fast as alone) of each task in its work phase, under unit and bandwidth sharing."""
    demand: dict[str, float] = {}
    bw = 0.0
    for i, r in active.items():
        demand[tasks[i].engine] = demand.get(tasks[i].engine, 0.0) + r[2]
        bw += r[3]
    bw_share = min(1.0, model.hbm_bandwidth / bw) if bw else 1.0
    return {i: min(1.0, model.engine(tasks[i].engine).units / demand[tasks[i].engine], bw_share)
            for i, r in active.items()}


def compare(plan, model: NpuModel = ASCEND_910, block_dims=None, devices: int = 0,
            tracer=None) -> tuple[SimResult, SimResult]:
    """(single stream, multi stream) modelled runs of one plan: its order on one stream with no events, and
    its own streams and events (traced on `tracer` when given); collectives on a ring of `devices`."""
    single = simulate(tasks_from_plan(plan, block_dims, single_stream=True, devices=devices), (), model)
    return single, simulate(tasks_from_plan(plan, block_dims, devices=devices), plan.events, model, tracer)
