"""The transformers exports (tests/fixtures/transformers) on one thread each: ge as exported (dynamic axes:
runtime_v2), ge with every input shape fixed (Options.input_shape: a static plan, runtime_v1 under "auto")
and onnxruntime, side by side:

    python bench/transformers_runtimes.py [--models bert_4x256,bert_6x768,gpt2_4x256] [--seqs 8,32,128]
                                        [--rounds 15] [--runs 5]

Batch 1. ge: Options(thread_budget=1); onnxruntime: intra_op_num_threads=1, pool spinning off, and an untimed
pause before each of its timed calls. The three alternate in a shuffled order round by round; a call is
`--runs` runs and the median call is reported (ms per run) with the ratios to onnxruntime. Prints the date,
CPU, commit and the load average before and after (the machine may be shared).
"""
from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
import time

import numpy as np

import ge
from ge import exports
from ge.bench import onnxruntime_session

sys.path.insert(0, os.path.dirname(__file__))
from aicores_report import machine  # noqa: E402


def feeds_of(name: str, seq: int) -> dict:
    return exports.bert_feeds(1, seq) if name.startswith("bert") else exports.gpt2_feeds(1, seq)


def contenders(name: str, model, dynamic, seq: int) -> dict:
    feeds = feeds_of(name, seq)
    fixed = ge.Session(model, options=ge.Options(thread_budget=1, input_shape={k: v.shape for k, v in feeds.items()}))
    ort = onnxruntime_session(model, threads=1)
    assert fixed.runtime == "v1", fixed.stats()["runtime_reason"]
    ref = ort.run(None, feeds)
    for sess in (dynamic, fixed):   # the same outputs before anything is timed
        for a, b in zip(sess.run(None, feeds), ref):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
    return {"ge dynamic (v2)": lambda: dynamic.run(None, feeds), "ge fixed (v1)": lambda: fixed.run(None, feeds),
            "onnxruntime": lambda: ort.run(None, feeds)}


def time_side_by_side(fns: dict, rounds: int, runs: int) -> dict[str, float]:
    """Median seconds per run of each, calls alternating in a shuffled order; onnxruntime paused before."""
    for fn in fns.values():
        fn()
        fn()
    times = {k: [] for k in fns}
    names = list(fns)
    rng = np.random.default_rng(0)
    for _ in range(rounds):
        for i in rng.permutation(len(names)):
            if names[i] == "onnxruntime":
                time.sleep(0.005)   # untimed: its pool threads park
            t0 = time.perf_counter()
            for _ in range(runs):
                fns[names[i]]()
            times[names[i]].append((time.perf_counter() - t0) / runs)
    return {k: float(np.median(v)) for k, v in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="bert_4x256,bert_6x768,gpt2_4x256")
    ap.add_argument("--seqs", default="8,32,128")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=os.path.dirname(__file__)).stdout.strip()
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC   {machine()}   commit {commit}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}   one thread each, batch 1, "
          f"{args.rounds} rounds of {args.runs} runs, medians")
    print(f"{'model':12s} {'seq':>4s} {'ge dyn v2 ms':>13s} {'ge fixed v1 ms':>15s} {'ort ms':>8s} "
          f"{'dyn/ort':>8s} {'fixed/ort':>10s} {'dyn/fixed':>10s}")
    for name in args.models.split(","):
        model = exports.load(name)
        dynamic = ge.Session(model, options=ge.Options(thread_budget=1))
        assert dynamic.runtime == "v2"
        for seq in map(int, args.seqs.split(",")):
            t = time_side_by_side(contenders(name, model, dynamic, seq), args.rounds, args.runs)
            d, f, o = t["ge dynamic (v2)"], t["ge fixed (v1)"], t["onnxruntime"]
            print(f"{name:12s} {seq:4d} {d * 1e3:13.3f} {f * 1e3:15.3f} {o * 1e3:8.3f} {d / o:8.2f}x {f / o:9.2f}x "
                  f"{d / f:9.2f}x", flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
