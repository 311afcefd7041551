"""The `ge` command line (argparse; flags after atc, trtexec and tvmc where they have one).

    ge run [MODEL] [--runtime v2] [--input-shape x:1,3,224,224] [--inputs x.npz] [--save-outputs y.npz]
    ge models                                        the light models MODEL may name (ge run inception_v1)
    ge plan [MODEL] [--json F] [--plot F.png] [--orders]   compile and report the static memory plan
    ge profile [MODEL] --trace F.json [--runtime v1]       trace runs per stream; measured and modelled
    ge bench [MODEL] --runtime v1,v2 --streams 1,2 --vs onnxruntime [--plot F.png]
    ge compile [MODEL] -o F.gem [--dynamic-batch 1,2,4,8 | --dynamic-dims "32;64" | --data-parallel N | --tensor-parallel N]  compile once, save plan(s) + weights
    ge report [MODEL] -o report.html                        one self-contained page: plan, memory, streams, ops
    ge warmup [MODEL ... | all] [--jobs N]                  fill the kernel caches ahead of first runs
"""
from __future__ import annotations

import argparse
import os
import sys

from .. import __version__
from ..errors import GEError

MODEL_HELP = "ONNX file, TensorFlow .pb/.pbtxt/SavedModel folder, .gem, or a light model's name (`ge models`); " \
             "default: the light ResNet-50 inside onnx"


def _model_flags(runtime_default: str = "auto", runtime_help: str = "v1, v2 or auto (default)") -> argparse.ArgumentParser:
    """Flags every command that compiles takes."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("model", nargs="?", help=MODEL_HELP)
    p.add_argument("--runtime", default=runtime_default, help=runtime_help)
    p.add_argument("--max-streams", type=int, default=None, metavar="N",
                   help="streams the plan may use (1: single stream; default 8)")
    p.add_argument("--threads", type=int, default=0, help="thread budget: AI cores and stream threads "
                   "(default 0: the CPUs of this process)")
    p.add_argument("--aicore-num", type=int, default=0, metavar="N",
                   help="AI cores each kernel is tiled for (atc --aicore_num; default 0: the thread budget). A "
                        "static plan's streams share the budget left: 1 gives every stream a thread of its own")
    p.add_argument("--input-shape", action="append", metavar="NAME:D0,D1,...",
                   help="fix an input's shape (atc --input_shape, trtexec --shapes): a symbolic dim takes this "
                        "size everywhere; repeat the flag or separate inputs with ';'")
    p.add_argument("--inputs-names", metavar="A,B", help="TensorFlow graphs: the tensors to feed (default: the "
                   "Placeholders); 'x' or 'x:0'")
    p.add_argument("--outputs-names", metavar="A,B", help="TensorFlow graphs: the tensors to return (default: "
                   "the graph's sinks)")
    return p


def _data_flags() -> argparse.ArgumentParser:
    """Flags of commands that run the model."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--inputs", metavar="F.npz", help="input data (tvmc style): an .npz with one array per input "
                   "name (or an .npy for a model of one input); default: ones")
    p.add_argument("--warmup", type=int, default=1, metavar="N", help="untimed runs first (default 1)")
    return p


