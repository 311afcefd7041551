"""ge (runtime_v1 and runtime_v2) against onnxruntime on the light models (random weights), one thread each
(ge's thread_budget=1: multi-stream plans run in plan order on one thread).

    pytest bench/test_vs_onnxruntime.py --benchmark-only -n 0
The benchmark times ge v1; extra_info holds every median from alternating runs and the ratios to onnxruntime.
"""
import numpy as np
import pytest
from compare import alternate, record

import ge
from ge.bench import onnxruntime_session
from ge.zoo import LIGHT_MODELS, with_random_weights

ort = pytest.importorskip("onnxruntime")


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model_ge_vs_onnxruntime(benchmark, name):
    model = with_random_weights(name)
    one_thread = ge.Options(thread_budget=1)
    v1, v2 = (ge.Session(model, runtime=rt, options=one_thread) for rt in ("v1", "v2"))
    (inp,) = v1.get_inputs()
    feeds = {inp.name: np.random.default_rng(0).standard_normal(inp.shape).astype(np.float32)}
    o = onnxruntime_session(model, 1)
    times = alternate({"ge_v1": lambda: v1.run(None, feeds), "ge_v2": lambda: v2.run(None, feeds),
                       "onnxruntime": lambda: o.run(None, feeds)}, rounds=10)
    info = record(benchmark, times, base="onnxruntime")
    print(f"\n{name}: {info}")
    benchmark.group = "ge vs onnxruntime (1 thread)"
    benchmark.pedantic(v1.run, (None, feeds), rounds=3, iterations=1)
