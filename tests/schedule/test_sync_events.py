"""Sync events: insertion, GE's pruning rules, the transitive reduction, and an independent verifier."""
from dataclasses import replace

from hypothesis import given, settings, strategies as st

from ge.schedule.events import happens_before, plan_events, verify_events
from ge.schedule.stream_allocator import assign_streams


def pairs(plan):
    return [(e.record_after, e.wait_before) for e in plan.events]


def test_send_rule_keeps_the_earliest_receiver():
    # 0 on s0 feeds 1 and 2, both on s1: the wait before 1 covers 2
    plan = plan_events([[], [0], [0, 1]], [0, 1, 1], mode="ge")
    assert (plan.cross_edges, plan.after_ge_rules) == (2, 1) and pairs(plan) == [(0, 1)]


def test_recv_rule_keeps_the_latest_sender():
    # 0 and 1 on s0 both feed 2 on s1: waiting for 1 implies 0
    plan = plan_events([[], [0], [0, 1]], [0, 0, 1], mode="ge")
    assert pairs(plan) == [(1, 2)]


def test_transitive_reduction_goes_through_a_third_stream():
    # 0 (s0) -> 1 (s1) -> 2 (s2) and 0 -> 2: GE's pairwise rules keep all three, the reduction two
    preds, streams = [[], [0], [0, 1]], [0, 1, 2]
    assert len(plan_events(preds, streams, mode="ge").events) == 3
    plan = plan_events(preds, streams)
    assert (plan.cross_edges, plan.after_ge_rules, plan.after_reduction) == (3, 3, 2)
    assert pairs(plan) == [(0, 1), (1, 2)] and [e.id for e in plan.events] == [0, 1]
    assert verify_events(preds, streams, plan.events) == []
    assert "3 cross-stream edges -> 3 after GE's rules -> 2 after transitive reduction" in plan.summary()


def test_verifier_finds_a_missing_event():
    preds, streams = [[], [0], [0, 1]], [0, 1, 2]
    plan = plan_events(preds, streams)
    problems = verify_events(preds, streams, plan.events[:1])
    assert problems == ["dependency 0 (s0) -> 2 (s2) is not ordered",
                        "dependency 1 (s1) -> 2 (s2) is not ordered"]


def test_happens_before_follows_stream_order_and_events():
    preds, streams = [[], [], [0], [1, 2]], [0, 1, 0, 1]
    plan = plan_events(preds, streams)
    hb = happens_before(streams, plan.events)
    assert hb.before(0, 2) and hb.before(0, 3) and hb.before(1, 3)
    assert not hb.before(1, 2) and not hb.before(2, 1)
    assert hb.first_after(0, 1) == 3 and hb.first_after(1, 0) is None and hb.first_after(0, 0) == 2
    assert plan.to_dicts("abcd") == [{"id": 0, "record_after": "c", "wait_before": "d", "src_stream": 0,
                                      "dst_stream": 1}]


@st.composite
def dags(draw):
    n = draw(st.integers(1, 30))
    preds = [sorted(set(draw(st.lists(st.integers(0, i - 1), max_size=3)))) if i else [] for i in range(n)]
    engines = draw(st.lists(st.sampled_from(["AICORE", "AICORE", "AICORE", "AICPU", "HCCL", "GE_LOCAL",
                                             "DVPP"]), min_size=n, max_size=n))
    return preds, engines


def check_events(preds, streams):
    counts = []
    for mode in ("none", "ge", "transitive"):
        plan = plan_events(preds, streams, mode)
        assert verify_events(preds, streams, plan.events) == [], mode
        counts.append(len(plan.events))
    assert counts[0] >= counts[1] >= counts[2]
    plan = plan_events(preds, streams)
    for k in range(len(plan.events)):   # minimal: every kept event is needed
        fewer = [replace(e, id=j) for j, e in enumerate(e for e in plan.events if e.id != k)]
        assert any("not ordered" in p for p in verify_events(preds, streams, fewer))


@settings(max_examples=150, deadline=None)
@given(dags(), st.integers(1, 8))
def test_assigned_streams_and_pruned_events_cover_every_dependency(dag, max_streams):
    preds, engines = dag
    a = assign_streams(engines, preds, max_streams=max_streams)
    assert sorted(set(a.streams)) == list(range(a.num_streams))
    assert a.num_streams <= max(max_streams, 1)
    assert list(dict.fromkeys(a.streams)) == list(range(a.num_streams))
    hccl = {s for s, e in zip(a.streams, engines) if e == "HCCL"}
    if max_streams > 1 and hccl:
        assert len(hccl) == 1 and all(e == "HCCL" for s, e in zip(a.streams, engines) if s in hccl)
    check_events(preds, a.streams)


@settings(max_examples=100, deadline=None)
@given(dags(), st.data())
def test_pruned_events_cover_every_dependency_for_any_streams(dag, data):
    preds, _ = dag
    streams = data.draw(st.lists(st.integers(0, 4), min_size=len(preds), max_size=len(preds)))
    check_events(preds, streams)
