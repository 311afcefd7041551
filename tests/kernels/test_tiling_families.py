"""Tiled (multi-block) launches of the non-GEMM families: every core count gives the same bits.

Each case runs one node through its kernel with KernelContext(cores=c) for c = 1..4: the outputs must be
bitwise equal to c=1 (NaN-aware), c=1 must match onnx.reference, and the blocks of one launch must also
agree when run at once from several Python threads. Thresholds (blocks.MIN_BLOCK_NS) are patched low so
small shapes tile; output buffers start as random bytes, so an element no block writes shows up.
"""
import threading

import numpy as np
import pytest
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator
from op_check import make_model

from ge.frontends.onnx_attrs import node_attributes
from ge.kernels import KernelContext, TensorSpec, blocks, lookup
from ge.kernels.blocks import G, row_range

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
rng = np.random.default_rng(7)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def ints(hi, *shape, dtype=np.int64):
    return rng.integers(0, hi, shape).astype(dtype)


@pytest.fixture(autouse=True)
def low_thresholds(monkeypatch):
    monkeypatch.setattr(blocks, "MIN_BLOCK_NS", 1)


def prepared(op, inputs, attrs=None, opset=17, cores=1, const=(), n_outputs=1):
    """(model, feeds, ctx, launch, arrays) of a one-node model, tiled for `cores`."""
    model, feeds = make_model(op, inputs, attrs, opset, n_outputs=n_outputs, const_inputs=const)
    node = model.graph.node[0]
    env = dict(feeds, **{t.name: numpy_helper.to_array(t) for t in model.graph.initializer})
    arrays = [env[n] if n else None for n in node.input]
    kernel = lookup(op, "", opset)
    values = [a if i in const else None for i, a in enumerate(arrays)]
    specs = [None if a is None else TensorSpec(a.shape, a.dtype) for a in arrays]
    ctx = KernelContext(op, "n", node_attributes(node), specs, values, opset, n_outputs=n_outputs, cores=cores)
    return model, feeds, ctx, kernel.bind(ctx), arrays


def launch_args(ctx, launch, arrays):
    """(outs, args) as registry.call builds them, outputs and workspaces filled with random bytes."""
    picked = launch.inputs if launch.inputs is not None else [i for i, a in enumerate(arrays) if a is not None]
    ins = [np.ascontiguousarray(arrays[i]).reshape(-1) for i in picked]

    def junk(shape, dtype):
        return np.frombuffer(rng.bytes(int(np.prod(shape)) * np.dtype(dtype).itemsize), dtype).reshape(shape).copy()
    outs = [junk(s.shape, s.dtype) for s in ctx.outputs]
    for k in launch.atomic:  # accumulated into: zeroed first, as registry.call does
        outs[k][...] = 0
    ws = [junk((w.size,), w.dtype) for w in launch.workspaces]
    return outs, [*ins, *[o.reshape(-1) for o in outs], *ws, *launch.args]


