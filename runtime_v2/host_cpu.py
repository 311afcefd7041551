"""The host CPU engine (GE's DNN_VM_HOST_CPU): an export's shape arithmetic runs on the host, in numpy.

A dynamic export computes its shapes at run time: Shape -> Gather -> Unsqueeze -> Concat -> Reshape, masks
from Range and comparisons, Where over a shape's dims. GE places such nodes on its host CPU engine (their
inputs are host tensors: shapes) instead of launching an AI-core task for a handful of int64 elements. Here
the same placement saves more than launches: each of those ops would compile int64/bool variants of the
elementwise, compare, logic, gather, concat and copy kernels in a fresh process (about 25 s of a BERT
export's first run), only to move a few numbers.

Step 1, placement (at load, from the plan: `host_cpu_steps`). In a plan with run-time shapes (a static plan
has every shape value folded at compile time), walking in plan order, a node goes to the host CPU engine when
  - its op has a numpy twin (ge/kernels/host_cpu.py) and it is not a host op already (strings, control flow);
  - it reads and writes integer/bool tensors (Cast and ConstantOfShape may write floats);
  - each input is a constant or a host value: an output of a node placed here; Shape and Size read no
    data, so their input may be anything. So a host value follows from the feeds' shapes alone (and
    whatever the replays' guards check), never from their data: what a replay of a recorded shape needs
    (record.py notes its bytes and the table writes them back, no launch);
  - its tensors' known sizes are within MAX_ELEMENTS.
Step 2, the run: `HostCpuNode` prepares as a dynamic node does (the kernel's own infer and prepare: output
shapes, checks and errors are the kernel's, and nothing compiles), then, when the actual sizes are within
MAX_ELEMENTS, runs the numpy twin (host_step) instead of the launch; beyond it, the kernel as any dynamic
node (never compiled just to decide). Outputs go where the lowering placed them (the planned arena for a
static node, the caching allocator, the caller's array).

MAX_ELEMENTS (ge/kernels/host_cpu.py) = 1024: a shape value has rank-many elements; the masks an export
builds from them are sequence-sized (Range(seq), its comparisons), which the bound keeps on the host up to a
1024-token sequence. Up to it a host step costs 0.4-3.5 CPU us a call against a kernel launch's 1-2.3 (a
one-element Gather, Add, Concat below the launch; Where 2x it at 1024, 4x at 4096: bench/host_cpu.py), and
a replayed shape runs none of it: its table writes the recorded values.
"""
from __future__ import annotations

import os

import numpy as np

from ge.kernels.host_cpu import HOST_OPS, MAX_ELEMENTS, host_dtypes, host_step
from ge.kernels.registry import KernelContext, TensorSpec
from ge.plan import Plan

from .dynamic import DynamicNode, Prepared, check_outputs

HOST_CPU = "HOST_CPU"       # the hit's launch slot: ran on the host CPU engine (record.py notes its values)


def _small(shape) -> bool:
    """Within MAX_ELEMENTS when every dim is known; unknown dims are decided at run time."""
    known = [d for d in shape if isinstance(d, int)]
    return int(np.prod(known, dtype=np.int64)) <= MAX_ELEMENTS if len(known) == len(shape) else True


def _placed(plan: Plan, node, host_values: set) -> bool:
    if node.domain not in ("", "ai.onnx") or node.bodies or node.kernel.host is not None:
        return False
    tensors = plan.tensors
    ins, outs = [tensors[t] for t in node.inputs if t >= 0], [tensors[t] for t in node.outputs if t >= 0]
    if not outs or any(t.value_kind != "tensor" or not _small(t.shape) for t in outs) \
            or not host_dtypes(node.op_type, [t.dtype for t in ins], [t.dtype for t in outs]):
        return False
    if node.op_type in ("Shape", "Size"):   # they read no data: their input may be anything
        return True
    return all((t.index in plan.constants or t.index in host_values) and _small(t.shape) for t in ins)


def host_cpu_steps(plan: Plan) -> frozenset:
    """Step 1: the steps placed on the host CPU engine (none in a static plan; none with GE_V2_HOST_CPU=0,
    for bisecting: every step a kernel again)."""
    if not plan.is_dynamic or os.environ.get("GE_V2_HOST_CPU", "1").strip().lower() in ("0", "false", "off", "no"):
        return frozenset()
    steps, values = set(), set()
    for node in plan.nodes:
        if _placed(plan, node, values):
            values.update(t for t in node.outputs if t >= 0)   # a view of a host value is one too
            if not (node.no_task or (node.launch is None and not node.is_dynamic)):   # (a view runs nothing)
                steps.add(node.step)
    return frozenset(steps)


class HostCpuNode(DynamicNode):
    """Step 2: a node on the host CPU engine (called as a dynamic node: node(bufs, shapes, spans, alloc, core))."""
    __slots__ = ()

    def __call__(self, bufs, shapes, spans, alloc, core=None) -> None:
        hit = self._hit(bufs, shapes)[1]   # keyed as a dynamic node: shapes and the values prepare reads
        if hit.launch is not HOST_CPU:   # over MAX_ELEMENTS this time: the kernel
            return DynamicNode.__call__(self, bufs, shapes, spans, alloc, core)
        outs = self._outputs(hit, bufs, shapes, spans, alloc)
        hit.fn(*[None if t < 0 else bufs[t] for t in hit.ins], *outs)

    def post(self, *args):
        return None   # the launcher runs it on the calling thread (a host step)

    def _prepare(self, key, bufs, shapes):
        node, tensors = self.node, self.plan.tensors
        specs = [None if t < 0 else TensorSpec(shapes[t], tensors[t].dtype) for t in node.inputs]
        values = [bufs[t].reshape(shapes[t]) if (t >= 0 and i in node.kernel.value_inputs) else None
                  for i, t in enumerate(node.inputs)]
        ctx = KernelContext(node.op_type, node.name, dict(node.attrs), specs, values, node.opset,
                            n_outputs=len(node.outputs), cores=1)
        launch = node.kernel.bind(ctx)   # infer + prepare: the kernel's shapes and errors, no compile
        reads = HOST_OPS[node.op_type][1]
        read = [s for k, s in enumerate(specs) if s is not None and (reads is None or k in reads)]
        if launch is None or any(s.size > MAX_ELEMENTS for s in (*read, *ctx.outputs)):
            return DynamicNode._prepare(self, key, bufs, shapes)   # a view, or too big for the host
        check_outputs(node, tensors, ctx.outputs)
        sizes = tuple((s.size, s.dtype, s.nbytes) for s in ctx.outputs)
        hit = Prepared(tuple(s.shape for s in ctx.outputs), host_step(ctx, launch), node.inputs, sizes,
                       (), (), -1, None, HOST_CPU)
        return self._keep(key, hit)

