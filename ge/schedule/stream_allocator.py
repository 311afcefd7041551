"""Logical stream assignment on an execution order, after GE's LogicalStreamAllocator (hicann/ge:
LogicalStreamAllocator::RunPasses).

Works node by node (GE works on same-engine clusters; a node is the finest cluster). Positions in the
order are the clock; `preds`/`succs` are data edges between positions.

Step 0 (AssignByLabelPass): nodes with a stream label (`_stream_label` attribute or Options.stream_labels)
        get one fresh stream per distinct label, which nothing else reuses (GE: USER_STREAM_LABEL and
        StreamLabel before the engine rules; a labelled predecessor is not reusable).
Step 1 (IndependentStreamPass): each independent engine (HCCL) gets one stream of its own for all its
        unlabelled nodes.
Step 2 (AssignByDependencyPass): for each node in order, a predecessor p is reusable when p is not on an
        independent stream, p has no *other* successor of p's own engine that could run in parallel with the
        node (GE: no other such successor at all; one that depends on the node, like the residual input of
        a ResNet block's last conv, cannot run in parallel with it, so here it does not count; the rule is
        waived under memory_priority, as GE does), and either p has the node's engine, the node's engine
        may attach (AICPU, DVPP, GE_LOCAL), or p's stream already carries the node's engine. The
        reusable predecessor of the same engine, then lowest engine cost, then latest in order wins. Else
        (beyond GE, which round-robins) a stream whose last node is an ancestor of this one: it is idle by
        the time this node can start, so no parallelism is lost (one ending at a predecessor first: no event).
        Else a new stream, up to `max_streams` in all; past that, the least loaded (fewest nodes, lowest id).
        Per-engine caps (GE's max_parallel_num, Options.stream_max_parallel_num): an engine that already has
        its cap of new streams gets one of them round robin instead (GE's AssignNewStream). ge's default
        mode "auto" caps only the engines named; mode "engine" is GE's default, 1 stream per engine unless
        named (Options.stream_parallel_mode; docs/streams.md has the measured choice).
Step 2b (UpdateForParallelGroupPass): unlabelled nodes with a parallel group (`_parallel_group` attribute or
        Options.parallel_groups) that share a stream move to one new stream per (stream, group name).
Step 2c (AllReduceParallelPass, Options.hcom_parallel / ge.hcomParallel): the data descendants of every
        unlabelled AllReduce that are neither labelled nor collectives move from their stream to one new
        stream per old stream, which Step 4 leaves alone: a consumer waiting for an in-flight AllReduce then
        no longer holds up the compute behind it on its old stream (GE applies it to AllReduces with
        fusion > 0, GE's default; ge's default fusion is 0, so ge applies it to every AllReduce).
Step 3 (UpdateForSkippedEnginePass): an unlabelled no-task node (GE_LOCAL) whose neighbours all share a
        stream moves there.
Step 4 (OptimizeIneffectiveMultiStreamPass), for nodes with neither label nor group: a node none of whose neighbours shares its stream moves to a
        neighbour's stream S when the node of S just before it (by position) is one of its ancestors and the
        node of S just after it one of its descendants (GE: "no other node of S lies between its neighbours
        on S"; a node that data orders around it anyway is no obstacle). The move then adds no order the data
        does not impose, so no parallelism is lost, and events are saved. Repeated to a fixpoint; the stream
        holding most of the node's neighbours wins.
Step 5 (RefreshContinuousStreams): renumber streams densely, in order of first use.
Single stream when `enable_single_stream`, `max_streams == 1`, or the graph has dynamic shapes and neither
`enable_dynamic_shape_multi_stream` nor the environment's ENABLE_DYNAMIC_SHAPE_MULTI_STREAM=1 is set (GE's
default for dynamic-shape graphs, §3.3; with it ge assigns by the rules above, not GE's one per engine),
with the reason logged and returned. Control flow does not force one stream (GE does the opposite, §3.6): a
static If / Loop (static tensors out) is a node of a static graph, whose label tasks (runtime_v1/labels.py)
sit on its stream; control flow with outputs known only at run time runs host-driven and makes the graph
dynamic, which follows that rule. Each body, compiled into a plan of its own, gets streams of its own by
these rules. `enable_single_stream` with control flow is refused, as GE refuses it (PARAM_INVALID, §3.3).
"""
from __future__ import annotations

import bisect
import logging
import os
from dataclasses import dataclass

from ..errors import GEError
from ..npu.engines import CONTROL_FLOW_OPS, GE_LOCAL, LABEL_OPS, info

log = logging.getLogger("ge.schedule")


