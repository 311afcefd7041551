"""bfloat16 on one core: ge's allow_mix_precision_bf16 against ge's float32 and OpenVINO's bf16
(INFERENCE_PRECISION_HINT bf16, one inference thread) on the same random-weight model, CPU time
(time.process_time: a busy machine's waits do not count), the contenders alternating in shuffled rounds.

    PYTHONPATH=$PYTHONPATH:/tmp/site_ov taskset -c 0 python bench/bf16_vs_openvino.py [--models resnet50] [--rounds 15]

Models: a light model's name (random weights), vit_block (ge.models: ViT-B's encoder block, 197 tokens x 768)
or bert_6x768 (tests/fixtures/transformers, sequence --seq, shapes fixed: a static plan).

OpenVINO is a benchmark-only dependency (`pip install --target /tmp/site_ov openvino`); without it its
column is blank.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import ge
from ge.zoo import with_random_weights

sys.path.insert(0, os.path.dirname(__file__))
from aicores_report import feeds_for  # noqa: E402
from timing import alternate, header  # noqa: E402


def openvino_bf16(model, feeds):
    """A run of OpenVINO's CPU plugin in bf16 on one thread, or None when openvino is not installed."""
    try:
        import openvino as ov
        import openvino.properties as props
        import openvino.properties.hint as hints
    except ImportError:
        return None
    compiled = ov.Core().compile_model(ov.Core().read_model(model.SerializeToString()), "CPU", {
        hints.inference_precision: ov.Type.bf16, props.inference_num_threads: 1,
        hints.performance_mode: hints.PerformanceMode.LATENCY})
    req = compiled.create_infer_request()
    return lambda: req.infer(feeds)


def model_and_options(name: str, seq: int):
    """(model, Options fields fixing its shapes, feeds or None: feeds_for's)."""
    if name == "vit_block":
        from ge.models import vit_block
        return vit_block(), {}, None
    if name.startswith("bert"):
        from ge import exports
        feeds = exports.bert_feeds(1, seq, vocab=30522)
        text = ";".join(f"{k}:{','.join(map(str, v.shape))}" for k, v in feeds.items())
        return exports.load(name), {"input_shape": text}, feeds
    return with_random_weights(name), {}, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="resnet50")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--runtime", default="v1", help="v1 (what auto picks for these static plans) or v2")
    ap.add_argument("--seq", type=int, default=128)
    a = ap.parse_args()
    header("bf16 one core: ge f32, ge bf16, OpenVINO bf16 (CPU ms, median / best)")
    print("| model | ge f32 | ge bf16 | OpenVINO bf16 | ge bf16 vs f32 | ge bf16 / OpenVINO |\n" + "|---" * 6 + "|")
    for name in a.models.split(","):
        model, extra, feeds = model_and_options(name, a.seq)
        f32 = ge.Session(ge.compile(model, ge.Options(aicore_num=1, **extra)), runtime=a.runtime)
        bf = ge.Session(ge.compile(model, ge.Options(aicore_num=1, precision_mode="allow_mix_precision_bf16",
                                                     **extra)), runtime=a.runtime)
        feeds = feeds if feeds is not None else feeds_for(f32)
        fns = {"f32": lambda: f32.run(None, feeds), "bf16": lambda: bf.run(None, feeds)}
        ov = openvino_bf16(model, feeds)
        if ov is not None:
            fns["ov"] = ov
        t = alternate(fns, a.rounds, clock=time.process_time)
        ms = {k: v[0] * 1e3 for k, v in t.items()}
        cell = lambda k: f"{ms[k]:.1f} / {t[k][1] * 1e3:.1f}" if k in ms else ""  # noqa: E731
        vs_ov = f"{ms['bf16'] / ms['ov']:.2f}x" if "ov" in ms else ""
        print(f"| {name} | {cell('f32')} | {cell('bf16')} | {cell('ov')} | {ms['f32'] / ms['bf16']:.2f}x | {vs_ov} |",
              flush=True)


if __name__ == "__main__":
    main()
