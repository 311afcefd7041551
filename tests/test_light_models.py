"""The 9 ONNX light models run end to end on both runtimes and match the outputs shipped with onnx."""
import numpy as np
import pytest

import ge
from ge.zoo import LIGHT_MODELS, expected_outputs, light_model_path, reference_feeds


@pytest.mark.parametrize("runtime", ["v1", "v2"])
@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model_matches_expected(name, runtime):
    sess = ge.Session(light_model_path(name), runtime=runtime)
    got = sess.run(None, reference_feeds(sess))
    want = expected_outputs(name)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-5)
    # weights built by ConstantOfShape are folded at compile time: none runs at inference
    assert not any(n.op_type == "ConstantOfShape" for n in sess.plan.nodes)
    if runtime == "v1":  # every kernel of these models runs in the native task sink
        stats = sess._executor.stats()
        assert stats["fallback_tasks"] == 0, sess._executor.model.fallback_reasons()
        assert stats["native_tasks"] == sum(1 for n in sess.plan.nodes if n.launch is not None and not n.no_task)
