"""A node with thousands of inputs compiles in bounded time (issue 46, item 3): split_variadic turns a Sum /
Max / Min / Concat of more than 8 inputs into nodes of at most 8, so the star-args kernels compile once per
arity class (2..8), not once per input count (a 1,000-input Concat took 162 s and 2 GB; 10,000 inputs never
finished). The fold keeps the kernel's order of operations: the same bits as one node."""
import numpy as np
import pytest
from onnx import helper

import ge
from ge.ir import Graph
from ge.passes.split_variadic import ARITY, split_variadic
from rel_models import make_model, vi

N = 1000


def _model(op, n, **attrs):
    names = [f"x{i}" for i in range(n)]
    return make_model([helper.make_node(op, names, ["y"], **attrs)], [vi(x, [2, 3]) for x in names], [vi("y", None)])


def _feeds(n):
    rng = np.random.default_rng(7)
    return {f"x{i}": rng.standard_normal((2, 3)).astype(np.float32) for i in range(n)}


@pytest.mark.parametrize("op", ["Sum", "Max", "Min"])
def test_a_thousand_input_fold_is_bit_exact(op):
    feeds = _feeds(N)
    xs = list(feeds.values())
    f = {"Sum": np.add, "Max": np.maximum, "Min": np.minimum}[op]
    want = xs[0]
    for x in xs[1:]:   # the kernel's order: ((x0 op x1) op x2) ...
        want = f(want, x)
    plan = ge.compile(_model(op, N))
    assert max(len(n.inputs) for n in plan.nodes) <= ARITY and len(plan.nodes) == -(-(N - 1) // (ARITY - 1))
    with ge.Session(plan) as s:
        np.testing.assert_array_equal(s.run(None, feeds)[0], want)


def test_a_thousand_input_concat_is_a_tree():
    feeds = _feeds(N)
    plan = ge.compile(_model("Concat", N, axis=1))
    assert max(len(n.inputs) for n in plan.nodes) <= ARITY
    with ge.Session(plan) as s:
        np.testing.assert_array_equal(s.run(None, feeds)[0], np.concatenate(list(feeds.values()), axis=1))


def test_small_nodes_and_mean_are_untouched():
    for op, n in (("Sum", ARITY), ("Concat", ARITY), ("Mean", 20)):
        g = Graph("g")
        xs = [g.add_input(f"x{i}", np.float32, (2,)) for i in range(n)]
        node = g.add_node(op, xs, 1, {"axis": 0} if op == "Concat" else {})
        assert not split_variadic(g) and node.inputs == xs and len(g.nodes) == 1
