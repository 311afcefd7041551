"""drop_half_casts: Before/Expected, the 16-bit kernels (conv_half, pool_half, vector_half) against the
float32 ops between the same Casts (the same bits, both runtimes, any core count), what keeps its Casts,
and the planned feature map of a light model."""
import numpy as np
import pytest
from onnx import TensorProto
from pass_check import model, node, printed, randn, run_pass

import ge
from ge.errors import ShapeError
from ge.passes import drop_half_casts

F16, F32 = TensorProto.FLOAT16, TensorProto.FLOAT
LISTS = {"white-list": {"to-add": ["LRN", "BatchNormalization"]}}  # a chain of reduced ops from the input on


def test_casts_around_a_16_bit_kernel_go():
    m = model([node("Cast", ["x"], ["xh"], to=F16), node("Cast", ["xh"], ["x32"], to=F32),
               node("Relu", ["x32"], ["r"]), node("Cast", ["r"], ["rh"], to=F16), node("Cast", ["rh"], ["y"], to=F32)],
              {"x": [1, 4]}, ["y"])
    g, changed = run_pass(m, drop_half_casts)
    assert changed
    assert printed(g)[2:] == ["%rh:f16[1,4] = Relu(%xh)  # r", "%y:f32[1,4] = Cast[to=1](%rh)  # y"]


def test_what_keeps_its_casts():
    """A dilated pool (no 16-bit kernel for it) and a result read by a float32 op keep the float32 path."""
    m = model([node("Cast", ["x"], ["xh"], to=F16), node("Cast", ["xh"], ["x32"], to=F32),
               node("MaxPool", ["x32"], ["p"], kernel_shape=[2, 2], dilations=[2, 2]),
               node("Cast", ["p"], ["ph"], to=F16), node("Relu", ["x32"], ["r"]), node("Sigmoid", ["r"], ["y"])],
              {"x": [1, 2, 6, 6]}, ["ph", "y"])
    g, changed = run_pass(m, drop_half_casts)
    assert not changed


