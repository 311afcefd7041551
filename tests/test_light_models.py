"""The 9 ONNX light models run end to end on both runtimes and match the outputs shipped with onnx; tiled
over the machine's AI cores or on one core, both runtimes give the same bits."""
import numpy as np
import pytest

import ge
from ge.zoo import LIGHT_MODELS, expected_outputs, light_model_path, reference_feeds


@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model_matches_expected(name):
    tiled = ge.compile(light_model_path(name))           # aicore_num: the CPUs of this process
    one = ge.compile(light_model_path(name), ge.Options(aicore_num=1))
    v1, v2, v1_one = (ge.Session(tiled, runtime="v1"), ge.Session(tiled, runtime="v2"),
                      ge.Session(one, runtime="v1"))
    feeds = reference_feeds(v1)
    got = v1.run(None, feeds)
    want = expected_outputs(name)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-5)
    for other in (v2.run(None, feeds), v1_one.run(None, feeds)):   # bitwise, whatever the core count
        for g, o in zip(got, other):
            np.testing.assert_array_equal(g, o)
    # weights built by ConstantOfShape are folded at compile time: none runs at inference
    assert not any(n.op_type == "ConstantOfShape" for n in tiled.nodes)
    stats = v1.stats()   # every kernel of these models runs in the native task sink
    assert stats["fallback_tasks"] == 0, v1._executor.model.fallback_reasons()
    assert stats["native_tasks"] == sum(1 for n in tiled.nodes if n.launch is not None and not n.no_task)
    assert all(n.launch is None or n.launch.block_dim == 1 for n in one.nodes)
