"""Logical stream assignment: golden results on small graphs and on the Inception light models."""
import functools

import numpy as np
import pytest

from ge.errors import GEError
from ge.ir import Graph
from ge.kernels.bind import node_context, node_kernel
from ge.kernels.registry import is_registered
from ge.npu.engines import GE_LOCAL, engine_for_op
from ge.options import Options, as_options
from ge.schedule import dependencies, schedule
from ge.schedule.events import verify_events
from ge.schedule.stream_allocator import assign_streams
from ge.schedule.toposort import topological_order


def engines_of(g, order):
    """As the compiler binds them: the kernel's engine, GE_LOCAL for a node whose kernel gives no task."""
    out = []
    for n in order:
        k = node_kernel(g, n) if is_registered(n.op_type, n.domain) else None
        no_task = k is not None and k.alias is not None and k.bind(node_context(g, n, k)) is None
        out.append(GE_LOCAL if no_task else engine_for_op(n.op_type, k.engine if k else None))
    return out


def assign(g, order, options=None, exact_ge=False):
    """ge.schedule.schedule on the graph's order: (streams, events)."""
    sched = schedule(order, engines_of(g, order), as_options(options).replace(exact_ge_streams=exact_ge))
    return sched.streams, sched.events


def build(edges, ops=None, shape=(1, 4)):
    """A graph from 'name: input, input' lines; inputs not defined by a node are graph inputs."""
    g = Graph("t")
    ops = ops or {}
    vals = {}
    for line in edges:
        name, _, ins = line.partition(":")
        name = name.strip()
        args = []
        for a in [a.strip() for a in ins.split(",") if a.strip()]:
            if a not in vals:
                vals[a] = g.add_input(a, np.float32, shape)
            args.append(vals[a])
        node = g.add_node(ops.get(name, "Relu" if len(args) == 1 else "Add"), args, [name], name=name)
        node.outputs[0].dtype, node.outputs[0].shape = np.dtype(np.float32), tuple(shape)
        vals[name] = node.outputs[0]
    g.outputs = [node.outputs[0]]
    return g


def streams_of(g, options=None, mode="dfs"):
    order = topological_order(g, mode)
    a, _ = assign(g, order, options)
    return {n.name: s for n, s in zip(order, a.streams)}, a, order


def test_chain_stays_on_one_stream():
    g = build(["a: x", "b: a", "c: b", "d: c"])
    s, a, order = streams_of(g)
    assert set(s.values()) == {0} and a.num_streams == 1
    assert assign(g, order)[1].events == ()


def test_two_independent_branches_get_two_streams():
    g = build(["a: x", "b: a", "c: x", "d: c", "e: b, d"])
    s, a, order = streams_of(g)
    assert s == {"a": 0, "b": 0, "c": 1, "d": 1, "e": 1}
    ev = assign(g, order)[1]
    assert [(order[e.record_after].name, order[e.wait_before].name) for e in ev.events] == [("b", "e")]


def test_fork_join_first_branch_continues_on_the_fork_stream():
    """a forks to b and c, two AICORE successors: neither may simply reuse a's stream (GE's sibling rule).
    Here b takes a's stream anyway, since a is done before b can start; c opens a new one. GE as written
    opens two new streams, then its ineffective-multi-stream pass moves a, alone on its stream, onto b's."""
    g = build(["a: x", "b: a", "c: a", "d: b, c"])
    s, a, order = streams_of(g)
    assert s == {"a": 0, "b": 0, "c": 1, "d": 1} and a.moved == 0
    assert a.to_text() == """2 stream(s)
   0 s0 AICORE   a  # new stream (no predecessor)
   1 s0 AICORE   b  # reuses the stream of 'a', done before it ('a' has other AICORE successors)
   2 s1 AICORE   c  # new stream ('a' has other AICORE successors)
   3 s1 AICORE   d  # reuses the stream of 'c'"""
    exact, _ = assign(g, order, exact_ge=True)
    assert exact.streams == a.streams and exact.moved == 1
    assert exact.to_text() == """2 stream(s)
   0 s0 AICORE   a  # moved to the stream of 'b': its own gave no parallelism
   1 s0 AICORE   b  # new stream ('a' has other AICORE successors)
   2 s1 AICORE   c  # new stream ('a' has other AICORE successors)
   3 s1 AICORE   d  # reuses the stream of 'c'"""


