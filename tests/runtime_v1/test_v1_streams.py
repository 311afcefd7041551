"""runtime_v1 on several streams (multi-stream task sink): one table per stream with the plan's events as
RECORD / WAIT rows, one thread per stream, failures abort the other streams' waits, concurrent runs stay
correct, a forked child starts its own threads, and a trace shows two streams' kernels overlapping in time."""
import dataclasses
import os
import threading
import time

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
import runtime_v1
from ge.errors import ExecutionError
from ge.npu import Tracer
from ge.npu.aicore import CPUS
from ge.schedule.events import SyncEvent
from ge.zoo import expected_outputs, light_model_path, reference_feeds, with_random_weights
from runtime_v1 import sink
from hammer import hammer
from stream_options import PER_STREAM

TIMEOUT = 120  # seconds: a hang fails the test instead of blocking the suite


def _guarded(fn):
    """fn() on a daemon thread; its result or exception, or a failure when it does not end in TIMEOUT."""
    out = {}

    def target():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001
            out["error"] = e
    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(TIMEOUT)
    assert not t.is_alive(), f"hung for {TIMEOUT} s"
    if "error" in out:
        raise out["error"]
    return out["value"]


def two_branches(n=256, depth=4, gather_on=None, alias_tail=False):
    """x -> 4 x (MatMul, Tanh) -> Relu on two independent branches a and b, joined by Add; with
    `gather_on`, that branch picks rows by the int64 input `i` (an out-of-range index makes it raise);
    with `alias_tail`, a Reshape (an alias node: no task) ends each branch instead of the Relu."""
    rng = np.random.default_rng(0)
    inits, nodes = [numpy_helper.from_array(np.array([n, n], np.int64), "shape")], []
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, n])]
    for b in "ab":
        prev = "x"
        for k in range(depth):
            w = f"w{b}{k}"
            inits.append(numpy_helper.from_array((rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32), w))
            nodes.append(helper.make_node("MatMul", [prev, w], [f"{b}m{k}"], name=f"{b}_matmul{k}"))
            nodes.append(helper.make_node("Tanh", [f"{b}m{k}"], [f"{b}t{k}"], name=f"{b}_tanh{k}"))
            prev = f"{b}t{k}"
        if gather_on == b:
            inputs.append(helper.make_tensor_value_info("i", TensorProto.INT64, [n]))
            nodes.append(helper.make_node("Gather", [prev, "i"], [f"{b}g"], name="pick"))
            prev = f"{b}g"
        tail = helper.make_node("Reshape", [prev, "shape"], [f"{b}_out"], name=f"{b}_tail") if alias_tail \
            else helper.make_node("Relu", [prev], [f"{b}_out"], name=f"{b}_tail")
        nodes.append(tail)
    nodes.append(helper.make_node("Add", ["a_out", "b_out"], ["y"], name="join"))
    g = helper.make_graph(nodes, "two", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("name", ["squeezenet", "inception_v1", "inception_v2", "shufflenet"])
def test_multi_stream_light_models_match_expected_outputs(name):
    sess = ge.Session(light_model_path(name), runtime="v1", options=PER_STREAM)
    assert sess.plan.num_streams > 1
    ex = sess._executor
    assert ex._instances.all[0].streams is not None and ex.stats()["fallback_tasks"] == 0
    for _ in range(3):  # flags are generations: replays need no reset
        got = sess.run(None, reference_feeds(sess))
        for g, w in zip(got, expected_outputs(name)):
            np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("name", ["squeezenet", "inception_v1"])
def test_multi_stream_equals_single_stream_bitwise(name):
    model = with_random_weights(name)
    multi = ge.Session(model, runtime="v1", options=ge.Options(max_streams=4, **PER_STREAM))
    single = ge.Session(model, runtime="v1", options=ge.Options(enable_single_stream=True))
    assert multi.plan.num_streams > 1 and single.plan.num_streams == 1
    assert single._executor._instances.all[0].streams is None  # one stream: no threads, no event rows
    feeds = reference_feeds(single)
    for _ in range(5):
        for a, b in zip(multi.run(None, feeds), single.run(None, feeds)):
            np.testing.assert_array_equal(a, b)


def test_one_table_per_stream_with_every_event_recorded_once_and_waited_once():
    plan = ge.compile(light_model_path("inception_v1"), {"thread_budget": 8})  # a thread per stream
    model = runtime_v1.Executor(plan).model
    assert len(model.streams) == plan.num_streams > 1
    assert [st.stream for st in model.streams] == sorted({n.stream for n in plan.nodes})
    records, waits = {}, {}
    for st in model.streams:
        for op, e in st.event_ops():
            (records if op == sink.RECORD else waits).setdefault(e, []).append(st.stream)
        launched = [n.step for n in plan.nodes if n.stream == st.stream and n.launch is not None
                    and not n.no_task]
        assert [t.node.step for t in st.native if t is not None] == launched  # plan order per stream
    assert sorted(records) == sorted(waits) == [e.id for e in plan.events]
    st = runtime_v1.Executor(plan).stats()
    assert (st["streams"], st["events"]) == (plan.num_streams, len(plan.events))
    for e in plan.events:
        assert records[e.id] == [e.src_stream] and waits[e.id] == [e.dst_stream]


@pytest.mark.parametrize("budget", [1, 2, 3])
def test_streams_share_threads_within_the_thread_budget(budget):
    """Options.thread_budget (as on runtime_v2): 4 streams on fewer threads, stream s on thread s mod T, the
    threads' rows in plan order; only events between threads stay, and the outputs do not change."""
    plan = ge.compile(with_random_weights("inception_v1"), {"thread_budget": budget, **PER_STREAM})
    ex = runtime_v1.Executor(plan)
    assert plan.num_streams == 4 and len(ex.model.streams) == budget
    dense = {s: k for k, s in enumerate(sorted({n.stream for n in plan.nodes}))}
    thread = {n.step: dense[n.stream] % budget for n in plan.nodes}
    kept = {e.id for e in plan.events if thread[e.record_after] != thread[e.wait_before]}
    assert {e for st in ex.model.streams for _, e in st.event_ops()} == kept
    assert (ex._instances.all[0].streams is None) == (budget == 1)
    feeds = {plan.inputs[0]: np.random.default_rng(0).standard_normal(
        plan.tensors[plan.inputs[0]].shape).astype(np.float32)}
    want = runtime_v1.Executor(dataclasses.replace(plan, options=plan.options.replace(thread_budget=8))).run(feeds)
    for _ in range(3):
        np.testing.assert_array_equal(_guarded(lambda: ex.run(feeds))[0], want[0])


def test_events_on_alias_nodes_move_to_the_nearest_task_in_sequence():
    """A record after an alias node goes after the last task at or before it; a wait before an alias node
    goes before the first task at or after it; the run stays correct."""
    plan = ge.compile(two_branches(n=64, depth=2, alias_tail=True), PER_STREAM)
    node = {n.name: n for n in plan.nodes}
    a, b, join = node["a_tail"], node["b_tail"], node["join"]
    assert a.is_alias and b.is_alias and a.stream != b.stream == join.stream
    plan = dataclasses.replace(plan, events=(SyncEvent(0, a.step, b.step, a.stream, b.stream),))
    ex = runtime_v1.Executor(plan)
    rows = {st.stream: [("task", t.node.name) if t is not None else (op, 0)
                        for t, op in zip(st.native, st.addrs.tolist())] for st in ex.model.streams}
    before_a = [n.name for n in plan.nodes if n.stream == a.stream and n.launch is not None and n.step < a.step]
    before_b = [n.name for n in plan.nodes if n.stream == b.stream and n.launch is not None and n.step < b.step]
    assert rows[a.stream][-2:] == [("task", before_a[-1]), (sink.RECORD, 0)]
    assert rows[b.stream][-3:] == [("task", before_b[-1]), (sink.WAIT, 0), ("task", "join")]
    x = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    want = ge.Session(plan, runtime="v2").run(None, {"x": x})[0]
    for _ in range(3):
        np.testing.assert_array_equal(_guarded(lambda: ex.run({plan.inputs[0]: x})[0]), want)


def test_switch_keeps_one_list(monkeypatch):
    monkeypatch.setenv("GE_V1_STREAMS", "0")
    sess = ge.Session(light_model_path("squeezenet"), runtime="v1")
    assert sess.plan.num_streams > 1 and len(sess._executor.model.streams) == 1
    got = sess.run(None, reference_feeds(sess))
    np.testing.assert_allclose(got[0], expected_outputs("squeezenet")[0], rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("options", [PER_STREAM, pytest.param(
    {"aicore_num": 2}, id="pulled", marks=pytest.mark.skipif(CPUS < 2, reason="cores pull streams on 2+"))])
@pytest.mark.parametrize("branch", ["a", "b"])
def test_failing_native_kernel_names_the_node_and_does_not_hang(branch, options):
    """On stream threads, and with the streams pulled by the cores (runtime_v1/dispatch.py): a block that
    fails stops every core, the run names the node, the next run is exact."""
    sess = ge.Session(two_branches(gather_on=branch), runtime="v1", options=options)
    plan = sess.plan
    assert plan.num_streams == 2 and plan.events
    pick = next(n for n in plan.nodes if n.name == "pick")
    waiter = plan.events[0].dst_stream
    assert (pick.stream != waiter) == (branch == "a")  # a: the failing stream owes the other one a record
    x = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)
    good = np.arange(256, dtype=np.int64)[::-1].copy()
    want = sess.run(None, {"x": x, "i": good})[0]
    bad = good.copy()
    bad[7] = 1000
    for _ in range(2):
        with pytest.raises(ExecutionError, match="Gather node 'pick'.*IndexError"):
            _guarded(lambda: sess.run(None, {"x": x, "i": bad}))
        np.testing.assert_array_equal(_guarded(lambda: sess.run(None, {"x": x, "i": good})[0]), want)


def test_failing_fallback_task_in_stream_1_aborts_stream_0_waits(monkeypatch):
    plan = ge.compile(light_model_path("inception_v1"), {"thread_budget": 8})
    # a node on a worker stream that records an event stream 0 (the calling thread) waits for
    victim = next(plan.nodes[e.record_after] for e in plan.events if e.dst_stream == 0 and e.src_stream != 0
                  and plan.nodes[e.record_after].launch is not None and not plan.nodes[e.record_after].no_task)
    monkeypatch.setenv("GE_V1_FALLBACK", victim.op_type)
    ex = runtime_v1.Executor(plan)
    feeds = reference_feeds(ge.Session(plan, runtime="v1"))
    index = {plan.inputs[0]: next(iter(feeds.values()))}
    want = ex.run(index)[0]
    s = next(k for k, st in enumerate(ex.model.streams) if st.stream == victim.stream)
    inst = ex._instances.all[0]
    k = next(k for k, t in enumerate(ex.model.streams[s].fallback) if t.node is victim)
    fn, args, patches = inst.fallback[s][k]

    def boom(*a):
        raise RuntimeError("injected")
    inst.fallback[s][k] = (boom, args, patches)
    with pytest.raises(ExecutionError, match=f"node '{victim.name}'.*injected"):
        _guarded(lambda: ex.run(index))
    inst.fallback[s][k] = (fn, args, patches)
    np.testing.assert_array_equal(_guarded(lambda: ex.run(index))[0], want)
    assert ex.stats()["instances"] == 1


def test_eight_threads_on_one_multi_stream_session():
    sess = ge.Session(with_random_weights("inception_v1"), runtime="v1", options=PER_STREAM)
    assert sess.plan.num_streams > 1
    (inp,) = sess.get_inputs()
    rng = np.random.default_rng(0)
    feeds = [{inp.name: rng.standard_normal(inp.shape).astype(np.float32)} for _ in range(8)]
    expected = [sess.run(None, f)[0] for f in feeds]
    errors = hammer(lambda f: sess.run(None, f)[0], feeds, expected, 4, TIMEOUT)
    assert not errors, errors[:5]
    instances = sess._executor._instances.all
    assert len({id(i.streams.ctrl) for i in instances}) == len(instances)  # flags per instance


def test_close_stops_the_stream_threads():
    sess = ge.Session(light_model_path("squeezenet"), runtime="v1", options=PER_STREAM)
    sess.run(None, reference_feeds(sess))
    workers = [t for inst in sess._executor._instances.all for t in inst.streams.workers]
    assert len(workers) == sess.plan.num_streams - 1 and all(t.is_alive() for t in workers)
    sess.close()
    assert not any(t.is_alive() for t in workers)


def test_two_long_independent_branches_overlap_in_a_trace():
    """Evidence of parallel streams without timing anything: in a traced run, some kernel of stream 0 and
    some kernel of stream 1 are running at the same instant (on one list they never could)."""
    sess = ge.Session(two_branches(n=512, depth=6), runtime="v1", options=PER_STREAM)
    ex = sess._executor
    x = np.random.default_rng(0).standard_normal((512, 512)).astype(np.float32)
    want = sess.run(None, {"x": x})[0]
    tracer = Tracer("two")
    got = ex.run_traced({sess.plan.inputs[0]: x}, tracer)[0]
    np.testing.assert_array_equal(got, want)
    kernels = {s: [(k.start, k.end) for k in tracer.slices if k.track == s and k.kind == "kernel"] for s in (0, 1)}
    assert all(kernels.values())
    assert any(a0 < b1 and a1 < b0 for a0, b0 in kernels[0] for a1, b1 in kernels[1])
    records = [k for k in tracer.slices if k.kind == "record"]
    waits = [k for k in tracer.slices if k.kind == "wait"]
    assert len(records) == len(waits) == len(sess.plan.events)
    assert all(w.end >= r.start for r in records for w in waits if w.flow == r.flow)  # a wait ends after its record


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_starts_its_own_stream_threads():
    sess = ge.Session(light_model_path("squeezenet"), runtime="v1", options=PER_STREAM)
    feeds = reference_feeds(sess)
    want = sess.run(None, feeds)[0]  # the parent's workers exist now; a child inherits none of them
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit code
        ok = all(np.array_equal(sess.run(None, feeds)[0], want) for _ in range(2))
        os._exit(0 if ok else 3)
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the forked child hung")
    assert os.waitstatus_to_exitcode(status) == 0
    np.testing.assert_array_equal(sess.run(None, feeds)[0], want)
