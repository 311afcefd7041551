"""int8 QDQ models on one core: ge int8 (fuse_qdq's integer kernels, VNNI convs) vs ge float32 vs onnxruntime
int8 and float32, side by side in one process.

    taskset -c 0 python bench/qdq_vs_ort.py [--models resnet50,squeezenet] [--reps 10] [--quick]

Each light model gets random weights, BatchNormalization folded, and onnxruntime.quantization's QDQ form
(quantize_static, per-channel int8 weights, 2 random calibration inputs: ge.zoo.quantized_light_model).
ge runs runtime_v1 on one AI core; onnxruntime one intra-op thread; "ge int8 NCHW" is ge int8 without
nhwc_int8 (every int8 map NCHW, each VNNI conv repacking its input). The five runs alternate within each
repetition so a busy machine slows them alike; the best of `reps` is printed, with ratios. --quick: 3 reps.
First the int8 conv alone on ResNet-like shapes (a DQ -> Conv -> Q model, fused and packed as in a QDQ
model): conv_vnni's vpdpbusd kernel, the portable int16 GEMM (qlinear.USE_VNNI = False) and ge's float32
conv.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys
import tempfile

import numpy as np
import onnxruntime as ort

import ge
from ge.zoo import quantized_light_model

sys.path.insert(0, os.path.dirname(__file__))
from aicores_report import machine  # noqa: E402
from timing import alternating_best  # noqa: E402


def model_row(name, reps, d):
    f32, qdq = quantized_light_model(name, d)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sessions = [ge.Session(ge.compile(qdq, ge.Options(aicore_num=1)), runtime="v1"),
                ge.Session(ge.compile(f32, ge.Options(aicore_num=1)), runtime="v1"),
                ort.InferenceSession(qdq, so, providers=["CPUExecutionProvider"]),
                ort.InferenceSession(f32, so, providers=["CPUExecutionProvider"]),
                ge.Session(ge.compile(qdq, ge.Options(aicore_num=1, disabled_passes=("nhwc_int8",))), runtime="v1")]
    inp = sessions[2].get_inputs()[0]
    x = {inp.name: np.random.default_rng(3).standard_normal([d if isinstance(d, int) else 1 for d in inp.shape])
         .astype(np.float32)}
    ms = [b * 1e3 for b in alternating_best([lambda s=s: s.run(None, x) for s in sessions], reps)]
    print(f"{name:12s} ge int8 {ms[0]:7.1f}  ge f32 {ms[1]:7.1f}  ort int8 {ms[2]:7.1f}  ort f32 {ms[3]:7.1f}"
          f"  ge int8 NCHW {ms[4]:7.1f} ms   ge int8 vs ge f32 {ms[1] / ms[0]:.2f}x, vs ort int8 {ms[2] / ms[0]:.2f}x,"
          f" vs its NCHW maps {ms[4] / ms[0]:.2f}x")


def conv_rows(reps):
    from onnx import helper, numpy_helper
    from ge.kernels import qlinear
    r = np.random.default_rng(0)
    for C, HW, M, K, s in ((64, 56, 64, 3, 1), (128, 28, 128, 3, 1), (256, 14, 256, 3, 1), (1024, 14, 256, 1, 1),
                           (512, 7, 2048, 1, 1)):
        x = r.integers(0, 255, (1, C, HW, HW)).astype(np.uint8)
        w = r.integers(-127, 127, (M, C, K, K)).astype(np.int8)
        ins = {"x": x, "xs": np.float32(0.02), "xz": np.uint8(128), "w": w, "ws": np.full(M, 0.01, np.float32),
               "ys": np.float32(0.5), "yz": np.uint8(128)}
        pads = [K // 2] * 4

        def session(use_vnni, float_conv=False):
            """The conv as a QDQ model compiles it (fuse_qdq, weights packed once) or as a float Conv."""
            qlinear.USE_VNNI = use_vnni
            if float_conv:
                nodes = [helper.make_node("Conv", ["xf", "wf"], ["y"], pads=pads)]
                inits = [numpy_helper.from_array(w.astype(np.float32), "wf")]
                io = [helper.make_tensor_value_info("xf", 1, x.shape)]
            else:
                nodes = [helper.make_node("DequantizeLinear", ["x", "xs", "xz"], ["xd"]),
                         helper.make_node("DequantizeLinear", ["w", "ws"], ["wd"], axis=0),
                         helper.make_node("Conv", ["xd", "wd"], ["c"], pads=pads),
                         helper.make_node("QuantizeLinear", ["c", "ys", "yz"], ["y"])]
                inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in ins.items() if k != "x"]
                io = [helper.make_tensor_value_info("x", 2, x.shape)]
            g = helper.make_graph(nodes, "g", io, [helper.make_tensor_value_info("y", 0, None)], inits)
            plan = ge.compile(helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)]),
                              ge.Options(aicore_num=1))
            qlinear.USE_VNNI = True
            return ge.Session(plan, runtime="v1")
        vnni, i16, f32 = session(True), session(False), session(True, True)
        xf = x.astype(np.float32)
        ms = [b * 1e3 for b in alternating_best([lambda: vnni.run(None, {"x": x}), lambda: i16.run(None, {"x": x}),
                                                 lambda: f32.run(None, {"xf": xf})], reps)]
        macs = M * C * K * K * HW * HW / s / s
        print(f"conv {C:4d}->{M:4d} {K}x{K} on {HW:2d}x{HW:<2d}  VNNI {ms[0]:6.2f} ({macs / ms[0] / 1e6:5.1f} GMAC/s)"
              f"  int16 {ms[1]:6.2f} ({macs / ms[1] / 1e6:5.1f})  float32 {ms[2]:6.2f} ({macs / ms[2] / 1e6:5.1f}) ms")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="resnet50,squeezenet")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    reps = 3 if a.quick else a.reps
    print(f"one thread each, best of {reps}, {datetime.datetime.now():%Y-%m-%d %H:%M}, {machine()}")
    conv_rows(reps)
    with tempfile.TemporaryDirectory() as d:
        for name in a.models.split(","):
            model_row(name, reps, d)


if __name__ == "__main__":
    main()