def test_hccl_runs_on_its_own_stream():
    g = build(["a: x", "r: a", "b: r", "c: a", "d: c"], ops={"r": "HcomAllReduce"})
    s, a, order = streams_of(g)
    assert a.engines[[n.name for n in order].index("r")] == "HCCL"
    assert s["r"] not in {s["a"], s["b"], s["c"], s["d"]}
    assert sum(1 for v in s.values() if v == s["r"]) == 1
    assert "independent" in a.reasons[[n.name for n in order].index("r")]


def test_single_stream_option_and_ge_alias():
    g = build(["a: x", "b: a", "c: x", "d: c", "e: b, d"])
    for opts in (Options(enable_single_stream=True), {"ge.enableSingleStream": "true"}):
        s, a, _ = streams_of(g, opts)
        assert set(s.values()) == {0} and a.single_stream_reason == "enable_single_stream is set"
    s, a, _ = streams_of(g, Options(max_streams=1))
    assert set(s.values()) == {0} and a.single_stream_reason == "max_streams is 1"


def test_control_flow_is_a_dynamic_graph_not_forced_to_one_stream(caplog, monkeypatch):
    """GE: control flow gets streams (v1: label tasks / activation, docs/ge-reference.md §3.6). A static If (static
    tensors out: runtime_v1's label tasks) keeps the graph's streams; an If whose outputs are known only at
    run time runs host-driven and makes the graph dynamic, which keeps one stream unless
    ENABLE_DYNAMIC_SHAPE_MULTI_STREAM=1 (3.3); single-stream mode with control flow is refused (3.2)."""
    monkeypatch.delenv("ENABLE_DYNAMIC_SHAPE_MULTI_STREAM", raising=False)
    g = build(["a: x", "b: a", "c: x", "cond: c", "e: b, cond"], ops={"cond": "If"})
    s, a, _ = streams_of(g)
    assert a.single_stream_reason is None and len(set(s.values())) == 2
    next(n for n in g.nodes if n.name == "cond").outputs[0].shape = None
    with caplog.at_level("INFO", logger="ge.schedule"):
        s, a, _ = streams_of(g)
    assert set(s.values()) == {0}
    assert a.single_stream_reason.startswith("dynamic shapes (control flow: If node 'cond' runs host-driven)")
    monkeypatch.setenv("ENABLE_DYNAMIC_SHAPE_MULTI_STREAM", "1")
    s, a, _ = streams_of(g)
    assert a.single_stream_reason is None and len(set(s.values())) == 2
    with pytest.raises(GEError, match="GE refuses single-stream mode with control-flow ops"):
        streams_of(g, Options(enable_single_stream=True))


def test_max_streams_caps_and_reuses_the_least_loaded():
    lines = [f"b{i}: x" for i in range(6)] + [f"c{i}: b{i}" for i in range(6)] + [
        "j: " + ", ".join(f"c{i}" for i in range(6))]
    g = build(lines, ops={"j": "Concat"})
    s, a, _ = streams_of(g, Options(max_streams=3))
    assert a.num_streams == 3 and sorted(set(s.values())) == [0, 1, 2]
    assert any("max_streams 3 reached" in r for r in a.reasons)
    assert all(s[f"c{i}"] == s[f"b{i}"] for i in range(6))


def test_attach_engine_rides_on_the_predecessor_stream():
    engines = ["AICORE", "AICPU", "AICORE"]
    a = assign_streams(engines, [[], [0], [1]])
    assert a.streams == (0, 0, 0)


def test_streams_are_dense_in_order_of_first_use():
    g = build([f"b{i}: x" for i in range(5)] + ["j: b0, b1, b2, b3, b4"], ops={"j": "Concat"})
    _, a, _ = streams_of(g)
    firsts = list(dict.fromkeys(a.streams))
    assert firsts == list(range(a.num_streams))


@functools.lru_cache(maxsize=None)
def light(name):
    from ge.compiler import import_model, optimize
    from ge.zoo import light_model_path
    g = optimize(import_model(light_model_path(name)), Options())
    return g, topological_order(g)