@dataclass(frozen=True)
class StreamAssignment:
    """Plain data: per position in the order, its stream, engine and the reason for its stream."""
    streams: tuple[int, ...]
    engines: tuple[str, ...]
    reasons: tuple[str, ...]
    num_streams: int
    single_stream_reason: str | None = None
    moved: int = 0            # nodes moved by the ineffective-multi-stream pass
    names: tuple[str, ...] = ()

    def to_text(self) -> str:
        """One line per node (the golden form): position, stream, engine, name, reason."""
        head = f"{self.num_streams} stream(s)" + (
            f", single stream: {self.single_stream_reason}" if self.single_stream_reason else "")
        names = self.names or tuple(f"#{i}" for i in range(len(self.streams)))
        lines = [head] + [f"{i:4d} s{s} {e:8s} {n}  # {r}" for i, (s, e, n, r) in
                          enumerate(zip(self.streams, self.engines, names, self.reasons))]
        return "\n".join(lines)


def single_stream_reason(order, options, host_op=None) -> str | None:
    """Why `order` (ir Nodes) must run on one stream (None: it may use several): options, control flow, or
    dynamic shapes or a host op (`host_op`: strings, ONNX-ML, sequences, a static piece, as dynamic for this)
    without ENABLE_DYNAMIC_SHAPE_MULTI_STREAM=1."""
    flow = next((n for n in order if n.op_type in CONTROL_FLOW_OPS or _has_subgraph(n)), None)
    if options.enable_single_stream:
        if flow is not None:
            raise GEError(f"enable_single_stream is set but the graph has control flow ({flow.op_type} node "
                          f"'{flow.name}'): GE refuses single-stream mode with control-flow ops; unset it")
        return "enable_single_stream is set"
    # a static If / Loop (static tensors out) is a static graph's node: its label tasks sit on its stream
    host = next((n for n in order if (n.op_type in CONTROL_FLOW_OPS or _has_subgraph(n)) and (
        n.op_type not in LABEL_OPS or any(not v.is_static or not v.is_tensor for v in n.outputs))), None)
    dynamic = host or host_op or next((n for n in order if any(not v.is_static for v in n.outputs)), None)
    if dynamic is not None and not (options.enable_dynamic_shape_multi_stream or
                                    os.environ.get("ENABLE_DYNAMIC_SHAPE_MULTI_STREAM", "") == "1"):
        what = f"control flow: {host.op_type} node '{host.name}' runs host-driven" if host else \
            f"{host_op.op_type} node '{host_op.name}' runs on the host" if host_op else f"node '{dynamic.name}'"
        return f"dynamic shapes ({what}); set enable_dynamic_shape_multi_stream (GE: " \
               "ENABLE_DYNAMIC_SHAPE_MULTI_STREAM=1) for multi-stream"
    return None


def assign_streams(engines, preds, *, max_streams: int = 8, single_stream_reason: str | None = None,
                   names=None, memory_priority: bool = False, exact_ge: bool = False, labels=None,
                   groups=None, engine_caps=None, default_cap: int | None = None,
                   all_reduces=None) -> StreamAssignment:
    """Streams for an execution order given per position its engine and its predecessors' positions.
    `exact_ge`: GE's Step 2 without this module's two refinements (for comparison): every other same-engine
    successor blocks reuse, and no reuse of finished streams. `labels` / `groups`: per position its stream
    label / parallel group, or None (Steps 0 and 2b). `engine_caps` {engine: n} and `default_cap` (for the
    engines not named; None: no cap): the most new streams an engine gets in Step 2. `all_reduces`: per
    position whether it is an AllReduce whose successors Step 2c moves (None: the pass is off)."""
    n = len(engines)
    names = tuple(names) if names is not None else tuple(f"#{i}" for i in range(n))
    if single_stream_reason is None and max_streams == 1:
        single_stream_reason = "max_streams is 1"
    if single_stream_reason is not None:
        log.info("single stream for %d nodes: %s", n, single_stream_reason)
        return StreamAssignment((0,) * n, tuple(engines), ("single stream",) * n, 1 if n else 0,
                                single_stream_reason, 0, names)
    a = _Assigner(list(engines), [list(p) for p in preds], names, max_streams, memory_priority, exact_ge)
    a.caps, a.default_cap = dict(engine_caps or {}), default_cap
    a.label = list(labels) if labels is not None else [None] * n
    a.group = list(groups) if groups is not None else [None] * n
    a.by_label()
    a.independent()
    a.by_dependency()
    a.by_parallel_group()
    if all_reduces is not None:
        a.all_reduce_parallel(all_reduces)
    a.skipped_engine()
    moved = a.ineffective_multi_stream()
    streams = a.renumber()
    result = StreamAssignment(tuple(streams), tuple(engines), tuple(a.reason), len(set(streams)), None,
                              moved, names)
    log.info("streams: %d for %d nodes (%d moved back as ineffective)", result.num_streams, n, moved)
    return result


