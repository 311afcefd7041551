"""The AI cores: tiled launches run their blocks on the device's team from both runtimes, bitwise equal to
one block; bad options, failing blocks, closing and tracing."""
import dataclasses
import threading

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import ge
from ge.errors import ExecutionError, GEError
from ge.npu import aicore
from ge.npu.aicore import ACTIVE, CORE_TRACK0, CPUS, IDLE

SHAPE = (1, 64, 48, 48)


def chain_model(gather: bool = False):
    """Elementwise ops big enough to tile, and a Gather whose indices are fed (so they can be wrong)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)
    c = numpy_helper.from_array(np.linspace(-1, 1, SHAPE[1], dtype=np.float32).reshape(1, -1, 1, 1), "c")
    nodes = [helper.make_node("Add", ["x", "c"], ["a"], name="add"),
             helper.make_node("Relu", ["a"], ["r"], name="relu"),
             helper.make_node("Mul", ["r", "a"], ["m"], name="mul"),
             helper.make_node("Sigmoid", ["m"], ["y"], name="sigmoid")]
    inputs, outputs = [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if gather:
        inputs.append(helper.make_tensor_value_info("i", TensorProto.INT64, [40000]))
        nodes.append(helper.make_node("Gather", ["table", "i"], ["g"], name="gather", axis=0))
        nodes.append(helper.make_node("Reshape", ["y", "flat"], ["yf"], name="flatten"))
        table = numpy_helper.from_array(np.arange(4096 * 8, dtype=np.float32).reshape(4096, 8), "table")
        flat = numpy_helper.from_array(np.array([-1], np.int64), "flat")
        outputs = [helper.make_tensor_value_info("yf", TensorProto.FLOAT, None),
                   helper.make_tensor_value_info("g", TensorProto.FLOAT, None)]
        inits = [c, table, flat]
    else:
        inits = [c]
    graph = helper.make_graph(nodes, "chain", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def forced(plan, block_dim: int):
    """The plan with every tiled launch without workspaces cut into `block_dim` blocks (as for a device of
    more cores: a block's part does not depend on the core count)."""
    nodes = tuple(dataclasses.replace(n, launch=dataclasses.replace(n.launch, block_dim=block_dim))
                  if n.launch is not None and n.launch.tiled and not n.launch.workspaces else n
                  for n in plan.nodes)
    return dataclasses.replace(plan, nodes=nodes)


def feeds(bad: bool = False):
    rng = np.random.default_rng(0)
    i = rng.integers(0, 4096, 40000)
    if bad:
        i[-3] = 5000   # out of range, in the last block
    return {"x": rng.standard_normal(SHAPE).astype(np.float32), "i": i}


def test_aicore_num_is_checked():
    with pytest.raises(GEError, match="aicore_num"):
        ge.Options(aicore_num=-1)
    with pytest.raises(GEError, match=rf"aicore_num.*{CPUS}"):
        ge.compile(chain_model(), ge.Options(aicore_num=CPUS + 1))
    assert ge.compile(chain_model()).options.aicore_num == CPUS
    assert ge.compile(chain_model(), ge.Options(thread_budget=1)).options.aicore_num == 1


@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_blocks_on_the_cores_give_the_bits_of_one_block(runtime):
    one = ge.compile(chain_model(gather=True), ge.Options(aicore_num=1))
    want = ge.Session(one, runtime=runtime).run(None, feeds())
    plan = forced(ge.compile(chain_model(gather=True)), 4)   # more blocks than cores: cores take several
    assert sum(n.launch is not None and n.launch.block_dim == 4 for n in plan.nodes) >= 4
    with ge.Session(plan, runtime=runtime) as sess:
        for _ in range(3):
            for g, w in zip(sess.run(None, feeds()), want):
                np.testing.assert_array_equal(g, w)
    team = aicore.team()
    assert team.ctrl[ACTIVE] == 0 and team.ctrl[IDLE] == team.cores   # every token back


@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_a_failing_block_aborts_the_task_and_the_next_run_is_exact(runtime):
    plan = forced(ge.compile(chain_model(gather=True)), 4)
    with ge.Session(plan, runtime=runtime) as sess:
        want = sess.run(None, feeds())
        with pytest.raises(ExecutionError, match="gather"):
            sess.run(None, feeds(bad=True))
        for g, w in zip(sess.run(None, feeds()), want):
            np.testing.assert_array_equal(g, w)


def test_closing_leaves_no_session_thread_and_parks_the_cores():
    plan = forced(ge.compile(chain_model(), ge.Options(max_streams=2)), 2)
    before = {t.name for t in threading.enumerate()}
    sess = ge.Session(plan, runtime="v1")
    sess.run(None, {"x": feeds()["x"]})
    sess.close()
    left = {t.name for t in threading.enumerate()} - before
    assert not [n for n in left if "stream" in n]
    team = aicore.team()
    assert team.ctrl[ACTIVE] == 0 and team.ctrl[IDLE] == team.cores


@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_a_traced_run_shows_every_block(runtime):
    plan = forced(ge.compile(chain_model()), 2)
    tiled = [n.name for n in plan.nodes if n.launch is not None and n.launch.block_dim == 2]
    with ge.Session(plan, runtime=runtime) as sess:
        tracer = ge.npu.Tracer()
        sess.run_traced({"x": feeds()["x"]}, tracer)
    blocks = sorted(s.name for s in tracer.slices if s.kind == "block")
    assert blocks == sorted(f"{n}[{b}]" for n in tiled for b in range(2))
    assert all(s.track >= CORE_TRACK0 or s.track < 100 for s in tracer.slices if s.kind == "block")


@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_a_dropped_session_gives_its_launch_slots_back(runtime):
    """Regression: a session collected without close() kept its launch slots; after MAX_SLOTS of them every
    later session ran its blocks on one core (and traced none)."""
    import gc
    plan = forced(ge.compile(chain_model()), 2)
    team = aicore.team()
    gc.collect()
    free = len(team._free)
    for _ in range(3):
        s = ge.Session(plan, runtime=runtime)
        s.run(None, {"x": feeds()["x"]})
        del s
    gc.collect()
    assert len(team._free) == free
