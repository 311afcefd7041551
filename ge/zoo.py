"""Models that ship inside installed packages: the ONNX "light" models (onnx/backend/test/data/light).

Each comes with the output ONNX's backend runner expects for its deterministic input
(arange(n) / n over the input's shape), so they serve as end-to-end references. `inception_like` builds
one more: Inception blocks (four parallel branches) with a symbolic batch, for dynamic multi-stream runs;
`rnn_loop` an RNN written as a Loop (static control flow: label tasks on runtime_v1).
"""
from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import numpy_helper

LIGHT_MODELS = ("bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50", "shufflenet",
                "squeezenet", "vgg19", "zfnet512")
DEFAULT_MODEL = "resnet50"


def light_dir() -> str:
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")


def light_model_path(name: str = DEFAULT_MODEL) -> str:
    name = name.removeprefix("light_").removesuffix(".onnx")
    if name not in LIGHT_MODELS:
        raise ValueError(f"unknown light model '{name}'; choose one of {', '.join(LIGHT_MODELS)}")
    return os.path.join(light_dir(), f"light_{name}.onnx")


def reference_feeds(session) -> dict[str, np.ndarray]:
    """The inputs ONNX's backend runner uses for light models: arange(n) / n in each input's shape."""
    feeds = {}
    for i in session.get_inputs():
        shape = tuple(d if isinstance(d, int) else 1 for d in i.shape)
        n = int(np.prod(shape))
        feeds[i.name] = (np.arange(n).reshape(shape) / n).astype(i.dtype)
    return feeds


def expected_outputs(name: str) -> list[np.ndarray]:
    path = light_model_path(name)
    outs, k = [], 0
    while os.path.exists(f"{path[:-5]}_output_{k}.pb"):
        t = onnx.TensorProto()
        with open(f"{path[:-5]}_output_{k}.pb", "rb") as f:
            t.ParseFromString(f.read())
        outs.append(numpy_helper.to_array(t))
        k += 1
    return outs


def with_random_weights(name: str, seed: int = 0) -> onnx.ModelProto:
    """A light model whose ConstantOfShape weights are replaced by random initializers.

    The shipped light models fill every weight with one constant, so every channel computes the same
    thing; random weights (He-scaled, positive 1-D parameters so BatchNormalization variances stay
    valid) make a comparison with another runtime meaningful.
    """
    model = onnx.load(light_model_path(name))
    g = model.graph
    rng = np.random.default_rng(seed)
    shapes = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    keep = []
    for node in g.node:
        if node.op_type != "ConstantOfShape" or node.input[0] not in shapes:
            keep.append(node)
            continue
        shape = tuple(int(d) for d in shapes[node.input[0]])
        if len(shape) >= 2:  # drawn in float32 and the unused shapes deleted in place: VGG-19's 548 MB of
            fan_in = int(np.prod(shape[1:]))  # weights took 13 s (half of it in the kernel) when drawn in
            w = rng.standard_normal(shape, dtype=np.float32)  # float64 and the initializers copied again
            w *= np.float32(np.sqrt(2.0 / fan_in))
        else:
            w = rng.uniform(0.5, 1.5, shape).astype(np.float32)
        g.initializer.append(numpy_helper.from_array(w, node.output[0]))
    del g.node[:]
    g.node.extend(keep)
    used = {x for n in keep for x in n.input}
    for i in reversed(range(len(g.initializer))):
        if g.initializer[i].name not in used and g.initializer[i].name.endswith("__SHAPE"):
            del g.initializer[i]
    names = {t.name for t in g.initializer}
    inputs = [i for i in g.input if i.name in names or not i.name.endswith("__SHAPE")]
    del g.input[:]
    g.input.extend(inputs)
    return model


def quantized_light_model(name: str, directory: str, samples: int = 2, seed: int = 0,
                          reduce_range: bool = False) -> tuple[str, str]:
    """(float path, QDQ path): a random-weight light model quantized by `quantized_model`."""
    return quantized_model(with_random_weights(name, seed), name, directory, samples, seed, reduce_range)


def quantized_model(m: onnx.ModelProto, name: str, directory: str, samples: int = 2, seed: int = 0,
                    reduce_range: bool = False) -> tuple[str, str]:
    """(float path, QDQ path): model m at opset 13 with its BatchNormalizations folded (onnxruntime's basic
    level, what quantization's pre-processing does), and its int8 QDQ form from
    onnxruntime.quantization.quantize_static (per-channel weights, `samples` random calibration inputs).
    `reduce_range` quantizes weights to 7 bits, what onnxruntime advises without AVX512-VNNI: its u8s8
    kernels there (vpmaddubsw) saturate pairs of products at int16. Needs onnxruntime."""
    import onnxruntime as ort
    from onnxruntime import quantization

    m.ir_version = 7   # initializers need not be graph inputs (the converter and quantizer want them apart)
    m = onnx.version_converter.convert_version(m, 13)
    inits = {t.name for t in m.graph.initializer}
    keep = [i for i in m.graph.input if i.name not in inits]
    del m.graph.input[:]
    m.graph.input.extend(keep)
    f32, qdq = os.path.join(directory, f"{name}_f32.onnx"), os.path.join(directory, f"{name}_qdq.onnx")
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    so.optimized_model_filepath = f32
    ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    inp = keep[0]
    shape = [d.dim_value or 1 for d in inp.type.tensor_type.shape.dim]
    rng = np.random.default_rng(seed)
    feeds = iter([{inp.name: rng.standard_normal(shape).astype(np.float32)} for _ in range(samples)])

    class Calibration(quantization.CalibrationDataReader):
        def get_next(self):
            return next(feeds, None)

    quantization.quantize_static(f32, qdq, Calibration(), quant_format=quantization.QuantFormat.QDQ,
                                 per_channel=True, reduce_range=reduce_range)
    return f32, qdq


