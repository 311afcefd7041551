"""Latency of frozen TensorFlow graphs: TensorFlow vs ge, one thread each (run by hand).

    python tools/bench_tf_fixtures.py --engine tf [--dir tests/tf/fixtures] [NAME ...]   # with TensorFlow
    python tools/bench_tf_fixtures.py --engine ge [--dir tests/tf/fixtures] [NAME ...]   # ge, tracked layout
    python tools/bench_tf_fixtures.py --engine ge-naive ...   # ge, a Transpose pair around every Conv/Pool

Prints one line per model: median and min of --runs runs after --warmup runs, on the fixture's inputs.
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402

KERAS = ("mobilenet_v2", "resnet50", "inception_v3")


def tf_runner(pb, feeds):
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    gd = tf.compat.v1.GraphDef.FromString(open(pb, "rb").read())
    names = [k for k in feeds]
    sinks = [n.name for n in gd.node if n.name.startswith("Identity")]
    fn = tf.compat.v1.wrap_function(lambda: tf.graph_util.import_graph_def(gd, name=""), [])
    f = fn.prune([fn.graph.get_tensor_by_name(n) for n in names],
                 [fn.graph.get_tensor_by_name(f"{s}:0") for s in sinks])
    args = [tf.constant(feeds[n]) for n in names]
    return lambda: f(*args)


def ge_runner(pb, feeds, naive=False):
    import ge
    from ge.compiler import build_plan, optimize
    from ge.frontends.tensorflow import import_tensorflow
    from ge.schedule.toposort import topological_order
    options = ge.Options(thread_budget=1)
    g = optimize(import_tensorflow(pb, track_layout=not naive), options)
    plan = build_plan(g, topological_order(g, options.topo_sorting_mode), options)
    sess = ge.Session(plan, runtime="v2", options=options)
    transposes = sum(n.op_type == "Transpose" for n in g.nodes)
    ge_feeds = {k.removesuffix(":0"): v for k, v in feeds.items()}
    run = lambda: sess.run(None, ge_feeds)  # noqa: E731
    run.info = f"{len(g.nodes)} nodes, {transposes} Transpose"
    return run


def measure(run, warmup, runs):
    for _ in range(warmup):
        run()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return np.median(times) * 1e3, min(times) * 1e3


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=list(KERAS))
    ap.add_argument("--engine", choices=["tf", "ge", "ge-naive"], required=True)
    ap.add_argument("--dir", default=os.path.join(os.path.dirname(__file__), "..", "tests", "tf", "fixtures"))
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args(argv)
    for name in args.names:
        pb = os.path.join(args.dir, f"{name}.pb")
        z = np.load(os.path.join(args.dir, f"{name}.npz"))
        feeds = {k[3:]: z[k] for k in z.files if k.startswith("in/")}
        if args.engine == "tf":
            run = tf_runner(pb, feeds)
            run_info = ""
        else:
            run = ge_runner(pb, feeds, naive=args.engine == "ge-naive")
            run_info = run.info
        med, best = measure(run, args.warmup, args.runs)
        print(f"{args.engine:8s} {name:14s} median {med:8.2f} ms  min {best:8.2f} ms  {run_info}", flush=True)


if __name__ == "__main__":
    main()
