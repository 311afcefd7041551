"""Profiles in onnxruntime's format, and ge's own trace beside them.

onnxruntime's profiler (onnxruntime/core/common/profiler.cc) writes a JSON array of Chrome "complete" events,
one a line: "Session" events for the load ("model_loading_uri" / "model_loading_array",
"session_initialization") and each run ("model_run"), and a "Node" event per kernel run named
"<node>_kernel_time" with the op, the provider and the inputs' and outputs' types and shapes in its args; `ts`
and `dur` are integer microseconds from the profiler's start. Tools that parse those files (onnxruntime's
own `onnxruntime.tools` perf scripts, notebooks grouping by args.op_name) read ge's the same way.

ge's richer trace (a track per stream, events between them, block_dim) is written beside it, named
`<the same name>.perfetto.json` (`InferenceSession.profiling_trace_file`). A plan with symbolic dims is traced
as compiled at the feeds' shapes (Session.run_traced); one whose shapes follow the data (NonZero, ...) on one
stream cannot be traced: its runs are timed whole, without Node events, and a warning says so.
"""
from __future__ import annotations

import json
import os
import threading
import time

from onnx import TensorProto

from ..errors import GEError
from ..ir.dtypes import to_onnx
from ..npu import Tracer
from .logging import log

PROVIDER = "CPUExecutionProvider"
_US = 1e6


def _type_shape(plan, t: int) -> dict:
    x = plan.tensors[t]
    return {TensorProto.DataType.Name(to_onnx(x.dtype)).lower(): list(x.shape)}


class Profiler:
    """Times a session's load and runs; `write` saves both files and returns the onnxruntime one's name."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.tracer = Tracer("ge")
        self.t0 = self.tracer.t0                 # the Tracer's slices are relative to it too
        self.start_ns = time.time_ns()
        self.spans: list[tuple[str, float, float, int]] = []   # (name, start, end, thread id), seconds from t0
        self._lock = threading.Lock()
        self.untraced: str | None = None   # why runs are timed whole (a plan the runtime cannot trace)

    def span(self, name: str, start: float, end: float) -> None:
        with self._lock:
            self.spans.append((name, start - self.t0, end - self.t0, threading.get_native_id()))

    def run(self, session, feeds) -> list:
        start = time.perf_counter()
        if self.untraced is None:
            try:
                out = session.run_traced(feeds, self.tracer)
            except GEError as e:   # runtime_v2 traces no dynamic-shape steps on one stream
                if not _cannot_trace(e):
                    raise
                self.untraced = str(e)
                log(2, f"profiling: this plan's runs are timed whole, without Node events ({e}); fix its input "
                       "shapes (SessionOptions.add_free_dimension_override_by_name) to get them")
                out = session.run(None, feeds)
        else:
            out = session.run(None, feeds)
        self.span("model_run", start, time.perf_counter())
        return out

    def events(self, plan) -> list[dict]:
        pid = os.getpid()
        nodes = {n.name: n for n in plan.nodes}
        out = [{"cat": "Session", "pid": pid, "tid": tid, "dur": _us(end - start), "ts": _us(start), "ph": "X",
                "name": name, "args": {}} for name, start, end, tid in self.spans]
        for s in self.tracer.slices:
            n = nodes.get(s.name)
            if s.kind != "kernel" or n is None:
                continue
            args = {"op_name": n.op_type, "provider": PROVIDER, "node_index": str(n.step),
                    "stream": str(n.stream),
                    "input_type_shape": [_type_shape(plan, t) for t in n.inputs if t >= 0],
                    "output_type_shape": [_type_shape(plan, t) for t in n.outputs if t >= 0]}
            out.append({"cat": "Node", "pid": pid, "tid": s.track, "dur": _us(s.end - s.start), "ts": _us(s.start),
                        "ph": "X", "name": f"{n.name}_kernel_time", "args": args})
        out.sort(key=lambda e: e["ts"])
        return out

    def write(self, plan) -> str:
        name = f"{self.prefix}_{time.strftime('%Y-%m-%d_%H-%M-%S')}.json"
        with open(name, "w") as f:   # one event a line, as onnxruntime writes them
            f.write("[\n" + ",\n".join(json.dumps(e) for e in self.events(plan)) + "\n]\n")
        self.tracer.label_nodes(plan)
        self.tracer.save(trace_name(name))
        return name


def trace_name(profile: str) -> str:
    return profile[:-len(".json")] + ".perfetto.json" if profile.endswith(".json") else profile + ".perfetto.json"


def _cannot_trace(e: GEError) -> bool:
    return "traces a plan" in str(e) or "traces such a plan" in str(e) or "run_traced" in str(e)


def _us(seconds: float) -> int:
    return max(0, int(round(seconds * _US)))
