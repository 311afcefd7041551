"""runtime_v2's host CPU engine (runtime_v2/host_cpu.py) against the kernels it replaces, side by side.

    python bench/host_cpu.py [--calls 2000] [--bert-runs 30] [--seq 128]

Part 1, one step: a host step (numpy twin, ge/kernels/host_cpu.host_step) and the Numba kernel's launch from Python (as
runtime_v2's host loop calls it: fn(*inputs, *outputs, *args)) on the same int64 operands, per element count
(Add with a broadcast scalar, Where, Gather, Concat), alternating in one process: microseconds a call,
median of 5 rounds of --calls calls each, in this thread's CPU time. This is what MAX_ELEMENTS rests on.
Part 2, the BERT 4 x 256 export as exported (runtime_v2): two sessions in one process, one with the host CPU
engine and one with GE_V2_HOST_CPU=0 (every shape step a kernel, as before), their runs alternating:
replayed runs (the default: a repeated shape) and host-driven runs (capture_limit=0: what a first run or a
shape seen once costs beyond compiling). Medians in ms, wall and the process's CPU time, and new / old.
Say the load (printed) beside any figure: the machine is shared.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np


def _step_pair(op, arrays, attrs=None, values=()):
    """(host call, kernel call) on the same buffers, as runtime_v2 makes them."""
    from ge.kernels.registry import KernelContext, TensorSpec, cleaning, lookup
    from ge.kernels.host_cpu import host_step
    kernel = lookup(op, "", 17, "n")
    specs = [TensorSpec(a.shape, a.dtype) for a in arrays]
    ctx = KernelContext(op, "n", dict(attrs or {}), specs, [a if k in values else None for k, a in
                                                            enumerate(arrays)], 17, n_outputs=1)
    launch = kernel.bind(ctx)
    flat = [np.ascontiguousarray(a).reshape(-1) for a in arrays]
    out_h = np.empty(ctx.outputs[0].size, ctx.outputs[0].dtype)
    out_k = np.empty_like(out_h)
    host = host_step(ctx, launch)
    picked = launch.inputs if launch.inputs is not None else range(len(arrays))
    fn, ins, args = cleaning(launch, len(list(picked))), [flat[i] for i in picked], launch.args
    fn(*ins, out_k, *args)   # compiled (or loaded) before timing
    host(*flat, out_h)
    assert out_h.tobytes() == out_k.tobytes()
    return (lambda: host(*flat, out_h)), (lambda: fn(*ins, out_k, *args))


def _per_call(f, calls: int) -> float:
    """CPU microseconds a call (this thread's CPU time: what a shared machine's preemptions do not inflate)."""
    t0 = time.thread_time()
    for _ in range(calls):
        f()
    return (time.thread_time() - t0) / calls * 1e6


def part1(calls: int) -> None:
    rng = np.random.default_rng(0)
    print(f"\npart 1: CPU us a call, host step (numpy) vs kernel launch from Python; load {os.getloadavg()[0]:.2f}")
    print(f"  {'op':8s} {'elements':>8s} {'host us':>8s} {'kernel us':>9s} {'host/kernel':>11s}")
    for n in (1, 8, 64, 256, 1024, 4096):
        a, b = rng.integers(-9, 9, n), rng.integers(-9, 9, n)
        cases = [("Add", [a, np.array(3)], None, ()), ("Where", [a > 0, a, b], None, ()),
                 ("Gather", [a, np.arange(n) % max(n, 1)], {"axis": 0}, ()),
                 ("Concat", [a, b], {"axis": 0}, ())]
        for op, arrays, attrs, values in cases:
            host, kern = _step_pair(op, arrays, attrs, values)
            h, k = [], []
            for _ in range(5):
                h.append(_per_call(host, calls))
                k.append(_per_call(kern, calls))
            mh, mk = statistics.median(h), statistics.median(k)
            print(f"  {op:8s} {n:8d} {mh:8.2f} {mk:9.2f} {mh / mk:11.2f}")


def part2(runs: int, seq: int) -> None:
    import ge
    from ge import exports
    model, feeds = exports.load("bert_4x256"), exports.bert_feeds(1, seq)
    print(f"\npart 2: BERT 4 x 256 as exported, seq {seq}, runtime_v2, ms a run (median of {runs}, alternating)")
    for label, opts in (("replayed", ge.Options()), ("host-driven", ge.Options(capture_limit=0))):
        sessions = {}
        for name, flag in (("new", "1"), ("old", "0")):
            os.environ["GE_V2_HOST_CPU"] = flag
            sessions[name] = ge.Session(model, runtime="v2", options=opts)
        os.environ.pop("GE_V2_HOST_CPU")
        for s in sessions.values():
            for _ in range(3):
                s.run(None, feeds)
        times = {name: [] for name in sessions}
        cpu = {name: [] for name in sessions}
        load0 = os.getloadavg()[0]
        for _ in range(runs):
            for name, s in sessions.items():
                t0, c0 = time.perf_counter(), time.process_time()
                s.run(None, feeds)
                times[name].append((time.perf_counter() - t0) * 1e3)
                cpu[name].append((time.process_time() - c0) * 1e3)
        new, old = statistics.median(times["new"]), statistics.median(times["old"])
        cn, co = statistics.median(cpu["new"]), statistics.median(cpu["old"])
        print(f"  {label:12s} host CPU engine {new:8.3f} ms ({cn:.3f} CPU)   kernels (GE_V2_HOST_CPU=0) {old:8.3f} ms "
              f"({co:.3f} CPU)   new/old wall {new / old:.3f}, CPU {cn / co:.3f}   host steps "
              f"{sessions['new'].stats()['host_cpu_steps']}   last run {sessions['new'].stats()['last_run']}   "
              f"load {load0:.2f}-{os.getloadavg()[0]:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--bert-runs", type=int, default=30)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--parts", default="1,2")
    args = ap.parse_args()
    print(f"date {time.strftime('%Y-%m-%d %H:%M:%S %Z')}  cpus {os.cpu_count()}")
    if "1" in args.parts:
        part1(args.calls)
    if "2" in args.parts:
        part2(args.bert_runs, args.seq)


if __name__ == "__main__":
    main()
