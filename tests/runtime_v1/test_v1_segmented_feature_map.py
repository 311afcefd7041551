"""Segmented feature map (docs/ge-reference.md §2.11 and §4.1, segmented memory: weights | fixed FM | refreshable
FM | zero-copy I/O; §8.7, OPTION_FEATURE_BASE_REFRESHABLE): the blocks of tasks that keep their load-time
addresses (GE's is_fixed_addr_prior, here Options.fixed_address_ops) form a fixed segment that stays resident;
the rest, the refreshable feature map, can be given by the caller per run (Session.run(feature_base=...))."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import ge
from ge.errors import GEError
from ge.memory.verify import verify_memory
from runtime_v1.model import FEATURE_MAP, FIXED

OPTS = {"fixed_address_ops": "fix", "feature_base_refreshable": True}


def _model():
    """x -> fix (Relu) -> a -> Neg -> b -> Abs -> c -> Sigmoid -> y, 16 KiB each."""
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [64, 64])  # noqa: E731
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="fix"), helper.make_node("Neg", ["a"], ["b"], name="n1"),
             helper.make_node("Abs", ["b"], ["c"], name="n2"), helper.make_node("Sigmoid", ["c"], ["y"], name="n3")]
    return helper.make_model(helper.make_graph(nodes, "seg", [vi("x")], [vi("y")]),
                             opset_imports=[helper.make_opsetid("", 13)])


def _want(x):
    return 1 / (1 + np.exp(-np.abs(-np.maximum(x, 0))))


def test_blocks_of_fixed_address_tasks_form_their_own_segment():
    """docs/ge-reference.md §2.11: segments carry is_fixed_addr_prior when they hold such blocks; ge plans those
    blocks (reused among themselves) in `fixed`, the others in the refreshable `feature_map`."""
    plan = ge.compile(_model(), OPTS)
    mem = {t.name: t for t in plan.memory.tensors}
    assert mem["a"].segment == "fixed" and {mem["b"].segment, mem["c"].segment} == {"feature_map"}
    assert plan.memory.segments["fixed"] == 16384 and plan.memory.segments["feature_map"] == 32768
    verify_memory(plan, plan.memory)
    assert "fixed" not in ge.compile(_model()).memory.segments


def test_the_callers_refreshable_base_is_written_and_the_fixed_part_never_moves():
    """docs/ge-reference.md §4.1: UpdateGraphRefreshableFeatureMemoryBase re-bases only the refreshable feature map;
    the fixed feature memory keeps its address for the model's life."""
    sess = ge.Session(_model(), runtime="v1", options=OPTS)
    ex = sess._executor
    inst = ex._instances.all[0]
    fixed_addr = inst.defaults[FIXED]
    x = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    for k in range(3):
        base = np.zeros(ex.feature_memory_size, np.uint8)
        (y,) = sess.run(None, {"x": x}, feature_base=base)
        np.testing.assert_allclose(y, _want(x), rtol=1e-6)
        assert inst.defaults[FEATURE_MAP] == base.ctypes.data        # this run's refreshable base
        assert base.any()                                             # the run wrote into the caller's bytes
        assert inst.defaults[FIXED] == fixed_addr and inst.bases[FIXED] == fixed_addr   # never moved
    a = sess.plan.memory.tensors[sess.plan.tensor("a").index]
    np.testing.assert_array_equal(inst.fixed[a.offset:a.offset + a.bytes].view(np.float32).reshape(64, 64),
                                  np.maximum(x, 0))                   # the fixed task's output stayed there


def test_feature_base_needs_a_refreshable_runtime_v1_plan():
    x = np.zeros((64, 64), np.float32)
    with pytest.raises(GEError, match="feature_base_refreshable"):
        ge.Session(_model(), runtime="v1").run(None, {"x": x}, feature_base=np.zeros(1 << 16, np.uint8))
    with pytest.raises(GEError, match="runtime_v2 plans memory per run"):
        ge.Session(_model(), runtime="v2", options=OPTS).run(None, {"x": x}, feature_base=np.zeros(16, np.uint8))


def test_fixed_segment_runs_on_runtime_v2():
    """runtime_v2 keeps the fixed segment after the feature map in its one arena: same results."""
    x = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    with ge.Session(_model(), runtime="v2", options=OPTS) as s:
        assert s._executor.arena_bytes == 32768 + 16384
        for _ in range(2):
            np.testing.assert_allclose(s.run(None, {"x": x})[0], _want(x), rtol=1e-6)
