"""Sync events between streams: one per cross-stream dependency, then pruned (hicann/ge: stream_allocator.cc).

Positions in the execution order are the clock; a stream runs its nodes in order. An event (u, v) is
recorded on u's stream right after node u and waited on v's stream right before node v.

Step 1 (InsertSyncEvents): one event per data edge u -> v whose nodes sit on different streams (pairs
        deduplicated: two tensors from u to v need one event).
Step 2 (GE's OptimizeBySendEvents / OptimizeByRecvEvents): a sender keeps only its earliest receiver on each
        stream (later nodes there come after it anyway); a receiver keeps only its latest sender from each
        stream (waiting for the later send implies the earlier ones).
Step 3 (beyond GE): full transitive reduction of the happens-before graph (stream order + events): an event
        u -> v is dropped when v is reachable from u another way, also through third streams. In a DAG every
        such edge can go at once, and reachability (so correctness) is unchanged.
Step 4: dense ids from 0, in order of (record_after, wait_before).
`verify_events` independently checks that every cross-stream dependency is covered by the happens-before
relation; `happens_before` gives that relation (for the memory planner's cross-stream reuse).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from ..plan import SyncEvent

log = logging.getLogger("ge.schedule")
MODES = ("none", "ge", "transitive")


@dataclass(frozen=True)
class EventPlan:
    events: tuple[SyncEvent, ...]
    cross_edges: int         # events inserted (one per cross-stream node pair)
    after_ge_rules: int      # left after GE's send/recv rules
    after_reduction: int     # left after the transitive reduction (== len(events) in that mode)
    mode: str = "transitive"
    kind: str = "event"      # or "notify" (Options.sync_kind, GE's EVENT option): SendNotify/RecvNotify pairs

    def summary(self) -> str:
        what = "notifies" if self.kind == "notify" else "events"
        return (f"{what}: {self.cross_edges} cross-stream edges -> {self.after_ge_rules} after GE's rules -> "
                f"{self.after_reduction} after transitive reduction (kept {len(self.events)}, mode {self.mode})")

    def to_dicts(self, names=None) -> list[dict]:
        """The events as plain dicts (for plan JSON): id, record_after / wait_before (positions, or node
        names when `names` is given), src_stream, dst_stream."""
        name = (lambda i: names[i]) if names is not None else (lambda i: i)  # noqa: E731
        return [{"id": e.id, "record_after": name(e.record_after), "wait_before": name(e.wait_before),
                 "src_stream": e.src_stream, "dst_stream": e.dst_stream} for e in self.events]

    def to_text(self, names=None) -> str:
        name = (lambda i: names[i]) if names is not None else (lambda i: f"#{i}")  # noqa: E731
        return "\n".join([self.summary()] + [
            f"  e{e.id}: s{e.src_stream} after '{name(e.record_after)}' -> s{e.dst_stream} before "
            f"'{name(e.wait_before)}'" for e in self.events])


def plan_events(preds, streams, mode: str = "transitive") -> EventPlan:
    """Events for an execution order given per position its predecessors and its stream."""
    if mode not in MODES:
        raise ValueError(f"event mode '{mode}' is not one of {MODES}")
    # Step 1: one event per cross-stream node pair
    pairs = sorted({(p, i) for i, ps in enumerate(preds) for p in ps if streams[p] != streams[i]})
    inserted = len(pairs)
    # Step 2: GE's rules
    if mode != "none":
        pairs = _ge_rules(pairs, streams)
    after_ge = len(pairs)
    # Step 3: transitive reduction over stream order + events
    if mode == "transitive":
        pairs = _transitive_reduction(len(streams), streams, pairs)
    # Step 4: dense ids
    events = tuple(SyncEvent(k, u, v, streams[u], streams[v]) for k, (u, v) in enumerate(sorted(pairs)))
    plan = EventPlan(events, inserted, after_ge, len(pairs) if mode == "transitive" else after_ge, mode)
    log.info("%s", plan.summary())
    return plan


def _ge_rules(pairs, streams):
    first_recv: dict[tuple, int] = {}    # (sender, receiving stream) -> earliest receiver
    for u, v in pairs:
        key = (u, streams[v])
        first_recv[key] = min(first_recv.get(key, v), v)
    last_send: dict[tuple, int] = {}     # (receiver, sending stream) -> latest sender
    for (u, _), v in first_recv.items():
        key = (v, streams[u])
        last_send[key] = max(last_send.get(key, u), u)
    return sorted((u, v) for (v, _), u in last_send.items())


def _stream_next(n, streams):
    nxt, last = [-1] * n, {}
    for i in range(n):
        if streams[i] in last:
            nxt[last[streams[i]]] = i
        last[streams[i]] = i
    return nxt


def _reach(n, streams, pairs):
    """Per position, the bitset of positions that must run after it (stream order + events)."""
    succ = [[] for _ in range(n)]
    for u, v in pairs:
        succ[u].append(v)
    for u, w in enumerate(_stream_next(n, streams)):
        if w >= 0:
            succ[u].append(w)
    reach = [0] * n
    for u in range(n - 1, -1, -1):
        r = 0
        for w in succ[u]:
            r |= reach[w] | (1 << w)
        reach[u] = r
    return reach, succ


def _transitive_reduction(n, streams, pairs):
    reach, succ = _reach(n, streams, pairs)
    kept = []
    for u, v in pairs:
        other = 0
        for w in succ[u]:
            if w != v:
                other |= reach[w] | (1 << w)
        if not (other >> v) & 1:
            kept.append((u, v))
    return kept


class HappensBefore:
    """The order the device guarantees: a before b when b runs after a by stream order and events."""

    def __init__(self, streams, events):
        self._reach, _ = _reach(len(streams), streams, [(e.record_after, e.wait_before) for e in events])
        self._members: dict[int, int] = {}
        for i, s in enumerate(streams):
            self._members[s] = self._members.get(s, 0) | (1 << i)

    def before(self, a: int, b: int) -> bool:
        return bool((self._reach[a] >> b) & 1)

    def first_after(self, a: int, stream: int) -> int | None:
        """The first position on `stream` that runs after `a` (the memory planner's cross-stream rule: a
        block read at `a` is free for `stream` from there on), or None."""
        later = self._reach[a] & self._members.get(stream, 0)
        return (later & -later).bit_length() - 1 if later else None


def happens_before(streams, events) -> HappensBefore:
    return HappensBefore(streams, events)


def verify_events(preds, streams, events) -> list[str]:
    """Every problem found (empty when correct): events must join different streams forward in the order,
    and every dependency must be covered by stream order + events."""
    problems = []
    for e in events:
        if not e.record_after < e.wait_before:
            problems.append(f"e{e.id} goes backwards: {e.record_after} -> {e.wait_before}")
        if streams[e.record_after] == streams[e.wait_before]:
            problems.append(f"e{e.id} joins one stream s{streams[e.record_after]}")
    ids = sorted({e.id for e in events})
    if ids != list(range(len(ids))):
        problems.append("event ids are not dense from 0")
    hb = HappensBefore(streams, events)
    last: dict[int, object] = {}   # a reused id (multiplexing): each use waited for before the next is recorded
    for e in sorted(events, key=lambda e: (e.record_after, e.wait_before)):
        p = last.get(e.id)
        if p is not None and not (p.wait_before == e.record_after or hb.before(p.wait_before, e.record_after)):
            problems.append(f"e{e.id} is recorded at {e.record_after} before its previous use is waited for "
                            f"at {p.wait_before}")
        last[e.id] = e
    for v, ps in enumerate(preds):
        for u in ps:
            if not hb.before(u, v):
                problems.append(f"dependency {u} (s{streams[u]}) -> {v} (s{streams[v]}) is not ordered")
    return problems
