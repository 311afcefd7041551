"""runtime_v2 host overhead and dynamic shapes (`python bench/runtime_v2_report.py` prints the full set).

    pytest bench/test_runtime_v2.py --benchmark-only -n 0
"""
import os
import sys

import numpy as np
import pytest
from compare import alternate, record

import ge
from ge.models import bert_like

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "runtime_v2"))
from test_v2_executor import chain  # noqa: E402


@pytest.mark.parametrize("shape,limit", [([1, 16], 0), (["N", 16], 0), (["N", 16], 8)],
                         ids=["static", "symbolic", "symbolic-replayed"])
def test_per_node_overhead(benchmark, shape, limit):
    """A 1,000-node chain of Relu/Add on 16 floats: the time is host overhead (us/node in extra_info); host-driven
    (capture_limit 0) or replayed from the recorded table (runtime_v2/replay.py)."""
    sess = ge.Session(chain(1000, shape), runtime="v2", options={"capture_limit": limit})
    feeds = sess._check_feeds({"x": np.ones((1, 16), np.float32)})
    run = sess._executor.run
    run(feeds)
    run(feeds)
    benchmark.group = "runtime_v2 per-node overhead"
    benchmark.pedantic(run, (feeds,), rounds=20, iterations=5)
    if benchmark.stats is not None:   # None under --benchmark-disable (one call as a test)
        benchmark.extra_info["us_per_node"] = round(benchmark.stats.stats.min / 1001 * 1e6, 3)


def test_bert_like_static_vs_symbolic(benchmark):
    """BERT-like encoder at seq 128: the static plan vs the same model with a symbolic sequence length."""
    feeds = {"input_ids": np.arange(128, dtype=np.int64).reshape(1, 128) % 1000}
    static, symbolic = ge.Session(bert_like(batch=1, seq=128), runtime="v2"), ge.Session(bert_like(batch=1),
                                                                                          runtime="v2")
    fs, fd = static._check_feeds(feeds), symbolic._check_feeds(feeds)
    np.testing.assert_allclose(static._executor.run(fs)[0], symbolic._executor.run(fd)[0], rtol=1e-5, atol=1e-5)
    times = alternate({"static": lambda: static._executor.run(fs), "symbolic": lambda: symbolic._executor.run(fd)})
    print(f"\nbert_like seq 128: {record(benchmark, times, base='static')}")
    benchmark.group = "runtime_v2 dynamic shapes"
    benchmark.pedantic(symbolic._executor.run, (fd,), rounds=10, iterations=1)
