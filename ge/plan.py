"""The Plan: an immutable description of how to run a graph, produced by the compiler, read by runtimes.

Names are kept for errors and dumps; runtimes work on the integer indices. A node's `launch` is bound at
compile time when all its shapes are static; a dynamic node (symbolic shapes, run-time shape values) has
`launch=None` and is prepared per run by runtime_v2. A static node whose kernel declares `alias` and
whose prepare gave no task is an alias: its output is a view of an input.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

import numpy as np

from .ir.dtypes import short
from .kernels.registry import Launch, OpKernel
from .options import Options

INPUT, CONST, ACTIVATION = "input", "const", "activation"


@dataclass(frozen=True, slots=True)
class PlanTensor:
    index: int
    name: str
    dtype: np.dtype
    shape: tuple  # ints, or str for symbolic dims
    kind: str     # input | const | activation

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)

    @property
    def nbytes(self) -> int | None:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize if self.is_static else None


@dataclass(frozen=True, slots=True)
class PlanNode:
    step: int
    name: str
    op_type: str
    domain: str
    opset: int
    attrs: Mapping
    inputs: tuple[int, ...]   # tensor indices, -1 for an absent optional input
    outputs: tuple[int, ...]
    kernel: OpKernel
    launch: Launch | None
    is_dynamic: bool
    engine: str
    stream: int = 0

    @property
    def is_alias(self) -> bool:
        return self.launch is None and not self.is_dynamic

    @property
    def may_alias(self) -> bool:
        """The output may be a view of an input (an alias now, or possibly once shapes are known)."""
        return self.kernel.alias is not None and self.launch is None


@dataclass(frozen=True)
class Plan:
    name: str
    tensors: tuple[PlanTensor, ...]
    nodes: tuple[PlanNode, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    constants: Mapping[int, np.ndarray]
    options: Options = field(default_factory=Options)

    def __post_init__(self):
        object.__setattr__(self, "constants", MappingProxyType(dict(self.constants)))

    @property
    def is_dynamic(self) -> bool:
        return any(n.is_dynamic for n in self.nodes)

    def tensor(self, name: str) -> PlanTensor:
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(name)

    def summary(self) -> str:
        lines = [f"plan {self.name}: {len(self.nodes)} nodes, {len(self.tensors)} tensors, "
                 f"{sum(c.nbytes for c in self.constants.values())} weight bytes"]
        for n in self.nodes:
            outs = ", ".join(f"%{self.tensors[o].name}:{short(self.tensors[o].dtype)}"
                             f"{list(self.tensors[o].shape)}" for o in n.outputs)
            ins = ", ".join("None" if i < 0 else f"%{self.tensors[i].name}" for i in n.inputs)
            tag = " (alias)" if n.is_alias else " (dynamic)" if n.is_dynamic else ""
            lines.append(f"  {n.step:4d} s{n.stream} {n.engine:6s} {outs} = {n.op_type}({ins}){tag}")
        return "\n".join(lines)
