"""Single-node Conv/Gemm/MatMul timings, ge's kernel vs onnxruntime, one thread each: every conv shape
of ResNet-50, then a few GEMM-shaped nodes.

    python bench/conv_vs_ort.py [--reps 20]

ge is timed at the kernel call of the node as the compiler leaves it (convs on weights packed by
pack_conv_weights; prepare, outputs and workspaces made once, as runtime_v1 does);
onnxruntime at session.run with its default graph optimizations. Prints the best of `reps` runs and the
total weighted by how often ResNet-50 (ONNX's light model, batch 1) has each shape; the last line is a
MobileNet-style depthwise conv (not counted).

ge's GEMMs are its own Numba micro-kernels (ge/kernels/gemm.py, on simd.py's explicit 512-bit vectors),
single-threaded; onnxruntime's MLAS picks AVX-512 kernels too. OPENBLAS_* settings do not affect them.
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from ge.bench import compiled_form  # noqa: E402
from ge.kernels import KernelContext, TensorSpec, lookup  # noqa: E402

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


def resnet50_convs():
    """[(count, x shape, w shape, strides, pads, group)] of every distinct Conv in ONNX's light ResNet-50."""
    model = onnx.shape_inference.infer_shapes(onnx.load(os.path.join(LIGHT, "light_resnet50.onnx")))
    shapes = {v.name: tuple(d.dim_value for d in v.type.tensor_type.shape.dim)
              for v in list(model.graph.value_info) + list(model.graph.input)}
    counts = Counter()
    for n in model.graph.node:
        if n.op_type == "Conv":
            a = {x.name: helper.get_attribute_value(x) for x in n.attribute}
            w = shapes[n.input[1]]
            counts[(shapes[n.input[0]], w, tuple(a.get("strides", [1, 1])), tuple(a.get("pads", [0] * 4)),
                    a.get("group", 1))] += 1
    return [(c, *k) for k, c in counts.items()]


def best(fn, reps):
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def ge_callable(op, arrays, attrs, domain=""):
    """The kernel of a single node as the compiler leaves it (convs on packed weights), and its output."""
    if not domain:
        op, arrays, attrs, domain = compiled_form(op, arrays, attrs)
    specs = [TensorSpec(a.shape, a.dtype) for a in arrays]
    kernel = lookup(op, domain, 17)
    ctx = KernelContext(op, "bench", attrs, specs, [None] * len(arrays), 17)
    ctx.outputs = kernel.infer(ctx)
    launch = kernel.prepare(ctx)
    outs = [np.empty(s.size, s.dtype) for s in ctx.outputs]
    ws = [np.empty(w.size, w.dtype) for w in launch.workspaces]
    ins = [arrays[i].reshape(-1) for i in (launch.inputs or range(len(arrays)))]
    blocks = (0, 1) if launch.tiled else ()   # one block: the one-thread kernel
    return lambda: launch.fn(*ins, *outs, *ws, *launch.args, *blocks), outs[0]


def ort_callable(op, arrays, attrs):
    names = [f"x{i}" for i in range(len(arrays))]
    inits = [numpy_helper.from_array(a, n) for a, n in zip(arrays[1:], names[1:])]
    node = helper.make_node(op, names, ["y"], **attrs)
    x0 = helper.make_tensor_value_info("x0", TensorProto.FLOAT, arrays[0].shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph([node], "g", [x0], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    so = ort.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    feeds = {"x0": arrays[0]}
    return lambda: sess.run(None, feeds)[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    reps = ap.parse_args().reps
    rng = np.random.default_rng(0)
    cases = resnet50_convs() + [(0, (1, 32, 112, 112), (32, 1, 3, 3), (1, 1), (1, 1, 1, 1), 32)]
    print(f"{'n':>2s} {'input':>16s} {'weight':>18s} {'s':>1s} {'ge ms':>7s} {'ort ms':>7s} {'ratio':>5s}")
    tot_ge = tot_ort = 0.0
    for count, xs, ws, strides, pads, group in cases:
        x = rng.standard_normal(xs, np.float32)
        w = rng.standard_normal(ws, np.float32) * 0.1
        b = rng.standard_normal(ws[0], np.float32)
        attrs = dict(strides=list(strides), pads=list(pads), group=group)
        run_ge, y = ge_callable("Conv", [x, w, b], attrs)
        run_ort = ort_callable("Conv", [x, w, b], attrs)
        run_ge()
        np.testing.assert_allclose(y.reshape(-1), run_ort().reshape(-1), rtol=1e-3, atol=1e-3)
        tg, to = best(run_ge, reps), best(run_ort, reps)
        tot_ge, tot_ort = tot_ge + count * tg, tot_ort + count * to
        print(f"{count:2d} {str(xs[1:]):>16s} {str(ws):>18s} {strides[0]:1d} {tg * 1e3:7.3f} {to * 1e3:7.3f} "
              f"{tg / to:5.2f}")
    print(f"ResNet-50 convs, weighted by count: ge {tot_ge * 1e3:.2f} ms, "
          f"onnxruntime {tot_ort * 1e3:.2f} ms, ratio {tot_ge / tot_ort:.2f}")
    gemms = [("Gemm", [(1, 2048), (1000, 2048), (1000,)], {"transB": 1}),   # ResNet-50's classifier
             ("MatMul", [(1, 128, 768), (768, 3072)], {}),                  # BERT-base FFN
             ("MatMul", [(12, 128, 64), (12, 64, 128)], {})]                # attention scores
    for op, shapes, attrs in gemms:
        arrays = [rng.standard_normal(sh, np.float32) for sh in shapes]
        run_ge, y = ge_callable(op, arrays, attrs)
        run_ort = ort_callable(op, arrays, attrs)
        run_ge()
        np.testing.assert_allclose(y.reshape(-1), run_ort().reshape(-1), rtol=1e-3, atol=1e-3)
        tg, to = best(run_ge, reps), best(run_ort, reps)
        name = " x ".join(map(str, shapes[:2]))
        print(f"{op:6s} {name:34s} {tg * 1e3:7.3f} {to * 1e3:7.3f} {tg / to:5.2f}")
    print(f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset: detected)')}")


if __name__ == "__main__":
    main()
