"""The device addresses a runtime_v2 executor reserves: what its plan needs plus a bounded pool headroom.

A DeviceMemory maps its address range up front (ge/npu/memory.py); mapping the whole capacity (4 GiB by
default) for every session made 20 sessions of a tiny model need 80 GiB of address space, and the second one
failed under `ulimit -v 8G` (issue 46). A static plan's need is known at load: per executor instance its
planned arena, every tensor the caching allocator holds (ALLOC outputs, page-rounded) and its workspaces,
plus one fetch of slack; then the state blocks once and POOL_HEADROOM for the pool's fragmentation. A plan
with run-time shapes cannot know it: it keeps the capacity (the cap it is held to).
"""
from __future__ import annotations

from ge.npu.memory import PAGE_BYTES

from .lowering import ALLOC

FETCH_BYTES = 1 << 21
POOL_HEADROOM = 64 << 20


def _pages(n: int, page: int = PAGE_BYTES) -> int:
    return -(-max(int(n), 1) // page) * page


def address_need(plan, lowered, arena_bytes: int, instances: int) -> int | None:
    """Bytes of addresses for an executor of `plan` with up to `instances` instances; None: the capacity."""
    if plan.is_dynamic:
        return None
    per = _pages(arena_bytes) + FETCH_BYTES
    for step in lowered.steps:
        per += sum(_pages(o.nbytes) for o in step.outs if o.place == ALLOC)
        launch = step.node.launch
        per += sum(_pages(w.nbytes) for w in (launch.workspaces if launch is not None else ()))
    states = _pages(plan.memory.segments.get("variable", 0)) if plan.states and plan.memory is not None else 0
    return instances * per + states + POOL_HEADROOM
