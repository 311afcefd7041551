"""The unified caching allocator: pages, split/merge, LIFO reuse, stats, empty_cache, OOM recycle + retry,
and no two live spans ever overlap (single-thread random workloads and the thread-safe variant)."""
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ge.errors import DeviceMemoryError, GEError
from ge.npu.memory import PAGE_BYTES, DeviceMemory
from runtime_v2.allocator import ScalableAllocator, ThreadSafeScalableAllocator

MiB = 1 << 20


def _alloc(capacity=64 * MiB, **kw):
    return ScalableAllocator(DeviceMemory(capacity), **kw)


def _disjoint(spans):
    ivs = sorted((s.offset, s.offset + s.pages * PAGE_BYTES) for s in spans)
    for (_, end), (start, _) in zip(ivs, ivs[1:]):
        assert end <= start, "two live spans overlap"


def test_requests_round_up_to_pages_and_reuse_is_lifo():
    a = _alloc()
    s1 = a.alloc(1)
    assert s1.pages == 1 and a.stats.allocated == PAGE_BYTES and a.stats.requested == 1
    s2 = a.alloc(PAGE_BYTES + 1)
    assert s2.pages == 2
    assert a.stats.misses == 1 and a.stats.reserved == 2 * MiB  # one 2 MiB chunk, split
    a.free(s1)
    assert a.alloc(100) is s1  # the exact layer first, most recently freed first
    assert a.stats.hits == 2 and a.stats.allocated == 3 * PAGE_BYTES
    a.check()


@pytest.mark.parametrize("eager", [False, True])
def test_free_spans_merge_back_into_one(eager):
    a = _alloc(eager_merge=eager)
    spans = [a.alloc(PAGE_BYTES) for _ in range(32)]  # the whole first chunk
    assert a.stats.misses == 1
    for s in spans[::2] + spans[1::2]:
        a.free(s)
    a.check()
    big = a.alloc(32 * PAGE_BYTES)  # fits only once everything merged (lazily: on this request)
    assert a.stats.misses == 1 and big.pages == 32
    a.free(big)
    a.check(merged=True) if eager else None


def test_views_are_cached_per_span_and_writable():
    a = _alloc()
    s = a.alloc(64)
    v = s.as_array(np.float32, 16)
    v[:] = 3
    assert s.as_array(np.float32, 16) is v
    assert s.as_array(np.int32, 8).shape == (8,)
    assert np.shares_memory(s.device.view(s.offset, 64), v) and v.flags.writeable


def test_empty_cache_returns_idle_spans_to_the_device():
    dev = DeviceMemory(64 * MiB)
    a = ScalableAllocator(dev)
    keep = a.alloc(10)              # the first page of a 2 MiB fetch; the rest idle after it
    big = a.alloc(5 * MiB)          # that idle rest grows in place to 5 MiB: one segment
    assert len(a.segments()) == 1 and a.stats.grown == 1
    assert dev.in_use == 5 * MiB + PAGE_BYTES == a.stats.reserved
    a.free(big)
    assert a.empty_cache() == 5 * MiB   # everything but the live page
    assert dev.in_use == PAGE_BYTES == a.stats.reserved and dev.peak == 5 * MiB + PAGE_BYTES
    a.check()
    a.free(keep)
    a.empty_cache()
    assert dev.in_use == 0 and a.stats.allocated == 0 and a.segments() == []


def test_a_segment_grows_in_place_instead_of_fetching_more():
    dev = DeviceMemory(8 * MiB)
    a = ScalableAllocator(dev)
    s = a.alloc(6 * MiB)
    a.free(s)                       # 6 MiB idle at the end of its segment, free device memory after it
    t = a.alloc(7 * MiB)            # grows that span by 1 MiB: no second extent, no recycle
    assert t is s and a.stats.grown == 1 and a.stats.reserved == 7 * MiB == dev.in_use
    assert a.stats.oom_retries == 0
    a.check()


