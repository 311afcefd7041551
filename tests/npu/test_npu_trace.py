"""Traces: Chrome/Perfetto JSON with one track per stream, slices per task, flows for events; stats."""
import json
import time

from ge.npu import Event, Stream, Tracer


def test_trace_of_two_streams_with_an_event(tmp_path):
    tracer = Tracer("test")
    a, b = Stream(0, tracer=tracer), Stream(1, tracer=tracer)
    e = Event()
    try:
        a.launch(time.sleep, 0.05, name="producer")
        a.record(e)
        b.launch(time.sleep, 0.05, name="independent")
        b.wait(e)
        b.launch(time.sleep, 0.01, name="consumer")
        a.synchronize(timeout=10)
        b.synchronize(timeout=10)
    finally:
        a.close()
        b.close()
    path = tmp_path / "trace.json"
    tracer.save(path)
    data = json.loads(path.read_text())
    events = data["traceEvents"]
    tracks = {ev["tid"]: ev["args"]["name"] for ev in events if ev.get("name") == "thread_name"}
    assert tracks == {0: "stream0", 1: "stream1"}
    slices = {ev["name"]: ev for ev in events if ev["ph"] == "X"}
    assert {"producer", "independent", "consumer"} <= set(slices)
    assert slices["producer"]["tid"] == 0 and slices["consumer"]["tid"] == 1
    assert slices["consumer"]["ts"] >= slices["producer"]["ts"] + slices["producer"]["dur"]
    starts = [ev for ev in events if ev["ph"] == "s"]
    ends = [ev for ev in events if ev["ph"] == "f"]
    assert len(starts) == len(ends) == 1 and starts[0]["id"] == ends[0]["id"]
    assert (starts[0]["tid"], ends[0]["tid"]) == (0, 1)
    stats = tracer.stats()
    assert stats["busy"][0] >= 0.045 and stats["busy"][1] >= 0.055
    assert 0.01 <= stats["overlap"] <= stats["span"]    # producer and independent ran together


def test_stats_overlap_on_given_slices():
    t = Tracer()
    t.add_slice(0, "s0", "kernel", "a", 0.0, 2.0)
    t.add_slice(1, "s1", "kernel", "b", 1.0, 3.0)
    t.add_slice(1, "s1", "wait", "w", 3.0, 4.0)
    t.add_slice(2, "s2", "kernel", "c", 1.5, 1.75)
    s = t.stats()
    assert s["busy"] == {0: 2.0, 1: 2.0, 2: 0.25} and s["overlap"] == 1.0 and s["span"] == 4.0
