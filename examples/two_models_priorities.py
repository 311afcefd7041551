"""Two models on separate streams with priorities (the seeds' scenario 2): a latency-critical model and a
background model share the device; the high-priority stream gets the compute first.

    python examples/two_models_priorities.py [--requests 6]

Each model has its own ge.Session (one stream each: enable_single_stream) and its own ge.npu Stream; the
two streams share a Gate of one slot (the compute both contend for; lower priority value first, as in
ACL/CUDA). Requests of both are enqueued at once, interleaved; the report gives each model's mean
completion time, then again with the priorities swapped.
"""
from __future__ import annotations

import argparse
import threading
import time

import numpy as np

import ge
from ge.npu import Gate, Stream
from ge.zoo import light_model_path, reference_feeds


def _session(name: str):
    sess = ge.Session(light_model_path(name), runtime="v2", options=ge.Options(enable_single_stream=True))
    return sess, reference_feeds(sess)


def serve(models: dict, priorities: dict, requests: int) -> dict:
    """{name: (session, feeds)}, {name: priority} -> {name: mean completion time (s) of its requests}."""
    gate = Gate(1)
    streams = {n: Stream(i, priority=priorities[n], name=n, gate=gate) for i, n in enumerate(models)}
    done = {n: [] for n in models}
    t0 = time.perf_counter()

    def request(name):
        sess, feeds = models[name]
        sess.run(None, feeds)
        done[name].append(time.perf_counter() - t0)
    try:
        hold = Stream(99, name="hold", gate=gate)     # holds the slot while everything is enqueued
        started, release = threading.Event(), threading.Event()
        hold.launch(lambda: (started.set(), release.wait(10)), name="hold")
        started.wait(10)
        for _ in range(requests):
            for n in models:
                streams[n].launch(request, n, name=f"{n} request")
        time.sleep(0.05)                              # both streams now wait at the gate
        release.set()
        for s in streams.values():
            s.synchronize(timeout=300)
        hold.close()
    finally:
        for s in streams.values():
            s.close()
    return {n: float(np.mean(t)) for n, t in done.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=6)
    args = ap.parse_args(argv)
    models = {"squeezenet": _session("squeezenet"), "shufflenet": _session("shufflenet")}
    for sess, feeds in models.values():
        sess.run(None, feeds)                         # warm-up
    for high in models:
        prio = {n: 0 if n == high else 1 for n in models}
        means = serve(models, prio, args.requests)
        print(f"high priority {high:11s}: mean completion " +
              ", ".join(f"{n} {t * 1e3:.1f} ms" for n, t in means.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
