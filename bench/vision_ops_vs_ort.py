"""GridSample, RoiAlign, NonMaxSuppression, DFT and DeformConv on one core: ge vs onnxruntime, side by side.

    taskset -c 0 python bench/vision_ops_vs_ort.py [--reps 20]

Each op is one node at a realistic size (GridSample bilinear on a 1x8x32x32 map, NMS on 200 boxes of 2
classes...). ge runs runtime_v2 for NMS (its output length is data-dependent), runtime_v1 otherwise, on one
AI core; onnxruntime one intra-op thread. The two runs alternate within each repetition so a busy machine
slows them alike; the best of `reps` is printed with the ratio (ge / onnxruntime: below 1 is faster).
"""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import os
import sys

import numpy as np
import onnxruntime as ort

import ge

sys.path.insert(0, os.path.dirname(__file__))
from aicores_report import machine  # noqa: E402
from timing import alternating_best  # noqa: E402

# tests/ is not put on sys.path: its runtime_v1/ folder (no package) would shadow the installed runtime_v1
_spec = importlib.util.spec_from_file_location("op_check", os.path.join(os.path.dirname(__file__), "..", "tests",
                                                                         "op_check.py"))
_op_check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_op_check)
make_model = _op_check.make_model

R = np.random.default_rng(0)


def _cases():
    boxes = R.uniform(0, 100, (1, 200, 2)).astype(np.float32)
    boxes = np.concatenate([boxes, boxes + R.uniform(5, 30, (1, 200, 2)).astype(np.float32)], 2)
    yield "GridSample bilinear 1x8x32x32 -> 48x40", ("GridSample", [
        R.standard_normal((1, 8, 32, 32), dtype=np.float32), R.uniform(-1, 1, (1, 48, 40, 2)).astype(np.float32)],
        {"mode": "linear"}, 20, ())
    yield "RoiAlign 1x64x32x32, 50 rois -> 7x7", ("RoiAlign", [
        R.standard_normal((1, 64, 32, 32), dtype=np.float32), np.sort(R.uniform(0, 31, (50, 4)), 1).astype(
            np.float32), np.zeros(50, np.int64)],
        {"output_height": 7, "output_width": 7, "sampling_ratio": 2}, 16, ())
    yield "NonMaxSuppression 200 boxes, 2 classes", ("NonMaxSuppression", [
        boxes, R.uniform(0, 1, (1, 2, 200)).astype(np.float32), np.array([50], np.int64),
        np.array([0.5], np.float32), np.array([0.2], np.float32)], {}, 11, ())
    yield "DFT 8x256 complex, axis 1", ("DFT", [R.standard_normal((8, 256, 2), dtype=np.float32)],
                                         {"axis": 1}, 17, ())
    yield "DeformConv 1x16x16x16, 16->16 3x3", ("DeformConv", [
        R.standard_normal((1, 16, 16, 16), dtype=np.float32), R.standard_normal((16, 16, 3, 3), dtype=np.float32),
        R.uniform(-1, 1, (1, 18, 14, 14)).astype(np.float32)], {"kernel_shape": [3, 3]}, 22, ())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    reps = ap.parse_args().reps
    print(f"# {datetime.date.today()} {machine()}; one core; best of {reps}")
    print("| op | ge (ms) | onnxruntime (ms) | ge / ort |\n|---|---|---|---|")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    for title, (op, inputs, attrs, opset, consts) in _cases():
        model, feeds = make_model(op, inputs, attrs, opset, const_inputs=consts)
        model.graph.output[0].type.tensor_type.elem_type = 7 if op == "NonMaxSuppression" else 1
        plan = ge.compile(model, {"aicore_num": 1})
        sess = ge.Session(plan, runtime="v2" if plan.is_dynamic else "v1")
        ref = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        np.testing.assert_allclose(sess.run(None, feeds)[0], ref.run(None, feeds)[0], rtol=1e-3, atol=1e-3)
        g, o = alternating_best([lambda: sess.run(None, feeds), lambda: ref.run(None, feeds)], reps)
        print(f"| {title} | {g * 1e3:.3f} | {o * 1e3:.3f} | {g / o:.2f}x |")
        sess.close()


if __name__ == "__main__":
    main()
