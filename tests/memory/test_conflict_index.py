"""The memory planner finds conflicts through an index (ge/memory/conflicts.py), not by testing every pair
(issue 46: a 10,000-input node spent half its compile in the pairwise scans). The plans must not change:
on random multi-stream requests (never-ending lives, no-task Concat blocks written on several streams)
every assigner and the lower bound give exactly the pairwise planner's answers (memory_pairwise.py), and
the work grows linearly with a chain's length."""
import dataclasses
import random

import numpy as np
import pytest
from onnx import TensorProto, helper

import ge
from ge.memory import plan_memory
from ge.memory.best_fit import _place, best_fit_by_breadth, conflict_bytes
from ge.memory.block_assigner import BLOCK_STRATEGIES, assign_blocks
from ge.memory.conflicts import ConflictIndex, MaxTree
from ge.memory.hybrid import ASSIGNERS
from ge.memory.lifetime import NEVER, Buffer, live_lower_bound
from ge.memory.two_sided import two_sided_fit

import memory_pairwise as pairwise


def requests(rng: random.Random, n: int, streams: int):
    """Requests as compute_lifetimes makes them: begins in allocation order, a stream's free_at after the
    request's last use there (or never), sometimes a never-ending life or writers on other streams."""
    out, begin = [], 0
    for i in range(n):
        begin += rng.choice((0, 0, 1, 1, 2))
        stream = rng.randrange(streams)
        end = NEVER if rng.random() < 0.08 else begin + rng.choice((0, 0, 1, 2, 3, 5, 9))
        free_at = () if streams == 1 else tuple(
            end + 1 if s == stream else NEVER if rng.random() < 0.25 else begin + 1 + rng.randrange(12)
            for s in range(streams))
        starts = ((rng.choice([s for s in range(streams) if s != stream]), begin + rng.randrange(3)),) \
            if streams > 1 and rng.random() < 0.1 else ()
        size = 512 * rng.choice((1, 1, 2, 3, 4, 8))
        out.append(Buffer(i, ("tensor", i), size, begin, min(end, NEVER), stream, rng.random() < 0.3,
                          free_at, starts))
    return out


CASES = [(seed, n, streams) for seed in range(12) for n, streams in ((6, 1), (25, 1), (25, 2), (40, 3))]


@pytest.mark.parametrize("seed,n,streams", CASES)
def test_index_answers_what_the_pairwise_test_does(seed, n, streams):
    bs = requests(random.Random(seed), n, streams)
    order = random.Random(seed + 1).sample(bs, len(bs))
    index = ConflictIndex(bs)
    for k, b in enumerate(order):   # added one by one, asked in between (as the placers do)
        assert {o.id for o in index.conflicting(b)} == {o.id for o in order[:k] if o.conflicts(b)}
        index.add(b)
    plain = ConflictIndex(bs, plain=True)
    for b in bs:
        plain.add(b)
    for b in bs:
        assert {o.id for o in index.conflicting(b)} == {o.id for o in bs if o is not b and o.conflicts(b)}
    np.testing.assert_array_equal(conflict_bytes(bs), pairwise.conflict_bytes(bs))


@pytest.mark.parametrize("seed,n,streams", CASES)
def test_every_assigner_and_the_bound_give_the_pairwise_answers(seed, n, streams):
    bs = requests(random.Random(seed), n, streams)
    steps = max(b.begin for b in bs) + 1
    assert live_lower_bound(bs, steps) == pairwise.live_lower_bound(bs, steps)
    for s in BLOCK_STRATEGIES:
        assert assign_blocks(bs, s) == pairwise.assign_blocks(bs, s), s.name
    assert ASSIGNERS["best-fit-size"](bs) == pairwise.place(
        bs, sorted(bs, key=lambda b: (-b.size, -(b.end - b.begin), b.id)), "best-fit-size")
    assert best_fit_by_breadth(bs) == pairwise.place(bs, pairwise.breadth_order(bs), "best-fit-breadth")
    weight = pairwise.conflict_bytes(bs)
    assert ASSIGNERS["best-fit-conflict"](bs) == pairwise.place(
        bs, sorted(bs, key=lambda b: (-weight[b.id], -b.size, b.id)), "best-fit-conflict")
    assert two_sided_fit(bs) == pairwise.two_sided_fit(bs)
    assert _place(bs, bs, "x") == pairwise.place(bs, bs, "x")


def test_max_tree_prefix_queries():
    rng = random.Random(3)
    values = [rng.randrange(-1, 50) for _ in range(75)]   # several buckets and a short last one
    tree = MaxTree(list(values))
    for _ in range(300):
        k = rng.randrange(len(values))
        values[k] = rng.randrange(-1, 50)   # raises and lowers
        tree.set(k, values[k])
        end, floor = rng.randrange(len(values) + 3), rng.randrange(-1, 50)
        assert sorted(tree.above(end, floor)) == [i for i in range(min(end, len(values))) if values[i] > floor]
    assert MaxTree([]).above(5, -1) == []


def _sum(n):
    names = [f"x{i}" for i in range(n)]
    g = helper.make_graph([helper.make_node("Sum", names, ["y"])], "g",
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, [2, 3]) for x in names],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_planning_work_grows_linearly_with_a_chain(monkeypatch):
    """A Sum of n inputs (split_variadic's chain of partial sums): the requests' conflict rule is consulted
    ~c*n times, not n^2 (the pairwise scans: 16x for 4x the inputs)."""
    calls = []
    free_for, conflicts = Buffer.free_for, Buffer.conflicts
    monkeypatch.setattr(Buffer, "free_for", lambda self, s: calls.append(1) or free_for(self, s))
    monkeypatch.setattr(Buffer, "conflicts", lambda self, o: calls.append(1) or conflicts(self, o))
    work = {}
    for n in (300, 1200):
        plan = dataclasses.replace(ge.compile(_sum(n)), memory=None)
        calls.clear()
        plan_memory(plan)
        work[n] = len(calls)
    assert work[1200] < 6 * work[300], work
