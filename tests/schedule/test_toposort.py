"""GE's sort modes as its code has them (graph_metadef/graph/normal_graph/compute_graph.cc): the memory-priority
key (smallest first), the delayed topological sort, StableRDFS (mode 3) and RDFS's smallest-input-first walk.
Planned bytes are on one stream, where the order alone decides the reuse."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
from ge.compiler import build_plan, import_model, optimize
from ge.options import Options
from ge.schedule.delay_sort import delay_sort
from ge.schedule.toposort import _deps, _out_bytes, ready_order, topological_order

ONE_STREAM = Options(enable_single_stream=True)


def _vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _graph(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return optimize(import_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])), ONE_STREAM)


def _two_expands():
    """x, y -> Expand to 64x64 (16 KiB each) -> ReduceSum -> Add."""
    shape = numpy_helper.from_array(np.array([64, 64], np.int64), "shape")
    nodes = [helper.make_node("Expand", ["x", "shape"], ["e1"], name="e1"),
             helper.make_node("Expand", ["y", "shape"], ["e2"], name="e2"),
             helper.make_node("ReduceSum", ["e1"], ["r1"], keepdims=0, name="r1"),
             helper.make_node("ReduceSum", ["e2"], ["r2"], keepdims=0, name="r2"),
             helper.make_node("Add", ["r1", "r2"], ["out"], name="add")]
    return _graph(nodes, [_vi("x", [1, 64]), _vi("y", [1, 64])], [_vi("out", [])], [shape])


def _late_consumer(side_shape=(64, 64)):
    """b = Sigmoid(y) is listed first, but only the last node (Add) reads it; x runs a chain of three."""
    nodes = [helper.make_node("Sigmoid", ["y"], ["b"], name="b"),
             helper.make_node("Neg", ["x"], ["a1"], name="a1"),
             helper.make_node("Abs", ["a1"], ["a2"], name="a2"),
             helper.make_node("Neg", ["a2"], ["a3"], name="a3"),
             helper.make_node("Add", ["a3", "b"], ["out"], name="add")]
    return _graph(nodes, [_vi("x", [64, 64]), _vi("y", list(side_shape))], [_vi("out", [64, 64])])


def _names(order):
    return [n.name for n in order]


def _planned(graph, order) -> int:
    return build_plan(graph, order, ONE_STREAM).memory.stats.feature_map_bytes


def test_memory_priority_pops_the_smallest_key_as_the_code_does():
    """docs/ge-reference.md §1.1 (memory-priority sort): TopoSortStack pops the smallest NodeOutInfo (consumers,
    output bytes, name) first; the article of §8.3 says larger outputs first. On two Expand -> ReduceSum
    branches the code's rule finishes one branch before the second Expand (one 16 KiB block, reused); the
    article's rule would run both Expands first (two blocks)."""
    g = _two_expands()
    code = topological_order(g, "memory_priority")
    assert _names(code) == ["e1", "r1", "e2", "r2", "add"]
    preds, succs = _deps(g)
    larger_first = ready_order(g, preds, succs, lambda i: (-_out_bytes(g.nodes[i]), g.nodes[i].name, i))
    assert _names(larger_first) == ["e1", "e2", "r1", "r2", "add"]
    assert (_planned(g, code), _planned(g, larger_first)) == (17920, 33792)


def test_delayed_sort_moves_a_chain_from_long_lived_inputs_to_its_consumer():
    """docs/ge-reference.md §1.1 and §8.4 (the delayed sort, DelayTopoSort): a node whose inputs are all graph
    inputs or constants moves to right before its first consumer when that is more than one step
    ahead. Before: b, a1, a2, a3, add (b's 16 KiB live across the chain); expected: a1, a2, a3, b, add."""
    g = _late_consumer()
    before = topological_order(g, "dfs")
    assert _names(before) == ["b", "a1", "a2", "a3", "add"]
    after = delay_sort(g, before)
    assert _names(after) == ["a1", "a2", "a3", "b", "add"]
    assert (_planned(g, before), _planned(g, after)) == (49152, 32768)
    assert _names(delay_sort(g, after)) == _names(after)   # a fixed point