def test_out_of_memory_releases_the_cache_and_retries_once():
    dev = DeviceMemory(8 * MiB)
    blocker = dev.reserve(2 * MiB)      # [0, 2) held by someone else
    a = ScalableAllocator(dev)
    x = a.alloc(2 * MiB)                # [2, 4)
    a.alloc(4 * MiB)                    # [4, 8): the device is full
    dev.release(blocker, 2 * MiB)
    a.free(x)                           # cached, next to the free [0, 2)
    y = a.alloc(3 * MiB)                # no 3 MiB hole until the cache goes back: recycle, retry
    assert y.offset == 0 and a.stats.oom_retries == 1 and a.stats.recycles == 1
    a.check()


def test_out_of_memory_asks_on_oom_then_raises():
    dev = DeviceMemory(8 * MiB)
    held = dev.reserve(4 * MiB)
    calls = []
    a = ScalableAllocator(dev, on_oom=lambda: calls.append(1))
    with pytest.raises(DeviceMemoryError) as e:
        a.alloc(5 * MiB)
    assert (e.value.requested, e.value.capacity, e.value.in_use) == (5 * MiB, 8 * MiB, 4 * MiB)
    assert calls == [1] and "requested 5242880 bytes, capacity 8388608 bytes, in use 4194304" in str(e.value)
    dev.release(held, 4 * MiB)
    other = ScalableAllocator(dev, on_oom=lambda: dev.release(held2, 4 * MiB))
    held2 = dev.reserve(4 * MiB)
    assert other.alloc(5 * MiB).pages * PAGE_BYTES == 5 * MiB  # on_oom freed enough: the retry works


def test_double_free_is_refused():
    a = _alloc()
    s = a.alloc(1)
    a.free(s)
    with pytest.raises(GEError, match="double free"):
        a.free(s)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 40 * PAGE_BYTES)), max_size=80), st.booleans())
def test_random_workloads_keep_invariants(ops, eager):
    a = _alloc(capacity=1 << 30, eager_merge=eager)
    live = []
    for is_alloc, n in ops:
        if is_alloc or not live:
            live.append(a.alloc(n))
        else:
            a.free(live.pop(n % len(live)))
        _disjoint(live)
        a.check()
        assert a.stats.allocated == sum(s.pages for s in live) * PAGE_BYTES
        assert a.stats.peak_allocated <= a.stats.peak_reserved
    for s in live:
        a.free(s)
    a.empty_cache()
    assert a.stats.reserved == 0 and a.device.in_use == 0


def test_thread_safe_variant_under_contention():
    a = ThreadSafeScalableAllocator(DeviceMemory(1 << 30))
    errors = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        mine = []
        try:
            for _ in range(400):
                if mine and rng.random() < 0.5:
                    s, tag = mine.pop(rng.integers(len(mine)))
                    assert (s.as_array(np.uint8, 64) == tag).all(), "a live span was handed to another"
                    a.free(s)
                else:
                    s = a.alloc(int(rng.integers(1, 4 * PAGE_BYTES)))
                    s.as_array(np.uint8, 64)[:] = seed
                    mine.append((s, seed))
            for s, _ in mine:
                a.free(s)
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(i + 1,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    a.check()
    assert a.stats.allocated == 0 and a.stats.hits + a.stats.misses == a.stats.frees


def test_device_extents_first_fit_merge_and_grow_in_place():
    dev = DeviceMemory(1 * MiB)
    a, b, c = (dev.reserve(100_000) for _ in range(3))   # rounded to 2 pages each
    assert (a, b, c) == (0, 2 * PAGE_BYTES, 4 * PAGE_BYTES) and dev.in_use == 6 * PAGE_BYTES
    dev.view(b, 8)[:] = 7
    dev.release(b, 100_000)
    assert not dev.view(b, 8).any()                      # released pages come back zeroed (decommitted)
    assert dev.try_reserve_at(b, PAGE_BYTES) and not dev.try_reserve_at(b, PAGE_BYTES)
    dev.release(b, PAGE_BYTES)
    dev.release(a, 100_000)
    assert dev.reserve(4 * PAGE_BYTES) == 0              # the two holes merged
    with pytest.raises(GEError, match="not a reserved extent"):
        dev.release(12 * PAGE_BYTES, 1)
    with pytest.raises(DeviceMemoryError):
        dev.reserve(1 * MiB)
