"""fuse_qdq and pack_qconv_weights: Before/Expected on small QDQ graphs, and numerics against onnx.reference
(the integer kernels requantize in onnxruntime's float32 steps, onnx.reference in float64: they differ by 1
only where a value lands within one float32 rounding of a half, in none of these cases; the float form may
differ by one step)."""
# the pass runs on the float form's graph: the expected integer node is onnx.reference's QLinearConv
import numpy as np
import pytest
from pass_check import model, node, ops, printed, run_pass
from onnx.reference import ReferenceEvaluator

import ge
from ge.kernels.conv_vnni import HAS_VNNI
from ge.passes import fuse_qdq, pack_qconv_weights

R = np.random.default_rng(0)
XS, YS = np.float32(0.05), np.float32(0.1)
WS = (R.random(8) * 0.01 + 0.002).astype(np.float32)
INITS = {"xs": XS, "xz": np.int8(-3), "w": R.integers(-127, 128, (8, 4, 3, 3)).astype(np.int8),
         "ws": WS, "wz": np.zeros(8, np.int8), "b": R.integers(-300, 300, 8).astype(np.int32), "bs": XS * WS,
         "ys": YS, "yz": np.int8(-128), "mw": R.integers(-127, 128, (6, 5)).astype(np.int8),
         "mws": np.float32(0.02), "mwz": np.int8(0)}