@pytest.mark.parametrize("name, streams, moved, events", [
    ("inception_v1", 4, 0, (54, 54, 54)),
    ("inception_v2", 4, 0, (56, 56, 56)),
])
def test_inception_golden(name, streams, moved, events):
    g, order = light(name)
    a, ev = assign(g, order)
    assert (a.num_streams, a.moved) == (streams, moved)
    assert (ev.cross_edges, ev.after_ge_rules, ev.after_reduction) == events
    preds, _ = dependencies(order)
    assert verify_events(preds, a.streams, ev.events) == []
    assert sorted(set(a.streams)) == list(range(streams))
    engines = dict(zip((n.op_type for n in order), engines_of(g, order)))
    assert engines["Reshape"] == "GE_LOCAL" and engines["FusedConv"] == "AICORE"


GOLDEN = """\
2 stream(s)
   0 s0 AICORE   Relu_0  # new stream (no predecessor)
   1 s0 AICORE   Relu_1  # reuses the stream of 'Relu_0', done before it ('Relu_0' has other AICORE successors)
   2 s0 AICORE   Sigmoid_2  # reuses the stream of 'Relu_1'
   3 s1 AICORE   Relu_3  # new stream ('Relu_0' has other AICORE successors)
   4 s1 AICORE   Concat_4  # reuses the stream of 'Relu_3'
   5 s1 GE_LOCAL Reshape_5  # reuses the stream of 'Concat_4'
   6 s1 AICORE   Relu_6  # reuses the stream of 'Reshape_5'
   7 s1 AICORE   Add_7  # reuses the stream of 'Relu_6'
events: 2 cross-stream edges -> 2 after GE's rules -> 2 after transitive reduction (kept 2, mode transitive)
  e0: s0 after 'Relu_0' -> s1 before 'Relu_3'
  e1: s0 after 'Sigmoid_2' -> s1 before 'Concat_4'"""


def test_golden_streams_and_events_of_an_onnx_model():
    from onnx import TensorProto, helper, numpy_helper
    from ge.compiler import import_model, optimize
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("Sigmoid", ["b"], ["b2"]), helper.make_node("Relu", ["a"], ["c"]),
             helper.make_node("Concat", ["b2", "c"], ["d"], axis=1),
             helper.make_node("Reshape", ["d", "s"], ["e"]), helper.make_node("Relu", ["e"], ["f"]),
             helper.make_node("Add", ["f", "e"], ["y"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 128, 4])
    g = helper.make_graph(nodes, "golden", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.array([1, -1], np.int64), "s")])
    g = optimize(import_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])), Options())
    order = topological_order(g)
    a, ev = assign(g, order)
    text = a.to_text() + "\n" + ev.to_text([n.name for n in order])
    assert text == GOLDEN


def test_a_residual_input_does_not_block_reuse():
    """a feeds b and (residual) d = f(c, a), c = g(b): d depends on b, so b cannot run in parallel with it
    and reuses a's stream; GE's exact rule (any other same-engine successor blocks) opens a new one."""
    g = build(["p: x", "a: p", "b: a", "c: b", "d: c, a"])
    s, a, order = streams_of(g)
    assert set(s.values()) == {0}
    exact, _ = assign(g, order, exact_ge=True)
    assert exact.streams == (0, 0, 1, 1, 1) and "'a' has other AICORE successors" in exact.reasons[2]


@pytest.mark.parametrize("name", ["resnet50", "squeezenet", "shufflenet", "inception_v1"])
@pytest.mark.parametrize("mode", ["dfs", "bfs", "rdfs", "memory_priority"])
def test_light_models_every_mode_is_covered_by_events(name, mode):
    g, _ = light(name)
    order = topological_order(g, mode)
    for exact in (False, True):
        a, ev = assign(g, order, Options(topo_sorting_mode=mode), exact_ge=exact)
        preds, _ = dependencies(order)
        assert verify_events(preds, a.streams, ev.events) == []
        assert 1 <= a.num_streams <= 8


def test_resnet50_needs_one_stream_after_fusion():
    g, order = light("resnet50")
    assert assign(g, order)[0].num_streams == 1          # every block is a chain once Add is fused
    assert assign(g, order, exact_ge=True)[0].num_streams == 8