def _runtime_choice(value: str) -> str:
    from .common import check_runtime
    try:
        return check_runtime(value)
    except GEError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ge", description="ge: a graph compiler and two runtimes for a modelled NPU")
    p.add_argument("--version", action="version", version=f"ge {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)
    model, data = _model_flags(), _data_flags()

    r = sub.add_parser("run", parents=[model, data], help="run a model; print checksums, where the time went, "
                       "latency and memory")
    r.add_argument("--repeat", type=int, default=10, help="timed runs after the warm-up (default 10)")
    r.add_argument("--save-outputs", metavar="F.npz", help="write the outputs, one array per output name")
    r.add_argument("--dynamic-batch", metavar="1,2,4,8", help="batch gears for runtime_v1 (atc "
                   "--dynamic_batch_size): one plan per gear of the inputs' symbolic batch dim")
    r.add_argument("--dynamic-dims", metavar="32;64;128", help="gears over any dims for runtime_v1 (atc "
                   "--dynamic_dims): each entry the sizes of --input-shape's -1 dims in order, e.g. "
                   "--input-shape input_ids:1,-1 --dynamic-dims '32;64;128'; a run needs an exact match")
    r.add_argument("--data-parallel", type=int, metavar="N", help="split the batch over N devices, outputs "
                   "gathered (HcomAllGather): N devices of this process, or under `mpiexec -n N` one a rank")
    r.add_argument("--tensor-parallel", type=int, metavar="N", help="split transformer blocks over N devices "
                   "(Megatron: columns then rows, HcomAllReduce); each holds ~1/N of their weights")
    r.add_argument("--hcom-parallel", action="store_true", help="GE's AllReduce-parallel pass (ge.hcomParallel): "
                   "compute not needing an in-flight AllReduce runs on another stream meanwhile")
    r.set_defaults(fn="run:cmd_run")

    sub.add_parser("models", help="list the light models `ge run NAME` accepts").set_defaults(fn="run:cmd_models")

    q = sub.add_parser("plan", parents=[model], help="compile a model and print its static memory plan")
    q.add_argument("--json", metavar="F", help='write the plan as JSON (schema: docs/memory.md, "Plan JSON")')
    q.add_argument("--plot", metavar="F.png", help='draw the feature-map layout (pip install "ge-runtime[plot]")')
    q.add_argument("--order", default="dfs", help="topological sort mode: bfs, dfs, rdfs, memory_priority")
    q.add_argument("--assigner", default="hybrid", help="hybrid (default) or one assigner name")
    q.add_argument("--no-reuse", action="store_true", help="ge.exec.disableReuseMemory=1")
    q.add_argument("--orders", action="store_true", help="also compare every topological sort mode")
    q.set_defaults(fn="plan:cmd_plan")

    c = sub.add_parser("compile", parents=[model], help="compile once and save an offline model (.gem)")
    c.add_argument("-o", "--output", required=True, metavar="F.gem",
                   help="the offline model: a zip file (F.gem), or a directory if F ends with /")
    c.add_argument("--order", default="dfs", help="topological sort mode: bfs, dfs, rdfs, memory_priority")
    c.add_argument("--no-reuse", action="store_true", help="ge.exec.disableReuseMemory=1")
    c.add_argument("--dynamic-batch", metavar="1,2,4,8", help="batch gears for runtime_v1 (GE's "
                   "--dynamic_batch_size): one plan per gear of the inputs' symbolic batch dim")
    c.add_argument("--dynamic-dims", metavar="32;64;128", help="gears over any dims for runtime_v1 (atc "
                   "--dynamic_dims): each entry the sizes of --input-shape's -1 dims in order, e.g. "
                   "--input-shape input_ids:1,-1 --dynamic-dims '32;64;128'; a run needs an exact match")
    c.add_argument("--data-parallel", type=int, metavar="N", help="a data-parallel plan for N devices "
                   "(each runs 1/N of the batch)")
    c.add_argument("--tensor-parallel", type=int, metavar="N", help="the plan of one device of N of a "
                   "tensor-parallel group (--device-id; under mpiexec: the rank)")
    c.add_argument("--device-id", type=int, default=-1, metavar="D", help="the device a tensor-parallel plan "
                   "is cut for (default: the MPI rank, else 0)")
    c.set_defaults(fn="run:cmd_compile")

    f = sub.add_parser("profile", parents=[_model_flags("v2", "v1, v2 (default) or auto"), data],
                       help="trace runs per stream (Chrome/Perfetto JSON), measured and modelled overlap")
    f.add_argument("--trace", required=True, metavar="F.json", help="write the Chrome/Perfetto trace here")
    f.add_argument("--repeat", type=int, default=3, help="traced runs (default 3)")
    f.set_defaults(fn="profile:cmd_profile")

    b = sub.add_parser("bench", parents=[_model_flags(runtime_help="comma-separated runtimes, e.g. v1,v2 "
                                                                  "(default auto)"), data],
                       help="compare runtimes, stream counts and onnxruntime on one model, side by side")
    b.add_argument("--streams", help="comma-separated max_streams values to compare, e.g. 1,2,4")
    b.add_argument("--data-parallel", type=int, metavar="N", help="as ge run's (prints the modelled ring too)")
    b.add_argument("--tensor-parallel", type=int, metavar="N", help="as ge run's (prints the modelled ring too)")
    b.add_argument("--hcom-parallel", action="store_true", help="as ge run's")
    b.add_argument("--vs", choices=["onnxruntime"], help='also time onnxruntime (pip install "ge-runtime[bench]")')
    b.add_argument("--rounds", type=int, default=20, help="alternating rounds (default 20)")
    b.add_argument("--by-op", action="store_true", help="time per op family on ge (traced runs) and on "
                   "onnxruntime (its node profile), side by side: where the time goes")
    b.add_argument("--json", help="write the table as JSON to this file")
    b.add_argument("--plot", metavar="F.png", help='draw the comparison (pip install "ge-runtime[plot]")')
    b.set_defaults(fn="bench:cmd_bench")

    h = sub.add_parser("report", parents=[model, data], help="one self-contained HTML page: plan summary, "
                       "memory map, stream timeline on the modelled clock, per-op times")
    h.add_argument("-o", "--output", default="report.html", metavar="F.html", help="default report.html")
    h.add_argument("--repeat", type=int, default=5, help="traced runs for the measured per-op times (default 5)")
    h.set_defaults(fn="report:cmd_report")

    g = sub.add_parser("generate", parents=[_model_flags()], help="tokens from a decoder step export (past "
                       "key/values in and out), its KV cache in place; greedy or sampled; tokens per second")
    g.add_argument("--prompt", metavar="IDS", help="token ids '1,2,3'; sequences of any lengths separated by ';' "
                   "(left-padded, the padding masked); default '0'")
    g.add_argument("--max-new-tokens", type=int, default=16, metavar="N", help="tokens to generate (default 16)")
    g.add_argument("--max-len", type=int, default=None, metavar="N", help="the cache's rows (default: the longest "
                   "prompt + max-new-tokens)")
    g.add_argument("--sample", action="store_true", help="sample (default greedy, unless --top-k/--top-p/"
                   "--temperature say otherwise)")
    g.add_argument("--top-k", type=int, default=0, metavar="K", help="sample among the K most likely (0: off)")
    g.add_argument("--top-p", type=float, default=1.0, metavar="P", help="sample from the smallest set of mass P")
    g.add_argument("--temperature", type=float, default=1.0)
    g.add_argument("--seed", type=int, default=None, help="the sampler's seed (the same seed, the same tokens)")
    g.add_argument("--stop", metavar="IDS", help="stop tokens '50256,0': a sequence ends at the first")
    g.add_argument("--pad", type=int, default=0, metavar="ID", help="the padding token (default 0)")
    g.add_argument("--one-token-steps", action="store_true", help="one static step plan for every past length "
                   "(kv_cache_static, runtime_v1) and the prompt a token a step")
    steps = g.add_mutually_exclusive_group()
    steps.add_argument("--static-steps", dest="static_steps", action="store_const", const=True, default=None,
                       help="static steps or an error (default: static steps where the export allows: one plan "
                       "for every past length and a prefill plan of the prompt's length, kv_cache_static on "
                       "runtime_v1; else steps shaped by their past on runtime_v2, saying why)")
    steps.add_argument("--dynamic-steps", dest="static_steps", action="store_const", const=False,
                       help="steps shaped by their past (runtime_v2), as the export's shapes follow it")
    g.set_defaults(fn="generate:cmd_generate")

    w = sub.add_parser("warmup", help="fill the kernel caches for models ahead of their first run, in "
                       "parallel worker processes (a kernel two need is compiled once)")
    w.add_argument("models", nargs="*", metavar="MODEL", help="models as `ge run` takes them, or 'all' for "
                   "every light model (default: the light ResNet-50)")
    w.add_argument("--jobs", type=int, default=min(os.cpu_count() or 1, 4), metavar="N",
                   help="worker processes at once (default: the CPUs, at most 4)")
    w.add_argument("--runtime", default="auto", type=_runtime_choice, help="v1, v2 or auto (default)")
    w.set_defaults(fn="warmup:cmd_warmup")

    for cmd in (r, q, c, f, h, g):   # one runtime each: checked by argparse, before any work
        for a in cmd._actions:
            if a.dest == "runtime":
                a.type = _runtime_choice
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    module, name = args.fn.split(":")
    try:
        from importlib import import_module
        from .common import check_extras
        check_extras(args)
        return getattr(import_module(f"{__name__}.{module}"), name)(args)
    except GEError as e:
        print(f"ge: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `ge run | head`: the reader left; no traceback
        sys.stdout = open(os.devnull, "w")
        return 0


if __name__ == "__main__":
    sys.exit(main())
