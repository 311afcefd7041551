"""Dims gears' memory (Options.dynamic_dims, runtime_v1/gears.py): bert_like over its sequence dim, one
static plan per gear. Per gear its feature map and weights; then what the loaded gears hold (ONE feature
map of the largest gear's size, a weight image per distinct constant layout) against the sum of separate
plans (each its own feature map and weights), and the device bytes in use both ways. Then each gear's run
against runtime_v2 on the same feeds (one thread each, alternating; best of N) and their max difference.

    python bench/dims_gear_memory.py [seqs] [layers] [hidden] [reps]     e.g. 32,64,128 4 256 20
"""
import sys
from pathlib import Path

import numpy as np

import ge
from ge.compiler import compile_gears
from ge.models import bert_like
from ge.npu.memory import align_up
from runtime_v1.model import feature_bytes

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import alternating_best, machine  # noqa: E402

MIB = 1 << 20


def main(seqs="32,64,128", layers="4", hidden="256", reps="20"):
    seqs = [int(s) for s in seqs.split(",")]
    layers, hidden, reps = int(layers), int(hidden), int(reps)
    print(machine())
    model = bert_like(layers=layers, hidden=hidden, heads=4, vocab=1000, max_seq=max(seqs), batch="batch",
                      seq="seq")
    opts = {"input_shape": "input_ids:1,-1", "dynamic_dims": ";".join(map(str, seqs)), "thread_budget": 1}
    print(f"bert_like {layers} layers x {hidden}, batch 1, gears over seq {seqs}")
    gp = compile_gears(model, opts)
    sep_fm = sep_w = 0
    for g, p in gp.plans.items():   # a separate plan's weights: its own constants, each ALIGN-aligned
        w = sum(align_up(a.nbytes) for a in p.constants.values())
        sep_fm, sep_w = sep_fm + feature_bytes(p), sep_w + w
        print(f"  gear seq {g[0]:>4}: feature map {feature_bytes(p) / MIB:7.2f} MiB, weights {w / MIB:6.2f} MiB")
    sess = ge.Session(model, runtime="v1", options=opts)
    st = sess.stats()
    shared_fm, shared_w = st["feature_map_bytes"], st["weights_bytes"]
    print(f"  separate plans: feature maps {sep_fm / MIB:.2f} MiB + weights {sep_w / MIB:.2f} MiB = "
          f"{(sep_fm + sep_w) / MIB:.2f} MiB")
    print(f"  gears loaded:   feature map  {shared_fm / MIB:.2f} MiB (max over gears, one buffer) + weights "
          f"{shared_w / MIB:.2f} MiB ({st['weight_copies']} image(s)) = {(shared_fm + shared_w) / MIB:.2f} MiB  "
          f"-> feature map {sep_fm / shared_fm:.2f}x smaller, total {(sep_fm + sep_w) / (shared_fm + shared_w):.2f}x")
    in_use = sess.allocator_stats()["device_in_use"]
    apart = [ge.Session(p, runtime="v1") for p in gp.plans.values()]
    apart_in_use = sum(s.allocator_stats()["device_in_use"] for s in apart)
    print(f"  device bytes in use: gears {in_use / MIB:.2f} MiB vs {len(apart)} separate sessions "
          f"{apart_in_use / MIB:.2f} MiB (I/O slots and alignment included)")
    v2 = ge.Session(model, runtime="v2", options={"thread_budget": 1})
    print("  run, one thread each, alternating, best of", reps)
    for seq in seqs:
        f = {"input_ids": np.random.default_rng(seq).integers(0, 1000, (1, seq)).astype(np.int64)}
        diff = float(np.abs(sess.run(None, f)[0] - v2.run(None, f)[0]).max())
        t1, t2 = alternating_best([lambda: sess.run(None, f), lambda: v2.run(None, f)], reps)
        print(f"  seq {seq:>4}: gear on v1 {t1 * 1e3:7.3f} ms, runtime_v2 {t2 * 1e3:7.3f} ms, v2/v1 {t2 / t1:5.2f}x, "
              f"max |diff| {diff:.1e}")
    print(f"  gear runs {sess.stats()['gear_runs']}")


if __name__ == "__main__":
    main(*sys.argv[1:])
