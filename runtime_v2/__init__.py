"""runtime_v2: host-driven, node-by-node execution of a ge Plan, with a unified caching allocator."""
from .allocator import DeviceMemory, ScalableAllocator, ThreadSafeScalableAllocator
from .executor import Executor
from .mif import MultiStreamAllocator

__all__ = ["DeviceMemory", "Executor", "MultiStreamAllocator", "ScalableAllocator",
           "ThreadSafeScalableAllocator"]
