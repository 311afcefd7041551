"""GE's physical stream split at the device's per-stream task cap (docs/ge-reference.md §3.5, SplitStreams), with a low
modelled cap: the pieces are streams of their own, chained by events, and both runtimes still compute the
same results; the memory and happens-before verifiers stay green."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import ge
from ge.errors import GEError
from ge.memory.verify import verify_memory
from ge.schedule.events import verify_events
from ge.schedule.split import RESERVED_TASKS, split_streams, task_costs
from stream_options import PER_STREAM

OPS = ["Relu", "Neg", "Abs", "Sigmoid"]


def _chain(n=10):
    vi = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [16])  # noqa: E731
    nodes, prev = [], "x"
    for k in range(n):
        nodes.append(helper.make_node(OPS[k % 4], [prev], [f"t{k}"], name=f"n{k}"))
        prev = f"t{k}"
    return helper.make_model(helper.make_graph(nodes, "chain", [vi("x")], [vi(prev)]),
                             opset_imports=[helper.make_opsetid("", 13)])


def _reference(x, n=10):
    for k in range(n):
        x = {"Relu": lambda a: np.maximum(a, 0), "Neg": np.negative, "Abs": np.abs,
             "Sigmoid": lambda a: 1 / (1 + np.exp(-a))}[OPS[k % 4]](x)
    return x


def _preds(plan):
    prod = {t: n.step for n in plan.nodes for t in n.outputs}
    return [sorted({prod[t] for t in n.inputs if t in prod}) for n in plan.nodes]


def test_a_stream_past_the_cap_is_split_into_chained_pieces():
    """docs/ge-reference.md §3.5: split when used + kReservedTaskNum (27) would pass max_task_count; a cap of 30 leaves
    3 tasks a piece, so a chain of 10 one-task nodes becomes 4 streams joined by 3 events."""
    plan = ge.compile(_chain(), {"max_tasks_per_stream": 30})
    assert plan.num_streams == 4
    assert [n.stream for n in plan.nodes] == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3]
    assert [(e.record_after, e.wait_before) for e in plan.events] == [(2, 3), (5, 6), (8, 9)]
    assert verify_events(_preds(plan), [n.stream for n in plan.nodes], plan.events) == []
    verify_memory(plan, plan.memory)
    uncapped = ge.compile(_chain())
    assert (uncapped.num_streams, len(uncapped.events)) == (1, 0)


def test_waits_count_twice_and_records_once():
    """docs/ge-reference.md §3.5 per-node cost: an EventWait is a wait and a reset (2 tasks), a record is 1."""
    from ge.plan import SyncEvent
    cost = task_costs(["AICORE", "AICORE", "GE_LOCAL"], [SyncEvent(0, 0, 1, 0, 1)])
    assert cost == [2, 3, 0]
    s = split_streams((0, 0, 0, 0), ["AICORE"] * 4, [], RESERVED_TASKS + 2)
    assert s.streams == (0, 0, 1, 1) and s.chain == ((1, 2),)


@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_split_plan_runs_on_both_runtimes(runtime):
    """docs/ge-reference.md §3.5: the pieces run as streams of their own (threads), ordered by the chain events."""
    x = np.linspace(-2, 2, 16, dtype=np.float32)
    with ge.Session(_chain(), runtime=runtime, options={"max_tasks_per_stream": 30, "thread_budget": 4, **PER_STREAM}) as s:
        assert s.plan.num_streams == 4 and s.stream_threads == 4   # one thread a piece: real cross-thread waits
        for _ in range(3):
            (y,) = s.run(None, {"x": x})
            np.testing.assert_allclose(y, _reference(x), rtol=1e-6)


def test_a_cap_within_the_reserve_is_refused():
    with pytest.raises(GEError, match="max_tasks_per_stream must be 0"):
        ge.Options(max_tasks_per_stream=20)
