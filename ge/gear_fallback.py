"""Dims gears with runtime_v2 behind them (ge.Session, runtime="auto", Options.dynamic_dims).

GE runs a dynamic_dims model only at its gears' shapes; ge's "auto" keeps that speed for the gears and runs
any other shape instead of refusing it:
  1. A run whose feeds' shapes are a gear's (runtime_v1/gears.py `gear_for`, an exact match) runs that
     gear's static plan on runtime_v1's task sink.
  2. Any other shape runs the gears' dynamic plan (GearPlans.fallback: the model with input_shape's -1 dims
     left symbolic) on runtime_v2, loaded at the first such run.
  3. stats() counts both: the gears' counters (`gear_runs` per gear) plus `v2_runs`, and `runs` the sum.
It is an Executor (ge.plan): the Session calls it as it calls either runtime.
"""
from __future__ import annotations

import threading

from .errors import GEError
from .plan import GearPlans


class GearsOrV2:
    """runtime_v1 over dims gears, runtime_v2 for the shapes no gear matches."""

    def __init__(self, gears, gear_plans: GearPlans, load_v2):
        self._gears, self._load_v2 = gears, load_v2
        self._plan = gear_plans.fallback
        self._order = [t.index for t in gear_plans.inputs]   # the Session's feeds are keyed by these
        self._v2 = None
        self._lock = threading.Lock()
        self._v2_runs = 0
        self._closed = False
        self.binds_outputs = gears.binds_outputs

    def _fallback(self):
        with self._lock:
            if self._closed:
                raise GEError("the session is closed")
            if self._v2 is None:
                self._v2 = self._load_v2()
            return self._v2

    def run(self, feeds: dict, outputs: dict | None = None, tracer=None) -> list:
        # Step 1: a gear's exact shapes
        if self._gears.gear_for(feeds) is not None:
            return self._gears.run(feeds, outputs) if tracer is None else self._gears.run_traced(feeds, tracer)
        # Step 2: runtime_v2 on the dynamic plan, its own input tensors
        v2 = self._fallback()
        v2_feeds = {self._plan.inputs[k]: feeds[i] for k, i in enumerate(self._order)}
        if tracer is not None:
            out = v2.run_traced(v2_feeds, tracer)
        else:
            out = v2.run(v2_feeds, outputs) if outputs and v2.binds_outputs else v2.run(v2_feeds)
        with self._lock:
            self._v2_runs += 1
        return out

    execute = run

    def run_traced(self, feeds: dict, tracer) -> list:
        return self.run(feeds, None, tracer)

    def stats(self) -> dict:
        """Step 3: the gears' counters, `v2_runs`, `runs` over both, and runtime_v2's own under "v2"."""
        out = self._gears.stats()
        with self._lock:
            v2, out["v2_runs"] = self._v2, self._v2_runs
        out["runs"] += out["v2_runs"]
        if v2 is not None:
            out["v2"] = v2.stats()
        return out

    def allocator_stats(self) -> dict:
        out = self._gears.allocator_stats()
        if self._v2 is not None:
            out["v2"] = self._v2.allocator_stats()
        return out

    def empty_cache(self) -> None:
        self._gears.empty_cache()
        if self._v2 is not None:
            self._v2.empty_cache()

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self._gears.close()
        if self._v2 is not None:
            self._v2.close()

    @property
    def stream_threads(self) -> int:
        return self._gears.stream_threads

    # the gears' refreshable feature map (Options.feature_base_refreshable); runtime_v2 plans per run
    @property
    def feature_memory_size(self) -> int:
        return self._gears.feature_memory_size

    def update_feature_memory_base(self, buf) -> None:
        self._gears.update_feature_memory_base(buf)
