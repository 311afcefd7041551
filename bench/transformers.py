"""The committed transformers exports (tests/fixtures/transformers, ge.exports) on ge and onnxruntime, one
thread each, side by side in one process:

    python bench/transformers.py [exports] [by-op] [attention] [decode] [--models a,b] [--seqs 8,32,128]
        [--columns replayed,host,fixed,unfused] [--pasts 8,32,128,512] [--cycle 24] [--generate MODEL]
        [--tokens 32] [--rounds 9] [--runs 1] [--clock wall|cpu] [--stat median|fastest]

exports    each model at batch 1 and each sequence length, ge's columns against onnxruntime (default models
           bert_4x256, bert_6x768, gpt2_4x256): "replayed" as exported (dynamic axes: runtime_v2, the run
           replayed once recorded, docs/replays.md), "host" the same host-driven (capture_limit 0), "fixed"
           with every input shape fixed (Options.input_shape: a static plan on runtime_v1), "unfused" replayed
           without the transformer fusions (fuse_attention, fuse_skip_layer_norm; the bias / GELU epilogues
           stay). Every column's outputs are checked against onnxruntime's before anything is timed.
by-op      where the time goes per op family (ge.byop), fused, unfused and onnxruntime, for each BERT model
           at the largest --seqs (runtime_v1 on a static plan: ge.byop traces one); --stat fastest: each
           node's fastest run instead of its median (a loaded machine's slices hold the waits for a core).
attention  the attention subgraph alone (12 heads x 64, an additive mask), fused vs unfused vs onnxruntime,
           at each of --seqs (default 128, 512), runtime_v1; the fused run's GF/s also as a share of ge's
           GEMM on packed weights (128x768x768 in cache, the same clock).
decode     one new token a step on a KV cache in place (Options.kv_cache_max_len, ge.KVCache) at each of
           --pasts ('': none) vs onnxruntime fed the past (its Concats write every present; the bytes moved a
           step are printed): the step shaped by its past replayed and host-driven (runtime_v2; within a
           generation every step is a new shape, so host-driven is what a generation gets) and one static
           step plan for every past (Options.kv_cache_static, runtime_v1); default gpt2_4x256_step,
           gpt2_12x768_step; --cycle N: N steps of a generation
           (past 8 -> 8 + N - 1, a new shape each step) run generation after generation, replayed with the
           default capture_limit 8 and with 32, host-driven, and onnxruntime (the first model; 0: none);
           --generate: ge.generate's tokens a second as it compiles a model (static steps and a prefill gear
           on runtime_v1) and with steps shaped by their past, vs onnxruntime's loop (the same greedy tokens;
           '': none).

ge: Options(thread_budget=1). onnxruntime: intra_op_num_threads=1, its pool not spinning
(ge.bench.onnxruntime_session), all its graph optimizations, an untimed 5 ms pause before each of its timed
calls. Contenders alternate in a new order each round (bench/timing.py); a call is --runs runs; medians (ms a
run) and their ratio to onnxruntime, the ratio of the fastest calls in brackets; --clock cpu times the
process's CPU seconds instead of wall time. Prints date, CPU, commit and the load average before and after
(the machine may be shared).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import ge
from ge import exports
from ge.bench import onnxruntime_session
from ge.byop import compare, format_families, ge_profile, ort_profile
from ge.generation import static_options

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import transformer_cases as cases  # noqa: E402
from timing import alternate, header, load  # noqa: E402

DEFAULT_MODELS = {"exports": "bert_4x256,bert_6x768,gpt2_4x256", "by-op": "bert_4x256,bert_6x768",
                  "attention": "", "decode": "gpt2_4x256_step,gpt2_12x768_step"}
DEFAULT_SEQS = {"exports": "8,32,128", "by-op": "128", "attention": "128,512"}
ORT = frozenset({"ort"})
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}   # --clock cpu: the process's CPU seconds


def ratio(t: dict, name: str) -> str:
    return f"{t[name][0] / t['ort'][0]:5.2f}x({t[name][1] / t['ort'][1]:4.2f})"


def exports_mode(models, seqs, columns, args) -> None:
    """ge's columns vs onnxruntime on each export and sequence length."""
    print(f"{'model':12s} {'seq':>4s} " + " ".join(f"{c + ' ms':>12s}" for c in columns) + f" {'ort ms':>9s}  "
          + " ".join(f"{c + '/ort':>12s}" for c in columns) + "  max|ge-ort|  replayed=host")
    for name in models:
        model = exports.load(name)
        ort = onnxruntime_session(model, threads=1)
        dynamic = {c: cases.session(model, c) for c in columns if c != "fixed"}
        for seq in seqs:
            feeds = cases.feeds(name, seq)
            sess = dict(dynamic)
            if "fixed" in columns:
                sess["fixed"] = cases.session(model, "fixed", feeds)
            want = ort.run(None, feeds)
            err = 0.0
            for c in columns:   # the same answers first
                for got, ref in zip(sess[c].run(None, feeds), want):
                    np.testing.assert_allclose(got, ref, rtol=2e-3, atol=2e-3, err_msg=f"{name} {c}")
                    err = max(err, float(np.abs(got - ref).max()))
            same = "-"
            if "replayed" in sess and "host" in sess:
                same = str(all(np.array_equal(a, b) for a, b in zip(sess["replayed"].run(None, feeds),
                                                                   sess["host"].run(None, feeds))))
            fns = {c: (lambda s=sess[c]: s.run(None, feeds)) for c in columns}
            fns["ort"] = lambda: ort.run(None, feeds)
            t = alternate(fns, args.rounds, args.runs, pause=ORT, clock=CLOCKS[args.clock])
            note = f" ({sess['replayed'].stats()['last_run']})" if "replayed" in sess else ""
            print(f"{name:12s} {seq:4d} " + " ".join(f"{t[c][0] * 1e3:12.3f}" for c in columns)
                  + f" {t['ort'][0] * 1e3:9.3f}  " + " ".join(f"{ratio(t, c):>12s}" for c in columns)
                  + f"  {err:10.1e}  {same}{note}", flush=True)


