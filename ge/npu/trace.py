"""Traces: every task's start and end per stream, written as Chrome / Perfetto trace JSON.

One track (thread) per stream, one slice per task, and a flow arrow from each event record to the waits it
releases (matched by event and generation). The same Tracer takes real runs (streams call `add`) and
modelled ones (`ge.npu.sim` calls `add_slice` with modelled times). `stats()` gives per-stream busy time
(kernels and memcpys; waits are idle) and the overlap: time during which two or more streams are busy.
Open the JSON in https://ui.perfetto.dev or chrome://tracing.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Slice:
    track: int
    track_name: str
    kind: str          # kernel | memcpy | record | wait
    name: str
    start: float       # seconds
    end: float
    flow: tuple | None = None   # (event id, generation) for record / wait
    args: dict | None = None


class Tracer:
    def __init__(self, name: str = "ge"):
        self.name = name
        self.slices: list[Slice] = []
        self._lock = threading.Lock()
        self.t0 = time.perf_counter()
        self.nodes: dict[str, tuple[str, dict]] = {}   # node name -> (slice name, args), see label_nodes

    def label_nodes(self, plan) -> None:
        """Name kernel slices "<op type> <node>" with the node's step, stream, shapes and block_dim in their
        args (read from a plan's nodes and tensors; runtimes record node names only, to stay cheap)."""
        def spec(t):
            if t < 0:
                return None
            x = plan.tensors[t]
            return f"{x.dtype}{list(x.shape)}"
        for n in plan.nodes:
            args = {"op": n.op_type, "node": n.name, "step": n.step, "stream": n.stream,
                    "inputs": [spec(t) for t in n.inputs], "outputs": [spec(t) for t in n.outputs]}
            if n.launch is not None:
                args["block_dim"] = n.launch.block_dim
            self.nodes[n.name] = (f"{n.op_type} {n.name}", args)

    def add(self, stream, task, start: float, end: float) -> None:
        """Called by a Stream's worker after each task."""
        flow = (task.event.id, task.generation) if task.event is not None else None
        self.add_slice(stream.id, stream.name, task.kind, task.name, start - self.t0, end - self.t0, flow)

    def add_slice(self, track: int, track_name: str, kind: str, name: str, start: float, end: float,
                  flow: tuple | None = None, args: dict | None = None) -> None:
        with self._lock:
            self.slices.append(Slice(track, track_name, kind, name, start, end, flow, args))

    # -- statistics -----------------------------------------------------------------------------------
    def stats(self) -> dict:
        """{"span", "busy": {track: seconds}, "overlap": seconds with >= 2 tracks busy, "tasks": n}."""
        busy_spans: dict[int, list] = {}
        for s in self.slices:
            if s.kind in ("kernel", "memcpy"):
                busy_spans.setdefault(s.track, []).append((s.start, s.end))
        busy = {t: _union_length(spans) for t, spans in sorted(busy_spans.items())}
        points = sorted([(a, 1) for spans in busy_spans.values() for a, _ in _merge(spans)] +
                        [(b, -1) for spans in busy_spans.values() for _, b in _merge(spans)])
        overlap, depth, last = 0.0, 0, 0.0
        for t, d in points:
            if depth >= 2:
                overlap += t - last
            depth, last = depth + d, t
        span = (max(s.end for s in self.slices) - min(s.start for s in self.slices)) if self.slices else 0.0
        return {"span": span, "busy": busy, "overlap": overlap, "tasks": len(self.slices)}

    # -- Chrome trace JSON ----------------------------------------------------------------------------
    def to_chrome(self) -> dict:
        events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": self.name}}]
        tracks = {}
        for s in self.slices:
            tracks.setdefault(s.track, s.track_name)
        for tid, tname in sorted(tracks.items()):
            events.append({"ph": "M", "name": "thread_name", "pid": 1, "tid": tid, "args": {"name": tname}})
            events.append({"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": tid,
                           "args": {"sort_index": tid}})
        us = 1e6
        flow_ids: dict[tuple, int] = {}
        for s in sorted(self.slices, key=lambda s: (s.start, s.track)):
            name, args = self.nodes.get(s.name, (s.name, None)) if s.kind == "kernel" else (s.name, None)
            ev = {"ph": "X", "pid": 1, "tid": s.track, "name": name, "cat": s.kind,
                  "ts": s.start * us, "dur": max(s.end - s.start, 0.0) * us}
            if s.args or args:
                ev["args"] = {**(args or {}), **(s.args or {})}
            events.append(ev)
            if s.flow is not None and s.kind == "record":
                fid = flow_ids.setdefault(s.flow, len(flow_ids) + 1)
                events.append({"ph": "s", "pid": 1, "tid": s.track, "name": "event", "cat": "event",
                               "id": fid, "ts": s.start * us})
        for s in self.slices:
            if s.flow is not None and s.kind == "wait" and s.flow in flow_ids:
                events.append({"ph": "f", "bp": "e", "pid": 1, "tid": s.track, "name": "event",
                               "cat": "event", "id": flow_ids[s.flow], "ts": s.end * us})
        return {"traceEvents": events, "displayTimeUnit": "ms"}

    def save(self, path) -> None:
        with open(path, "w") as f:
            json.dump(self.to_chrome(), f)


def _merge(spans):
    out = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def _union_length(spans) -> float:
    return sum(b - a for a, b in _merge(spans))
