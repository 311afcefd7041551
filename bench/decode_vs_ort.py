"""A GPT-2 decode step with the KV cache in place (Options.kv_cache_max_len, ge.KVCache) vs onnxruntime running the
same export (present = Concat(past, new) fed back), and ge.generate's tokens per second vs onnxruntime in a
Python loop:

    python bench/decode_vs_ort.py [--models gpt2_4x256_step,gpt2_12x768_step] [--pasts 8,32,128,512]
                                  [--rounds 9] [--runs 3] [--tokens 32] [--generate gpt2_12x768_step]

Batch 1, one new token a step, one thread each: ge Options(thread_budget=1) on runtime_v2; onnxruntime
intra_op_num_threads=1, pool spinning off and an untimed 5 ms pause before each of its timed calls. Calls
alternate in a shuffled order round by round; a call is `--runs` steps, medians reported (ms a step).
Both start each timed step from the same past (ge: the cache's length set back, its rows rewritten alike), so
ge's step repeats a shape and runtime_v2 replays it (docs/replays.md); within a generation the past grows and
every step is a new shape, run host-driven: the generate line measures that case.
"Moved a step" is the bytes each runtime copies of the past: onnxruntime's Concat writes every present,
2 x layers x heads x (past + 1) x head x 4 bytes; ge writes the new rows only, 2 x layers x heads x 1 x head x 4,
checked here on the run: the plan holds no Concat of a past input and the caches are the caller's buffers
(runtime_v2 copied none of them: its copied_inputs counter does not grow with the caches fed).
Prints the date, CPU, commit and the load average before and after (the machine may be shared).
"""
from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
import time

import numpy as np

import ge
from ge import exports
from ge.bench import onnxruntime_session

sys.path.insert(0, os.path.dirname(__file__))
from aicores_report import machine  # noqa: E402
from transformers_runtimes import time_side_by_side  # noqa: E402

SIZES = {"gpt2_4x256_step": (4, 4, 64), "gpt2_12x768_step": (12, 12, 64), "gpt2_tiny_step": (2, 4, 16)}


def step_contenders(name, model, sess, ort, past: int) -> tuple[dict, dict]:
    layers, heads, head = SIZES[name]
    feeds = exports.gpt2_step_feeds(layers, heads, head, past, vocab=100 if name == "gpt2_tiny_step" else 50257)
    step = {"input_ids": feeds["input_ids"], "attention_mask": feeds["attention_mask"]}
    cache = ge.KVCache(sess, 1)
    for k, a in cache.arrays.items():
        a[:, :, :past] = feeds[k]
    cache.length = past
    ref = ort.run(None, feeds)
    (logits,) = sess.run(None, step, kv_cache=cache)
    np.testing.assert_allclose(logits, ref[0], rtol=1e-3, atol=1e-3)
    copied = sess.stats().get("copied_inputs", 0)

    def ge_step():
        cache.length = past
        sess.run(None, step, kv_cache=cache)

    moved = {"onnxruntime": 2 * layers * heads * (past + 1) * head * 4, "ge kv cache (v2)": 2 * layers * heads * head * 4}
    fns = {"ge kv cache (v2)": ge_step, "onnxruntime": lambda: ort.run(None, feeds)}
    fns["ge kv cache (v2)"]()
    assert sess.stats().get("copied_inputs", 0) - copied <= 2 * 2, "runtime_v2 copied a cache"   # ids and mask only
    return fns, moved


def ort_generate(ort, layers, heads, head, ids, new: int) -> list:
    past = {f"past_key_values.{i}.{kv}": np.zeros((1, heads, 0, head), np.float32)
            for i in range(layers) for kv in ("key", "value")}
    names = [o.name for o in ort.get_outputs()]
    mask, out = np.ones((1, ids.shape[1]), np.int64), []
    for _ in range(new):
        r = ort.run(None, {"input_ids": ids, "attention_mask": mask, **past})
        tok = r[0][:, -1].argmax(-1)
        out.append(int(tok[0]))
        past = {n.replace("present", "past_key_values"): v for n, v in zip(names[1:], r[1:])}
        ids, mask = tok[:, None].astype(np.int64), np.concatenate([mask, np.ones((1, 1), np.int64)], axis=1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="gpt2_4x256_step,gpt2_12x768_step")
    ap.add_argument("--pasts", default="8,32,128,512")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--generate", default="gpt2_12x768_step", help="the model timed by ge.generate ('' : none)")
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--prompt", type=int, default=8)
    args = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=os.path.dirname(__file__)).stdout.strip()
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC   {machine()}   commit {commit}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}   one thread each, batch 1, "
          f"{args.rounds} rounds of {args.runs} steps, medians")
    pasts = [int(p) for p in args.pasts.split(",") if p]
    print(f"{'model':18s} {'past':>5s} {'ge ms':>8s} {'ort ms':>8s} {'ge/ort':>7s} {'ge moved':>10s} {'ort moved':>10s}")
    for name in [m for m in args.models.split(",") if m]:
        model = exports.load(name)
        sess = ge.Session(model, options=ge.Options(thread_budget=1, kv_cache_max_len=max(pasts) + args.tokens + 8))
        ort = onnxruntime_session(model, threads=1)
        for past in pasts:
            fns, moved = step_contenders(name, model, sess, ort, past)
            t = time_side_by_side(fns, args.rounds, args.runs)
            g, o = t["ge kv cache (v2)"], t["onnxruntime"]
            print(f"{name:18s} {past:5d} {g * 1e3:8.2f} {o * 1e3:8.2f} {g / o:6.2f}x "
                  f"{moved['ge kv cache (v2)'] / 1024:8.1f}KB {moved['onnxruntime'] / 1024:8.1f}KB", flush=True)
        sess.close()
    if args.generate:
        name = args.generate
        layers, heads, head = SIZES[name]
        model = exports.load(name)
        rows = args.prompt + args.tokens
        sess = ge.Session(model, options=ge.Options(thread_budget=1, kv_cache_max_len=rows))
        one = ge.Session(model, options=ge.Options(thread_budget=1, kv_cache_max_len=rows,   # one token a step
                                                   input_shape="input_ids:1,1;attention_mask:1,-1"))
        ort = onnxruntime_session(model, threads=1)
        ids = np.random.default_rng(0).integers(0, 50257 if name != "gpt2_tiny_step" else 100, (1, args.prompt))
        want = ort_generate(ort, layers, heads, head, ids, args.tokens)
        for s in (sess, one):
            assert ge.generate(s, ids, args.tokens).new_tokens[0] == want, "ge.generate's tokens differ"
        times = {"ge": [], "ge one-token steps": [], "ort": []}
        for _ in range(3):
            for key, fn in (("ge", lambda: ge.generate(sess, ids, args.tokens)),
                            ("ge one-token steps", lambda: ge.generate(one, ids, args.tokens)),
                            ("ort", lambda: ort_generate(ort, layers, heads, head, ids, args.tokens))):
                if key == "ort":
                    time.sleep(0.005)
                t0 = time.perf_counter()
                fn()
                times[key].append(time.perf_counter() - t0)
        rate = {k: args.tokens / min(v) for k, v in times.items()}
        print(f"generate {name}, prompt {args.prompt}, {args.tokens} new tokens (greedy, same tokens; best of 3): "
              f"ge.generate {rate['ge']:.1f} tokens/s ({rate['ge'] / rate['ort']:.2f}x), with one-token steps "
              f"{rate['ge one-token steps']:.1f} ({rate['ge one-token steps'] / rate['ort']:.2f}x), onnxruntime "
              f"loop {rate['ort']:.1f}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
