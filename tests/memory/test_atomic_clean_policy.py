"""ge.exec.atomicCleanPolicy: 0 = one centralized clean of the atomic segment per run, 1 = a clean per op right
before each atomic output's producer, with no atomic segment (the outputs are reused in the feature map)."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import ge
from ge.errors import GEError
from ge.memory.verify import verify_memory


def _model(as_output=False):
    """Sigmoid/Neg first (their block is free again before the ConvTransposes, so policy 1 can reuse it),
    then two ConvTransposes (scatter-add: atomic outputs)."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((3, 2, 3, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Neg", ["s"], ["n"]),
             helper.make_node("Neg", ["n"], ["m"]),
             helper.make_node("ConvTranspose", ["m", "w"], ["up"], strides=[2, 2]),
             helper.make_node("ConvTranspose", ["m", "w"], ["up2"], strides=[1, 1]),
             helper.make_node("Relu", ["up"], ["y"]), helper.make_node("Sigmoid", ["up2"], ["z"])]
    outs = ["y", "z"] + (["up"] if as_output else [])
    g = helper.make_graph(nodes, "atomic", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 9, 9])],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _plan(policy):
    return ge.compile(_model(), {"ge.exec.atomicCleanPolicy": str(policy), "enable_single_stream": True})


def test_per_op_policy_has_no_atomic_segment_and_reuses_the_outputs():
    """docs/ge-reference.md §2.6 (by default a single AtomicAddrClean at the head of the graph zeroes everything:
    ge.exec.atomicCleanPolicy=0, centralized; 1 gives each op its own memset): policy 0 puts ConvTranspose's outputs
    in the never-reused atomic segment; policy 1 cleans each right before its producer, so they are ordinary
    feature-map blocks (here one reuses the block Sigmoid's output had) and the plan is smaller."""
    central, per_op = _plan(0), _plan(1)
    for plan in (central, per_op):
        verify_memory(plan, plan.memory)
    seg0, seg1 = dict(central.memory.segments), dict(per_op.memory.segments)
    assert seg0["atomic"] > 0 and seg1["atomic"] == 0
    mem1 = {t.name: t for t in per_op.memory.tensors}
    assert mem1["up"].segment == mem1["up2"].segment == "feature_map"
    reused = {(m.offset) for n, m in mem1.items() if n in ("s", "n")}
    assert {mem1["up"].offset, mem1["up2"].offset} & reused   # an atomic output on a block used before
    total0 = seg0["feature_map"] + seg0["atomic"]
    total1 = seg1["feature_map"]
    assert total1 < total0, (total0, total1)


@pytest.mark.parametrize("as_output", [False, True], ids=["internal", "graph-output"])
@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_both_policies_give_equal_results_run_after_run(runtime, as_output):
    """docs/ge-reference.md §2.6 and §6 (atomic accumulation needs zeroing first; GE's
    docs/en/design/features/memory_conflict.md lists accumulation without zeroing as a conflict): both policies,
    three runs each, bitwise equal and equal to onnx.reference."""
    model = _model(as_output)
    x = np.random.default_rng(1).standard_normal((1, 3, 9, 9)).astype(np.float32)
    want = ReferenceEvaluator(model).run(None, {"x": x})
    results = {}
    for policy in (0, 1):
        with ge.Session(model, runtime=runtime, options={"ge.exec.atomicCleanPolicy": policy}) as sess:
            for _ in range(3):   # an output not cleaned would accumulate run over run
                got = sess.run(None, {"x": x})
                for g, w in zip(got, want):
                    np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
            results[policy] = got
            if runtime == "v1":
                cleans = sess._executor.model.cleans
                assert (sum(map(len, cleans.values())) == (2 if policy else 0))
    for a, b in zip(results[0], results[1]):
        np.testing.assert_array_equal(a, b)


def test_v1_clean_task_runs_right_before_its_producer():
    """docs/ge-reference.md §2.6 policy 1: the memset is its producer's neighbour, in the producer's stream table."""
    with ge.Session(_model(), runtime="v1", options={"ge.exec.atomicCleanPolicy": "1"}) as sess:
        m = sess._executor.model
        order = [row.node.name for st in m.streams for row in st.native if row is not None]
        order += [t.node.name for st in m.streams for t in st.fallback]
        for name in ("up", "up2"):
            producer = next(n.name for n in sess.plan.nodes if sess.plan.tensors[n.outputs[0]].name == name)
            clean = f"{producer}/atomic_clean0"
            assert clean in order
            if not m.streams[0].fallback:   # all native: one table in plan order
                assert order.index(clean) + 1 == order.index(producer)


@pytest.mark.parametrize("value", ["2", "-1", "per-op"])
def test_bad_atomic_clean_policy_is_refused(value):
    """GE's FE refuses any policy but "0" and "1" (fe_graph_optimizer.cc CompileMemSetOp)."""
    with pytest.raises(GEError, match="atomic"):
        ge.Options.from_dict({"ge.exec.atomicCleanPolicy": value})
