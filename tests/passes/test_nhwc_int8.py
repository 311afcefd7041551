"""nhwc_int8: Before/Expected on a small QDQ graph, and a small onnxruntime-quantized CNN (conv, pool, concat,
residual add) whose every 8-bit value keeps its bits with the pass on and off, on both runtimes and 1 or 2
AI cores."""
import numpy as np
import pytest
from onnx import helper, numpy_helper
from pass_check import model, node, ops, run_pass

import ge
from ge.kernels.conv_vnni import HAS_VNNI
from ge.passes import eliminate_dead_code, fuse_qdq, nhwc_int8, pack_qconv_weights

# the NHWC region starts at VNNI-packed convs: without AVX512-VNNI nothing is packed and the pass keeps NCHW
needs_vnni = pytest.mark.skipif(not HAS_VNNI, reason="this CPU has no AVX512-VNNI")

R = np.random.default_rng(1)
f32 = np.float32


def _lowered(g):
    fuse_qdq(g)
    eliminate_dead_code(g)
    pack_qconv_weights(g)
    changed = nhwc_int8(g)
    eliminate_dead_code(g)
    return changed


def _conv_pool_conv():
    """Q(x) -> conv (6 -> 8) -> Q -> DQ -> MaxPool -> Q (another scale) -> conv 3x3 -> Q -> DQ -> y."""
    inits = {"xs": f32(0.05), "xz": np.int8(0), "w1": R.integers(-127, 128, (8, 6, 1, 1)).astype(np.int8),
             "w2": R.integers(-127, 128, (4, 8, 3, 3)).astype(np.int8), "ws": f32(0.01), "s1": f32(0.2),
             "s2": f32(0.3), "z": np.int8(-128), "ys": f32(0.5)}
    nodes = [node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]), node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             node("DequantizeLinear", ["w1", "ws"], ["w1d"]), node("DequantizeLinear", ["w2", "ws"], ["w2d"]),
             node("Conv", ["xd", "w1d"], ["c1"], name="conv1"), node("QuantizeLinear", ["c1", "s1", "z"], ["q1"]),
             node("DequantizeLinear", ["q1", "s1", "z"], ["d1"]),
             node("MaxPool", ["d1"], ["p"], name="pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             node("QuantizeLinear", ["p", "s2", "z"], ["q2"]), node("DequantizeLinear", ["q2", "s2", "z"], ["d2"]),
             node("Conv", ["d2", "w2d"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             node("QuantizeLinear", ["c2", "ys", "z"], ["q3"]), node("DequantizeLinear", ["q3", "ys", "z"], ["y"])]
    return model(nodes, {"x": [1, 6, 9, 9]}, ["y"], inits, opset=19)


@needs_vnni
def test_the_int8_region_stays_nhwc():
    g, changed = run_pass(_conv_pool_conv(), _lowered)
    assert changed
    assert ops(g) == ["QuantizeLinear", "ge::QLinearConv", "ge::QMaxPool", "ge::QLinearConv", "DequantizeLinear"]
    conv1, pool, conv2 = g.nodes[1:4]
    assert (conv1.attrs["x_layout"], conv1.attrs["y_layout"]) == ("NCHW", "NHWC")
    assert (conv2.attrs["x_layout"], conv2.attrs["y_layout"]) == ("NHWC", "NCHW")
    assert conv1.outputs[0].shape == (1, 9, 9, 8) and pool.outputs[0].shape == (1, 5, 5, 8)
    assert pool.inputs[1].const.shape == (256,)   # another scale after the pool: a table
    assert conv2.outputs[0].name == "q3" and conv2.outputs[0].shape == (1, 4, 5, 5)


@needs_vnni
def test_an_output_inside_the_region_gets_a_trans_data():
    m = _conv_pool_conv()
    m.graph.output.append(helper.make_empty_tensor_value_info("q2"))
    g, _ = run_pass(m, _lowered)
    back = [n for n in g.nodes if n.op_type == "TransData"]
    assert [(n.attrs["dst_format"], n.outputs[0].name) for n in back] == [("NCHW", "q2")]
    assert g.outputs[1].dtype == np.int8 and g.outputs[1].shape == (1, 8, 5, 5)


def _quantized(d, nodes, w, shape):
    """The float graph quantized by onnxruntime (QDQ, per-channel int8 weights, 2 calibration inputs), with
    every QuantizeLinear result a graph output."""
    import onnx
    quantization = pytest.importorskip("onnxruntime.quantization")
    g = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", 1, shape)],
                          [helper.make_tensor_value_info("y", 1, None)],
                          [numpy_helper.from_array(v, k) for k, v in w.items()])
    f, q = str(d / "f32.onnx"), str(d / "qdq.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=7), f)
    feeds = iter([{"x": R.standard_normal(shape).astype(f32)} for _ in range(2)])

    class Calibration(quantization.CalibrationDataReader):
        def get_next(self):
            return next(feeds, None)
    quantization.quantize_static(f, q, Calibration(), quant_format=quantization.QuantFormat.QDQ, per_channel=True)
    m = onnx.load(q)
    for n in m.graph.node:
        if n.op_type == "QuantizeLinear" and n.output[0] not in {o.name for o in m.graph.output}:
            m.graph.output.append(helper.make_empty_tensor_value_info(n.output[0]))
    return m


@pytest.fixture(scope="module")
def small_cnn(tmp_path_factory):
    """A float CNN quantized by onnxruntime: conv, pool, fire-like concat, residual add + relu."""
    w = {k: (R.standard_normal(s) * 0.3).astype(f32) for k, s in
         (("w1", (8, 3, 3, 3)), ("w2", (8, 8, 3, 3)), ("w3", (4, 8, 1, 1)), ("w4", (12, 12, 1, 1)),
          ("w5", (5, 12, 1, 1)))}
    nodes = [node("Conv", ["x", "w1"], ["a0"], pads=[1, 1, 1, 1]), node("Relu", ["a0"], ["a"]),
             node("MaxPool", ["a"], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             node("Conv", ["p", "w2"], ["b0"], pads=[1, 1, 1, 1]), node("Relu", ["b0"], ["b"]),
             node("Conv", ["p", "w3"], ["c0"]), node("Relu", ["c0"], ["c"]),
             node("Concat", ["b", "c"], ["cat"], axis=1), node("Conv", ["cat", "w4"], ["e"]),
             node("Add", ["e", "cat"], ["s0"]), node("Relu", ["s0"], ["s"]), node("Conv", ["s", "w5"], ["y"])]
    return _quantized(tmp_path_factory.mktemp("nhwc_int8"), nodes, w, [1, 3, 11, 13])


@pytest.fixture(scope="module")
def mobile_block(tmp_path_factory):
    """MobileNetV2's blocks quantized by onnxruntime: 1x1 expand, ReLU6 (Clip, which the quantizer drops),
    depthwise 3x3 at stride 1 with the residual Add, then one at stride 2 and a 1x1 projection; 20
    channels (the image's C4 = C) and 10 (C4 = 12)."""
    w = {k: (R.standard_normal(s) * 0.3).astype(f32) for k, s in
         (("w1", (20, 10, 1, 1)), ("w2", (20, 1, 3, 3)), ("w3", (10, 20, 1, 1)), ("w4", (10, 1, 3, 3)),
          ("w5", (6, 10, 1, 1)))}
    w.update({"lo": f32(0), "hi": f32(6)})
    nodes = [node("Conv", ["x", "w1"], ["e0"]), node("Clip", ["e0", "lo", "hi"], ["e"]),
             node("Conv", ["e", "w2"], ["d0"], group=20, pads=[1, 1, 1, 1]), node("Clip", ["d0", "lo", "hi"], ["d"]),
             node("Conv", ["d", "w3"], ["p"]), node("Add", ["p", "x"], ["r"]),
             node("Conv", ["r", "w4"], ["s0"], group=10, strides=[2, 2], pads=[1, 1, 1, 1]),
             node("Clip", ["s0", "lo", "hi"], ["s"]), node("Conv", ["s", "w5"], ["y"])]
    return _quantized(tmp_path_factory.mktemp("mobile_int8"), nodes, w, [1, 10, 9, 11])


@needs_vnni
def test_same_bits_as_the_nchw_int8_path(small_cnn):
    x = {"x": R.standard_normal((1, 3, 11, 13)).astype(f32)}
    on = ge.compile(small_cnn, ge.Options(aicore_num=2))
    kinds = {n.op_type for n in on.nodes}
    assert {"QMaxPool", "QConcat", "QAdd"} <= kinds and not kinds & {"MaxPool", "Concat", "Add", "Relu"}
    off = ge.compile(small_cnn, ge.Options(aicore_num=2, disabled_passes=("nhwc_int8",)))
    assert "TransData" not in {n.op_type for n in off.nodes}
    want = ge.Session(off, runtime="v1").run(None, x)
    one = ge.compile(small_cnn, ge.Options(aicore_num=1))
    for sess in (ge.Session(on, runtime="v1"), ge.Session(on, runtime="v2"), ge.Session(one, runtime="v1")):
        for o, a, b in zip(small_cnn.graph.output, sess.run(None, x), want):
            np.testing.assert_array_equal(a, b, err_msg=o.name)


def test_depthwise_convs_join_the_region(mobile_block):
    """Both depthwise convs read and write images (kernels/conv_depthwise_int8.py); every 8-bit value has the bits
    of the NCHW int8 path (the int16 im2col GEMM for them), on both runtimes and 1 or 2 AI cores, and of
    onnxruntime's int8 run except after the residual Add (its QLinearAdd's own float32 formula: 1 step)."""
    x = {"x": R.standard_normal((1, 10, 9, 11)).astype(f32)}
    on = ge.compile(mobile_block, ge.Options(aicore_num=2))
    dws = [n for n in on.nodes if n.op_type == "QLinearConv" and n.attrs.get("group", 1) > 1]
    assert len(dws) == 2 and all(n.attrs["x_layout"] == n.attrs["y_layout"] == "NHWC" for n in dws)
    assert "QAdd" in {n.op_type for n in on.nodes}
    off = ge.compile(mobile_block, ge.Options(aicore_num=2, disabled_passes=("nhwc_int8",)))
    want = ge.Session(off, runtime="v1").run(None, x)
    one = ge.compile(mobile_block, ge.Options(aicore_num=1))
    for sess in (ge.Session(on, runtime="v1"), ge.Session(on, runtime="v2"), ge.Session(one, runtime="v1")):
        for o, a, b in zip(mobile_block.graph.output, sess.run(None, x), want):
            np.testing.assert_array_equal(a, b, err_msg=o.name)
    ort = pytest.importorskip("onnxruntime")
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    theirs = ort.InferenceSession(mobile_block.SerializeToString(), so).run(None, x)
    for o, a, b in zip(mobile_block.graph.output, want, theirs):
        tol = 1 if a.dtype != f32 else 1e-5 + np.abs(b).max() * 1e-2
        assert np.abs(a.astype(np.float64) - b).max() <= tol, o.name
