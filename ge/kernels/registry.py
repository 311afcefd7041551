"""One registry for kernels, keyed by (op_type, domain) and an opset range.

The contract, shared by both runtimes (ARCHITECTURE.md, "Kernels"):
- `infer(ctx) -> [TensorSpec]` gives output shapes and dtypes from input specs (and from input values the
  kernel declares in `value_inputs`, such as Reshape's shape).
- `prepare(ctx) -> Launch | None` picks the compiled function and its static arguments once the shapes are
  known. None means "no task": the output is a view of an input (declared by `alias`).
- Destination passing: `fn(*inputs, *outputs, *workspaces, *args)`. Every tensor reaches a kernel as a flat,
  contiguous 1-D array (a view cut from device memory); shapes and attributes travel in `args` as ints,
  floats and int64 arrays. So one compiled specialization serves every shape, and runtime_v1's task
  interpreter can call the same functions from jitted code.
- AI cores (Ascend's blockDim): `prepare` is the host-side tiling function. A `tiled` launch's fn takes
  `(block_idx, block_dim)` after its args and computes block `block_idx` of `block_dim`, writing a part of
  its outputs (and of its workspaces) that no other block touches; the runtime runs the `block_dim` blocks
  on as many AI cores as the device has, in any order, and the task ends when all have. `ctx.cores` is
  how many cores the plan is tiled for (Options.aicore_num): block_dim <= cores; small launches keep 1
  (ge/kernels/tiling.py). Blocks never split a reduction, so results are bitwise equal for any core count.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

from ..errors import ShapeError, UnsupportedOpError
from ..ir.dtypes import HALF
from ..npu.engines import AICORE, AICPU, DVPP, HCCL  # noqa: F401 (kernels declare their engine)


class UnknownValueError(ShapeError):
    """A shape depends on a value known only at run time (the node is dynamic at compile time)."""


@dataclass(frozen=True, slots=True)
class TensorSpec:
    shape: tuple[int, ...]
    dtype: np.dtype

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        object.__setattr__(self, "dtype", np.dtype(self.dtype))

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize


@dataclass(frozen=True, slots=True)
class Launch:
    """One kernel call: fn(*inputs, *outputs, *workspaces, *args)."""
    fn: Callable
    args: tuple = ()
    workspaces: tuple[TensorSpec, ...] = ()
    inputs: tuple[int, ...] | None = None  # which node inputs are passed, in order; None: all present
    # outputs the kernel accumulates into (GE's ATOMIC_ATTR_OUTPUT_INDEX): whoever runs it zeroes them first
    # (the memory plan gives them the "atomic" segment, cleaned once per run, GE's atomicCleanPolicy 0)
    atomic: tuple[int, ...] = ()
    # the tiling (see the module doc): fn takes (block_idx, block_dim) last when tiled
    block_dim: int = 1
    tiled: bool = False
    # a tensor is float16/bfloat16: Python-level calls view those as uint16 (Numba has no 16-bit floats);
    # set by OpKernel.bind, the thunks do the same from the buffer kinds
    bits16: bool = False

    def __post_init__(self):
        if self.block_dim < 1 or (self.block_dim > 1 and not self.tiled):
            raise ValueError(f"block_dim {self.block_dim} needs a tiled kernel ({self.fn})")


@dataclass(slots=True)
class KernelContext:
    """What infer and prepare see of a node."""
    op_type: str
    name: str
    attrs: dict[str, Any]
    inputs: list[TensorSpec | None]
    values: list[np.ndarray | None]
    opset: int
    outputs: list[TensorSpec] = field(default_factory=list)
    n_outputs: int = 1  # how many outputs the node declares (optional outputs may be absent)
    cores: int = 1      # AI cores the launch may be tiled over (Options.aicore_num)

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def has(self, i: int) -> bool:
        return i < len(self.inputs) and self.inputs[i] is not None

    def value(self, i: int) -> np.ndarray:
        """The value of input i, which must be known (a constant, or fed at run time by runtime_v2)."""
        v = self.values[i] if i < len(self.values) else None
        if v is None:
            raise UnknownValueError(f"{self.op_type} node '{self.name}': input {i} must have a known value "
                                    "(it sets a shape or an index)")
        return v

    def error(self, msg: str) -> ShapeError:
        return ShapeError(f"{self.op_type} node '{self.name}': {msg}")

    def require_dtype(self, i: int, allowed) -> None:
        dt = self.inputs[i].dtype
        if dt not in {np.dtype(a) for a in allowed}:
            raise self.error(f"input {i} has dtype {dt}, supported: {', '.join(map(str, allowed))}")


@dataclass(frozen=True, slots=True)
class OpKernel:
    op_type: str
    domain: str
    since: int
    until: int
    infer: Callable[[KernelContext], list[TensorSpec]]
    prepare: Callable[[KernelContext], Launch | None]
    value_inputs: tuple[int, ...] = ()   # inputs whose values infer/prepare read
    alias: int | None = None             # output 0 is a view of this input (no task)
    inplace: tuple[tuple[int, int], ...] = ()  # (input, output) pairs the kernel may share
    engine: str = AICORE
    # a host op (control flow, sequences, optionals): runs on the host over Python values, never a task;
    # host(node, values, bodies) -> values, where bodies maps a body's attribute name to a callable running
    # it (ge/kernels/control.py). Its nodes are dynamic: runtime_v2 runs them; runtime_v1 runs the string and
    # ONNX-ML ones as host tasks (host_tasks.py, runtime_v1/host.py) and static control flow as label tasks.
    host: Callable | None = None

    def bind(self, ctx: KernelContext) -> Launch | None:
        """infer then prepare: sets ctx.outputs, returns the launch (None: no task). The one place both run."""
        ctx.outputs = self.infer(ctx)
        launch = self.prepare(ctx)
        if launch is not None and not launch.bits16 and any(
                s is not None and s.dtype in HALF for s in (*ctx.inputs, *ctx.outputs, *launch.workspaces)):
            launch = replace(launch, bits16=True)
        return launch


_REGISTRY: dict[tuple[str, str], list[OpKernel]] = {}
_REFUSED: dict[tuple[str, str], str] = {}  # ops ge declines on purpose: the reason lookup reports
_EXPANDED: dict[tuple[str, str], int] = {}  # ops the ONNX importer rewrites into registered ones: since opset
MAX_OPSET = 10 ** 6


def register(op_type: str | list[str], *, infer, domain: str = "", since: int = 1,
             until: int = MAX_OPSET, value_inputs=(), alias=None, inplace=(), engine=AICORE):
    """Decorator on a prepare function: registers it for one op type or several."""
    def deco(prepare):
        for op in [op_type] if isinstance(op_type, str) else op_type:
            _REGISTRY.setdefault((op, domain), []).append(OpKernel(
                op, domain, since, until, infer, prepare, tuple(value_inputs), alias, tuple(inplace),
                engine))
        return prepare
    return deco


def register_host(op_type: str | list[str], *, since: int = 1, until: int = MAX_OPSET, domain: str = ""):
    """Decorator on a host function (OpKernel.host): the op runs on the host, its shapes at run time."""
    def deco(host):
        for op in [op_type] if isinstance(op_type, str) else op_type:
            _REGISTRY.setdefault((op, domain), []).append(OpKernel(
                op, domain, since, until, _host_infer, _host_prepare, engine=AICPU, host=host))
        return host
    return deco


def _host_infer(ctx: KernelContext):
    raise UnknownValueError(f"{ctx.op_type} node '{ctx.name}' runs on the host: its outputs are known at run time")


def _host_prepare(ctx: KernelContext):
    raise UnknownValueError(f"{ctx.op_type} node '{ctx.name}' runs on the host, not as a task")


def refuse(op_type: str | list[str], reason: str, domain: str = "") -> None:
    """Declare ops ge will not run (they stay unregistered) with the reason their UnsupportedOpError gives."""
    for op in [op_type] if isinstance(op_type, str) else op_type:
        _REFUSED[(op, domain)] = reason


def expanded(op_type: str | list[str], domain: str = "", since: int = 1) -> None:
    """Declare ops ge runs as ONNX functions: the importer replaces their nodes by registered ones
    (frontends/onnx_functions.py), so they need no kernel; is_registered counts them."""
    for op in [op_type] if isinstance(op_type, str) else op_type:
        _EXPANDED[(op, domain)] = since


def is_expanded(op_type: str, domain: str = "", opset: int = MAX_OPSET) -> bool:
    since = _EXPANDED.get((op_type, "" if domain == "ai.onnx" else domain))
    return since is not None and opset >= since


def lookup(op_type: str, domain: str = "", opset: int = MAX_OPSET, node: str = "?") -> OpKernel:
    domain = "" if domain == "ai.onnx" else domain
    kernels = _REGISTRY.get((op_type, domain), ())
    for k in kernels:
        if k.since <= opset <= k.until:
            return k
    reason = _REFUSED.get((op_type, domain), "")
    if (op_type, domain) in _EXPANDED:
        reason = (f"ge runs {op_type} (opset {_EXPANDED[(op_type, domain)]}+) as its ONNX function, expanded when "
                  "an ONNX model is imported; this node was not")
    if kernels:
        reason = "ge has kernels for opsets " + ", ".join(
            f"{k.since}+" if k.until == MAX_OPSET else f"{k.since}-{k.until}" for k in kernels)
    raise UnsupportedOpError(op_type, domain, opset, node, registered_ops(), reason)


def registered_ops() -> list[str]:
    return sorted(f"{d}::{op}" if d else op for op, d in _REGISTRY)


def is_registered(op_type: str, domain: str = "") -> bool:
    """ge runs the op: it has a kernel, or the ONNX importer expands it (`expanded`)."""
    key = (op_type, "" if domain == "ai.onnx" else domain)
    return key in _REGISTRY or key in _EXPANDED


def run_kernel(kernel: OpKernel, ctx: KernelContext, arrays: list[np.ndarray | None]) -> list[np.ndarray]:
    """Infer, prepare and run one node on numpy arrays: used by constant folding and by tests."""
    launch = kernel.bind(ctx)
    if launch is None:
        src = arrays[kernel.alias]
        return [np.ascontiguousarray(src).reshape(ctx.outputs[0].shape)]
    outs = [np.empty(s.shape, s.dtype) for s in ctx.outputs]
    call(launch, arrays, outs)
    return outs


def cleaning(launch: Launch, n_inputs: int) -> Callable:
    """launch.fn, or for a kernel with atomic outputs a call that zeroes them first (for runtimes that
    allocate outputs per call: runtime_v2; runtime_v1 cleans its atomic segment once per run)."""
    if not launch.atomic:
        return serial_blocks(launch)
    fn, at = serial_blocks(launch), tuple(n_inputs + k for k in launch.atomic)

    def clean_then_launch(*args):
        for i in at:
            args[i][:] = 0
        fn(*args)
    return clean_then_launch


def serial_blocks(launch: Launch) -> Callable:
    """launch.fn, or for a tiled launch a call that runs its blocks one after the other on this thread."""
    if launch.bits16:
        return _bits16(serial_blocks(replace(launch, bits16=False)))
    if not launch.tiled:
        return launch.fn
    fn, bd = launch.fn, launch.block_dim

    def blocks(*args):
        for b in range(bd):
            fn(*args, b, bd)
    return blocks


def _bits16(fn: Callable) -> Callable:
    def viewed(*args):
        fn(*[a.view(np.uint16) if isinstance(a, np.ndarray) and a.dtype in HALF else a for a in args])
    return viewed


def run_blocks(launch: Launch, args: list) -> None:
    """Every block of a launch, one after the other on the calling thread (fn(*args) when untiled)."""
    serial_blocks(launch)(*args)


def writable(a: np.ndarray) -> np.ndarray:
    """a, or a copy when it is read-only: Numba types a read-only array apart, so passing one would compile
    a second copy of the kernel (conv: ~100 s cold). Constants from numpy_helper.to_array are read-only."""
    return a if a.flags.writeable else a.copy()


def call(launch: Launch, arrays: list, outs: list[np.ndarray]) -> None:
    """Call a launch on whole arrays (flattened here), allocating its workspaces."""
    picked = (launch.inputs if launch.inputs is not None
              else [i for i, a in enumerate(arrays) if a is not None])
    flat_in = [writable(np.ascontiguousarray(arrays[i]).reshape(-1)) for i in picked]
    ws = [np.empty(w.size, w.dtype) for w in launch.workspaces]
    for k in launch.atomic:
        outs[k][...] = 0
    run_blocks(launch, [*flat_in, *[o.reshape(-1) for o in outs], *ws, *launch.args])


# -- infer helpers shared by many kernels ---------------------------------------------------------

def same_as_input(i: int = 0, dtype=None):
    """infer: one output shaped like input i (with input i's dtype unless given)."""
    def infer(ctx: KernelContext) -> list[TensorSpec]:
        spec = ctx.inputs[i]
        return [TensorSpec(spec.shape, spec.dtype if dtype is None else dtype)]
    return infer


def broadcast_shapes(ctx: KernelContext, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    """Numpy/ONNX multidirectional broadcasting, with a ShapeError naming the node."""
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError:
        raise ctx.error(f"cannot broadcast shapes {', '.join(map(str, shapes))}") from None


def normalize_axis(ctx: KernelContext, axis: int, rank: int) -> int:
    if not -rank <= axis < max(rank, 1):
        raise ctx.error(f"axis {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0
