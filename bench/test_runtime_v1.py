"""runtime_v1 (task sink) against runtime_v2 (host-driven), alternating runs in one process.

    pytest bench/test_runtime_v1.py --benchmark-only -n 0 -s
- the light models (random weights): latency of v1 and v2, one thread;
- a 1,000-node chain of tiny element-wise ops: the per-node overhead of each runtime and of onnxruntime
  (ns/node);
- multi-stream inception_v1 / squeezenet: v1 on one stream, v1 multi-stream, v2 multi-stream (ratios to
  v1 single in extra_info);
- load time of ResNet-50 on v1 with a warm thunk cache.
extra_info holds the medians from alternating runs and v1/v2; the benchmark itself times v1.
"""
import os
import sys
import time

import numpy as np
import pytest
from compare import alternate, record

import ge
import runtime_v1
from ge.zoo import LIGHT_MODELS, light_model_path, with_random_weights

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "runtime_v1"))
from v1_models import chain  # noqa: E402


def _sessions(model):
    plan = ge.compile(model)
    return ge.Session(plan, runtime="v1"), ge.Session(plan, runtime="v2")


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model_v1_vs_v2(benchmark, name):
    v1, v2 = _sessions(with_random_weights(name))
    (inp,) = v1.get_inputs()
    feeds = {inp.name: np.random.default_rng(0).standard_normal(inp.shape).astype(np.float32)}
    np.testing.assert_allclose(v1.run(None, feeds)[0], v2.run(None, feeds)[0], rtol=1e-4, atol=1e-5)
    times = alternate({"v1": lambda: v1.run(None, feeds), "v2": lambda: v2.run(None, feeds)}, rounds=10)
    info = record(benchmark, times, base="v2")
    print(f"\n{name}: {info}")
    benchmark.group = "runtime v1 vs v2 (light models)"
    benchmark.pedantic(v1.run, (None, feeds), rounds=3, iterations=1)


@pytest.mark.parametrize("name", ["inception_v1", "squeezenet"])
def test_multi_stream_v1_vs_single_stream_vs_v2(benchmark, name):
    """The multi-stream task sink (one thread per stream, events as native flags) beside the same model on
    one stream and on runtime_v2's stream threads; the ratios go to extra_info, nothing is asserted."""
    model = with_random_weights(name)
    single = ge.Session(model, runtime="v1", options=ge.Options(enable_single_stream=True))
    multi, v2 = _sessions(model)
    (inp,) = single.get_inputs()
    feeds = {inp.name: np.random.default_rng(0).standard_normal(inp.shape).astype(np.float32)}
    want = single.run(None, feeds)[0]
    for s in (multi, v2):
        np.testing.assert_array_equal(s.run(None, feeds)[0], want)
    times = alternate({"v1_single": lambda: single.run(None, feeds), "v1_multi": lambda: multi.run(None, feeds),
                       "v2_multi": lambda: v2.run(None, feeds)}, rounds=20)
    info = record(benchmark, times, base="v1_single")
    benchmark.extra_info.update(streams=multi.plan.num_streams, events=len(multi.plan.events))
    print(f"\n{name} ({multi.plan.num_streams} streams, {len(multi.plan.events)} events): {info}")
    benchmark.group = f"multi-stream {name}: v1 single / v1 multi / v2 multi"
    benchmark.pedantic(multi.run, (None, feeds), rounds=5, iterations=1)


def test_per_node_overhead_chain_1000(benchmark):
    n = 1000
    model = chain(n)
    v1, v2 = _sessions(model)
    feeds = {"x": np.linspace(-1, 1, 16).astype(np.float32)}
    contenders = {"v1": lambda: v1.run(None, feeds), "v2": lambda: v2.run(None, feeds)}
    try:  # the same model on onnxruntime, one thread, when installed
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        o = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        contenders["onnxruntime"] = lambda: o.run(None, feeds)
    except ImportError:
        pass
    times = alternate(contenders, rounds=50)
    info = record(benchmark, times, base="v2")
    per_node = {k: round(float(np.median(t)) / n * 1e9, 1) for k, t in times.items()}
    benchmark.extra_info.update({f"{k}_ns_per_node": v for k, v in per_node.items()})
    print(f"\nchain of {n}: {per_node} ns/node, {info}")
    benchmark.group = "per-node overhead (1,000-node chain)"
    benchmark.pedantic(v1.run, (None, feeds), rounds=10, iterations=1)


def test_resnet50_load_warm(benchmark):
    plan = ge.compile(light_model_path("resnet50"))
    runtime_v1.Executor(plan).close()  # warms the thunk cache (and this process's loaded thunks)
    t0 = time.perf_counter()
    ex = runtime_v1.Executor(plan)
    total = time.perf_counter() - t0
    benchmark.extra_info.update(load_s=round(total, 3), tables_and_thunks_s=round(ex.model.load_seconds, 3))
    print(f"\nresnet50 v1 load (warm, in process): {total * 1e3:.0f} ms, of which tables+thunks "
          f"{ex.model.load_seconds * 1e3:.0f} ms")
    benchmark.group = "runtime v1 load"
    benchmark.pedantic(lambda: runtime_v1.Executor(plan).close(), rounds=3, iterations=1)
