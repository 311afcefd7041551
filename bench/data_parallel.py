"""Data-parallel ResNet-50 (the onnx light model, random weights as shipped): batch 8 on 2 ranks x 1 core
(`mpiexec -n 2`, each rank pinned to its own CPU, Options.parallel="data") against 1 rank x 1 core.

    python bench/data_parallel.py [--repeat 5] [--rounds 2] [--local]

Prints the date and the machine, then images/s per side and the ratio; the two sides alternate `--rounds`
times (each a fresh process: the MPI side must be). The target (issue 20) is >= 1.8x. On a shared machine the
figures are preliminary.
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
from onnx import numpy_helper

BATCH = 8


def batch_model(path: str, batch: int = BATCH) -> None:
    """The light ResNet-50 with another batch (its one Reshape reads the batch from -1)."""
    from ge.zoo import light_model_path
    m = onnx.load(light_model_path("resnet50"))
    for v in (*m.graph.input, *m.graph.output):
        v.type.tensor_type.shape.dim[0].dim_value = batch
    for i, init in enumerate(m.graph.initializer):
        if init.name == "OC2_DUMMY_1":
            m.graph.initializer[i].CopyFrom(numpy_helper.from_array(np.array([-1, 2048], np.int64), init.name))
    del m.graph.value_info[:]
    onnx.save(m, path)


def worker(path: str, repeat: int, parallel: bool, rows: int = BATCH, devices: int = 1) -> None:
    import ge
    rank = int(os.environ.get("PMI_RANK", "0"))
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, set(cpus[:devices]) if devices > 1 else {cpus[rank % len(cpus)]})
    opts = dict(thread_budget=1, aicore_num=1)
    if parallel:
        opts.update(parallel="data")
    if devices > 1:   # the devices of one process, on a thread and a CPU each
        opts.update(device_count=devices)
    s = ge.Session(path, runtime="v1", options=ge.Options(**opts))
    x = np.random.default_rng(0).standard_normal((rows, 3, 224, 224)).astype(np.float32)
    s.run(None, {"gpu_0/data_0": x})   # warm-up; under MPI also lines the ranks up
    t0 = time.perf_counter()
    for _ in range(repeat):
        y, = s.run(None, {"gpu_0/data_0": x})
    dt = time.perf_counter() - t0
    if rank == 0:
        print(f"RESULT {rows * repeat / dt:.3f} {float(y.sum()):.6f}", flush=True)


def measure(cmd) -> tuple[float, float]:
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    line = next(s for s in out.splitlines() if s.startswith("RESULT"))
    ips, checksum = line.split()[1:]
    return float(ips), float(checksum)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--worker", choices=["single", "parallel", "half", "local"])
    ap.add_argument("--local", action="store_true", help="also 2 devices in one process (shared memory)")
    ap.add_argument("--model")
    a = ap.parse_args()
    if a.worker:
        if a.worker == "half":   # one rank's share alone: what 2 ranks would reach with no loss (x2)
            return worker(a.model.replace(".onnx", "_half.onnx"), a.repeat, False, BATCH // 2)
        if a.worker == "local":
            return worker(a.model, a.repeat, True, devices=2)
        return worker(a.model, a.repeat, a.worker == "parallel")
    print(f"date      {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}")
    print(f"machine   {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs "
          f"({len(os.sched_getaffinity(0))} usable), {platform.system()} {platform.release()}")
    mpiexec = str(Path(sys.executable).parent / "mpiexec")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "resnet50_b8.onnx")
        batch_model(path)
        batch_model(path.replace(".onnx", "_half.onnx"), BATCH // 2)
        me = [sys.executable, os.path.abspath(__file__), "--model", path, "--repeat", str(a.repeat)]
        singles, pairs, halves = [], [], []
        for _ in range(a.rounds):
            singles.append(measure(me + ["--worker", "single"]))
            pairs.append(measure([mpiexec, "-n", "2"] + me + ["--worker", "parallel"]))
            halves.append(measure(me + ["--worker", "half"]))
            print(f"round     1 rank x 1 core {singles[-1][0]:.2f} images/s   2 ranks x 1 core "
                  f"{pairs[-1][0]:.2f} images/s   ratio {pairs[-1][0] / singles[-1][0]:.2f}x   (1 rank, batch "
                  f"{BATCH // 2}: {halves[-1][0]:.2f} images/s)", flush=True)
            if a.local:
                ips = measure(me + ["--worker", "local"])[0]
                print(f"          2 devices in one process, 1 core each: {ips:.2f} images/s "
                      f"({ips / singles[-1][0]:.2f}x)", flush=True)
    one, two, half = (max(s for s, _ in singles), max(p for p, _ in pairs), max(h for h, _ in halves))
    print(f"best      1 rank {one:.2f} images/s, 2 ranks {two:.2f} images/s: {two / one:.2f}x "
          f"(outputs' checksums {singles[0][1]:.6f} vs {pairs[0][1]:.6f}); target >= 1.8x; without scaling "
          f"loss 2 ranks would give 2 x {half:.2f} = {2 * half:.2f} images/s ({2 * half / one:.2f}x)")


if __name__ == "__main__":
    main()
