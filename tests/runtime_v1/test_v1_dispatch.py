"""runtime_v1's stream scheduler (dispatch.py): a static plan's streams pulled by the AI cores, at the defaults
whenever kernels are tiled. Same bits as one stream and as a thread per stream, concurrent runs and a forked
child stay correct, close leaves no thread, and a trace shows every task on an AI core's track and on its
stream's (a failing block: test_v1_streams.py's failing-kernel test, "pulled")."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import ge
import runtime_v1
from ge.cli.common import cores as cores_line
from ge.npu import Tracer
from ge.npu.aicore import CORE_TRACK0, CPUS
from ge.npu.programs import dispatch_cores
from ge.zoo import reference_feeds, with_random_weights
from runtime_v1.dispatch import Dispatcher
from hammer import hammer
from stream_options import PER_STREAM
from test_v1_streams import TIMEOUT, _guarded, two_branches

pytestmark = pytest.mark.skipif(CPUS < 2, reason="the cores pull streams only when kernels are tiled over 2+")
CORES = {"aicore_num": 2}


def _x(n=256):
    return np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)


def test_policy_static_plans_with_tiled_kernels_and_several_streams():
    multi = ge.compile(two_branches(), CORES)
    assert multi.num_streams == 2 and dispatch_cores(multi) == 2
    assert dispatch_cores(ge.compile(two_branches(), PER_STREAM)) == 0            # untiled: stream threads
    assert dispatch_cores(ge.compile(two_branches(), {"max_streams": 1, **CORES})) == 0   # one stream
    assert dispatch_cores(ge.compile(two_branches(), {"thread_budget": 1, **CORES})) == 0  # one thread may run


def test_the_cores_pull_the_streams_and_give_the_bits_of_one_stream_and_of_stream_threads(monkeypatch):
    model = two_branches()
    sess = ge.Session(model, runtime="v1", options=CORES)
    inst = sess._executor._instances.all[0]
    assert isinstance(inst.streams, Dispatcher) and sess.stream_threads == 2
    assert len(sess._executor.model.streams) == sess.plan.num_streams == 2   # a table per stream
    assert sess.stats()["pulled_by_cores"] == 2 and "2 streams pulled by the 2 cores" in cores_line(sess)
    one = ge.Session(model, runtime="v1", options={"max_streams": 1, **CORES})
    monkeypatch.setenv("GE_V1_DISPATCH", "0")
    threads = ge.Session(model, runtime="v1", options={"thread_budget": 4, **CORES})
    assert not isinstance(threads._executor._instances.all[0].streams, Dispatcher)
    assert threads.stats()["pulled_by_cores"] == 0 and "2 streams on 2 threads" in cores_line(threads)
    x = _x()
    want = one.run(None, {"x": x})[0]
    for _ in range(5):   # event flags are generations: replays need no reset
        np.testing.assert_array_equal(_guarded(lambda: sess.run(None, {"x": x})[0]), want)
        np.testing.assert_array_equal(threads.run(None, {"x": x})[0], want)


@pytest.mark.parametrize("name", ["inception_v1", "squeezenet"])
def test_light_models_pulled_by_the_cores_equal_one_stream_bitwise(name):
    model = with_random_weights(name)
    sess = ge.Session(model, runtime="v1", options=CORES)
    one = ge.Session(model, runtime="v1", options={"max_streams": 1, **CORES})
    assert sess.plan.num_streams > 1 and isinstance(sess._executor._instances.all[0].streams, Dispatcher)
    feeds = reference_feeds(one)
    for _ in range(3):
        for a, b in zip(_guarded(lambda: sess.run(None, feeds)), one.run(None, feeds)):
            np.testing.assert_array_equal(a, b)


def test_concurrent_runs_on_two_instances():
    sess = ge.Session(two_branches(), runtime="v1", options={"executor_instances": 2, **CORES})
    rng = np.random.default_rng(1)
    feeds = [rng.standard_normal((256, 256)).astype(np.float32) for _ in range(4)]
    expected = [sess.run(None, {"x": x})[0] for x in feeds]
    errors = hammer(lambda x: sess.run(None, {"x": x})[0], feeds, expected, 6, TIMEOUT, rotate=True)
    assert not errors, errors[:5]


def test_close_stops_the_core_threads():
    sess = ge.Session(two_branches(), runtime="v1", options=CORES)
    sess.run(None, {"x": _x()})
    workers = [t for inst in sess._executor._instances.all for t in inst.streams.workers]
    assert len(workers) == 1 and all(t.is_alive() for t in workers)
    sess.close()
    assert not any(t.is_alive() for t in workers)
    assert not [t for t in threading.enumerate() if t in workers]


def test_a_trace_shows_each_task_on_a_core_and_on_its_stream():
    sess = ge.Session(two_branches(n=512, depth=6), runtime="v1", options=CORES)
    x = _x(512)
    want = sess.run(None, {"x": x})[0]
    tracer = Tracer("pulled")
    np.testing.assert_array_equal(sess._executor.run_traced({sess.plan.inputs[0]: x}, tracer)[0], want)
    tasks = [n for n in sess.plan.nodes if n.launch is not None and not n.no_task]
    kernels = [s for s in tracer.slices if s.kind == "kernel"]
    assert sorted(k.name for k in kernels) == sorted(n.name for n in tasks)
    stream = {n.name: n.stream for n in tasks}
    assert all(k.track == stream[k.name] for k in kernels)
    blocks = [s for s in tracer.slices if s.kind == "block"]
    assert {b.track for b in blocks} <= {CORE_TRACK0, CORE_TRACK0 + 1}
    assert {b.name.rsplit("[", 1)[0] for b in blocks} == {n.name for n in tasks}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_starts_its_own_cores():
    sess = ge.Session(two_branches(), runtime="v1", options=CORES)
    x = _x()
    want = sess.run(None, {"x": x})[0]
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit code
        ok = all(np.array_equal(sess.run(None, {"x": x})[0], want) for _ in range(2))
        os._exit(0 if ok else 3)
    status = _guarded(lambda: os.waitpid(pid, 0)[1])
    assert os.waitstatus_to_exitcode(status) == 0
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], want)


def test_the_stream_switch_keeps_one_table(monkeypatch):
    monkeypatch.setenv("GE_V1_STREAMS", "0")
    ex = runtime_v1.Executor(ge.compile(two_branches(), CORES))
    assert ex.model.dispatch_cores == 0 and len(ex.model.streams) == 1


def test_streams_of_untiled_kernels_are_pulled_too():
    """Launches too small to split (block_dim 1 everywhere): the cores still pull the streams, with no
    AI-core team behind them; a traced run steps the rows from Python instead."""
    sess = ge.Session(two_branches(n=8), runtime="v1", options=CORES)
    ex = sess._executor
    inst = ex._instances.all[0]
    assert isinstance(inst.streams, Dispatcher) and inst.cores is None and not ex.model.uses_cores
    one = ge.Session(two_branches(n=8), runtime="v1", options={"max_streams": 1, **CORES})
    x = _x(8)
    want = one.run(None, {"x": x})[0]
    for _ in range(3):
        np.testing.assert_array_equal(_guarded(lambda: sess.run(None, {"x": x})[0]), want)
    tracer = Tracer("stepped")
    np.testing.assert_array_equal(ex.run_traced({sess.plan.inputs[0]: x}, tracer)[0], want)
    assert {s.kind for s in tracer.slices} >= {"kernel", "record", "wait"}


def test_every_run_ends_when_the_cores_are_preempted():
    """Eight threads on four instances while two other processes spin, so the OS preempts the cores anywhere.
    Regression: a core read the run's end flag, was preempted, then read the wake-up counter after the last
    stream's bump and slept for good; the next run's join waited for it (hung in 300 runs of 8 threads)."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        sess = ge.Session(two_branches(n=16, depth=2), runtime="v1", options={"executor_instances": 4, **CORES})
        x = _x(16)
        want = sess.run(None, {"x": x})[0]
        errors = hammer(lambda a: sess.run(None, {"x": a})[0], [x] * 8, [want] * 8, 300, TIMEOUT)
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    assert not errors, errors[:5]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_clears_the_parents_event_records():
    """A WAIT is met by `generation * stride + offset`; the child restarts at generation 0, so the parent's
    last records would meet its first run's waits before their producers ran (the test above failed 1 full
    suite in 4: a consumer read a reused buffer's later contents). The restarted dispatcher's events are 0."""
    from ge.npu import native
    sess = ge.Session(two_branches(), runtime="v1", options=CORES)
    sess.run(None, {"x": _x()})
    disp = sess._executor._instances.all[0].streams
    assert type(disp).__name__ == "Dispatcher" and disp.ctrl[native.USER0:].any()   # the parent's records
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit code
        disp._start()
        os._exit(0 if not disp.ctrl[native.USER0:].any() else 3)
    status = _guarded(lambda: os.waitpid(pid, 0)[1])
    assert os.waitstatus_to_exitcode(status) == 0
