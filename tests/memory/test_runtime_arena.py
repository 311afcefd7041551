"""runtime_v2 on the planned arena: light models match with reuse on and off and in every sort mode;
concurrent runs never share an arena; outputs are fresh arrays."""
import threading

import numpy as np
import pytest
from onnx import TensorProto, helper

import ge
from ge.options import TOPO_MODES
from ge.zoo import LIGHT_MODELS, expected_outputs, light_model_path, reference_feeds

CONFIGS = ([{"topo_sorting_mode": m} for m in TOPO_MODES] + [{"ge.exec.disableReuseMemory": "1"}]
           + [{"inplace_memory": True}])


@pytest.mark.parametrize("opts", CONFIGS, ids=lambda o: "-".join(map(str, o.values())))
@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_model_matches_on_the_arena(name, opts):
    sess = ge.Session(light_model_path(name), runtime="v2", options=opts)
    assert sess.plan.memory is not None
    feeds = reference_feeds(sess)
    for _ in range(2):  # the second run reuses the pooled arena
        got = sess.run(None, feeds)
        for g, w in zip(got, expected_outputs(name)):
            np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-5)


def _chain_model():
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Add", ["a", "x"], ["b"]),
             helper.make_node("Relu", ["b"], ["c"]), helper.make_node("Add", ["c", "a"], ["d"]),
             helper.make_node("Add", ["d", "d"], ["y"])]
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _ref(x):
    a = np.maximum(x, 0)
    d = np.maximum(a + x, 0) + a
    return d + d


def test_outputs_are_fresh_arrays_not_arena_views():
    sess = ge.Session(_chain_model(), runtime="v2")
    x = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    y1, = sess.run(None, {"x": x})
    y2, = sess.run(None, {"x": -x})
    np.testing.assert_allclose(y1, _ref(x), rtol=1e-6)
    np.testing.assert_allclose(y2, _ref(-x), rtol=1e-6)
    assert not np.shares_memory(y1, y2)


def test_concurrent_runs_use_separate_arenas():
    sess = ge.Session(_chain_model(), runtime="v2")
    xs = [np.random.default_rng(i).standard_normal((64, 64)).astype(np.float32) for i in range(4)]
    errors = []

    def worker(x):
        try:
            for _ in range(20):
                y, = sess.run(None, {"x": x})
                np.testing.assert_allclose(y, _ref(x), rtol=1e-6)
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(x,)) for x in xs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert 1 <= len(sess._executor._pool) <= len(xs)


def test_dynamic_graph_keeps_allocating():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Add", ["a", "a"], ["y"])]
    m = helper.make_model(helper.make_graph(nodes, "dyn", [x], [helper.make_tensor_value_info(
        "y", TensorProto.FLOAT, None)]), opset_imports=[helper.make_opsetid("", 17)])
    sess = ge.Session(m, runtime="v2")
    assert {t.segment for t in sess.plan.memory.tensors} <= {"io", "dynamic"}
    for n in (1, 3):
        y, = sess.run(None, {"x": np.full((n, 4), -1.0, np.float32) + np.arange(4, dtype=np.float32)})
        np.testing.assert_allclose(y, 2 * np.maximum(np.arange(4) - 1.0, 0) * np.ones((n, 1)))