def run_blocks(launch, args, threaded=False, order=None):
    """Every block, one after the other (in `order`) or all at once on their own threads."""
    if not threaded:
        for b in order or range(launch.block_dim):
            launch.fn(*args, b, launch.block_dim)
        return
    start = threading.Barrier(launch.block_dim)
    errors = []

    def block(b):
        start.wait()
        try:
            launch.fn(*args, b, launch.block_dim)
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=block, args=(b,)) for b in range(launch.block_dim)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def same(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")


def check_tiled(op, inputs, attrs=None, opset=17, const=(), n_outputs=1, rtol=1e-4, atol=1e-5, oracle=True):
    model, feeds, ctx, launch, arrays = prepared(op, inputs, attrs, opset, 1, const, n_outputs)
    assert launch.tiled and launch.block_dim == 1
    want, args = launch_args(ctx, launch, arrays)
    run_blocks(launch, args)
    if oracle:
        ref = ReferenceEvaluator(model).run(None, feeds)
        for g, w in zip(want, ref):
            np.testing.assert_allclose(g, np.asarray(w), rtol=rtol, atol=atol, err_msg=op)
    tiled_somewhere = False
    for cores in (2, 3, 4):
        _, _, ctx, launch, arrays = prepared(op, inputs, attrs, opset, cores, const, n_outputs)
        assert launch.block_dim <= cores
        tiled_somewhere |= launch.block_dim > 1
        for threaded, order in ((False, range(launch.block_dim - 1, -1, -1)), (True, None)):
            got, args = launch_args(ctx, launch, arrays)
            run_blocks(launch, args, threaded, order)
            for g, w in zip(got, want):
                assert same(g, w), f"{op} cores={cores} threaded={threaded}"
    assert tiled_somewhere, f"{op} never tiled"


# -- elementwise, activation, cast, binary --------------------------------------------------------

X = f32(3, 5, 333)  # 4995 elements: odd rows, several G pieces per row


@pytest.mark.parametrize("op,attrs,opset", [
    ("Relu", None, 17), ("Exp", None, 17), ("Sigmoid", None, 17), ("Gelu", {"approximate": "tanh"}, 20),
    ("Clip", {"min": -0.5, "max": 0.5}, 6), ("Cast", {"to": 6}, 17)])
def test_unary(op, attrs, opset):
    check_tiled(op, [X], attrs, opset)


def test_unary_with_inputs():
    check_tiled("Clip", [X, np.float32(-0.3), np.float32(0.4)])
    check_tiled("IsNaN", [np.where(X > 1, np.nan, X)])
    check_tiled("Not", [X > 0])
    check_tiled("CastLike", [X, np.zeros(1, np.float64)])


@pytest.mark.parametrize("b", [f32(3, 5, 333), f32(5, 1), f32(333), np.float32(2.0), f32(3, 1, 1)])
def test_binary_broadcast(b):
    check_tiled("Add", [X, b])
    check_tiled("Sub", [b, X])


def test_binary_kernels():
    a, b = ints(100, 7, 301, dtype=np.int32) - 50, ints(9, 301, dtype=np.int32) + 1
    check_tiled("Div", [a, b])
    check_tiled("Mod", [a, b])
    check_tiled("Greater", [X, f32(333)])
    check_tiled("And", [X > 0, f32(5, 1) > 0])
    check_tiled("BitShift", [a.astype(np.uint32), b.astype(np.uint32) % 8], {"direction": "LEFT"})
    check_tiled("Pow", [np.abs(X) + 0.5, f32(333)])
    check_tiled("PRelu", [X, f32(5, 1)])
    check_tiled("Where", [X > 0, X, f32(5, 1)])


@pytest.mark.parametrize("op", ["Sum", "Mean", "Max"])
def test_variadic(op):
    check_tiled(op, [X, f32(5, 1), f32(333)])


def test_binary_in_place_blocks_at_once():
    """Add declares in-place on either input: blocks reading and writing the same buffer stay apart."""
    for cores in (2, 4):
        _, _, ctx, launch, arrays = prepared("Add", [X, f32(333)], cores=cores)
        a = X.copy().reshape(-1)
        args = [a, arrays[1].reshape(-1), a, *launch.args]
        run_blocks(launch, args, threaded=True)
        assert launch.block_dim > 1 and same(a.reshape(X.shape), X + arrays[1])


# -- softmax, norms, reductions ----------------------------------------------------------------------

@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("axis", [-1, 1])
def test_softmax(op, axis):
    check_tiled(op, [f32(3, 7, 161) * 3], {"axis": axis}, 13)


def test_softmax_coerced():
    check_tiled("Softmax", [f32(6, 5, 7)], {"axis": 1}, 11, oracle=False)


def test_norms():
    x = f32(3, 6, 13, 11)
    c = [f32(6), f32(6), f32(6), np.abs(f32(6)) + 0.5]
    check_tiled("BatchNormalization", [x, *c])
    check_tiled("BatchNormalization", [x, *c], {"training_mode": 1}, 15, n_outputs=3, oracle=False)
    check_tiled("LayerNormalization", [f32(5, 7, 66), f32(66), f32(66)], {"axis": -1}, n_outputs=3)
    check_tiled("InstanceNormalization", [x, f32(6), f32(6)])
    check_tiled("GroupNormalization", [x, f32(6), f32(6)], {"num_groups": 3}, 21)
    square = f32(5, 5, 13, 11)  # the reference LRN loops over N where it means C
    check_tiled("LRN", [square], {"size": 3})
    check_tiled("LRN", [square], {"size": 4, "beta": 0.6})
    check_tiled("LpNormalization", [f32(4, 9, 70)], {"axis": 1})
    check_tiled("LpNormalization", [f32(4, 9, 70)], {"axis": -1, "p": 1}, oracle=False)  # no abs there
    check_tiled("MeanVarianceNormalization", [x])
    check_tiled("MeanVarianceNormalization", [x], {"axes": [1, 2]})


@pytest.mark.parametrize("axes", [[2], [0], [1], [0, 2], [1, 2]])
@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceLogSumExp"])
def test_reduce(op, axes):
    check_tiled(op, [f32(4, 9, 150), np.array(axes, np.int64)], {"keepdims": 0}, 18, const=(1,))


def test_reduce_others():
    check_tiled("ReduceMean", [f32(2, 3, 130, 5), np.array([0, 3], np.int64)], opset=18, const=(1,))
    check_tiled("ReduceProd", [f32(6, 40) * 0.1 + 1, np.array([1], np.int64)], opset=18, const=(1,))
    check_tiled("ReduceMax", [X > 0.5, np.array([1], np.int64)], opset=18, const=(1,), oracle=False)


@pytest.mark.parametrize("op,attrs", [("ArgMax", {"axis": -1}), ("ArgMax", {"axis": 1}),
                                      ("ArgMin", {"axis": 0, "select_last_index": 1})])
def test_arg(op, attrs):
    check_tiled(op, [np.round(f32(4, 9, 150))], attrs)


# -- pools ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("op,attrs,n_out", [
    ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, 1),
    ("MaxPool", {"kernel_shape": [2, 3], "strides": [2, 1]}, 2),  # (the reference's Indices need strides)
    ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}, 1),
    ("LpPool", {"kernel_shape": [2, 2], "p": 3}, 1),
    ("GlobalAveragePool", None, 1), ("GlobalMaxPool", None, 1)])
