"""kernels/qnhwc.py: TransData and the int8 NHWC ops against onnx.reference running the float islands they
stand for (DequantizeLinear -> op -> QuantizeLinear on NCHW), on one and two AI cores."""
import numpy as np
import pytest
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from op_check import make_model, run_ge

from ge.errors import GEError
from ge.passes.nhwc_int8 import table

R = np.random.default_rng(0)
i8, u8, f32 = np.int8, np.uint8, np.float32


def _ge(op, inputs, attrs, cores=1):
    return run_ge(*make_model(op, inputs, attrs, domain="ge", const_inputs=range(1, len(inputs))), cores=cores)[0]


def _image(x):
    """The NHWC byte image of 8-bit NCHW x, through ge's TransData."""
    return _ge("TransData", [x], {"src_format": "NCHW", "dst_format": "NHWC", "shift": 128 if x.dtype == i8 else 0})


def _back(img, dt, C):
    return _ge("TransData", [img], {"src_format": "NHWC", "dst_format": "NCHW", "shift": 128 if dt == i8 else 0,
                                    "channels": C})


def _reference(nodes, feeds, inits):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(k, 0, None) for k in feeds],
                          [helper.make_tensor_value_info("y", 0, None)],
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    return ReferenceEvaluator(helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])).run(None, feeds)[0]


@pytest.mark.parametrize("dt", [i8, u8])
def test_trans_data_round_trip(dt):
    x = R.integers(np.iinfo(dt).min, np.iinfo(dt).max + 1, (2, 6, 3, 5)).astype(dt)
    img = _image(x)
    assert img.dtype == u8 and img.shape == (2, 3, 5, 8)
    shift = 128 if dt == i8 else 0
    np.testing.assert_array_equal(img[..., :6].astype(int), x.transpose(0, 2, 3, 1).astype(int) + shift)
    assert (img[..., 6:] == shift).all()   # the channels past C hold a zero value
    back = _back(img, dt, 6)
    assert back.dtype == dt
    np.testing.assert_array_equal(back, x)


@pytest.mark.parametrize("pads,ys,cores", [([1, 1, 1, 1], 0.05, 1), ([0, 0, 0, 0], 0.02, 2), ([0, 1, 1, 0], 0.03, 2)])
def test_qmaxpool_is_dq_maxpool_q(pads, ys, cores):
    x = R.integers(-128, 128, (1, 8, 7, 9)).astype(i8)
    s, z, yz = np.array(0.03, f32), np.array(-5, i8), np.array(7, i8)
    want = _reference([helper.make_node("DequantizeLinear", ["x", "s", "z"], ["d"]),
                       helper.make_node("MaxPool", ["d"], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=pads),
                       helper.make_node("QuantizeLinear", ["p", "ys", "yz"], ["y"])],
                      {"x": x}, {"s": s, "z": z, "ys": np.array(ys, f32), "yz": yz})
    t = table(s, z, np.array(ys, f32), yz)
    got = _ge("QMaxPool", [_image(x), t], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": pads}, cores)
    np.testing.assert_array_equal(_back(got, i8, 8), want)


def test_qconcat_is_dq_concat_q():
    a, b = R.integers(-128, 128, (1, 4, 5, 6)).astype(i8), R.integers(-128, 128, (1, 8, 5, 6)).astype(i8)
    sa, sb, ys, z = np.array(0.03, f32), np.array(0.05, f32), np.array(0.05, f32), np.array(-128, i8)
    want = _reference([helper.make_node("DequantizeLinear", ["a", "sa", "z"], ["da"]),
                       helper.make_node("DequantizeLinear", ["b", "sb", "z"], ["db"]),
                       helper.make_node("Concat", ["da", "db"], ["c"], axis=1),
                       helper.make_node("QuantizeLinear", ["c", "ys", "z"], ["y"])],
                      {"a": a, "b": b}, {"sa": sa, "sb": sb, "ys": ys, "z": z})
    ta, tb = table(sa, z, ys, z), table(sb, z, ys, z)
    assert not np.array_equal(ta, np.arange(256)) and np.array_equal(tb, np.arange(256))
    for cores in (1, 2):
        got = _ge("QConcat", [_image(a), _image(b), np.concatenate([ta, tb])], {"identity": [0, 1]}, cores)
        np.testing.assert_array_equal(_back(got, i8, 12), want)


@pytest.mark.parametrize("relu,yt", [(1, i8), (0, u8)])
def test_qadd_is_dq_add_q(relu, yt):
    a, b = R.integers(-128, 128, (1, 8, 5, 7)).astype(i8), R.integers(0, 256, (1, 8, 5, 7)).astype(u8)
    p = {"sa": np.array(0.04, f32), "za": np.array(3, i8), "sb": np.array(0.07, f32), "zb": np.array(120, u8),
         "ys": np.array(0.09, f32), "yz": np.array(-100 if yt == i8 else 60, yt)}
    nodes = [helper.make_node("DequantizeLinear", ["a", "sa", "za"], ["da"]),
             helper.make_node("DequantizeLinear", ["b", "sb", "zb"], ["db"]),
             helper.make_node("Add", ["da", "db"], ["s"])]
    nodes += [helper.make_node("Relu", ["s"], ["r"])] if relu else []
    nodes += [helper.make_node("QuantizeLinear", ["r" if relu else "s", "ys", "yz"], ["y"])]
    want = _reference(nodes, {"a": a, "b": b}, p)
    for cores in (1, 2):
        got = _ge("QAdd", [_image(a), p["sa"], p["za"], _image(b), p["sb"], p["zb"], p["ys"], p["yz"]],
                  {"relu": relu}, cores)
        np.testing.assert_array_equal(_back(got, yt, 8), want)


def _ort_qlinear_conv(inputs, attrs):
    """onnxruntime's QLinearConv on NCHW: the oracle of the requantization's float32 steps."""
    ort = pytest.importorskip("onnxruntime")
    m, feeds = make_model("QLinearConv", inputs, attrs, opset=13, const_inputs=range(1, len(inputs)))
    m.graph.output[0].type.tensor_type.elem_type = helper.np_dtype_to_tensor_dtype(inputs[7].dtype)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]


