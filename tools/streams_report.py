"""Streams, events and modelled NPU time per light model: `python tools/streams_report.py [MODEL...]`.

For each model: nodes, streams (GE's logical assignment, max_streams 8), nodes moved back by the
ineffective-multi-stream pass, events inserted -> after GE's rules -> after the transitive reduction, and
the modelled single- vs multi-stream NPU time and AICORE utilization (ge.npu.sim, Ascend-910-like).
`--sweep` adds the sensitivity of the Inception gain to the model's launch latency and block size.
"""
from __future__ import annotations

import dataclasses
import sys

import ge
from ge.compiler import import_model, optimize
from ge.npu.sim import ASCEND_910, compare
from ge.options import Options
from ge.plan import Plan
from ge.schedule import schedule
from ge.schedule.toposort import topological_order
from ge.zoo import LIGHT_MODELS, light_model_path


def row(name, model=ASCEND_910, exact_ge=False):
    options = Options(exact_ge_streams=exact_ge)
    plan: Plan = ge.compile(light_model_path(name), options)
    g = optimize(import_model(light_model_path(name)), options)
    order = topological_order(g)
    sched = schedule(order, [n.engine for n in plan.nodes], options)   # the counts behind plan.events
    a, ev = sched.streams, sched.events
    single, multi = compare(plan, model)
    return (f"{name:13s} {len(order):5d} {a.num_streams:3d} {a.moved:5d} "
            f"{ev.cross_edges:4d} -> {ev.after_ge_rules:4d} -> {ev.after_reduction:4d}   "
            f"{single.makespan_s * 1e6:7.1f} {multi.makespan_s * 1e6:7.1f} us  "
            f"{single.aicore_utilization:6.1%} -> {multi.aicore_utilization:6.1%} "
            f"({multi.aicore_utilization / single.aicore_utilization - 1:+.0%})")


def with_aicore(launch_s, min_block_s):
    engines = dict(ASCEND_910.engines)
    engines["AICORE"] = dataclasses.replace(engines["AICORE"], launch_s=launch_s, min_block_s=min_block_s)
    return dataclasses.replace(ASCEND_910, engines=engines)


def main(argv):
    sweep = "--sweep" in argv
    names = [a for a in argv if not a.startswith("--")] or list(LIGHT_MODELS)
    print("model         nodes  st moved events: in -> GE -> TR     single   multi NPU  "
          "AICORE util single -> multi")
    for name in names:
        print(row(name))
    print("GE's rules as written (exact sibling rule, no reuse of finished streams):")
    for name in names:
        print(row(name, exact_ge=True))
    if sweep:
        for launch in (1e-6, 3e-6, 10e-6):
            for block in (0.5e-6, 2e-6, 8e-6):
                print(f"launch {launch * 1e6:4.1f} us, min block {block * 1e6:3.1f} us:")
                for name in ("inception_v1", "inception_v2"):
                    print("  " + row(name, with_aicore(launch, block)))


if __name__ == "__main__":
    main(sys.argv[1:])
