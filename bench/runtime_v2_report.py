"""runtime_v2 measurements behind issue #4's report (a script, not a test: the machine is shared).

    python bench/runtime_v2_report.py [overhead] [memory] [threads] [prepare]

overhead: host time per node on a 1,000-node chain of Relu/Add on 16 floats (static plan: prepared
          launches bound to the arena; dynamic plan: a symbolic batch, every node prepared from a cache
          and every tensor on the caching allocator; both host-driven, capture_limit 0; replayed: the
          dynamic plan's recorded shape run from its native table, runtime_v2/replay.py).
memory:   a light model with a symbolic batch run at batch 1 on the caching allocator: peak allocated and
          peak reserved, against the static plan's feature map and its live lower bound.
threads:  requests per second with 1 and 4 concurrent callers of one session (2 cores here).
prepare:  static parts stay static: the same graph run with its launches prepared at compile time, with
          launches prepared at run time from the shape cache, and re-prepared on every run.
"""
from __future__ import annotations

import os
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "runtime_v2"))

import ge  # noqa: E402
from ge.models import bert_like, with_symbolic_dims  # noqa: E402
from ge.zoo import light_model_path, with_random_weights  # noqa: E402
from test_v2_executor import chain  # noqa: E402


def best_of(fn, reps=5, inner=5) -> float:
    fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        best = min(best, (time.perf_counter() - t0) / inner)
    return best


def overhead():
    n = 1000
    for label, shape, opts in (("static", [1, 16], {"capture_limit": 0}), ("dynamic", ["N", 16], {"capture_limit": 0}),
                               ("replayed", ["N", 16], {})):
        sess = ge.Session(chain(n, shape), runtime="v2", options=opts)
        feeds = sess._check_feeds({"x": np.ones((1, 16), np.float32)})
        t = best_of(lambda: sess._executor.run(feeds), reps=7, inner=20)
        print(f"overhead {label:8s}: {t / (n + 1) * 1e6:.2f} us/node ({t * 1e3:.2f} ms per run, "
              f"{sess.stats()['last_run']})")


def _light(name):
    m = with_random_weights(name)
    inits = {t.name for t in m.graph.initializer}
    x = next(i for i in m.graph.input if i.name not in inits)
    return m, x


def memory(names=("squeezenet", "shufflenet", "resnet50", "inception_v1", "densenet121")):
    for name in names:
        static = ge.compile(light_model_path(name))
        ms = static.memory.stats
        m, x = _light(name)
        shape = tuple(d.dim_value for d in x.type.tensor_type.shape.dim)
        feeds = {x.name: np.random.default_rng(0).standard_normal(shape).astype(np.float32)}
        row = [f"memory {name:13s} planned {ms.feature_map_bytes / 2**20:7.2f} MiB (lower bound "
               f"{ms.lower_bound_bytes / 2**20:6.2f})"]
        for eager in (False, True):
            sess = ge.Session(with_symbolic_dims(m, {x.name: {0: "N"}}), runtime="v2")
            ex = sess._executor
            inst = ex._instances.checkout()
            inst.alloc.eager_merge = eager
            ex._instances.checkin(inst)
            sess.run(None, feeds)
            d = sess.allocator_stats()["dynamic"]
            row.append(f"{'eager' if eager else 'lazy'}: peak allocated {d['peak_allocated'] / 2**20:6.2f} "
                       f"reserved {d['peak_reserved'] / 2**20:6.2f} MiB")
        print("; ".join(row))


def threads(total=48, rounds=2):
    """Callers interleaved round by round (the machine is shared); best rate per caller count, and the
    process CPU time over wall time (how many cores the kernels kept busy: they release the GIL)."""
    import resource
    cases = {"bert_like seq128 (dynamic)": (bert_like(), {"input_ids": np.random.default_rng(0).integers(
        0, 1000, (1, 128)).astype(np.int64)})}
    m, x = _light("squeezenet")
    shape = tuple(d.dim_value for d in x.type.tensor_type.shape.dim)
    cases["squeezenet (static)"] = (m, {x.name: np.ones(shape, np.float32)})
    for label, (model, feeds) in cases.items():
        sess = ge.Session(model, runtime="v2")
        sess.run(None, feeds)
        rates, busy = {}, {}
        for _ in range(rounds):
            for k in (1, 2, 4):
                def worker():
                    for _ in range(total // k):
                        sess.run(None, feeds)
                ts = [threading.Thread(target=worker) for _ in range(k)]
                r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
                for t in ts:
                    t.start()
                for t in ts:
                    t.join()
                wall, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
                if total / wall > rates.get(k, 0):
                    rates[k] = total / wall
                    busy[k] = (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) / wall
        print(f"threads {label}: " + ", ".join(f"{k} callers {r:.0f} req/s (cpu/wall {busy[k]:.2f})"
                                                for k, r in rates.items())
              + f"; 4 vs 1: {rates[4] / rates[1]:.2f}x")


def prepare():
    for label, static_model, dyn_model, feed in (
            ("chain 1000 x 16 floats", chain(1000, [1, 16]), chain(1000, ["N", 16]),
             {"x": np.ones((1, 16), np.float32)}),
            ("bert_like seq 128", bert_like(batch=1, seq=128), bert_like(batch=1),
             {"input_ids": np.arange(128, dtype=np.int64).reshape(1, 128) % 1000})):
        s_static, s_dyn = ge.Session(static_model, runtime="v2"), ge.Session(dyn_model, runtime="v2")
        f_static, f_dyn = s_static._check_feeds(feed), s_dyn._check_feeds(feed)
        t_static = best_of(lambda: s_static._executor.run(f_static))
        t_cached = best_of(lambda: s_dyn._executor.run(f_dyn))

        def reprepare():
            for node in s_dyn._executor._dynamic.values():
                node.cache.clear()
            s_dyn._executor.run(f_dyn)
        t_re = best_of(reprepare, reps=3, inner=2)
        print(f"prepare {label}: prepared at compile time {t_static * 1e3:.2f} ms, from the run-time shape "
              f"cache {t_cached * 1e3:.2f} ms, re-prepared every run {t_re * 1e3:.2f} ms")


if __name__ == "__main__":
    parts = sys.argv[1:] or ["overhead", "memory", "threads", "prepare"]
    for p in parts:
        globals()[p]()
