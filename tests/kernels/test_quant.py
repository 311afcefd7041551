"""Quantization ops (kernels/quant.py, qlinear.py) against onnx.reference: the layouts and types the ONNX node
cases leave out (per-channel weights, int8 activations, strides, groups, bias, batch broadcasting, tiling),
and the typed errors for bad scales and zero points."""
import numpy as np
import pytest

from ge.errors import GEError
from ge.kernels.conv_vnni import HAS_VNNI
from op_check import check_op, ge_only, make_model

R = np.random.default_rng(0)
f32, u8, i8 = np.float32, np.uint8, np.int8


def _q(shape, dt):
    lo, hi = (0, 256) if dt == u8 else (-128, 128)
    return R.integers(lo, hi, shape).astype(dt)


@pytest.mark.parametrize("dt", [u8, i8])
def test_quantize_dequantize_per_axis(dt):
    x = R.standard_normal((2, 3, 5, 7)).astype(f32) * 4
    s, zp = np.array([0.05, 0.1, 0.02], f32), _q(3, dt) // 4
    q = check_op("QuantizeLinear", [x, s, zp], {"axis": 1}, opset=19, const_inputs=(1, 2))[0]
    check_op("DequantizeLinear", [q, s, zp], {"axis": 1}, opset=19)
    check_op("DequantizeLinear", [R.integers(-1000, 1000, 16).astype(np.int32), np.array(0.01, f32)], opset=19)


@pytest.mark.parametrize("xt,wt", [(u8, i8), (i8, i8)])
def test_qlinear_conv_per_channel(xt, wt):
    x, w = _q((1, 8, 32, 32), xt), _q((16, 4, 3, 3), wt)
    ws = (R.random(16) * 0.01 + 0.001).astype(f32)
    inputs = [x, np.array(0.02, f32), _q((), xt), w, ws, np.zeros(16, wt), np.array(0.15, f32), _q((), xt),
              R.integers(-500, 500, 16).astype(np.int32)]
    check_op("QLinearConv", inputs, {"pads": [1, 1, 1, 1], "group": 2}, const_inputs=(3, 4, 5), atol=0)
    check_op("QLinearConv", inputs[:8], {"strides": [2, 2], "pads": [0, 1, 1, 0], "group": 2}, atol=0)


def test_conv_integer_1d_dilated():
    check_op("ConvInteger", [_q((2, 3, 20), u8), _q((4, 3, 3), u8), np.array(7, u8), np.array(3, u8)],
             {"dilations": [2], "pads": [2, 1]}, atol=0)


def test_qlinear_matmul_per_column_batches():
    a, b = _q((2, 3, 5, 16), i8), _q((16, 8), i8)
    bs = (R.random(8) * 0.02 + 0.001).astype(f32)
    check_op("QLinearMatMul", [a, np.array(0.03, f32), np.array(2, i8), b, bs, np.array(0, i8),
                               np.array(0.2, f32), np.array(-3, i8)], atol=0)
    check_op("MatMulInteger", [_q((4, 16), u8), _q((3, 16, 5), i8), np.array(9, u8), _q(5, i8)], atol=0)


@pytest.mark.parametrize("op,inputs,attrs,msg", [
    ("QuantizeLinear", [np.ones((2, 3), f32), np.ones(3, f32), np.zeros(2, u8)], {}, "zero point shape"),
    ("QuantizeLinear", [np.ones((2, 3), f32), np.ones(2, f32)], {}, "per-axis scale"),
    ("DequantizeLinear", [np.ones(3, u8), np.ones((), np.float64)], {}, "scale has dtype float64"),
    ("DequantizeLinear", [np.ones(3, u8), np.ones((), f32), np.zeros((), i8)], {}, "zero point has dtype"),
    ("QLinearMatMul", [np.ones((2, 3), u8), np.ones((), f32), np.zeros(2, u8), np.ones((3, 2), u8),
                       np.ones((), f32), np.zeros((), u8), np.ones((), f32), np.zeros((), u8)], {},
     "a_zero_point must be a scalar"),
    ("ConvInteger", [np.ones((1, 1, 3, 3), u8), np.ones((2, 1, 2, 2), u8), np.zeros((), u8),
                     np.zeros(3, u8)], {}, "w_zero_point"),
])
def test_bad_scales_and_zero_points_name_the_node(op, inputs, attrs, msg):
    with pytest.raises(GEError, match=rf"{op} node 'n'.*{msg}"):
        ge_only(op, inputs, attrs, opset=19)


@pytest.mark.skipif(not HAS_VNNI, reason="the CPU has no AVX512-VNNI")
def test_qlinear_conv_takes_vnni_for_a_constant_zero_weight_zero_point():
    """A constant w_zero_point of 0 (symmetric int8 weights, as ONNX requires the input) runs conv_vnni, which
    does not read it; any other zero point the int16 GEMM path, which does."""
    import ge
    x, w = _q((1, 5, 10, 10), i8), _q((40, 5, 3, 3), i8)
    ws = (R.random(40) * 0.01 + 0.001).astype(f32)
    for wz, vnni in ((np.zeros(40, i8), True), (np.ones(40, i8), False)):
        model, _ = make_model("QLinearConv", [x, np.array(0.02, f32), _q((), i8), w, ws, wz, np.array(0.3, f32),
                                              _q((), i8)], {"pads": [1, 1, 1, 1]}, 17, "", 1, (3, 4, 5))
        launch = ge.compile(model).nodes[0].launch
        assert (5 not in launch.inputs) == vnni


@pytest.mark.parametrize("xt,stride", [(u8, 1), (i8, 2)])
def test_qlinear_conv_vnni(xt, stride):
    """int8 weights with a constant zero point of 0 take conv_vnni (vpdpbusd): ragged channel panels (40 = 32 +
    8), row tails (OW % 6), 5 input channels (padded to 8), tiled over output rows. (The zero point is given:
    ONNX's QLinearConv requires it, and the frontend refuses a node that leaves it empty.)"""
    x, w = _q((2, 5, 30, 31), xt), _q((40, 5, 3, 3), i8)
    ws = (R.random(40) * 0.01 + 0.001).astype(f32)
    inputs = [x, np.array(0.02, f32), _q((), xt), w, ws, np.zeros(40, i8), np.array(0.3, f32), _q((), xt),
              R.integers(-500, 500, 40).astype(np.int32)]
    check_op("QLinearConv", inputs, {"pads": [1, 2, 1, 0], "strides": [stride, stride]}, const_inputs=(3, 4, 5),
             atol=0)
