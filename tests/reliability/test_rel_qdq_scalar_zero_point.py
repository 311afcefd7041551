"""DequantizeLinear / QuantizeLinear with a scalar (or one-element) zero point and a [1] scale, as torch's
quantized exports write them (issue 46): onnxruntime runs them; ge refused them with a ShapeError ("zero point
shape [] differs from the scale's [1]"). One element each is one quantization parameter for the whole tensor."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
from rel_models import make_model, vi

ort = pytest.importorskip("onnxruntime")


@pytest.mark.parametrize("zp_shape, scale_shape", [((), (1,)), ((1,), ()), ((1,), (1,))])
def test_one_element_parameters_of_any_rank(zp_shape, scale_shape, tmp_path):
    scale = numpy_helper.from_array(np.full(scale_shape, 0.05, np.float32), "s")
    zp = numpy_helper.from_array(np.full(zp_shape, 3, np.uint8), "zp")
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["y"])]
    model = make_model(nodes, [vi("x", [2, 5])], [vi("y", [2, 5])], [scale, zp], opset=13)
    path = str(tmp_path / "qdq.onnx")
    open(path, "wb").write(model.SerializeToString())
    x = np.linspace(-0.3, 9, 10, dtype=np.float32).reshape(2, 5)   # below the zero point and saturating
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    for runtime in ("v1", "v2"):
        with ge.Session(path, runtime=runtime) as s:
            np.testing.assert_array_equal(s.run(None, {"x": x})[0], want)
    assert TensorProto.UINT8 == zp.data_type