def by_op_mode(models, seqs, args) -> None:
    """Per op family, fused and unfused ge vs onnxruntime's own node profile, at the largest sequence."""
    for name in models:
        model, feeds = exports.load(name), cases.feeds(name, seqs[-1])
        want = ort_profile(model, feeds, threads=1, runs=args.rounds, stat=args.stat)
        for label, disabled in (("fused", ()), ("unfused", cases.TRANSFORMER_FUSIONS)):
            sess = cases.static_session(model, feeds, disabled)
            print(f"\n{name} seq {seqs[-1]}, ge {label} vs onnxruntime, per op family (ms per run):")
            print(format_families(compare(ge_profile(sess, feeds, runs=args.rounds, stat=args.stat), want)),
                  flush=True)


def gemm_rate(clock, M: int = 128, K: int = 768, N: int = 768) -> float:
    """GF/s of ge's GEMM on packed weights (gemm_packed_block, BERT's projection shape, the data in cache):
    the peak the attention's rate is read against; the best of 9 calls of 5 on `clock`."""
    from ge.kernels.gemm_packed import gemm_packed_block, pack_b, packed_workspace
    rng = np.random.default_rng(0)
    a, bp = rng.standard_normal(M * K).astype(np.float32), pack_b(rng.standard_normal((K, N)).astype(np.float32))
    c, ws = np.zeros(M * N, np.float32), np.zeros(packed_workspace(M, K, np.float32), np.float32)
    best = np.inf
    for _ in range(10):
        t0 = clock()
        for _ in range(5):
            gemm_packed_block(a, bp, N, c, N, K, K, 1, 0, M, 0, N, ws)
        best = min(best, (clock() - t0) / 5)
    return 2 * M * N * K / best / 1e9


def attention_mode(seqs, args) -> None:
    """The attention subgraph alone: fused (ge's attention kernel) vs unfused vs onnxruntime; the fused run's
    rate (its inputs' copies included) as a share of ge's GEMM rate."""
    peak = gemm_rate(CLOCKS[args.clock])
    print(f"ge's GEMM (gemm_packed_block 128x768x768, best): {peak:.1f} GF/s")
    print(f"{'seq':>5s} {'fused ms':>9s} {'unfused ms':>11s} {'ort ms':>9s} {'fused/ort':>12s} {'unfused/ort':>12s}"
          f" {'fused GF/s':>10s} {'of GEMM':>8s}")
    for seq in seqs:
        model, feeds = cases.sdpa_model(seq), cases.sdpa_feeds(seq)
        fused = ge.Session(model, runtime="v1", options=ge.Options(thread_budget=1))
        plain = ge.Session(model, runtime="v1", options=ge.Options(thread_budget=1,
                                                                   disabled_passes=cases.TRANSFORMER_FUSIONS))
        ort = onnxruntime_session(model, 1)
        want = ort.run(None, feeds)[0]
        for s in (fused, plain):
            np.testing.assert_allclose(s.run(None, feeds)[0], want, rtol=1e-4, atol=1e-5)
        t = alternate({"fused": lambda: fused.run(None, feeds), "unfused": lambda: plain.run(None, feeds),
                       "ort": lambda: ort.run(None, feeds)}, args.rounds, args.runs, pause=ORT,
                      clock=CLOCKS[args.clock])
        gflops = 4 * seq * seq * 64 * 12 / t["fused"][0] / 1e9
        print(f"{seq:5d} {t['fused'][0] * 1e3:9.3f} {t['unfused'][0] * 1e3:11.3f} {t['ort'][0] * 1e3:9.3f} "
              f"{ratio(t, 'fused'):>12s} {ratio(t, 'unfused'):>12s} {gflops:10.1f} {gflops / peak:8.2f}", flush=True)


