"""GE's mixed-precision modes on the light models (random weights): planned feature map against float32's,
max |error| of the output against float32 and whether top-1 agrees (docs/precision.md).

    python bench/precision_modes.py [--models squeezenet,inception_v1,...] [--runtime v2]
    taskset -c 0 python bench/precision_modes.py --speed [--models resnet50] [--rounds 10]

Each model is compiled at its default (must_keep_origin_dtype) and in each mode; the same input (seeded)
runs through all of them on one runtime. The nodes whose float32 results leave the 16-bit type's range on
that input are kept in float32 (`ge.overflow.overflow_nodes` -> keep_dtype, GE's overflow detection then
keep_dtype): the cell says how many ("kept N"). --speed times allow_mix_precision (16-bit feature map:
passes/drop_half_casts.py) and allow_mix_precision_bf16 (Convs on AVX512-BF16, conv_bf16.py) beside ge's
float32 and onnxruntime's float32 on one AI core / one thread, the four alternating in one process
(bench/timing.py), and says whether top-1 agrees with float32.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys

import numpy as np

import ge
from ge.overflow import overflow_nodes
from ge.zoo import LIGHT_MODELS, with_random_weights

sys.path.insert(0, os.path.dirname(__file__))
from aicores_report import feeds_for, machine  # noqa: E402
from timing import alternating_best  # noqa: E402

MODES = ("allow_mix_precision", "allow_mix_precision_bf16")


def row(name: str, runtime: str) -> str:
    model = with_random_weights(name)
    base = ge.compile(model)
    with ge.Session(base, runtime=runtime) as s:
        feeds = feeds_for(s)
        want = s.run(None, feeds)[0].astype(np.float32)
    cells = []
    for mode in MODES:
        keep = overflow_nodes(model, feeds, mode, runtime=runtime)
        plan = ge.compile(model, ge.Options(precision_mode=mode, keep_dtype=keep))
        with ge.Session(plan, runtime=runtime) as s:
            got = s.run(None, feeds)[0].astype(np.float32)
        ratio = plan.memory.stats.feature_map_bytes / base.memory.stats.feature_map_bytes
        same = "equal" if got.reshape(got.shape[0], -1).argmax(1).tolist() == \
            want.reshape(want.shape[0], -1).argmax(1).tolist() else "differs"
        cells.append(f"{ratio:.2f}x, error {np.abs(got - want).max():.2g}, top-1 {same}, kept {len(keep)}")
    return f"| {name} | " + " | ".join(cells) + " |"


def speed_row(name: str, runtime: str, rounds: int) -> str:
    from ge.bench import onnxruntime_session
    model = with_random_weights(name)
    f32 = ge.Session(ge.compile(model, ge.Options(aicore_num=1)), runtime=runtime)
    feeds = feeds_for(f32)
    want = f32.run(None, feeds)[0]
    half = []  # (session, top-1 equal) per mode, the overflowing nodes kept in float32
    for mode in MODES:
        keep = overflow_nodes(model, feeds, mode, runtime=runtime)
        s = ge.Session(ge.compile(model, ge.Options(aicore_num=1, precision_mode=mode, keep_dtype=keep)),
                       runtime=runtime)
        got = s.run(None, feeds)[0].astype(np.float32)
        half.append((s, want.reshape(want.shape[0], -1).argmax(1).tolist() ==
                     got.reshape(got.shape[0], -1).argmax(1).tolist()))
    ort = onnxruntime_session(model, 1)
    t32, t16, tbf, tort = alternating_best([lambda: f32.run(None, feeds), lambda: half[0][0].run(None, feeds),
                                            lambda: half[1][0].run(None, feeds), lambda: ort.run(None, feeds)], rounds)
    return (f"| {name} | {t32 * 1e3:.1f} | {t16 * 1e3:.1f} | {tbf * 1e3:.1f} | {tort * 1e3:.1f} | {t32 / t16:.2f}x | "
            f"{t32 / tbf:.2f}x | {tort / tbf:.2f}x | {'equal' if half[0][1] else 'differs'} / "
            f"{'equal' if half[1][1] else 'differs'} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(LIGHT_MODELS))
    ap.add_argument("--runtime", default="v2")
    ap.add_argument("--speed", action="store_true", help="time bf16 against float32 (default model resnet50)")
    ap.add_argument("--rounds", type=int, default=10)
    a = ap.parse_args()
    if a.speed:
        print(f"precision modes' speed, one core, runtime_{a.runtime}, "
              f"{datetime.datetime.now():%Y-%m-%d %H:%M}, {machine()}; best of {a.rounds}, alternating")
        print("| model | ge f32 ms | ge fp16 ms | ge bf16 ms | ORT f32 ms | fp16 vs ge f32 | bf16 vs ge f32 | "
              "bf16 vs ORT f32 | top-1 fp16 / bf16 |\n|---|---|---|---|---|---|---|---|---|")
        for name in (a.models if a.models != ",".join(LIGHT_MODELS) else "resnet50").split(","):
            print(speed_row(name, a.runtime, a.rounds), flush=True)
        return
    print(f"precision modes, runtime_{a.runtime}, {datetime.datetime.now():%Y-%m-%d %H:%M}, {machine()}")
    print("| model | " + " | ".join(MODES) + " |\n|---|" + "---|" * len(MODES))
    for name in a.models.split(","):
        print(row(name, a.runtime), flush=True)


if __name__ == "__main__":
    main()