def test_pool(op, attrs, n_out):
    check_tiled(op, [f32(2, 3, 17, 15)], attrs, 12, n_outputs=n_out, rtol=1e-4, atol=1e-4)


def test_pool_1d_3d_global_lp():
    check_tiled("GlobalLpPool", [f32(2, 3, 17, 15)], oracle=False)  # the reference has no GlobalLpPool
    check_tiled("MaxPool", [f32(2, 3, 41)], {"kernel_shape": [3], "strides": [2]})
    check_tiled("AveragePool", [f32(1, 2, 5, 7, 9)], {"kernel_shape": [2, 2, 3]})


# -- movement, indexing, pad, resize, scans -------------------------------------------------------

@pytest.mark.parametrize("shape,perm", [((40, 37), (1, 0)), ((2, 3, 17, 33), (0, 3, 1, 2)),
                                        ((5, 6, 7), (2, 0, 1)), ((3, 4, 50), (1, 0, 2))])
def test_transpose(shape, perm):
    check_tiled("Transpose", [f32(*shape)], {"perm": list(perm)})


def test_movement():
    check_tiled("Concat", [f32(3, 5, 7), f32(3, 2, 7), f32(3, 9, 7)], {"axis": 1})
    check_tiled("Concat", [f32(130), f32(77)], {"axis": 0})
    check_tiled("Split", [f32(3, 16, 7)], {"axis": 1, "num_outputs": 3}, 18, n_outputs=3)
    check_tiled("Slice", [f32(9, 40, 30), np.array([8, 1], np.int64), np.array([0, 39], np.int64),
                          np.array([0, 2], np.int64), np.array([-2, 3], np.int64)], const=(1, 2, 3, 4))
    check_tiled("Expand", [f32(5, 1, 33), np.array([4, 5, 6, 33], np.int64)], const=(1,))
    check_tiled("Tile", [f32(3, 4, 21), np.array([2, 3, 2], np.int64)], const=(1,))
    check_tiled("DepthToSpace", [f32(2, 8, 9, 10)], {"blocksize": 2, "mode": "CRD"})
    check_tiled("SpaceToDepth", [f32(2, 3, 12, 10)], {"blocksize": 2})
    check_tiled("Trilu", [f32(3, 20, 17), np.array(2, np.int64)], {"upper": 0}, 14, const=(1,))


