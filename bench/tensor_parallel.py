"""Tensor-parallel BERT-like encoder (ge.models.bert_like, hidden 1024, 8 layers, 16 heads, batch 1, seq 128):
2 ranks x 1 core under `mpiexec -n 2` (Options.parallel="tensor") against 1 rank x 1 core.

    python bench/tensor_parallel.py [--repeat 5] [--rounds 2] [--layers 8]

Prints the date and the machine, then per side the latency, the weight bytes per rank, and the largest
difference from the one-device output (the target, issue 20: <= 1e-5, weights per rank <= 0.55x). The sides
alternate `--rounds` times, each a fresh process. On a shared machine the latencies are preliminary.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

HIDDEN, HEADS, SEQ = 1024, 16, 128


def worker(path: str, repeat: int, parallel: bool, ref: str) -> None:
    import ge
    rank = int(os.environ.get("PMI_RANK", "0"))
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpus[rank % len(cpus)]})
    opts = dict(thread_budget=1, aicore_num=1)
    if parallel:
        opts.update(parallel="tensor")
    s = ge.Session(path, runtime="v1", options=ge.Options(**opts))
    ids = (np.arange(SEQ, dtype=np.int64) % 1000).reshape(1, SEQ)
    y, = s.run(None, {"input_ids": ids})   # warm-up; under MPI also lines the ranks up
    t0 = time.perf_counter()
    for _ in range(repeat):
        y, = s.run(None, {"input_ids": ids})
    dt = (time.perf_counter() - t0) / repeat
    weights = sum(a.nbytes for a in s.plan.constants.values())
    if not parallel:
        np.save(ref, y)
    diff = float(np.abs(y - np.load(ref)).max())
    if rank == 0:
        print(f"RESULT {dt * 1e3:.2f} {weights} {diff:.3g}", flush=True)


def measure(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    ms, weights, diff = next(s for s in out.splitlines() if s.startswith("RESULT")).split()[1:]
    return float(ms), int(weights), float(diff)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--worker", choices=["single", "parallel"])
    ap.add_argument("--model")
    ap.add_argument("--ref")
    a = ap.parse_args()
    if a.worker:
        return worker(a.model, a.repeat, a.worker == "parallel", a.ref)
    from ge.models import bert_like
    print(f"date      {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}")
    print(f"machine   {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs "
          f"({len(os.sched_getaffinity(0))} usable), {platform.system()} {platform.release()}, "
          f"load {os.getloadavg()[0]:.1f}")
    mpiexec = str(Path(sys.executable).parent / "mpiexec")
    with tempfile.TemporaryDirectory() as d:
        path, ref = os.path.join(d, "bert.onnx"), os.path.join(d, "ref.npy")
        onnx.save(bert_like(layers=a.layers, hidden=HIDDEN, heads=HEADS, batch=1, seq=SEQ), path)
        me = [sys.executable, os.path.abspath(__file__), "--model", path, "--ref", ref, "--repeat", str(a.repeat)]
        rows = []
        for _ in range(a.rounds):
            one = measure(me + ["--worker", "single"])
            two = measure([mpiexec, "-n", "2"] + me + ["--worker", "parallel"])
            rows.append((one, two))
            print(f"round     1 rank x 1 core {one[0]:.1f} ms   2 ranks x 1 core {two[0]:.1f} ms   "
                  f"speed-up {one[0] / two[0]:.2f}x", flush=True)
    one = min(r[0][0] for r in rows), rows[0][0][1]
    two = min(r[1][0] for r in rows), rows[0][1][1], max(r[1][2] for r in rows)
    print(f"best      1 rank {one[0]:.1f} ms, 2 ranks {two[0]:.1f} ms: {one[0] / two[0]:.2f}x; weights per rank "
          f"{two[1] / 2**20:.1f} MiB of {one[1] / 2**20:.1f} MiB ({two[1] / one[1]:.3f}x, target <= 0.55x); "
          f"largest difference {two[2]:.3g} (target <= 1e-5)")


if __name__ == "__main__":
    main()
