import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from op_check import check_op, make_model, run_ge

rng = np.random.default_rng(0)
F32 = np.float32
COORDS = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric"]


def resize(x, scales=None, sizes=None, roi=None, opset=19, **attrs):
    inputs = [x, None if roi is None else np.array(roi, F32),
              None if scales is None else np.array(scales, F32),
              None if sizes is None else np.array(sizes, np.int64)]
    while inputs[-1] is None:
        inputs.pop()
    return check_op("Resize", inputs, attrs, opset=opset, const_inputs=(1, 2, 3))


X = rng.standard_normal((1, 2, 4, 5)).astype(F32)


@pytest.mark.parametrize("coord", COORDS + ["tf_half_pixel_for_nn"])
@pytest.mark.parametrize("nearest_mode", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
@pytest.mark.parametrize("scales", [[1, 1, 2, 3], [1, 1, 0.5, 0.6], [1, 1, 1.7, 1.0]])
def test_nearest(coord, nearest_mode, scales):
    if coord == "tf_half_pixel_for_nn":  # opset 11-12 only; onnx.reference does not know it: onnxruntime
        ort = pytest.importorskip("onnxruntime")
        node = helper.make_node("Resize", ["x", "roi", "scales"], ["y"], mode="nearest",
                                coordinate_transformation_mode=coord, nearest_mode=nearest_mode)
        graph = helper.make_graph([node], "resize", [helper.make_tensor_value_info("x", TensorProto.FLOAT, X.shape)],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                                  [numpy_helper.from_array(np.zeros(0, F32), "roi"),
                                   numpy_helper.from_array(np.array(scales, F32), "scales")])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
        model.ir_version = 7
        want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": X})
        np.testing.assert_array_equal(run_ge(model, {"x": X})[0], want[0])
        return
    resize(X, scales, mode="nearest", coordinate_transformation_mode=coord, nearest_mode=nearest_mode)


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("coord", COORDS)
@pytest.mark.parametrize("scales,sizes", [([1, 1, 2, 1.5], None), ([1, 1, 0.6, 0.5], None),
                                          (None, [1, 2, 3, 9]), (None, [2, 1, 4, 5])])
def test_linear_cubic(mode, coord, scales, sizes):
    resize(X, scales, sizes, mode=mode, coordinate_transformation_mode=coord)


@pytest.mark.parametrize("a,exclude", [(-0.5, 1), (-0.75, 0), (-0.6, 1)])
def test_cubic_options(a, exclude):
    resize(X, [1, 1, 1.6, 0.7], mode="cubic", cubic_coeff_a=a, exclude_outside=exclude)


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("scales", [[1, 1, 0.6, 0.5], [1, 1, 0.3, 1.6]])
def test_antialias(mode, scales):
    resize(rng.standard_normal((1, 1, 9, 10)).astype(F32), scales, mode=mode, antialias=1)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("extrapolation", [0.0, 10.0])
def test_crop_and_resize(mode, extrapolation):
    resize(X, roi=[0, 0, 0.4, -0.2, 1, 1, 1.3, 0.9], sizes=[1, 2, 3, 4], mode=mode,
           coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=extrapolation)


@pytest.mark.parametrize("axes", [[2, 3], [3, 2], [3], [1]])
@pytest.mark.parametrize("policy", ["stretch", "not_larger", "not_smaller"])
def test_axes_and_aspect(axes, policy):
    sizes = [7, 3][:len(axes)]
    resize(X, sizes=sizes, axes=axes, keep_aspect_ratio_policy=policy, mode="linear")


@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float64])
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_dtypes(dtype, mode):
    x = rng.integers(0, 255, (2, 3, 5)).astype(dtype)
    resize(x, [1, 1.5, 0.8], mode=mode)


def test_three_resized_axes():
    resize(rng.standard_normal((3, 4, 5)).astype(F32), [1.5, 0.5, 2], mode="linear")


def test_opset11_empty_roi_and_scales():
    check_op("Resize", [X, np.zeros(0, F32), np.zeros(0, F32), np.array([1, 2, 7, 3], np.int64)],
             {"mode": "linear"}, opset=11, const_inputs=(1, 2, 3))


@pytest.mark.parametrize("opset", [7, 9])
def test_upsample(opset):
    scales = [1, 1, 2, 3]
    inputs = [X] if opset < 9 else [X, np.array(scales, F32)]
    model, feeds = make_model("Upsample", inputs, {"mode": "nearest", **({"scales": scales} if opset < 9 else {})},
                              opset=opset, const_inputs=(1,))
    want = X.repeat(2, axis=2).repeat(3, axis=3)
    np.testing.assert_array_equal(run_ge(model, feeds)[0], want)


def test_upsample_linear_is_asymmetric():
    model, feeds = make_model("Upsample", [X, np.array([1, 1, 2, 2], F32)], {"mode": "linear"}, opset=9,
                              const_inputs=(1,))
    got = run_ge(model, feeds)[0]
    want = resize(X, [1, 1, 2, 2], mode="linear", coordinate_transformation_mode="asymmetric")[0]
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("scales", [[1, 1, 1.5, 2.3], [1, 1, 0.5, 0.7]])
def test_opset10_matches_onnxruntime(mode, scales):  # the oracle has no opset-10 semantics
    ort = pytest.importorskip("onnxruntime")
    model, feeds = make_model("Resize", [X, np.array(scales, F32)], {"mode": mode}, opset=10, const_inputs=(1,))
    model.graph.output[0].type.tensor_type.elem_type = 1  # float, so onnxruntime accepts the model
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    np.testing.assert_allclose(run_ge(model, feeds)[0], want, rtol=1e-5, atol=1e-6)