def _qdq_conv(relu=True, bias=True):
    nodes = [node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]), node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], axis=0),
             node("DequantizeLinear", ["b", "bs"], ["bd"], axis=0),
             node("Conv", ["xd", "wd"] + (["bd"] if bias else []), ["c"], name="conv", pads=[1, 1, 1, 1])]
    nodes += [node("Relu", ["c"], ["r"])] if relu else []
    nodes += [node("QuantizeLinear", ["r" if relu else "c", "ys", "yz"], ["yq"]),
              node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    return model(nodes, {"x": [1, 4, 6, 6]}, ["y"], INITS, opset=19)


def test_conv_relu_becomes_one_qlinear_conv():
    g, changed = run_pass(_qdq_conv(), fuse_qdq)
    assert changed
    assert printed(g)[-2:] == [
        "%yq:i8[1,8,6,6] = ge::QLinearConv[activation='Relu',pads=[1,1,1,1]](%xq, %xs, %xz, %w, %ws, None, %ys, "
        "%yz, %b)  # conv",
        "%y:f32[1,8,6,6] = DequantizeLinear(%yq, %ys, %yz)  # y"]


@pytest.mark.parametrize("relu,bias", [(True, True), (False, False)])
def test_fused_model_within_one_step_of_the_float_form(relu, bias):
    m = _qdq_conv(relu, bias)
    x = (R.standard_normal((1, 4, 6, 6)) * 3).astype(np.float32)
    # onnx.reference runs the float form (float Conv on dequantized values, then Q): one step at most apart
    want = ReferenceEvaluator(m).run(None, {"x": x})[0]
    for runtime in ("v1", "v2"):
        got = ge.Session(m, runtime=runtime).run(None, {"x": x})[0]
        assert np.abs(got - want).max() <= YS * 1.0001
    plan = ge.compile(m)
    assert [n.op_type for n in plan.nodes].count("QLinearConv") == 1
    off = ge.Session(m, runtime="v2", options=ge.Options(disabled_passes=("fuse_qdq",))).run(None, {"x": x})[0]
    assert np.abs(got - off).max() <= YS * 1.0001


def test_integer_kernel_is_exact():
    """ge's fused conv against onnx.reference's QLinearConv on the same quantized values: the same bits."""
    from op_check import check_op
    xq = R.integers(-128, 128, (1, 4, 6, 6)).astype(np.int8)
    check_op("QLinearConv", [xq, XS, np.int8(-3), INITS["w"], WS, np.zeros(8, np.int8), YS, np.int8(-128),
                             INITS["b"]], {"pads": [1, 1, 1, 1]}, const_inputs=(3, 4, 5), atol=0)


def test_what_does_not_fuse():
    # a float weight (no DQ) keeps the float Conv
    nodes = [node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]), node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             node("Conv", ["xd", "wf"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             node("QuantizeLinear", ["c", "ys", "yz"], ["yq"]), node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    m = model(nodes, {"x": [1, 4, 6, 6]}, ["y"], {**INITS, "wf": R.standard_normal((8, 4, 3, 3)).astype(np.float32)},
              opset=19)
    g, changed = run_pass(m, fuse_qdq)
    assert not changed and "Conv" in ops(g)


def test_matmul_becomes_qlinear_matmul():
    nodes = [node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]), node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             node("DequantizeLinear", ["mw", "mws", "mwz"], ["wd"]), node("MatMul", ["xd", "wd"], ["c"], name="mm"),
             node("QuantizeLinear", ["c", "ys", "yz"], ["yq"]), node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    m = model(nodes, {"x": [3, 6]}, ["y"], INITS, opset=19)
    g, _ = run_pass(m, fuse_qdq)
    assert printed(g)[-2] == "%yq:i8[3,5] = QLinearMatMul(%xq, %xs, %xz, %mw, %mws, %mwz, %ys, %yz)  # mm"
    x = R.standard_normal((3, 6)).astype(np.float32)
    want = ReferenceEvaluator(m).run(None, {"x": x})[0]
    got = ge.Session(m, runtime="v2").run(None, {"x": x})[0]
    assert np.abs(got - want).max() <= YS * 1.0001


@pytest.mark.skipif(not HAS_VNNI, reason="this CPU has no AVX512-VNNI: QLinearConv keeps its int16 GEMM")
def test_pack_qconv_weights():
    g, _ = run_pass(_qdq_conv(), fuse_qdq)
    assert pack_qconv_weights(g)
    conv = [n for n in g.nodes if n.op_type == "QLinearConv"][0]
    assert conv.attrs["weight_shape"] == [8, 4, 3, 3]
    assert conv.inputs[3].const.shape == (32 * 9 * 4,) and conv.inputs[9].const.shape == (8,)
    assert (conv.inputs[9].const == INITS["w"].reshape(8, -1).sum(1)).all()


@pytest.mark.skipif(not HAS_VNNI, reason="this CPU has no AVX512-VNNI: the classifier stays a float Gemm")
def test_classifier_gemm_becomes_qgemm():
    """DQ -> Gemm(transB=1, per-output int8 weights, int32 bias) with a float result -> ge::QGemm (packed
    panels, 40 outputs: a ragged second panel; K = 37: padded to 40): within float rounding of
    onnx.reference's float form and of onnxruntime's QGemm, the same bits on 1 and 2 AI cores."""
    gw, gs = R.integers(-127, 128, (40, 37)).astype(np.int8), (R.random(40) * 0.01 + 0.001).astype(np.float32)
    inits = {"xs": XS, "xz": np.int8(-3), "gw": gw, "gs": gs, "gz": np.zeros(40, np.int8),
             "gb": R.integers(-3000, 3000, 40).astype(np.int32), "gbs": XS * gs, "gbz": np.zeros(40, np.int32)}
    nodes = [node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]), node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             node("DequantizeLinear", ["gw", "gs", "gz"], ["wd"], axis=0),
             node("DequantizeLinear", ["gb", "gbs", "gbz"], ["bd"], axis=0),
             node("Gemm", ["xd", "wd", "bd"], ["y"], name="fc", transB=1)]
    m = model(nodes, {"x": [2, 37]}, ["y"], inits, opset=19)
    g, changed = run_pass(m, fuse_qdq)
    assert changed and "ge::QGemm" in ops(g) and "Gemm" not in ops(g)
    x = {"x": R.standard_normal((2, 37)).astype(np.float32)}
    want = ReferenceEvaluator(m).run(None, x)[0]
    got = [ge.Session(ge.compile(m, ge.Options(aicore_num=c)), runtime="v1").run(None, x)[0] for c in (1, 2)]
    np.testing.assert_array_equal(got[0], got[1])
    np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    ort = pytest.importorskip("onnxruntime")
    m.graph.output[0].type.tensor_type.elem_type = 1   # float: onnxruntime wants the output's type
    theirs = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, x)[0]
    np.testing.assert_allclose(got[0], theirs, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_qgemm_bad_weights_name_the_node():
    from op_check import make_model, run_ge
    from ge.errors import GEError
    bad = [np.zeros((1, 8), np.int8), XS, np.int8(0), np.zeros(10, np.int8), XS, np.zeros(4, np.int32)]
    with pytest.raises(GEError, match=r"QGemm node 'n'.*weight_shape \[4, 9\] must be \[N, K\] with K = 8"):
        run_ge(*make_model("QGemm", bad, {"weight_shape": [4, 9]}, domain="ge"))
    with pytest.raises(GEError, match=r"QGemm node 'n'.*packed weights must be int8 \[256\]"):
        run_ge(*make_model("QGemm", bad, {"weight_shape": [4, 8]}, domain="ge"))
