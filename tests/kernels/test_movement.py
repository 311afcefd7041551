import numpy as np
import pytest
from op_check import check_op, make_model, run_ge

from ge.errors import ShapeError

rng = np.random.default_rng(0)
I64 = np.int64


def data(shape, dtype=np.float32):
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) > 0.5
    return (rng.standard_normal(shape) * 10).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8, np.bool_])
@pytest.mark.parametrize("shape,perm", [((2, 3, 4), None), ((2, 3, 4, 5), [0, 2, 3, 1]),
                                        ((2, 1, 4), [1, 0, 2]), ((5,), [0]), ((3, 4, 2), [2, 0, 1])])
def test_transpose(dtype, shape, perm):
    check_op("Transpose", [data(shape, dtype)], {} if perm is None else {"perm": perm})


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,perm", [((1, 40, 7, 5), [0, 2, 3, 1]),        # NCHW -> NHWC, 35 x 40
                                        ((2, 9, 4, 33), [0, 3, 1, 2]),        # NHWC -> NCHW, batch 2
                                        ((64, 16), [1, 0]), ((17, 1, 100), [2, 1, 0])])
def test_transpose_in_register_blocks(dtype, shape, perm):
    """Swaps of two axis groups (transpose2d.py): whole blocks, the rows and columns past them, tiled too."""
    from ge.kernels.movement import _prepare_transpose
    from ge.kernels.registry import KernelContext, TensorSpec
    from ge.kernels.transpose2d import transpose2d
    ctx = KernelContext("Transpose", "t", {"perm": perm}, [TensorSpec(shape, np.dtype(dtype))], [None], 17)
    assert _prepare_transpose(ctx).fn is transpose2d
    check_op("Transpose", [data(shape, dtype)], {"perm": perm})


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("n", [1, 2, 4])
def test_concat(axis, n):
    xs = [data((2, 1 + i, 3) if axis == 1 else (2, 3, 1 + i) if axis == -1 else (1 + i, 3, 3))
          for i in range(n)]
    check_op("Concat", xs, {"axis": axis})


def test_concat_int_and_empty():
    check_op("Concat", [data((2, 0), I64), data((2, 3), I64)], {"axis": 1})


@pytest.mark.parametrize("opset,attrs,split,n", [
    (11, {"axis": 1}, None, 3), (11, {"axis": 1, "split": [1, 4, 1]}, None, 3),
    (13, {"axis": -2}, [2, 0, 4], 3), (18, {"axis": 1, "num_outputs": 4}, None, 4),
    (18, {"axis": 0}, None, 2)])
def test_split(opset, attrs, split, n):
    x = data((4, 6, 2))
    inputs = [x] if split is None else [x, np.array(split, I64)]
    check_op("Split", inputs, attrs, opset=opset, n_outputs=n, const_inputs=(1,))


@pytest.mark.parametrize("starts,ends,axes,steps", [
    ([1, 0], [3, 10], None, None), ([-1], [-100], [1], [-1]), ([0, 5], [-1, 1], [0, 2], [2, -2]),
    ([10], [20], [1], [1]), ([-2, 3], [2**63 - 1, 0], [-1, 0], [1, -1])])
def test_slice(starts, ends, axes, steps):
    x = data((4, 5, 6))
    inputs = [x, np.array(starts, I64), np.array(ends, I64)]
    if axes is not None:
        inputs.append(np.array(axes, I64))
    if steps is not None:
        inputs.append(np.array(steps, I64))
    check_op("Slice", inputs, const_inputs=(1, 2, 3, 4))


def test_slice_opset9_attrs():
    check_op("Slice", [data((3, 4), np.int32)], {"starts": [1, -3], "ends": [3, 100], "axes": [0, 1]}, opset=9)


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
@pytest.mark.parametrize("pads", [[1, 2, 0, 3], [0, 0, 2, 1], [5, 0, 0, 7]])
def test_pad(mode, pads):
    x = data((3, 4), np.int32)
    check_op("Pad", [x, np.array(pads, I64), np.array(7, np.int32)], {"mode": mode},
             opset=19, const_inputs=(1, 2))


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_pad_negative_crops(mode):  # the oracle cannot crop: pad the kept part instead
    x = data((3, 4), np.int32)
    want = np.pad(x[1:, :2], [(0, 1), (1, 0)], mode=mode, **({"constant_values": 7} if mode == "constant" else {}))
    model, feeds = make_model("Pad", [x, np.array([-1, 1, 1, -2], I64), np.array(7, np.int32)], {"mode": mode},
                              opset=19, const_inputs=(1, 2))
    np.testing.assert_array_equal(run_ge(model, feeds)[0], want)


