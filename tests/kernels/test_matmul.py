"""Gemm, MatMul and ge::FusedGemm / ge::FusedMatMul against onnx.reference (fused ops: the plain op's
reference + the numpy activation from test_conv)."""
import numpy as np
import pytest
from op_check import check_op, make_model, run_ge
from test_conv import ACTS, check_fused

rng = np.random.default_rng(1)


def rand(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("trans_a", [0, 1])
@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("c_shape", [None, (), (1,), (5,), (1, 5), (4, 1), (4, 5)])
def test_gemm(trans_a, trans_b, c_shape):
    a = rand(6, 4) if trans_a else rand(4, 6)
    b = rand(5, 6) if trans_b else rand(6, 5)
    inputs = [a, b] + ([] if c_shape is None else [rand(*c_shape)])
    check_op("Gemm", inputs, {"transA": trans_a, "transB": trans_b, "alpha": 0.7, "beta": -1.3})


def test_gemm_opset7_float64_vector():
    check_op("Gemm", [rand(1, 8, dtype=np.float64), rand(3, 8, dtype=np.float64), rand(3, dtype=np.float64)],
             {"transB": 1}, opset=7)


@pytest.mark.parametrize("sa,sb", [
    ((3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
    ((2, 3, 4), (4, 5)),          # one shared B: batches fold into rows
    ((3, 4), (2, 4, 5)),          # shared A
    ((2, 1, 3, 4), (1, 3, 4, 2)),  # broadcast batch dims
    ((5,), (2, 3, 5, 1)), ((2, 3, 1, 5), (5,)),
    ((2, 0, 4), (4, 3)), ((2, 3, 0), (0, 4)),
])
def test_matmul(sa, sb):
    check_op("MatMul", [rand(*sa), rand(*sb)])


def test_matmul_float64():
    check_op("MatMul", [rand(2, 3, 4, dtype=np.float64), rand(2, 4, 2, dtype=np.float64)])


@pytest.mark.parametrize("act,params", ACTS)
def test_fused_gemm(act, params):
    inputs = [rand(3, 5), rand(4, 5), rand(4)]
    check_fused("Gemm", "FusedGemm", inputs, {"transB": 1, "alpha": 0.5}, act, params)


@pytest.mark.parametrize("act,params", ACTS[1:4])
def test_fused_matmul(act, params):
    check_fused("MatMul", "FusedMatMul", [rand(2, 3, 5), rand(2, 5, 4)], {}, act, params)


def test_matmul_mismatch():
    from ge.errors import ShapeError
    with pytest.raises(ShapeError, match="inner dimensions"):
        run_ge(*make_model("MatMul", [rand(3, 4), rand(5, 2)]))


@pytest.mark.parametrize("sa,sb,sc", [((2, 3, 5), (5, 4), (4,)), ((7, 5), (5, 40), (1, 40)), ((2, 3, 5), (2, 5, 1), (1,))])
def test_fused_matmul_bias(sa, sb, sc):
    """FusedMatMul's third input: a bias row (fuse_activation's MatMul + Add), then the activation."""
    from test_conv import numpy_act
    a, b, c = rand(*sa), rand(*sb), rand(*sc)
    model, feeds = make_model("FusedMatMul", [a, b, c], {"activation": "Relu"}, domain="ge")
    (got,) = run_ge(model, feeds)
    (tiled,) = run_ge(model, feeds, cores=3)
    np.testing.assert_allclose(got, numpy_act(np.matmul(a, b) + c, "Relu", []), rtol=1e-5, atol=1e-5)
    assert np.array_equal(got, tiled)


def test_fused_matmul_bias_that_is_no_row_is_a_shape_error():
    from ge.errors import ShapeError
    with pytest.raises(ShapeError, match="bias of shape"):
        run_ge(*make_model("FusedMatMul", [rand(3, 4), rand(4, 5), rand(3, 5)], domain="ge"))
