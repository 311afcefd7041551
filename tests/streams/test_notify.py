"""Notify syncs (docs/ge-reference.md §3.4, notify mode: option EVENT="notify" syncs with notifies instead of
events, at most kMaxNotifyNum = 1024; §3.7; GE's stream_allocator.cc InsertSyncNodesByLogicStream /
InsertSyncNodesWithNotify): with EVENT=notify every sync is a SendNotify/RecvNotify pair from the notify pool,
placed and pruned as events are; past the pool's ids they are multiplexed, then refused. GE does not switch to
Notify on its own when events run out (its EventAllocator cap fails the build): neither does ge."""
import numpy as np
import pytest

import ge
from ge.errors import GEError
from ge.schedule.events import verify_events
from test_event_multiplexing import _forks, _preds
from stream_options import PER_STREAM


def test_event_option_selects_notify():
    assert ge.Options.from_dict({"EVENT": "notify"}).sync_kind == "notify"
    assert ge.Options.from_dict({"EVENT": "event"}) == ge.Options()
    for bad in ({"EVENT": "semaphore"}, {"sync_kind": "flag"}, {"max_notifies": 1025}):
        with pytest.raises(GEError):
            ge.Options.from_dict(bad)


def test_notify_plan_places_syncs_as_events_do():
    plain, notify = ge.compile(_forks()), ge.compile(_forks(), {"EVENT": "notify"})
    assert notify.options.sync_kind == "notify"
    assert notify.events == plain.events and len(notify.events) == 7
    assert verify_events(_preds(notify), [n.stream for n in notify.nodes], notify.events) == []


def test_notify_pool_multiplexes_then_refuses():
    """GE's kMaxNotifyNum (1024, modelled low here): 7 notifies on 2 ids; with 1 id the error names notify."""
    plan = ge.compile(_forks(), {"EVENT": "notify", "max_notifies": 2})
    assert (len(plan.events), len({e.id for e in plan.events})) == (7, 2)
    assert len({e.id for e in ge.compile(_forks(), {"EVENT": "notify", "max_events": 1}).events}) == 7  # not events'
    with pytest.raises(GEError, match="needs 2 notify ids even with multiplexing.*max_notifies 1"):
        ge.compile(_forks(), {"EVENT": "notify", "max_notifies": 1})


@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_notify_plans_run_on_both_runtimes(runtime):
    x = np.random.default_rng(2).standard_normal((32, 32)).astype(np.float32)
    with ge.Session(_forks(), runtime=runtime, options={"thread_budget": 2}) as s:
        want = s.run(None, {"x": x})[0]
    with ge.Session(_forks(), runtime=runtime, options={"thread_budget": 2, "EVENT": "notify", "max_notifies": 2, **PER_STREAM}) as s:
        assert s.stream_threads == 2
        for _ in range(3):
            np.testing.assert_array_equal(s.run(None, {"x": x})[0], want)


def test_notify_summary_names_them():
    from ge.schedule.events import EventPlan
    assert EventPlan((), 3, 2, 1, kind="notify").summary().startswith("notifies: 3 cross-stream edges")
