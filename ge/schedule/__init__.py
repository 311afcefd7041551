"""Schedule: execution order (toposort), logical streams and sync events (ARCHITECTURE.md, "Schedule").

`schedule(order, engines, options)` is the one entry the compiler calls once the engines are known (from
the bound kernels): GE's stream assignment (streams.py) on the order's data edges, then the fewest events
(events.py), checked to cover every dependency.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from ..errors import GEError
from .dependencies import dependencies
from .events import EventPlan, plan_events, verify_events
from .streams import StreamAssignment, assign_streams, single_stream_reason

log = logging.getLogger("ge.schedule")


@dataclass(frozen=True)
class Schedule:
    streams: StreamAssignment
    events: EventPlan


def schedule(order, engines, options) -> Schedule:
    """Streams and events for `order` (a topological order of ir Nodes) with one engine per node."""
    preds, _ = dependencies(order)
    a = assign_streams(engines, preds, max_streams=options.max_streams,
                       single_stream_reason=single_stream_reason(order, options), names=[n.name for n in order],
                       memory_priority=options.topo_sorting_mode == "memory_priority",
                       exact_ge=options.exact_ge_streams)
    events = plan_events(preds, a.streams) if a.num_streams > 1 else EventPlan((), 0, 0, 0)
    problems = verify_events(preds, a.streams, events.events)
    if problems:
        raise GEError(f"stream events do not cover the order's dependencies: {problems[:3]}")
    return Schedule(a, events)


__all__ = ["Schedule", "dependencies", "schedule"]
