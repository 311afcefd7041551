"""Schedule: execution order (toposort), logical streams and sync events (ARCHITECTURE.md, "Schedule").

`schedule(order, engines, options)` is the one entry the compiler calls once the engines are known (from
the bound kernels): GE's stream assignment (streams.py) on the order's data edges, GE's attached streams after the main ones (`attach`),
then the fewest events (events.py), then GE's physical split of streams past the per-stream task cap (split.py,
`Options.max_tasks_per_stream`; events planned again with the pieces chained), checked to cover every
dependency.
"""
from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass

from ..errors import GEError
from .dependencies import dependencies
from .events import EventPlan, plan_events, verify_events
from .multiplex import multiplex_events
from .split import split_streams
from .stream_allocator import StreamAssignment, assign_streams, single_stream_reason

log = logging.getLogger("ge.schedule")
ALL_REDUCES = ("HcomAllReduce", "HorovodAllreduce")   # the ops GE's AllReduceParallelPass looks for


@dataclass(frozen=True)
class Schedule:
    streams: StreamAssignment
    events: EventPlan


def schedule(order, engines, options, host=None) -> Schedule:
    """Streams and events for `order` (a topological order of ir Nodes) with one engine per node; `host`: the
    first node that runs as a host op (strings, ONNX-ML, sequences, a static piece), if any."""
    preds, _ = dependencies(order)
    labels, groups, keys = node_labels(order, options)
    reason = single_stream_reason(order, options, host)
    if reason and options.enable_single_stream and any(labels):
        k = next(i for i, lab in enumerate(labels) if lab)
        raise GEError(f"enable_single_stream (ge.enableSingleStream) with a stream label: node '{order[k].name}' "
                      f"has stream label '{labels[k]}'; GE's SingleStreamPass refuses the two together (E10056)")
    if reason and any(labels + groups + keys):
        log.info("stream labels, parallel groups and attached streams have no effect on one stream (%s)", reason)
    a = assign_streams(engines, preds, max_streams=options.max_streams, single_stream_reason=reason,
                       names=[n.name for n in order],
                       memory_priority=options.topo_sorting_mode == "memory_priority",
                       exact_ge=options.exact_ge_streams, labels=labels, groups=groups,
                       engine_caps=dict(options.stream_max_parallel_num),
                       default_cap=1 if options.stream_parallel_mode == "engine" else None,
                       all_reduces=[n.op_type in ALL_REDUCES for n in order] if options.hcom_parallel else None)
    if any(keys) and a.single_stream_reason is None:
        a = attach(a, keys)
    events = plan_events(preds, a.streams) if a.num_streams > 1 else EventPlan((), 0, 0, 0)
    if options.max_tasks_per_stream and a.single_stream_reason is None:
        a, events, preds = _split(a, events, preds, options.max_tasks_per_stream)
    # GE's EVENT=notify: every sync is a SendNotify/RecvNotify pair instead, from the notify pool (at most
    # kMaxNotifyNum = 1024 at compile); the runtimes wait on a notify as on an event
    notify = options.sync_kind == "notify"
    cap, what = (options.max_notifies, "notify") if notify else (options.max_events, "event")
    events = dataclasses.replace(events, kind=options.sync_kind)
    if events.events and (options.event_multiplexing or (cap and len(events.events) > cap)):
        reused = multiplex_events(events.events, a.streams)   # also when the device's ids run out
        log.info("%s multiplexing: %d syncs on %d ids", what, len(reused), len({e.id for e in reused}))
        events = dataclasses.replace(events, events=reused)
    ids = len({e.id for e in events.events})
    if cap and ids > cap:
        option = "max_notifies" if notify else "max_events"
        raise GEError(f"the plan needs {ids} {what} ids even with multiplexing ({len(events.events)} syncs on "
                      f"{a.num_streams} streams), the device has {option} {cap}: raise {option} or lower max_streams")
    problems = verify_events(preds, a.streams, events.events)
    if problems:
        raise GEError(f"stream events do not cover the order's dependencies: {problems[:3]}")
    return Schedule(a, events)


def node_labels(order, options) -> tuple[list, list, list]:
    """Per position its stream label, parallel group and attached stream's reuse key: the node's
    `_stream_label` / `_parallel_group` / `_attached_stream_key` attribute (GE's ATTR_NAME_STREAM_LABEL /
    ATTR_NAME_PARALLEL_GROUP / ATTACHED_STREAM_INFO's reuse_key), or Options.stream_labels / parallel_groups /
    attached_streams by node name, which win. A name the options give that no node has is an error."""
    names = {n.name for n in order}
    out = []
    for attr, option in (("_stream_label", "stream_labels"), ("_parallel_group", "parallel_groups"),
                         ("_attached_stream_key", "attached_streams")):
        given = dict(getattr(options, option))
        unknown = sorted(set(given) - names)
        if unknown:
            raise GEError(f"option {option} names node '{unknown[0]}', which the compiled graph does not have "
                          f"(nodes: {', '.join(sorted(names)[:8])}{', ...' if len(names) > 8 else ''})")
        values = []
        for n in order:
            v = given.get(n.name, n.attrs.get(attr))
            values.append(v.decode() if isinstance(v, bytes) else (str(v) if v is not None else None))
        out.append(values)
    return out[0], out[1], out[2]


def attach(a: StreamAssignment, keys) -> StreamAssignment:
    """GE's AssignAttachedStreamPass, after the main streams are numbered densely: a node with a reuse key
    gets the attached stream of that key, numbered after the main streams in order of first use (equal keys
    share one; a node has at most one). ge's kernels issue no second task, so the node's own task runs there."""
    main = a.num_streams
    ids = {k: main + i for i, k in enumerate(dict.fromkeys(k for k in keys if k is not None))}
    streams = tuple(ids[k] if k is not None else s for s, k in zip(a.streams, keys))
    reasons = tuple(f"attached stream of reuse key '{k}'" if k is not None else r for r, k in zip(a.reasons, keys))
    dense = {s: i for i, s in enumerate(sorted(set(streams)))}   # a main stream left empty drops out
    return dataclasses.replace(a, streams=tuple(dense[s] for s in streams), reasons=reasons,
                               num_streams=len(dense))


def _split(a, events, preds, cap):
    """GE's SplitStreams on the assignment; the chain edges join the dependencies the events must cover."""
    s = split_streams(a.streams, a.engines, events.events, cap)
    if not s.chain:
        return a, events, preds
    preds = [list(p) for p in preds]
    for u, v in s.chain:
        preds[v] = sorted({*preds[v], u})
    reasons = tuple(r if new == old else f"{r}; split from s{old} (task cap {cap})"
                    for r, new, old in zip(a.reasons, s.streams, a.streams))
    a = dataclasses.replace(a, streams=s.streams, reasons=reasons, num_streams=len(set(s.streams)))
    log.info("split: %d streams past the cap of %d tasks -> %d streams", sum(len(p) > 1 for p in
             s.pieces.values()), cap, a.num_streams)
    return a, plan_events(preds, a.streams), preds


__all__ = ["Schedule", "dependencies", "schedule"]
