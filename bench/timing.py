"""Side-by-side timing for the bench scripts: the sides alternate within each repetition, so a busy
machine slows them alike and the ratio holds. `header` prints what a figure needs beside it (date, CPU,
commit, load)."""
import datetime
import os
import platform
import subprocess
import time

import numpy as np

from ge.bench import alternate as ge_alternate


def alternating_best(fns, reps: int) -> list[float]:
    """Best seconds of each function over `reps` rounds, after one warm-up call each."""
    best = [float("inf")] * len(fns)
    for f in fns:
        f()
    for _ in range(reps):
        for i, f in enumerate(fns):
            t = time.perf_counter()
            f()
            best[i] = min(best[i], time.perf_counter() - t)
    return best


def alternate(fns: dict, rounds: int, runs: int = 1, pause: frozenset = frozenset(), pause_s: float = 0.005,
              warmup: int = 2, clock=time.perf_counter) -> dict[str, tuple[float, float]]:
    """{name: fn} -> {name: (median, best) seconds a run}: ge.bench.alternate's interleaved, shuffled rounds
    (a call is `runs` runs; names in `pause` get an untimed sleep first, so onnxruntime's pool threads park:
    ge.bench.onnxruntime_session turns their spinning off too; `clock` time.process_time: CPU seconds)."""
    times = ge_alternate(fns, rounds, warmup, runs=runs, pause=pause, pause_s=pause_s, clock=clock)
    return {name: (float(np.median(t)), float(np.min(t))) for name, t in times.items()}


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def header(title: str) -> None:
    """The line a figure is quoted with: UTC date, CPU model and count, commit, load average."""
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor())
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    print(f"# {title}\n# {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC  {cpu} x"
          f"{len(os.sched_getaffinity(0))}  commit {commit}  load {load()}", flush=True)
