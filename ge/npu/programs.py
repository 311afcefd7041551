"""Host threads for a plan's streams: how many (the thread budget) and what each runs (its program).

Both runtimes run a multi-stream plan on stream threads from these two functions, except where the AI cores
pull the streams (runtime_v1, kernels tiled: `dispatch_cores`):
  1. `stream_threads(plan)`: the plan's streams share `Options.thread_budget` (0 = the CPUs this process
     may use) with the AI cores every kernel is tiled over (aicore.py): budget // aicore_num threads, at
     least one, at most one per stream; stream s runs on thread s mod that number (streams densely
     renumbered in order). `dispatch_cores(plan)`: a static plan with several streams and tiled kernels
     runs each stream as a queue the AI cores pull from (runtime_v1/dispatch.py), on aicore_num threads: no
     stream owns a thread, so streams fill the idle tails of one another's tiled tasks.
  2. `thread_programs(plan, threads)`: per thread, its steps in plan order, each as (step, waits, records):
     the ids of the plan's events it waits for before the step and records after it. Only events between
     different threads are kept: one thread keeps its own order. Plan order is topological and every
     thread walks it forwards, so streams merged on one thread cannot deadlock.
The plan is read, not imported (the device sits below the compiler): `plan.nodes` (step, stream),
`plan.events` (id, record_after, wait_before), `plan.options.thread_budget` / `aicore_num`.
"""
from __future__ import annotations

from .aicore import CPUS


def thread_budget(options) -> int:
    """Threads that may compute at once for one run (Options.thread_budget; 0 = the CPUs of this process)."""
    return options.thread_budget or CPUS


def stream_threads(plan) -> int:
    """Step 1: host threads for the plan's streams when no cores pull them (`dispatch_cores`; runtime_v2): the
    thread budget divided by the AI cores every kernel is tiled over, at least one, at most one per stream.

    Why divide: each tiled kernel already keeps all the cores busy, so a second stream thread only helps where
    branches balance and the kernels are small. Measured on 2 cores (runtime_v1, 30 alternating rounds,
    medians), one stream thread against one per stream: Inception v1 20.3 vs 23.7 ms, Inception v2 22.7 vs
    25.9, SqueezeNet 5.2 vs 6.0, ShuffleNet 4.0 vs 4.9, a BERT-like encoder 48.6 vs 57.5; no mapping of
    streams onto two threads beat one. `aicore_num=1` gives every stream its thread back (kernels untiled).
    A plan with dynamic-shape steps keeps a thread per stream: its host-side work (shape inference,
    allocation) is what the streams overlap."""
    streams = len({n.stream for n in plan.nodes})
    budget = thread_budget(plan.options)
    if not any(n.is_dynamic for n in plan.nodes):
        budget //= max(1, plan.options.aicore_num or 1)
    return max(1, min(streams, budget))


def dispatch_cores(plan) -> int:
    """Cores that pull a static plan's streams as queues (runtime_v1/dispatch.py), 0 when its streams run on
    stream threads instead: one stream, dynamic steps (their host work is what stream threads overlap), or
    kernels not tiled (aicore_num 1: streams are the only parallelism).

    Measured on 2 cores (bench/aicores_report.py, 2026-12-07, alternating, medians): pulled streams against
    one stream 0.95-1.05x from run to run (0.99-1.01x in the quietest) on Inception v1/v2, ShuffleNet,
    SqueezeNet and a BERT-like encoder (one stream already keeps both cores 96-98% busy: `--only headroom`),
    where a thread per stream, each launching its own tiled tasks, took 1.13-1.32x the time of one stream."""
    streams = len({n.stream for n in plan.nodes})
    cores = min(plan.options.aicore_num or 1, thread_budget(plan.options))
    if streams < 2 or cores < 2 or any(n.is_dynamic for n in plan.nodes):
        return 0
    return cores


def thread_of(plan, threads: int) -> list[int]:
    """Per step, the thread that runs it."""
    dense = {s: k for k, s in enumerate(sorted({n.stream for n in plan.nodes}))}
    return [dense[n.stream] % threads for n in plan.nodes]


def cross_thread_events(plan, threads: int) -> tuple:
    """The plan's events whose record and wait run on different threads."""
    group = thread_of(plan, threads)
    return tuple(e for e in plan.events if group[e.record_after] != group[e.wait_before])


def thread_programs(plan, threads: int) -> list[tuple]:
    """Step 2: per thread, a tuple of (step, waits, records) in plan order (threads with no step dropped)."""
    group = thread_of(plan, threads)
    waits: dict[int, list] = {}
    records: dict[int, list] = {}
    for e in cross_thread_events(plan, threads):
        waits.setdefault(e.wait_before, []).append(e.id)
        records.setdefault(e.record_after, []).append(e.id)
    programs = [[] for _ in range(threads)]
    for n in plan.nodes:
        programs[group[n.step]].append((n.step, tuple(waits.get(n.step, ())), tuple(records.get(n.step, ()))))
    return [tuple(p) for p in programs if p]
