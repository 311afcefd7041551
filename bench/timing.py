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


def _cpuinfo() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo ({} where there is none)."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
    except OSError:
        pass
    return fields


def _core(family: int, model: int) -> str:
    """AMD's core generation from family/model (these machines vary: Zen 4 with or without AVX-512, Zen 5)."""
    if family == 26:
        return "Zen 5"
    if family == 25:
        return "Zen 4" if 0x10 <= model <= 0x1F or 0x60 <= model <= 0xAF else "Zen 3"
    return ""


def cpu() -> str:
    """CPU model, core generation and the vector features ge's kernels choose by, e.g.
    "AMD EPYC 9R14 (Zen 4; AVX-512 VNNI BF16)"."""
    info = _cpuinfo()
    name = info.get("model name") or platform.processor() or platform.machine()
    flags = set(info.get("flags", "").split())
    isa = ("AVX-512" + "".join(f" {n}" for f, n in (("avx512_vnni", "VNNI"), ("avx512_bf16", "BF16"))
                               if f in flags)) if "avx512f" in flags else ("AVX2" if "avx2" in flags else "")
    try:
        core = _core(int(info.get("cpu family", "0")), int(info.get("model", "0")))
    except ValueError:
        core = ""
    detail = "; ".join(x for x in (core, isa) if x)
    return f"{name} ({detail})" if detail else name


def commit() -> str:
    """This checkout's short commit, "+" when it has uncommitted changes ("?" outside git)."""
    here = os.path.dirname(os.path.abspath(__file__))
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=here)
    if head.returncode:
        return "?"
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                           text=True, cwd=here).stdout.strip()
    return head.stdout.strip() + ("+" if dirty else "")


def machine() -> str:
    """UTC date, CPU, the CPUs this process may use, commit and load: what a figure is quoted with."""
    return (f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {cpu()} x"
            f"{len(os.sched_getaffinity(0))}, commit {commit()}, load {load()}")


def header(title: str) -> None:
    """The line a figure is quoted with: UTC date, CPU model and count, commit, load average."""
    print(f"# {title}\n# {machine()}", flush=True)
