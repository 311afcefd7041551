"""Kernel failures: an exception inside a kernel (Gather with an out-of-range index) reaches the caller as an
ExecutionError naming the node, on runtime v1 and v2, on one stream and on several; no stream thread is left
behind or hung, and the next run is correct."""
import threading

import numpy as np
import pytest

import ge
from rel_models import gather_model

X = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
TABLE = np.arange(12, dtype=np.float32).reshape(4, 3)


def _want(idx):
    return TABLE[np.asarray(idx)] + np.maximum(X, 0)


def _run_bounded(fn, seconds=60):
    """fn() in a thread; fail (not hang) when it does not return in time. Returns fn's result or exception."""
    box = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            box["error"] = e
    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "the run hung"
    return box


@pytest.mark.parametrize("streams", [1, 8], ids=["one-stream", "multi-stream"])
@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_kernel_error_names_the_node_and_the_next_run_works(runtime, streams):
    threads_before = threading.active_count()
    s = ge.Session(gather_model(), runtime=runtime, options=ge.Options(max_streams=streams))
    assert len({n.stream for n in s.plan.nodes}) == (1 if streams == 1 else 2)
    good = {"x": X, "idx": np.array([0, 3])}
    np.testing.assert_array_equal(s.run(None, good)[0], _want([0, 3]))
    for bad in ([0, 4], [-5, 1], [1 << 40, 0], [3, -(1 << 62)]):
        box = _run_bounded(lambda: s.run(None, {"x": X, "idx": np.array(bad)}))
        e = box.get("error")
        assert isinstance(e, ge.ExecutionError), box
        assert "Gather node 'gather_rows'" in str(e) and "index" in str(e).lower()
        box = _run_bounded(lambda: s.run(None, good))
        np.testing.assert_array_equal(box["value"][0], _want([0, 3]))
    s.close()
    assert threading.active_count() <= threads_before, "a stream thread outlived its session"


@pytest.mark.parametrize("runtime", ["v1", "v2"])
def test_failing_and_good_runs_concurrently(runtime):
    """8 threads share a multi-stream session; every third run fails in its kernel: failures stay with their
    callers, the others are exact."""
    s = ge.Session(gather_model(), runtime=runtime)
    errors, wrong = [], []

    def worker(k):
        for i in range(30):
            bad = (k + i) % 3 == 0
            idx = np.array([4 + i, 0]) if bad else np.array([k % 4, i % 4])
            try:
                y = s.run(None, {"x": X, "idx": idx})[0]
                if bad or not np.array_equal(y, _want(idx)):
                    wrong.append((k, i))
            except ge.ExecutionError as e:
                if not bad or "gather_rows" not in str(e):
                    wrong.append((k, i, str(e)))
                errors.append(k)
    box = _run_bounded(lambda: [t.join() for t in [_start(worker, k) for k in range(8)]], 120)
    assert "error" not in box, box
    assert not wrong, wrong[:5]
    assert len(errors) == sum((k + i) % 3 == 0 for k in range(8) for i in range(30))
    np.testing.assert_array_equal(s.run(None, {"x": X, "idx": np.array([1, 2])})[0], _want([1, 2]))
    s.close()


def _start(fn, k):
    t = threading.Thread(target=fn, args=(k,))
    t.start()
    return t