@pytest.mark.parametrize("mode,pads", [("constant", [0, 1, 2, 0, -1, 3]), ("constant", [1, 0, 0, 2, 0, 0]),
                                       ("reflect", [0, 2, 3, 0, 1, 2]), ("edge", [1, 0, 1, 1, 0, 1]),
                                       ("wrap", [0, 2, 1, 0, 2, 2])])
def test_pad(mode, pads):
    x = f32(3, 17, 23)
    if mode == "constant" and min(pads) < 0:
        return check_tiled("Pad", [x, np.array(pads, np.int64), np.float32(1.5)], {"mode": mode}, const=(1, 2),
                           oracle=False)
    check_tiled("Pad", [x, np.array(pads, np.int64), np.float32(1.5)], {"mode": mode}, const=(1, 2))


def test_indexing():
    check_tiled("Gather", [f32(50, 33), ints(50, 7, 9)], {"axis": 0})
    check_tiled("Gather", [f32(4, 50, 33), ints(50, 60) - 25], {"axis": 1})
    check_tiled("Gather", [f32(4, 5, 90), ints(90, 130)], {"axis": 2})
    check_tiled("GatherElements", [f32(6, 40, 9), ints(40, 6, 31, 9)], {"axis": 1})
    check_tiled("GatherND", [f32(4, 30, 17), ints(30, 4, 25, 1)], {"batch_dims": 1})


def test_gather_index_error_raises_from_its_block():
    idx = ints(50, 300)
    idx[-1] = 50  # out of range, in the last block
    _, _, ctx, launch, arrays = prepared("Gather", [f32(50, 4), idx], {"axis": 0}, cores=4)
    assert launch.block_dim == 4
    _, args = launch_args(ctx, launch, arrays)
    for b in range(3):
        launch.fn(*args, b, 4)
    with pytest.raises(IndexError):
        launch.fn(*args, 3, 4)
    with pytest.raises(IndexError):
        run_blocks(launch, args, threaded=True)


@pytest.mark.parametrize("attrs,sizes", [
    ({"mode": "nearest"}, [2, 3, 31, 47]), ({"mode": "linear"}, [2, 3, 29, 41]),
    ({"mode": "cubic"}, [2, 3, 23, 31]), ({"mode": "linear", "antialias": 1}, [2, 3, 9, 12])])
def test_resize(attrs, sizes):
    x = f32(2, 3, 17, 19)
    check_tiled("Resize", [x, None, None, np.array(sizes, np.int64)], attrs, 19, const=(3,), atol=1e-4)


def test_scans():
    check_tiled("TopK", [f32(4, 70, 9), np.array([5], np.int64)], {"axis": 1}, 11, const=(1,), n_outputs=2)
    check_tiled("CumSum", [f32(4, 13, 80), np.array(1, np.int64)], {"exclusive": 1, "reverse": 1}, const=(1,))


# -- the split itself -----------------------------------------------------------------------------

@pytest.mark.parametrize("total,n,grain", [(4995, 333, G), (1001, 7, G), (640, 640, G), (37 * 16, 16, 16)])
def test_row_range_covers_once_on_grain(total, n, grain):
    for bd in range(1, 6):
        ends = [row_range(total, n, grain, b, bd) for b in range(bd)]
        assert ends[0][0] == 0 and ends[-1][1] == total
        assert all(ends[b][1] == ends[b + 1][0] for b in range(bd - 1))
        assert all(lo % n % grain == 0 for lo, _ in ends)


def test_default_thresholds_keep_small_launches_whole(monkeypatch):
    monkeypatch.undo()
    assert prepared("Relu", [f32(64, 64)], cores=4)[3].block_dim == 1
    assert prepared("Relu", [f32(1024, 1024)], cores=2)[3].block_dim == 2
    assert prepared("Softmax", [f32(4, 10)], cores=4)[3].block_dim == 1
