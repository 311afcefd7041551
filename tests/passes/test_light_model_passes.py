"""The optimization passes on the 9 ONNX light models: what remains after the pipeline, and outputs that
still match the shipped references with each pass switched off. The light models' weights are all 0.02,
which hides a wrongly folded scale or bias; so a few run again with random weights against onnxruntime.
"""
import collections

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import ge
from ge.kernels import conv as conv_kernels
from ge.compiler import import_model, optimize
from ge.ir import verify
from ge.zoo import LIGHT_MODELS, expected_outputs, light_model_path, reference_feeds

GONE = ("ConstantOfShape", "Identity", "Dropout", "Mul", "Add", "Sum")
# per model: (nodes in the file, nodes after the pipeline, the counts of the ops the passes touch)
EXPECTED = {
    "bvlc_alexnet": (40, 15, {"ge::FusedConv": 5, "ge::FusedGemm": 2, "Gemm": 1}),
    "densenet121": (1746, 308, {"ge::FusedConv": 121, "BatchNormalization": 62, "Relu": 62}),
    "inception_v1": (237, 85, {"ge::FusedConv": 57, "Gemm": 1}),
    "inception_v2": (916, 95, {"ge::FusedConv": 69, "Gemm": 1}),
    "resnet50": (415, 58, {"ge::FusedConv": 53, "ge::FusedConv+Z": 16, "Gemm": 1}),
    "shufflenet": (446, 111, {"ge::FusedConv": 30, "ge::FusedConv+Z": 13, "Conv": 19, "Relu": 3, "Gemm": 1}),
    "squeezenet": (105, 39, {"ge::FusedConv": 26}),
    "vgg19": (82, 26, {"ge::FusedConv": 16, "ge::FusedGemm": 2, "Gemm": 1}),
    "zfnet512": (38, 15, {"ge::FusedConv": 5, "ge::FusedGemm": 2, "Gemm": 1}),
}
TOUCHED = ("ge::FusedConv", "ge::FusedConv+Z", "ge::FusedGemm", "ge::FusedMatMul", "Conv", "Gemm",
           "BatchNormalization", "Relu")
# the models each pass changes (off elsewhere, the plan is the one tests/test_light_models.py runs)
CHANGED_BY = {
    "remove_identity": ("bvlc_alexnet", "inception_v1", "squeezenet", "vgg19"),
    "fold_batchnorm": ("densenet121", "inception_v2", "resnet50", "shufflenet"),
    "fuse_activation": LIGHT_MODELS,
    "pack_conv_weights": LIGHT_MODELS,
}
# convs left unpacked (conv.wants_packed): under 32 output channels a group (Inception v1's and SqueezeNet's
# 16 and 24, ShuffleNet's first conv and its 16 depthwise ones) or over 10% of lanes idle (ShuffleNet's
# grouped convs of 28, 34 and 68 channels a group); and 1x1 convs of fewer than 32 input channels on a
# plane (pack_conv_weights' POINTWISE rule: SqueezeNet's fire2 and fire3 expand1x1, 16 channels on 55x55)
UNPACKED = {"inception_v1": 4, "shufflenet": 43, "squeezenet": 4}


@pytest.fixture(autouse=True)
def _pack_float32_convs(monkeypatch):
    """The pass's rules as on AVX-512, whatever this CPU: without it float32 convs stay unpacked
    (conv.PACK_FLOAT32; test_pack_conv_weights.py holds that rule)."""
    monkeypatch.setattr(conv_kernels, "PACK_FLOAT32", True)


