"""Static control flow: a Loop on runtime_v1's label tasks vs runtime_v2's host-driven loop vs onnxruntime.

    python bench/control_flow.py [--rounds N] [--steps 64] [--batch 8] [--hidden 256]

The model is ge.zoo.rnn_loop (an Elman RNN as torch.jit.script exports it: a Loop whose body gathers x[t],
two MatMuls, two Adds, a Tanh). One thread each (thread budget 1, one intra-op thread), the three alternating
round by round in one process. Prints the date and machine, each median, the ratios, the per-iteration
host cost of v2 over v1, and the largest difference from onnxruntime. Then, at a thread budget of 2, v1 with
the body's streams in its plan order (the default) vs as activated streams (Options.activate_body_streams,
GE's StreamActive: runtime_v1/stream_activation.py): the cost of an activation per iteration.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys

import numpy as np

import ge
from ge.bench import alternate, onnxruntime_session
from ge.zoo import rnn_loop

sys.path.insert(0, os.path.dirname(__file__))
from aicores_report import machine  # noqa: E402


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--steps", type=int, default=64)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--hidden", type=int, default=256)
    a = p.parse_args(argv)
    model = rnn_loop(a.steps, a.batch, a.hidden)
    rng = np.random.default_rng(1)
    feeds = {"x": rng.standard_normal((a.steps, a.batch, a.hidden)).astype(np.float32),
             "h0": np.zeros((a.batch, a.hidden), np.float32)}
    opts = ge.Options(thread_budget=1)
    sides = {"v1": ge.Session(model, runtime="v1", options=opts), "v2": ge.Session(model, runtime="v2", options=opts)}
    ort = onnxruntime_session(model, 1)
    want = ort.run(None, feeds)
    err = max(float(np.abs(g - w).max()) for s in sides.values() for g, w in zip(s.run(None, feeds), want))
    fns = {k: (lambda s=s: s.run(None, feeds)) for k, s in sides.items()}
    fns["ort"] = lambda: ort.run(None, feeds)
    t = alternate(fns, rounds=a.rounds)
    ms = {k: float(np.median(v)) * 1e3 for k, v in t.items()}
    print(f"Loop RNN, {a.steps} iterations, batch {a.batch}, hidden {a.hidden}, one thread each, "
          f"{datetime.datetime.now():%Y-%m-%d %H:%M}, {machine()}")
    print(f"runtime_v1 {ms['v1']:.3f} ms   runtime_v2 {ms['v2']:.3f} ms   onnxruntime {ms['ort']:.3f} ms")
    print(f"v1/ort {ms['v1'] / ms['ort']:.2f}   v2/ort {ms['v2'] / ms['ort']:.2f}   v2/v1 {ms['v2'] / ms['v1']:.2f}   "
          f"v2 - v1 per iteration {(ms['v2'] - ms['v1']) / a.steps * 1e3:.1f} us   max |ge - ort| {err:.2e}")
    two = {k: ge.Session(model, runtime="v1", options=ge.Options(
        thread_budget=2, activate_body_streams=k == "activated")) for k in ("inline", "activated")}
    streams = {k: len(s._executor.model.streams) for k, s in two.items()}   # tables: one per thread
    body = {n.stream for n in two["inline"].plan.nodes[0].bodies[0][1].nodes}
    t = alternate({k: (lambda s=s: s.run(None, feeds)) for k, s in two.items()}, rounds=a.rounds)
    ms = {k: float(np.median(v)) * 1e3 for k, v in t.items()}
    print(f"thread budget 2, the body's {len(body)} streams: in plan order {ms['inline']:.3f} ms, "
          f"activated {ms['activated']:.3f} ms ({streams['activated'] - streams['inline']} activated; "
          f"{(ms['activated'] - ms['inline']) / a.steps * 1e3:+.1f} us per iteration)")


if __name__ == "__main__":
    main()
