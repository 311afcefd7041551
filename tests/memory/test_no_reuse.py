"""No-reuse nodes (Options.no_reuse_ops, GE's env OP_NO_REUSE_MEM): their outputs and workspaces get their own
feature-map block, shared with no other tensor; the verifier checks it; outputs are unchanged on both runtimes."""
import dataclasses
import functools

import numpy as np
import pytest
from onnx import TensorProto, helper

import ge
from ge.compiler import build_plan, import_model, optimize
from ge.errors import GEError
from ge.memory import plan_memory
from ge.npu.memory import align_up
from ge.memory.verify import MemoryPlanError, verify_memory
from ge.options import Options
from ge.schedule.toposort import topological_order
from ge.zoo import expected_outputs, light_model_path, reference_feeds

CONV = "FusedConv"  # SqueezeNet's Conv+Relu after fusion


@functools.lru_cache(maxsize=None)
def plan(name="squeezenet"):
    # Concats copy: re-planned below with other no-reuse options than it was compiled with, a Concat laid out
    # in place at compile time would tie no-reuse outputs into one block (compiling with them never does)
    g = optimize(import_model(light_model_path(name)), Options())
    return build_plan(g, topological_order(g, "dfs"), Options(concat_in_place=False))


def test_no_reuse_outputs_are_never_laid_out_in_a_concat():
    p = ge.compile(light_model_path("squeezenet"), {"no_reuse_ops": (CONV,)})
    assert not any(n.no_task for n in p.nodes)
    assert sum(n.no_task for n in ge.compile(light_model_path("squeezenet")).nodes) == 8


def replan(p, **opts):
    return plan_memory(dataclasses.replace(p, options=p.options.replace(**opts), memory=None))


def _own_blocks_ok(p, mem, op_type):
    outs = [t for n in p.nodes if n.op_type == op_type for t in n.outputs
            if t >= 0 and mem.tensors[t].segment == "feature_map"]
    assert outs
    spans = [(mem.tensors[t].offset, mem.tensors[t].offset + p.tensors[t].nbytes) for t in outs]
    for t, (a, b) in zip(outs, spans):  # no other static feature-map tensor (other than its views) overlaps
        for m, pt in zip(mem.tensors, p.tensors):
            if m.index == t or m.segment != "feature_map" or not pt.nbytes or m.alias_of == p.tensors[t].name:
                continue
            assert m.offset + pt.nbytes <= a or b <= m.offset, (p.tensors[t].name, pt.name)
    return outs


def test_no_reuse_conv_outputs_get_their_own_blocks():
    p = plan()
    base = p.memory.stats
    mem = replan(p, no_reuse_ops=(CONV,))
    verify_memory(dataclasses.replace(p, options=p.options.replace(no_reuse_ops=(CONV,))), mem)
    outs = _own_blocks_ok(p, mem, CONV)
    own = sum(align_up(p.tensors[t].nbytes) for t in outs)
    s = mem.stats
    assert s.no_reuse_bytes == base.no_reuse_bytes
    assert own <= s.lower_bound_bytes <= s.feature_map_bytes <= s.no_reuse_bytes
    assert s.feature_map_bytes >= base.feature_map_bytes + own // 2  # the conv outputs no longer share
    assert s.feature_map_bytes == min(s.totals.values()) == mem.segments["feature_map"]
    ws = [w for n, wss in zip(p.nodes, mem.workspaces) if n.op_type == CONV for w in wss if w[1]]
    assert ws  # the verifier above also kept each of them apart from everything else


def test_verifier_rejects_a_shared_no_reuse_tensor():
    p = plan()
    marked = dataclasses.replace(p, options=p.options.replace(no_reuse_ops=(CONV,)))
    with pytest.raises(MemoryPlanError, match="no-reuse"):
        verify_memory(marked, p.memory)  # planned with reuse: some conv output shares bytes


