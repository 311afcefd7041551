"""Pooling kernels against the ONNX reference (and a direct numpy LpPool where the reference differs)."""
import itertools

import numpy as np
import pytest
from op_check import check_op, make_model, run_ge
from ort_oracle import check_ort

from ge.errors import ShapeError

rng = np.random.default_rng(0)


def _x(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


WINDOWS = [  # (input shape, attributes)
    ((1, 2, 9), dict(kernel_shape=[3])),
    ((1, 2, 9), dict(kernel_shape=[2], strides=[2], pads=[1, 0])),
    ((2, 3, 8, 9), dict(kernel_shape=[3, 3])),
    ((2, 3, 8, 9), dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ((1, 2, 7, 11), dict(kernel_shape=[2, 3], strides=[1, 3], pads=[0, 1, 1, 2])),
    ((1, 2, 7, 11), dict(kernel_shape=[3, 2], strides=[2, 1], dilations=[2, 2])),
    ((1, 2, 8, 8), dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    ((1, 2, 9, 7), dict(kernel_shape=[2, 2], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)),
    ((1, 2, 8, 9), dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")),
    ((1, 2, 8, 9), dict(kernel_shape=[4, 2], auto_pad="SAME_LOWER")),
    ((1, 2, 8, 9), dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="VALID")),
    ((1, 2, 20, 20), dict(kernel_shape=[5, 5], strides=[4, 4], pads=[2, 2, 2, 2])),
    ((1, 2, 5, 6, 7), dict(kernel_shape=[2, 3, 2], strides=[2, 1, 2], pads=[1, 1, 0, 0, 1, 1])),
    # rows of several vectors (pool_plane's windows ending in the next vector's columns, or the row's last)
    ((1, 2, 7, 33), dict(kernel_shape=[3, 3], strides=[2, 2])),
    ((1, 2, 7, 38), dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    ((1, 2, 6, 40), dict(kernel_shape=[5, 5], strides=[2, 2], pads=[2, 2, 2, 2])),
    ((1, 2, 5, 32), dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])),
    ((1, 1, 6, 37), dict(kernel_shape=[7, 7], pads=[3, 3, 3, 3])),
]


@pytest.mark.parametrize("shape,attrs", WINDOWS)
def test_maxpool(shape, attrs):
    check_op("MaxPool", [_x(*shape)], attrs, opset=12)


@pytest.mark.parametrize("shape,attrs", WINDOWS)
@pytest.mark.parametrize("include", [0, 1])
def test_averagepool(shape, attrs, include):
    check_op("AveragePool", [_x(*shape)], dict(attrs, count_include_pad=include), opset=19)


@pytest.mark.parametrize("storage_order", [0, 1])
@pytest.mark.parametrize("shape,attrs", [
    ((2, 3, 8, 9), dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ((1, 2, 9), dict(kernel_shape=[3], strides=[2])),
    ((1, 2, 5, 6, 7), dict(kernel_shape=[2, 2, 2], strides=[2, 2, 2])),
])
def test_maxpool_indices(shape, attrs, storage_order):
    # strides != 1: the reference's own MaxPool, which returns Indices
    check_op("MaxPool", [_x(*shape)], dict(attrs, storage_order=storage_order), opset=12, n_outputs=2)


@pytest.mark.parametrize("dtype", [np.uint8, np.float64])
def test_maxpool_dtypes(dtype):
    x = rng.integers(0, 255, (1, 3, 6, 6)).astype(dtype)
    check_op("MaxPool", [x], dict(kernel_shape=[2, 2], pads=[1, 1, 1, 1]), opset=12)


def test_averagepool_ceil_stride3():  # the reference shifts windows here; onnxruntime does not
    check_ort("AveragePool", [_x(1, 2, 10, 11)], dict(kernel_shape=[3, 3], strides=[3, 3], pads=[1, 1, 1, 1],
                                                      ceil_mode=1), opset=19)


def test_maxpool_asymmetric_pads():  # the reference evaluator reads these pads as (h0, h1, w0, w1)
    check_ort("MaxPool", [_x(1, 3, 6, 6)], dict(kernel_shape=[2, 2], pads=[1, 1, 0, 0]), opset=12)


def _lp_pool(x, k, s, p, pads):  # the plain definition: padding contributes zeros
    xp = np.pad(x, [(0, 0), (0, 0)] + [(a, b) for a, b in zip(pads[:len(k)], pads[len(k):])])
    out = [(xp.shape[2 + i] - k[i]) // s[i] + 1 for i in range(len(k))]
    y = np.zeros(x.shape[:2] + tuple(out), x.dtype)
    spatial = tuple(range(2, 2 + len(k)))
    for o in itertools.product(*map(range, out)):
        win = xp[(...,) + tuple(slice(o[i] * s[i], o[i] * s[i] + k[i]) for i in range(len(k)))]
        y[(slice(None), slice(None)) + o] = (np.abs(win) ** p).sum(axis=spatial) ** (1 / p)
    return y


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("k,s,pads", [([3, 3], [1, 1], [0, 0, 0, 0]), ([2, 3], [2, 2], [1, 0, 1, 1]),
                                      ([3], [2], [1, 1])])
def test_lppool(p, k, s, pads):
    x = _x(2, 3, 7, 8) if len(k) == 2 else _x(2, 3, 9)
    model, feeds = make_model("LpPool", [x], dict(kernel_shape=k, strides=s, pads=pads, p=p), opset=18)
    # the reference evaluator rescales padded windows (kernel size / valid count); ONNX's own
    # node cases and onnxruntime use the plain sum, as ge does
    np.testing.assert_allclose(run_ge(model, feeds)[0], _lp_pool(x, k, s, p, pads), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 4, 5), (1, 2, 3, 4, 5), (1, 3, 40, 40)])
def test_global_pool(op, shape):
    check_ort(op, [_x(*shape)])  # the reference's GlobalMaxPool only handles 2 spatial dims


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 4, 5)])
def test_global_lppool(p, shape):
    check_ort("GlobalLpPool", [_x(*shape)], {"p": p})  # not in the reference evaluator


def test_bad_window_is_a_shape_error():
    model, feeds = make_model("MaxPool", [_x(1, 1, 4, 4)], dict(kernel_shape=[3]))
    with pytest.raises(ShapeError, match="spatial dims"):
        run_ge(model, feeds)
