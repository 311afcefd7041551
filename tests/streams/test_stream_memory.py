"""The cross-stream memory rule (ARCHITECTURE.md, "Memory") and the verifier under stream + event order."""
import dataclasses

import pytest
import numpy as np

import ge
from ge.memory.lifetime import NEVER, compute_lifetimes
from ge.memory.report import memory_layout
from ge.memory.verify import MemoryPlanError, verify_memory
from ge.options import TOPO_MODES
from ge.schedule.events import happens_before
from ge.zoo import LIGHT_MODELS, light_model_path
from golden_graph import golden_graph


# b and c run on two streams; a (read on both) and b (read on the other stream, which nothing on stream 0
# follows) are never freed for stream 0, but both are free for stream 1 from Concat on (it waits for b's
# event), so d takes a's bytes and f b's (tests/memory/test_golden_layout.py: 1 stream)
GOLDEN_TWO_STREAMS = f"""\
feature_map 8192 B by binary-block; bound 8192 B; io 6144 B
  0 Relu       %a feature_map@0+2048[0,{NEVER}]
  1 Relu       %b feature_map@4096+2048[1,{NEVER}]
  2 Relu       %c feature_map@6144+2048[2,3]
  3 Concat     %d feature_map@0+4096[3,6]
  4 Reshape    %e feature_map@0+4096[3,6] =d
  5 Relu       %f feature_map@4096+4096[5,6]
  6 Add        %y io@0+4096"""


def test_golden_graph_on_two_streams():
    plan = ge.compile(golden_graph(), {"concat_in_place": False})
    assert plan.num_streams == 2
    layout = memory_layout(plan)
    assert layout == GOLDEN_TWO_STREAMS
    verify_memory(plan, plan.memory)


def test_a_block_read_elsewhere_is_free_for_its_stream_after_the_first_node_ordered_after_the_reader():
    plan = ge.compile(light_model_path("inception_v1"), {"concat_in_place": False})  # one writer per block
    life = compute_lifetimes(plan)
    hb = happens_before([n.stream for n in plan.nodes], plan.events)
    producer = {t: n for n in plan.nodes for t in n.outputs}
    checked = 0
    for r, end in life.last.items():
        own = producer[r].stream
        readers = [n for n in plan.nodes if any(life.root[t] == r for t in n.inputs if t >= 0)]
        want = producer[r].step
        for n in readers:
            if n.stream == own:
                want = max(want, n.step)
            else:
                f = hb.first_after(n.step, own)
                want = max(want, NEVER if f is None else f - 1)
                checked += 1
        assert end == want
    assert checked > 10
    # not every cross-stream block is kept forever: the rule gives memory back
    assert any(life.last[r] < NEVER for r in life.last
               if any(n.stream != producer[r].stream for n in plan.nodes
                      if any(life.root[t] == r for t in n.inputs if t >= 0)))


@pytest.mark.parametrize("mode", TOPO_MODES)
@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_light_models_verify_under_stream_order(name, mode):
    plan = ge.compile(light_model_path(name), {"topo_sorting_mode": mode})
    verify_memory(plan, plan.memory)


def test_concat_in_place_with_parts_from_two_streams():
    # b (stream 0) and c (stream 1) are written into d's halves: d's block starts on both streams
    plan = ge.compile(golden_graph())
    assert plan.num_streams == 2 and [n.no_task for n in plan.nodes].count(True) == 1
    block = next(b for b in compute_lifetimes(plan).buffers if plan.tensors[b.key[1]].name == "d")
    assert block.starts and {block.stream, *(s for s, _ in block.starts)} == {0, 1}
    verify_memory(plan, plan.memory)
    x = np.random.default_rng(0).standard_normal((1, 128, 4)).astype(np.float32)
    want = ge.Session(ge.compile(golden_graph(), {"concat_in_place": False}), runtime="v2").run(None, {"x": x})
    for runtime in ("v1", "v2"):
        np.testing.assert_array_equal(ge.Session(plan, runtime=runtime).run(None, {"x": x})[0], want[0])


def test_verifier_rejects_sharing_across_unordered_streams():
    plan = ge.compile(golden_graph(), {"concat_in_place": False})
    b, c = (next(t.index for t in plan.tensors if t.name == n) for n in "bc")
    sb, sc = (plan.nodes[next(n.step for n in plan.nodes if t in n.outputs)].stream for t in (b, c))
    assert sb != sc
    tensors = list(plan.memory.tensors)
    tensors[c] = dataclasses.replace(tensors[c], offset=tensors[b].offset)
    with pytest.raises(MemoryPlanError, match="happen before"):
        verify_memory(plan, dataclasses.replace(plan.memory, tensors=tuple(tensors)))
    verify_memory(plan, plan.memory)
