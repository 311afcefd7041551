"""The light models with random weights: ge (both runtimes) against onnxruntime on a random input."""
import functools

import numpy as np
import pytest

import ge
from ge.zoo import LIGHT_MODELS, with_random_weights

ort = pytest.importorskip("onnxruntime")


@functools.lru_cache(maxsize=1)
def _reference(name):
    """(model, feeds, onnxruntime's outputs) of a light model, made once for both runtimes' cases (collected
    side by side): VGG-19's random weights and its onnxruntime run cost seconds each."""
    model = with_random_weights(name)
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
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-5)
