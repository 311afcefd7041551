"""QDQ-quantized light models (onnxruntime.quantization.quantize_static, QDQ format, made here from the random-
weight light models) on both runtimes, against onnxruntime on the same file: within one quantization step
of the output, every Conv fused into an integer QLinearConv, the same bits for any core count."""
import numpy as np
import onnx
import pytest

import ge
from ge.kernels.conv_vnni import HAS_VNNI
from ge.zoo import quantized_light_model

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnxruntime.quantization")


@pytest.fixture(scope="session")
def qdq_model(tmp_path_factory):
    made = {}

    def get(name):
        if name not in made:
            # without AVX512-VNNI onnxruntime's u8s8 kernels saturate at int16 (SqueezeNet 3 steps off, ge 0
            # from onnx.reference): 7-bit weights, as onnxruntime advises there
            f32, qdq = quantized_light_model(name, str(tmp_path_factory.mktemp(f"qdq_{name}")),
                                             reduce_range=not HAS_VNNI)
            inp = onnx.load(f32).graph.input[0]
            made[name] = (f32, qdq, inp.name, [x.dim_value or 1 for x in inp.type.tensor_type.shape.dim])
        return made[name]
    return get


def _output_step(path) -> float:
    """The scale of the model's last QuantizeLinear: one step of the quantized output."""
    m = onnx.load(path)
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in m.graph.initializer}
    q = [n for n in m.graph.node if n.op_type == "QuantizeLinear"][-1]
    return float(inits[q.input[1]])


@pytest.mark.parametrize("name", ["squeezenet", "resnet50"])
def test_qdq_model_matches_onnxruntime(name, qdq_model):
    f32, path, inp, shape = qdq_model(name)
    x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    want = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, {inp: x})[0]
    tiled = ge.compile(path)
    n_convs = sum(n.op_type == "Conv" for n in onnx.load(f32).graph.node)
    assert [n.op_type for n in tiled.nodes].count("QLinearConv") == n_convs
    assert not any(n.op_type == "Conv" for n in tiled.nodes)
    step = _output_step(path)
    got = ge.Session(tiled, runtime="v1").run(None, {inp: x})[0]
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= step * 1.001, f"more than one step ({step}) from onnxruntime"
    assert got.argmax() == want.argmax()
    if name == "squeezenet":  # the other runtime and one core give the same bits (ResNet-50's twice: CI time)
        one = ge.compile(path, ge.Options(aicore_num=1))
        for other in (ge.Session(tiled, runtime="v2"), ge.Session(one, runtime="v1")):
            np.testing.assert_array_equal(other.run(None, {inp: x})[0], got)


def test_nhwc_int8_keeps_every_8bit_value(qdq_model):
    """SqueezeNet's int8 maps NHWC (passes/nhwc_int8.py) or NCHW: every QuantizeLinear result (a graph
    output here, so each leaves the region through a TransData) has the same bits."""
    _, path, inp, shape = qdq_model("squeezenet")
    m = onnx.load(path)
    outs = {o.name for o in m.graph.output}
    m.graph.output.extend(onnx.helper.make_empty_tensor_value_info(n.output[0]) for n in m.graph.node
                          if n.op_type == "QuantizeLinear" and n.output[0] not in outs)
    x = {inp: np.random.default_rng(7).standard_normal(shape).astype(np.float32)}
    on = ge.compile(m)
    assert {"QMaxPool", "QConcat", "TransData"} <= {n.op_type for n in on.nodes}
    want = ge.Session(ge.compile(m, ge.Options(disabled_passes=("nhwc_int8",))), runtime="v1").run(None, x)
    for o, a, b in zip(m.graph.output, ge.Session(on, runtime="v1").run(None, x), want):
        np.testing.assert_array_equal(a, b, err_msg=o.name)
