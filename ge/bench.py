"""Side-by-side timing for `ge bench` and bench/: contenders alternate round by round in one process, so
machine noise hits all of them alike; results are medians, p90s and ratios to a baseline."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np


def alternate(contenders: dict, rounds: int = 15, warmup: int = 2, runs: int = 1, pause: frozenset = frozenset(),
              pause_s: float = 0.005, clock=time.perf_counter) -> dict[str, np.ndarray]:
    """{name: fn} -> {name: seconds per call}, calls interleaved round by round, in a new (seeded) order each
    round: on a VM whose host takes a CPU away periodically, a fixed order can let the loss fall on the same
    places round after round (five identical 2-core ResNet-50 contenders, 25 rounds: medians 52.0-61.3 ms in a
    fixed order, 55.1-60.7 shuffled; such a VM's noise stays: compare ratios against its spread). A sample is
    `runs` calls in a row (its mean kept); names in `pause` get an untimed sleep of pause_s before each sample,
    so onnxruntime's pool threads park. `clock`: time.process_time counts the CPU seconds of the process's
    threads instead of wall time (on a shared machine a one-thread contender's CPU time is not inflated by
    the time it waits for a core)."""
    for fn in contenders.values():
        for _ in range(warmup):
            fn()
    times = {name: [] for name in contenders}
    names = list(contenders)
    rng = np.random.default_rng(0)
    for _ in range(rounds):
        for i in rng.permutation(len(names)):
            name, fn = names[i], contenders[names[i]]
            if name in pause:
                time.sleep(pause_s)
            t0 = clock()
            for _ in range(runs):
                fn()
            times[name].append((clock() - t0) / runs)
    return {name: np.array(t) for name, t in times.items()}


def onnxruntime_session(model, threads: int = 0, profile_prefix: str | None = None):
    """An onnxruntime session (CPU) to time beside ge: `model` a path, bytes or ModelProto; `threads` its
    intra-op threads (0: its default, every core). Its pool threads do not spin after a run: spinning, they
    hold the cores for a while, and whatever runs next loses them (bench/aicores_report.py --only spin: ge's
    ResNet-50 after a spinning onnxruntime 77-97 ms, after a non-spinning one 70-73, alone 69-70; onnxruntime
    itself gains 0-15% from spinning). `profile_prefix`: record onnxruntime's node profile there (ge.byop)."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.log_severity_level = 3
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if profile_prefix:
        so.enable_profiling = True
        so.profile_file_prefix = profile_prefix
    data = model if isinstance(model, (str, bytes)) else model.SerializeToString()
    return ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])


@dataclass(frozen=True)
class Row:
    name: str
    median_ms: float
    p90_ms: float
    ratio: float  # median over the baseline's median

    def to_dict(self) -> dict:
        return {"name": self.name, "median_ms": self.median_ms, "p90_ms": self.p90_ms, "ratio": self.ratio}


def summarize(times: dict[str, np.ndarray], base: str | None = None) -> list[Row]:
    base = base or next(iter(times))
    ref = float(np.median(times[base]))
    return [Row(name, round(float(np.median(t)) * 1e3, 3), round(float(np.percentile(t, 90)) * 1e3, 3),
                round(float(np.median(t)) / ref, 3)) for name, t in times.items()]


def format_table(rows: list[Row], base: str) -> str:
    width = max(len(r.name) for r in rows)
    lines = [f"{'contender':{width}s}  {'median ms':>10s}  {'p90 ms':>10s}  {'x ' + base:>12s}"]
    lines += [f"{r.name:{width}s}  {r.median_ms:10.3f}  {r.p90_ms:10.3f}  {r.ratio:12.3f}" for r in rows]
    return "\n".join(lines)


def compiled_form(op: str, arrays: list, attrs: dict):
    """(op, arrays, attrs, domain) of a single node as the compiler leaves it, for timing its kernel alone:
    a Conv whose constant weights pack_conv_weights would pack becomes the FusedConv on packed weights."""
    from .kernels import conv
    from .kernels.conv_implicit import pack
    if op == "Conv" and conv.wants_packed(arrays[1].shape, int(attrs.get("group", 1)), arrays[1].dtype):
        return ("FusedConv", [arrays[0], pack(arrays[1], int(attrs.get("group", 1)))] + list(arrays[2:]),
                dict(attrs, weight_shape=list(arrays[1].shape)), "ge")
    return op, arrays, attrs, ""
