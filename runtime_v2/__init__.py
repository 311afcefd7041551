"""runtime_v2: host-driven, node-by-node execution of a ge Plan, with a unified caching allocator."""
from ge.errors import GEError
from ge.plan import Plan

from .allocator import ScalableAllocator, ThreadSafeScalableAllocator
from .executor import Executor
from .mif import MultiStreamAllocator


def load(model: Plan, device=None) -> Executor:
    """The executor of a plan (static or dynamic shapes)."""
    if not isinstance(model, Plan):
        raise GEError("saved batch gears run on runtime_v1 (static plans); for runtime_v2 load the model itself, "
                      "which runs the real batch dynamically")
    return Executor(model, device)


__all__ = ["Executor", "MultiStreamAllocator", "ScalableAllocator", "ThreadSafeScalableAllocator", "load"]
