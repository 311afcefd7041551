"""Gear memory split (GE's DynamicBatchMemAssigner at 400 MiB, runtime_v1/gear_memory.py): per gear its
feature-map bytes, and the buffers the gears share, one buffer vs split. Plans only (nothing is loaded).

    python bench/gear_memory.py [model] [gears] [split MiB]      e.g. squeezenet 1,32,256 400
"""
import sys

from ge.compiler import compile_gears
from ge.models import with_symbolic_dims
from ge.zoo import with_random_weights
from runtime_v1.gear_memory import piece_sizes, set_pieces
from runtime_v1.model import feature_bytes

MIB = 1 << 20


def main(name="squeezenet", gears="1,32,256", split_mib="400"):
    m = with_random_weights(name)
    inits = {i.name for i in m.graph.initializer}
    data = next(i.name for i in m.graph.input if i.name not in inits)
    m = with_symbolic_dims(m, {data: {0: "N"}})
    limit = int(float(split_mib) * MIB)
    before = compile_gears(m, {"dynamic_batch": gears}).plans    # one buffer (the hybrid assigner)
    plans = compile_gears(m, {"dynamic_batch": gears, "gear_memory_split_bytes": limit}).plans   # blocks
    cuts, pieces = set_pieces(plans, limit)
    for g, p in sorted(plans.items()):
        print(f"{name} gear {g:>3}: feature map {feature_bytes(before[g]) / MIB:8.2f} MiB one buffer; split: "
              f"{feature_bytes(p) / MIB:8.2f} MiB in pieces {[round(n / MIB, 2) for n in piece_sizes(p, cuts[g])]}")
    one = max(feature_bytes(p) for p in before.values())
    print(f"{name} gears {gears}: one buffer {one / MIB:.2f} MiB; split at {split_mib} MiB: "
          f"{len(pieces)} buffers {[round(n / MIB, 2) for n in pieces]} = {sum(pieces) / MIB:.2f} MiB")


if __name__ == "__main__":
    main(*sys.argv[1:])
