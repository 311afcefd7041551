"""How ge scales over the AI cores: `python bench/aicores_report.py [--rounds N] [--only speedup,ort,...]`.

Prints, with the date and the machine, contenders alternating round by round in one process (medians):
  ceiling   the machine itself: a native loop on one thread vs the same loop on every CPU at once (twice the
            work on 2 CPUs): the speed-up perfectly parallel work gets here (a VM whose CPUs come and go
            shows it below the CPU count);
  spin      ResNet-50: ge right after a spinning vs a non-spinning onnxruntime, and alone;
  speedup   ge (runtime_v1) at thread budget 1 vs 2 per light model and a BERT-like encoder (seq 128), with
            onnxruntime 1 vs 2 intra-op threads beside it;
  ort       ge at its defaults vs onnxruntime at its defaults (the whole machine), geomean;
  streams   Inception v1/v2: cores alone (one stream), streams alone (aicore_num 1), and both: a thread per
            stream, every kernel tiled, core tokens bounding the threads that compute ("threads"), and the
            defaults, the streams pulled by the cores (runtime_v1/dispatch.py, "pulled");
  pulled    every multi-stream model: streams pulled by the cores (the defaults) vs merged on one stream
            thread (GE_V1_DISPATCH=0) vs one stream;
  headroom  Inception v1/v2, every kernel tiled, on one stream and pulled: a traced run's busy and idle time
            of the cores, and the wall time were no core ever idle (what streams could fill at most);
  dispatch  a 1,000-node chain with every tiled task forced to block_dim = cores vs 1: the cost per task;
  project   the modelled Ascend-910-like NPU (ge.npu.sim, 32 AI cores): ResNet-50, Inception v1/v2 and the
            BERT-like encoder tiled for 1 core and for 32, on one stream and on the plan's streams.
The light models run with random weights and random inputs (their shipped weights are constants).
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import os
import platform
import sys

import numpy as np
from numba import njit

import ge
from ge.bench import alternate, onnxruntime_session
from ge.models import bert_like
from ge.npu.aicore import CPUS
from ge.zoo import LIGHT_MODELS, with_random_weights

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "runtime_v1"))
from v1_models import chain  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from timing import machine  # noqa: E402


ONLY: list[str] = []   # --models: names (or prefixes) to keep


def models() -> dict:
    names = [n for n in LIGHT_MODELS if not ONLY or any(n.startswith(o) for o in ONLY)]
    out = {name: with_random_weights(name) for name in names}
    if not ONLY or any("bert_like".startswith(o) for o in ONLY):
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


@njit(nogil=True, cache=True)
def _spin(n):
    s = 0.0
    for i in range(n):
        s += (i % 7) * 0.5
    return s


SPIN = 10_000_000   # ~10 ms of a native loop


def _every_cpu() -> None:
    """The loop on every CPU at once (CPUS times the work of one)."""
    import threading
    threads = [threading.Thread(target=_spin, args=(SPIN,)) for _ in range(CPUS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


CEILING = {"spin 1": lambda: _spin(SPIN), "spin all": _every_cpu}


def ceiling_of(t: dict, best: bool = False) -> float:
    """The speed-up perfectly parallel work got in the same rounds: CPUS x (one thread's time / all threads')."""
    pick = min if best else med
    return CPUS * pick(t["spin 1"]) / pick(t["spin all"])


def ceiling(rounds: int) -> None:
    _spin(10)
    t = alternate(CEILING, rounds=rounds)
    print(f"\n== the machine: a native loop on 1 thread {med(t['spin 1']):.1f} ms, the same on {CPUS} threads at once "
          f"{med(t['spin all']):.1f} ms: perfectly parallel work gets {ceiling_of(t):.2f}x here "
          f"(best of each: {ceiling_of(t, True):.2f}x)")


def speedup(rounds: int) -> None:
    print("\n== thread budget 1 -> 2 (runtime_v1; onnxruntime intra-op threads 1 -> 2), medians in ms and speed-ups "
          "(median, and best run against best run); `machine`: what perfectly parallel work got in the same rounds "
          "(a native loop on 1 thread vs on every CPU)")
    print(f"{'model':36s} {'ge 1':>7s} {'ge 2':>7s} {'x':>5s} {'best':>5s}   {'ort 1':>7s} {'ort 2':>7s} {'x':>5s} "
          f"{'best':>5s}   {'machine':>7s} {'best':>5s}")
    _spin(10)
    for name, model in models().items():
        s1 = ge.Session(model, options=ge.Options(thread_budget=1))
        s2 = ge.Session(model, options=ge.Options(thread_budget=2))
        feeds = feeds_for(s1)
        np.testing.assert_array_equal(s1.run(None, feeds)[0], s2.run(None, feeds)[0])
        o1, o2 = onnxruntime_session(model, 1), onnxruntime_session(model, 2)
        t = alternate({"ge1": lambda: s1.run(None, feeds), "ge2": lambda: s2.run(None, feeds),
                       "o1": lambda: o1.run(None, feeds), "o2": lambda: o2.run(None, feeds), **CEILING},
                      rounds=rounds)
        g1, g2, r1, r2 = (med(t[k]) for k in ("ge1", "ge2", "o1", "o2"))
        best = {k: min(v) for k, v in t.items()}
        print(f"{name:36s} {g1:7.2f} {g2:7.2f} {g1 / g2:5.2f} {best['ge1'] / best['ge2']:5.2f}   {r1:7.2f} {r2:7.2f} "
              f"{r1 / r2:5.2f} {best['o1'] / best['o2']:5.2f}   {ceiling_of(t):7.2f} {ceiling_of(t, True):5.2f}",
              flush=True)


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
    print("\n== Inception: cores alone, streams alone, both (runtime_v1, the CPUs of this process), ms")
    for name in ("inception_v1", "inception_v2"):
        model = with_random_weights(name)
        kinds = {"cores": ge.Options(max_streams=1),                     # one stream, kernels tiled
                 "streams": ge.Options(aicore_num=1),                    # a thread per stream, kernels untiled
                 "threads": ge.Options(thread_budget=CPUS * 8),          # a thread per stream, kernels tiled
                 "pulled": ge.Options()}                                  # the defaults: the cores pull the streams
        sess = {k: (on_stream_threads if k == "threads" else ge.Session)(model, options=o) for k, o in kinds.items()}
        feeds = feeds_for(sess["cores"])
        want = sess["cores"].run(None, feeds)[0]
        for s in sess.values():
            np.testing.assert_array_equal(s.run(None, feeds)[0], want)
        t = alternate({k: (lambda s=s: s.run(None, feeds)) for k, s in sess.items()}, rounds=rounds)
        m = {k: med(v) for k, v in t.items()}
        threads = {k: s.stream_threads for k, s in sess.items()}
        print(f"{name:14s} " + "  ".join(f"{k} {m[k]:7.2f} ({threads[k]}t)" for k in kinds)
              + f"   best of cores, streams / pulled {min(m['cores'], m['streams']) / m['pulled']:.3f}", flush=True)


def on_stream_threads(model, options=None) -> ge.Session:
    """A session whose streams run on stream threads even with tiled kernels (runtime_v1's GE_V1_DISPATCH=0,
    read when the plan is loaded)."""
    os.environ["GE_V1_DISPATCH"] = "0"
    try:
        return ge.Session(model, options=options)
    finally:
        del os.environ["GE_V1_DISPATCH"]


def pulled(rounds: int) -> None:
    """Every multi-stream model: its streams pulled by the cores (the defaults) vs on one stream thread (the
    stream-thread policy, GE_V1_DISPATCH=0: streams merged in plan order) vs one stream."""
    print("\n== multi-stream models: streams pulled by the cores vs one stream thread vs one stream (runtime_v1), ms")
    for name, model in models().items():
        sess = {"pulled": ge.Session(model)}
        if sess["pulled"].plan.num_streams < 2:
            continue
        sess["one thread"] = on_stream_threads(model)
        sess["one stream"] = ge.Session(model, options=ge.Options(max_streams=1))
        feeds = feeds_for(sess["one stream"])
        want = sess["one stream"].run(None, feeds)
        for s in sess.values():
            for a, b in zip(s.run(None, feeds), want):
                np.testing.assert_array_equal(a, b)
        t = alternate({k: (lambda s=s: s.run(None, feeds)) for k, s in sess.items()}, rounds=rounds)
        m = {k: med(v) for k, v in t.items()}
        cells = "  ".join(f"{k} {v:7.2f}" for k, v in m.items())
        print(f"{name:34s} {sess['pulled'].plan.num_streams} streams  {cells}"
              + f"   one thread / pulled {m['one thread'] / m['pulled']:.3f}, one stream / pulled "
              f"{m['one stream'] / m['pulled']:.3f}", flush=True)


def _busy(slices) -> tuple[float, float]:
    """(wall, compute) of a traced run: from the first block's start to the last one's end, and the sum of
    the blocks' times."""
    return max(x.end for x in slices) - min(x.start for x in slices), sum(x.end - x.start for x in slices)


