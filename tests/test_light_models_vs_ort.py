"""The light models with random weights: ge (both runtimes, tiled and on one core) against onnxruntime on a
random input.

The shipped light models fill every weight with one constant (every channel computes the same thing) and end
in a Softmax that random weights saturate, so a check of their probabilities alone passes for most wrong
kernels. Here the weights are random and the Softmax's input (the logits) is an output too, compared relative
to its own scale: a wrong channel, tap or block shows."""
import functools

import numpy as np
import onnx
import pytest

import ge
from ge.zoo import LIGHT_MODELS, with_random_weights

ort = pytest.importorskip("onnxruntime")


def with_logits(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with the input of its last Softmax as an extra output named 'logits' (a model ending without one,
    DenseNet's light export, already outputs them)."""
    softmaxes = [n for n in model.graph.node if n.op_type == "Softmax"]
    if not softmaxes:
        return model
    softmax = softmaxes[-1]
    model.graph.node.append(onnx.helper.make_node("Identity", [softmax.input[0]], ["logits"], name="logits"))
    model.graph.output.append(onnx.helper.make_tensor_value_info("logits", onnx.TensorProto.FLOAT, None))
    return model


@functools.lru_cache(maxsize=1)
def _reference(name):
    """(model, feeds, onnxruntime's outputs) of a light model, made once for both runtimes' cases (collected
    side by side): VGG-19's random weights and its onnxruntime run cost seconds each."""
    model = with_logits(with_random_weights(name))
    weights = {t.name for t in model.graph.initializer}
    (inp,) = [i for i in model.graph.input if i.name not in weights]
    dims = [d.dim_value or 1 for d in inp.type.tensor_type.shape.dim]
    feeds = {inp.name: np.random.default_rng(1).standard_normal(dims).astype(np.float32)}
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    want = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)
    return model, feeds, want


@pytest.mark.parametrize("runtime", ["v1", "v2"])
@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model_random_weights_matches_onnxruntime(name, runtime):
    model, feeds, want = _reference(name)
    got = ge.Session(model, runtime=runtime).run(None, feeds)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4 * float(np.abs(w).max()))
    logits = got[-1]
    assert np.std(logits) > 1e-3 * np.abs(logits).max(), "logits all alike: the comparison would say nothing"
    if runtime == "v1":  # tiled over the AI cores or on one core, the same bits
        one = ge.Session(ge.compile(model, ge.Options(aicore_num=1)), runtime="v1").run(None, feeds)
        for g, o in zip(got, one):
            np.testing.assert_array_equal(g, o)
