"""Event multiplexing (docs/ge-reference.md §3.4, event reuse; ATTR_NAME_EVENT_MULTIPLEXING): an event id is
reused once both ends of its last use are done; both runtimes keep every use apart (ge.plan.event_uses) and compute what
a plan with one id per event computes."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
from ge.memory.verify import verify_memory
from ge.plan import SyncEvent, event_uses
from ge.schedule.events import verify_events
from stream_options import PER_STREAM


def _forks(k=4, n=32):
    """k fork-joins in a row: MatMul+Tanh on two branches, joined by Add."""
    rng = np.random.default_rng(0)
    inits, nodes, prev = [], [], "x"
    for i in range(k):
        for br in "ab":
            w = (rng.standard_normal((n, n)) / n).astype(np.float32)
            inits.append(numpy_helper.from_array(w, f"w{br}{i}"))
            nodes.append(helper.make_node("MatMul", [prev, f"w{br}{i}"], [f"{br}{i}"], name=f"{br}{i}"))
            nodes.append(helper.make_node("Tanh", [f"{br}{i}"], [f"{br}{i}t"], name=f"{br}{i}t"))
        nodes.append(helper.make_node("Add", [f"a{i}t", f"b{i}t"], [f"j{i}"], name=f"j{i}"))
        prev = f"j{i}"
    vi = lambda s: helper.make_tensor_value_info(s, TensorProto.FLOAT, [n, n])  # noqa: E731
    return helper.make_model(helper.make_graph(nodes, "forks", [vi("x")], [vi(prev)], inits),
                             opset_imports=[helper.make_opsetid("", 13)])


def _preds(plan):
    prod = {t: n.step for n in plan.nodes for t in n.outputs}
    return [sorted({prod[t] for t in n.inputs if t in prod}) for n in plan.nodes]


def test_fork_joins_share_two_event_ids():
    """docs/ge-reference.md §3.4 event reuse: 7 sync events of four fork-joins need 2 ids once an id is reused after
    its wait happened before the new record; the happens-before and memory verifiers accept the plan."""
    plain = ge.compile(_forks())
    mux = ge.compile(_forks(), {"event_multiplexing": True})
    assert [(e.record_after, e.wait_before) for e in mux.events] == \
        [(e.record_after, e.wait_before) for e in plain.events]
    assert (len(plain.events), len({e.id for e in plain.events})) == (7, 7)
    assert (len(mux.events), len({e.id for e in mux.events})) == (7, 2)
    assert verify_events(_preds(mux), [n.stream for n in mux.nodes], mux.events) == []
    verify_memory(mux, mux.memory)
    stride, uses = event_uses(mux.events)
    assert stride == 4 and sorted(k for (kind, _, _), k in uses.items() if kind == "record") == [0, 0, 1, 1, 2, 2, 3]


def test_verifier_refuses_an_id_reused_while_its_last_use_may_still_wait():
    """The multiplexing rule, checked independently (ge.schedule.events.verify_events): two s0 -> s1 events
    whose second record (step 2) is not ordered after the first wait (step 1, on the other stream) cannot
    share an id: the record could set the flag before the first waiter saw it."""
    streams, preds = [0, 1, 0, 1], [[], [0], [], [2]]
    one_each = (SyncEvent(0, 0, 1, 0, 1), SyncEvent(1, 2, 3, 0, 1))
    assert verify_events(preds, streams, one_each) == []
    shared = (SyncEvent(0, 0, 1, 0, 1), SyncEvent(0, 2, 3, 0, 1))
    assert verify_events(preds, streams, shared) == [
        "e0 is recorded at 2 before its previous use is waited for at 1"]
    from ge.schedule.multiplex import multiplex_events
    assert [e.id for e in multiplex_events(one_each, streams)] == [0, 1]   # the planner never does it


@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_multiplexed_events_run_on_both_runtimes(runtime):
    """docs/ge-reference.md §3.4: with ids reused, each thread waits for the use it needs (run r, use k -> r*stride+k):
    results equal to the plan with one id per event, run after run, on two stream threads."""
    x = np.random.default_rng(1).standard_normal((32, 32)).astype(np.float32)
    opts = {"thread_budget": 2, **PER_STREAM}
    with ge.Session(_forks(), runtime=runtime, options=opts) as s:
        want = s.run(None, {"x": x})[0]
    with ge.Session(_forks(), runtime=runtime, options={**opts, "event_multiplexing": True}) as s:
        assert s.stream_threads == 2 and len({e.id for e in s.plan.events}) == 2
        for _ in range(5):
            np.testing.assert_array_equal(s.run(None, {"x": x})[0], want)


def test_running_out_of_events_multiplexes_then_refuses():
    """docs/ge-reference.md §3.7 (EventAllocator::kMaxEventNum) and §3.4: with a modelled device of 2 event ids the 7
    events of four fork-joins are multiplexed on their own; with 1 id no plan fits, and the error says so."""
    plan = ge.compile(_forks(), {"max_events": 2})
    assert (len(plan.events), len({e.id for e in plan.events})) == (7, 2)
    assert len({e.id for e in ge.compile(_forks(), {"max_events": 7}).events}) == 7   # enough: untouched
    with pytest.raises(ge.GEError, match="needs 2 event ids even with multiplexing.*max_events 1"):
        ge.compile(_forks(), {"max_events": 1})
