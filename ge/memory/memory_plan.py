"""The frozen result of memory planning, attached to the Plan as `plan.memory`.

Segments (each its own address space, offsets from 0):
- weights:     constants, back to back, 512-aligned; never reused.
- feature_map: activations and workspaces, reused across lifetimes (the arena runtimes allocate once).
- atomic:      outputs a kernel accumulates into (Launch.atomic): never reused; runtimes zero the segment
               once per run before anything runs (GE's centralized AtomicAddrClean, atomicCleanPolicy 0).
- io:          graph inputs and outputs (zero copy: the user's buffers in GE); never reused; produced outputs
               first, then graph inputs by size ascending (GE's zero-copy layout).
- dynamic:     not a segment: tensors with run-time shapes, allocated by runtime_v2 (offset None).
Workspaces live in feature_map with a one-step life, as in GE.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping


@dataclass(frozen=True, slots=True)
class TensorMemory:
    index: int
    name: str
    segment: str              # weights | feature_map | atomic | io | dynamic
    offset: int | None        # inside the segment; None for dynamic (and symbolic-shaped io)
    bytes: int | None         # the tensor's own bytes
    alias_of: str | None      # the tensor whose block this one is a view of
    first: int | None = None  # feature map: first and last step of the symbol's life
    last: int | None = None
    part_of: str | None = None  # a no-task Concat's output this tensor is a slice of (at `offset`)


@dataclass(frozen=True)
class MemoryStats:
    feature_map_bytes: int
    no_reuse_bytes: int       # sum of every feature-map request, 512-aligned
    lower_bound_bytes: int    # max over steps of live bytes on this order
    assigner: str             # the winner (or the only one run)
    totals: Mapping[str, int]  # bytes per assigner tried
    seconds: float            # planning time

    @property
    def ratio(self) -> float:
        """Planned / lower bound (1.0 is optimal for this order)."""
        return self.feature_map_bytes / self.lower_bound_bytes if self.lower_bound_bytes else 1.0

    @property
    def reduction(self) -> float:
        """Fraction saved versus no reuse."""
        return 1 - self.feature_map_bytes / self.no_reuse_bytes if self.no_reuse_bytes else 0.0


@dataclass(frozen=True)
class MemoryPlan:
    tensors: tuple[TensorMemory, ...]                 # by tensor index
    workspaces: tuple[tuple[tuple[int, int], ...], ...]  # per step: (offset, bytes) per workspace
    segments: Mapping[str, int]                       # segment -> bytes
    stats: MemoryStats

    def summary(self) -> str:
        s = self.stats
        return (f"memory: no reuse {s.no_reuse_bytes / 2**20:.2f} MiB -> planned "
                f"{s.feature_map_bytes / 2**20:.2f} MiB ({s.reduction:.1%} saved; {s.ratio:.3f}x the live "
                f"lower bound {s.lower_bound_bytes / 2**20:.2f} MiB) by {s.assigner}")
