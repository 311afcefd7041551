"""Side-by-side timing for the bench scripts: the sides alternate within each repetition, so a busy
machine slows them alike and the ratio holds. `header` prints what a figure needs beside it (date, CPU,
commit, load)."""
import datetime
import os
import platform
import subprocess
import time

import numpy as np


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
              warmup: int = 2) -> dict[str, tuple[float, float]]:
    """{name: fn} -> {name: (median, best) seconds a run}: the calls interleave round by round in a new
    (seeded) order each round (a fixed order lets a VM's periodic losses fall on the same contender); a call
    is `runs` runs. Names in `pause` get an untimed sleep before each timed call, so onnxruntime's pool
    threads park (ge.bench.onnxruntime_session turns their spinning off too)."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times = {name: [] for name in fns}
    names = list(fns)
    rng = np.random.default_rng(0)
    for _ in range(rounds):
        for i in rng.permutation(len(names)):
            name = names[i]
            if name in pause:
                time.sleep(pause_s)
            t0 = time.perf_counter()
            for _ in range(runs):
                fns[name]()
            times[name].append((time.perf_counter() - t0) / runs)
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
