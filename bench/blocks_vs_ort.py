"""Per core: the blocks modern networks are made of (ge.models.BLOCKS), or the 9 ONNX light models, ge vs
onnxruntime, one thread each:

    python bench/blocks_vs_ort.py [--rounds N] [--by-op] [--only vit_block,mbconv_block] [--light]

Prints, with the date and the machine, ge (runtime_v1, thread budget 1) and onnxruntime (one intra-op
thread, non-spinning) alternating round by round in one process: medians and the ratio ge / onnxruntime.
--light times the light models instead (random weights: their shipped weights are all one constant, which
lets onnxruntime merge identical branches); --by-op adds where the time goes on each side (ge.byop: op
families side by side).
"""
from __future__ import annotations

import argparse
import datetime
import math
import os
import sys

import numpy as np

import ge
from ge.bench import alternate, onnxruntime_session
from ge.byop import compare, format_families, ge_profile, ort_profile
from ge.models import BLOCKS
from ge.zoo import LIGHT_MODELS, with_random_weights

sys.path.insert(0, os.path.dirname(__file__))
from aicores_report import feeds_for, machine  # noqa: E402


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--by-op", action="store_true")
    p.add_argument("--only", help="comma-separated names (default: all blocks, or all light models)")
    p.add_argument("--light", action="store_true", help="the 9 ONNX light models instead of the blocks")
    args = p.parse_args(argv)
    names = args.only.split(",") if args.only else list(LIGHT_MODELS if args.light else BLOCKS)
    what = "light models" if args.light else "blocks"
    print(f"ge {what} vs onnxruntime, one thread each, {datetime.datetime.now():%Y-%m-%d %H:%M}, {machine()}")
    print(f"{'model':20s} {'ge ms':>9s} {'ort ms':>9s} {'ge/ort':>7s}")
    ratios = []
    for name in names:
        model = with_random_weights(name) if args.light else BLOCKS[name]()
        sess = ge.Session(model, options=ge.Options(thread_budget=1))
        feeds = feeds_for(sess)
        ort = onnxruntime_session(model, 1)
        t = alternate({"ge": lambda: sess.run(None, feeds), "ort": lambda: ort.run(None, feeds)}, rounds=args.rounds)
        g, o = (float(np.median(t[k])) * 1e3 for k in ("ge", "ort"))
        ratios.append(g / o)
        print(f"{name:20s} {g:9.3f} {o:9.3f} {g / o:7.2f}", flush=True)
        if args.by_op:
            rows = compare(ge_profile(sess, feeds, runs=args.rounds),
                           ort_profile(model, feeds, threads=1, runs=args.rounds))
            print(format_families(rows) + "\n", flush=True)
    print(f"{'geomean':20s} {'':9s} {'':9s} {math.exp(np.mean(np.log(ratios))):7.2f}")


if __name__ == "__main__":
    main()
