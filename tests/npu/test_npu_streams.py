"""Streams and events: FIFO order, priorities, errors surfaced on synchronize, clean close, real races."""
import threading
import time

import numpy as np
import pytest

from ge.errors import ExecutionError
from ge.npu import Event, Gate, Stream


@pytest.fixture
def streams():
    made = []

    def make(*args, **kw):
        made.append(Stream(*args, **kw))
        return made[-1]
    yield make
    for s in made:
        s.close()


def test_tasks_run_in_fifo_order(streams):
    s, seen = streams(0), []
    for i in range(200):
        s.launch(seen.append, i)
    s.synchronize(timeout=10)
    assert seen == list(range(200)) and s.query()


def test_memcpy(streams):
    s = streams(0)
    src, dst = np.arange(10.0), np.zeros(10)
    s.memcpy(dst, src)
    s.synchronize(timeout=10)
    assert (dst == src).all()


def test_error_is_raised_on_synchronize_naming_the_task_and_stream_stays_usable(streams):
    s, seen = streams(3), []

    def bad():
        raise ValueError("boom")
    s.launch(bad, name="conv1")
    s.launch(seen.append, "skipped")     # inputs are suspect after an error: skipped until synchronize
    with pytest.raises(ExecutionError, match=r"kernel task 'conv1' on stream3: ValueError: boom"):
        s.synchronize(timeout=10)
    s.launch(seen.append, "after")
    s.synchronize(timeout=10)            # the error was handed over once; the stream works again
    assert seen == ["after"]


def test_records_still_run_after_an_error_so_other_streams_do_not_hang(streams):
    a, b, e, seen = streams(0), streams(1), Event(), []
    a.launch(lambda: 1 / 0, name="div")
    a.record(e)
    b.wait(e)
    b.launch(seen.append, "b")
    b.synchronize(timeout=10)
    assert seen == ["b"]
    with pytest.raises(ExecutionError, match="div"):
        a.synchronize(timeout=10)


def test_close_joins_the_worker_thread():
    before = threading.active_count()
    s = Stream(7)
    s.launch(time.sleep, 0.01)
    s.close()
    assert not s.alive and threading.active_count() == before
    assert not any(t.name == "ge-stream7" for t in threading.enumerate())


def test_priority_picks_the_next_task_when_streams_share_a_gate(streams):
    gate, order, release = Gate(1), [], threading.Event()
    blocker, low, high = streams(0, gate=gate), streams(1, priority=5, gate=gate), streams(2, priority=-1,
                                                                                          gate=gate)
    blocker.launch(release.wait, 10)
    time.sleep(0.1)
    low.launch(order.append, "low")      # enqueued first, but lower priority
    time.sleep(0.1)
    high.launch(order.append, "high")
    time.sleep(0.2)
    release.set()
    for s in (blocker, low, high):
        s.synchronize(timeout=10)
    assert order == ["high", "low"]


def _race(streams, with_event: bool):
    """Stream a writes a flag after a delay; stream b reads it. Returns what b read."""
    a, b, e, flag, got = streams(0), streams(1), Event(), [0], []
    a.launch(time.sleep, 0.3)
    a.launch(flag.__setitem__, 0, 1)
    a.record(e)
    if with_event:
        b.wait(e)
    b.launch(lambda: got.append(flag[0]))
    a.synchronize(timeout=10)
    b.synchronize(timeout=10)
    return got[0]


def test_wait_enforces_order_across_streams(streams):
    assert _race(streams, with_event=False) == 0    # the race is real without the event
    assert _race(streams, with_event=True) == 1


def test_event_query_and_host_synchronize(streams):
    s, e = streams(0), Event()
    assert e.query()                     # never recorded: nothing pending
    s.launch(time.sleep, 0.1)
    gen = e.record(s)
    assert gen == 1 and not e.query()
    e.synchronize(timeout=10)
    assert e.query() and e.generation == 1


def test_event_is_reusable_across_runs_by_generation(streams):
    """A replaying runtime enqueues the waiter first; the explicit generation still matches its run."""
    a, b, e = streams(0), streams(1), Event()
    box, got = [None], []
    for run in range(3):
        b.wait(e, generation=run + 1)
        b.launch(lambda: got.append(box[0]))
        a.launch(time.sleep, 0.03)
        a.launch(box.__setitem__, 0, run)
        a.record(e)
        b.synchronize(timeout=10)
    assert got == [0, 1, 2] and e.generation == 3
