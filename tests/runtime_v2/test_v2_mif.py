"""Multi-stream memory (GE's MIF) at the allocator level: memory freed on one stream is reused on another
only after that stream waited on an event recorded after the free, or once back on its birth stream.

Streams here are a minimal stand-in (one thread each); ge/npu has the real ones."""
import queue
import threading
import time

import numpy as np
import pytest

from ge.errors import GEError
from ge.npu.memory import DeviceMemory
from runtime_v2.allocator import ScalableAllocator
from runtime_v2.mif import MultiStreamAllocator

A, B = 0, 1
N = 4096


def _mif():
    return MultiStreamAllocator(DeviceMemory(1 << 30), streams=2)


def test_birth_stream_reuses_its_own_free_at_once():
    m = _mif()
    x = m.alloc(N, A)
    m.free(x, A)
    assert m.alloc(N, A).span is x.span


def test_cross_stream_reader_blocks_reuse_until_the_birth_stream_waits():
    m = _mif()
    x = m.alloc(N, A)
    m.access(x, B)                      # a consumer on stream B
    m.free(x, A)                        # A's last use is done; B may still be reading
    assert m.alloc(N, A).span is not x.span
    m.free(x, B)                        # B is done, but A does not know yet
    assert m.alloc(N, A).span is not x.span
    token = m.record(B)                 # B records an event after its free ...
    m.wait(A, token)                    # ... and A waits on it: now A knows
    assert m.alloc(N, A).span is x.span


def test_last_free_on_another_stream_lends_the_block_then_sends_it_home():
    m = _mif()
    x = m.alloc(N, A)
    m.access(x, B)
    m.free(x, A)
    m.wait(B, m.record(A))              # B learns that A freed it
    m.free(x, B)                        # B knows every user is done: B may reuse it (borrow pool)
    assert m.alloc(N, A).span is not x.span          # A does not know
    y = m.alloc(N // 2, B)                           # a request it fits
    assert y.span is x.span and m.borrow_hits == 1
    m.free(y, B)
    m.wait(A, m.record(B))                           # the event carries the borrowed block home
    assert m.alloc(N, A).span is x.span


def test_stale_tokens_are_ignored_and_synchronize_settles_everything():
    m = _mif()
    x = m.alloc(N, A)
    m.access(x, B)
    m.free(x, B)
    old = m.record(B)                   # B's view: {B}
    m.free(x, A)
    m.synchronize()                     # all streams idle: x goes home
    y = m.alloc(N, A)
    assert y.span is x.span
    m.access(y, B)
    m.free(y, A)
    m.wait(A, old)                      # an event from before the block's new life: no effect
    assert m.alloc(N, A).span is not y.span
    with pytest.raises(GEError):
        m.free(y, A)                    # A already freed it


class _Naive:
    """The bug MIF prevents: a free goes straight back to the pool, whoever still reads the block."""

    def __init__(self):
        self.pool = ScalableAllocator(DeviceMemory(1 << 30))
        self.lock = threading.Lock()

    def alloc(self, n, s):
        with self.lock:
            return _Blk(self.pool.alloc(n))

    def access(self, b, s):
        pass

    def free(self, b, s):
        if s == A:
            with self.lock:
                self.pool.free(b.span)

    def record(self, s):
        return None

    def wait(self, s, token):
        pass


class _Blk:
    def __init__(self, span):
        self.span = span

    def array(self, dtype, count):
        return self.span.as_array(dtype, count)


def _race(alloc, rounds=60):
    """Stream A produces a block, hands it to stream B, frees it (its own use is over) and goes on
    allocating and writing; B reads the block slowly, frees it and records an event that A waits on.
    Returns (blocks B found overwritten, times A got back a block B had used)."""
    to_b, to_a = queue.Queue(), queue.Queue()
    corrupted, reused, seen_by_b = [], [0], set()

    def stream_b():
        while True:
            item = to_b.get()
            if item is None:
                return
            blk, tag = item
            seen_by_b.add(id(blk.span))
            time.sleep(0.001)                           # a slow kernel on B
            if not (blk.array(np.int32, N // 4) == tag).all():
                corrupted.append(tag)
            alloc.free(blk, B)
            to_a.put(alloc.record(B))                   # an event recorded after the free

    tb = threading.Thread(target=stream_b)
    tb.start()
    try:
        for tag in range(1, rounds + 1):
            blk = alloc.alloc(N, A)
            reused[0] += id(blk.span) in seen_by_b
            blk.array(np.int32, N // 4)[:] = tag
            alloc.access(blk, B)
            to_b.put((blk, tag))
            alloc.free(blk, A)                          # A is done with it
            scratch = alloc.alloc(N, A)                 # A's next kernel writes its output
            reused[0] += id(scratch.span) in seen_by_b
            scratch.array(np.int32, N // 4)[:] = -1
            alloc.free(scratch, A)
            if tag >= 2:                                # at most two blocks in flight:
                alloc.wait(A, to_a.get())               # A waits on B's event for an earlier one
    finally:
        to_b.put(None)
        tb.join()
    return corrupted, reused[0]


def test_the_race_corrupts_without_mif():
    corrupted, _ = _race(_Naive(), rounds=20)
    assert corrupted, "the stand-in streams did not provoke the race"


def test_mif_never_hands_out_memory_still_in_use():
    m = _mif()
    corrupted, reused = _race(m)
    assert corrupted == []
    assert reused > 0, "memory B released never came back to A after A's waits"
    m.synchronize()
    for s in m.stats():
        assert s["allocated"] == 0 and s["pending"] == 0 and s["borrowed"] == 0