def test_delayed_sort_carries_a_chain_and_stops_at_a_shared_node():
    """docs/ge-reference.md §1.1, DelayTopoSort / GetOutNodeIndex: a moved node joins its consumer's group, and the
    group moves on while its last node has a single input; a node with several consumers (here p is also a
    graph output, GE's NetOutput) pins the group it joins ("last node cannot be delay")."""
    def graph(p_is_output):
        nodes = [helper.make_node("Sigmoid", ["y"], ["p"], name="p"),   # long-lived input: may move
                 helper.make_node("Neg", ["x"], ["a1"], name="a1"),
                 helper.make_node("Neg", ["p"], ["q"], name="q"),        # single input: p, q move on together
                 helper.make_node("Abs", ["a1"], ["a2"], name="a2"),
                 helper.make_node("Add", ["a2", "q"], ["out"], name="add")]
        outs = [_vi("out", [8])] + ([_vi("p", [8])] if p_is_output else [])
        return _graph(nodes, [_vi("x", [8]), _vi("y", [8])], outs)
    g = graph(False)
    assert _names(g.nodes) == ["p", "a1", "q", "a2", "add"]
    assert _names(delay_sort(g, list(g.nodes))) == ["a1", "a2", "p", "q", "add"]
    g = graph(True)
    assert _names(delay_sort(g, list(g.nodes))) == ["p", "q", "a1", "a2", "add"]


def test_memory_priority_and_rdfs_run_the_delayed_sort_stable_rdfs_does_not():
    """docs/ge-reference.md §1.1; compute_graph.cc DoTopologicalSorting: DelayTopoSort after RDFS always and after any
    mode but StableRDFS under MemoryPriority. A 4-byte side value (1 consumer, smallest key) pops first
    under memory priority and is then delayed to its consumer; StableRDFS keeps the graph's order."""
    g = _late_consumer(side_shape=(1, 1))
    assert _names(topological_order(g, "memory_priority")) == ["a1", "a2", "a3", "b", "add"]
    preds, succs = _deps(g)
    from ge.schedule.toposort import memory_priority_key
    assert _names(ready_order(g, preds, succs, memory_priority_key(g, succs)))[0] == "b"  # before the delay
    assert _names(topological_order(g, "stable_rdfs")) == ["b", "a1", "a2", "a3", "add"]


def test_rdfs_visits_the_smallest_input_first_stable_rdfs_keeps_the_order():
    """docs/ge-reference.md §1.1 modes 2 and 3: RDFS's NodeCmp set is read from the back, so a consumer's smallest
    input is emitted first and its largest last (next to it); StableRDFS visits inputs in the graph's
    order, so an order that is already topological comes out unchanged."""
    g = _late_consumer()
    assert _names(topological_order(g, "rdfs")) == ["a1", "a2", "a3", "b", "add"]
    assert _names(topological_order(g, "stable_rdfs")) == _names(g.nodes)
    assert _planned(g, topological_order(g, "rdfs")) < _planned(g, topological_order(g, "stable_rdfs"))


@pytest.mark.parametrize("value,mode", [("3", "stable_rdfs"), ("2", "rdfs"), ("StableRDFS", "stable_rdfs")])
def test_ge_topo_sorting_mode_numbers(value, mode):
    """docs/ge-reference.md §1.1: ge.topoSortingMode 0 BFS, 1 DFS, 2 RDFS, 3 StableRDFS (3 used to map to RDFS)."""
    assert Options.from_dict({"ge.topoSortingMode": value}).topo_sorting_mode == mode


@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_stable_rdfs_runs_on_both_runtimes(runtime):
    """docs/ge-reference.md §1.1 mode 3 end to end: the plan's order is the time axis both runtimes follow."""
    vi = _vi
    nodes = [helper.make_node("Sigmoid", ["y"], ["b"]), helper.make_node("Neg", ["x"], ["a1"]),
             helper.make_node("Add", ["a1", "b"], ["out"])]
    model = helper.make_model(helper.make_graph(nodes, "g", [vi("x", [4]), vi("y", [4])], [vi("out", [4])]),
                              opset_imports=[helper.make_opsetid("", 13)])
    x, y = np.arange(4, dtype=np.float32), np.ones(4, np.float32)
    with ge.Session(model, runtime=runtime, options={"ge.topoSortingMode": "3"}) as s:
        (out,) = s.run(None, {"x": x, "y": y})
    np.testing.assert_allclose(out, -x + 1 / (1 + np.exp(-y)), rtol=1e-6)