def headroom(rounds: int) -> None:
    """How much streams could add to tiled kernels at most: the cores' idle time on one stream, and with the
    streams pulled by the cores. Both runs native: the pulled streams' cores record every task; one stream's
    loop records the blocks of its tiled tasks, and its untiled tasks' times (one core computing, the other
    idle) come from a run stepped from Python (`run_traced`), whose gaps are not the native loop's."""
    from ge.npu import Tracer
    print(f"\n== kernels tiled over {CPUS} cores: traced busy time of the cores (best of {rounds} runs), ms")
    for name in ("inception_v1", "inception_v2"):
        model = with_random_weights(name)
        one, pull = ge.Session(model, options=ge.Options(max_streams=1)), ge.Session(model)
        feeds = feeds_for(one)
        tr = Tracer()
        one.run_traced(feeds, tr)
        tiled = {b.name.rsplit("[", 1)[0] for b in tr.slices if b.kind == "block"}
        untiled = sum(k.end - k.start for k in tr.slices if k.kind == "kernel" and k.name not in tiled)
        ex = one._executor
        inst, names = ex._instances.all[0], ex.task_names()
        best = {}
        for _ in range(rounds):
            tr = Tracer()
            with inst.cores.tracing(tr, names):
                one.run(None, feeds)
            wall, busy = _busy(tr.slices)
            if "one stream" not in best or wall < best["one stream"][0]:
                best["one stream"] = (wall, busy + untiled)
            tr = Tracer()
            pull.run_traced(feeds, tr)
            wall, busy = _busy([x for x in tr.slices if x.kind == "block"])
            if "pulled" not in best or wall < best["pulled"][0]:
                best["pulled"] = (wall, busy)
        for kind, (wall, busy) in best.items():
            print(f"{name:14s} {kind:10s} wall {wall * 1e3:6.2f}  compute {busy * 1e3:6.2f} over {CPUS} cores "
                  f"({busy / (CPUS * wall):.1%} busy)  no idle core: {busy / CPUS * 1e3:6.2f}, at most "
                  f"{wall * CPUS / busy:.3f}x faster", flush=True)


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


PARTS = {"ceiling": ceiling, "spin": spin, "speedup": speedup, "ort": versus_ort, "streams": streams, "pulled": pulled,
         "headroom": headroom,
         "dispatch": dispatch, "project": project}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--only", default=",".join(PARTS), help="comma list of " + ", ".join(PARTS))
    p.add_argument("--models", help="speedup / ort / project: only these models (comma list of name prefixes)")
    args = p.parse_args(argv)
    ONLY[:] = args.models.split(",") if args.models else []
    print(f"ge AI cores report, {machine()}, Python {platform.python_version()}")
    for part in args.only.split(","):
        PARTS[part](args.rounds)


if __name__ == "__main__":
    main()
