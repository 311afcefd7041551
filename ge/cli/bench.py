"""`ge bench`: contenders alternated round by round on one model (ge.bench), and onnxruntime beside them."""
from __future__ import annotations

import json

from ..bench import alternate, format_table, onnxruntime_session, summarize
from ..errors import GEError
from ..npu.aicore import CPUS
from ..progress_bar import Progress
from . import common


def _ints(text: str, flag: str) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise GEError(f"{flag} takes comma-separated integers, e.g. 1,2,4; got '{text}'") from None
    if not out or min(out) < 1:
        raise GEError(f"{flag} takes positive integers, got '{text}'")
    return out


def cmd_bench(args) -> int:
    """Alternate the contenders on one model and print median, p90 and the ratio to the first."""
    path = common.model_path(args.model)
    if args.by_op:
        return _by_op(path, args)
    runtimes = [common.check_runtime(rt.strip()) for rt in args.runtime.split(",") if rt.strip()]
    streams = _ints(args.streams, "--streams") if args.streams else [None]
    contenders, feeds, sess = {}, None, None
    with Progress() as progress:
        for rt in runtimes:
            for n in streams:
                sess = common.open_session(path, args, progress, runtime=rt,
                                           **({} if n is None else {"max_streams": n, "enable_single_stream": n == 1}))
                common.compile_kernels(sess, progress)
                feeds = feeds or common.feeds(sess, args)
                name = f"ge {sess.runtime}" + ("" if n is None else f" {common.plural(n, 'stream')}")
                if n is not None and sess.plan.num_streams < n:
                    name += f" ({sess.plan.num_streams} in the plan)"
                contenders[name] = (lambda s=sess: s.run(None, feeds))
    if args.vs == "onnxruntime":
        contenders["onnxruntime"] = _onnxruntime_runner(path, args.threads, feeds)
    rows = summarize(alternate(contenders, rounds=args.rounds, warmup=args.warmup), base=next(iter(contenders)))
    rank = _rank_prefix()
    print(f"{rank}model {path}   threads {args.threads or CPUS} for ge and for onnxruntime   rounds {args.rounds}")
    print(f"{rank}ge        {common.cores(sess)}")
    print(f"{rank}why       {sess.stats()['runtime_reason']}")
    if args.vs == "onnxruntime":
        print(f"{rank}{SPIN_NOTE}")
    print("\n".join(rank + line for line in format_table(rows, base=rows[0].name).splitlines()))
    if rank:
        _aggregate(rows, feeds)
    _ring_projection(sess.plan, rank)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": path, "threads": args.threads, "rows": [r.to_dict() for r in rows]}, f, indent=1)
    if args.plot:
        plot_bench(rows, args.plot, title=common.label(path))
        print(f"wrote {args.plot}")
    return 0


def _rank_prefix() -> str:
    """"rank r/N  " under an MPI launcher (each rank prints its own results), else nothing."""
    from ..hccl.world import launched_rank, under_mpi
    if not under_mpi():
        return ""
    import os
    size = next((os.environ[k] for k in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE") if k in os.environ), "?")
    return f"rank {launched_rank()}/{size}  "


def _aggregate(rows, feeds) -> None:
    """Under MPI, rank 0 prints the group's line per contender: a step of the group ends with its slowest
    rank (every rank is fed the whole batch: data parallel runs 1/N of it on each, tensor parallel all of it
    with 1/N of the weights), so the group's median is the slowest rank's, and its throughput the batch over
    that. Every rank calls this (a gather)."""
    from ..hccl.mpi import world_comm
    comm = world_comm()
    medians = comm.gather([r.median_ms for r in rows], root=0)
    if comm.Get_rank() != 0:
        return
    batch = next((int(a.shape[0]) for a in feeds.values() if getattr(a, "ndim", 0) >= 1), 1)
    print(f"all {len(medians)} ranks  (a group step ends with its slowest rank; batch {batch})")
    for k, r in enumerate(rows):
        per = [m[k] for m in medians]
        print(f"all {len(medians)} ranks  {r.name:24s} median {max(per):9.3f} ms (ranks {min(per):.3f}-"
              f"{max(per):.3f})  {batch / max(per) * 1e3:9.1f} items/s")


def _ring_projection(plan, prefix: str = "") -> None:
    """The modelled clock of the plan with its collectives on a ring of the plan's devices and of 8."""
    from ..hccl.ops import collectives
    from ..npu import compare
    from ..npu.ring import HCCS_RING
    if not collectives(plan):
        return
    print(f"{prefix}modelled  collectives on a {HCCS_RING.describe()}; per-device shapes kept (weak scaling)")
    for n in sorted({max(plan.options.device_count, 2), 8}):
        _, multi = compare(plan, devices=n)
        hccl = sum(multi.stream_busy_s.get(s, 0.0) for s in {x.stream for x in plan.nodes if x.engine == "HCCL"})
        print(f"{prefix}          {n} devices: {multi.makespan_s * 1e6:9.1f} us per run, collectives "
              f"{hccl * 1e6:.1f} us on their stream")


def _by_op(path: str, args) -> int:
    """Per op family, ge's kernel time (first runtime given) beside onnxruntime's, same thread budget."""
    from ..byop import compare, format_families, ge_profile, ort_profile
    if common.is_offline_model(path):
        raise GEError("--by-op compares against onnxruntime on the same file: give an .onnx model, not a .gem")
    runtime = common.check_runtime(args.runtime.split(",")[0].strip())
    with Progress() as progress:
        sess = common.open_session(path, args, progress, runtime=runtime)
        common.compile_kernels(sess, progress)
        feeds = common.feeds(sess, args)
        with progress.phase("ge traced runs"):
            ge_side = ge_profile(sess, feeds, runs=args.rounds, warmup=max(args.warmup, 1))
        with progress.phase("onnxruntime profile"):
            ort_side = ort_profile(path, feeds, threads=args.threads, runs=args.rounds, warmup=max(args.warmup, 1))
    print(f"model {path}   threads {args.threads or CPUS} for ge and for onnxruntime   runs {args.rounds}   "
          f"ms per run, median per node, summed per family")
    print(f"ge        runtime_{sess.runtime}, {common.cores(sess)}")
    print(SPIN_NOTE)
    print(format_families(compare(ge_side, ort_side)))
    return 0


# ge.bench.onnxruntime_session turns spinning off: a spinning pool takes the next contender's core (docs/benchmarks.md)
SPIN_NOTE = "onnxruntime its intra-op pool not spinning (session.intra_op.allow_spinning 0)"


def _onnxruntime_runner(path: str, threads: int, feeds: dict):
    o = onnxruntime_session(path, threads)   # 0: onnxruntime's default (all cores)
    return lambda: o.run(None, feeds)


def plot_bench(rows, path: str, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 0.6 * len(rows) + 1.2))
    ax.barh([r.name for r in rows], [r.median_ms for r in rows],
            xerr=[[0] * len(rows), [r.p90_ms - r.median_ms for r in rows]], color="#4c72b0")
    top = max(r.p90_ms for r in rows)
    for y, r in enumerate(rows):   # labels inside the axes: the limit leaves room for the longest
        ax.text(r.p90_ms + 0.02 * top, y, f"{r.median_ms:.3g} ms ({r.ratio:.2f}x)", va="center")
    ax.set_xlabel("latency, median (bar) to p90 (whisker), ms")
    ax.set_xlim(0, 1.6 * top)
    ax.set_title(title)
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
