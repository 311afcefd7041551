"""Static memory planning (DESIGN.md §6): lifetimes, GE's block assigners, best-fit, hybrid, verifier."""
from .memory_plan import MemoryPlan, MemoryStats, TensorMemory
from .planner import plan_memory

__all__ = ["MemoryPlan", "MemoryStats", "TensorMemory", "plan_memory"]