def decode_steps(models, pasts, args) -> None:
    """A step on a KV cache in place at each past length vs onnxruntime's step fed the past: "kv replayed" the
    step shaped by its past (runtime_v2, the same step repeated: replayed), "kv host" the same host-driven (a
    generation's steps: each past a new shape), "kv static" one static plan for every past
    (Options.kv_cache_static: runtime_v1)."""
    print(f"{'model':18s} {'past':>5s} {'replayed ms':>11s} {'host ms':>9s} {'static ms':>9s} {'ort ms':>9s} "
          f"{'replayed/ort':>12s} {'host/ort':>12s} {'static/ort':>12s} {'ge moved':>10s} {'ort moved':>10s}")
    for name in models:
        model = exports.load(name)
        rows = max(pasts) + 8
        sessions = {"kv replayed": ge.Session(model, options=ge.Options(thread_budget=1, kv_cache_max_len=rows)),
                    "kv host": ge.Session(model, options=ge.Options(thread_budget=1, kv_cache_max_len=rows,
                                                                    capture_limit=0)),
                    "kv static": ge.Session(model, options=ge.Options(thread_budget=1, kv_cache_max_len=rows,
                                                                      kv_cache_static=True))}
        ort = onnxruntime_session(model, threads=1)
        for past in pasts:
            fns, moved = cases.kv_step(name, model, sessions, ort, past)
            t = alternate(fns, args.rounds, args.runs, pause=ORT, clock=CLOCKS[args.clock])
            print(f"{name:18s} {past:5d} " + " ".join(f"{t[k][0] * 1e3:{w}.2f}" for k, w in zip(
                ("kv replayed", "kv host", "kv static", "ort"), (11, 9, 9, 9))) + " " + " ".join(
                f"{ratio(t, k):>12s}" for k in ("kv replayed", "kv host", "kv static"))
                + f" {moved['ge'] / 1024:8.1f}KB {moved['ort'] / 1024:8.1f}KB", flush=True)
        for s in sessions.values():
            s.close()