def inception_like(blocks: int = 2, channels: int = 16, size: int = 8, seed: int = 0) -> onnx.ModelProto:
    """Inception blocks on input x[N, channels, size, size] (N symbolic): per block four branches (1x1;
    1x1 -> 3x3; 1x1 -> 3x3 -> 3x3; 3x3 max pool -> 1x1), each of channels/4 outputs, joined by a Concat;
    then a global average pool. He-scaled random weights."""
    from onnx import TensorProto, helper
    rng = np.random.default_rng(seed)
    inits, nodes, q = [], [], channels // 4

    def conv(x, cin, cout, k, name):
        w = (rng.standard_normal((cout, cin, k, k)) * np.sqrt(2 / (cin * k * k))).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"{name}_w"))
        inits.append(numpy_helper.from_array(np.zeros(cout, np.float32), f"{name}_b"))
        nodes.append(onnx.helper.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [f"{name}_c"],
                                           name=name, pads=[k // 2] * 4))
        nodes.append(onnx.helper.make_node("Relu", [f"{name}_c"], [f"{name}_y"], name=f"{name}_relu"))
        return f"{name}_y"
    x = "x"
    for b in range(blocks):
        p = f"b{b}"
        nodes.append(helper.make_node("MaxPool", [x], [f"{p}_pool"], kernel_shape=[3, 3], pads=[1] * 4))
        outs = [conv(x, channels, q, 1, f"{p}_1x1"),
                conv(conv(x, channels, q, 1, f"{p}_3r"), q, q, 3, f"{p}_3x3"),
                conv(conv(conv(x, channels, q, 1, f"{p}_5r"), q, q, 3, f"{p}_5a"), q, q, 3, f"{p}_5b"),
                conv(f"{p}_pool", channels, q, 1, f"{p}_pp")]
        nodes.append(helper.make_node("Concat", outs, [f"{p}_cat"], axis=1, name=f"{p}_cat"))
        x = f"{p}_cat"
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["y"], name="gap"))
    g = helper.make_graph(nodes, "inception_like",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", channels, size, size])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", channels, 1, 1])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def rnn_loop(steps: int = 8, batch: int = 2, hidden: int = 16, seed: int = 0) -> onnx.ModelProto:
    """An Elman RNN written as a Loop, as torch.jit.script exports `for t in range(T): h = tanh(x[t] @ W +
    h @ U + b)`: the trip count a constant, x[t] a Gather by the iteration number, h carried, every h a scan
    output. Inputs x[steps, batch, hidden], h0[batch, hidden]; outputs h_T and hs[steps, batch, hidden]."""
    from onnx import TensorProto, helper
    rng = np.random.default_rng(seed)
    f = TensorProto.FLOAT
    w = lambda name: numpy_helper.from_array(  # noqa: E731
        (rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)).astype(np.float32), name)
    body = helper.make_graph([
        helper.make_node("Gather", ["x", "t"], ["xt"], axis=0),
        helper.make_node("MatMul", ["xt", "W"], ["p"]),
        helper.make_node("MatMul", ["h_in", "U"], ["q"]),
        helper.make_node("Add", ["p", "q"], ["r"]),
        helper.make_node("Add", ["r", "b"], ["s"]),
        helper.make_node("Tanh", ["s"], ["h_out"]),
        helper.make_node("Identity", ["h_out"], ["h_scan"]),
        helper.make_node("Identity", ["cond_in"], ["cond_out"]),
    ], "rnn_step", [helper.make_tensor_value_info("t", TensorProto.INT64, []),
                    helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                    helper.make_tensor_value_info("h_in", f, [batch, hidden])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", f, [batch, hidden]),
         helper.make_tensor_value_info("h_scan", f, [batch, hidden])])
    inits = [helper.make_tensor("T", TensorProto.INT64, [], [steps]), w("W"), w("U"),
             numpy_helper.from_array((rng.standard_normal(hidden) * 0.1).astype(np.float32), "b")]
    g = helper.make_graph([helper.make_node("Loop", ["T", "", "h0"], ["h", "hs"], body=body, name="rnn")], "rnn_loop",
                          [helper.make_tensor_value_info("x", f, [steps, batch, hidden]),
                           helper.make_tensor_value_info("h0", f, [batch, hidden])],
                          [helper.make_tensor_value_info("h", f, [batch, hidden]),
                           helper.make_tensor_value_info("hs", f, [steps, batch, hidden])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
