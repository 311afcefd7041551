"""runtime_v2 replays (runtime_v2/replay.py) measured: per-node host cost and transformer exports vs onnxruntime.

    python bench/replay_vs_ort.py [chain] [exports] [decode]

chain:   host time per node of a 1,000-node chain of Relu/Add on 16 floats with a symbolic batch:
         runtime_v2 host-driven (capture_limit 0), runtime_v2 replayed, and runtime_v1 on the static chain.
exports: bert_4x256 and gpt2_4x256 as exported (dynamic axes, no options but one thread) at seq 8, 32, 128:
         ge replayed, ge host-driven and onnxruntime, one thread each (ge thread_budget=1; onnxruntime
         intra_op_num_threads=1, spinning off, and an untimed 2 ms pause before each of its timed runs).
decode:  gpt2_4x256_step, one token a step, past 8 -> 31 (24 shapes a generation), generation after
         generation: with the default capture_limit 8 the shapes cycle past the limit (host-driven after one
         recording each); with capture_limit 32 each step replays.
Contenders alternate in a shuffled order each round; medians. Prints date, CPU, commit and the load.
"""
from __future__ import annotations

import os
import platform
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "runtime_v2"))

import ge  # noqa: E402
from ge import exports  # noqa: E402
from ge.bench import onnxruntime_session  # noqa: E402
from test_v2_executor import chain  # noqa: E402

ONE = {"thread_budget": 1}


def header() -> None:
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor())
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=os.path.dirname(__file__)).stdout.strip()
    print(f"# {time.strftime('%Y-%m-%d %H:%M:%S %Z')}  CPU {cpu} x{os.cpu_count()}  commit {commit}  "
          f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def alternate(contenders: dict, rounds: int, pause: set = frozenset()) -> dict:
    """{name: fn} -> {name: median seconds} (and {name + " best": fastest}); shuffled order each round;
    `pause`: names given an untimed 2 ms sleep before each timed call (onnxruntime's pool threads park)."""
    for fn in contenders.values():
        fn()
        fn()
    times = {n: [] for n in contenders}
    names = list(contenders)
    rng = np.random.default_rng(0)
    for _ in range(rounds):
        for i in rng.permutation(len(names)):
            name = names[i]
            if name in pause:
                time.sleep(0.002)
            t0 = time.perf_counter()
            contenders[name]()
            times[name].append(time.perf_counter() - t0)
    out = {n: float(np.median(t)) for n, t in times.items()}
    out.update({f"{n} best": float(np.min(t)) for n, t in times.items()})
    return out


def chain_cost(n: int = 1000) -> None:
    x = {"x": np.ones((1, 16), np.float32)}
    rep = ge.Session(chain(n, ["N", 16]), runtime="v2", options=ONE)
    host = ge.Session(chain(n, ["N", 16]), runtime="v2", options=dict(ONE, capture_limit=0))
    v1 = ge.Session(chain(n, [1, 16]), runtime="v1", options=ONE)
    fs = {k: s._check_feeds(x) for k, s in (("rep", rep), ("host", host), ("v1", v1))}
    for _ in range(3):
        rep._executor.run(fs["rep"])
    assert rep._executor.last_run == "replayed", rep._executor.stats()

    def many(s, f):
        run = s._executor.run
        return lambda: [run(f) for _ in range(20)]
    t = alternate({"v2 replayed": many(rep, fs["rep"]), "v2 host-driven": many(host, fs["host"]),
                   "v1": many(v1, fs["v1"])}, rounds=15)
    print(f"chain {n} nodes, us per node (median, best): " + ", ".join(
        f"{k} {t[k] / 20 / (n + 1) * 1e6:.3f} ({t[k + ' best'] / 20 / (n + 1) * 1e6:.3f})"
        for k in ("v2 replayed", "v2 host-driven", "v1")))


def _sessions(model):
    rep = ge.Session(model, options=ONE)
    host = ge.Session(model, options=dict(ONE, capture_limit=0))
    ort = onnxruntime_session(model, threads=1)
    return rep, host, ort


def export_rows(names=("bert_4x256", "gpt2_4x256"), seqs=(8, 32, 128)) -> None:
    for name in names:
        model = exports.load(name)
        rep, host, ort = _sessions(model)
        for seq in seqs:
            feeds = exports.bert_feeds(1, seq) if name.startswith("bert") else exports.gpt2_feeds(1, seq)
            out_ort = ort.run(None, feeds)
            got = rep.run(None, feeds)
            rep.run(None, feeds)
            rep.run(None, feeds)
            err = max(float(np.abs(a - b).max()) for a, b in zip(got, out_ort))
            same = all(np.array_equal(a, b) for a, b in zip(rep.run(None, feeds), host.run(None, feeds)))
            t = alternate({"replayed": lambda: rep.run(None, feeds), "host": lambda: host.run(None, feeds),
                           "ort": lambda: ort.run(None, feeds)}, rounds=15 if seq < 128 else 9, pause={"ort"})
            print(f"{name} seq {seq:3d} ({rep._executor.last_run}, bitwise = host-driven: {same}, "
                  f"max |ge - ort| {err:.1e}): ge replayed {t['replayed'] * 1e3:.2f} ms = "
                  f"{t['replayed'] / t['ort']:.2f}x onnxruntime (best {t['replayed best'] / t['ort best']:.2f}x); "
                  f"ge host-driven {t['host'] * 1e3:.2f} ms = {t['host'] / t['ort']:.2f}x (best "
                  f"{t['host best'] / t['ort best']:.2f}x); onnxruntime {t['ort'] * 1e3:.2f} ms")


def decode(name="gpt2_4x256_step", layers=4, heads=4, head_size=64, steps=24, past=8) -> None:
    """Generations of `steps` tokens, the same past lengths each generation: with capture_limit 8 the 24
    shapes cycle past the limit (each is recorded once, evicted unreplayed, then refused: host-driven); with
    capture_limit 32 every step replays from the third generation on."""
    model = exports.load(name)
    rep, host, ort = _sessions(model)
    wide = ge.Session(model, options=dict(ONE, capture_limit=32))
    feeds = [exports.gpt2_step_feeds(layers, heads, head_size, past + k, vocab=1000, seed=k) for k in range(steps)]

    def loop(s):
        return lambda: [s.run(None, f) for f in feeds]
    t = alternate({"replayed": loop(rep), "limit 32": loop(wide), "host": loop(host), "ort": loop(ort)}, rounds=5,
                  pause={"ort"})
    ms = {k: v / steps * 1e3 for k, v in t.items()}
    print(f"{name} decode, past {past} -> {past + steps - 1} ({steps} shapes a generation), ms a step (x onnxruntime"
          f", best x): capture_limit 8 {ms['replayed']:.2f} ({ms['replayed'] / ms['ort']:.2f}x, "
          f"{t['replayed best'] / t['ort best']:.2f}x); capture_limit 32 {ms['limit 32']:.2f} "
          f"({ms['limit 32'] / ms['ort']:.2f}x, {t['limit 32 best'] / t['ort best']:.2f}x, last run "
          f"{wide.stats()['last_run']}); host-driven {ms['host']:.2f} ({ms['host'] / ms['ort']:.2f}x); "
          f"onnxruntime {ms['ort']:.2f}")


if __name__ == "__main__":
    header()
    parts = sys.argv[1:] or ["chain", "exports", "decode"]
    for p in parts:
        {"chain": chain_cost, "exports": export_rows, "decode": decode}[p]()
    print(f"# load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
