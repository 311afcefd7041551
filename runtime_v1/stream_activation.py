"""Activated streams: a body's streams run side by side, as GE binds them (docs/ge-reference.md §3.6, §3.4).

GE binds the streams of a static body as activated streams: they do not start with the model but when a
StreamActive task fires, which the label makers put at the head of each branch and loop body, on the
parent's stream; and no event is needed toward a stream the sender activates (OptimizeByStreamActivate):
activation implies order.

ge does the same for a body of several streams (labels.py asks `runs_activated`). The stream of the body's
first node runs on the control node's thread, among its label rows; every other body stream k becomes a table
of its own, run by a stream thread of its own:
    L0: AWAIT act_k (-> L_end when the control node leaves) | stream k's rows | SIGNAL done_k | GOTO L0 | L_end:
and the control node's rows for one run of the body are SIGNAL act_k for each k (StreamActive), the first
stream's rows, AWAIT done_k for each k; after the node's leave label, SIGNAL act_k LEAVE. The body's own
events become SIGNAL / AWAIT pairs on counted lines (sink.py), one line each, since a body runs many times
per run. The outer values a body reads need no event on any body stream: the control node waited for them
before it activated anything; `pruned` counts the events GE's subgraph rule (InsertEventsForSubgraph) would
have put there, one per activated stream and outer producer stream: those from the control node's own stream
GE drops too (its stream activates theirs), those from other streams ge drops as well, since the control
node waited for them (GE's pruning is no transitive reduction, ge's is here).
Only control nodes of the outer plan activate streams (a nested one may run many times per run, and its
streams leave after the first), and only bodies without control nodes of their own, and only with a thread
budget of two or more; otherwise a body runs in its plan order on the control node's thread.
"""
from __future__ import annotations

from collections import defaultdict

from .rows import Await, Goto, LabelSet, Signal
from .sink import LEAVE


def runs_activated(model, body) -> bool:
    """A body of the outer plan's control node (labels.py asks) runs its streams side by side."""
    return model.activation and len({n.stream for n in body.nodes}) > 1 and not any(n.bodies for n in body.nodes)


def body_rows(model, node, body, where, inputs_from, labels, leave: list, body_tasks) -> list:
    """The control node's rows for one run of `body` (its other streams become activated tables:
    labels.activated); `leave` gets the rows that release them when the node is done. `inputs_from`: per body
    input, the outer stream that produced it (None: no producer); `body_tasks(model, node, n, where)`: a body
    node's tasks (labels.py)."""
    line = {id(e): labels.line() for e in body.events}
    waits, records = defaultdict(list), defaultdict(list)
    for e in body.events:
        waits[e.wait_before].append(e)
        records[e.record_after].append(e)
    # a stream with no task (aliases only) is no stream to activate: its rows join the first stream's
    busy = [n.stream for n in body.nodes if n.launch is not None and not n.no_task]
    main = busy[0] if busy else body.nodes[0].stream
    per = defaultdict(list)
    for n in body.nodes:
        rows = per[n.stream if n.stream in busy else main]
        rows += [Await(line[id(e)], None) for e in waits[n.step]]
        if n.launch is not None and not n.no_task:
            rows += body_tasks(model, node, n, where)
        rows += [Signal(line[id(e)], 1) for e in records[n.step]]
    readers = _readers(body)
    head, tail = [], []
    for s in sorted(per):
        if s == main:
            continue
        act, done, again, out = labels.line(), labels.line(), labels.new(), labels.new()
        labels.activated.append((node.step, [LabelSet(again), Await(act, out), *per[s], Signal(done, 1),
                                             Goto(again), LabelSet(out)]))
        head.append(Signal(act, 1))
        tail.append(Await(done, None))
        leave.append(Signal(act, LEAVE))
        labels.pruned += len({inputs_from[k] for k in readers[s] if inputs_from[k] is not None})
    return head + per[main] + tail


def _readers(body) -> dict:
    """{body stream: positions of the body inputs its nodes read}."""
    pos = {t: k for k, t in enumerate(body.inputs)}
    out = defaultdict(set)
    for n in body.nodes:
        out[n.stream] |= {pos[t] for t in n.inputs if t in pos}
    return out
