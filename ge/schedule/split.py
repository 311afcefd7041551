"""GE's physical stream split (StreamAllocator::SplitStreams, docs/ge-reference.md §3.5): a device stream holds at
most `max_task_count` tasks, so a logical stream with more is cut into pieces, each its own stream, joined by an
event from the last node of one piece to the first node of the next.

Step 1. Per node, its task cost on its stream: 1 for a node that launches a task (GE_LOCAL nodes give none),
        plus 1 per event it records and 2 per event it waits for (GE: an EventWait is a wait and a reset).
Step 2. Walk each stream in order; a node that is not the first of its piece starts a new piece when the
        piece's tasks so far plus GE's reserve (kReservedTaskNum = 27: 7 for profiling, 20 spare) plus its
        own cost would pass the cap. A new piece gets the next free stream id.
Step 3. The chain edges (last node of a piece -> first node of the next) go back to the event planner as
        dependencies, so the pieces keep their stream's order and the usual pruning applies.
GE also keeps nodes with one `_continuous_stream_label` together and never splits at a subgraph's first
StreamActive or a Label op: ge has none of those. `max_tasks_per_stream = 0` means the device has no cap
(GE: FEATURE_TYPE_PERSISTENT_STREAM_UNLIMITED_DEPTH), and nothing is split.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..npu.engines import GE_LOCAL

RESERVED_TASKS = 27


@dataclass(frozen=True)
class Split:
    streams: tuple[int, ...]                 # per position, its (physical) stream
    chain: tuple[tuple[int, int], ...]       # (last of a piece, first of the next)
    pieces: dict                             # original stream -> its piece streams, in order


def task_costs(engines, events) -> list[int]:
    """Step 1: per position, the tasks it puts on its stream."""
    cost = [0 if e == GE_LOCAL else 1 for e in engines]
    for e in events:
        cost[e.record_after] += 1
        cost[e.wait_before] += 2
    return cost


def split_streams(streams, engines, events, max_tasks: int) -> Split:
    """Steps 2 and 3 for a cap of `max_tasks` tasks per stream (> RESERVED_TASKS)."""
    cost = task_costs(engines, events)
    budget = max_tasks - RESERVED_TASKS
    next_id = max(streams, default=-1) + 1
    out, chain, pieces = list(streams), [], {}
    used: dict[int, int] = {}    # piece stream -> tasks so far
    last: dict[int, int] = {}    # original stream -> last position seen
    current: dict[int, int] = {}  # original stream -> its current piece
    for i, s in enumerate(streams):
        piece = current.setdefault(s, s)
        pieces.setdefault(s, [s])
        if s in last and used[piece] + cost[i] > budget:
            piece = current[s] = next_id
            next_id += 1
            pieces[s].append(piece)
            chain.append((last[s], i))
        used[piece] = used.get(piece, 0) + cost[i]
        out[i] = piece
        last[s] = i
    return Split(tuple(out), tuple(chain), pieces)
