"""The light models with random weights: ge (both runtimes) against onnxruntime on a random input."""
import numpy as np
import pytest

import ge
from ge.zoo import LIGHT_MODELS, with_random_weights

ort = pytest.importorskip("onnxruntime")


@pytest.mark.parametrize("runtime", ["v1", "v2"])
@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model_random_weights_matches_onnxruntime(name, runtime):
    model = with_random_weights(name)
    sess = ge.Session(model, runtime=runtime)
    (inp,) = sess.get_inputs()
    x = np.random.default_rng(1).standard_normal([d if isinstance(d, int) else 1 for d in inp.shape])
    feeds = {inp.name: x.astype(np.float32)}
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    want = ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"]).run(None, feeds)
    got = sess.run(None, feeds)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-5)
