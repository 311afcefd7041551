"""HCCL collectives (GE's Hcom ops) on the HCCL engine: HcomAllReduce, HcomAllGather, HcomBroadcast,
HcomReduceScatter, with GE's attributes (`group`, `reduction`, `rank_size`, `root_rank`, `fusion`,
`fusion_id`).

A collective's launch is a `Collective`: a Python callable, not a Numba kernel, since it calls the transport
(ge/hccl). The schedule puts it on the HCCL engine's own stream (engines.HCCL_OPS) with events against
compute; runtime_v2 calls it from its host loop or stream thread, runtime_v1 as a task its stream thread
calls from Python (it has no thunk). The transport is attached when a session loads the plan
(`attach`): the plan holds the op, the session holds the group. Shapes follow GE: AllGather stacks the
ranks' inputs on axis 0 (rank_size x dim 0), ReduceScatter gives each rank 1/rank_size of axis 0.
`fusion` (0: alone, 1: fuse by the default policy, 2: fuse by fusion_id) is checked and kept; AllReduces
with 1 or 2 are fused into one over continuous memory by passes/fuse_collectives.py.
They register here, not in ge/kernels: they are no Numba kernels, and every file of ge/kernels is part of
the kernel group's cache stamp (ge/npu/jitcache.py), so a file there would recompile every kernel.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import ExecutionError, GEError
from ..ir.dtypes import HALF
from ..kernels.registry import HCCL, Launch, TensorSpec, register
from .transport import REDUCTIONS
from .world import check_group

_DTYPES = (np.float32, np.float64, np.int32, np.int64, np.int8, np.uint8)
# 16-bit floats reach a launch as their uint16 bits (Launch.bits16): moved as they are, never reduced
_MOVED = _DTYPES + HALF


# the node attribute bind_plan gives a dynamic collective (one prepared at run time): its transport
TRANSPORT = "_hccl_transport"


class Collective:
    """The launch fn of one collective node: fn(*inputs, *outputs) over flat arrays."""

    def __init__(self, op: str, node: str, **attrs):
        self.op, self.node, self.attrs, self.transport = op, node, attrs, None
        self.__name__ = op   # runtime_v1 names a task it cannot encode by its fn's name

    def attach(self, transport) -> None:
        size = self.attrs.get("rank_size")
        if size is not None and size != transport.size:
            raise GEError(f"{self.op} node '{self.node}' was compiled for rank_size {size}, its group has "
                          f"{transport.size} ranks")
        self.transport = transport

    def __call__(self, *arrays) -> None:
        t = self.transport
        if t is None:
            raise ExecutionError(f"{self.op} node '{self.node}' has no HCCL group: run the plan through "
                                 "ge.Session, which joins one")
        a = self.attrs
        if self.op == "HcomAllReduce":
            t.all_reduce(arrays[0], arrays[1], a["reduction"])
        elif self.op == "HcomAllGather":
            t.all_gather(arrays[0], arrays[1])
        elif self.op == "HcomReduceScatter":
            t.reduce_scatter(arrays[0], arrays[1], a["reduction"])
        else:   # HcomBroadcast: inputs then as many outputs
            n = len(arrays) // 2
            for x, y in zip(arrays[:n], arrays[n:]):
                t.broadcast(x, y, a["root_rank"])


def _common(ctx, reduces: bool = False) -> dict:
    group = ctx.attr("group", "hccl_world_group")
    group = group.decode() if isinstance(group, bytes) else str(group)
    try:
        check_group(group)
    except GEError as e:
        raise ctx.error(str(e)) from None
    fusion = int(ctx.attr("fusion", 0))
    if fusion not in (0, 1, 2):
        raise ctx.error(f"fusion {fusion} is not GE's 0 (alone), 1 (default policy) or 2 (by fusion_id)")
    for i in range(len(ctx.inputs)):
        ctx.require_dtype(i, _DTYPES if reduces else _MOVED)
    return {"group": group, "fusion": fusion, "fusion_id": int(ctx.attr("fusion_id", -1))}


def _reduction(ctx) -> str:
    r = ctx.attr("reduction", "sum")
    r = r.decode() if isinstance(r, bytes) else str(r)
    if r not in REDUCTIONS:
        raise ctx.error(f"reduction '{r}' is not one of {', '.join(REDUCTIONS)}")
    return r


def _rank_size(ctx) -> int:
    n = int(ctx.attr("rank_size", 0))
    if n < 1:
        raise ctx.error("rank_size must be given (the ranks of the group, >= 1)")
    return n


def _infer_all_reduce(ctx):
    _common(ctx, reduces=True)
    _reduction(ctx)
    return [ctx.inputs[0]]


def _infer_all_gather(ctx):
    _common(ctx)
    x, n = ctx.inputs[0], _rank_size(ctx)
    if not x.shape:
        raise ctx.error("a scalar cannot be gathered on axis 0")
    return [TensorSpec((n * x.shape[0], *x.shape[1:]), x.dtype)]


def _infer_reduce_scatter(ctx):
    _common(ctx, reduces=True)
    _reduction(ctx)
    x, n = ctx.inputs[0], _rank_size(ctx)
    if not x.shape or x.shape[0] % n:
        raise ctx.error(f"axis 0 of {list(x.shape)} does not split into rank_size {n} equal parts")
    return [TensorSpec((x.shape[0] // n, *x.shape[1:]), x.dtype)]


def _infer_broadcast(ctx):
    _common(ctx)
    if int(ctx.attr("root_rank", 0)) < 0:
        raise ctx.error(f"root_rank {ctx.attr('root_rank')} is negative")
    return list(ctx.inputs)


def _launch(ctx, **extra) -> Launch:
    attrs = {**_common(ctx), **extra}
    fn = Collective(ctx.op_type, ctx.name, **attrs)
    if ctx.attr(TRANSPORT) is not None:   # a dynamic node's launch, prepared per shape at run time
        fn.attach(ctx.attr(TRANSPORT))
    return Launch(fn)


_REGISTERED = {
    "HcomAllReduce": lambda ctx: _launch(ctx, reduction=_reduction(ctx)),
    "HcomAllGather": lambda ctx: _launch(ctx, rank_size=_rank_size(ctx)),
    "HcomReduceScatter": lambda ctx: _launch(ctx, reduction=_reduction(ctx), rank_size=_rank_size(ctx)),
    "HcomBroadcast": lambda ctx: _launch(ctx, root_rank=int(ctx.attr("root_rank", 0))),
}
_INFER = {"HcomAllReduce": _infer_all_reduce, "HcomAllGather": _infer_all_gather,
          "HcomReduceScatter": _infer_reduce_scatter, "HcomBroadcast": _infer_broadcast}
for _op, _prepare in _REGISTERED.items():
    for _domain in ("", "ge"):   # GE graphs name them in the default domain; ge's own passes in "ge"
        register(_op, infer=_INFER[_op], domain=_domain, engine=HCCL)(_prepare)


def collectives(plan) -> list:
    """The plan's collective nodes (static or dynamic)."""
    return [n for n in plan.nodes if _is_collective(n)]


def _is_collective(n) -> bool:
    return (n.launch is not None and isinstance(n.launch.fn, Collective)) or (
        n.is_dynamic and n.kernel.prepare is _REGISTERED.get(n.op_type))


def bind_plan(plan, transport):
    """A copy of `plan` whose collectives run on `transport` (fresh Collectives: one plan may serve several
    devices of a process, each bound to its own end of the group). Plans without collectives come back as
    they are."""
    if not collectives(plan):
        return plan
    nodes = []
    for n in plan.nodes:
        if n.launch is not None and isinstance(n.launch.fn, Collective):
            fn = Collective(n.launch.fn.op, n.name, **n.launch.fn.attrs)
            fn.attach(transport)
            n = dataclasses.replace(n, launch=dataclasses.replace(n.launch, fn=fn))
        elif _is_collective(n):
            n = dataclasses.replace(n, attrs={**n.attrs, TRANSPORT: transport})
        nodes.append(n)
    return dataclasses.replace(plan, nodes=tuple(nodes))
