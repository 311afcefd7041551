"""int8 QDQ models on one core: ge int8 (fuse_qdq's integer kernels, VNNI convs) vs ge float32 vs onnxruntime
int8 and float32, side by side in one process.

    taskset -c 0 python bench/qdq_vs_ort.py [--models resnet50,squeezenet,mobilenetv2] [--rounds 10] [--quick]
                                            [--no-convs]

Each model gets random weights, BatchNormalization folded, and onnxruntime.quantization's QDQ form
(quantize_static, per-channel int8 weights, 2 random calibration inputs: ge.zoo.quantized_model); the
light models (ResNet-50, SqueezeNet) as ge.zoo.quantized_light_model makes them, MobileNetV2 as
tests/torch_compile/torch_nets.py builds it (torchvision's layer plan, ReLU6), exported by torch.onnx.
ge runs runtime_v1 on one AI core; onnxruntime one intra-op thread, not spinning, with an untimed pause
before each of its samples (its pool parked); "ge int8 NCHW" is ge int8 without nhwc_int8 (every int8 map
NCHW, each VNNI conv repacking its input). Times are CPU time (time.process_time) of rounds alternating in
a shuffled order (ge.bench.alternate), medians, so a loaded machine slows them alike. The last columns:
how many output values ge int8 has that onnxruntime int8 has not (and the largest difference in output
quantization steps). --quick: 3 rounds.
First the int8 conv alone on ResNet-like shapes (a DQ -> Conv -> Q model, fused and packed as in a QDQ
model): conv_vnni's vpdpbusd kernel, the portable int16 GEMM (qlinear.USE_VNNI = False) and ge's float32
conv.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np
import onnx

import ge
from ge.bench import onnxruntime_session
from ge.zoo import quantized_light_model, quantized_model

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from timing import alternate, alternating_best, header  # noqa: E402


def _mobilenetv2(d) -> onnx.ModelProto:
    import torch
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "torch_compile"))
    import torch_nets
    torch.manual_seed(0)
    path = os.path.join(d, "mobilenetv2_export.onnx")
    torch.onnx.export(torch_nets.MobileNetV2().eval(), (torch.randn(1, 3, 224, 224),), path, opset_version=13,
                      dynamo=False, input_names=["input"], output_names=["output"])
    return onnx.load(path)


def quantized(name, d):
    if name == "mobilenetv2":
        return quantized_model(_mobilenetv2(d), name, d)
    return quantized_light_model(name, d)


def model_row(name, rounds, d):
    f32, qdq = quantized(name, d)
    one = ge.Options(aicore_num=1)
    ge_i8 = ge.Session(ge.compile(qdq, one), runtime="v1")
    sides = {"ge int8": ge_i8, "ge f32": ge.Session(ge.compile(f32, one), runtime="v1"),
             "ort int8": onnxruntime_session(qdq, 1), "ort f32": onnxruntime_session(f32, 1),
             "ge int8 NCHW": ge.Session(ge.compile(qdq, ge.Options(aicore_num=1, disabled_passes=("nhwc_int8",))),
                                        runtime="v1")}
    inp = sides["ort int8"].get_inputs()[0]
    x = {inp.name: np.random.default_rng(3).standard_normal([d if isinstance(d, int) else 1 for d in inp.shape])
         .astype(np.float32)}
    got, want = ge_i8.run(None, x)[0], sides["ort int8"].run(None, x)[0]
    q = [n for n in onnx.load(qdq).graph.node if n.op_type == "QuantizeLinear"][-1]
    step = float(onnx.numpy_helper.to_array(next(t for t in onnx.load(qdq).graph.initializer if t.name == q.input[1])))
    t = alternate({k: (lambda s=s: s.run(None, x)) for k, s in sides.items()}, rounds,
                  pause=frozenset({"ort int8", "ort f32"}), clock=time.process_time)
    ms = {k: v[0] * 1e3 for k, v in t.items()}
    print(f"{name:12s} ge int8 {ms['ge int8']:6.2f}  ge f32 {ms['ge f32']:6.2f}  ort int8 {ms['ort int8']:6.2f}"
          f"  ort f32 {ms['ort f32']:6.2f}  ge int8 NCHW {ms['ge int8 NCHW']:6.2f} ms   ge int8 vs ge f32"
          f" {ms['ge f32'] / ms['ge int8']:.2f}x faster, vs ort int8 {ms['ge int8'] / ms['ort int8']:.2f}x the time,"
          f" NCHW maps {ms['ge int8 NCHW'] / ms['ge int8']:.2f}x;  vs ort int8: {int((got != want).sum())} of"
          f" {got.size} outputs differ, by <= {np.abs(got - want).max() / step:.2f} steps", flush=True)


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
    ap.add_argument("--models", default="resnet50,squeezenet,mobilenetv2")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-convs", action="store_true")
    a = ap.parse_args()
    rounds = 3 if a.quick else a.rounds
    header(f"int8 QDQ models, one thread each, CPU time, median of {rounds} alternating rounds")
    if not a.no_convs:
        conv_rows(rounds)
    with tempfile.TemporaryDirectory() as d:
        for name in a.models.split(","):
            model_row(name, rounds, d)


if __name__ == "__main__":
    main()
