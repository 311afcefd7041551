"""ge's two stream modes side by side (Options.stream_parallel_mode): "auto", ge's sibling-parallel assignment
(its default), vs "engine", GE's default chain (1 stream per engine: every model here is all AICORE, so one
stream), on the light models with parallel branches.

    python bench/stream_modes.py [runtime] [budget] [rounds]

Prints the date, the machine and its load, then per model the streams of each mode, the median time of each
(alternating run by run in one process) and engine / auto (above 1: auto is faster).
"""
import datetime
import os
import sys

import numpy as np

import ge
from ge.bench import alternate
from ge.zoo import light_model_path, reference_feeds

sys.path.insert(0, os.path.dirname(__file__))
from aicores_report import machine  # noqa: E402

MODELS = ("inception_v1", "inception_v2", "squeezenet")


def main(runtime="v2", budget=2, rounds=15):
    print(f"stream modes auto vs engine on runtime_{runtime}, thread budget {budget}, "
          f"{datetime.datetime.now():%Y-%m-%d %H:%M}, {machine()}, load {os.getloadavg()[0]:.1f}")
    print(f"{'model':14s} {'streams':>8s} {'auto ms':>9s} {'engine ms':>10s} {'engine/auto':>12s}")
    for name in MODELS:
        s = {mode: ge.Session(light_model_path(name), runtime=runtime, options=ge.Options(
            thread_budget=budget, stream_parallel_mode=mode)) for mode in ("auto", "engine")}
        feeds = reference_feeds(s["auto"])
        for a, b in zip(s["auto"].run(None, feeds), s["engine"].run(None, feeds)):
            np.testing.assert_array_equal(a, b)
        t = {k: np.median(v) * 1e3 for k, v in alternate(
            {k: (lambda x=x: x.run(None, feeds)) for k, x in s.items()}, rounds).items()}
        streams = f"{s['auto'].plan.num_streams}/{s['engine'].plan.num_streams}"
        print(f"{name:14s} {streams:>8s} {t['auto']:9.2f} {t['engine']:10.2f} {t['engine'] / t['auto']:11.2f}x")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "v2", *(int(a) for a in sys.argv[2:4]))
