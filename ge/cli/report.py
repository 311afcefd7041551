"""`ge report MODEL -o report.html`: compile (or load), run traced, write one self-contained page."""
from __future__ import annotations

import time

import numpy as np

from ..npu import Tracer
from ..report import render
from . import common


def cmd_report(args) -> int:
    path = common.model_path(args.model)
    sess, feeds = common.warm_session(path, args, traced=True)
    tracer = Tracer(common.label(path))
    times = []
    for _ in range(max(args.repeat, 1)):
        t0 = time.perf_counter()
        sess.run_traced(feeds, tracer)
        times.append(time.perf_counter() - t0)
    per_node: dict[str, float] = {}
    for s in tracer.slices:
        if s.kind == "kernel":
            per_node[s.name] = per_node.get(s.name, 0.0) + (s.end - s.start) / len(times)
    run = {"runtime": f"runtime_{sess.runtime}, {common.cores(sess)}",
           "traced run (median)": f"{np.median(times) * 1e3:.2f} ms over {len(times)} runs"}
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(render(sess.plan, common.label(path), per_node, run))
    print(f"wrote     {args.output} ({common.label(path)}: {common.plural(len(sess.plan.nodes), 'node')}, "
          f"{common.plural(sess.plan.num_streams, 'stream')}; open it in any browser)")
    return 0