def test_a_node_with_a_subgraph_attribute_is_control_flow(monkeypatch):
    monkeypatch.delenv("ENABLE_DYNAMIC_SHAPE_MULTI_STREAM", raising=False)
    g = build(["a: x", "b: a", "c: x", "d: c", "e: b, d"], ops={"d": "MyLoopLike"})
    g.nodes[3].attrs["body"] = [Graph("body")]
    _, a, _ = streams_of(g)
    assert a.num_streams == 1 and "control flow: MyLoopLike node 'd'" in a.single_stream_reason


def test_dynamic_shapes_run_on_one_stream_unless_the_environment_asks(monkeypatch):
    g = build(["a: x", "b: a", "c: x", "d: c", "e: b, d"], shape=("N", 4))
    monkeypatch.delenv("ENABLE_DYNAMIC_SHAPE_MULTI_STREAM", raising=False)
    _, a, _ = streams_of(g)
    assert a.num_streams == 1 and a.single_stream_reason.startswith("dynamic shapes (node 'a')")
    monkeypatch.setenv("ENABLE_DYNAMIC_SHAPE_MULTI_STREAM", "1")
    assert streams_of(g)[1].num_streams == 2


FOUR_BRANCHES = [f"b{i}: x" for i in range(4)] + [f"c{i}: b{i}" for i in range(4)] + ["j: c0, c1, c2, c3"]


def test_auto_mode_is_ge_default_and_engine_mode_is_ge_s_one_stream_per_engine():
    g = build(FOUR_BRANCHES, ops={"j": "Concat"})
    s, a, _ = streams_of(g)
    assert a.num_streams == 4                         # auto: each sibling branch a stream of its own
    for opts in (Options(stream_parallel_mode="engine"), {"ge.autoMultistreamParallelMode": ""}):
        s, a, _ = streams_of(g, opts)
        assert a.num_streams == 1 and any("round robin" in r for r in a.reasons)
    assert Options.from_dict({"ge.autoMultistreamParallelMode": "auto"}).stream_parallel_mode == "auto"


@pytest.mark.parametrize("mode", ["auto", "engine"])
def test_stream_max_parallel_num_caps_an_engine_round_robin(mode):
    g = build(FOUR_BRANCHES, ops={"j": "Concat"})
    opts = {"ge.streamMaxParallelNum": "AIcoreEngine:2,VectorEngine:2"}
    if mode == "engine":
        opts["ge.autoMultistreamParallelMode"] = ""
    s, a, _ = streams_of(g, opts)
    assert a.num_streams == 2
    assert [s[f"b{i}"] for i in range(4)] == [0, 1, 0, 1]    # new streams given out in turn (GE's AssignNewStream)
    assert all(s[f"c{i}"] == s[f"b{i}"] for i in range(4))
    assert Options(stream_max_parallel_num={"AICORE": 3}).stream_max_parallel_num == (("AICORE", 3),)


@pytest.mark.parametrize("opts, match", [
    ({"ge.streamMaxParallelNum": "Foo:2"}, "ge.streamMaxParallelNum.*unknown engine 'Foo'"),
    ({"ge.streamMaxParallelNum": "AIcoreEngine:0"}, "ge.streamMaxParallelNum.*positive number"),
    ({"ge.streamMaxParallelNum": "AIcoreEngine:two"}, "ge.streamMaxParallelNum.*positive number"),
    ({"ge.streamMaxParallelNum": "AIcoreEngine"}, "ge.streamMaxParallelNum.*not EngineName:N"),
    ({"ge.streamMaxParallelNum": "AIcoreEngine:1,AICORE:2"}, "ge.streamMaxParallelNum.*twice"),
    ({"stream_max_parallel_num": 4}, "ge.streamMaxParallelNum"),
    ({"ge.autoMultistreamParallelMode": "LoadBalance:4"}, "ge.autoMultistreamParallelMode.*not supported"),
    ({"ge.autoMultistreamParallelMode": "fast"}, "ge.autoMultistreamParallelMode takes"),
    ({"stream_parallel_mode": "fast"}, "ge.autoMultistreamParallelMode"),
    ({"ge.enableSingleStream": "1", "ge.autoMultistreamParallelMode": "auto"}, "E10056"),
])
def test_bad_stream_caps_and_modes_are_typed_errors_naming_the_key(opts, match):
    with pytest.raises(GEError, match=match):
        Options.from_dict(opts)
