"""Dynamic nodes: shapes inferred and launches prepared at run time, cached by input shapes (and values).

A `DynamicNode` is called by the executor loop as `node(bufs, shapes, spans, alloc, core)`:
  1. key = the concrete shapes of its inputs (plus the bytes of non-constant value inputs, e.g. a
     Reshape's shape computed at run time);
  2. on a miss: infer + prepare through the kernel registry, check against the plan's static dims, cache;
  3. set the output shapes; an alias (no task) views its source; else allocate outputs (HOST: the
     caller's bound array when it fits, else a fresh one; ALLOC: a span of the caching allocator),
     allocate workspaces, launch (a tiled launch on the AI cores: `core` is the thread's (team, slot), see
     tiled.py), free the workspaces.
`post(...)` (a dynamic plan on native stream threads, launcher.py) does steps 1-3 the same but, instead of
launching, writes the buffers' addresses into the stream thread's own base table of the launch's thunk
task (tiled.py, made once per prepared shape, block_dim 1 too) and posts it to that thread's queue.
The cache is shared by every executor instance (dict operations are atomic under the GIL; a race only
prepares the same entry twice) and bounded.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ge.errors import DeviceMemoryError, ShapeError
from ge.kernels.bind import prepare_launch
from ge.kernels.registry import TensorSpec, cleaning
from ge.npu.thunks import ThunkError
from ge.plan import Plan

from .host_outputs import host_output
from .lowering import ARENA, HOST, Step, passed_inputs
from .queues import TASK
from .tiled import TiledCall

MAX_CACHED = 256  # entries per node


class Prepared(NamedTuple):
    """A node prepared for one key (input shapes and values): what each call of that key reuses."""
    out_shapes: tuple
    fn: Any              # the launch's function (None: an alias; host_cpu.py: its numpy step)
    ins: tuple           # the tensors passed as inputs
    sizes: tuple         # (count, dtype, nbytes) per output
    ws: tuple            # (count, dtype, nbytes) per workspace
    args: tuple          # the launch's static arguments
    alias: int           # >= 0: the tensor an alias views (nothing runs)
    tiled: Any           # the launch as a TiledCall for the AI cores (block_dim > 1), else None
    launch: Any          # the Launch (host_cpu.HOST_CPU: ran on the host CPU engine)


class DynamicNode:
    __slots__ = ("node", "plan", "present", "values", "outs", "out0", "cache", "tasks")

    def __init__(self, plan: Plan, step: Step):
        self.node, self.plan = step.node, plan
        self.present = tuple(t for t in self.node.inputs if t >= 0)
        kernel = self.node.kernel
        # value inputs that can change between runs (a constant's value, e.g. Conv's weights, cannot)
        self.values = tuple(t for i, t in enumerate(self.node.inputs)
                            if t >= 0 and i in kernel.value_inputs and t not in plan.constants)
        self.outs = step.outs
        self.out0 = self.node.outputs[0]
        self.cache: dict = {}
        self.tasks: dict = {}   # key -> its launch as a thunk task for posting (or None), see post

    def __call__(self, bufs, shapes, spans, alloc, core=None) -> None:
        hit = self._hit(bufs, shapes)[1]
        outs = self._outputs(hit, bufs, shapes, spans, alloc)
        if outs is None:
            return
        fn, args = hit.fn, hit.args
        if hit.tiled is not None and core is not None:
            fn, args = hit.tiled.bound(*core), ()
        if hit.ws:
            held = [alloc.alloc(nbytes) for _, _, nbytes in hit.ws]
            try:
                fn(*[bufs[t] for t in hit.ins], *outs,
                   *[sp.as_array(dt, n) for sp, (n, dt, _) in zip(held, hit.ws)], *args)
            finally:
                for sp in held:
                    alloc.free(sp)
        else:
            fn(*[bufs[t] for t in hit.ins], *outs, *args)

    def post(self, bufs, shapes, spans, alloc, queues, g: int, slot: int, step: int):
        """As a call, but the launch goes to native stream thread g's queue (queues.py) with that thread's
        base table: (task, buffers) when posted, () for an alias (nothing to run), None when the caller
        must run it here (value inputs, atomic outputs or no thunk encoding; nothing was done). Workspaces
        are freed right after posting: the stream runs what it is given later in order."""
        if self.values:
            return None
        key, hit = self._hit(bufs, shapes)
        task = self._task(key, hit, shapes) if hit.alias < 0 else None
        if task is None and hit.alias < 0:
            return None
        outs = self._outputs(hit, bufs, shapes, spans, alloc)
        if outs is None:
            return ()
        ins, ws = hit.ins, hit.ws
        held = [alloc.alloc(nbytes) for _, _, nbytes in ws]
        buffers = [*[bufs[t] for t in ins], *outs, *[sp.as_array(dt, n) for sp, (n, dt, _) in zip(held, ws)]]
        # an ALLOC tensor's buffer is its block's view from the block's start (spans[t] set with bufs[t])
        blocks = [*[spans[t] for t in ins], *[spans[o.tensor] if o.place != HOST else None for o in self.outs],
                  *held]
        posted = task.post_bases(slot)
        task.fill(posted, buffers, blocks)
        queues.post(g, TASK, task.addr, task.ip, task.fp, posted[1], task.launch.block_dim, step)
        for sp in held:   # the stream's next allocations run after this launch: reuse is ordered
            alloc.free(sp)
        return task, buffers   # the caller keeps the task (its base tables) alive until the run ends

    def _hit(self, bufs, shapes):
        key = tuple([shapes[t] for t in self.present])
        if self.values:
            key = (key, *[bufs[t].tobytes() for t in self.values])
        hit = self.cache.get(key)
        return key, hit if hit is not None else self._prepare(key, bufs, shapes)

    def _outputs(self, hit, bufs, shapes, spans, alloc):
        """Output shapes set, output buffers allocated: the arrays, or None for an alias (its view set).
        ARENA: a static node's planned output (host_cpu.py places static shape steps too); HOST: the caller's
        bound array when it fits, else a fresh one; else a span of the caching allocator."""
        for o, s in zip(self.outs, hit.out_shapes):
            shapes[o.tensor] = s
        if hit.alias >= 0:
            bufs[self.out0] = bufs[hit.alias]
            return None
        outs = []
        for o, (count, dtype, nbytes) in zip(self.outs, hit.sizes):
            if o.place == ARENA:
                a = bufs[o.tensor]
            elif o.place == HOST or nbytes == 0:
                a = bufs[o.tensor]  # a caller's bound output array, or None
                if a is None or a.size != count:
                    a = host_output(count, dtype, nbytes, alloc, self.plan, o.tensor, bufs)
            else:
                try:
                    sp = spans[o.tensor] = alloc.alloc(nbytes)
                except DeviceMemoryError as e:   # the executor names the tensor (a try costs nothing)
                    e.tensor = o.tensor
                    raise
                a = sp.as_array(dtype, count)
            bufs[o.tensor] = a
            outs.append(a)
        return outs

    def _task(self, key, hit, shapes):
        """The hit's launch as a thunk task of any block_dim (None: atomic outputs or no encoding); made
        on the first post, so single-stream runs never build one."""
        task = self.tasks.get(key, False)
        if task is False:
            task = hit.tiled if hit.tiled is not None else self._encode(hit.launch, hit.ins, shapes, hit.sizes,
                                                                        hit.ws)
            if task is not None and task.atomic:
                task = None
            task = self.tasks.setdefault(key, task)   # racing instances post through one: the first
        return task

    def _prepare(self, key, bufs, shapes):
        node, tensors = self.node, self.plan.tensors
        specs = [None if t < 0 else TensorSpec(shapes[t], tensors[t].dtype) for t in node.inputs]
        values = [bufs[t].reshape(shapes[t]) if (t >= 0 and i in node.kernel.value_inputs) else None
                  for i, t in enumerate(node.inputs)]
        outputs, launch = prepare_launch(node.kernel, node.op_type, node.name, node.attrs, specs, values,
                                         node.opset, len(node.outputs), self.plan.options.aicore_num)
        check_outputs(node, tensors, outputs)
        out_shapes = tuple(s.shape for s in outputs)
        if launch is None:
            hit = Prepared(out_shapes, None, (), (), (), (), node.inputs[node.kernel.alias], None, None)
        else:
            sizes = tuple((s.size, s.dtype, s.nbytes) for s in outputs)
            ws = tuple((w.size, w.dtype, w.nbytes) for w in launch.workspaces)
            ins = passed_inputs(node, launch)
            hit = Prepared(out_shapes, cleaning(launch, len(ins)), ins, sizes, ws, launch.args, -1,
                           self._encode(launch, ins, shapes, sizes, ws) if launch.block_dim > 1 else None, launch)
        return self._keep(key, hit)

    def _keep(self, key, hit: Prepared) -> Prepared:
        if len(self.cache) >= MAX_CACHED:
            self.cache.clear()
            self.tasks.clear()
        self.cache[key] = hit
        return hit

    def _encode(self, launch, ins, shapes, sizes, ws):
        tensors = self.plan.tensors
        specs = [(int(np.prod(shapes[t], dtype=np.int64)), tensors[t].dtype) for t in ins]
        specs += [(count, dtype) for count, dtype, _ in sizes] + [(count, dtype) for count, dtype, _ in ws]
        try:
            return TiledCall(launch, specs, len(ins))
        except ThunkError:
            return None


def check_outputs(node, tensors, outputs) -> None:
    """Run-time output shapes against the plan's static dims."""
    for t, s in zip(node.outputs, outputs):
        want = tensors[t].shape
        if want == ("?",):  # rank unknown at compile time
            continue
        if len(want) != len(s.shape) or any(isinstance(w, int) and w != d for w, d in zip(want, s.shape)):
            raise ShapeError(f"output '{tensors[t].name}' has shape {list(s.shape)} at run time, the "
                             f"plan says {list(want)}")
