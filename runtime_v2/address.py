"""The device addresses a runtime_v2 executor maps first: what its plan needs plus a bounded pool headroom.

A DeviceMemory maps host pages for its addresses (ge/npu/memory.py); mapping the whole capacity (4 GiB by
default) for every session made 20 sessions of a tiny model need 80 GiB of address space, and the second one
failed under `ulimit -v 8G` (issue 46). What a plan is known to need at load, per executor instance: its
planned arena, every tensor of a known size the caching allocator holds (ALLOC outputs, page-rounded; a
run-time-shaped one counts one page) and its workspaces, plus one fetch of slack; then the state blocks once
and POOL_HEADROOM for the pool. A plan with run-time shapes cannot know the rest: its memory grows (in place,
or by a new segment) when a run asks for more, up to the capacity, the one cap it is held to.
"""
from __future__ import annotations

from ge.npu.memory import PAGE_BYTES

from .lowering import ALLOC

FETCH_BYTES = 1 << 21
POOL_HEADROOM = 8 << 20


def _pages(n: int, page: int = PAGE_BYTES) -> int:
    return -(-max(int(n), 1) // page) * page


def address_need(plan, lowered, arena_bytes: int, instances: int) -> int:
    """Bytes of addresses an executor of `plan` with up to `instances` instances maps at load."""
    per = _pages(arena_bytes) + FETCH_BYTES
    for step in lowered.steps:
        per += sum(_pages(o.nbytes) for o in step.outs if o.place == ALLOC)
        launch = step.node.launch
        per += sum(_pages(w.nbytes) for w in (launch.workspaces if launch is not None else ()))
    states = _pages(plan.memory.segments.get("variable", 0)) if plan.states and plan.memory is not None else 0
    return instances * per + states + POOL_HEADROOM
