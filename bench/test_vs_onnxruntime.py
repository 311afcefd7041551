"""ge (runtime_v2) against onnxruntime on the light models (random weights), one thread each.

    pytest bench/test_vs_onnxruntime.py --benchmark-only
The benchmark times ge; extra_info holds both medians from alternating runs and ge/onnxruntime.
"""
import numpy as np
import pytest
from compare import alternate, record

import ge
from ge.zoo import LIGHT_MODELS, with_random_weights

ort = pytest.importorskip("onnxruntime")


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model_ge_vs_onnxruntime(benchmark, name):
    model = with_random_weights(name)
    sess = ge.Session(model, runtime="v2")
    (inp,) = sess.get_inputs()
    feeds = {inp.name: np.random.default_rng(0).standard_normal(inp.shape).astype(np.float32)}
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    o = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    times = alternate({"ge": lambda: sess.run(None, feeds), "onnxruntime": lambda: o.run(None, feeds)},
                      rounds=10)
    info = record(benchmark, times, base="onnxruntime")
    print(f"\n{name}: {info}")
    benchmark.group = "ge vs onnxruntime (1 thread)"
    benchmark.pedantic(sess.run, (None, feeds), rounds=3, iterations=1)
