"""Gear memory split: docs/ge-reference.md §2.10 (DynamicBatchMemAssigner: groups split at
kMaxSplitSizeForDynamicBatch = 400 MiB in extend-size memory mode) and §8.5 (users read: with dynamic batch the
largest split is 400 MB). The
batch gears' shared feature map becomes several buffers, none past the split size, no tensor cut in two;
results equal the one-buffer gears'. The tests set a small split size (gear_memory_split_bytes) to stay small."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import ge
from ge.errors import GEError
from ge.memory.verify import verify_memory
from ge.option_values import GEAR_SPLIT_BYTES
from runtime_v1.gear_memory import cuts, runs

GEARS = [1, 4, 16]
SPLIT = 4096


def branchy():
    """x [N, 32] -> a = x*x, b = Relu(a), c = a + b, d = Relu(c) * x, out = d + c: several values live at once."""
    vi = helper.make_tensor_value_info
    nodes = [helper.make_node("Mul", ["x", "x"], ["a"]), helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("Add", ["a", "b"], ["c"]), helper.make_node("Relu", ["c"], ["rc"]),
             helper.make_node("Mul", ["rc", "x"], ["d"]), helper.make_node("Add", ["d", "c"], ["out"])]
    g = helper.make_graph(nodes, "branchy", [vi("x", TensorProto.FLOAT, ["N", 32])],
                          [vi("out", TensorProto.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def reference(x):
    a = x * x
    c = a + np.maximum(a, 0)
    return np.maximum(c, 0) * x + c


@pytest.fixture(scope="module")
def sessions():
    one = ge.Session(branchy(), runtime="v1", options={"dynamic_batch": GEARS})
    split = ge.Session(branchy(), runtime="v1", options={"dynamic_batch": GEARS, "gear_memory_split_bytes": SPLIT})
    return one, split


def test_ge_static_memory_policy_sets_ges_400_mib():
    """GE's extend-size modes 1 and 2 split at kMaxSplitSizeForDynamicBatch; 0 is GE's default (no split)."""
    assert GEAR_SPLIT_BYTES == 400 * 1024 * 1024
    for v in ("1", "2"):
        assert ge.Options.from_dict({"ge.exec.staticMemoryPolicy": v}).gear_memory_split_bytes == GEAR_SPLIT_BYTES
    assert ge.Options.from_dict({"ge.exec.staticMemoryPolicy": "0"}) == ge.Options()
    for v, match in (("4", "runtime_v2's caching allocator"), ("x", "takes")):
        with pytest.raises(GEError, match=match):
            ge.Options.from_dict({"ge.exec.staticMemoryPolicy": v})


def test_split_feature_map_is_pieces_no_tensor_straddles(sessions):
    one, split = sessions
    st1, st = one._executor.stats(), split._executor.stats()
    assert st1["feature_map_pieces"] == [max(st1["feature_map_bytes_per_gear"].values())]
    pieces = st["feature_map_pieces"]
    assert len(pieces) > 1
    for g, plan in split.gear_plans.plans.items():
        verify_memory(plan, plan.memory)          # the plans are the same; only the buffers are cut
        at = cuts(plan, SPLIT)
        for s, e in runs(plan):                   # a cut never falls inside a used run
            assert not any(s < c < e for c in at)
        bounds = (0, *at)
        for k, (s, e) in enumerate(zip(bounds, (*at, None))):
            size = st["feature_map_pieces_per_gear"][g][k]
            assert size <= pieces[k]
            # a piece passes the split size only when one run alone is bigger
            assert size <= SPLIT or any(r[1] - r[0] > SPLIT for r in runs(plan) if r[0] >= s)
    print(f"\ngear feature map bytes, one buffer: {st1['feature_map_bytes']} ({st1['feature_map_bytes_per_gear']}); "
          f"split at {SPLIT}: pieces {pieces} = {st['feature_map_bytes']} "
          f"(per gear {st['feature_map_pieces_per_gear']})")


@pytest.mark.parametrize("batch", [1, 3, 16])
def test_split_gears_equal_one_buffer_gears(sessions, batch):
    one, split = sessions
    x = np.random.default_rng(batch).standard_normal((batch, 32)).astype(np.float32)
    got, want = split.run(None, {"x": x})[0], one.run(None, {"x": x})[0]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, reference(x), rtol=1e-6)


def test_split_refuses_a_refreshable_base():
    with pytest.raises(GEError, match="refreshable base is one buffer"):
        ge.Session(branchy(), runtime="v1", options={"dynamic_batch": GEARS, "gear_memory_split_bytes": SPLIT,
                                                      "feature_base_refreshable": True})


def test_atomic_region_in_a_later_piece_is_zeroed_every_run():
    """The atomic region (GE's centralized AtomicAddrClean, after the feature map in the slot) lands in the
    last piece when split; runtime_v1 zeroes it there, so ConvTranspose's scatter-add stays right run after run."""
    import sys
    from pathlib import Path
    from onnx.reference import ReferenceEvaluator
    from ge.models import with_symbolic_dims
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "memory"))
    from test_atomic import _model
    model = _model()
    x = np.random.default_rng(3).standard_normal((2, 3, 5, 5)).astype(np.float32)
    want = ReferenceEvaluator(model).run(None, {"x": x})
    s = ge.Session(with_symbolic_dims(model, {"x": {0: "N"}}), runtime="v1",
                   options={"dynamic_batch": [1, 2], "gear_memory_split_bytes": 1024})
    ex = s._executor
    gear = ex._sets.all[0].executors[2].model
    assert len(gear.atomic) == 2 and all(slot != 1 for slot, _, _ in gear.atomic)   # over two later pieces
    for _ in range(3):
        for got, w in zip(s.run(None, {"x": x}), want):
            np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-4)
