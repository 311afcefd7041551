"""float16 / bfloat16 end to end: conversion kernels, a float16 light model against onnxruntime on both
runtimes, bfloat16 through a saved plan, and the bad inputs (a wrong 16-bit feed, types ge lacks)."""
import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
from ge.errors import InputError, ModelLoadError
from ge.kernels import half
from ge.zoo import with_random_weights

BF16 = ml_dtypes.bfloat16
EDGES = [np.nan, np.inf, -np.inf, 0.0, -0.0, 65504, 65519.99, 65520, 1e-8, 5.96e-8, 2.98e-8, 2.99e-8,
         3.4e38, 1e-40, -1e-45, 1.00390625, 1.0078125, 1.01171875]


def _values(n=20000):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n) * 10.0 ** rng.integers(-9, 7, n)
    return np.concatenate([x, EDGES]).astype(np.float32)


@pytest.mark.parametrize("kind,dt", [(half.F16, np.float16), (half.BF16, BF16)], ids=["f16", "bf16"])
def test_conversions_round_to_nearest_even_as_numpy(kind, dt):
    x = _values()
    want = x.astype(dt).view(np.uint16)
    for fn, src in ((half.f32_to_half, x), (half.to_half, x.astype(np.float64))):
        got = np.empty(x.size, np.uint16)
        fn(src, got, kind, 0, 1)
        np.testing.assert_array_equal(got[~np.isnan(x)], want[~np.isnan(x)])
        assert np.isnan(got.view(dt)[np.isnan(x)]).all()
    wide = x.astype(np.float64) * (1 + 1e-9)   # float64 values rounded once, not through float32
    got = np.empty(x.size, np.uint16)
    half.to_half(wide, got, kind, 0, 1)
    np.testing.assert_array_equal(got[~np.isnan(x)], wide.astype(dt).view(np.uint16)[~np.isnan(x)])
    back = np.empty(x.size, np.float32)
    half.from_half(want, back, kind, 0, 1)
    np.testing.assert_array_equal(back, want.view(dt).astype(np.float32))


def to_16bit(model: onnx.ModelProto, code=TensorProto.FLOAT16) -> onnx.ModelProto:
    """The model with every float32 weight, input, output, Cast target and constant in `code`'s type."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g, dt = m.graph, helper.tensor_dtype_to_np_dtype(code)
    for t in g.initializer:
        if t.data_type == TensorProto.FLOAT:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(dt), t.name))
    for v in [*g.input, *g.output]:
        if v.type.tensor_type.elem_type == TensorProto.FLOAT:
            v.type.tensor_type.elem_type = code
    del g.value_info[:]
    for n in g.node:
        for a in n.attribute:
            if a.name == "to" and a.i == TensorProto.FLOAT:
                a.i = code
            if a.type == a.TENSOR and a.t.data_type == TensorProto.FLOAT:
                a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t).astype(dt)))
    return m


@pytest.fixture(scope="module")
def squeezenet16():
    ort = pytest.importorskip("onnxruntime")
    model = to_16bit(with_random_weights("squeezenet"))
    x = np.random.default_rng(1).standard_normal([1, 3, 224, 224]).astype(np.float16)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    s = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return model, x, s.run(None, {s.get_inputs()[0].name: x})[0]


@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_float16_light_model_matches_onnxruntime(squeezenet16, runtime):
    model, x, want = squeezenet16
    sess = ge.Session(model, runtime=runtime)
    got = sess.run(None, {sess.get_inputs()[0].name: x})[0]
    assert got.dtype == np.float16 and got.shape == want.shape
    # squeezenet ends in a softmax (values <= 0.3 here): a few float16 units of rounding apart
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=2e-3)
    assert got.argmax() == want.argmax()
    plan = ge.compile(model)
    assert plan.tensors[plan.inputs[0]].nbytes == x.nbytes   # 2 bytes an element in the plan


def _relu_t(code):
    return helper.make_model(helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Transpose", ["r"], ["y"], perm=[1, 0])], "g",
        [helper.make_tensor_value_info("x", code, [2, 3])], [helper.make_tensor_value_info("y", code, [3, 2])]),
        opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_bfloat16_through_a_saved_plan_and_a_wrong_feed(tmp_path, runtime):
    x = np.array([[-1, 2.5, 3], [4, -5, 6.1]], BF16)
    ge.save(ge.compile(_relu_t(TensorProto.BFLOAT16)), tmp_path / "m.gem")
    sess = ge.Session(str(tmp_path / "m.gem"), runtime=runtime)
    (y,) = sess.run(None, {"x": x})
    assert y.dtype == BF16
    np.testing.assert_array_equal(y, np.maximum(x, 0).T)
    for bad in (x.astype(np.float16), x.astype(np.float32)):
        with pytest.raises(InputError, match="bfloat16"):
            sess.run(None, {"x": bad})


def test_types_ge_lacks_name_the_value():
    m = _relu_t(TensorProto.FLOAT)
    m.graph.initializer.append(numpy_helper.from_array(np.zeros(2, ml_dtypes.float8_e4m3fn), "w8"))
    with pytest.raises(ModelLoadError, match="float8_e4m3fn of initializer .w8."):
        ge.compile(m)
    m = _relu_t(TensorProto.INT4)
    with pytest.raises(ModelLoadError, match="INT4.*'x'"):
        ge.compile(m)


@pytest.mark.parametrize("src,dst", [(np.float32, np.float16), (np.float16, np.float32), (np.float64, BF16),
                                     (BF16, np.float16), (np.int32, np.float16), (np.float16, np.int64)])
def test_cast_kernels_tiled_and_on_both_runtimes(src, dst):
    from op_check import check_op
    x = (np.random.default_rng(2).standard_normal(300_000) * 300).astype(np.float32).astype(src)
    check_op("Cast", [x], {"to": helper.np_dtype_to_tensor_dtype(np.dtype(dst))}, opset=21, rtol=0, atol=0)
