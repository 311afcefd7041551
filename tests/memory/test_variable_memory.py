"""Variable memory (docs/ge-reference.md §2.12, GE's VariableMemoryAssigner; §8.6, GE's tree of assigners): state
carried from run to run (Options.state_pairs: an output that is an input of the next run, a KV cache) gets its own
segment, never reused, on both runtimes."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import ge
from ge.errors import GEError
from ge.memory.verify import MemoryPlanError, verify_memory

STATE = {"new_cache": "cache"}


def _kv(extra_output=False):
    """new_cache = cache + x; y = Sigmoid(new_cache); a scratch chain z = Neg(Abs(x)) whose blocks the planner
    may reuse (the state's never)."""
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [4, 8])  # noqa: E731
    nodes = [helper.make_node("Abs", ["x"], ["a"], name="abs"), helper.make_node("Neg", ["a"], ["z"], name="neg"),
             helper.make_node("Add", ["cache", "z"], ["new_cache"], name="acc"),
             helper.make_node("Sigmoid", ["new_cache"], ["y"], name="sig")]
    outs = [vi("y"), vi("new_cache")] + ([vi("z")] if extra_output else [])
    return helper.make_model(helper.make_graph(nodes, "kv", [vi("cache"), vi("x")], outs),
                             opset_imports=[helper.make_opsetid("", 13)])


def test_state_pairs_get_a_variable_segment_of_their_own():
    """docs/ge-reference.md §2.12: variables take their own logical space, never reused; per pair ge keeps the input's
    block and the output's (a run reads one and writes the other: 2 x 512 B here)."""
    plan = ge.compile(_kv(), {"state_pairs": STATE})
    mem = {t.name: t for t in plan.memory.tensors}
    assert (mem["cache"].segment, mem["new_cache"].segment) == ("variable", "variable")
    assert {mem["cache"].offset, mem["new_cache"].offset} == {0, 512}
    assert plan.memory.segments["variable"] == 1024 and mem["x"].segment == "io"
    verify_memory(plan, plan.memory)
    assert "variable" not in ge.compile(_kv()).memory.segments


def test_verifier_keeps_variable_blocks_apart():
    """docs/ge-reference.md §2.12 (variables are never reused): the independent verifier refuses a plan whose two
    state blocks overlap."""
    import dataclasses
    plan = ge.compile(_kv(), {"state_pairs": STATE})
    tensors = list(plan.memory.tensors)
    i, o = plan.tensor("cache").index, plan.tensor("new_cache").index
    tensors[o] = dataclasses.replace(tensors[o], offset=tensors[i].offset)
    with pytest.raises(MemoryPlanError, match="variable"):
        verify_memory(plan, dataclasses.replace(plan.memory, tensors=tuple(tensors)))


@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_state_is_carried_from_run_to_run(runtime):
    """docs/ge-reference.md §2.12 (session-scoped variables): the state input may be left out of the feeds: it is the
    last run's output (zeros at first); feeding it sets the state; the returned state is a copy."""
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    z = -np.abs(x)
    with ge.Session(_kv(), runtime=runtime, options={"state_pairs": STATE}) as s:
        kept = []
        for r in range(1, 4):
            y, cache = s.run(None, {"x": x})
            np.testing.assert_allclose(cache, r * z, rtol=1e-6)
            np.testing.assert_allclose(y, 1 / (1 + np.exp(-r * z)), rtol=1e-6)
            kept.append(cache)
        np.testing.assert_allclose(kept[0], z, rtol=1e-6)   # not overwritten by later runs
        _, cache = s.run(None, {"x": x, "cache": np.full((4, 8), 10, np.float32)})
        np.testing.assert_allclose(cache, 10 + z, rtol=1e-6)
        _, cache = s.run(None, {"x": x})
        np.testing.assert_allclose(cache, 10 + 2 * z, rtol=1e-6)


@pytest.mark.parametrize("pairs,match", [
    ({"new_cache": "cache", "y": "cache"}, "'cache' is in another state pair"),
    ({"nope": "cache"}, "'nope' is not a tensor"),
    ({"new_cache": "y"}, "'y' is not a graph input"),
    ({"cache": "x"}, "'cache' is not a graph output"),
])
def test_bad_state_pairs_name_the_pair(pairs, match):
    with pytest.raises(GEError, match=match):
        ge.compile(_kv(), {"state_pairs": pairs})


@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_state_survives_an_offline_model(runtime, tmp_path):
    """A .gem keeps the variable segment and the state pairs (in its options): the loaded plan carries the
    state from run to run as the compiled one does."""
    plan = ge.compile(_kv(), {"state_pairs": STATE})
    loaded = ge.load(ge.save(plan, tmp_path / "kv.gem"))
    assert loaded.states == plan.states and loaded.memory.segments["variable"] == 1024
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    with ge.Session(loaded, runtime=runtime) as s:
        for r in range(1, 3):
            _, cache = s.run(None, {"x": x})
            np.testing.assert_allclose(cache, r * -np.abs(x), rtol=1e-6)
