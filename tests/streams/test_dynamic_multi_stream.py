"""runtime_v2 on a dynamic plan's streams (GE's dynamic-shape multi-stream): one thread per stream, the
caching allocator following GE's MIF protocol across them (runtime_v2/mif.py, stream_memory.py)."""
import numpy as np
import pytest

import ge
from ge.errors import ExecutionError
from ge.zoo import inception_like
from hammer import hammer

MODEL = inception_like(blocks=2, channels=16, size=8)


def _multi(**opts):
    return ge.Session(MODEL, runtime="v2", options=ge.Options(enable_dynamic_shape_multi_stream=True,
                                                              thread_budget=4, **opts))


def _feeds(n, seed):
    return {"x": np.random.default_rng(seed).standard_normal((n, 16, 8, 8)).astype(np.float32)}


def test_the_option_and_its_ge_name_give_a_dynamic_plan_several_streams(monkeypatch):
    monkeypatch.delenv("ENABLE_DYNAMIC_SHAPE_MULTI_STREAM", raising=False)
    assert ge.compile(MODEL).num_streams == 1   # GE's default for a dynamic graph
    plan = ge.compile(MODEL, ge.Options.from_dict({"ge.enableDynamicShapeMultiStream": "1"}))
    assert plan.num_streams == 4 and plan.single_stream_reason is None
    assert ge.Options.from_dict({"ge.enableDynamicShapeMultiStream": "0"}).enable_dynamic_shape_multi_stream \
        is False


def test_eight_racing_threads_on_a_symbolic_batch_match_the_single_stream_run_and_reuse_across_streams():
    multi, single = _multi(executor_instances=8), ge.Session(MODEL, runtime="v2")
    ex = multi._executor
    assert ex.stream_threads == 4 and ex.stats()["dynamic_steps"] == len(ex.plan.nodes)
    cases = [_feeds(n, seed) for seed, n in enumerate((1, 3, 2, 5))]
    want = [single.run(None, f)[0] for f in cases]
    problems = hammer(lambda f: multi.run(None, f)[0], cases * 2, want * 2, runs=6, timeout=300, rotate=True)
    assert not problems, problems[0]
    stats = multi._executor.allocator_stats()
    dyn = stats["dynamic"]
    assert stats["instances"] > 1
    assert dyn["cross_stream_accesses"] > 0 and dyn["borrow_recycles"] > 0 and dyn["borrow_hits"] > 0
    assert dyn["allocated"] == 0 and dyn["borrowed"] == 0 and dyn["pending"] == 0   # every block home


def test_a_failing_step_names_its_node_and_leaves_no_block_behind():
    multi = _multi(executor_instances=1)
    ex = multi._executor
    feeds = _feeds(2, 0)
    want = multi.run(None, feeds)[0]
    victim = next(n for n in ex.plan.nodes if n.stream == 2 and n.op_type == "FusedConv")
    inst = ex._instances.checkout()
    kind, fn, ins, tail, rel = inst.steps[victim.step]

    def boom(*args):
        raise RuntimeError("injected")
    inst.steps[victim.step] = (kind, boom, ins, tail, rel)
    ex._instances.checkin(inst)
    with pytest.raises(ExecutionError, match=f"node '{victim.name}'.*injected"):
        multi.run(None, feeds)
    assert ex.allocator_stats()["dynamic"]["allocated"] == 0
    inst.steps[victim.step] = (kind, fn, ins, tail, rel)
    np.testing.assert_array_equal(multi.run(None, feeds)[0], want)


def test_each_reader_thread_frees_a_block_after_its_own_last_use():
    """stream_memory.py rules 1-2 on the first block's Concat, which every branch of the second reads."""
    from runtime_v2.lowering import ALLOC
    ex = _multi()._executor
    shares, frees = ex.stream_memory
    steps = {n.name: n for n in ex.plan.nodes}
    cat = steps["b0_cat"]
    x = ex.plan.inputs[0]
    assert all(t != x for s in shares for t, _ in s)          # a feed is the caller's: nobody frees it
    out = cat.outputs[0]
    assert ex.lowered.place[out] == ALLOC
    (t, readers), = [p for p in shares[cat.step] if p[0] == out]
    users = [n for n in ex.plan.nodes if out in n.inputs]
    assert set(readers) == {ex.thread_of[n.step] for n in users} - {ex.thread_of[cat.step]}
    assert len(readers) == 3
    for g in {ex.thread_of[n.step] for n in users}:
        last = max(n.step for n in users if ex.thread_of[n.step] == g)
        assert out in frees[last]


def _gather_then_branches():
    """x[N, 8] -> Gather(x, i, axis 1) -> Relu on one branch, Tanh -> Sigmoid on the other, joined by Add:
    an out-of-range index in `i` makes the Gather kernel raise."""
    from onnx import TensorProto, helper
    nodes = [helper.make_node("Gather", ["x", "i"], ["g"], name="pick", axis=1),
             helper.make_node("Relu", ["g"], ["a"], name="a_relu"),
             helper.make_node("Tanh", ["x"], ["t"], name="b_tanh"),
             helper.make_node("Sigmoid", ["t"], ["b"], name="b_sig"),
             helper.make_node("Add", ["a", "b"], ["y"], name="join")]
    g = helper.make_graph(nodes, "two", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8]),
                                         helper.make_tensor_value_info("i", TensorProto.INT64, [8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def test_a_kernel_raising_on_a_native_stream_thread_names_its_node_and_the_next_run_works():
    """The stream threads are native loops fed by the caller (runtime_v2/queues.py, launcher.py): a posted
    kernel that raises aborts the run on every thread, and is re-run on the caller for its message."""
    model = _gather_then_branches()
    multi = ge.Session(model, runtime="v2", options=ge.Options(enable_dynamic_shape_multi_stream=True,
                                                               thread_budget=2))
    ex = multi._executor
    assert multi.plan.num_streams == 2 and multi.plan.events
    x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    good = np.arange(8, dtype=np.int64)[::-1].copy()
    want = ge.Session(model, runtime="v2").run(None, {"x": x, "i": good})[0]
    np.testing.assert_array_equal(multi.run(None, {"x": x, "i": good})[0], want)
    pick = next(n for n in ex.plan.nodes if n.name == "pick")
    assert ex._instances.idle[0].queues is not None and ex._dynamic[pick.step].tasks   # it was posted
    bad = good.copy()
    bad[3] = 100
    for _ in range(2):
        with pytest.raises(ExecutionError, match="Gather node 'pick'.*IndexError"):
            multi.run(None, {"x": x, "i": bad})
        assert ex.allocator_stats()["dynamic"]["allocated"] == 0
        np.testing.assert_array_equal(multi.run(None, {"x": x, "i": good})[0], want)


def test_a_traced_run_uses_python_stream_threads_and_gives_the_same_result():
    from ge.npu import Tracer
    multi = _multi()
    feeds = _feeds(3, 1)
    want = multi.run(None, feeds)[0]
    tracer = Tracer()
    np.testing.assert_array_equal(multi.run_traced(feeds, tracer)[0], want)
    assert {s.track for s in tracer.slices if s.kind == "kernel"} == {0, 1, 2, 3}
