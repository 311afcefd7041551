"""A node with thousands of inputs compiles in bounded time (issue 46, item 3): split_variadic turns a Sum /
Max / Min / Mean / Concat of more than 8 inputs into nodes of at most 8, so the star-args kernels compile once per
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


def test_small_nodes_are_untouched():
    for op, n in (("Sum", ARITY), ("Concat", ARITY), ("Mean", ARITY)):
        g = Graph("g")
        xs = [g.add_input(f"x{i}", np.float32, (2,)) for i in range(n)]
        node = g.add_node(op, xs, 1, {"axis": 0} if op == "Concat" else {})
        assert not split_variadic(g) and node.inputs == xs and len(g.nodes) == 1


# 13 inputs: parts of 8 and 6 inputs, the arity classes the thousand-input tests above compile already
M = 13


def _ort(model, feeds):
    import onnxruntime as ort
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]


def test_mean_is_split_into_sums_and_one_division_with_the_same_bits():
    """Mean: a Sum folded as Sum's is, then Div by the count, as the one-node kernel computes it (a sum
    left to right, then each element / k in float32). onnxruntime sums in the same order but multiplies by
    float32(1 / k): within one ulp of ge (a rounding apart on 4 of these 6 elements), not the same bits."""
    feeds = _feeds(M)
    model = _model("Mean", M)
    plan = ge.compile(model)
    assert max(len(n.inputs) for n in plan.nodes) <= ARITY
    assert [n.op_type for n in plan.nodes] == ["Sum", "Sum", "Div"]
    want = feeds["x0"]
    for i in range(1, M):
        want = want + feeds[f"x{i}"]
    want = want / np.float32(M)
    with ge.Session(plan) as s:
        got = s.run(None, feeds)[0]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_max_ulp(got, _ort(model, feeds), maxulp=1)


def test_part_names_are_unique():
    plan = ge.compile(_model("Concat", 200, axis=1))
    names = [n.name for n in plan.nodes]
    assert len(names) == len(set(names)) and len(names) > 1


@pytest.mark.parametrize("op", ["Sum", "Mean"])
def test_a_16_bit_precision_mode_rounds_once_as_one_node_does(op):
    """force_fp16 stores a Sum's / Mean's result in float16: the split runs after that decision, so the parts
    add in float32 and only the node's output is rounded (split before it, every part rounded its partial
    sum: other bits)."""
    feeds = {k: v * 100 for k, v in _feeds(M).items()}
    acc = feeds["x0"].astype(np.float16).astype(np.float32)
    for i in range(1, M):
        acc = acc + feeds[f"x{i}"].astype(np.float16).astype(np.float32)
    if op == "Mean":
        acc = acc / np.float32(M)
    want = acc.astype(np.float16).astype(np.float32)
    with ge.Session(_model(op, M), options=ge.Options(precision_mode="force_fp16")) as s:
        np.testing.assert_array_equal(s.run(None, feeds)[0], want)
