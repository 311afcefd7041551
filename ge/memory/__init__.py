"""Static memory planning (ARCHITECTURE.md, "Memory"): lifetimes, GE's block assigners, best-fit, hybrid, verifier."""
from .planner import plan_memory

__all__ = ["plan_memory"]
