"""Concurrency and soak: many threads x many runs on shared sessions (runtime v1 and v2, one stream and
several); sessions created, run and closed in a loop without leaking threads or memory (threading.active_count
and RSS from /proc/self/statm, with a tolerance). GE_FUZZ_EXAMPLES (the long mode) scales the loops up."""
import gc
import os
import threading

import numpy as np
import pytest
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import ge
from rel_models import FUZZ_EXAMPLES, make_model, vi

SCALE = max(1, (FUZZ_EXAMPLES or 0) // 50)   # 500 -> 10x longer loops
PAGE = os.sysconf("SC_PAGE_SIZE")


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def branchy_model():
    """x -> three branches (Conv, Relu, MaxPool-ish Sigmoid) joined by Concat and Add: several streams."""
    rng = np.random.default_rng(7)
    w1 = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((2, 3, 1, 1)).astype(np.float32), "w2")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], name="conv_a", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["a2"], name="relu_a"),
             helper.make_node("Conv", ["x", "w2"], ["b"], name="conv_b"),
             helper.make_node("Sigmoid", ["b"], ["b2"], name="sig_b"),
             helper.make_node("Relu", ["x"], ["c"], name="relu_c"),
             helper.make_node("Concat", ["a2", "b2", "c"], ["cat"], name="cat", axis=1),
             helper.make_node("Softmax", ["cat"], ["y"], name="softmax", axis=1),
             helper.make_node("Add", ["c", "x"], ["z"], name="add_z")]
    return make_model(nodes, [vi("x", [1, 3, 8, 8])], [vi("y", None), vi("z", None)], [w1, w2])


MODEL = branchy_model()
REF = ReferenceEvaluator(MODEL)
FEEDS = [np.random.default_rng(k).standard_normal((1, 3, 8, 8)).astype(np.float32) for k in range(8)]
WANT = [REF.run(None, {"x": x}) for x in FEEDS]


@pytest.mark.parametrize("streams", [1, 8], ids=["one-stream", "multi-stream"])
@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_many_threads_many_runs_on_one_session(runtime, streams):
    s = ge.Session(MODEL, runtime=runtime, options=ge.Options(max_streams=streams, executor_instances=4))
    if streams > 1:
        assert len({n.stream for n in s.plan.nodes}) > 1
    bad = []

    def worker(k):
        for i in range(40 * SCALE):
            j = (k + i) % len(FEEDS)
            for g, w in zip(s.run(None, {"x": FEEDS[j]}), WANT[j]):
                if not np.allclose(g, w, rtol=1e-4, atol=1e-5):
                    bad.append((k, i))
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not any(t.is_alive() for t in threads), "a run hung"
    assert not bad, bad[:5]
    s.close()
    with pytest.raises(ge.GEError, match="closed"):
        s.run(None, {"x": FEEDS[0]})


@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_sessions_created_and_closed_in_a_loop_leak_nothing(runtime):
    plan = ge.compile(MODEL)          # compiling is the frontend's cost; the loop measures the runtimes

    def cycle(n):
        for i in range(n):
            with ge.Session(plan, runtime=runtime) as s:
                y, z = s.run(None, {"x": FEEDS[i % 8]})
                np.testing.assert_allclose(y, WANT[i % 8][0], rtol=1e-4, atol=1e-5)
    cycle(5)                          # warm caches (thunks, numba dispatchers) before measuring
    gc.collect()
    threads, rss = threading.active_count(), _rss()
    cycle(60 * SCALE)
    gc.collect()
    assert threading.active_count() <= threads, "threads leaked"
    grown = _rss() - rss
    assert grown < 40 << 20, f"RSS grew by {grown >> 20} MiB over {60 * SCALE} sessions"


def test_sessions_from_model_bytes_in_a_loop_leak_nothing():
    data = MODEL.SerializeToString()
    for _ in range(3):
        ge.Session(data).close()
    gc.collect()
    threads, rss = threading.active_count(), _rss()
    for i in range(20 * SCALE):
        with ge.Session(data, options=ge.Options(topo_sorting_mode=("bfs", "dfs", "rdfs")[i % 3])) as s:
            s.run(None, {"x": FEEDS[0]})
    gc.collect()
    assert threading.active_count() <= threads
    assert _rss() - rss < 40 << 20


def test_concurrent_sessions_on_both_runtimes():
    """Sessions of both runtimes run at once from different threads, each with its own thread."""
    sessions = [ge.Session(MODEL, runtime=rt) for rt in ("v1", "v2", "v1", "v2")]
    bad = []

    def worker(s, k):
        for i in range(25 * SCALE):
            j = (k * 3 + i) % 8
            if not np.allclose(s.run(["y"], {"x": FEEDS[j]})[0], WANT[j][0], rtol=1e-4, atol=1e-5):
                bad.append((k, i))
    threads = [threading.Thread(target=worker, args=(s, k)) for k, s in enumerate(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not bad and not any(t.is_alive() for t in threads)
    for s in sessions:
        s.close()


@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_close_while_other_threads_run(runtime):
    """close() during concurrent runs: each run is either exact or a GEError saying the session is closed;
    no thread hangs and no thread is left behind."""
    threads_before = threading.active_count()
    s = ge.Session(MODEL, runtime=runtime)
    outcome = {"ok": [], "closed": [], "bad": []}
    started = threading.Barrier(5)

    def worker(k):
        started.wait()
        for i in range(200):
            j = (k + i) % 8
            try:
                y = s.run(["y"], {"x": FEEDS[j]})[0]
                outcome["ok" if np.allclose(y, WANT[j][0], rtol=1e-4, atol=1e-5) else "bad"].append(i)
            except ge.GEError as e:
                outcome["closed" if "closed" in str(e) else "bad"].append(str(e))
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    started.wait()
    s.run(["y"], {"x": FEEDS[0]})
    s.close()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a run hung after close()"
    assert not outcome["bad"], outcome["bad"][:3]
    assert len(outcome["ok"]) + len(outcome["closed"]) == 800
    assert threading.active_count() <= threads_before
