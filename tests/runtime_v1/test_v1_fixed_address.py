"""Tasks that cannot take address refresh (docs/ge-reference.md §2.9: I/O whose peer task cannot take address
refresh is not zero copy; §4.1 DisableZeroCopy; §8.2: HCOM and similar ops do not support address refresh): their
graph inputs and outputs are copied at the boundary by runtime_v1, whose task tables are built once; runtime_v2
launches every task with the run's addresses (as RT2 does), so nothing changes there."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import ge
from ge.plan import aligned_empty, copy_only_io


def _model(attr=False):
    """fix = Relu(x) -> r and free = Neg(w) -> z, both graph outputs."""
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [8, 8])  # noqa: E731
    extra = {"_no_address_refresh": 1} if attr else {}
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="fix", **extra),
             helper.make_node("Neg", ["w"], ["z"], name="free")]
    return helper.make_model(helper.make_graph(nodes, "fixed", [vi("x"), vi("w")], [vi("r"), vi("z")]),
                             opset_imports=[helper.make_opsetid("", 13)])


def _aligned(seed):
    a = aligned_empty((8, 8), np.float32)
    a[...] = np.random.default_rng(seed).standard_normal((8, 8))
    return a


@pytest.mark.parametrize("how", ["option", "attribute"])
def test_io_of_a_fixed_address_task_is_copied_not_bound(how):
    """The Relu keeps its load-time addresses: x is copied into the arena's slot (never the caller's address)
    and r is computed there and copied out; w and z, used by an ordinary task, stay zero copy."""
    opts = {"fixed_address_ops": "fix"} if how == "option" else {}
    sess = ge.Session(_model(attr=how == "attribute"), runtime="v1", options=opts)
    plan, ex = sess.plan, sess._executor
    assert {plan.tensors[t].name for t in copy_only_io(plan)} == {"x", "r"}
    x, w, z_out, r_out = _aligned(0), _aligned(1), aligned_empty((8, 8), np.float32), aligned_empty((8, 8), np.float32)
    for _ in range(2):
        r, z = sess.run(None, {"x": x, "w": w}, outputs={"r": r_out, "z": z_out})
        np.testing.assert_array_equal(r, np.maximum(x, 0))
        np.testing.assert_array_equal(z, -w)
    st = ex.stats()
    assert (st["copy_only_inputs"], st["zero_copy_inputs"], st["copied_inputs"]) == (2, 2, 2)
    assert st["zero_copy_outputs"] == 2 and st["copied_outputs"] == 2   # z bound; r copied out
    inst, m = ex._instances.all[0], ex.model
    slot = m.io_slot[plan.tensor("x").index].slot
    assert inst.bases[slot] == inst.defaults[slot] != x.ctypes.data   # the task's address never moved


@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_results_equal_with_and_without_the_rule(runtime):
    """The rule changes only how I/O reaches the tasks, never the results."""
    x, w = _aligned(2), _aligned(3)
    got = []
    for opts in ({}, {"fixed_address_ops": ["Relu"]}):
        with ge.Session(_model(), runtime=runtime, options=opts) as s:
            got.append(s.run(None, {"x": x, "w": w}))
    for a, b in zip(*got):
        np.testing.assert_array_equal(a, b)


def test_hcom_tasks_copy_their_graph_io_by_the_kernel_contract():
    """docs/ge-reference.md §4.1 and GE's HcclTaskInfo::Init (DisableZeroCopy on an HCCL task's I/O); §8.2 (HCOM
    ops take no address refresh): no option and no attribute, the Hcom kernel's engine (HCCL,
    EngineInfo.address_refresh False) declares it. runtime_v1 copies its graph I/O; runtime_v2 gives every
    task the run's addresses, so both results are equal."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hccl"))
    from hccl_models import one_op
    from ge.npu.engines import ENGINE_INFO, HCCL
    from ge.plan import fixed_address_steps, no_zero_copy_steps
    assert not ENGINE_INFO[HCCL].address_refresh and all(e.address_refresh for k, e in ENGINE_INFO.items()
                                                         if k != HCCL)
    model = one_op("HcomAllReduce", [4, 6], reduction="sum")
    plan = ge.compile(model)
    assert no_zero_copy_steps(plan) == {0} and not fixed_address_steps(plan)   # the boundary only, no fixed segment
    assert {plan.tensors[t].name for t in copy_only_io(plan)} == {"x0", "y0"}
    x = aligned_empty((4, 6), np.float32)
    x[...] = np.arange(24, dtype=np.float32).reshape(4, 6)
    got = {}
    for runtime in ("v1", "v2"):
        s = ge.Session(model, runtime=runtime, options=ge.Options(parallel="data", device_count=2))
        got[runtime] = s.run(None, {"x0": x})[0]
        if runtime == "v1":
            st = s.stats()
            assert st["copy_only_inputs"] == 1 and st["zero_copy_inputs"] == 0 and st["copied_outputs"] == 1
    np.testing.assert_array_equal(got["v1"], got["v2"])
    np.testing.assert_array_equal(got["v1"], np.tile(x[:2] + x[2:], (2, 1)))


def test_a_fixed_segment_survives_a_gem_round_trip(tmp_path):
    """The fixed segment (docs/ge-reference.md §2.11 is_fixed_addr_prior) and the steps whose workspaces sit in it are
    saved in the .gem (ge/offline), so a loaded plan keeps the fixed task's blocks resident."""
    from ge.offline import load, save
    from test_v1_segmented_feature_map import _model as chain, _want
    plan = ge.compile(chain(), {"fixed_address_ops": "fix"})
    assert plan.memory.segments["fixed"] > 0
    back = load(save(plan, tmp_path / "fixed.gem"))
    assert dict(back.memory.segments) == dict(plan.memory.segments)
    assert back.memory.fixed_workspaces == plan.memory.fixed_workspaces
    assert [m.segment for m in back.memory.tensors] == [m.segment for m in plan.memory.tensors]
    x = np.random.default_rng(6).standard_normal((64, 64)).astype(np.float32)
    with ge.Session(back, runtime="v1") as s:
        np.testing.assert_allclose(s.run(None, {"x": x})[0], _want(x), rtol=1e-6)