@pytest.mark.parametrize("xt,stride,pads,cores", [(u8, 1, [1, 1, 1, 1], 1), (i8, 2, [1, 1, 1, 1], 2),
                                                  (i8, 1, [0, 1, 1, 0], 2)])
def test_depthwise_qlinear_conv_on_images(xt, stride, pads, cores):
    """kernels/conv_depthwise_int8.py: onnxruntime's bits (its float32 requantization), within 1 of onnx.reference's
    float64 one; 18 channels: 16 a vector, then 2 and the image's 2 past C (the zero point). The weight zero point is
    absent for ge (as fuse_qdq leaves a zero one), zeros for the oracles (onnxruntime requires it)."""
    C, lo, hi, yz = 18, np.iinfo(xt).min, np.iinfo(xt).max + 1, np.array(-7 if xt == i8 else 120, xt)
    x = R.integers(lo, hi, (2, C, 7, 9)).astype(xt)
    inputs = [x, np.array(0.05, f32), np.array(3, xt), R.integers(-127, 128, (C, 1, 3, 3)).astype(i8),
              (R.random(C) * 0.02 + 0.001).astype(f32), np.zeros(C, i8), np.array(0.3, f32), yz,
              R.integers(-3000, 3000, C).astype(np.int32)]
    attrs = {"group": C, "strides": [stride, stride], "pads": pads}
    want = _ort_qlinear_conv(inputs, attrs)
    names = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"]
    ref = _reference([helper.make_node("QLinearConv", names, ["y"], **attrs)], {"x": x},
                     dict(zip(names[1:], inputs[1:])))
    assert np.abs(want.astype(int) - ref).max() <= 1
    got = _ge("QLinearConv", [_image(x)] + inputs[1:5] + [None] + inputs[6:],
              {**attrs, "x_layout": "NHWC", "y_layout": "NHWC"}, cores)
    shift = 128 if xt == i8 else 0
    assert got.shape == (2, want.shape[2], want.shape[3], 20) and (got[..., C:] == int(yz) + shift).all()
    np.testing.assert_array_equal(_back(got, xt, C), want)


@pytest.mark.parametrize("op,inputs,attrs,msg", [
    ("TransData", [np.zeros((1, 2, 3, 4), i8)], {"src_format": "NCHW", "dst_format": "NC1HWC0"}, "not supported"),
    ("TransData", [np.zeros((1, 2, 3, 4), i8)], {"src_format": "NCHW", "dst_format": "NHWC", "shift": 5}, "shift"),
    ("TransData", [np.zeros((1, 2, 3, 4), u8)], {"src_format": "NHWC", "dst_format": "NCHW", "channels": 9},
     "channels 9"),
    ("QMaxPool", [np.zeros((1, 3, 3, 6), u8)], {"kernel_shape": [2, 2]}, "NHWC byte image"),
    ("QMaxPool", [np.zeros((1, 3, 3, 4), u8)], {"kernel_shape": [2, 2], "pads": [2, 0, 0, 0]}, "pads"),
])
def test_bad_input_names_the_node(op, inputs, attrs, msg):
    with pytest.raises(GEError, match=rf"{op} node 'n'.*{msg}"):
        run_ge(*make_model(op, inputs, attrs, domain="ge"))
