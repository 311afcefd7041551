"""The rules a plan's options must meet, shared by compile (ge/compiler.py) and load (ge/offline): a plan read
from a `.gem` is refused for every option compile refuses, with the same message.

Options' own constructor checks each value on its own (names, types, ranges); these rules need the host or
the plan:
  1. aicore_num within 1..the CPUs this process may use (ge.npu.aicore.aicore_num's message).
  2. A Plan holds one gear: dynamic_batch and dynamic_dims are compile_gears' (and parallel never goes
     with batch gears).
  3. parallel over N > 1 devices: the plan was split for N devices, so it holds the collectives the split
     adds (data: HcomAllGather with rank_size N on the batched outputs; tensor: HcomAllReduce). A one-device
     plan re-sealed with parallel="data" would otherwise run and drop every other device's rows.
"""
from __future__ import annotations

from .errors import GEError
from .npu.aicore import aicore_num

_SPLIT_BY = {"data": "HcomAllGather", "tensor": "HcomAllReduce"}


def gears_message(what: str, gears) -> str:
    return (f"{what} {list(gears)} compiles one plan per gear: use ge.compiler.compile_gears(model, "
            "options) or ge.Session(model, runtime='v1', options=...); a single Plan (and an offline model, "
            ".gem) cannot hold the gears")


def parallel_batch_message(parallel: str) -> str:
    return (f"parallel={parallel!r} with dynamic_batch: split a static batch instead (give the model a fixed "
            "batch, e.g. Options.input_shape)")


def check_compile_options(options, *, gears: bool = False) -> int:
    """Rules 1-2 on options about to be compiled (`gears`: by compile_gears); the resolved aicore_num."""
    cores = aicore_num(options)
    _check_gears(options, gears)
    return cores


def _check_gears(options, gears: bool) -> None:
    for what in ("dynamic_batch", "dynamic_dims"):
        if getattr(options, what) and not gears:
            raise GEError(gears_message(what, getattr(options, what)))
    if options.dynamic_batch and options.parallel:
        raise GEError(parallel_batch_message(options.parallel))


def check_plan_options(plan, *, gear: bool = False) -> None:
    """Rules 1-3 on a loaded plan (`gear`: one plan of batch gears); a GEError with compile's message."""
    options = plan.options
    if options.aicore_num:   # a compiled plan holds its resolved core count (0: a file before it did)
        aicore_num(options)
    _check_gears(options, gear)
    n = options.device_count
    if options.parallel in _SPLIT_BY and n > 1:
        op = _SPLIT_BY[options.parallel]
        found = [x for x in plan.nodes if x.op_type == op]
        sizes = {x.attrs.get("rank_size", n) for x in found}
        if not found or sizes != {n}:
            raise GEError(f"plan '{plan.name}' says parallel={options.parallel!r} over {n} devices, but it was not "
                          f"split for {n} devices (its {op} nodes: {len(found)}, rank sizes {sorted(sizes)}): "
                          "compile the model with these options")
