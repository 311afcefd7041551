"""GE's stream labels, parallel groups and attached streams (docs/ge-reference.md §3.2 steps 2 and 6:
AssignByLabelPass, UpdateForParallelGroupPass; AssignAttachedStreamPass), from the ONNX node attributes
`_stream_label` / `_parallel_group` / `_attached_stream_key` or from Options by node name; on both runtimes the
labelled plan computes what the unlabelled one does."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import ge
from ge.errors import GEError
from ge.memory.verify import verify_memory
from stream_options import PER_STREAM

OPS = ("Relu", "Neg", "Abs", "Sigmoid")


def _chain(**attrs_of):
    """x -> n0 Relu -> n1 Neg -> n2 Abs -> n3 Sigmoid; attrs_of = {node name: {attribute: value}}."""
    vi = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [64])  # noqa: E731
    nodes, prev = [], "x"
    for k, op in enumerate(OPS):
        nodes.append(helper.make_node(op, [prev], [f"t{k}"], name=f"n{k}", **attrs_of.get(f"n{k}", {})))
        prev = f"t{k}"
    return helper.make_model(helper.make_graph(nodes, "chain", [vi("x")], [vi(prev)]),
                             opset_imports=[helper.make_opsetid("", 13)])


def _streams(plan):
    return {n.name: n.stream for n in plan.nodes}


def test_stream_label_attribute_gives_the_labelled_nodes_their_own_stream():
    """docs/ge-reference.md §3.2 step 2 (AssignByLabelPass): one fresh stream per distinct label, which unlabelled
    nodes never reuse; the topology pass leaves labelled nodes alone."""
    assert ge.compile(_chain()).num_streams == 1
    plan = ge.compile(_chain(n1={"_stream_label": "side"}, n2={"_stream_label": "side"}))
    s = _streams(plan)
    assert s["n1"] == s["n2"] != s["n0"] == s["n3"]
    assert plan.num_streams == 2 and len(plan.events) == 2
    verify_memory(plan, plan.memory)


def test_stream_labels_by_option_win_over_the_attribute():
    """Options.stream_labels by node name (also "name:label;..."): GE's USER_STREAM_LABEL > StreamLabel."""
    model = _chain(n1={"_stream_label": "side"})
    plan = ge.compile(model, {"stream_labels": "n1:a;n3:b"})
    s = _streams(plan)
    assert len({s["n0"], s["n1"], s["n3"]}) == 3 and plan.num_streams == 3
    with pytest.raises(GEError, match="stream_labels names node 'nope'"):
        ge.compile(model, {"stream_labels": {"nope": "x"}})


def _fork(**attrs_of):
    """r = Relu(x) feeds three branches b, c, d, summed: with max_streams 2 two branches share a stream."""
    vi = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [64])  # noqa: E731
    mk = lambda op, ins, out: helper.make_node(op, ins, [out], name=out, **attrs_of.get(out, {}))  # noqa: E731
    nodes = [mk("Relu", ["x"], "r"), mk("Neg", ["r"], "b"), mk("Abs", ["r"], "c"), mk("Sigmoid", ["r"], "d"),
             mk("Add", ["b", "c"], "bc"), mk("Add", ["bc", "d"], "out")]
    return helper.make_model(helper.make_graph(nodes, "fork", [vi("x")], [vi("out")]),
                             opset_imports=[helper.make_opsetid("", 13)])


def test_parallel_group_moves_its_nodes_to_a_new_stream():
    """docs/ge-reference.md §3.2 step 6 (UpdateForParallelGroupPass): unlabelled nodes of one group on one stream get
    one new stream. With max_streams 2, branch d shares b's stream; in group 'gd' it runs on its own."""
    s = _streams(ge.compile(_fork(), {"max_streams": 2}))
    assert s["b"] == s["d"] != s["c"]
    plan = ge.compile(_fork(d={"_parallel_group": "gd"}), {"max_streams": 2})
    s = _streams(plan)
    assert len({s["b"], s["c"], s["d"]}) == 3 and plan.num_streams == 3
    s2 = _streams(ge.compile(_fork(), {"max_streams": 2, "parallel_groups": {"d": "gd"}}))
    assert s2 == s
    verify_memory(plan, plan.memory)


def test_single_stream_with_a_label_is_refused():
    """docs/ge-reference.md §3.2: SingleStreamPass fails when a StreamLabel exists (E10056)."""
    with pytest.raises(GEError, match="stream label 'side'.*E10056"):
        ge.compile(_chain(n1={"_stream_label": "side"}), {"enable_single_stream": True})


@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_labelled_plans_run_on_both_runtimes(runtime):
    """docs/ge-reference.md §3.2: labels change streams and events only; results are the unlabelled plan's."""
    x = np.linspace(-3, 3, 64, dtype=np.float32)
    with ge.Session(_chain(), runtime=runtime) as s:
        want = s.run(None, {"x": x})[0]
    model = _chain(n1={"_stream_label": "side"})
    with ge.Session(model, runtime=runtime, options={"thread_budget": 3, "stream_labels": {"n3": "tail"}, **PER_STREAM}) as s:
        assert s.plan.num_streams == 3 and s.stream_threads == 3
        for _ in range(3):
            np.testing.assert_array_equal(s.run(None, {"x": x})[0], want)
    with ge.Session(_fork(), runtime=runtime) as s:
        want = s.run(None, {"x": x})[0]
    opts = {"thread_budget": 3, "max_streams": 2, "parallel_groups": {"d": "gd"}, **PER_STREAM}
    with ge.Session(_fork(), runtime=runtime, options=opts) as s:
        assert s.plan.num_streams == 3
        for _ in range(3):
            np.testing.assert_array_equal(s.run(None, {"x": x})[0], want)


def test_attached_streams_follow_the_main_ones_one_per_reuse_key():
    """docs/ge-reference.md §3.2 (AssignAttachedStreamPass): after the main streams are numbered densely, nodes with
    attached stream info get extra streams numbered after them; equal reuse keys share one."""
    main = ge.compile(_fork())
    n_main = main.num_streams
    plan = ge.compile(_fork(b={"_attached_stream_key": "k"}, d={"_attached_stream_key": "k"}))
    s = _streams(plan)
    assert s["b"] == s["d"] == n_main and plan.num_streams == n_main + 1   # one attached stream, after the main
    plan2 = ge.compile(_fork(b={"_attached_stream_key": "k"}), {"attached_streams": {"d": "k2"}})
    s2 = _streams(plan2)
    assert (s2["b"], s2["d"]) == (n_main, n_main + 1) and plan2.num_streams == n_main + 2
    verify_memory(plan2, plan2.memory)
    x = np.linspace(-3, 3, 64, dtype=np.float32)
    want = ge.Session(main, runtime="v2").run(None, {"x": x})[0]
    for runtime in ("v1", "v2"):
        with ge.Session(plan2, runtime=runtime) as sess:
            np.testing.assert_array_equal(sess.run(None, {"x": x})[0], want)
    with pytest.raises(GEError, match="attached_streams names node 'nope'"):
        ge.compile(_fork(), {"attached_streams": {"nope": "k"}})