def test_node_names_match_too():
    p = plan()
    name = next(n.name for n in p.nodes if n.op_type == CONV)
    opts = p.options.replace(no_reuse_ops=(name,))
    mem = replan(p, no_reuse_ops=(name,))
    verify_memory(dataclasses.replace(p, options=opts), mem)
    assert mem.stats.feature_map_bytes > p.memory.stats.feature_map_bytes
    assert Options(no_reuse_ops=f"{name}, MaxPool").no_reuse_ops == (name, "MaxPool")


def test_env_op_no_reuse_mem(monkeypatch):
    p = plan()
    want = replan(p, no_reuse_ops=(CONV,))
    monkeypatch.setenv("OP_NO_REUSE_MEM", f"{CONV},NoSuchOp")
    got = plan_memory(dataclasses.replace(p, memory=None))
    verify_memory(p, got)
    assert got.tensors == want.tensors and got.stats.feature_map_bytes == want.stats.feature_map_bytes
    monkeypatch.setenv("OP_NO_REUSE_MEM", ",".join(f"op{i}" for i in range(11)))
    with pytest.raises(GEError, match="at most 10"):
        plan_memory(dataclasses.replace(p, memory=None))


def _chain():
    ops = ["Sigmoid", "Tanh", "Sigmoid", "Tanh"]
    names = ["x", "a", "b", "c", "y"]
    nodes = [helper.make_node(o, [names[i]], [names[i + 1]], name=f"{o.lower()}{i}") for i, o in enumerate(ops)]
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 64])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def test_inplace_never_involves_no_reuse_nodes():
    x = np.linspace(-3, 3, 64 * 64, dtype=np.float32).reshape(64, 64)
    want = np.tanh(1 / (1 + np.exp(-np.tanh(1 / (1 + np.exp(-x))))))
    alias = {}
    for nro in ((), ("Tanh",)):
        sess = ge.Session(_chain(), runtime="v2",
                          options={"inplace_memory": True, "no_reuse_ops": nro, "verify_passes": True})
        alias[nro] = {m.name: m.alias_of for m in sess.plan.memory.tensors}
        np.testing.assert_allclose(sess.run(None, {"x": x})[0], want, rtol=1e-5)
    assert alias[()]["b"] == alias[()]["c"] == "a"   # in place all along the chain
    assert alias[("Tanh",)]["b"] is None             # tanh1 may not write over a, nor sigmoid2 over b
    assert alias[("Tanh",)]["c"] is None


@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_outputs_unchanged_with_no_reuse(runtime, monkeypatch):
    monkeypatch.setenv("OP_NO_REUSE_MEM", CONV)
    sess = ge.Session(light_model_path("squeezenet"), runtime=runtime,
                      options={"no_reuse_ops": ("MaxPool",), "verify_passes": True})
    assert sess.plan.memory.stats.feature_map_bytes > plan().memory.stats.feature_map_bytes
    feeds = reference_feeds(sess)
    for _ in range(2):
        for g, w in zip(sess.run(None, feeds), expected_outputs("squeezenet")):
            np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-5)


def test_no_reuse_alias_node_stays_a_view():
    """A no-reuse alias node (Reshape) computes nothing: it stays a view of its source, and the plan verifies."""
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [32, 128])
    nodes = [helper.make_node("Sigmoid", ["x"], ["a"], name="sig"),
             helper.make_node("Reshape", ["a", "shape"], ["r"], name="rs"),
             helper.make_node("Tanh", ["r"], ["b"], name="th"),
             helper.make_node("Sigmoid", ["b"], ["y"], name="sig2")]
    g = helper.make_graph(nodes, "rs", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [32, 128])], [shape])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    x = np.linspace(-3, 3, 64 * 64, dtype=np.float32).reshape(64, 64)
    want = 1 / (1 + np.exp(-np.tanh(1 / (1 + np.exp(-x))))).reshape(32, 128)
    sess = ge.Session(m, runtime="v1", options={"no_reuse_ops": ("Reshape",), "verify_passes": True})
    mem = {t.name: t for t in sess.plan.memory.tensors}
    assert mem["r"].alias_of == "a" and mem["r"].offset == mem["a"].offset
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], want, rtol=1e-5)
