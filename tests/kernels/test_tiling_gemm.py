"""Conv, ConvTranspose, FusedConv, Gemm and MatMul as tiled launches (AI-core blocks, ge/kernels/tiling.py):
for every lowering and split, the result with cores = 2, 3, 4 is bitwise the one with cores = 1 (which
matches the reference), and the blocks of one launch may run at once on separate threads.

`tiny_blocks` drops the work thresholds so that small shapes (cheap to check) tile too; a few real
shapes check the thresholds themselves."""
import threading

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx.reference import ReferenceEvaluator
from op_check import make_model
from test_conv import numpy_act

from ge.kernels import KernelContext, TensorSpec, lookup
from ge.kernels.registry import call

rng = np.random.default_rng(7)
CORES = (1, 2, 3, 4)


def rand(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


@pytest.fixture
def tiny_blocks(monkeypatch):
    from ge.kernels import conv, gemm, gemv
    monkeypatch.setattr(gemm, "MIN_BLOCK_MACS", 1)
    monkeypatch.setattr(gemv, "MIN_BLOCK_MACS", 1)
    monkeypatch.setattr(conv, "MIN_BLOCK_MACS", 1)
    monkeypatch.setattr(conv, "MIN_BLOCK_TAPS", 1)


def prepare(op, arrays, attrs, cores, domain=""):
    specs = [None if a is None else TensorSpec(a.shape, a.dtype) for a in arrays]
    kernel = lookup(op, domain, 17)
    ctx = KernelContext(op, "n", attrs, specs, [None] * len(arrays), 17, cores=cores)
    ctx.outputs = kernel.infer(ctx)
    return ctx, kernel.prepare(ctx)


def run(op, arrays, attrs, cores, domain=""):
    """(output, launch) through registry.call (blocks one after the other)."""
    ctx, launch = prepare(op, arrays, attrs, cores, domain)
    assert launch.tiled and 1 <= launch.block_dim <= cores
    outs = [np.empty(s.shape, s.dtype) for s in ctx.outputs]
    call(launch, arrays, outs)
    return outs[0], launch


def run_concurrently(op, arrays, attrs, cores, domain=""):
    """Every block of the launch on its own thread, all released at once."""
    ctx, launch = prepare(op, arrays, attrs, cores, domain)
    picked = launch.inputs if launch.inputs is not None else [i for i, a in enumerate(arrays) if a is not None]
    out = np.full(ctx.outputs[0].shape, np.nan, ctx.outputs[0].dtype)
    for k in launch.atomic:
        out[...] = 0
    ws = [np.full(w.size, np.nan, w.dtype) for w in launch.workspaces]
    args = [*(np.ascontiguousarray(arrays[i]).reshape(-1) for i in picked), out.reshape(-1), *ws, *launch.args]
    gate = threading.Barrier(launch.block_dim)

    def block(b):
        gate.wait()
        launch.fn(*args, b, launch.block_dim)
    threads = [threading.Thread(target=block, args=(b,)) for b in range(launch.block_dim)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out, launch


def check_cores(op, arrays, attrs, want, domain="", rtol=1e-4, atol=1e-4, must_tile=True):
    """cores 1..4 bitwise equal, cores 1 close to `want`; returns the block_dims."""
    base, _ = run(op, arrays, attrs, 1, domain)
    np.testing.assert_allclose(base, want, rtol=rtol, atol=atol)
    dims = [1]
    for c in CORES[1:]:
        got, launch = run(op, arrays, attrs, c, domain)
        assert np.array_equal(got, base), f"cores={c} (block_dim {launch.block_dim}) differs from cores=1"
        dims.append(launch.block_dim)
    if must_tile:
        assert max(dims) > 1, "never tiled"
    return dims


def reference(op, arrays, attrs):
    model, feeds = make_model(op, arrays, attrs)
    return ReferenceEvaluator(model).run(None, feeds)[0]


def ort_reference(op, arrays, attrs):
    model, feeds = make_model(op, arrays, attrs)
    model.graph.output[0].type.tensor_type.elem_type = onnx.TensorProto.FLOAT
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


# -- the GEMM core: any block of C, packed or read in place, bitwise the same ----------------------------

@pytest.mark.parametrize("M,N,K", [(600, 700, 300), (133, 530, 70), (130, 49, 600), (40, 100, 20), (7, 37, 5)])
@pytest.mark.parametrize("pack", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gemm_blocks(M, N, K, pack, dtype):
    """gemm_block over a grid of blocks (odd edges: leftover rows, masked panels, several A blocks, B
    blocks and k blocks, packed A and B) == one call == numpy; accumulating adds."""
    from ge.kernels.gemm import gemm_block, workspace
    a, b = rand(M, K, dtype=dtype), rand(K, N, dtype=dtype)
    e = np.empty(0, np.int64)
    whole = np.empty(M * N, dtype)
    gemm_block(a.reshape(-1), b.reshape(-1), e, N, whole, N, K, K, 1, False, 0, M, 0, N,
               np.empty(workspace(M, N, K, dtype, pack), dtype), pack)
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(whole.reshape(M, N), a.astype(np.float64) @ b, rtol=tol, atol=tol * np.sqrt(K))
    parts = np.full(M * N, np.nan, dtype)
    for m0, m1 in ((0, 8 * (M // 16)), (8 * (M // 16), M)):
        for n0, n1 in ((0, 32 * (N // 64)), (32 * (N // 64), N)):
            ws = np.empty(workspace(m1 - m0, n1 - n0, K, dtype, pack), dtype)
            gemm_block(a.reshape(-1), b.reshape(-1), e, N, parts, N, K, K, 1, False, m0, m1, n0, n1, ws, pack)
    assert np.array_equal(parts, whole)
    brow = np.arange(K, dtype=np.int64) * N  # B through row offsets, transposed A, accumulating
    acc = whole.copy()
    gemm_block(np.ascontiguousarray(a.T).reshape(-1), b.reshape(-1), brow, 0, acc, N, K, 1, M, True, 0, M, 0, N,
               np.empty(workspace(M, N, K, dtype, pack), dtype), pack)
    np.testing.assert_allclose(acc, 2 * whole, rtol=tol, atol=tol * np.sqrt(K))


@pytest.mark.parametrize("M,N,K", [(130, 49, 600), (37, 57, 70)])
def test_stride_kinds_and_split_panels_keep_the_bits(M, N, K):
    """The register tiles compiled for the literal unit k stride (gemm_nn_ld, gemm_nn_rows) and for a run-time
    one (gemm_block called from Python; a transposed A), B packed or read in place (its last panel, ending
    inside its second vector, run as two one-vector panels): the same bits."""
    from ge.kernels.gemm import gemm_block, gemm_nn_ld, gemm_nn_rows, workspace
    a, b, e = rand(M, K).reshape(-1), rand(K, N).reshape(-1), np.empty(0, np.int64)
    at = np.ascontiguousarray(a.reshape(M, K).T).reshape(-1)
    got = [np.empty(M * N, np.float32) for _ in range(5)]
    gemm_nn_ld(a, b, got[0], M, N, K, K, 1, N, N, False)
    gemm_nn_rows(a, b, np.arange(K, dtype=np.int64) * N, got[1], M, N, K, K, 1, N, False)
    for c, (aa, sam, sak, pack) in zip(got[2:], ((a, K, 1, False), (at, 1, M, False), (at, 1, M, True))):
        gemm_block(aa, b, e, N, c, N, K, sam, sak, False, 0, M, 0, N,
                   np.empty(workspace(M, N, K, np.float32, pack), np.float32), pack)
    assert all(np.array_equal(c, got[0]) for c in got[1:])


@pytest.mark.parametrize("M,N,K", [(133, 530, 70), (300, 60, 600)])
def test_packed_gemm_keeps_equal_rows_equal(M, N, K):
    """Rows of A equal -> rows of C bitwise equal, whether a row sits in a packed tile or is left over."""
    from ge.kernels.gemm import gemm_block, workspace
    a = np.tile(rand(K), M) * 0.02
    b = rand(K * N) * 1000
    c = np.empty(M * N, np.float32)
    gemm_block(a, b, np.empty(0, np.int64), N, c, N, K, K, 1, False, 0, M, 0, N,
               np.empty(workspace(M, N, K, np.float32), np.float32), True)
    assert np.ptp(c.reshape(M, N), axis=0).max() == 0


# (x shape, w shape, attrs, lowering): every lowering, odd sizes, groups, strides, dilations, 1-D, 3-D, batch 2
CONV_CASES = [
    ((1, 16, 10, 13), (24, 16, 1, 1), {}, "POINTWISE"),                                 # split positions
    ((1, 16, 5, 5), (28, 16, 1, 1), {}, "POINTWISE"),                                   # split channels
    ((2, 8, 9, 9), (12, 8, 1, 1), {}, "POINTWISE"),                                     # batch 2
    ((1, 8, 3, 5, 7), (10, 8, 1, 1, 1), {}, "POINTWISE"),                               # 3-D
    ((1, 16, 20, 19), (7, 16, 3, 3), {"pads": [1, 0, 2, 1]}, "SHIFTED"),                # M < 8
    ((1, 16, 9, 9), (40, 16, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1]}, "SHIFTED"),
    ((1, 32, 10, 10), (48, 8, 3, 3), {"group": 4, "pads": [1, 1, 1, 1]}, "SHIFTED"),
    ((2, 16, 11, 12), (20, 16, 3, 5), {"strides": [2, 3], "pads": [1, 2, 0, 1]}, "SHIFTED"),
    ((1, 16, 50), (17, 16, 3), {"pads": [1, 1]}, "SHIFTED"),                           # 1-D
    ((1, 16, 11, 11), (40, 16, 1, 1), {"strides": [2, 2]}, "SHIFTED"),                # 1x1 /2: no grid
    ((1, 16, 20, 21), (12, 16, 1, 1), {"strides": [2, 2]}, "SHIFTED"),
    ((1, 3, 30, 30), (16, 3, 7, 7), {"strides": [2, 2], "pads": [3, 3, 3, 3]}, "SHIFTED"),  # stem
    ((1, 16, 14, 14), (24, 16, 3, 3), {"dilations": [2, 2], "pads": [2, 2, 2, 2]}, "IM2COL"),
    ((1, 4, 6, 7, 8), (12, 4, 3, 2, 3), {"pads": [1, 0, 1, 1, 1, 0], "strides": [1, 2, 2]}, "IM2COL"),
    ((2, 3, 5, 9, 11), (10, 3, 2, 3, 3), {"strides": [1, 2, 2], "dilations": [1, 1, 2]}, "IM2COL"),
    ((1, 12, 15, 16), (12, 1, 3, 3), {"group": 12, "pads": [1, 1, 1, 1]}, "DEPTHWISE"),
    ((2, 6, 13, 12), (12, 1, 5, 5), {"group": 6, "strides": [2, 2], "pads": [2, 2, 2, 2]}, "DEPTHWISE"),
    ((1, 6, 12, 11), (6, 1, 3, 3), {"group": 6, "dilations": [2, 2], "pads": [2, 2, 2, 2]}, "DIRECT"),
    ((1, 16, 5, 5), (80, 16, 3, 3), {"pads": [1, 1, 1, 1]}, "PACKED"),               # split panels
    ((1, 16, 20, 19), (32, 16, 3, 3), {"pads": [1, 0, 2, 1]}, "PACKED"),              # split rows
    ((2, 8, 9, 9), (48, 8, 1, 1), {}, "PACKED"),                                      # batch 2, in place
    ((1, 16, 9, 9), (64, 16, 3, 3), {"strides": [2, 2], "dilations": [2, 1], "pads": [2, 1, 2, 1]}, "PACKED"),
]


@pytest.mark.parametrize("xs,ws,attrs,lowering", CONV_CASES)
def test_conv_any_cores(xs, ws, attrs, lowering, tiny_blocks):
    from ge.kernels import conv
    from ge.kernels.conv_implicit import pack
    arrays = [rand(*xs), rand(*ws), rand(ws[0])]
    want = reference("Conv", arrays, attrs)
    op, domain = "Conv", ""
    if lowering == "PACKED":  # the weights as pack_conv_weights leaves them
        op, domain, attrs = "FusedConv", "ge", dict(attrs, weight_shape=list(ws))
        arrays = [arrays[0], pack(arrays[1], attrs.get("group", 1)), arrays[2]]
    _, launch = prepare(op, arrays, attrs, 1, domain)
    assert launch.args[1] == getattr(conv, lowering)
    check_cores(op, arrays, attrs, want, domain)


def test_conv_single_pair_depthwise_keeps_one_block(tiny_blocks):
    """DIRECT and DEPTHWISE split only (image, group) pairs: one pair stays one block."""
    arrays = [rand(1, 1, 20, 20), rand(3, 1, 3, 3)]
    dims = check_cores("Conv", arrays, {"pads": [1, 1, 1, 1]}, reference("Conv", arrays, {"pads": [1, 1, 1, 1]}),
                       must_tile=False)
    assert dims == [1, 1, 1, 1]


@pytest.mark.parametrize("xs,ws,attrs", [((2, 16, 12, 12), (24, 16, 3, 3), {"pads": [1, 1, 1, 1]}),
                                         ((1, 16, 5, 5), (40, 16, 3, 3), {"pads": [1, 1, 1, 1]}),
                                         ((1, 16, 9, 10), (20, 16, 1, 1), {})])
@pytest.mark.parametrize("act,params", [("Relu", []), ("Sigmoid", []), ("Clip", [-0.5, 0.75])])
def test_fused_conv_any_cores(xs, ws, attrs, act, params, tiny_blocks):
    x, w, b = rand(*xs), rand(*ws), rand(ws[0])
    y = reference("Conv", [x, w, b], attrs)
    z = rand(*y.shape)
    want = numpy_act(y + z, act, params)
    fused = dict(attrs, activation=act, **({"activation_params": params} if params else {}))
    check_cores("FusedConv", [x, w, b, z], fused, want, domain="ge")


CONV_T_CASES = [
    ((1, 16, 6, 6), (16, 12, 3, 3), {"strides": [2, 2]}),                       # channels, grain 1
    ((1, 8, 5, 5), (8, 40, 2, 2), {"strides": [2, 2], "pads": [0, 1, 1, 0]}),   # channels, grain 8
    ((2, 4, 5, 5), (4, 3, 3, 3), {"group": 2, "strides": [2, 2], "output_padding": [1, 1]}),  # pairs
    ((1, 6, 9), (6, 10, 4), {"strides": [3], "pads": [1, 2]}),                   # 1-D
    ((1, 4, 3, 4, 3), (4, 9, 2, 3, 2), {"strides": [2, 1, 2], "dilations": [1, 2, 1]}),  # 3-D
]


@pytest.mark.parametrize("xs,ws,attrs", CONV_T_CASES)
def test_conv_transpose_any_cores(xs, ws, attrs, tiny_blocks):
    G = attrs.get("group", 1)
    arrays = [rand(*xs), rand(*ws), rand(ws[1] * G)]
    check_cores("ConvTranspose", arrays, attrs, ort_reference("ConvTranspose", arrays, attrs))


GEMM_CASES = [  # (A shape, B shape, C shape or None, transA, transB)
    ((37, 50), (50, 70), (37, 70), 0, 0),
    ((50, 37), (50, 70), (70,), 1, 0),
    ((100, 20), (20, 10), (100, 1), 0, 0),      # M > N: split rows
    ((30, 40), (75, 40), (), 0, 1),             # transB: dot products
    ((40, 3), (77, 40), None, 1, 1),
    ((1, 300), (300, 130), (130,), 0, 0),       # one row: split columns
]


@pytest.mark.parametrize("sa,sb,sc,ta,tb", GEMM_CASES)
def test_gemm_any_cores(sa, sb, sc, ta, tb, tiny_blocks):
    arrays = [rand(*sa), rand(*sb)] + ([] if sc is None else [rand(*sc)])
    attrs = {"transA": ta, "transB": tb, "alpha": 0.7, "beta": -1.3}
    check_cores("Gemm", arrays, attrs, reference("Gemm", arrays, attrs))


@pytest.mark.parametrize("sa,sb", [
    ((6, 20, 30), (6, 30, 40)),          # whole batches per block (or split inside at 4 cores)
    ((2, 1, 20, 30), (1, 3, 30, 50)),    # broadcast batches
    ((3, 20, 30), (30, 50)),             # one shared B: batches folded into rows
    ((30,), (30, 70)), ((20, 30), (30,)),
    ((2, 13, 30), (2, 30, 97)),          # odd sizes
])
def test_matmul_any_cores(sa, sb, tiny_blocks):
    arrays = [rand(*sa), rand(*sb)]
    check_cores("MatMul", arrays, {}, reference("MatMul", arrays, {}))


def test_fused_matmul_any_cores(tiny_blocks):
    a, b = rand(2, 24, 30), rand(30, 45)
    want = numpy_act(a @ b, "LeakyRelu", [0.2])
    check_cores("FusedMatMul", [a, b], {"activation": "LeakyRelu", "activation_params": [0.2]}, want, domain="ge")


# -- real thresholds: launches big enough tile, small ones keep one block --------------------------------

def test_thresholds():
    big = [rand(1, 64, 28, 28), rand(64, 64, 3, 3)]
    small = [rand(1, 8, 8, 8), rand(8, 8, 3, 3)]
    for cores in (2, 4):
        assert prepare("Conv", big, {"pads": [1, 1, 1, 1]}, cores)[1].block_dim == cores
        assert prepare("Conv", small, {"pads": [1, 1, 1, 1]}, cores)[1].block_dim == 1
        assert prepare("MatMul", [rand(128, 768), rand(768, 768)], {}, cores)[1].block_dim == cores
        assert prepare("MatMul", [rand(4, 16), rand(16, 16)], {}, cores)[1].block_dim == 1


@pytest.mark.parametrize("xs,ws,attrs", [
    ((1, 64, 56, 56), (64, 64, 3, 3), {"pads": [1, 1, 1, 1]}),   # ResNet-50: positions
    ((1, 512, 7, 7), (512, 512, 3, 3), {"pads": [1, 1, 1, 1]}),   # channels
    ((1, 256, 14, 14), (1024, 256, 1, 1), {}),                    # pointwise, channels
])
def test_resnet_shapes(xs, ws, attrs):
    arrays = [rand(*xs), rand(*ws) * 0.1, rand(ws[0])]
    dims = check_cores("Conv", arrays, attrs, ort_reference("Conv", arrays, attrs), rtol=1e-3, atol=1e-3)
    assert dims[1] == 2


# -- blocks at once, on separate threads ------------------------------------------------------------

CONCURRENT = [
    ("Conv", [(1, 32, 40, 40), (64, 32, 3, 3), (64,)], {"pads": [1, 1, 1, 1]}, ""),       # SHIFTED, positions
    ("Conv", [(1, 128, 9, 9), (256, 128, 3, 3), (256,)], {"pads": [1, 1, 1, 1]}, ""),     # SHIFTED, channels
    ("Conv", [(1, 64, 30, 30), (96, 64, 1, 1), (96,)], {}, ""),                           # POINTWISE
    ("Conv", [(1, 16, 30, 30), (32, 16, 3, 3), (32,)], {"dilations": [2, 2]}, ""),        # IM2COL
    ("Conv", [(2, 64, 40, 40), (64, 1, 3, 3), (64,)], {"group": 64, "pads": [1, 1, 1, 1]}, ""),  # DEPTHWISE
    ("ConvTranspose", [(1, 64, 20, 20), (64, 32, 3, 3), (32,)], {"strides": [2, 2]}, ""),
    ("MatMul", [(128, 256), (256, 512)], {}, ""),
    ("MatMul", [(8, 64, 64), (8, 64, 64)], {}, ""),
    ("Gemm", [(300, 200), (200, 40)], {}, ""),
    ("Gemm", [(4, 512), (600, 512)], {"transB": 1}, ""),
]


@pytest.mark.parametrize("op,shapes,attrs,domain", CONCURRENT)
def test_blocks_run_concurrently(op, shapes, attrs, domain, tiny_blocks):
    arrays = [rand(*s) for s in shapes]
    want, _ = run(op, arrays, attrs, 1, domain)
    for _ in range(3):
        got, launch = run_concurrently(op, arrays, attrs, 4, domain)
        assert launch.block_dim > 1
        assert np.array_equal(got, want)
