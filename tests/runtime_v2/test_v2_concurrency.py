"""Concurrent executors: one session, many threads. Every output equals the serial run's; instances share
the weights; with the shared thread-safe allocator too."""

import numpy as np
import pytest

import ge
from ge.models import bert_like
from runtime_v2 import Executor
from hammer import hammer

THREADS, RUNS = 8, 50


def _hammer(run, feeds_per_thread, expected):
    errors = hammer(run, feeds_per_thread, expected, RUNS)
    assert not errors, errors[:5]


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic-seq"])
def test_eight_threads_match_serial_runs(dynamic):
    model = bert_like(batch=1, seq="seq" if dynamic else 24, vocab=100, max_seq=64)
    sess = ge.Session(model, runtime="v2")
    assert sess.plan.is_dynamic == dynamic
    rng = np.random.default_rng(1)
    lengths = [8 + 5 * k if dynamic else 24 for k in range(THREADS)]
    feeds = [{"input_ids": rng.integers(0, 100, (1, n)).astype(np.int64)} for n in lengths]
    expected = [sess.run(None, f)[0] for f in feeds]
    _hammer(lambda f: sess.run(None, f)[0], feeds, expected)
    st = sess.allocator_stats()
    assert 1 <= st["instances"] <= sess.options.executor_instances
    assert st["dynamic"]["allocated"] == 0
    # every instance reads the same weight arrays (shared, not copied)
    insts = sess._executor._instances.all
    consts = [i for i, a in enumerate(insts[0].bufs) if i in sess.plan.constants]
    assert all(inst.bufs[c] is insts[0].bufs[c] for inst in insts for c in consts)


def test_shared_thread_safe_allocator():
    plan = ge.compile(bert_like(batch=1, vocab=100, max_seq=64))
    ex = Executor(plan, shared_allocator=True)
    ids = plan.inputs[0]
    rng = np.random.default_rng(2)
    feeds = [{ids: rng.integers(0, 100, (1, 6 + 7 * k)).astype(np.int64)} for k in range(4)]
    expected = [ex.run(f)[0] for f in feeds]
    _hammer(lambda f: ex.run(f)[0], feeds, expected)
    st = ex.allocator_stats()
    assert st["shared_allocator"] and st["dynamic"]["allocated"] == 0
    ex._shared.check()


def test_instances_are_capped():
    model = bert_like(batch=1, vocab=100, max_seq=64)
    sess = ge.Session(model, runtime="v2", options={"executor_instances": 2})
    feeds = [{"input_ids": np.arange(n, dtype=np.int64).reshape(1, n)} for n in (5, 9, 13, 17)]
    expected = [sess.run(None, f)[0] for f in feeds]
    _hammer(lambda f: sess.run(None, f)[0], feeds, expected)
    assert sess.allocator_stats()["instances"] <= 2
