"""How ge scales over the AI cores: `python bench/aicores_report.py [--rounds N] [--only speedup,ort,...]`.

Prints, with the date and the machine, contenders alternating round by round in one process (medians):
  spin      ResNet-50: ge right after a spinning vs a non-spinning onnxruntime, and alone;
  speedup   ge (runtime_v1) at thread budget 1 vs 2 per light model and a BERT-like encoder (seq 128), with
            onnxruntime 1 vs 2 intra-op threads beside it;
  ort       ge at its defaults vs onnxruntime at its defaults (the whole machine), geomean;
  streams   Inception v1/v2: cores alone (one stream), streams alone (aicore_num 1), both;
  dispatch  a 1,000-node chain with every tiled task forced to block_dim = cores vs 1: the cost per task;
  project   the modelled Ascend-910-like NPU (ge.npu.sim, 32 AI cores): ResNet-50, Inception v1/v2 and the
            BERT-like encoder tiled for 1 core and for 32, on one stream and on the plan's streams.
The light models run with random weights and random inputs (their shipped weights are constants).
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import math
import os
import platform
import sys

import numpy as np

import ge
from ge.bench import alternate, onnxruntime_session
from ge.models import bert_like
from ge.npu.aicore import CPUS
from ge.zoo import LIGHT_MODELS, with_random_weights

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "runtime_v1"))
from v1_models import chain  # noqa: E402


def machine() -> str:
    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
                 platform.processor())
    return f"{model}, {CPUS} CPUs for this process, Python {platform.python_version()}"


def models() -> dict:
    out = {name: with_random_weights(name) for name in LIGHT_MODELS}
    out["bert_like (768, 4 layers, seq 128)"] = bert_like(layers=4, hidden=768, heads=12, batch=1, seq=128)
    return out


def feeds_for(sess) -> dict:
    rng = np.random.default_rng(0)
    out = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        out[i.name] = (rng.integers(0, 1000, shape) if i.dtype.kind == "i" else
                       rng.standard_normal(shape)).astype(i.dtype)
    return out


def med(times) -> float:
    return float(np.median(times)) * 1e3


def speedup(rounds: int) -> None:
    print("\n== thread budget 1 -> 2 (runtime_v1; onnxruntime intra-op threads 1 -> 2), ms and speed-up")
    print(f"{'model':36s} {'ge 1':>8s} {'ge 2':>8s} {'x':>6s}   {'ort 1':>8s} {'ort 2':>8s} {'x':>6s}")
    for name, model in models().items():
        s1 = ge.Session(model, options=ge.Options(thread_budget=1))
        s2 = ge.Session(model, options=ge.Options(thread_budget=2))
        feeds = feeds_for(s1)
        np.testing.assert_array_equal(s1.run(None, feeds)[0], s2.run(None, feeds)[0])
        o1, o2 = onnxruntime_session(model, 1), onnxruntime_session(model, 2)
        t = alternate({"ge1": lambda: s1.run(None, feeds), "ge2": lambda: s2.run(None, feeds),
                       "o1": lambda: o1.run(None, feeds), "o2": lambda: o2.run(None, feeds)}, rounds=rounds)
        g1, g2, r1, r2 = (med(t[k]) for k in ("ge1", "ge2", "o1", "o2"))
        print(f"{name:36s} {g1:8.2f} {g2:8.2f} {g1 / g2:6.2f}   {r1:8.2f} {r2:8.2f} {r1 / r2:6.2f}", flush=True)


def versus_ort(rounds: int) -> None:
    print("\n== defaults, whole machine: ge (auto) vs onnxruntime (default threads), ms")
    ratios = []
    for name, model in models().items():
        s = ge.Session(model)
        o = onnxruntime_session(model)
        feeds = feeds_for(s)
        t = alternate({"ge": lambda: s.run(None, feeds), "ort": lambda: o.run(None, feeds)}, rounds=rounds)
        r = med(t["ge"]) / med(t["ort"])
        ratios.append(r)
        print(f"{name:36s} ge {med(t['ge']):8.2f}  ort {med(t['ort']):8.2f}  ge/ort {r:5.2f}", flush=True)
    print(f"{'geomean ge/ort':36s} {math.exp(np.mean(np.log(ratios))):.3f}")


def streams(rounds: int) -> None:
    print("\n== Inception: cores alone, streams alone, both (runtime_v1, thread budget = CPUs), ms")
    for name in ("inception_v1", "inception_v2"):
        model = with_random_weights(name)
        cores = ge.Session(model, options=ge.Options(max_streams=1))
        streams_ = ge.Session(model, options=ge.Options(aicore_num=1))
        both = ge.Session(model)
        feeds = feeds_for(both)
        t = alternate({"cores": lambda: cores.run(None, feeds), "streams": lambda: streams_.run(None, feeds),
                       "both": lambda: both.run(None, feeds)}, rounds=rounds)
        c, s, b = med(t["cores"]), med(t["streams"]), med(t["both"])
        print(f"{name:14s} cores {c:7.2f}  streams {s:7.2f} ({both.plan.num_streams} streams)  both {b:7.2f}"
              f"   best alone / both {min(c, s) / b:.3f}", flush=True)


def dispatch(rounds: int) -> None:
    n = 1000
    plan = ge.compile(chain(n, size=4096))
    forced = dataclasses.replace(plan, nodes=tuple(
        dataclasses.replace(nd, launch=dataclasses.replace(nd.launch, block_dim=CPUS))
        if nd.launch is not None and nd.launch.tiled and not nd.launch.workspaces else nd for nd in plan.nodes))
    tiled = sum(nd.launch is not None and nd.launch.block_dim > 1 for nd in forced.nodes)
    one, many = ge.Session(plan, runtime="v1"), ge.Session(forced, runtime="v1")
    feeds = {"x": np.linspace(-1, 1, 4096).astype(np.float32)}
    np.testing.assert_array_equal(one.run(None, feeds)[0], many.run(None, feeds)[0])
    t = alternate({"one": lambda: one.run(None, feeds), "many": lambda: many.run(None, feeds)}, rounds=rounds)
    print(f"\n== block dispatch: {n}-node chain of 4,096 floats, {tiled} tasks forced to block_dim {CPUS}")
    print(f"block_dim 1: {med(t['one']) / n * 1e3:.2f} us per task; block_dim {CPUS}: "
          f"{med(t['many']) / n * 1e3:.2f} us per task (run {med(t['one']):.2f} vs {med(t['many']):.2f} ms)")


def project(rounds: int) -> None:
    from ge.kernels.bind import retile
    from ge.npu.sim import ASCEND_910, compare
    units = ASCEND_910.engine("AICORE").units
    print(f"\n== modelled Ascend-910-like NPU ({units} AI cores): NPU time in us (AICORE utilization)")
    print(f"{'model':36s} {'1 core, 1 stream':>20s} {'32 cores, 1 stream':>20s} {'32 cores, streams':>20s}")
    chosen = {k: v for k, v in models().items() if k.startswith(("resnet50", "inception", "bert"))}
    for name, model in chosen.items():
        plan = ge.compile(model)
        one, _ = compare(plan, block_dims=[1] * len(plan.nodes))
        single, multi = compare(plan, block_dims=retile(plan, units))
        cell = lambda r: f"{r.makespan_s * 1e6:9.1f} ({r.aicore_utilization:5.1%})"  # noqa: E731
        print(f"{name:36s} {cell(one):>20s} {cell(single):>20s} {cell(multi):>20s}  {plan.num_streams} streams")


def spin(rounds: int) -> None:
    """Why onnxruntime_session turns spinning off: ge run right after a spinning onnxruntime."""
    import onnxruntime as ort
    model = with_random_weights("resnet50")
    s = ge.Session(model)
    feeds = feeds_for(s)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    spinning = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    quiet = onnxruntime_session(model)
    run = lambda: s.run(None, feeds)  # noqa: E731
    a = alternate({"ge": run, "ort": lambda: spinning.run(None, feeds)}, rounds=rounds)
    b = alternate({"ge": run, "ort": lambda: quiet.run(None, feeds)}, rounds=rounds)
    alone = alternate({"ge": run}, rounds=rounds)
    print("\n== resnet50, ge at its defaults beside onnxruntime at its defaults, ms")
    print(f"ge after a spinning onnxruntime {med(a['ge']):.1f} (onnxruntime {med(a['ort']):.1f}); after a "
          f"non-spinning one {med(b['ge']):.1f} (onnxruntime {med(b['ort']):.1f}); ge alone {med(alone['ge']):.1f}")


PARTS = {"spin": spin, "speedup": speedup, "ort": versus_ort, "streams": streams, "dispatch": dispatch, "project": project}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--only", default=",".join(PARTS), help="comma list of " + ", ".join(PARTS))
    args = p.parse_args(argv)
    print(f"ge AI cores report, {datetime.datetime.now():%Y-%m-%d %H:%M}, {machine()}")
    for part in args.only.split(","):
        PARTS[part](args.rounds)


if __name__ == "__main__":
    main()
