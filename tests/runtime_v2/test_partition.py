"""Static pieces of a dynamic plan (ge/partition.py, GE's DynamicShapePartitioner): compiled as static plans,
run by runtime_v1's task sink inside runtime_v2's host loop (runtime_v2/sunk.py).

Oracles: the same model with nothing sunk (static_model_ops_lower_limit above the graph: every node
host-driven), bitwise; onnxruntime; and the partition rules checked on the IR (no kernels)."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T, helper as h

import ge
from ge import partition
from ge.cli.plan import dynamic_summary
from ge.compiler import import_model
from ge.errors import GEError
from ge.models import detector_like
from ge.plan import host_driven, sunk_plan
from hammer import hammer

ALL_HOST = {"static_model_ops_lower_limit": 1 << 40}


@pytest.fixture(scope="module")
def detector():
    return detector_like(hw=64, width=16)


def _images(n, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((1, 3, 64, 64)).astype(np.float32) for _ in range(n)]


def test_detector_backbone_sinks_bitwise_equal_to_host_driven_and_matches_onnxruntime(detector):
    sunk = ge.Session(detector)
    host = ge.Session(detector, options=ALL_HOST)
    ref = ort.InferenceSession(detector.SerializeToString(), providers=["CPUExecutionProvider"])
    for x in _images(3):   # other data each run: NMS keeps a different number of boxes
        got, want, ort_out = sunk.run(None, {"image": x}), host.run(None, {"image": x}), ref.run(None, {"image": x})
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape and np.array_equal(g, w)
        np.testing.assert_array_equal(got[0], ort_out[0])                  # the selected rows
        np.testing.assert_allclose(got[1], ort_out[1], rtol=1e-5, atol=1e-3)  # their boxes (pixels, up to 64)
    st = sunk.stats()
    pieces = st["static_pieces"]
    assert st["runtime"] == "v2" and pieces["pieces"] == 1 and pieces["sunk_nodes"] == 24 and pieces["nodes"] == 28
    assert pieces["host_driven"][0] == "NonMaxSuppression 'nms_87'" and len(pieces["host_driven"]) == 4
    assert "1 static piece sunk, 24 of 28 nodes (runtime_v1's task sink)" in st["runtime_reason"]
    assert "4 of 28 nodes" in st["runtime_reason"]
    assert host.stats()["static_pieces"]["pieces"] == 0


def test_the_piece_is_a_static_plan_with_its_own_memory_and_the_outer_plan_names_the_rest(detector):
    plan = ge.compile(detector)
    calls = [n for n in plan.nodes if sunk_plan(n) is not None]
    assert len(calls) == 1 and calls[0].op_type == "PartitionedCall" and calls[0].step == 0
    body = sunk_plan(calls[0])
    assert not body.is_dynamic and body.memory.segments["feature_map"] > 0
    assert [plan.tensors[t].name for t in calls[0].inputs] == ["image"]
    # what the rest reads: the boxes (also squeezed for the Gather) and the scores
    assert sorted(plan.tensors[t].name for t in calls[0].outputs) == ["boxes_2d_91", "boxes_80", "scores_83"]
    assert [n.op_type for n in host_driven(plan)] == ["NonMaxSuppression", "Gather", "Gather", "Identity"]
    text = dynamic_summary(plan)
    assert "sunk      1 static piece sunk, 24 of 28 nodes; host-driven: NonMaxSuppression 'nms_87'" in text
    assert "PartitionedCall_stem_3: 24 nodes" in text and "(static piece of 24 nodes: sunk)" in plan.summary()
    with pytest.raises(GEError, match="NonMaxSuppression node 'nms_87'"):   # v1 names a host-driven node
        ge.Session(detector, runtime="v1")


def test_threads_share_a_partitioned_session(detector):
    """Each concurrent run gets a runtime_v2 instance, and its piece a runtime_v1 instance (both pooled)."""
    sess, host = ge.Session(detector), ge.Session(detector, options=ALL_HOST)
    xs = _images(4, seed=11)
    want = [host.run(None, {"image": x}) for x in xs]
    assert hammer(lambda x: sess.run(None, {"image": x}), xs, want, runs=5, timeout=300, rotate=True) == []


def test_ge_run_lines_count_the_pieces_weights_memory_and_tasks(detector):
    from ge.cli.common import cores, memory_line
    sess = ge.Session(detector)
    sess.run(None, {"image": _images(1)[0]})
    body = sunk_plan(sess.plan.nodes[0])
    weights = sum(a.nbytes for p in (sess.plan, body) for a in p.constants.values())
    assert f"weights {weights / 2**20:.2f} MiB" in memory_line(sess)
    assert f"plus {body.memory.segments['feature_map'] / 2**20:.2f} MiB planned for the static pieces" in memory_line(sess)
    tasks = sum(n.launch is not None and not n.no_task for n in body.nodes)
    assert f"of {tasks} tasks split into blocks" in cores(sess)


def test_a_partitioned_plan_saved_and_loaded_runs_the_same(detector, tmp_path):
    plan = ge.compile(detector)
    ge.save(plan, tmp_path / "det.gem")
    loaded = ge.Session(str(tmp_path / "det.gem"))
    x = _images(1, seed=5)[0]
    for g, w in zip(loaded.run(None, {"image": x}), ge.Session(plan).run(None, {"image": x})):
        assert np.array_equal(g, w)
    assert loaded.stats()["static_pieces"]["pieces"] == 1


def _two_inputs_model():
    """A static chain on a fixed input (6 elementwise tasks) meets an input of unknown length: the chain
    sinks, the Add after it (its shape follows the input) and the NonZero stay host-driven."""
    nodes, y = [], "x"
    for k in range(3):
        nodes += [h.make_node("Mul", [y, "two"], [f"m{k}"], name=f"m{k}"),
                  h.make_node("Relu", [f"m{k}"], [f"r{k}"], name=f"r{k}")]
        y = f"r{k}"
    nodes += [h.make_node("Add", [y, "v"], ["s"], name="add"), h.make_node("NonZero", ["s"], ["nz"], name="nz")]
    g = h.make_graph(nodes, "two_inputs", [h.make_tensor_value_info("x", T.FLOAT, [1, 8]),
                                           h.make_tensor_value_info("v", T.FLOAT, ["N", 8])],
                     [h.make_tensor_value_info("s", T.FLOAT, None), h.make_tensor_value_info("nz", T.INT64, None)],
                     [onnx.numpy_helper.from_array(np.array(0.5, np.float32), "two")])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def _state_model():
    """A running state updated by a static chain (the piece makes the next state), a NonZero on it after."""
    nodes = [h.make_node("Add", ["s_in", "x"], ["a"], name="a"), h.make_node("Mul", ["a", "half"], ["b"], name="b"),
             h.make_node("Relu", ["b"], ["c"], name="c"), h.make_node("Sub", ["c", "x"], ["s_out"], name="d"),
             h.make_node("NonZero", ["s_out"], ["nz"], name="nz")]
    f = T.FLOAT
    g = h.make_graph(nodes, "state", [h.make_tensor_value_info("x", f, [2, 4]), h.make_tensor_value_info("s_in", f, [2, 4])],
                     [h.make_tensor_value_info("s_out", f, [2, 4]), h.make_tensor_value_info("nz", T.INT64, None)],
                     [onnx.numpy_helper.from_array(np.array(0.5, np.float32), "half")])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def test_a_state_pair_made_by_a_piece_carries_from_run_to_run():
    opts = {"state_pairs": {"s_out": "s_in"}}
    sess = ge.Session(_state_model(), options=opts)
    host = ge.Session(_state_model(), options=dict(opts, **ALL_HOST))
    assert sess.stats()["static_pieces"]["pieces"] == 1
    rng, state = np.random.default_rng(4), np.zeros((2, 4), np.float32)
    for _ in range(3):
        x = rng.standard_normal((2, 4)).astype(np.float32)
        got, want = sess.run(None, {"x": x}), host.run(None, {"x": x})
        state = np.maximum((state + x) * np.float32(0.5), 0) - x
        np.testing.assert_array_equal(got[0], state)
        assert all(np.array_equal(g, w) for g, w in zip(got, want))


@pytest.mark.parametrize("limit, pieces", [(0, 1), (6, 1), (7, 0)])
def test_an_input_of_unknown_dims_and_the_threshold(limit, pieces):
    model = _two_inputs_model()
    sess = ge.Session(model, options={"static_model_ops_lower_limit": limit})
    host = ge.Session(model, options=ALL_HOST)
    rng = np.random.default_rng(3)
    for n in (1, 3):
        feeds = {"x": rng.standard_normal((1, 8)).astype(np.float32),
                 "v": rng.standard_normal((n, 8)).astype(np.float32)}
        for g, w in zip(sess.run(None, feeds), host.run(None, feeds)):
            assert np.array_equal(g, w)
        s = np.maximum(np.maximum(np.maximum(feeds["x"] * 0.5, 0) * 0.5, 0) * 0.5, 0) + feeds["v"]
        np.testing.assert_array_equal(sess.run(None, feeds)[1], np.array(np.nonzero(s)))
    st = sess.stats()["static_pieces"]
    assert st["pieces"] == pieces and st["sunk_nodes"] == 6 * pieces


def _before_and_after_model():
    """A static chain (piece A) feeds a NonZero and, past it, a second static chain (piece B) that also reads
    the count of nonzeros (a scalar: static again after the data-sized NonZero)."""
    nodes = [h.make_node("Mul", ["x", "half"], ["a1"], name="a1"), h.make_node("Sub", ["a1", "half"], ["a2"], name="a2"),
             h.make_node("Relu", ["a2"], ["a3"], name="a3"), h.make_node("Add", ["a3", "x"], ["a4"], name="a4"),
             h.make_node("NonZero", ["a3"], ["nz"], name="nz"), h.make_node("Cast", ["nz"], ["nzf"], name="nzf", to=T.FLOAT),
             h.make_node("ReduceSum", ["nzf"], ["count"], name="count", keepdims=0),
             h.make_node("Add", ["a4", "count"], ["b1"], name="b1"), h.make_node("Mul", ["b1", "half"], ["b2"], name="b2"),
             h.make_node("Relu", ["b2"], ["b3"], name="b3"), h.make_node("Sub", ["b3", "a4"], ["y"], name="b4")]
    g = h.make_graph(nodes, "before_after", [h.make_tensor_value_info("x", T.FLOAT, [2, 8])],
                     [h.make_tensor_value_info("y", T.FLOAT, [2, 8])],
                     [onnx.numpy_helper.from_array(np.array(0.5, np.float32), "half")])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def test_pieces_before_and_after_a_data_sized_node_run_in_order():
    model = _before_and_after_model()
    sess, host = ge.Session(model), ge.Session(model, options=ALL_HOST)
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    plan = sess.plan
    assert [n.op_type for n in plan.nodes] == ["PartitionedCall", "NonZero", "Cast", "ReduceSum", "PartitionedCall"]
    assert [len(sunk_plan(n).nodes) for n in plan.nodes if sunk_plan(n) is not None] == [4, 4]
    rng = np.random.default_rng(8)
    for _ in range(3):
        x = rng.standard_normal((2, 8)).astype(np.float32)
        got = sess.run(None, {"x": x})[0]
        assert np.array_equal(got, host.run(None, {"x": x})[0])
        np.testing.assert_allclose(got, ref.run(None, {"x": x})[0], rtol=1e-6, atol=1e-6)


def test_static_control_flow_keeps_the_whole_plan_on_the_task_sink():
    """An If whose branches are static runs as runtime_v1's label tasks: the plan is not cut (a piece would
    send it to runtime_v2); with a NonZero after it, the static chain sinks and the If runs host-driven."""
    out = lambda name: [h.make_tensor_value_info(name, T.FLOAT, [2, 8])]  # noqa: E731
    then = h.make_graph([h.make_node("Mul", ["a4", "half"], ["t"])], "then", [], out("t"))
    other = h.make_graph([h.make_node("Identity", ["a4"], ["e"])], "else", [], out("e"))
    chain = [h.make_node("Mul", ["x", "half"], ["a1"]), h.make_node("Sub", ["a1", "half"], ["a2"]),
             h.make_node("Relu", ["a2"], ["a3"]), h.make_node("Add", ["a3", "x"], ["a4"]),
             h.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other, name="pick")]
    ins = [h.make_tensor_value_info("x", T.FLOAT, [2, 8]), h.make_tensor_value_info("c", T.BOOL, [])]
    inits = [onnx.numpy_helper.from_array(np.array(0.5, np.float32), "half")]

    def model(nodes, outputs):
        return h.make_model(h.make_graph(chain + nodes, "cf", ins, outputs, inits),
                            opset_imports=[h.make_opsetid("", 17)])
    x = np.random.default_rng(2).standard_normal((2, 8)).astype(np.float32)
    static = ge.Session(model([], out("y")))
    assert static.runtime == "v1" and not any(sunk_plan(n) for n in static.plan.nodes)
    nz = model([h.make_node("NonZero", ["y"], ["nz"], name="nz")], [h.make_tensor_value_info("nz", T.INT64, None)])
    sess, host = ge.Session(nz), ge.Session(nz, options=ALL_HOST)
    assert sess.runtime == "v2" and sess.stats()["static_pieces"]["pieces"] == 1
    for c in (True, False):
        feeds = {"x": x, "c": np.array(c)}
        assert np.array_equal(sess.run(None, feeds)[0], host.run(None, feeds)[0])
        assert np.array_equal(static.run(None, feeds)[0], ge.Session(model([], out("y")), runtime="v2").run(None, feeds)[0])


def test_ge_option_name_sets_the_threshold():
    assert ge.Options.from_dict({"ge.exec.static_model_ops_lower_limit": "9"}).static_model_ops_lower_limit == 9
    assert ge.Options().static_model_ops_lower_limit == 4   # GE's default (static_model_ops_lower_limit_ = 4)


@pytest.mark.parametrize("bad", [-1, 2.5, "4", True, None])
def test_a_threshold_that_is_not_a_non_negative_int_is_refused(bad):
    with pytest.raises(GEError, match="static_model_ops_lower_limit"):
        ge.Options(static_model_ops_lower_limit=bad)


@pytest.mark.parametrize("bad", ["-1", "four", "1.5"])
def test_a_bad_ge_option_value_names_the_option(bad):
    with pytest.raises(GEError, match="static_model_ops_lower_limit"):
        ge.Options.from_dict({"ge.exec.static_model_ops_lower_limit": bad})


# -- the rules on the IR (no kernels: known flags given) ----------------------------------------------------

def _chain_graph(edges: list[tuple[str, list[str]]]):
    """An IR graph of Relu/Add nodes: (name, inputs) in order; "x" the input, every node's output its name,
    the last node's the graph's output."""
    nodes = [h.make_node("Relu" if len(ins) == 1 else "Add", ins, [name], name=name) for name, ins in edges]
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [4])],
                     [h.make_tensor_value_info(edges[-1][0], T.FLOAT, [4])])
    graph = import_model(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]))
    return graph, list(graph.nodes)


def _pieces(graph, order, unknown: set, limit=1):
    known = [n.name not in unknown for n in order]
    pieces = partition.static_pieces(graph, order, known, known, limit)
    return pieces, partition.unit_order(order, pieces)


def test_a_known_node_between_two_unknown_ones_turns_unknown():
    graph, order = _chain_graph([("a", ["x"]), ("u1", ["a"]), ("b", ["u1"]), ("u2", ["b"]), ("c", ["u2"])])
    pieces, _ = _pieces(graph, order, {"u1", "u2"})
    assert [[n.name for n in p.nodes] for p in pieces] == [["a"], ["c"]]   # b is between u1 and u2


def test_nodes_before_and_after_an_unknown_one_never_share_a_piece():
    # a feeds u and b; b also reads u: {a, b} as one piece would both feed u and wait for it (a cycle)
    graph, order = _chain_graph([("a", ["x"]), ("u", ["a"]), ("b", ["a", "u"]), ("c", ["b"])])
    pieces, units = _pieces(graph, order, {"u"})
    assert [[n.name for n in p.nodes] for p in pieces] == [["a"], ["b", "c"]]
    assert [p.name if isinstance(p, partition.Piece) else p.name for p in units] == \
        ["PartitionedCall_a", "u", "PartitionedCall_b"]
    assert [v.name for v in pieces[0].outputs] == ["a"] and [v.name for v in pieces[1].inputs] == ["a", "u"]


def test_the_order_keeps_every_value_before_its_readers():
    edges = [("a", ["x"]), ("u", ["x"]), ("b", ["a"]), ("d", ["u"]), ("c", ["b", "x"]), ("e", ["c", "d"])]
    graph, order = _chain_graph(edges)
    pieces, units = _pieces(graph, order, {"u"}, limit=2)
    assert [sorted(n.name for n in p.nodes) for p in pieces] == [["a", "b", "c"], ["d", "e"]]
    made = {"x"}
    for u in units:
        nodes = u.nodes if isinstance(u, partition.Piece) else [u]
        inside = {v.name for n in nodes for v in n.outputs}
        assert all(v.name in made or v.name in inside or v.is_const for n in nodes for v in n.inputs)
        made |= inside
    pieces, _ = _pieces(graph, order, {"u"}, limit=4)   # no cluster has 4 tasks
    assert pieces == []
