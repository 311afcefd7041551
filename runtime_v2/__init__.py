"""runtime_v2: host-driven, node-by-node execution of a ge Plan."""
from .executor import Executor

__all__ = ["Executor"]
