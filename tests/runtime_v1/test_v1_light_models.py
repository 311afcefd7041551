"""runtime_v1 end to end: the 9 ONNX light models match their expected outputs, and with random weights
match onnxruntime; every kernel of these models runs native (no fallback task)."""
import numpy as np
import pytest

import ge
from ge.zoo import LIGHT_MODELS, expected_outputs, light_model_path, reference_feeds, with_random_weights


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model_matches_expected(name):
    sess = ge.Session(light_model_path(name), runtime="v1")
    got = sess.run(None, reference_feeds(sess))
    for g, w in zip(got, expected_outputs(name)):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-5)
    stats = sess._executor.stats()
    assert stats["fallback_tasks"] == 0, sess._executor.model.fallback_reasons()
    assert stats["native_tasks"] == sum(1 for n in sess.plan.nodes if n.launch is not None)


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model_random_weights_matches_onnxruntime(name):
    ort = pytest.importorskip("onnxruntime")
    model = with_random_weights(name)
    sess = ge.Session(model, runtime="v1")
    (inp,) = sess.get_inputs()
    x = np.random.default_rng(1).standard_normal([d if isinstance(d, int) else 1 for d in inp.shape])
    feeds = {inp.name: x.astype(np.float32)}
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    want = ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"]).run(None, feeds)
    for g, w in zip(sess.run(None, feeds), want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-5)