def decode_cycle(name: str, steps: int, args, past: int = 8) -> None:
    """A generation's `steps` shapes (no KV cache: the export's Concats), generation after generation: with
    the default capture_limit 8 the shapes cycle past the limit (recorded once, evicted unreplayed, then
    refused: host-driven); with capture_limit 32 each replays from the third generation on."""
    model = exports.load(name)
    layers, heads, head = cases.step_sizes(model)
    ort = onnxruntime_session(model, threads=1)
    sess = {"limit 8": ge.Session(model, options=ge.Options(thread_budget=1)),
            "limit 32": ge.Session(model, options=ge.Options(thread_budget=1, capture_limit=32)),
            "host": ge.Session(model, options=ge.Options(thread_budget=1, capture_limit=0))}
    fed = [exports.gpt2_step_feeds(layers, heads, head, past + k, vocab=cases.vocab(name), seed=k)
           for k in range(steps)]
    for s in sess.values():
        np.testing.assert_allclose(s.run(None, fed[-1])[0], ort.run(None, fed[-1])[0], rtol=1e-3, atol=1e-3)
    fns = {k: (lambda s=s: [s.run(None, f) for f in fed]) for k, s in sess.items()}
    fns["ort"] = lambda: [ort.run(None, f) for f in fed]
    t = alternate(fns, max(3, args.rounds // 2), 1, pause=ORT, clock=CLOCKS[args.clock])
    print(f"{name}, past {past} -> {past + steps - 1} generation after generation, ms a step: " + ", ".join(
        f"{k} {t[k][0] / steps * 1e3:.2f} ({ratio(t, k).strip()})" for k in sess)
        + f", onnxruntime {t['ort'][0] / steps * 1e3:.2f}; limit 32's last run {sess['limit 32'].stats()['last_run']}",
        flush=True)


def generate(name: str, args) -> None:
    """ge.generate as it compiles a model by default (static steps: the one-token step and a prefill plan of
    the prompt's length, dims gears on runtime_v1, ge.generation.static_options) and with steps shaped by
    their past (runtime_v2, static_steps=False) vs onnxruntime's greedy loop over the same export."""
    model = exports.load(name)
    rows = args.prompt + args.tokens
    one = ge.Options(thread_budget=1)
    static = ge.Session(model, options=static_options(model, 1, args.prompt, rows, one))
    shaped = ge.Session(model, options=one.replace(kv_cache_max_len=rows))
    ort = onnxruntime_session(model, threads=1)
    ids = np.random.default_rng(0).integers(0, cases.vocab(name), (1, args.prompt))
    want = cases.ort_generate(ort, model, ids, args.tokens)
    for s in (static, shaped):
        got = ge.generate(s, ids, args.tokens)
        assert got.new_tokens[0] == want and got.prompt_steps == 1, "ge.generate's tokens differ"
    t = alternate({"static": lambda: ge.generate(static, ids, args.tokens),
                   "shaped": lambda: ge.generate(shaped, ids, args.tokens),
                   "ort": lambda: cases.ort_generate(ort, model, ids, args.tokens)}, args.generate_rounds, 1,
                  pause=ORT, warmup=0, clock=CLOCKS[args.clock])
    rate = {k: args.tokens / v[0] for k, v in t.items()}
    best = {k: args.tokens / v[1] for k, v in t.items()}
    print(f"generate {name}, prompt {args.prompt}, {args.tokens} new tokens (greedy, the same tokens; median of "
          f"{args.generate_rounds}, best in brackets): ge.generate ({static.runtime}, static steps + prefill gear) "
          f"{rate['static']:.1f} tokens/s ({rate['static'] / rate['ort']:.2f}x, {best['static'] / best['ort']:.2f}x), "
          f"steps shaped by their past ({shaped.runtime}) {rate['shaped']:.1f} ({rate['shaped'] / rate['ort']:.2f}x), "
          f"onnxruntime loop {rate['ort']:.1f} ({best['ort']:.1f})", flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("modes", nargs="*", default=["exports"], help="exports, by-op, attention, decode")
    ap.add_argument("--models", help="comma-separated ge.exports names (default: each mode's)")
    ap.add_argument("--seqs", help="sequence lengths (default: each mode's)")
    ap.add_argument("--columns", default="replayed,host,fixed,unfused")
    ap.add_argument("--pasts", default="8,32,128,512")
    ap.add_argument("--cycle", type=int, default=24, help="decode: steps of a generation cycled (0: none)")
    ap.add_argument("--generate", default="gpt2_12x768_step", help="decode: the model ge.generate runs ('': none)")
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--prompt", type=int, default=8)
    ap.add_argument("--generate-rounds", type=int, default=5, help="decode: rounds of ge.generate vs onnxruntime")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--clock", choices=list(CLOCKS), default="wall",
                    help="wall time, or the process's CPU time (a shared machine: not the waits for a core); "
                         "exports, attention, decode")
    ap.add_argument("--stat", choices=["median", "fastest"], default="median", help="by-op: each node's time")
    args = ap.parse_args(argv)
    bad = [m for m in args.modes if m not in DEFAULT_MODELS]
    if bad:
        ap.error(f"unknown mode(s) {bad}: choose from {list(DEFAULT_MODELS)}")
    columns = [c for c in args.columns.split(",") if c]
    if not set(columns) <= {"replayed", "host", "fixed", "unfused"}:
        ap.error(f"--columns {args.columns}: replayed, host, fixed, unfused")
    header(f"bench/transformers.py {' '.join(args.modes)}: ge vs onnxruntime, one thread each, batch 1, "
           f"{args.rounds} rounds of {args.runs} run(s), medians (fastest-call ratio in brackets)")
    for mode in args.modes:
        models = [m for m in (args.models or DEFAULT_MODELS[mode]).split(",") if m]
        seqs = [int(s) for s in (args.seqs or DEFAULT_SEQS.get(mode, "8")).split(",") if s]
        print(f"\n## {mode}", flush=True)
        if mode == "exports":
            exports_mode(models, seqs, columns, args)
        elif mode == "by-op":
            by_op_mode([m for m in models if m.startswith("bert")], seqs, args)
        elif mode == "attention":
            attention_mode(seqs, args)
        else:
            pasts = [int(p) for p in args.pasts.split(",") if p]
            if pasts:
                decode_steps(models, pasts, args)
            if args.cycle and models:
                decode_cycle(models[0], args.cycle, args)
            if args.generate:
                generate(args.generate, args)
    print(f"# load after: {load()}")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"# {time.perf_counter() - t0:.0f} s")
