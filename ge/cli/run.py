"""`ge run`, `ge compile` and `ge models`."""
from __future__ import annotations

import sys
import time

import numpy as np

from .. import IMPORT_SECONDS
from ..errors import GEError
from ..offline import is_offline_model
from ..progress_bar import Progress
from ..zoo import DEFAULT_MODEL, LIGHT_MODELS, light_model_path
from . import common
from .common import mib, plural


def cmd_run(args) -> int:
    path = common.model_path(args.model)
    if args.warmup < 0 or args.repeat < 0:
        raise GEError("--warmup and --repeat count runs: 0 or more")
    t_start = time.perf_counter()
    print(f"model     {path}", flush=True)   # at once: the first compile of a library takes a while
    with Progress() as progress:
        sess = common.open_session(path, args, progress)
        common.compile_kernels(sess, progress)
        feeds = common.feeds(sess, args)
        outs = sess.run(None, feeds)   # the phase "first run": includes what nothing compiled ahead (v1's native loop)
    first_s = progress.total("first run").seconds
    ready_s = time.perf_counter() - t_start   # to the first outputs: what a user waits for
    for _ in range(max(args.warmup - 1, 0)):   # the first run above is a warm-up run
        sess.run(None, feeds)
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append(time.perf_counter() - t0)
    plan = sess.plan
    print(f"runtime   {sess.runtime}   {plural(len(plan.nodes), 'node')}   "
          f"{'loaded' if is_offline_model(path) else 'compiled'} and run once in {ready_s:.2f} s")
    print(f"time      {common.where_time_went(progress, IMPORT_SECONDS, first_s)}")
    print(f"cores     {common.cores(sess)}")
    if sess.gear_plans is not None:
        st = sess.stats()
        runs = ", ".join(f"{','.join(map(str, g)) if isinstance(g, tuple) else g}: {n}"
                         for g, n in st["gear_runs"].items())
        print(f"gears     runs per gear {runs}" + (f"; runtime_v2 runs {st['v2_runs']}" if "v2_runs" in st else ""))
    for o, a in zip(sess.get_outputs(), outs):
        print(f"output    {o.name} {a.dtype}{list(a.shape)}  checksum sum={float(a.sum(dtype=np.float64)):.6f} "
              f"argmax={int(a.argmax()) if a.size else '-'}")
    if times:
        print(f"latency   median {np.median(times) * 1e3:.2f} ms   min {min(times) * 1e3:.2f} ms   "
              f"({plural(len(times), 'run')} after {plural(max(args.warmup, 1), 'warm-up run')})")
    print(f"why       {sess.stats()['runtime_reason']}")
    print(common.memory_line(sess))
    if args.save_outputs:
        common.save_outputs(args.save_outputs, sess, outs)
        print(f"wrote     {args.save_outputs} ({', '.join(o.name for o in sess.get_outputs())})")
    return 0


def cmd_compile(args) -> int:
    """Compile once and save the plan with its weights (an offline model: `ge run F.gem` loads it)."""
    from ..compiler import compile as compile_model
    from ..compiler import compile_gears
    from ..offline import save, save_gears
    from .plan import check_static
    path = common.model_path(args.model)
    opts = common.options_of(args, topo_sorting_mode=args.order, disable_reuse_memory=args.no_reuse)
    t0 = time.perf_counter()
    with Progress() as progress, progress.phase("compile"):
        if args.dynamic_batch or args.dynamic_dims:  # one plan per gear, the weights stored once
            gp = compile_gears(path, opts, fallback=bool(args.dynamic_dims), **common.tf_names(args))
            plan = gp.plans[max(gp.plans)]
            what = (f"gears {list(gp.gears)} of batch '{gp.symbol}', " if not gp.dims else
                    f"gears {'; '.join(','.join(map(str, g)) for g in gp.gears)} of "
                    f"{', '.join(f'{n}[{a}]' for n, a in gp.dims)} (and the dynamic plan for other shapes), ")
        else:
            gp, plan, what = None, compile_model(path, opts, **common.tf_names(args)), ""
            check_static(plan, args.runtime)
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = save(plan, args.output) if gp is None else save_gears(gp, args.output)
    save_s = time.perf_counter() - t0
    weights = sum(a.nbytes for a in plan.constants.values())
    print(f"compiled  {path}: {what}{plural(len(plan.nodes), 'node')}, {plural(plan.num_streams, 'stream')}, "
          f"{mib(weights)} weights in {compile_s:.2f} s")
    print(f"wrote     {out} in {save_s:.2f} s (load it with `ge run {out}` or ge.Session / ge.load)")
    return 0


def cmd_models(args) -> int:
    """The ONNX light models that ship inside the onnx package: `ge run NAME` runs one."""
    import onnx
    print(f"{'name':14s} {'onnx nodes':>10s}  {'input':34s} file")
    for name in LIGHT_MODELS:
        path = light_model_path(name)
        try:
            g = onnx.load(path, load_external_data=False).graph
        except Exception:  # noqa: BLE001 - an onnx build without its test data
            print(f"{name:14s} missing from this onnx install ({path})", file=sys.stderr)
            continue
        inits = {t.name for t in g.initializer}
        shape = ", ".join(f"{i.name}{[d.dim_value or d.dim_param for d in i.type.tensor_type.shape.dim]}"
                          for i in g.input if i.name not in inits)
        mark = "   (the default)" if name == DEFAULT_MODEL else ""
        print(f"{name:14s} {len(g.node):10d}  {shape:34s} {path}{mark}")
    print("\nrun one by name: ge run inception_v1 (every weight is one constant: outputs are checksums, not "
          "predictions)")
    return 0