def op_counts(graph) -> collections.Counter:
    c = collections.Counter(f"{n.domain}::{n.op_type}" if n.domain else n.op_type for n in graph.nodes)
    c["ge::FusedConv+Z"] = sum(n.op_type == "FusedConv" and len(n.inputs) > 3 for n in graph.nodes)
    return c


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model_after_the_pipeline(name):
    n_file, n_after, want = EXPECTED[name]
    g = import_model(light_model_path(name))
    assert len(g.nodes) == n_file
    optimize(g, ge.Options(verify_passes=True))
    verify(g)
    counts = op_counts(g)
    assert {op: counts[op] for op in GONE} == dict.fromkeys(GONE, 0)
    assert {op: counts[op] for op in TOUCHED if counts[op] or op in want} == want
    assert len(g.nodes) == n_after
    unpacked = [n for n in g.nodes if "Conv" in n.op_type and "weight_shape" not in n.attrs]
    assert len(unpacked) == UNPACKED.get(name, 0)


@pytest.mark.parametrize("name,off", [(m, p) for p, models in CHANGED_BY.items() for m in models])
def test_light_model_matches_with_a_pass_off(name, off):
    sess = ge.Session(light_model_path(name), runtime="v2", options=ge.Options(disabled_passes=(off,)))
    left = {"remove_identity": ("Dropout",), "fold_batchnorm": ("BatchNormalization", "Mul", "Add"),
            "fuse_activation": ("Relu",), "pack_conv_weights": ("Conv", "FusedConv")}[off]
    assert any(n.op_type in left for n in sess.plan.nodes)
    if off == "fuse_activation":
        assert not any(n.attrs.get("activation") for n in sess.plan.nodes)
    if off == "pack_conv_weights":
        assert not any("weight_shape" in n.attrs for n in sess.plan.nodes)
    got = sess.run(None, reference_feeds(sess))
    for g, w in zip(got, expected_outputs(name)):
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-5)


def randomized(name: str, seed: int = 0) -> onnx.ModelProto:
    """The light model with each ConstantOfShape weight replaced by a random Constant of its shape (and
    the logits as a second output)."""
    rng = np.random.default_rng(seed)
    m = onnx.load(light_model_path(name))
    shapes = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer if t.name.endswith("__SHAPE")}
    nodes = []
    for n in m.graph.node:
        if n.op_type != "ConstantOfShape":
            nodes.append(n)
            continue
        shape, out = tuple(int(d) for d in shapes[n.input[0]]), n.output[0]
        if len(shape) >= 2:  # conv / fc weights, scaled by fan-in
            a = rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))
        elif any(k in out for k in ("var", "riv", "scale", "_s_", "sc_w")):  # BN scales, variances
            a = rng.uniform(0.5, 1.5, shape)
        else:
            a = rng.standard_normal(shape) * 0.1
        nodes.append(helper.make_node("Constant", [], [out], value=numpy_helper.from_array(a.astype(np.float32))))
    keep = [t for t in m.graph.initializer if t.name not in shapes]
    inputs = [i for i in m.graph.input if i.name not in shapes]
    del m.graph.node[:], m.graph.initializer[:], m.graph.input[:]
    m.graph.node.extend(nodes)
    m.graph.initializer.extend(keep)
    m.graph.input.extend(inputs)
    if nodes[-1].op_type == "Softmax":  # a saturated softmax hides errors: compare the logits too
        m.graph.output.append(helper.make_tensor_value_info(nodes[-1].input[0], onnx.TensorProto.FLOAT, None))
    return m


@pytest.mark.parametrize("name", ["resnet50", "densenet121", "shufflenet", "inception_v2"])
def test_randomized_light_model_matches_onnxruntime(name):
    ort = pytest.importorskip("onnxruntime")
    m = randomized(name)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ref = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    sess = ge.Session(m, runtime="v2")
    assert any(n.domain == "ge" for n in sess.plan.nodes)
    feeds = {i.name: np.random.default_rng(1).standard_normal(
        [d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32) for i in sess.get_inputs()}
    for g, w in zip(sess.run(None, feeds), ref.run(None, feeds)):
        # sums in another order differ by a few units of the output's scale, not of each element: ShuffleNet's
        # random logits reach 222 and one near 0.03 differed by 4.4e-05 on an AVX2 machine (2.0e-7 of 222)
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=max(1e-5, 1e-6 * float(np.abs(w).max())))
