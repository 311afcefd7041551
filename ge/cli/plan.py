"""`ge plan`: compile a model and print its static memory plan (the same numbers as `ge run`'s memory line)."""
from __future__ import annotations

from ..errors import GEError
from ..plan import host_driven
from ..progress_bar import Progress
from . import common


def check_static(plan, runtime: str) -> None:
    """--runtime v1 on a plan v1 cannot run: say so at compile time, with the fix."""
    common.check_runtime(runtime)
    dyn = host_driven(plan)
    if runtime == "v1" and dyn:
        free = sorted({d for t in plan.inputs for d in plan.tensors[t].shape if isinstance(d, str)})
        raise GEError(f"runtime_v1 runs static plans only, and {dyn[0].op_type} node '{dyn[0].name}' (and "
                      f"{len(dyn) - 1} more) has shapes known only at run time"
                      + (f" (symbolic input dims {free})" if free else "")
                      + ": fix the input sizes with --input-shape NAME:d0,d1,..., or use --runtime v2")


def dynamic_summary(plan, most: int = 5) -> str:
    """Which nodes keep the plan dynamic and why (the first few causes and a count), and what the memory
    table below then covers."""
    from ..dynamic_reasons import dynamic_reasons
    from ..partition import pieces_table, summary
    dyn = host_driven(plan)
    sized = sum(1 for t in plan.tensors if t.kind == "activation" and not t.is_static)
    why = dynamic_reasons(plan)
    lines = [f"dynamic   {len(dyn)} of {common.plural(summary(plan)['nodes'], 'node')} have shapes known only at run "
             f"time: runtime_v2 runs them and allocates their {common.plural(sized, 'tensor')} per run (`ge run` "
             "prints its allocator's peak); the memory plan below covers the static tensors only"]
    lines += [f"  because {w}" for w in why[:most]]
    if len(why) > most:
        lines.append(f"  (and {len(why) - most} more)")
    lines += pieces_table(plan)
    return "\n".join(lines) + "\n"


def _orders_table(path, options, tf) -> str:
    """Live lower bound and planned MiB per topological sort mode (the graph is optimized once)."""
    from ..compiler import bind_input_shapes, build_plan, import_model, optimize
    from ..options import TOPO_MODES
    from ..schedule.toposort import topological_order
    graph = optimize(bind_input_shapes(import_model(path, **tf), options.input_shape), options)
    lines = [f"  {'order':16s} {'lower bound':>14s} {'planned':>14s}"]
    for mode in TOPO_MODES:
        plan = build_plan(graph, topological_order(graph, mode), options.replace(topo_sorting_mode=mode))
        s = plan.memory.stats
        lines.append(f"  {mode:16s} {common.mib(s.lower_bound_bytes):>14s} {common.mib(s.feature_map_bytes):>14s}")
    return "\n".join(lines)


def cmd_plan(args) -> int:
    from ..compiler import compile as compile_model
    from ..memory.report import memory_table, plot_memory
    path = common.model_path(args.model)
    opts = common.options_of(args, topo_sorting_mode=args.order, disable_reuse_memory=args.no_reuse,
                             memory_assigner=args.assigner)
    with Progress() as progress, progress.phase("compile"):
        plan = compile_model(path, opts, **common.tf_names(args))
    check_static(plan, args.runtime)
    if plan.is_dynamic:
        print(dynamic_summary(plan))
    print(memory_table(plan))
    print(f"streams   {plan.num_streams}, events {len(plan.events)}"
          + (f" (single stream: {plan.single_stream_reason})" if plan.single_stream_reason else ""))
    if args.orders:
        print("\n" + _orders_table(path, plan.options, common.tf_names(args)))
    if args.json:
        with open(args.json, "w") as f:
            f.write(plan.to_json(indent=1))
        print(f"\nwrote {args.json}")
    if args.plot:
        plot_memory(plan, args.plot)
        print(f"wrote {args.plot}")
    return 0
