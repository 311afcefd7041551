"""Atomic outputs (Launch.atomic: ConvTranspose's scatter-add): planned in the "atomic" segment, never reused,
zeroed by the runtime once per run (GE's centralized AtomicAddrClean); results stay right run after run."""
import dataclasses

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import ge
from ge.memory.verify import MemoryPlanError, verify_memory


def _model(graph_output_is_atomic=False):
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((3, 2, 3, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("ConvTranspose", ["x", "w"], ["up"], strides=[2, 2]),
             helper.make_node("ConvTranspose", ["x", "w"], ["up2"], strides=[1, 1]),
             helper.make_node("Relu", ["up"], ["y"]), helper.make_node("Sigmoid", ["up2"], ["z"])]
    outs = ["y", "z"] + (["up"] if graph_output_is_atomic else [])
    g = helper.make_graph(nodes, "atomic", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 5, 5])],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_atomic_outputs_get_their_own_zeroed_segment():
    plan = ge.compile(_model())
    mem = {t.name: t for t in plan.memory.tensors}
    assert mem["up"].segment == mem["up2"].segment == "atomic"
    assert mem["up"].offset != mem["up2"].offset  # never reused, even though their lives could allow it
    assert plan.memory.segments["atomic"] >= (2 * 11 * 11 + 2 * 7 * 7) * 4
    verify_memory(plan, plan.memory)
    tensors = list(plan.memory.tensors)  # the verifier keeps atomic outputs apart whatever the times
    up, up2 = (plan.tensor(n).index for n in ("up", "up2"))
    tensors[up2] = dataclasses.replace(tensors[up2], offset=tensors[up].offset)
    with pytest.raises(MemoryPlanError, match="atomic"):
        verify_memory(plan, dataclasses.replace(plan.memory, tensors=tuple(tensors)))


@pytest.mark.parametrize("as_output", [False, True], ids=["internal", "graph-output"])
@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_atomic_outputs_are_clean_on_every_run(runtime, as_output):
    model = _model(as_output)
    x = np.random.default_rng(1).standard_normal((1, 3, 5, 5)).astype(np.float32)
    want = ReferenceEvaluator(model).run(None, {"x": x})
    sess = ge.Session(model, runtime=runtime)
    for _ in range(3):  # an unclean output would accumulate run over run
        for got, w in zip(sess.run(None, {"x": x}), want):
            np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-4)
