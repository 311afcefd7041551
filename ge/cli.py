"""The `ge` command line.

    ge run [MODEL] [--runtime v2] [--repeat 10]     run a model (default: ONNX light ResNet-50) on ones
    ge plan [MODEL] [--json F] [--plot F.png] [--orders]   compile and report the static memory plan
    ge profile [MODEL] --trace F.json [--runtime v1]        trace a run per stream; real and modelled overlap
    ge compile [MODEL] -o F.gem [--dynamic-batch 1,2,4,8]   compile once, save plan(s) + weights
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from . import __version__
from .api import Session
from .bench import alternate, format_table, summarize
from .errors import GEError
from .npu.aicore import CPUS
from .offline import is_offline_model
from .options import Options
from .warmup import compile_kernels
from .zoo import DEFAULT_MODEL, light_model_path


def _model_arg(model: str | None) -> str:
    return light_model_path(DEFAULT_MODEL) if model is None else model


def _fmt_bytes(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def cmd_run(args) -> int:
    path = _model_arg(args.model)
    t0 = time.perf_counter()
    sess = Session(path, runtime=args.runtime, options=Options(thread_budget=args.threads))
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    n_kernels = compile_kernels(sess.plan)  # Numba: compiled once, then loaded from its cache
    kernels_s = time.perf_counter() - t0
    feeds = _ones_feeds(sess)
    t0 = time.perf_counter()
    outs = sess.run(None, feeds)  # first run includes any kernel compilation
    first_s = time.perf_counter() - t0
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append(time.perf_counter() - t0)
    plan = sess.plan
    act = sum(t.nbytes or 0 for t in plan.tensors if t.kind == "activation")
    weights = sum(a.nbytes for a in plan.constants.values())
    print(f"model     {path}")
    verb = "load" if is_offline_model(path) else "compile"
    print(f"runtime   {sess.runtime}   nodes {len(plan.nodes)}   {verb} {compile_s:.2f} s   "
          f"kernels {n_kernels} in {kernels_s:.2f} s   first run {first_s * 1e3:.1f} ms")
    print(f"cores     {_cores(sess)}")
    for o, a in zip(sess.get_outputs(), outs):
        print(f"output    {o.name} {a.dtype}{list(a.shape)}  checksum sum={float(a.sum(dtype=np.float64)):.6f} "
              f"argmax={int(a.argmax())}")
    if times:
        print(f"latency   median {np.median(times) * 1e3:.2f} ms   min {min(times) * 1e3:.2f} ms   "
              f"({len(times)} runs)")
    line = f"memory    weights {_fmt_bytes(weights)}   activations without reuse {_fmt_bytes(act)}"
    if plan.memory is not None:
        s = plan.memory.stats
        line += (f"   feature map planned {_fmt_bytes(s.feature_map_bytes)} ({s.ratio:.2f}x live bound, "
                 f"by {s.assigner})")
    print(line)
    return 0


def _orders_table(model, options) -> str:
    """Live lower bound and planned bytes per topological sort mode (the graph is optimized once)."""
    from .compiler import build_plan, import_model, optimize
    from .options import TOPO_MODES
    from .schedule.toposort import topological_order
    graph = optimize(import_model(model), options)
    lines = [f"  {'order':16s} {'lower bound':>14s} {'planned':>14s}"]
    for mode in TOPO_MODES:
        plan = build_plan(graph, topological_order(graph, mode), options.replace(topo_sorting_mode=mode))
        s = plan.memory.stats
        lines.append(f"  {mode:16s} {s.lower_bound_bytes:14,d} {s.feature_map_bytes:14,d}")
    return "\n".join(lines)


def cmd_plan(args) -> int:
    from .compiler import compile as compile_model
    from .memory.report import memory_table, plot_memory
    opts = {"topo_sorting_mode": args.order, "disable_reuse_memory": args.no_reuse,
            "memory_assigner": args.assigner}
    plan = compile_model(_model_arg(args.model), opts)
    print(memory_table(plan))
    print(f"streams: {plan.num_streams}, events: {len(plan.events)}"
          + (f" (single stream: {plan.single_stream_reason})" if plan.single_stream_reason else ""))
    if args.orders:
        print("\n" + _orders_table(_model_arg(args.model), plan.options))
    if args.json:
        with open(args.json, "w") as f:
            f.write(plan.to_json(indent=1))
        print(f"\nwrote {args.json}")
    if args.plot:
        try:
            plot_memory(plan, args.plot)
        except ImportError:
            print("ge: --plot needs matplotlib (pip install matplotlib)", file=sys.stderr)
            return 2
        print(f"wrote {args.plot}")
    return 0


def cmd_compile(args) -> int:
    """Compile once and save the plan with its weights (an offline model: `ge run F.gem` loads it)."""
    from .compiler import compile as compile_model
    from .compiler import compile_gears
    from .offline import save, save_gears
    opts = {"topo_sorting_mode": args.order, "disable_reuse_memory": args.no_reuse,
            "max_streams": args.max_streams, "dynamic_batch": args.dynamic_batch or ()}
    t0 = time.perf_counter()
    if args.dynamic_batch:  # one plan per gear, the weights stored once
        gp = compile_gears(_model_arg(args.model), opts)
        plan, what = gp.plans[gp.gears[-1]], f"gears {list(gp.gears)} of batch '{gp.symbol}', "
    else:
        gp, plan, what = None, compile_model(_model_arg(args.model), opts), ""
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = save(plan, args.output) if gp is None else save_gears(gp, args.output)
    save_s = time.perf_counter() - t0
    weights = sum(a.nbytes for a in plan.constants.values())
    print(f"compiled  {_model_arg(args.model)}: {what}{len(plan.nodes)} nodes, {plan.num_streams} streams, "
          f"{_fmt_bytes(weights)} weights in {compile_s:.2f} s")
    print(f"wrote     {out} in {save_s:.2f} s (load it with `ge run {out}` or ge.Session / ge.load)")
    return 0


def cmd_bench(args) -> int:
    """Alternate the contenders on one model and print median, p90 and the ratio to the first."""
    path = _model_arg(args.model)
    contenders, feeds = {}, None
    streams = [int(x) for x in args.streams.split(",")] if args.streams else [None]
    for rt in args.runtime.split(","):
        for n in streams:
            opts = Options(thread_budget=args.threads) if n is None else \
                Options(thread_budget=args.threads, max_streams=n)   # threads 0: all CPUs
            sess = Session(path, runtime=rt, options=opts)
            compile_kernels(sess.plan)
            feeds = feeds or _ones_feeds(sess)
            name = f"ge {sess.runtime}" + ("" if n is None else f" {n} stream{'s' * (n > 1)}")
            contenders[name] = (lambda s=sess: s.run(None, feeds))
    if args.vs == "onnxruntime":
        contenders["onnxruntime"] = _onnxruntime_runner(path, args.threads, feeds)
    rows = summarize(alternate(contenders, rounds=args.rounds), base=next(iter(contenders)))
    threads = args.threads or CPUS
    print(f"model {path}   threads {threads} for ge and for onnxruntime   rounds {args.rounds}")
    print(f"ge        {_cores(sess)}")
    print(format_table(rows, base=rows[0].name))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": path, "threads": args.threads, "rows": [r.to_dict() for r in rows]}, f,
                      indent=1)
    if args.plot:
        plot_bench(rows, args.plot, title=os.path.basename(path))
    return 0


def cmd_profile(args) -> int:
    """Run with a Tracer (runtime_v2 by default, or runtime_v1's task sink: one track per stream, one slice
    per kernel, event arrows), write the Chrome/Perfetto JSON, print per-stream busy time and overlap, and
    the modelled NPU (ge.npu.sim) single- vs multi-stream time and AICORE utilization."""
    from .kernels.bind import retile
    from .npu import ASCEND_910, Tracer, compare
    path = _model_arg(args.model)
    opts = Options(max_streams=args.max_streams, enable_single_stream=args.max_streams == 1)
    sess = Session(path, runtime=args.runtime, options=opts)
    compile_kernels(sess.plan)
    feeds = _ones_feeds(sess)
    sess.run(None, feeds)  # warm: kernels compiled or loaded, instance created
    tracer = Tracer(os.path.basename(path))
    t0 = time.perf_counter()
    for _ in range(args.repeat):
        sess.run_traced(feeds, tracer)
    wall = (time.perf_counter() - t0) / args.repeat
    tracer.save(args.trace)
    plan, st = sess.plan, tracer.stats()
    print(f"model     {path}")
    print(f"plan      {len(plan.nodes)} nodes, {plan.num_streams} stream(s), {len(plan.events)} events, "
          f"{sess.stream_threads} stream thread(s) on runtime_{sess.runtime}"
          + (f"  (single stream: {plan.single_stream_reason})" if plan.single_stream_reason else ""))
    print(f"real      {args.repeat} run(s), {wall * 1e3:.2f} ms per run; trace written to {args.trace}")
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
              f"{multi.aicore_utilization:6.1%}  ({multi.num_streams} streams, {multi.num_events} events, "
              f"{single.makespan_s / multi.makespan_s:.2f}x)")
    return 0


def _cores(sess) -> str:
    """The AI cores the plan is tiled for, the tasks tiled over them, and the stream threads."""
    plan = sess.plan
    tiled = sum(n.launch is not None and n.launch.block_dim > 1 for n in plan.nodes)
    tasks = sum(n.launch is not None and not n.no_task for n in plan.nodes)
    return (f"{plan.options.aicore_num} AI cores ({tiled} of {tasks} tasks split into blocks), "
            f"{plan.num_streams} stream{'s' * (plan.num_streams > 1)} on {sess.stream_threads} "
            f"thread{'s' * (sess.stream_threads > 1)}")


def _ones_feeds(sess) -> dict:
    return {i.name: np.ones(tuple(d if isinstance(d, int) else 1 for d in i.shape), i.dtype)
            for i in sess.get_inputs()}


def _onnxruntime_runner(path: str, threads: int, feeds: dict):
    try:
        import onnxruntime as ort
    except ImportError:
        raise GEError("--vs onnxruntime needs onnxruntime: pip install onnxruntime") from None
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads   # 0: onnxruntime's default (all cores)
    so.log_severity_level = 3
    o = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return lambda: o.run(None, feeds)


def plot_bench(rows, path: str, title: str) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise GEError("--plot needs matplotlib: pip install 'ge-runtime[plot]'") from None
    fig, ax = plt.subplots(figsize=(6, 0.6 * len(rows) + 1.2))
    ax.barh([r.name for r in rows], [r.median_ms for r in rows],
            xerr=[[0] * len(rows), [r.p90_ms - r.median_ms for r in rows]], color="#4c72b0")
    for y, r in enumerate(rows):
        ax.text(r.p90_ms, y, f"  {r.median_ms:.3g} ms ({r.ratio:.2f}x)", va="center")
    ax.set_xlabel("latency, median (bar) to p90 (whisker), ms")
    ax.set_xlim(0, 1.35 * max(r.p90_ms for r in rows))
    ax.set_title(title)
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="ge", description="ge: graph compiler and runtimes for a modelled NPU")
    p.add_argument("--version", action="version", version=f"ge {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run a model on inputs of ones; print checksums, latency and memory")
    r.add_argument("model", nargs="?", help="ONNX file (default: the ONNX light ResNet-50 inside onnx)")
    r.add_argument("--runtime", default="auto", help="v1, v2 or auto (default)")
    r.add_argument("--repeat", type=int, default=10, help="timed runs after the first (default 10)")
    r.add_argument("--threads", type=int, default=0, help="thread budget: AI cores and stream threads (default 0: "
                   "the CPUs of this process)")
    r.set_defaults(fn=cmd_run)
    b = sub.add_parser("bench", help="compare runtimes (and onnxruntime) on one model, side by side")
    b.add_argument("model", nargs="?", help="ONNX file (default: the ONNX light ResNet-50 inside onnx)")
    b.add_argument("--runtime", default="auto", help="comma-separated runtimes, e.g. v1,v2 (default auto)")
    b.add_argument("--streams", help="comma-separated max_streams values to compare, e.g. 1,2,4")
    b.add_argument("--vs", choices=["onnxruntime"], help="also time onnxruntime on the same inputs")
    b.add_argument("--threads", type=int, default=0,
                   help="threads for ge (thread budget) and for onnxruntime (intra-op threads); 0 (default): "
                        "the CPUs of this process for both")
    b.add_argument("--rounds", type=int, default=20, help="alternating rounds (default 20)")
    b.add_argument("--json", help="write the table as JSON to this file")
    b.add_argument("--plot", help="draw the comparison as a bar chart (PNG; needs matplotlib)")
    b.set_defaults(fn=cmd_bench)
    q = sub.add_parser("plan", help="compile a model and print its static memory plan")
    q.add_argument("model", nargs="?", help="ONNX file (default: the ONNX light ResNet-50 inside onnx)")
    q.add_argument("--json", metavar="F", help="write the plan as JSON (schema: README, 'Plan JSON')")
    q.add_argument("--plot", metavar="F.png", help="draw the feature-map layout (needs matplotlib)")
    q.add_argument("--order", default="dfs", help="topological sort mode: bfs, dfs, rdfs, memory_priority")
    q.add_argument("--assigner", default="hybrid", help="hybrid (default) or one assigner name")
    q.add_argument("--no-reuse", action="store_true", help="ge.exec.disableReuseMemory=1")
    q.add_argument("--orders", action="store_true", help="also compare every topological sort mode")
    q.set_defaults(fn=cmd_plan)
    c = sub.add_parser("compile", help="compile a model once and save it as an offline model (ge.load)")
    c.add_argument("model", nargs="?", help="ONNX file (default: the ONNX light ResNet-50 inside onnx)")
    c.add_argument("-o", "--output", required=True, metavar="F.gem",
                   help="the offline model: a zip file (F.gem), or a directory if F ends with /")
    c.add_argument("--order", default="dfs", help="topological sort mode: bfs, dfs, rdfs, memory_priority")
    c.add_argument("--no-reuse", action="store_true", help="ge.exec.disableReuseMemory=1")
    c.add_argument("--max-streams", type=int, default=8, help="streams for the plan (1: single stream)")
    c.add_argument("--dynamic-batch", metavar="1,2,4,8", help="batch gears for runtime_v1 (GE's "
                   "--dynamic_batch_size): one plan per gear of the inputs' symbolic batch dim")
    c.set_defaults(fn=cmd_compile)
    f = sub.add_parser("profile", help="trace runs per stream (Chrome/Perfetto JSON), real and modelled overlap")
    f.add_argument("model", nargs="?", help="ONNX file (default: the ONNX light ResNet-50 inside onnx)")
    f.add_argument("--trace", required=True, metavar="F.json", help="write the Chrome/Perfetto trace here")
    f.add_argument("--max-streams", type=int, default=8, help="streams for the plan (1: single stream)")
    f.add_argument("--repeat", type=int, default=3, help="traced runs (default 3)")
    f.add_argument("--runtime", choices=("v1", "v2"), default="v2", help="the runtime traced (default v2)")
    f.set_defaults(fn=cmd_profile)
    args = p.parse_args(argv)
    try:
        return args.fn(args)
    except GEError as e:
        print(f"ge: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `ge run | head`: the reader left; no traceback
        sys.stdout = open(os.devnull, "w")
        return 0


if __name__ == "__main__":
    sys.exit(main())
