"""runtime_v2 on several streams: host threads joined by the plan's events give the single-stream outputs."""
import dataclasses
import threading

import numpy as np
import pytest

import ge
from ge.errors import ExecutionError
from ge.zoo import LIGHT_MODELS, light_model_path, reference_feeds
from stream_options import PER_STREAM


def sessions(name, **opts):
    multi = ge.Session(light_model_path(name), runtime="v2", options=ge.Options(thread_budget=2, **{**PER_STREAM, **opts}))
    single = ge.Session(light_model_path(name), runtime="v2", options=ge.Options(enable_single_stream=True))
    return multi, single


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_multi_stream_outputs_equal_single_stream(name):
    multi, single = sessions(name)
    feeds = reference_feeds(single)
    if multi.plan.num_streams > 1:
        assert multi._executor.stream_threads == 2
    for a, b in zip(multi.run(None, feeds), single.run(None, feeds)):
        np.testing.assert_array_equal(a, b)


def test_stress_200_multi_stream_runs_match_single_stream():
    multi, single = sessions("squeezenet")
    assert multi._executor.stream_threads == 2
    rng = np.random.default_rng(0)
    shape = multi.get_inputs()[0].shape
    name = multi.get_inputs()[0].name
    xs = [rng.standard_normal(shape).astype(np.float32) for _ in range(4)]
    want = [single.run(None, {name: x})[0] for x in xs]
    for i in range(200):
        got, = multi.run(None, {name: xs[i % 4]})
        np.testing.assert_array_equal(got, want[i % 4])
    threads = [t for t in threading.enumerate() if t.name.startswith("ge-stream")]
    assert len(threads) <= multi._executor.max_instances


def test_concurrent_requests_on_a_multi_stream_plan():
    multi, single = sessions("inception_v1")
    name = multi.get_inputs()[0].name
    shape = multi.get_inputs()[0].shape
    xs = [np.random.default_rng(i).standard_normal(shape).astype(np.float32) for i in range(3)]
    want = [single.run(None, {name: x})[0] for x in xs]
    errors = []

    def work(i):
        try:
            for _ in range(3):
                np.testing.assert_array_equal(multi.run(None, {name: xs[i]})[0], want[i])
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    ts = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert not errors


def test_a_failing_kernel_on_another_stream_names_the_node_and_the_next_run_works():
    multi, single = sessions("inception_v1")
    ex = multi._executor
    plan = ex.plan
    victim = next(n for n in plan.nodes if n.stream == plan.num_streams - 1 and n.launch is not None
                  and any(e.wait_before > n.step and e.src_stream == n.stream for e in plan.events))
    feeds = reference_feeds(single)
    want = single.run(None, feeds)
    inst = ex._instances.checkout()
    k = victim.step
    kind, fn, ins, tail, rel = inst.steps[k]

    def boom(*args):
        raise RuntimeError("injected")
    inst.steps[k] = (kind, boom, ins, tail, rel)
    ex._instances.checkin(inst)
    with pytest.raises(ExecutionError, match=f"node '{victim.name}'.*injected"):
        multi.run(None, feeds)
    inst.steps[k] = (kind, fn, ins, tail, rel)   # the same instance (the only one): no thread is stuck
    for a, b in zip(multi.run(None, feeds), want):
        np.testing.assert_array_equal(a, b)


def test_thread_budget_bounds_stream_threads():
    plan = ge.compile(light_model_path("inception_v1"), ge.Options(thread_budget=1))
    from runtime_v2 import Executor
    assert Executor(plan).stream_threads == 1
    plan = dataclasses.replace(plan, options=ge.Options(thread_budget=2))
    assert Executor(plan).stream_threads == 2
    plan = dataclasses.replace(plan, options=ge.Options(thread_budget=8))
    assert Executor(plan).stream_threads == 4   # at most one per stream
    plan = dataclasses.replace(plan, options=ge.Options(thread_budget=8, aicore_num=2))
    assert Executor(plan).stream_threads == 4   # the budget less the cores each kernel is tiled over
    plan = dataclasses.replace(plan, options=ge.Options(thread_budget=2, aicore_num=2))
    assert Executor(plan).stream_threads == 1   # every kernel keeps both cores busy: the streams share a thread


def test_closed_session_stops_its_stream_threads():
    multi, _ = sessions("squeezenet")
    feeds = reference_feeds(multi)
    old = set(threading.enumerate())
    multi.run(None, feeds)
    before = {t for t in threading.enumerate() if t.name.startswith("ge-stream")} - old
    assert before
    multi.close()
    assert not any(t.is_alive() for t in before)


@pytest.mark.parametrize("aicores", ["1", "0"])
@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_ge_profile_writes_a_trace_with_one_track_per_stream(tmp_path, capsys, runtime, aicores):
    """A track per stream whether the streams run on threads of their own (--aicore-num 1: kernels untiled,
    events between the threads drawn as flow arrows) or share one (the defaults on several cores)."""
    import json

    from ge.cli import main
    trace = tmp_path / "t.json"
    assert main(["profile", light_model_path("squeezenet"), "--trace", str(trace), "--repeat", "1",
                 "--runtime", runtime, "--aicore-num", aicores]) == 0
    out = capsys.readouterr().out
    assert "2 streams" in out and "overlap" in out and "AICORE utilization" in out
    assert f"on runtime_{runtime}" in out
    events = json.load(open(trace))["traceEvents"]
    tracks = {e["tid"] for e in events if e["ph"] == "X" and e["cat"] == "kernel"}
    assert tracks == {0, 1}
    flows = sum(e["ph"] == "s" for e in events)
    assert flows == sum(e["ph"] == "f" for e in events)
    assert flows > 0 if aicores == "1" else True


def test_traced_single_stream_run_matches():
    from ge.npu import Tracer
    sess = ge.Session(light_model_path("squeezenet"), runtime="v2", options=ge.Options(enable_single_stream=True))
    feeds = reference_feeds(sess)
    tracer = Tracer()
    got = sess._executor.run_traced(sess._check_feeds(feeds), tracer)
    np.testing.assert_array_equal(got[0], sess.run(None, feeds)[0])
    assert sum(s.kind == "kernel" for s in tracer.slices) == len(sess.plan.nodes)   # aliases: empty slices
