"""Every light model x sort mode x assigner: the memory plan verifies, and the numbers hold up.

Plans are made as `ge.compile` makes them at the defaults on a 2-CPU machine (kernels tiled for 2 AI cores:
their workspaces are planned too), with aicore_num fixed so the figures do not depend on this machine."""
import dataclasses
import functools

import pytest

from ge.compiler import build_plan, import_model, optimize
from ge.memory import plan_memory
from ge.memory.hybrid import ASSIGNERS
from ge.memory.verify import verify_memory
from ge.options import TOPO_MODES, Options
from ge.schedule.toposort import topological_order
from ge.zoo import LIGHT_MODELS, light_model_path


AICORES = 2
# planned / lower bound where the plan is above the bound, measured (2026-12-07): across streams the bound is a
# clique of requests the events leave unordered (lifetime.live_lower_bound), which no placement may reach
ABOVE_BOUND = {("inception_v2", "bfs", False): 1.0928, ("shufflenet", "bfs", False): 1.0198,
               ("shufflenet", "dfs", False): 1.0198, ("shufflenet", "stable_rdfs", False): 1.0198}


@functools.lru_cache(maxsize=None)
def graph(name):
    return optimize(import_model(light_model_path(name)), Options(aicore_num=AICORES))


@functools.lru_cache(maxsize=None)
def plan(name, mode, single_stream=False):
    g = graph(name)
    return build_plan(g, topological_order(g, mode),
                      Options(topo_sorting_mode=mode, enable_single_stream=single_stream, aicore_num=AICORES))


@pytest.mark.parametrize("mode", TOPO_MODES)
@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_every_assigner_gives_a_valid_plan(name, mode):
    p = plan(name, mode)
    stats = p.memory.stats
    assert stats.lower_bound_bytes <= stats.feature_map_bytes <= stats.no_reuse_bytes
    assert stats.feature_map_bytes == min(stats.totals.values())
    for assigner in ASSIGNERS:
        opts = dataclasses.replace(p.options, memory_assigner=assigner)
        mem = plan_memory(dataclasses.replace(p, options=opts, memory=None))
        verify_memory(p, mem)
        assert mem.stats.assigner == assigner
        assert mem.segments["feature_map"] >= stats.lower_bound_bytes


@pytest.mark.parametrize("single_stream", [True, False], ids=["1-stream", "streams"])
@pytest.mark.parametrize("mode", TOPO_MODES)
@pytest.mark.parametrize("name", LIGHT_MODELS)
def test_hybrid_is_at_the_lower_bound_but_where_measured_otherwise(name, mode, single_stream):
    """At the bound (1.000) on every light model and mode, but the four plans of ABOVE_BOUND, which must not
    get worse (and the table is updated when one gets better)."""
    stats = plan(name, mode, single_stream=single_stream).memory.stats
    assert stats.ratio == pytest.approx(ABOVE_BOUND.get((name, mode, single_stream), 1.0), abs=5e-4), stats


def test_disable_reuse_memory_gives_every_request_its_own_block():
    p = plan("squeezenet", "dfs")
    opts = Options.from_dict({"ge.exec.disableReuseMemory": "1"})
    mem = plan_memory(dataclasses.replace(p, options=opts, memory=None))
    verify_memory(p, mem)
    assert mem.stats.assigner == "no-reuse"
    assert mem.stats.feature_map_bytes == mem.stats.no_reuse_bytes > 2 * p.memory.stats.feature_map_bytes


def test_resnet50_reuse_saves_more_than_ge_claims():
    stats = plan("resnet50", "dfs").memory.stats
    assert stats.reduction >= 0.56  # GE's claim; measured 88.8%


def test_verifier_catches_an_overlap():
    p = plan("squeezenet", "dfs")
    mem = p.memory
    t = [m for m in mem.tensors if m.segment == "feature_map" and m.bytes][:3]
    bad = list(mem.tensors)
    # move a tensor onto the one produced just before it (which its producer reads)
    bad[t[1].index] = dataclasses.replace(t[1], offset=t[0].offset)
    with pytest.raises(Exception, match="share bytes|not at its input"):
        verify_memory(p, dataclasses.replace(mem, tensors=tuple(bad)))
    bad = list(mem.tensors)
    bad[t[0].index] = dataclasses.replace(t[0], offset=t[0].offset + 4)
    with pytest.raises(Exception, match="aligned"):
        verify_memory(p, dataclasses.replace(mem, tensors=tuple(bad)))
