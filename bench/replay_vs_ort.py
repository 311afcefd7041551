"""runtime_v2 replays (runtime_v2/replay.py) measured per node: the host time a node costs.

    python bench/replay_vs_ort.py [chain]

chain: host time per node of a 1,000-node chain of Relu/Add on 16 floats with a symbolic batch:
       runtime_v2 host-driven (capture_limit 0), runtime_v2 replayed, and runtime_v1 on the static chain.
Contenders alternate in a shuffled order each round (bench/timing.py), timed in the thread's CPU time (a shared
machine's waits for a core are not counted); medians (fastest in brackets). Prints
date, CPU, commit and the load. The transformers exports replayed, host-driven and vs onnxruntime, and decode
steps replayed generation after generation: bench/transformers.py (exports, decode --cycle).
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "runtime_v2"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ge  # noqa: E402
from test_v2_executor import chain  # noqa: E402
from timing import alternate, header, load  # noqa: E402

ONE = {"thread_budget": 1}


def chain_cost(n: int = 1000) -> None:
    x = {"x": np.ones((1, 16), np.float32)}
    rep = ge.Session(chain(n, ["N", 16]), runtime="v2", options=ONE)
    host = ge.Session(chain(n, ["N", 16]), runtime="v2", options=dict(ONE, capture_limit=0))
    v1 = ge.Session(chain(n, [1, 16]), runtime="v1", options=ONE)
    fs = {k: s._check_feeds(x) for k, s in (("rep", rep), ("host", host), ("v1", v1))}
    for _ in range(3):
        rep._executor.run(fs["rep"])
    assert rep._executor.last_run == "replayed", rep._executor.stats()

    def many(s, f):
        run = s._executor.run
        return lambda: [run(f) for _ in range(20)]
    t = alternate({"v2 replayed": many(rep, fs["rep"]), "v2 host-driven": many(host, fs["host"]),
                   "v1": many(v1, fs["v1"])}, rounds=15)
    per_node = 20 * (n + 1) / 1e6
    print(f"chain {n} nodes, us per node (median, best): " + ", ".join(
        f"{k} {t[k][0] / per_node:.3f} ({t[k][1] / per_node:.3f})" for k in ("v2 replayed", "v2 host-driven", "v1")))


if __name__ == "__main__":
    header("bench/replay_vs_ort.py chain: runtime_v2 replayed vs host-driven vs runtime_v1, one thread")
    for part in sys.argv[1:] or ["chain"]:
        if part != "chain":
            sys.exit(f"{part}: the exports and decode parts moved to bench/transformers.py (exports, decode --cycle)")
        chain_cost()
    print(f"# load after: {load()}")