def test_pad_axes_and_old_opset():
    x = data((2, 3, 4))
    check_op("Pad", [x, np.array([1, 2, 0, 1], I64), None, np.array([-1, 0], I64)],
             {"mode": "reflect"}, opset=18, const_inputs=(1, 3))
    check_op("Pad", [x], {"pads": [0, 1, 1, 0, 0, 2], "value": 1.5}, opset=2)


@pytest.mark.parametrize("shape,target", [((3, 1), (2, 1, 6)), ((1,), (4,)), ((2, 3), (2, 3)), ((4, 1), (1,))])
def test_expand(shape, target):
    check_op("Expand", [data(shape, np.bool_), np.array(target, I64)], const_inputs=(1,))


@pytest.mark.parametrize("reps", [[2, 1, 3], [1, 1, 1], [0, 2, 1]])
def test_tile(reps):
    check_op("Tile", [data((2, 3, 2), np.uint8), np.array(reps, I64)], const_inputs=(1,))


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_space(mode):
    check_op("DepthToSpace", [data((2, 8, 3, 2))], {"blocksize": 2, "mode": mode})
    check_op("SpaceToDepth", [data((2, 2, 4, 6))], {"blocksize": 2})


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, -1, 2, 9])
def test_trilu(upper, k):
    x = data((2, 3, 4), np.float32)
    check_op("Trilu", [x] if k is None else [x, np.array(k, I64)], {"upper": upper}, const_inputs=(1,))


@pytest.mark.parametrize("idx_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("axis,idx_shape", [(0, (2, 2)), (1, (3,)), (-1, ()), (2, (1, 4))])
def test_gather(idx_dtype, axis, idx_shape):
    x = data((3, 4, 5), np.int64)
    n = x.shape[axis]
    check_op("Gather", [x, rng.integers(-n, n, idx_shape).astype(idx_dtype)], {"axis": axis})


def test_gather_out_of_range():
    with pytest.raises(IndexError):
        check_op("Gather", [data((3, 2)), np.array([3], I64)])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements(axis):
    x = data((3, 4, 2))
    shape = [3, 4, 2]
    shape[axis] = 3 - (axis == -1)
    idx = rng.integers(-x.shape[axis], x.shape[axis], shape).astype(I64)
    check_op("GatherElements", [x, idx], {"axis": axis})


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_elements(reduction):
    x = data((4, 3))
    idx = np.array([[1, 0, 2], [3, 0, -1]], I64)
    check_op("ScatterElements", [x, idx, data((2, 3))], {"axis": 0, "reduction": reduction}, opset=18)


def test_scatter_old():  # the oracle has no Scatter: same as ScatterElements
    args = [data((3, 3)), np.array([[1, 0]], I64), data((1, 2))]
    want = check_op("ScatterElements", args, {"axis": 1}, opset=11)
    np.testing.assert_array_equal(run_ge(*make_model("Scatter", args, {"axis": 1}, opset=10))[0], want[0])


@pytest.mark.parametrize("b,idx", [(0, [[0, 1], [2, 0]]), (0, [[1], [-1]]), (1, [[1], [0], [-1]]), (0, [[[0, 1, 1]]])])
def test_gather_nd(b, idx):
    check_op("GatherND", [data((3, 2, 2), np.int32), np.array(idx, I64)], {"batch_dims": b})


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_nd(reduction):
    x = data((4, 2, 3))
    idx = np.array([[1], [3], [1]], I64) if reduction != "none" else np.array([[1], [3]], I64)
    upd = data(idx.shape[:1] + (2, 3))
    check_op("ScatterND", [x, idx, upd], {"reduction": reduction}, opset=18)
    check_op("ScatterND", [x, np.array([[0, 1], [2, 0]], I64), data((2, 3))], {"reduction": reduction}, opset=18)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint64])
@pytest.mark.parametrize("axis,k,largest", [(-1, 3, 1), (0, 2, 0), (1, 5, 1), (1, 0, 1)])
def test_topk(dtype, axis, k, largest):
    x = rng.integers(0, 4, (3, 5, 4)).astype(dtype)  # many ties: lower index first
    check_op("TopK", [x, np.array([k], I64)], {"axis": axis, "largest": largest}, n_outputs=2,
             opset=11, const_inputs=(1,))


@pytest.mark.parametrize("dtype", [np.float64, np.int32])
@pytest.mark.parametrize("axis", [0, -1])
@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumsum(dtype, axis, exclusive, reverse):
    check_op("CumSum", [data((3, 4), dtype), np.array(axis, I64)], {"exclusive": exclusive, "reverse": reverse},
             const_inputs=(1,))


def test_errors_name_the_node():
    with pytest.raises(ShapeError, match="Concat node"):
        run_ge(*make_model("Concat", [data((2, 3)), data((3, 3))], {"axis": 1}))
    with pytest.raises(ShapeError, match="Split node"):
        run_ge(*make_model("Split", [data((5,))], {}, n_outputs=2, opset=13))
