"""Streams on real cores: runtime_v2 with 2 stream threads vs one stream, alternating runs.

    pytest bench/test_streams.py --benchmark-only -n 0 -s

extra_info per model: medians, `single_over_multi` (the real speed-up), `ideal_2_threads` (the speed-up the
stream schedule allows on 2 threads, from each step's measured time: no model can beat it with these
streams), `critical_path` (the data-dependency bound with unlimited threads), and the modelled NPU's
AICORE utilization single vs multi stream (ge.npu.sim). Inception v1/v2 have 2 streams with max_streams=2
(a thread each: aicore_num=1 leaves the budget of 2 to the streams);
ResNet-50 gets one stream from GE's rules (checked), so multi == single there.
"""
import time

import numpy as np
import pytest
from compare import alternate, record

import ge
from ge.npu.programs import thread_programs
from ge.npu.sim import compare
from ge.zoo import LIGHT_MODELS, light_model_path, reference_feeds


def _sessions(name, max_streams):
    multi = ge.Session(light_model_path(name), runtime="v2",
                       options=ge.Options(max_streams=max_streams, thread_budget=2, aicore_num=1))
    single = ge.Session(light_model_path(name), runtime="v2", options=ge.Options(enable_single_stream=True))
    return multi, single


def step_times(sess, feeds, rounds=3) -> np.ndarray:
    """Seconds per plan step, measured one step at a time on one thread."""
    from ge.npu import Tracer
    tracer = Tracer()
    sess.run_traced(feeds, tracer)   # one host thread when single stream
    t = np.zeros(len(sess.plan.nodes))
    index = {n.name: n.step for n in sess.plan.nodes}
    for _ in range(rounds):
        tracer = Tracer()
        sess.run_traced(feeds, tracer)
        for s in tracer.slices:
            if s.kind == "kernel":
                t[index[s.name]] += (s.end - s.start) / rounds
    return t


def ideal(plan, t, threads) -> float:
    """Makespan of the plan's stream programs on `threads` threads with step times `t` (list scheduling)."""
    producer = {o: n.step for n in plan.nodes for o in n.outputs if o >= 0}
    deps = [[producer[i] for i in n.inputs if i in producer] for n in plan.nodes]
    progs = thread_programs(plan, threads) if threads else [[(n.step, (), ())] for n in plan.nodes]
    end = [None] * len(plan.nodes)
    ptr, clock = [0] * len(progs), [0.0] * len(progs)
    while any(p < len(prog) for p, prog in zip(ptr, progs)):
        for g, prog in enumerate(progs):
            while ptr[g] < len(prog) and all(end[d] is not None for d in deps[prog[ptr[g]][0]]):
                k = prog[ptr[g]][0]
                end[k] = max([clock[g]] + [end[d] for d in deps[k]]) + t[k]
                clock[g], ptr[g] = end[k], ptr[g] + 1
    return max(end)


@pytest.mark.parametrize("name", ["inception_v1", "inception_v2"])
def test_two_streams_vs_one(benchmark, name):
    multi, single = _sessions(name, max_streams=2)
    assert multi.plan.num_streams == 2 and multi.stream_threads == 2
    feeds = reference_feeds(multi)
    m, s = (lambda f: multi.run(None, f)), (lambda f: single.run(None, f))
    for a, b in zip(m(feeds), s(feeds)):
        np.testing.assert_array_equal(a, b)
    times = alternate({"multi": lambda: m(feeds), "single": lambda: s(feeds)}, rounds=20)
    info = record(benchmark, times, base="multi")
    t = step_times(single, feeds)
    info["ideal_2_threads"] = benchmark.extra_info["ideal_2_threads"] = round(float(t.sum() / ideal(multi.plan, t, 2)), 3)
    info["critical_path"] = benchmark.extra_info["critical_path"] = round(float(t.sum() / ideal(multi.plan, t, 0)), 3)
    print(f"\n{name}: {info}")
    benchmark.group = "streams: 2 streams x 1 thread vs 1 stream"
    benchmark.pedantic(m, (feeds,), rounds=5, iterations=1)


def test_resnet50_multi_vs_single(benchmark):
    multi, single = _sessions("resnet50", max_streams=8)
    assert multi.plan.num_streams == 1, "GE's rules give ResNet-50's data-ordered branches one stream"
    feeds = multi._check_feeds(reference_feeds(multi))
    m, s = multi._executor.run, single._executor.run
    for a, b in zip(m(feeds), s(feeds)):
        np.testing.assert_array_equal(a, b)
    times = alternate({"multi": lambda: m(feeds), "single": lambda: s(feeds)}, rounds=15)
    info = record(benchmark, times, base="single")
    print(f"\nresnet50 ({multi.plan.num_streams} stream(s)): {info}")
    benchmark.group = "streams: ResNet-50"
    benchmark.pedantic(m, (feeds,), rounds=3, iterations=1)


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_modelled_utilization(benchmark, name):
    """The modelled NPU (no real time): single vs multi-stream NPU time and AICORE utilization."""
    plan = ge.compile(light_model_path(name))
    t0 = time.perf_counter()
    single, multi = compare(plan)
    benchmark.extra_info.update({
        "streams": multi.num_streams, "events": multi.num_events,
        "single_us": round(single.makespan_s * 1e6, 1), "multi_us": round(multi.makespan_s * 1e6, 1),
        "aicore_util_single": round(single.aicore_utilization, 4),
        "aicore_util_multi": round(multi.aicore_utilization, 4), "sim_s": round(time.perf_counter() - t0, 3)})
    print(f"\n{name}: {benchmark.extra_info}")
    benchmark.group = "streams: modelled NPU"
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
