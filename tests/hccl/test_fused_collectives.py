"""Fused collectives (passes/fuse_collectives.py; GE's HCOM fusion with ContinuousMemMng, docs/ge-reference.md
§2.10, §8.8): AllReduces with fusion 1, or fusion 2 and one fusion_id, become one exchange over continuous input
memory, the producers writing straight into their slices of it; the outputs equal the unfused plan's."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge

X = np.random.default_rng(1).standard_normal((4, 16)).astype(np.float32)


def gradients(fusion: int, n: int = 3, fusion_ids=None):
    """x [4, 16] -> n MatMuls (gradient-like, each [4, 8]) -> HcomAllReduce each -> Mul 0.5 -> g<i>."""
    rng = np.random.default_rng(0)
    nodes, inits, outs = [], [numpy_helper.from_array(np.array(0.5, np.float32), "half")], []
    for i in range(n):
        inits.append(numpy_helper.from_array(rng.standard_normal((16, 8)).astype(np.float32), f"w{i}"))
        ids = {"fusion_id": (fusion_ids or [0] * n)[i]} if fusion == 2 else {}
        nodes += [helper.make_node("MatMul", ["x", f"w{i}"], [f"h{i}"], name=f"fc{i}"),
                  helper.make_node("HcomAllReduce", [f"h{i}"], [f"r{i}"], name=f"ar{i}", domain="ge",
                                   reduction="sum", group="hccl_world_group", fusion=fusion, **ids),
                  helper.make_node("Mul", [f"r{i}", "half"], [f"g{i}"], name=f"g{i}")]
        outs.append(helper.make_tensor_value_info(f"g{i}", TensorProto.FLOAT, [4, 8]))
    g = helper.make_graph(nodes, "gradients", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
                          outs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ge", 1)])


def collectives(plan):
    return [n for n in plan.nodes if n.op_type == "HcomAllReduce"]


def compile2(model):
    return ge.compile(model, ge.Options(device_count=2))


@pytest.mark.parametrize("fusion", [1, 2])
def test_one_exchange_over_continuous_inputs(fusion):
    plan = compile2(gradients(fusion))
    (ar,) = collectives(plan)
    cat = next(n for n in plan.nodes if n.outputs[0] == ar.inputs[0])
    assert cat.op_type == "Concat" and cat.no_task          # the producers wrote the fused buffer
    mem = plan.memory.tensors
    offsets = [mem[t].offset for t in cat.inputs]
    sizes = [plan.tensors[t].nbytes for t in cat.inputs]
    assert offsets[0] == mem[cat.outputs[0]].offset
    assert offsets == [offsets[0] + sum(sizes[:k]) for k in range(len(sizes))]   # side by side, in order


def test_fusion_ids_group_apart_and_fusion_0_stays_alone():
    assert len(collectives(compile2(gradients(2, 4, [0, 1, 0, 1])))) == 2
    assert len(collectives(compile2(gradients(0)))) == 3


@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_fused_outputs_equal_unfused(runtime):
    run = lambda fusion: ge.Session(gradients(fusion), runtime=runtime,  # noqa: E731
                                    options=ge.Options(device_count=2)).run(None, {"x": X})
    fused, alone = run(1), run(0)
    for a, b in zip(fused, alone):
        np.testing.assert_array_equal(a, b)
    w0 = numpy_helper.to_array(gradients(0).graph.initializer[1])
    np.testing.assert_allclose(fused[0], X @ w0, rtol=1e-6)   # (h0 + h0) / 2 over 2 ranks
