"""GridSample, AffineGrid, RoiAlign, NonMaxSuppression, the spectral ops, Col2Im, DeformConv, MaxUnpool, Det,
BitCast and ImageDecoder beyond ONNX's node cases (tests/test_onnx_node_cases.py runs those): the tiled
kernels for several cores, realistic sizes against onnxruntime, dynamic NMS on both runtimes, bad input.
float32 only and small shapes: each new kernel compiles once."""
import io

import numpy as np
import onnxruntime as ort
import pytest
from op_check import check_op, ge_only, make_model

import ge
from ge.errors import ExecutionError, GEError, ShapeError

R = np.random.default_rng(7)


def _ort(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _ge(model, feeds, runtime="v2"):
    with ge.Session(ge.compile(model), runtime=runtime) as s:
        return s.run(None, feeds)


def _typed(model, elem):
    model.graph.output[0].type.tensor_type.elem_type = elem
    return model


@pytest.mark.parametrize("mode,padding", [("linear", "reflection"), ("cubic", "border")])
def test_grid_sample_tiled(mode, padding):
    x = R.standard_normal((2, 3, 5, 6), dtype=np.float32)
    grid = R.uniform(-1.3, 1.3, (2, 4, 7, 2)).astype(np.float32)
    check_op("GridSample", [x, grid], {"mode": mode, "padding_mode": padding}, opset=22)


def test_grid_sample_bilinear_matches_onnxruntime():
    """A realistic map: 1x8x32x32 sampled on a 48x40 grid reaching past the borders."""
    x = R.standard_normal((1, 8, 32, 32), dtype=np.float32)
    grid = R.uniform(-1.1, 1.1, (1, 48, 40, 2)).astype(np.float32)
    model, feeds = make_model("GridSample", [x, grid], {"mode": "linear", "align_corners": 0}, opset=20)
    model = _typed(model, 1)
    np.testing.assert_allclose(_ge(model, feeds, "v1")[0], _ort(model, feeds)[0], rtol=1e-5, atol=1e-5)


def test_roi_align_tiled():
    x = R.standard_normal((2, 3, 12, 10), dtype=np.float32)
    rois = np.array([[0, 0, 9, 9], [1.5, 2, 7, 11], [3, 1, 4, 3], [-2, -1, 12, 13]], np.float32)
    check_op("RoiAlign", [x, rois, np.array([0, 1, 1, 0], np.int64)],
             {"output_height": 3, "output_width": 4, "sampling_ratio": 0, "spatial_scale": 0.5}, opset=16)


def _nms_inputs(n=200, classes=2):
    xy = R.uniform(0, 100, (1, n, 2)).astype(np.float32)
    wh = R.uniform(5, 30, (1, n, 2)).astype(np.float32)
    boxes = np.concatenate([xy, xy + wh], axis=2)[..., [1, 0, 3, 2]]  # [y1, x1, y2, x2]
    scores = R.uniform(0, 1, (1, classes, n)).astype(np.float32)
    return [boxes, scores, np.array([20], np.int64), np.array([0.4], np.float32), np.array([0.3], np.float32)]


def test_nms_200_boxes_matches_onnxruntime_dynamic_on_v2():
    """Fed boxes make the plan dynamic: runtime_v2 runs it, runtime_v1 refuses it naming the node."""
    model, feeds = make_model("NonMaxSuppression", _nms_inputs(), opset=11)
    model = _typed(model, 7)
    got, want = _ge(model, feeds)[0], _ort(model, feeds)[0]
    assert got.shape[0] == 40
    np.testing.assert_array_equal(got, want)
    with pytest.raises(GEError, match="runtime='v2'"):
        ge.Session(ge.compile(model), runtime="v1")


def test_nms_constant_inputs_fold_and_empty_selection():
    inputs = _nms_inputs(8, 1)
    model, feeds = make_model("NonMaxSuppression", inputs, opset=11, const_inputs=(0, 1, 2, 3, 4))
    assert _ge(model, feeds, "v1")[0].shape[1] == 3
    inputs[2] = np.array([0], np.int64)
    assert ge_only("NonMaxSuppression", inputs, opset=11, const_inputs=(0, 1, 2, 3, 4))[0].shape == (0, 3)


def test_dft_and_stft_match_onnxruntime():
    x = R.standard_normal((2, 24, 3, 2), dtype=np.float32)
    model, feeds = make_model("DFT", [x, np.array(20, np.int64), np.array(1, np.int64)], {"inverse": 1},
                              opset=20, const_inputs=(1, 2))
    np.testing.assert_allclose(_ge(_typed(model, 1), feeds)[0], _ort(model, feeds)[0], rtol=1e-4, atol=1e-5)
    sig = R.standard_normal((2, 100, 1), dtype=np.float32)
    window = np.hanning(16).astype(np.float32)
    model, feeds = make_model("STFT", [sig, np.array(6, np.int64), window], opset=17, const_inputs=(1,))
    np.testing.assert_allclose(_ge(_typed(model, 1), feeds)[0], _ort(model, feeds)[0], rtol=1e-4, atol=1e-4)


def test_deform_conv_groups_and_strides_match_onnxruntime():
    x = R.standard_normal((1, 4, 7, 6), dtype=np.float32)
    w = R.standard_normal((6, 2, 3, 3), dtype=np.float32)
    off = R.uniform(-2, 2, (1, 2 * 2 * 9, 4, 3)).astype(np.float32)
    b, mask = R.standard_normal(6, dtype=np.float32), R.uniform(0, 1, (1, 2 * 9, 4, 3)).astype(np.float32)
    model, feeds = make_model("DeformConv", [x, w, off, b, mask], {
        "group": 2, "offset_group": 2, "strides": [2, 2], "pads": [1, 1, 1, 0], "dilations": [1, 1]}, opset=22)
    np.testing.assert_allclose(_ge(_typed(model, 1), feeds)[0], _ort(model, feeds)[0], rtol=1e-4, atol=1e-4)


def test_affine_grid_then_grid_sample_3d():
    theta = R.standard_normal((2, 3, 4)).astype(np.float32) * 0.5
    check_op("AffineGrid", [theta, np.array([2, 1, 3, 4, 5], np.int64)], {"align_corners": 1}, opset=20,
             const_inputs=(1,))
    x = R.standard_normal((1, 2, 3, 4, 5), dtype=np.float32)
    check_op("GridSample", [x, R.uniform(-1, 1, (1, 2, 3, 2, 3)).astype(np.float32)],
             {"mode": "nearest", "padding_mode": "reflection", "align_corners": 1}, opset=22)


def test_image_decoder_png_from_pillow():
    pil = pytest.importorskip("PIL.Image")
    img = R.integers(0, 256, (5, 7, 3), dtype=np.uint8)
    buf = io.BytesIO()
    pil.fromarray(img).save(buf, format="PNG")
    data = np.frombuffer(buf.getvalue(), np.uint8).copy()
    model, feeds = make_model("ImageDecoder", [data], {"pixel_format": "BGR"}, opset=20)
    np.testing.assert_array_equal(_ge(model, feeds)[0], img[:, :, ::-1])
    with pytest.raises(ExecutionError, match="cannot decode"):
        _ge(model, {"x0": np.zeros_like(data)})


@pytest.mark.parametrize("op,inputs,attrs,opset,match", [
    ("GridSample", [np.zeros((1, 1, 4, 4), np.float32), np.zeros((1, 3, 3, 3), np.float32)], {}, 22, "grid"),
    ("GridSample", [np.zeros((1, 1, 4, 4), np.float32), np.zeros((1, 3, 3, 2), np.float32)],
     {"mode": "area"}, 22, "mode 'area'"),
    ("BitCast", [np.zeros(3, np.float32)], {"to": 7}, 26, "one width"),
    ("Det", [np.zeros((2, 3), np.float32)], {}, 22, "square"),
    ("NonMaxSuppression", [np.zeros((1, 4, 3), np.float32), np.zeros((1, 1, 4), np.float32)], {}, 11, "boxes"),
    ("DeformConv", [np.zeros((1, 1, 3, 3, 3), np.float32), np.zeros((1, 1, 2, 2, 2), np.float32),
                    np.zeros((1, 24, 2, 2, 2), np.float32)], {}, 22, "2-D"),
    ("MaxUnpool", [np.zeros((1, 1, 2, 2), np.float32), np.zeros((1, 1, 2, 2), np.int64),
                   np.array([1, 1, 3, 3], np.int64)], {"kernel_shape": [2, 2], "strides": [2, 2]}, 22, "smaller"),
])
def test_bad_input_is_a_shape_error(op, inputs, attrs, opset, match):
    with pytest.raises(ShapeError, match=match):
        ge_only(op, inputs, attrs, opset=opset, const_inputs=tuple(range(1, len(inputs))))


def test_col2im_inconsistent_blocks_and_det_values():
    with pytest.raises(ShapeError, match="blocks"):
        ge_only("Col2Im", [np.zeros((1, 4, 5), np.float32), np.array([3, 3], np.int64), np.array([2, 2], np.int64)],
                opset=18, const_inputs=(1, 2))
    m = R.standard_normal((4, 5, 5)).astype(np.float32)
    m[1, 3] = m[1, 0]  # singular
    got = check_op("Det", [m], opset=22, rtol=1e-4, atol=1e-4)[0]
    assert abs(got[1]) < 1e-5
