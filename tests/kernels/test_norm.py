"""Normalization and softmax-family kernels against the ONNX reference (numpy where it is wrong)."""
import numpy as np
import pytest
from op_check import check_op, make_model, run_ge
from ort_oracle import check_ort

from ge.errors import ShapeError

rng = np.random.default_rng(0)


def _x(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def _run(op, inputs, attrs=None, opset=17, n_outputs=1):
    model, feeds = make_model(op, inputs, attrs, opset, n_outputs=n_outputs)
    return run_ge(model, feeds)


# -- softmax family ---------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_softmax_family(op, axis):
    check_op(op, [_x(3, 4, 40) * 5], {"axis": axis}, opset=13)
    # before opset 13 the input is coerced to 2-D at axis; the reference evaluator does not do that
    check_ort(op, [_x(3, 4, 40) * 5], {"axis": axis}, opset=11)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
def test_softmax_defaults_and_float64(op):
    check_ort(op, [_x(2, 3, 5)], opset=11)
    check_op(op, [_x(2, 3, 5)], opset=13)
    check_op(op, [_x(2, 3, 5, dtype=np.float64)], opset=13, rtol=1e-12, atol=1e-12)


def test_softmax_extremes():
    x = np.array([[1000.0, 0.0, -1000.0, -np.inf], [-np.inf, 3.0, 3.0, 1.0]], np.float32)
    check_op("Softmax", [x], opset=13)
    check_op("LogSoftmax", [x[1:, 1:]], opset=13)
    check_op("Hardmax", [x], opset=13)  # ties: the first maximum


# -- BatchNormalization -----------------------------------------------------------------------------

def _bn_params(c):
    return [_x(c), _x(c), _x(c), rng.random(c).astype(np.float32) + 0.5]


@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 5), (2, 3, 4, 5), (1, 2, 3, 4, 5)])
def test_batchnorm_inference(shape):
    inputs = [_x(*shape)] + _bn_params(shape[1])
    check_op("BatchNormalization", inputs, {"epsilon": 1e-3}, opset=15)
    check_ort("BatchNormalization", inputs, {"epsilon": 1e-3}, opset=9)  # the reference trains at 9


@pytest.mark.parametrize("spatial", [1, 0])
def test_batchnorm_opset7(spatial):  # the reference treats opset 7 as training: compare with numpy
    x = _x(2, 3, 4, 5)
    pshape = (3,) if spatial else (3, 4, 5)
    s, b, m = _x(*pshape), _x(*pshape), _x(*pshape)
    v = rng.random(pshape).astype(np.float32) + 0.5
    (y,) = _run("BatchNormalization", [x, s, b, m, v], {"spatial": spatial}, opset=7)
    r = (lambda a: a.reshape(-1, 1, 1)) if spatial else (lambda a: a)
    np.testing.assert_allclose(y, (x - r(m)) / np.sqrt(r(v) + 1e-5) * r(s) + r(b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n_outputs", [1, 3])
def test_batchnorm_training(n_outputs):
    x = _x(4, 3, 5, 6)
    check_op("BatchNormalization", [x] + _bn_params(3), {"training_mode": 1, "momentum": 0.8}, opset=15,
             n_outputs=n_outputs)


# -- Layer / Instance / Group normalization ---------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, -1, -2])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("n_outputs", [1, 3])
def test_layernorm(axis, bias, n_outputs):
    x = _x(2, 3, 40)
    norm_shape = x.shape[axis % 3:]
    inputs = [x, _x(*norm_shape)] + ([_x(*norm_shape)] if bias else [])
    check_op("LayerNormalization", inputs, {"axis": axis, "epsilon": 1e-3}, opset=17, n_outputs=n_outputs)


def test_layernorm_broadcast_scale_is_unsupported():
    with pytest.raises(ShapeError, match="normalized shape"):
        _run("LayerNormalization", [_x(2, 3, 4), _x(4), _x(4)], {"axis": 1})


@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 4, 5), (1, 2, 3, 4, 5)])
def test_instancenorm(shape):
    check_op("InstanceNormalization", [_x(*shape), _x(shape[1]), _x(shape[1])], {"epsilon": 1e-3})


@pytest.mark.parametrize("opset,groups", [(18, 2), (18, 6), (21, 3), (21, 1)])
def test_groupnorm(opset, groups):
    x = _x(2, 6, 4, 5)
    n = groups if opset < 21 else 6  # scale/bias: per group before opset 21, per channel since
    check_op("GroupNormalization", [x, _x(n), _x(n)], {"num_groups": groups}, opset=opset, atol=1e-4)


# -- LRN, LpNormalization, MeanVarianceNormalization ------------------------------------------------

@pytest.mark.parametrize("size,beta", [(1, 0.75), (2, 0.5), (3, 0.75), (5, 0.75), (4, 1.3)])
def test_lrn(size, beta):  # the reference loops over the batch, not the channels: use numpy
    x = _x(2, 7, 3, 4)
    alpha, bias = 1e-2, 1.5
    (y,) = _run("LRN", [x], {"size": size, "alpha": alpha, "beta": beta, "bias": bias}, opset=13)
    sq = np.zeros_like(x)
    for c in range(7):
        lo, hi = max(0, c - (size - 1) // 2), min(7, c + (size - 1) - (size - 1) // 2 + 1)
        sq[:, c] = (x[:, lo:hi] ** 2).sum(axis=1)
    np.testing.assert_allclose(y, x / (bias + alpha / size * sq) ** beta, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_lp_normalization(p, axis):
    x = _x(3, 4, 5)
    x[0, 0] = 0  # zero norms give 0
    (y,) = _run("LpNormalization", [x], {"p": p, "axis": axis})
    norm = np.linalg.norm(x, ord=p, axis=axis, keepdims=True) if p == 2 else \
        np.abs(x).sum(axis=axis, keepdims=True)  # the reference forgets abs for p=1
    np.testing.assert_allclose(y, np.where(norm == 0, 0, x / np.where(norm == 0, 1, norm)), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("axes", [None, [0, 2, 3], [1], [2, 3], [0, 1, 2, 3]])
def test_mvn(axes):
    attrs = {} if axes is None else {"axes": axes}
    check_op("MeanVarianceNormalization", [_x(2, 3, 4, 5)], attrs, opset=13, atol=1e-4)
