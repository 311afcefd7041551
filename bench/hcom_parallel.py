"""GE's AllReduce-parallel pass (Options.hcom_parallel) on ge.models.all_reduce_layers (batch 64, width 512,
4 layers), 2 devices in one process (runtime_v2, thread_budget 3), off against on:

    python bench/hcom_parallel.py [--runs 5] [--out /tmp]

Prints the date and machine, then per side the measured collective time per run and how much of it ran
beside compute on another stream (the first device's trace), and the modelled clock for 2 and 8 devices on
the ring of ge/npu/ring.py; writes the measured and modelled Perfetto traces (hcom-{measured,modelled}-
{off,on}.json). Measured figures on a shared machine are preliminary.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform

import numpy as np

import ge
from ge.models import all_reduce_layers
from ge.npu import Tracer, compare


def overlap(tracer) -> tuple[float, float]:
    """(collective seconds, of them beside compute on another stream's track) in a measured trace."""
    ks = [sl for sl in tracer.slices if sl.kind == "kernel" and sl.track < 1000]   # 1000+: AI-core blocks
    hc = [sl for sl in ks if "allreduce" in sl.name]
    beside = sum(max(0.0, min(a.end, b.end) - max(a.start, b.start))
                 for a in hc for b in ks if b.track != a.track and "allreduce" not in b.name)
    return sum(sl.end - sl.start for sl in hc), beside


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--out", default=".")
    args = p.parse_args()
    print(datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), platform.node(),
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    m = all_reduce_layers(width=512, batch=64)
    x = np.random.default_rng(1).standard_normal((64, 512)).astype(np.float32)
    ref = None
    for hp in (False, True):
        side = "on" if hp else "off"
        s = ge.Session(m, options=ge.Options(device_count=2, hcom_parallel=hp, thread_budget=3), runtime="v2")
        out = s.run(None, {"x": x})
        ref = out if ref is None else ref
        same = all(np.array_equal(a, b) for a, b in zip(out, ref))
        t = Tracer(f"hcom_parallel {side}")
        t.label_nodes(s.plan)
        for _ in range(args.runs):
            s.run_traced({"x": x}, t)
        t.save(os.path.join(args.out, f"hcom-measured-{side}.json"))
        busy, beside = overlap(t)
        print(f"hcom_parallel {side}: {s.plan.num_streams} streams, outputs equal to off: {same}; measured "
              f"collectives {busy * 1e3 / args.runs:.3f} ms/run, beside compute on another stream "
              f"{beside * 1e3 / args.runs:.3f} ms/run")
        for n in (2, 8):
            mt = Tracer(f"modelled {side}")
            single, multi = compare(s.plan, devices=n, tracer=mt)
            if n == 2:
                mt.save(os.path.join(args.out, f"hcom-modelled-{side}.json"))
            print(f"    modelled {n} devices: {multi.makespan_s * 1e6:.1f} us (one stream {single.makespan_s * 1e6:.1f}"
                  f" us), streams overlapping {mt.stats()['overlap'] * 1e6:.1f} us")


if __name__ == "__main__":
    main()