def _chain():
    """Conv -> LRN -> MaxPool (ceil) -> BN -> Relu -> AveragePool (pads, then count_include_pad)."""
    C, M, H = 32, 64, 15
    nodes = [node("Conv", ["x", "w", "b"], ["c"], pads=[1] * 4),
             node("LRN", ["c"], ["l"], size=5, alpha=1e-2, beta=0.75, bias=1.0),
             node("MaxPool", ["l"], ["m"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
             node("BatchNormalization", ["m", "s", "bb", "mu", "var"], ["n"]), node("Relu", ["n"], ["r"]),
             node("AveragePool", ["r"], ["a"], kernel_shape=[3, 3], pads=[1] * 4),
             node("AveragePool", ["a"], ["y"], kernel_shape=[2, 2], strides=[2, 2], count_include_pad=1,
                  pads=[0, 0, 1, 1])]
    inits = {"w": randn(M, C, 3, 3) * 0.1, "b": randn(M), "s": randn(M, positive=True), "bb": randn(M),
             "mu": randn(M), "var": randn(M, positive=True)}
    return model(nodes, {"x": [2, C, H, H]}, ["y"], inits), {"x": randn(2, C, H, H)}


@pytest.mark.parametrize("mode,conv_bf16", [("allow_mix_precision", True), ("allow_mix_precision_bf16", True),
                                             ("allow_mix_precision_bf16", False)])
def test_16_bit_kernels_give_the_bits_of_the_float32_ops_between_casts(mode, conv_bf16, monkeypatch):
    """bfloat16 with and without ge::ConvBF16 (without: the conv runs conv_half's IMPLICIT in bfloat16)."""
    from ge.kernels import conv_bf16 as cb
    monkeypatch.setattr(cb, "USE_BF16", cb.USE_BF16 and conv_bf16)
    m, feeds = _chain()
    want = ge.Session(ge.compile(m, ge.Options(precision_mode=mode, modify_mixlist=LISTS,
                                               disabled_passes=("drop_half_casts",))), runtime="v2").run(None, feeds)[0]
    for cores in (1, 2):
        plan = ge.compile(m, ge.Options(precision_mode=mode, modify_mixlist=LISTS, aicore_num=cores))
        inner = [plan.tensors[n.outputs[0]].dtype for n in plan.nodes[1:-1]]
        assert len(plan.nodes) == 9 and all(d.itemsize == 2 for d in inner), [n.op_type for n in plan.nodes]
        for runtime in ("v1", "v2"):
            np.testing.assert_array_equal(ge.Session(plan, runtime=runtime).run(None, feeds)[0], want)


@pytest.mark.parametrize("mode", ["allow_mix_precision", "allow_mix_precision_bf16"])
@pytest.mark.parametrize("pool", ["AveragePool", "MaxPool"])
def test_a_pool_over_the_whole_image_gives_the_float32_bits(mode, pool):
    """A window covering the image (ResNet's last AveragePool) runs as a reduction in both paths: pool_half
    folds the widened planes with reduce.py's loop, so even the sums' order is the float32 path's."""
    C, M, H = 8, 150, 7  # 150 planes: more than pool_half.PLANES a pass
    m = model([node("Conv", ["x", "w", "b"], ["c"], pads=[1] * 4), node("Relu", ["c"], ["r"]),
               node(pool, ["r"], ["y"], kernel_shape=[H, H])],
              {"x": [2, C, H, H]}, ["y"], {"w": randn(M, C, 3, 3) * 0.3, "b": randn(M)})
    feeds = {"x": randn(2, C, H, H)}
    want = ge.Session(ge.compile(m, ge.Options(precision_mode=mode, disabled_passes=("drop_half_casts",))),
                      runtime="v2").run(None, feeds)[0]
    for cores in (1, 2):
        plan = ge.compile(m, ge.Options(precision_mode=mode, aicore_num=cores))
        assert [n.op_type for n in plan.nodes].count("Cast") == 2, [n.op_type for n in plan.nodes]
        np.testing.assert_array_equal(ge.Session(plan, runtime="v2").run(None, feeds)[0], want)


@pytest.mark.parametrize("mode", ["allow_mix_precision", "allow_mix_precision_bf16"])
def test_stride_2_pools_of_narrow_images_give_the_float32_bits(mode):
    """Widths 1 and 2 at stride 2: the pair loop of both phases is empty, each end column counted once."""
    for w in (1, 2):
        m = model([node("Conv", ["x", "wc", "b"], ["c"]),
                   node("AveragePool", ["c"], ["a"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4),
                   node("MaxPool", ["a"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)],
                  {"x": [1, 8, 9, w]}, ["y"], {"wc": randn(16, 8, 1, 1), "b": randn(16)})
        feeds = {"x": randn(1, 8, 9, w)}
        want = ge.Session(ge.compile(m, ge.Options(precision_mode=mode, disabled_passes=("drop_half_casts",))),
                          runtime="v2").run(None, feeds)[0]
        plan = ge.compile(m, ge.Options(precision_mode=mode))
        assert [n.op_type for n in plan.nodes].count("Cast") == 2, [n.op_type for n in plan.nodes]
        np.testing.assert_array_equal(ge.Session(plan, runtime="v2").run(None, feeds)[0], want)


DEPTHWISE_CASES = {  # (C, multiplier, H, kernel, stride, residual): ShuffleNet's, MobileNet's, a 5x5
    "3x3 s2": (24, 1, 15, 3, 2, False), "3x3 s1 residual": (16, 1, 12, 3, 1, True), "5x5 x2": (8, 2, 20, 5, 1, False),
}


@pytest.mark.parametrize("mode", ["allow_mix_precision", "allow_mix_precision_bf16"])
@pytest.mark.parametrize("case", list(DEPTHWISE_CASES))
def test_depthwise_convs_run_on_the_16_bit_map(mode, case):
    """conv_depthwise_half: the float32 DEPTHWISE code on converted planes, so the float32 bits."""
    C, mult, H, k, s, residual = DEPTHWISE_CASES[case]
    M, p = C * mult, k // 2
    nodes = [node("Conv", ["x", "w1", "b1"], ["a"]), node("Relu", ["a"], ["r"]),
             node("Conv", ["r", "wd", "bd"], ["d"], group=C, strides=[s, s], pads=[p] * 4)]
    if residual:
        nodes += [node("Add", ["d", "r"], ["e"]), node("Relu", ["e"], ["y"])]
    else:
        nodes += [node("Relu", ["d"], ["y"])]
    m = model(nodes, {"x": [2, 8, H, H]}, ["y"], {"w1": randn(C, 8, 1, 1), "b1": randn(C),
                                                  "wd": randn(M, 1, k, k) * 0.3, "bd": randn(M)})
    feeds = {"x": randn(2, 8, H, H)}
    want = ge.Session(ge.compile(m, ge.Options(precision_mode=mode, disabled_passes=("drop_half_casts",))),
                      runtime="v2").run(None, feeds)[0]
    for cores in (1, 2):
        plan = ge.compile(m, ge.Options(precision_mode=mode, aicore_num=cores))
        dw = [n for n in plan.nodes if n.attrs.get("group", 1) == C]
        assert len(dw) == 1 and plan.tensors[dw[0].inputs[0]].dtype.itemsize == 2, [n.op_type for n in plan.nodes]
        for runtime in ("v1", "v2"):
            np.testing.assert_array_equal(ge.Session(plan, runtime=runtime).run(None, feeds)[0], want)


def test_a_16_bit_conv_needs_packed_float32_weights():
    from ge.kernels import KernelContext, TensorSpec, lookup
    ctx = KernelContext("Conv", "c", {}, [TensorSpec((1, 4, 5, 5), np.float16), TensorSpec((8, 4, 3, 3), np.float16)],
                        [None, None], 17)
    with pytest.raises(ShapeError, match="float32 or float64"):
        lookup("Conv", "", 17).bind(ctx)


def test_squeezenet_feature_map_halves():
    """allow_mix_precision's planned feature map against float32's (was 1.20x with the Casts)."""
    from ge.zoo import with_random_weights
    m = with_random_weights("squeezenet")
    ratio = (ge.compile(m, ge.Options(precision_mode="allow_mix_precision")).memory.stats.feature_map_bytes /
             ge.compile(m).memory.stats.feature_map_bytes)
    assert ratio <= 0.52


def _depthwise_chain():
    """ShuffleNet's and MobileNet's depthwise convs: stride 2 with bias, then stride 1 with two outputs per
    channel and Relu, then a 5x5 whose result is added to its input (the Add stays float32)."""
    C = 24
    nodes = [node("Conv", ["x", "w1", "b1"], ["d1"], group=C, pads=[1] * 4, strides=[2, 2]),
             node("Conv", ["d1", "w2"], ["d2"], group=C, pads=[1] * 4), node("Relu", ["d2"], ["r2"]),
             node("Conv", ["r2", "w3", "b3"], ["d3"], group=2 * C, pads=[2] * 4),
             node("Add", ["d3", "r2"], ["s"]), node("Relu", ["s"], ["y"])]
    inits = {"w1": randn(C, 1, 3, 3), "b1": randn(C), "w2": randn(2 * C, 1, 3, 3), "w3": randn(2 * C, 1, 5, 5) * 0.2,
             "b3": randn(2 * C)}
    return model(nodes, {"x": [2, C, 29, 29]}, ["y"], inits), {"x": randn(2, C, 29, 29)}


@pytest.mark.parametrize("mode", ["allow_mix_precision", "allow_mix_precision_bf16"])
def test_16_bit_depthwise_convs_give_the_bits_of_the_float32_ones_between_casts(mode):
    """conv_depthwise_half: the depthwise convs keep 16-bit maps (no Cast left inside), with the bits of the
    float32 kernel between Casts, on both runtimes and any core count."""
    m, feeds = _depthwise_chain()
    opts = dict(precision_mode=mode, modify_mixlist={"white-list": {"to-add": ["Conv"]}})
    want = ge.Session(ge.compile(m, ge.Options(**opts, disabled_passes=("drop_half_casts",))),
                      runtime="v2").run(None, feeds)[0]
    for cores in (1, 2):
        plan = ge.compile(m, ge.Options(**opts, aicore_num=cores))
        convs = [n for n in plan.nodes if "Conv" in n.op_type]
        assert len(convs) == 3 and all(plan.tensors[n.outputs[0]].dtype.itemsize == 2 for n in convs)
        assert [n.op_type for n in plan.nodes][:3] == ["Cast", "Conv", "FusedConv"]   # no Cast between them
        for runtime in ("v1", "v2"):
            np.testing.assert_array_equal(ge.Session(plan, runtime=runtime).run(None, feeds)[0], want)


@pytest.mark.parametrize("dtype", [np.float16, "bfloat16"])
def test_a_16_bit_depthwise_fused_conv_with_residual(dtype):
    """ge::FusedConv on 16-bit X and Z (bias, Z, Relu): the float32 FusedConv's result on the widened values,
    rounded once, on both runtimes and any core count."""
    import ml_dtypes
    from op_check import make_model
    dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    C = 16
    x, z = randn(1, C, 20, 20).astype(dt), randn(1, 2 * C, 10, 10).astype(dt)
    w, b = randn(2 * C, 1, 3, 3), randn(2 * C)
    attrs = {"group": C, "pads": [1] * 4, "strides": [2, 2], "activation": "Relu"}
    m16, feeds = make_model("FusedConv", [x, w, b, z], attrs, domain="ge", const_inputs=(1, 2))
    m16.graph.output[0].type.tensor_type.elem_type = TensorProto.BFLOAT16 if dtype == "bfloat16" else F16
    m32, f32 = make_model("FusedConv", [x.astype(np.float32), w, b, z.astype(np.float32)], attrs, domain="ge",
                          const_inputs=(1, 2))
    want = ge.Session(m32, runtime="v2").run(None, f32)[0].astype(dt)
    for cores in (1, 2):
        plan = ge.compile(m16, ge.Options(aicore_num=cores))
        assert [n.op_type for n in plan.nodes] == ["FusedConv"]
        for runtime in ("v1", "v2"):
            got = ge.Session(plan, runtime=runtime).run(None, feeds)[0]
            np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("name", ["shufflenet", "inception_v2"])
def test_feature_map_halves_with_depthwise_and_branches(name):
    """ShuffleNet (depthwise convs in every unit: 0.71x with their Casts) and Inception v2 (four branches'
    conv scratch live at once: 0.53x with 32-position tiles)."""
    from ge.zoo import with_random_weights
    m = with_random_weights(name)
    ratio = (ge.compile(m, ge.Options(precision_mode="allow_mix_precision")).memory.stats.feature_map_bytes /
             ge.compile(m).memory.stats.feature_map_bytes)
    assert ratio <= 0.52
