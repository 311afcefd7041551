"""runtime_v2: a host-driven executor. Node by node: allocate outputs, launch, free after the last reader.

The plan's static nodes carry a bound Launch; dynamic nodes are inferred and prepared here per run from
the concrete shapes (and, for shape-setting inputs, the values) of their inputs, with a small cache
keyed by input shapes. Every run keeps its buffers in locals, so one Executor serves many threads.

Memory follows the plan's static memory plan (`plan.memory`): feature-map tensors and workspaces are flat
views into one preallocated arena (a uint8 buffer) at their planned offsets. A run checks an arena out of a
small pool and returns it at the end, so two concurrent runs never share one; each arena's views are cut
once, when it is created. Graph outputs (io segment) get fresh buffers per run (they are handed to the
caller); dynamic nodes allocate their outputs per run.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from ge.errors import ExecutionError, GEError
from ge.kernels.registry import KernelContext, Launch, TensorSpec
from ge.plan import ACTIVATION, Plan, PlanNode


MAX_POOLED_ARENAS = 4  # arenas kept for reuse per executor (more concurrent runs allocate their own)


@dataclass(slots=True)
class _Step:
    """A plan node lowered to what the loop needs, all integers and callables."""
    node: PlanNode
    fn: object           # kernel function, or None (alias / dynamic)
    ins: tuple           # tensor indices passed to fn
    outs: tuple
    out_sizes: tuple     # (elements, dtype) per output, None where the arena holds it (static nodes only)
    ws: tuple            # (elements, dtype) per workspace
    args: tuple
    alias: int           # source tensor of an alias node, -1 otherwise
    frees: tuple         # tensors whose last reader this step is


class Executor:
    def __init__(self, plan: Plan):
        self.plan = plan
        n = len(plan.tensors)
        self._init = [None] * n
        self._init_shapes: list = [t.shape if t.is_static else None for t in plan.tensors]
        for i, a in plan.constants.items():
            self._init[i] = np.ascontiguousarray(a).reshape(-1)
        keep = set(plan.outputs) | set(plan.constants) | set(plan.inputs)
        last = {}
        for node in plan.nodes:
            for t in node.inputs:
                if t >= 0:
                    last[t] = node.step
        frees: dict[int, list[int]] = {}
        for t, step in last.items():
            if t not in keep:
                frees.setdefault(step, []).append(t)
        self._in_arena = self._arena_tensors()
        self._steps = [self._lower(node, tuple(frees.get(node.step, ()))) for node in plan.nodes]
        self._dyn_cache: dict = {}
        self._pool: list[_Arena] = []
        self._pool_lock = threading.Lock()
        # outputs that are views of a constant or a feed are copied, never handed out
        root = {t: t for t in range(n)}
        for node in plan.nodes:
            if node.may_alias:
                root[node.outputs[0]] = root[node.inputs[node.kernel.alias]]
        self._copy_out = {t for t in plan.outputs if plan.tensors[root[t]].kind != ACTIVATION}

    def _lower(self, node: PlanNode, frees) -> _Step:
        alias = node.inputs[node.kernel.alias] if node.is_alias else -1
        launch = node.launch
        if launch is None:
            return _Step(node, None, (), node.outputs, (), (), (), alias, frees)
        return _Step(node, launch.fn, self._passed(node, launch), node.outputs,
                     tuple(None if o in self._in_arena else
                           (self.plan.tensors[o].nbytes // self.plan.tensors[o].dtype.itemsize,
                            self.plan.tensors[o].dtype) for o in node.outputs),
                     tuple((w.size, w.dtype) for w in launch.workspaces), launch.args, alias, frees)

    @staticmethod
    def _passed(node: PlanNode, launch: Launch) -> tuple:
        if launch.inputs is not None:
            return tuple(node.inputs[i] for i in launch.inputs)
        return tuple(t for t in node.inputs if t >= 0)

    # -- the feature-map arena --------------------------------------------------------------------
    def _arena_tensors(self) -> set[int]:
        """Tensors written into the arena: feature-map outputs of static launches (an in-place output
        gets a view of its input's bytes; alias nodes keep viewing their source at run time)."""
        mem = self.plan.memory
        if mem is None:
            return set()
        launched = {t for n in self.plan.nodes if n.launch is not None for t in n.outputs if t >= 0}
        return {m.index for m in mem.tensors if m.segment == "feature_map" and m.index in launched}

    def _new_arena(self) -> "_Arena":
        mem = self.plan.memory
        raw = np.empty(mem.segments["feature_map"] + 512, np.uint8)
        base = raw[(-raw.ctypes.data) % 512:]  # the arena starts 512-aligned, like every offset in it
        bufs = list(self._init)
        for t in self._in_arena:
            spec = self.plan.tensors[t]
            off = mem.tensors[t].offset
            bufs[t] = base[off:off + spec.nbytes].view(spec.dtype)
        ws = []
        for step, planned in zip(self._steps, mem.workspaces):
            ws.append(tuple(base[off:off + nbytes].view(dt) if nbytes else np.empty(0, dt)
                            for (off, nbytes), (_, dt) in zip(planned, step.ws)))
        return _Arena(raw, bufs, ws)

    def _checkout(self) -> "_Arena | None":
        if self.plan.memory is None:
            return None
        with self._pool_lock:
            if self._pool:
                return self._pool.pop()
        return self._new_arena()

    def _checkin(self, arena) -> None:
        if arena is not None:
            with self._pool_lock:
                if len(self._pool) < MAX_POOLED_ARENAS:  # beyond: dropped, freed with its last view
                    self._pool.append(arena)

    # -- running --------------------------------------------------------------------------------
    def run(self, feeds: dict[int, np.ndarray]) -> list[np.ndarray]:
        """Run on feeds keyed by tensor index (contiguous arrays); returns the graph outputs."""
        arena = self._checkout()
        try:
            return self._run(feeds, arena)
        finally:
            self._checkin(arena)

    def _run(self, feeds, arena) -> list[np.ndarray]:
        bufs = list(self._init if arena is None else arena.bufs)
        shapes = list(self._init_shapes)
        for t, a in feeds.items():
            bufs[t] = a.reshape(-1)
            shapes[t] = a.shape
        step = None
        try:
            for k, step in enumerate(self._steps):
                if step.fn is not None:
                    outs = [bufs[t] if a is None else np.empty(*a) for t, a in zip(step.outs, step.out_sizes)]
                    ws = (arena.ws[k] if arena is not None
                          else [np.empty(n, dt) for n, dt in step.ws])
                    step.fn(*[bufs[i] for i in step.ins], *outs, *ws, *step.args)
                    for t, o in zip(step.outs, outs):
                        bufs[t] = o
                elif step.alias >= 0 and shapes[step.outs[0]] is not None:
                    bufs[step.outs[0]] = bufs[step.alias]
                else:
                    self._run_dynamic(step, bufs, shapes)
                for t in step.frees:
                    bufs[t] = None
        except GEError as e:
            if step is None:
                raise
            raise ExecutionError(f"while running {step.node.op_type} node '{step.node.name}': {e}") from e
        except Exception as e:  # noqa: BLE001 - a kernel failure must name its node
            raise ExecutionError(f"while running {step.node.op_type} node '{step.node.name}': "
                                 f"{type(e).__name__}: {e}") from e
        return [self._output(t, bufs, shapes) for t in self.plan.outputs]

    def _output(self, t: int, bufs, shapes) -> np.ndarray:
        a = bufs[t].reshape(shapes[t])
        return a.copy() if t in self._copy_out else a

    def _run_dynamic(self, step: _Step, bufs, shapes) -> None:
        node = step.node
        kernel = node.kernel
        specs = [None if t < 0 else TensorSpec(shapes[t], self.plan.tensors[t].dtype) for t in node.inputs]
        values = [bufs[t].reshape(shapes[t]) if (t >= 0 and i in kernel.value_inputs) else None
                  for i, t in enumerate(node.inputs)]
        key = (node.step, tuple(s.shape if s else None for s in specs),
               tuple(v.tobytes() if v is not None else None for v in values))
        hit = self._dyn_cache.get(key)
        if hit is None:
            ctx = KernelContext(node.op_type, node.name, dict(node.attrs), specs, values, node.opset,
                                n_outputs=len(node.outputs))
            ctx.outputs = kernel.infer(ctx)
            launch = kernel.prepare(ctx)
            if len(self._dyn_cache) > 1024:
                self._dyn_cache.clear()
            hit = self._dyn_cache[key] = (ctx.outputs, launch)
        out_specs, launch = hit
        for t, s in zip(node.outputs, out_specs):
            shapes[t] = s.shape
        if launch is None:
            bufs[node.outputs[0]] = bufs[node.inputs[kernel.alias]]
            return
        outs = [np.empty(s.size, s.dtype) for s in out_specs]
        launch.fn(*[bufs[i] for i in self._passed(node, launch)], *outs,
                  *[np.empty(w.size, w.dtype) for w in launch.workspaces], *launch.args)
        for t, o in zip(node.outputs, outs):
            bufs[t] = o


@dataclass(slots=True)
class _Arena:
    """One run's feature-map memory: the raw buffer, the initial buffer table, workspace views per step."""
    raw: np.ndarray
    bufs: list
    ws: list
