"""runtime_v2 on the planned feature-map arena against its caching allocator (what a plan without a static
memory plan uses: every output and workspace allocated and freed per node).

    pytest bench/test_memory_arena.py --benchmark-only -n 0
The benchmark times the arena; extra_info holds both medians from alternating runs and arena/allocator.
"""
import dataclasses

import pytest
from compare import alternate, record

import ge
from ge.zoo import light_model_path, reference_feeds
from runtime_v2.executor import Executor


@pytest.mark.parametrize("name", ["resnet50", "densenet121"])
def test_arena_vs_fresh_buffers(benchmark, name):
    sess = ge.Session(light_model_path(name), runtime="v2")
    feeds = sess._check_feeds(reference_feeds(sess))
    arena = Executor(sess.plan)
    dynamic = Executor(dataclasses.replace(sess.plan, memory=None))  # no static plan: the caching allocator
    times = alternate({"arena": lambda: arena.run(feeds), "allocator": lambda: dynamic.run(feeds)}, rounds=10)
    info = record(benchmark, times, base="allocator")
    print(f"\n{name}: {info}")
    benchmark.group = "runtime_v2 feature-map arena"
    benchmark.pedantic(arena.run, (feeds,), rounds=3, iterations=1)


@pytest.mark.parametrize("runtime", ["v1", "v2"])
@pytest.mark.parametrize("name", ["inception_v1", "squeezenet"])
def test_concat_in_place_vs_copy(benchmark, name, runtime):
    """Concats laid out in place (no task) against the same plan with every Concat a copy."""
    path = light_model_path(name)
    free, copy = (ge.Session(path, runtime=runtime, options={"concat_in_place": on}) for on in (True, False))
    assert any(n.no_task for n in free.plan.nodes) and not any(n.no_task for n in copy.plan.nodes)
    feeds = reference_feeds(free)
    times = alternate({"in place": lambda: free.run(None, feeds), "copy": lambda: copy.run(None, feeds)},
                      rounds=15)
    info = record(benchmark, times, base="copy")
    print(f"\n{name} {runtime}: {info}")
    benchmark.group = f"Concat in place vs copy ({runtime})"
    benchmark.pedantic(free.run, (None, feeds), rounds=3, iterations=1)
