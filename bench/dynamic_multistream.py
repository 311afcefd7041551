"""Dynamic multi-stream on runtime_v2: an Inception-like model with a symbolic batch (ge.zoo.inception_like),
its streams on their own threads (enable_dynamic_shape_multi_stream; GE's ENABLE_DYNAMIC_SHAPE_MULTI_STREAM)
vs the same plan's single-stream default, the same thread budget for both (the AI cores tile a launch's
blocks in either case).

    python bench/dynamic_multistream.py [budget] [rounds]

Prints the date and the machine, then per batch the median time of each side, the two alternating run by
run in one process, and the ratio single / multi (above 1: multi-stream is faster); `others`, the CPUs
other processes used meanwhile (from /proc/stat: near 0, a core was free for the second stream; near the
CPU count, none was); `bound`, the best any runtime can do with these streams on the budget's threads
given each step's time (traced, as bench/test_streams.py's `ideal`: a machine-independent ceiling); and
the allocator's cross-stream counters (GE's MIF: blocks freed on one stream reused by another).
"""
import datetime
import os
import statistics
import sys
import time

import numpy as np

import ge
from ge.npu import Tracer
from ge.zoo import inception_like

sys.path.insert(0, os.path.dirname(__file__))
from aicores_report import machine  # noqa: E402
from test_streams import ideal  # noqa: E402

SIZES = dict(blocks=4, channels=64, size=28)


def main(budget=2, rounds=15):
    print(f"dynamic multi-stream vs single stream on runtime_v2, thread budget {budget}, "
          f"{datetime.datetime.now():%Y-%m-%d %H:%M}, {machine()}, load {os.getloadavg()[0]:.1f}")
    print(f"model: inception_like({', '.join(f'{k}={v}' for k, v in SIZES.items())}), symbolic batch")
    model = inception_like(**SIZES)
    sides = {"single": ge.Session(model, runtime="v2", options=ge.Options(thread_budget=budget)),
             "multi": ge.Session(model, runtime="v2", options=ge.Options(
                 thread_budget=budget, enable_dynamic_shape_multi_stream=True))}
    print(f"streams: single {sides['single'].plan.num_streams}, multi {sides['multi'].plan.num_streams} "
          f"({sides['multi']._executor.stream_threads} threads, {len(sides['multi'].plan.events)} events)")
    print(f"{'batch':>5s} {'single ms':>10s} {'multi ms':>10s} {'single/multi':>13s} {'others':>7s} {'bound':>7s}")
    for n in (1, 4, 8):
        x = np.random.default_rng(n).standard_normal((n, SIZES["channels"], SIZES["size"], SIZES["size"]))
        feeds = {"x": x.astype(np.float32)}
        want = sides["single"].run(None, feeds)[0]
        np.testing.assert_array_equal(sides["multi"].run(None, feeds)[0], want)
        times = {k: [] for k in sides}
        busy0 = _others()
        for _ in range(rounds):
            for k, s in sides.items():
                t = time.perf_counter()
                s.run(None, feeds)
                times[k].append(time.perf_counter() - t)
        others = _others(busy0)
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        bound = _bound(sides["multi"], feeds, budget)
        print(f"{n:5d} {med['single']:10.2f} {med['multi']:10.2f} {med['single'] / med['multi']:12.2f}x "
              f"{others:7.2f} {bound:6.2f}x")
    dyn = sides["multi"]._executor.allocator_stats()["dynamic"]
    print("multi-stream allocator: " + ", ".join(f"{k} {dyn[k]}" for k in (
        "allocs", "hits", "misses", "cross_stream_accesses", "borrow_recycles", "borrow_hits", "sent_home")))


def _others(since=None):
    """(busy ticks of the machine, of this process, time); with `since`: CPUs others used in between."""
    try:
        ticks = [int(v) for v in open("/proc/stat").readline().split()[1:9]]
        mine = open("/proc/self/stat").read().rsplit(")", 1)[1].split()
    except OSError:   # not Linux
        return float("nan") if since else None
    now = (sum(ticks) - ticks[3] - ticks[4], int(mine[11]) + int(mine[12]), time.perf_counter())
    if since is None:
        return now
    return (now[0] - since[0] - (now[1] - since[1])) / os.sysconf("SC_CLK_TCK") / (now[2] - since[2])


def _bound(sess, feeds, threads, rounds=3) -> float:
    """Sum of the step times over the makespan of the plan's thread programs with those times."""
    plan = sess.plan
    t = np.zeros(len(plan.nodes))
    index = {n.name: n.step for n in plan.nodes}
    for _ in range(rounds):
        tracer = Tracer()
        sess.run_traced(feeds, tracer)
        for sl in tracer.slices:
            if sl.kind == "kernel" and sl.name in index:
                t[index[sl.name]] += (sl.end - sl.start) / rounds
    return float(t.sum() / ideal(plan, t, threads))


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