def _has_subgraph(node) -> bool:
    if getattr(node, "bodies", None):
        return True
    values = [x for v in node.attrs.values() for x in (v if isinstance(v, (list, tuple)) else [v])]
    return any(type(x).__name__ in ("Graph", "GraphProto") for x in values)


class _Assigner:
    def __init__(self, engines, preds, names, max_streams, memory_priority, exact_ge=False):
        self.eng, self.preds, self.names = engines, preds, names
        self.n = len(engines)
        self.succs = [[] for _ in engines]
        for i, ps in enumerate(preds):
            for p in ps:
                self.succs[p].append(i)
        self.stream = [-1] * self.n
        self.reason = [""] * self.n
        self.load: dict[int, int] = {}
        self.stream_engines: dict[int, set] = {}
        self.own_streams: set[int] = set()
        self.max_streams, self.memory_priority, self.exact_ge = max_streams, memory_priority, exact_ge
        self.anc = [0] * self.n   # bitset of data ancestors per position
        for i, ps in enumerate(preds):
            for p in ps:
                self.anc[i] |= self.anc[p] | (1 << p)
        self.last: dict[int, int] = {}   # stream -> last position put on it (during the dependency pass)
        self.caps, self.default_cap = {}, None
        self.engine_streams: dict[str, list[int]] = {}   # engine -> the new streams given to it (Step 2)
        self.turn: dict[str, int] = {}                   # engine -> its round-robin counter
        self.pinned: set[int] = set()    # positions Step 2c moved (Step 4 keeps them where they are)

    def _put(self, i, s, why):
        self.stream[i], self.reason[i] = s, why
        self.last[s] = max(self.last.get(s, -1), i)
        self.load[s] = self.load.get(s, 0) + 1
        self.stream_engines.setdefault(s, set()).add(self.eng[i])

    def _new_stream(self) -> int:
        return max(self.load, default=-1) + 1

    def by_label(self):
        streams: dict[str, int] = {}
        for i in range(self.n):
            if self.label[i] is not None:
                if self.label[i] not in streams:
                    s = streams[self.label[i]] = self._new_stream()
                    self.load[s] = 0
                    self.own_streams.add(s)
                self._put(i, streams[self.label[i]], f"stream label '{self.label[i]}'")

    def independent(self):
        for e in dict.fromkeys(self.eng):
            if info(e).independent:
                todo = [i for i in range(self.n) if self.eng[i] == e and self.stream[i] < 0]
                if not todo:
                    continue
                s = self._new_stream()
                self.load[s] = 0
                self.own_streams.add(s)
                for i in todo:
                    self._put(i, s, f"{e} is independent: its own stream")

    def by_parallel_group(self):
        streams: dict[tuple, int] = {}
        for i in range(self.n):
            g = self.group[i]
            if g is None or self.label[i] is not None:
                continue
            key = (self.stream[i], g)
            if key not in streams:
                streams[key] = self._new_stream()
            self._move(i, streams[key], f"parallel group '{g}'")

    def by_dependency(self):
        cap = max(1, self.max_streams - len(self.own_streams))
        for i in range(self.n):
            if self.stream[i] >= 0:
                continue
            cands = [p for p in self.preds[i] if self._reusable(p, i)]
            if cands:
                p = min(cands, key=lambda p: (self.eng[p] != self.eng[i], info(self.eng[p]).cost, -p))
                self._put(i, self.stream[p], f"reuses the stream of '{self.names[p]}'")
            elif self.eng[i] == GE_LOCAL and self._shared_preds(i):
                p = self._shared_preds(i)[-1]
                self._put(i, self.stream[p], f"no task: rides on the stream of '{self.names[p]}'")
            elif not self.exact_ge and self._finished_streams(i):
                s = self._finished_streams(i)[0]
                self._put(i, s, f"reuses the stream of '{self.names[self.last[s]]}', done before it" +
                          self._why_new(i))
            elif self._engine_full(i):
                e = self.eng[i]
                own = self.engine_streams[e]
                k = self.turn[e] = self.turn.get(e, 0) + 1
                self._put(i, own[(k - 1) % len(own)], f"{e} has its {len(own)} stream(s) "
                          "(stream_max_parallel_num): round robin" + self._why_new(i))
            elif len(self.load) - len(self.own_streams) < cap:
                s = self._new_stream()
                self.engine_streams.setdefault(self.eng[i], []).append(s)
                self._put(i, s, "new stream" + self._why_new(i))
            else:
                s = min(self._compute_streams(), key=lambda s: (self.load[s], s))
                self._put(i, s, f"max_streams {self.max_streams} reached: least loaded stream")

    def _engine_full(self, i) -> bool:
        cap = self.caps.get(self.eng[i], self.default_cap)
        return cap is not None and len(self.engine_streams.get(self.eng[i], ())) >= cap

    def _compute_streams(self) -> list[int]:
        return [s for s in self.load if s not in self.own_streams]

    def _finished_streams(self, i) -> list[int]:
        """Streams whose last node is an ancestor of i (idle by the time i can start): those ending at a
        predecessor first (no event needed), then the least loaded."""
        done = [s for s in self._compute_streams() if (self.anc[i] >> self.last[s]) & 1]
        return sorted(done, key=lambda s: (self.last[s] not in self.preds[i], self.load[s], s))

    def _shared_preds(self, i) -> list[int]:
        return [p for p in self.preds[i] if self.stream[p] not in self.own_streams]

    def _reusable(self, p, i) -> bool:
        if self.stream[p] in self.own_streams:
            return False
        ep, ei = self.eng[p], self.eng[i]
        if not self.memory_priority and self._siblings(p, i):
            return False
        return ep == ei or info(ei).attach or ei in self.stream_engines.get(self.stream[p], ())

    def _siblings(self, p, i) -> list[int]:
        """Successors of p of p's engine, other than i, that could run in parallel with i."""
        return [s for s in self.succs[p]
                if s != i and self.eng[s] == self.eng[p] and (self.exact_ge or not (self.anc[s] >> i) & 1)]

    def _why_new(self, i) -> str:
        if not self.preds[i]:
            return " (no predecessor)"
        forks = [p for p in self.preds[i] if self._siblings(p, i)]
        if forks:
            return f" ('{self.names[forks[-1]]}' has other {self.eng[forks[-1]]} successors)"
        return " (no reusable predecessor)"

    def all_reduce_parallel(self, all_reduces):
        """Step 2c: every descendant of an unlabelled AllReduce onto a new stream per old stream."""
        todo = [i for i in range(self.n) if all_reduces[i] and self.label[i] is None]
        seen: set[int] = set()
        while todo:
            for j in self.succs[todo.pop()]:
                if j not in seen:
                    seen.add(j)
                    todo.append(j)
        streams: dict[int, int] = {}
        for i in sorted(seen):
            if self.label[i] is not None or self.stream[i] in self.own_streams:
                continue   # labelled nodes and collectives stay (GE moves no HCOM node)
            old = self.stream[i]
            if old not in streams:
                streams[old] = self._new_stream()
            self._move(i, streams[old], "hcom_parallel: after an AllReduce, beside the compute it does not need")
            self.pinned.add(i)

    def skipped_engine(self):
        for i in range(self.n):
            if self.eng[i] != GE_LOCAL or self.label[i] is not None:
                continue
            around = {self.stream[j] for j in self.preds[i] + self.succs[i]}
            if len(around) == 1 and not around & (self.own_streams | {self.stream[i]}):
                s = around.pop()
                self._move(i, s, f"no task: all neighbours on the stream of '{self._on(i, s)}'")

    def _on(self, i, s) -> str:
        """The name of a neighbour of i on stream s (reasons name nodes: stream ids change on renumbering)."""
        return self.names[next(j for j in self.preds[i] + self.succs[i] if self.stream[j] == s)]

    def _move(self, i, s, why):
        self.load[self.stream[i]] -= 1
        self._put(i, s, why)

    def ineffective_multi_stream(self) -> int:
        moved, changed = 0, True
        while changed:
            changed = False
            members: dict[int, list[int]] = {}
            for i, s in enumerate(self.stream):
                members.setdefault(s, []).append(i)
            for i in range(self.n):
                s = self._better_stream(i, members)
                if s is None:
                    continue
                members[self.stream[i]].remove(i)
                bisect.insort(members[s], i)
                self._move(i, s, f"moved to the stream of '{self._on(i, s)}': its own gave no parallelism")
                moved, changed = moved + 1, True
        return moved

    def _better_stream(self, i, members) -> int | None:
        own = self.stream[i]
        if own in self.own_streams or i in self.pinned or self.label[i] is not None or self.group[i] is not None:
            return None
        neighbours = self.preds[i] + self.succs[i]
        if not neighbours or any(self.stream[j] == own for j in neighbours):
            return None
        best = None
        for s in sorted({self.stream[j] for j in neighbours} - self.own_streams):
            on_s = members[s]
            k = bisect.bisect_left(on_s, i)
            if k > 0 and not (self.anc[i] >> on_s[k - 1]) & 1:
                continue   # the node before it on s is not an ancestor: they could run in parallel
            if k < len(on_s) and not (self.anc[on_s[k]] >> i) & 1:
                continue   # likewise the node after it
            edges = sum(self.stream[j] == s for j in neighbours)
            if best is None or edges > best[0]:
                best = (edges, s)
        return None if best is None else best[1]

    def renumber(self) -> list[int]:
        dense: dict[int, int] = {}
        return [dense.setdefault(s, len(dense)) for s in self.stream]
