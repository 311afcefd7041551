"""Tasks that cannot take address refresh (GE_REFERENCE 2.9 "peers whose task cannot take address refresh" are
not zero copy, 4.1 DisableZeroCopy; seed 000 "2. 零拷贝内存优化": HCOM and similar ops do not support address
refresh): their graph inputs and outputs are copied at the boundary by runtime_v1, whose task tables are built
once; runtime_v2 launches every task with the run's addresses (as RT2 does), so nothing changes there."""
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
