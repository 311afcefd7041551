"""Static pieces of a dynamic plan sunk (ge/partition.py, runtime_v2/sunk.py), measured on a detector-like
graph (ge.models.detector_like: a ResNet-ish conv backbone and box head, NonMaxSuppression at the end).

    python bench/dynamic_partition.py [--rounds N] [--sizes 128x32,64x16] [--threads 0]

Contenders, side by side in one process, alternating in a shuffled order each round (medians):
  detector sunk         the detector as compiled (default static_model_ops_lower_limit 4): the backbone is one
                        static piece on runtime_v1's task sink, NMS and the Gathers after it host-driven (v2)
  detector host-driven  the same detector with nothing sunk (static_model_ops_lower_limit above the graph) and
                        replays off (capture_limit 0: with other images each run, NMS's guards refuse them anyway)
  backbone v1           the same backbone alone (boxes and scores out, no NMS) on runtime_v1
  onnxruntime           the detector on onnxruntime (spinning off, an untimed 2 ms pause before each timed run)
and "piece in detector": the sunk piece's own run inside "detector sunk" (timed around its runtime_v1 call).
Each run gets the next of 8 random images (NMS keeps a different number of boxes). Outputs of the sunk and
host-driven detectors are checked bitwise equal first. Prints date, CPU, commit and the load.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

import ge  # noqa: E402
from ge.bench import onnxruntime_session  # noqa: E402
from ge.models import detector_like  # noqa: E402
from timing import alternate, header  # noqa: E402


def _timed_piece(sess) -> list:
    """The sunk piece's runtime_v1 run inside `sess`, timed per call (seconds appended to the list returned)."""
    node = next(n for n in sess._executor._dynamic.values() if type(n).__name__ == "SunkNode")
    spent, run = [], node.body.run

    def timed(feeds, outputs=None):
        t0 = time.perf_counter()
        out = run(feeds)
        spent.append(time.perf_counter() - t0)
        return out
    node.body.run = timed
    return spent


def one_size(hw: int, width: int, rounds: int, threads: int) -> None:
    det, bb = detector_like(hw=hw, width=width), detector_like(hw=hw, width=width, backbone=True)
    opts = {"thread_budget": threads} if threads else {}
    t0 = time.perf_counter()
    sunk = ge.Session(det, options=opts)
    host = ge.Session(det, runtime="v2", options=dict(opts, static_model_ops_lower_limit=1 << 40, capture_limit=0))
    v1 = ge.Session(bb, runtime="v1", options=opts)
    ort = onnxruntime_session(det, threads=threads or os.cpu_count())
    compile_s = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    images = [rng.standard_normal((1, 3, hw, hw)).astype(np.float32) for _ in range(8)]
    kept = []
    for x in images:
        a, b = sunk.run(None, {"image": x}), host.run(None, {"image": x})
        assert all(np.array_equal(u, w) for u, w in zip(a, b)), "sunk and host-driven differ"
        kept.append(len(a[0]))
    pieces = sunk.stats()["static_pieces"]
    spent = _timed_piece(sunk)
    nxt = {k: 0 for k in ("sunk", "host", "v1", "ort")}

    tails = []   # per sunk run: its time minus its piece's, the same run (medians of the two would mix runs)

    def feeder(key, s):
        def call():
            k = nxt[key] = (nxt[key] + 1) % len(images)
            t0 = time.perf_counter()
            s.run(None, {"image": images[k]})
            if key == "sunk":
                tails.append(time.perf_counter() - t0 - spent[-1])
        return call
    t = alternate({"detector sunk": feeder("sunk", sunk), "detector host-driven": feeder("host", host),
                   "backbone v1": feeder("v1", v1), "onnxruntime": feeder("ort", ort)}, rounds, pause={"onnxruntime"})
    piece = float(np.median(spent[2:]))
    base = t["backbone v1"][0]
    print(f"\n## detector_like hw {hw} width {width} ({pieces['line']}); NMS keeps {min(kept)}-{max(kept)} boxes; "
          f"threads {threads or 'default'}; compiled in {compile_s:.1f} s; {rounds} rounds")
    print(f"| {'contender':22s} | median ms | best ms | / backbone v1 |")
    print("|---|---|---|---|")
    for name in ("detector sunk", "detector host-driven", "backbone v1", "onnxruntime"):
        median, best = t[name]
        print(f"| {name:22s} | {median * 1e3:9.3f} | {best * 1e3:7.3f} | {median / base:13.3f} |")
    print(f"| {'piece in detector':22s} | {piece * 1e3:9.3f} | {min(spent) * 1e3:7.3f} | {piece / base:13.3f} |")
    print(f"host-driven part of a sunk detector run (NMS, Gathers, the host loop; run minus its piece, median): "
          f"{float(np.median(tails[2:])) * 1e3:.3f} ms")
    for s in (sunk, host, v1):
        s.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--sizes", default="128x32,64x16", help="hw x width per detector, comma separated")
    ap.add_argument("--threads", type=int, default=0, help="thread_budget for ge, intra-op threads for "
                                                           "onnxruntime (0: ge's default, all CPUs)")
    args = ap.parse_args()
    header("bench/dynamic_partition.py: static pieces sunk vs host-driven vs the backbone alone on v1")
    for size in args.sizes.split(","):
        hw, width = (int(v) for v in size.split("x"))
        one_size(hw, width, args.rounds, args.threads)
    print(f"\n# load at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
