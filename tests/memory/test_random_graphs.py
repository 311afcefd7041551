"""Random DAGs (Relu, Add, Concat, Conv, Reshape pairs): every assigner's plan verifies, and either runtime
on the arena (Concats laid out in place where they can be) matches onnx's reference evaluator in a random
sort mode, with reuse and in-place on or off, on one stream or several (blocks then pass between streams
where events order them)."""
import dataclasses

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import ge
from ge.memory import plan_memory
from ge.memory.hybrid import ASSIGNERS
from ge.memory.verify import verify_memory
from ge.options import TOPO_MODES

H = W = 6


@st.composite
def dags(draw):
    chans = {"x": 2}
    nodes, inits = [], []
    for i in range(draw(st.integers(2, 12))):
        op = draw(st.sampled_from(["Relu", "Add", "Concat", "Conv", "Reshape"]))
        a = draw(st.sampled_from(sorted(chans)))
        out = f"t{i}"
        if op == "Add":
            same = sorted(t for t in chans if chans[t] == chans[a])
            nodes.append(helper.make_node("Add", [a, draw(st.sampled_from(same))], [out]))
        elif op == "Concat":
            b = draw(st.sampled_from(sorted(chans)))
            nodes.append(helper.make_node("Concat", [a, b], [out], axis=1))
            chans[out] = chans[a] + chans[b]
        elif op == "Conv":
            cout = draw(st.sampled_from([1, 3, 4]))
            w = np.random.default_rng(i).standard_normal((cout, chans[a], 3, 3)).astype(np.float32)
            inits.append(numpy_helper.from_array(w, f"w{i}"))
            nodes.append(helper.make_node("Conv", [a, f"w{i}"], [out], pads=[1, 1, 1, 1]))
            chans[out] = cout
        elif op == "Reshape":  # a pair of views: [1, C, H*W] and back
            for k, shape in enumerate(([1, chans[a], H * W], [1, chans[a], H, W])):
                inits.append(numpy_helper.from_array(np.array(shape, np.int64), f"s{i}_{k}"))
            nodes.append(helper.make_node("Reshape", [a, f"s{i}_0"], [f"{out}_flat"]))
            nodes.append(helper.make_node("Reshape", [f"{out}_flat", f"s{i}_1"], [out]))
        else:
            nodes.append(helper.make_node("Relu", [a], [out]))
        chans.setdefault(out, chans[a])
    last = nodes[-1].output[0]
    outs = sorted({last, draw(st.sampled_from(sorted(chans)))})
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, H, W])
    g = helper.make_graph(nodes, "rand", [x],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=dags(), mode=st.sampled_from(TOPO_MODES), reuse=st.booleans(), inplace=st.booleans(),
       single=st.booleans(), runtime=st.sampled_from(["v1", "v2"]))
def test_random_dag_plans_verify_and_run(model, mode, reuse, inplace, single, runtime):
    opts = ge.Options(topo_sorting_mode=mode, disable_reuse_memory=not reuse, inplace_memory=inplace,
                      enable_single_stream=single)
    plan = ge.compile(model, opts)
    verify_memory(plan, plan.memory)
    for name in ASSIGNERS:
        p = dataclasses.replace(plan, options=plan.options.replace(memory_assigner=name), memory=None)
        mem = plan_memory(p)
        verify_memory(plan, mem)
        assert mem.stats.lower_bound_bytes <= mem.stats.feature_map_bytes  # the bound is a real bound
    x = np.random.default_rng(0).standard_normal((1, 2, H, W)).astype(np.float32)
    sess = ge.Session(plan, runtime=runtime)
    want = ReferenceEvaluator(model).run(None, {"x": x})
    for _ in range(2):
        got = sess.run(None, {"x": x})
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
