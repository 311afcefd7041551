"""Device memory: aligned first-fit offsets in one arena, merge on free, capacity errors, views."""
import numpy as np
import pytest

from ge.errors import DeviceMemoryError, GEError
from ge.npu import Device


def test_alloc_is_aligned_and_views_live_in_the_arena():
    dev = Device(1 << 16)
    a = dev.alloc(100)
    b = dev.alloc(1000)
    assert a == 0 and b == 512 and dev.in_use == 512 + 1024
    v = dev.view(b, np.float32, 250)
    v[:] = 7.0
    assert dev.memory.owns(v) and dev.view(b, np.float32, 1)[0] == 7.0
    assert dev.alloc(10, align=32) == 512 + 1024


def test_free_merges_holes_and_first_fit_reuses_them():
    dev = Device(4096)
    offs = [dev.alloc(512) for _ in range(8)]
    assert offs == list(range(0, 4096, 512))
    dev.free(offs[1])
    dev.free(offs[2])          # merges with the hole of offs[1]
    assert dev.alloc(1024) == 512
    for o in offs[3:]:
        dev.free(o)
    dev.free(offs[0])
    dev.free(512)
    assert dev.in_use == 0 and dev.memory._holes == [[0, 4096]]
    assert dev.peak_bytes == 4096


def test_capacity_error_names_requested_capacity_in_use():
    dev = Device(2048)
    dev.alloc(1024)
    with pytest.raises(DeviceMemoryError) as info:
        dev.alloc(1500, what="conv1 output")
    err = info.value
    assert (err.requested, err.capacity, err.in_use) == (1500, 2048, 1024)
    assert "conv1 output" in str(err) and isinstance(err, MemoryError)
    assert dev.alloc(1024) == 1024   # the failed request left the free list intact


def test_bad_requests_are_refused():
    dev = Device(4096)
    with pytest.raises(GEError):
        dev.alloc(10, align=48)
    with pytest.raises(GEError):
        dev.free(512)
    with pytest.raises(GEError):
        dev.view(4000, np.float32, 100)
    with pytest.raises(GEError):
        Device(0)


def test_device_streams_are_capped_and_closed():
    with Device(1 << 12, max_streams=2, task_slots=1) as dev:
        a, b = dev.create_stream(), dev.create_stream(priority=-1)
        with pytest.raises(GEError, match="allows 2 streams"):
            dev.create_stream()
        out = []
        a.launch(out.append, 1)
        b.launch(out.append, 2)
        dev.synchronize(timeout=10)
        assert sorted(out) == [1, 2] and a.gate is b.gate is dev.gate
        a.close()
        c = dev.create_stream()          # a closed stream frees its place
        assert c.id == 2
    assert not any(s.alive for s in (a, b, c)) and dev.streams == []
