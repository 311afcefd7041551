"""Lifetimes on a small hand-checked graph: clock, aliases, segments, workspaces, lower bound."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

import ge
from ge.memory.lifetime import NEVER, Buffer, compute_lifetimes, live_lower_bound


def _model():
    #  x -> Relu r -> MaxPool m (workspace: a stride of 3 runs pool.py's walker) -> Reshape f (view of m)
    #  -> Relu g -> Add(g, f) y;  Relu(r) z
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu_r"),
             helper.make_node("MaxPool", ["r"], ["m"], name="pool", kernel_shape=[3, 3], strides=[3, 3]),
             helper.make_node("Reshape", ["m", "s"], ["f"], name="flat"),
             helper.make_node("Relu", ["f"], ["g"], name="relu_g"),
             helper.make_node("Add", ["g", "f"], ["y"], name="add"),
             helper.make_node("Relu", ["r"], ["z"], name="relu_z")]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 8, 8])
    g = helper.make_graph(nodes, "small", [x],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "z")],
                          [numpy_helper.from_array(np.array([1, -1], np.int64), "s")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_lifetimes_follow_the_clock():
    plan = ge.compile(_model(), {"topo_sorting_mode": "bfs", "enable_single_stream": True})
    step = {n.name: n.step for n in plan.nodes}
    life = compute_lifetimes(plan)
    idx = {t.name: t.index for t in plan.tensors}
    seg = {t.name: life.segment[t.index] for t in plan.tensors}
    assert seg == {"x": "io", "r": "feature_map", "m": "feature_map", "s": "weights", "f": "feature_map",
                   "g": "feature_map", "y": "io", "z": "io"}
    assert life.root[idx["f"]] == idx["m"]  # the Reshape output shares m's block
    assert (life.first[idx["r"]], life.last[idx["r"]]) == (step["relu_r"], max(step["pool"], step["relu_z"]))
    # m lives until the last reader of its view f
    assert (life.first[idx["m"]], life.last[idx["m"]]) == (step["pool"], step["add"])
    assert (life.first[idx["g"]], life.last[idx["g"]]) == (step["relu_g"], step["add"])
    ws = [b for b in life.buffers if b.key[0] == "workspace"]
    assert ws and all((b.begin, b.end, b.late_release) == (step["pool"], step["pool"], True) for b in ws)
    assert all(b.size % 512 == 0 for b in life.buffers)
    assert [b.id for b in life.buffers] == list(range(len(life.buffers)))
    mem = plan.memory
    f, m = mem.tensors[idx["f"]], mem.tensors[idx["m"]]
    assert f.alias_of == "m" and f.offset == m.offset


def test_lower_bound_is_max_live_bytes():
    bs = [Buffer(0, ("tensor", 0), 1024, 0, 2, 0, False), Buffer(1, ("tensor", 1), 512, 1, 1, 0, True),
          Buffer(2, ("tensor", 2), 2048, 3, NEVER, 0, False), Buffer(3, ("tensor", 3), 512, 2, 3, 0, False)]
    assert live_lower_bound(bs, 5) == 2560  # step 3: 2048 + 512
    assert live_lower_bound([], 3) == 0


def test_cross_stream_reader_never_releases():
    import dataclasses
    plan = ge.compile(_model(), {"topo_sorting_mode": "bfs", "enable_single_stream": True})
    nodes = list(plan.nodes)
    k = next(i for i, n in enumerate(nodes) if n.name == "relu_z")
    nodes[k] = dataclasses.replace(nodes[k], stream=1)
    life = compute_lifetimes(dataclasses.replace(plan, nodes=tuple(nodes)))
    r = next(t.index for t in plan.tensors if t.name == "r")
    assert life.last[r] == NEVER


def test_inplace_output_takes_an_input_read_for_the_last_time():
    import dataclasses

    import pytest

    from ge.memory.verify import verify_memory
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("Add", ["b", "a"], ["c"]), helper.make_node("Relu", ["c"], ["y"])]
    g = helper.make_graph(nodes, "inplace", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 256])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    plan = ge.compile(m, {"inplace_memory": True})
    mem = {t.name: t for t in plan.memory.tensors}
    assert mem["b"].alias_of is None  # a is still read by the Add
    assert mem["c"].alias_of == "b" and mem["c"].offset == mem["b"].offset
    verify_memory(plan, plan.memory)
    x = np.random.default_rng(0).standard_normal((4, 256)).astype(np.float32)
    y, = ge.Session(plan, runtime="v2").run(None, {"x": x})
    np.testing.assert_allclose(y, 2 * np.maximum(x, 0), rtol=1e-6)
    # forging "b overwrites a in place" is caught: the Add still reads a
    forged = list(plan.memory.tensors)
    forged[mem["b"].index] = dataclasses.replace(mem["b"], offset=mem["a"].offset, alias_of="a")
    with pytest.raises(Exception, match="reads it later|share bytes"):
        verify_memory(plan, dataclasses.replace(plan.memory, tensors=tuple(forged)))
