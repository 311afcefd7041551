"""NonZero, Compress, Unique (select.py): outputs sized by input values.

A constant deciding input folds at compile time; a fed one makes the node dynamic: runtime_v2 runs it,
runtime_v1 refuses it naming the node. The kernels are checked against onnx.reference both ways.
"""
import numpy as np
import pytest
from onnx.reference import ReferenceEvaluator
from op_check import check_op, ge_only, make_model

import ge
from ge.errors import GEError, ShapeError
from ge.kernels import KernelContext, TensorSpec, lookup, run_kernel

rng = np.random.default_rng(0)


def run_direct(op, inputs, attrs=None, n_outputs=1, opset=17):
    """The kernel with every input's value known (as runtime_v2 prepares a dynamic node)."""
    ctx = KernelContext(op, "n", dict(attrs or {}), [TensorSpec(x.shape, x.dtype) for x in inputs],
                        list(inputs), opset, n_outputs=n_outputs)
    return run_kernel(lookup(op, "", opset), ctx, list(inputs))


def check_dynamic(op, inputs, attrs=None, n_outputs=1, opset=17, want=None):
    """Fed inputs: the plan is dynamic; runtime_v2 and the kernel match the reference (or `want`)."""
    model, feeds = make_model(op, inputs, attrs, opset, n_outputs=n_outputs)
    if want is None:
        want = ReferenceEvaluator(model).run(None, feeds)
    plan = ge.compile(model)
    assert plan.is_dynamic
    with ge.Session(plan, runtime="v2") as s:
        got = s.run(None, feeds)
    direct = run_direct(op, [np.asarray(x) for x in inputs], attrs, n_outputs, opset)
    for g, d, w in zip(got, direct, want):
        assert g.dtype == w.dtype and g.shape == w.shape, f"{g.dtype}{g.shape} vs {w.dtype}{w.shape}"
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(d, w)
    return plan


@pytest.mark.parametrize("x", [np.array([[1, 0], [1, 1]], bool), rng.integers(-1, 2, (3, 4, 5)).astype(np.int32),
                               np.zeros((2, 3), np.float32), np.array([0.0, -0.0, np.nan, 2.0])])
def test_nonzero(x):
    check_dynamic("NonZero", [x])
    check_op("NonZero", [x], const_inputs=(0,))  # folded at compile time


def test_dynamic_plan_is_refused_by_v1_naming_the_node():
    model, feeds = make_model("NonZero", [np.ones((2, 2), bool)])
    with pytest.raises(GEError, match="runtime='v2'"):
        ge.Session(ge.compile(model), runtime="v1")


@pytest.mark.parametrize("axis,cond", [(0, [0, 1, 1]), (1, [1, 0]), (None, [0, 1, 0, 0, 1]), (-1, [1]),
                                       (0, [0, 0, 0])])
def test_compress(axis, cond):
    x = rng.standard_normal((3, 2)).astype(np.float32)
    attrs = {} if axis is None else {"axis": axis}
    check_dynamic("Compress", [x, np.array(cond, bool)], attrs)
    check_op("Compress", [x, np.array(cond, bool)], attrs, const_inputs=(1,))


def test_compress_bad_condition():
    x = np.ones((3, 2), np.float32)
    with pytest.raises(ShapeError, match="condition has 4 entries"):
        ge_only("Compress", [x, np.ones(4, bool)], {"axis": 0}, const_inputs=(1,))
    with pytest.raises(ShapeError, match="dtype"):
        ge_only("Compress", [x, np.ones(3, np.int64)], {"axis": 0}, const_inputs=(1,))


@pytest.mark.parametrize("sort", [0, 1])
@pytest.mark.parametrize("x,axis", [
    (np.array([2.0, 1.0, 1.0, 3.0, 4.0, 3.0], np.float32), None),
    (np.array([[1, 0, 0], [1, 0, 0], [2, 3, 4]], np.int64), 0),
    (np.array([[[1, 1], [0, 1], [2, 1], [0, 1]], [[1, 1], [0, 1], [2, 1], [0, 1]]], np.float32), 1),
    (np.array([[1, 0, 0], [1, 0, 0], [2, 3, 3]], np.int32), -1),
    (np.array([5], np.int64), None),
    (rng.integers(0, 4, (7, 3)).astype(np.int64), None),
])
def test_unique(x, axis, sort):
    attrs = {"sorted": sort} if axis is None else {"sorted": sort, "axis": axis}
    want = unique_oracle(x, axis, sort)
    check_dynamic("Unique", [x], attrs, n_outputs=4, opset=11, want=want)
    check_dynamic("Unique", [x], attrs, n_outputs=1, opset=11, want=want[:1])  # the rest are workspaces


def unique_oracle(x, axis, sort):
    """The spec's Unique from numpy.unique. onnx.reference is not the oracle here: for sorted=0 it returns
    sorted values when Y is the only output, takes slices along axis 0 whatever the axis, and fails on
    inputs of rank > 1 without an axis."""
    y, first, inverse, counts = np.unique(x, True, True, True, axis=axis)
    inverse = inverse.reshape(-1)
    if not sort:  # groups in order of first occurrence
        order = np.argsort(first, kind="stable")
        pos = np.empty_like(order)
        pos[order] = np.arange(order.size)
        y, first, inverse, counts = np.take(y, order, axis=axis or 0), first[order], pos[inverse], counts[order]
    return [y, first.astype(np.int64), inverse.astype(np.int64), counts.astype(np.int64)]


def test_unique_nan_is_one_value():
    x = np.array([np.nan, 1.0, np.nan, 1.0], np.float64)
    y, first, inverse, counts = run_direct("Unique", [x], n_outputs=4, opset=11)
    assert np.isnan(y[-1]) and y[0] == 1.0 and list(counts) == [2, 2] and list(first) == [1, 0]
    assert list(inverse) == [1, 0, 1, 0]
