"""Event multiplexing (docs/ge-reference.md §3.4, event reuse; GE's ATTR_NAME_EVENT_MULTIPLEXING): a device has
few event ids (GE's EventAllocator::kMaxEventNum = 4096), so an id serves several sync events when their uses
cannot overlap: event b may take the id of event a once both ends of a are done before b is recorded, that
is a's wait runs at or before (happens-before) b's record node.

Step 1. Events in order of their record position.
Step 2. Each takes the lowest id whose last use is waited for at or before its record node (by stream order
        and the events themselves); otherwise the next new id. Ids stay dense from 0.
The uses of one id are then totally ordered, record_0 < wait_0 <= record_1 < wait_1 ..., which is what the
runtimes need: the k-th record of an id in run r stores r * stride + k and its waiter waits for that value
(ge.plan.event_uses), so a flag is never set again before its previous waiter has seen it.
"""
from __future__ import annotations

from ..plan import SyncEvent
from .events import happens_before


def multiplex_events(events, streams) -> tuple[SyncEvent, ...]:
    """`events` with ids reused where their uses cannot overlap (Steps 1-2)."""
    hb = happens_before(streams, events)
    last_wait: list[int] = []     # per id, the wait position of its last use
    out = []
    for e in sorted(events, key=lambda e: (e.record_after, e.wait_before)):
        free = next((k for k, w in enumerate(last_wait)
                     if w == e.record_after or hb.before(w, e.record_after)), None)
        if free is None:
            free = len(last_wait)
            last_wait.append(e.wait_before)
        else:
            last_wait[free] = e.wait_before
        out.append(SyncEvent(free, e.record_after, e.wait_before, e.src_stream, e.dst_stream))
    return tuple(out)
