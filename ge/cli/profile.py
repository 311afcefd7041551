"""`ge profile`: traced runs per stream (Chrome/Perfetto JSON), measured busy time and overlap, and the
modelled NPU's single- vs multi-stream time."""
from __future__ import annotations

import time

from . import common


def cmd_profile(args) -> int:
    """Run with a Tracer (runtime_v2 by default, or runtime_v1's task sink: one track per stream, one slice
    per kernel named by op type and node, event arrows), write the trace, print per-stream busy time and
    overlap, and the modelled NPU (ge.npu.sim) single- vs multi-stream time and AICORE utilization."""
    from ..kernels.bind import retile
    from ..npu import ASCEND_910, Tracer, compare
    path = common.model_path(args.model)
    sess, feeds = common.warm_session(path, args, traced=True)
    tracer = Tracer(common.label(path))
    t0 = time.perf_counter()
    for _ in range(args.repeat):
        sess.run_traced(feeds, tracer)
    wall = (time.perf_counter() - t0) / args.repeat
    tracer.save(args.trace)
    plan, st = sess.plan, tracer.stats()
    print(f"model     {path}")
    print(f"plan      {common.plural(len(plan.nodes), 'node')}, {common.plural(plan.num_streams, 'stream')}, "
          f"{common.plural(len(plan.events), 'event')}, {common.plural(sess.stream_threads, 'stream thread')} "
          f"on runtime_{sess.runtime}"
          + (f"  (single stream: {plan.single_stream_reason})" if plan.single_stream_reason else ""))
    print(f"measured  {common.plural(args.repeat, 'traced run')}, {wall * 1e3:.2f} ms per run (tracing included); "
          f"trace written to {args.trace} (open it in https://ui.perfetto.dev)")
    busy = sum(st["busy"].values())
    for s, b in st["busy"].items():
        print(f"  stream {s}: busy {b * 1e3 / args.repeat:8.2f} ms per run")
    print(f"  busy {busy * 1e3 / args.repeat:.2f} ms, overlap {st['overlap'] * 1e3 / args.repeat:.2f} ms per run, "
          f"busy / wall {busy / args.repeat / wall:.2f}x")
    cores = ASCEND_910.engine("AICORE").units
    for what, dims in ((f"as planned ({plan.options.aicore_num} AI cores)", None),
                       (f"tiled for {cores} AI cores", retile(plan, cores))):
        single, multi = compare(plan, block_dims=dims)
        print(f"modelled  {what} on an Ascend-910-like NPU ({cores} AI cores):")
        print(f"          single stream {single.makespan_s * 1e6:9.1f} us, AICORE utilization "
              f"{single.aicore_utilization:6.1%}")
        print(f"          multi stream  {multi.makespan_s * 1e6:9.1f} us, AICORE utilization "
              f"{multi.aicore_utilization:6.1%}  ({common.plural(multi.num_streams, 'stream')}, "
              f"{common.plural(multi.num_events, 'event')}, {single.makespan_s / multi.makespan_s:.2f}x)")
    return 0
