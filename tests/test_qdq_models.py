"""QDQ-quantized light models (onnxruntime.quantization.quantize_static, QDQ format, made here from the random-
weight light models) on both runtimes, against onnxruntime on the same file: within one quantization step
of the output, every Conv fused into an integer QLinearConv, the same bits for any core count."""
import numpy as np
import onnx
import pytest

import ge
from ge.zoo import with_random_weights

ort = pytest.importorskip("onnxruntime")
quantization = pytest.importorskip("onnxruntime.quantization")


def _float_model(name: str, path) -> str:
    """The light model at opset 13 with its BatchNormalizations folded by onnxruntime's basic level (what
    quantization's pre-processing does), saved to path."""
    m = with_random_weights(name)
    m.ir_version = 7   # initializers need not be graph inputs (the converter and quantizer want them apart)
    m = onnx.version_converter.convert_version(m, 13)
    inits = {t.name for t in m.graph.initializer}
    keep = [i for i in m.graph.input if i.name not in inits]
    del m.graph.input[:]
    m.graph.input.extend(keep)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    so.optimized_model_filepath = str(path)
    ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return str(path)


class _Calibration(quantization.CalibrationDataReader):
    def __init__(self, name, shape, n=2):
        self.feeds = iter([{name: np.random.default_rng(i).standard_normal(shape).astype(np.float32)}
                           for i in range(n)])

    def get_next(self):
        return next(self.feeds, None)


@pytest.fixture(scope="session")
def qdq_model(tmp_path_factory):
    made = {}

    def get(name):
        if name not in made:
            d = tmp_path_factory.mktemp(f"qdq_{name}")
            f32 = _float_model(name, d / "f32.onnx")
            inp = onnx.load(f32).graph.input[0]
            shape = [x.dim_value or 1 for x in inp.type.tensor_type.shape.dim]
            quantization.quantize_static(f32, str(d / "qdq.onnx"), _Calibration(inp.name, shape),
                                         quant_format=quantization.QuantFormat.QDQ, per_channel=True)
            made[name] = (f32, str(d / "qdq.onnx"), inp.name, shape)
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
    tiled, one = ge.compile(path), ge.compile(path, ge.Options(aicore_num=1))
    n_convs = sum(n.op_type == "Conv" for n in onnx.load(f32).graph.node)
    assert [n.op_type for n in tiled.nodes].count("QLinearConv") == n_convs
    assert not any(n.op_type == "Conv" for n in tiled.nodes)
    step = _output_step(path)
    got = ge.Session(tiled, runtime="v1").run(None, {inp: x})[0]
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= step * 1.001, f"more than one step ({step}) from onnxruntime"
    assert got.argmax() == want.argmax()
    for other in (ge.Session(tiled, runtime="v2"), ge.Session(one, runtime="v1")):
        np.testing.assert_array_equal(other.run(None, {inp: x})[0], got)
