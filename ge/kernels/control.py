"""Control flow on the host: If, Loop, Scan (OpKernel.host; runtime_v2/control.py calls them).

Each body was compiled once into a plan of its own; `call.bodies[attr](values)` runs it on a list of
values (the body's formal inputs; the runtime adds its captures) and returns its outputs. These functions
only say what ONNX means: which branch, how many iterations, how carried values and scan slices move.
Choices:
- Loop's scan outputs are stacked on a new axis 0 after the loop (np.stack: one copy per output, not one
  per iteration); a Loop that runs no iteration gives its scan outputs empty, shaped (0,).
- Scan slices are views (np.take copies; a basic-index slice does not): the body plan copies a fed array
  only when it is not 32-byte aligned (runtime_v2's zero-copy rule).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from ..errors import ShapeError
from .registry import register_host


@dataclass(frozen=True)
class HostCall:
    """What a host op sees of its node: name, attributes, opset, its outputs' dtypes, its bodies."""
    op_type: str
    name: str
    attrs: Mapping
    opset: int
    out_dtypes: tuple
    bodies: Mapping[str, Callable]

    def error(self, msg: str) -> ShapeError:
        return ShapeError(f"{self.op_type} node '{self.name}': {msg}")


def check_value(spec, v, what: str):
    """A host op's value against its plan tensor (a PlanTensor): the kind, the dtype, the static dims
    (runtime_v2/control.py, runtime_v1/host.py)."""
    kind = spec.value_kind
    if v is None:
        if kind.startswith("optional"):
            return None
        raise ShapeError(f"{what} is empty, the plan says {kind}")
    if "map(" in kind:   # ONNX-ML maps (ZipMap, DictVectorizer): a dict, or a list of dicts
        if not (isinstance(v, dict) or isinstance(v, list) and all(isinstance(m, dict) for m in v)):
            raise ShapeError(f"{what} is a {type(v).__name__}, the plan says {kind}")
        return v
    if isinstance(v, list):
        if kind not in ("sequence", "optional_sequence"):
            raise ShapeError(f"{what} is a sequence, the plan says {kind}")
        for a in v:
            if a.dtype != spec.dtype:
                raise ShapeError(f"{what}: a sequence element has dtype {a.dtype}, the plan says {spec.dtype}")
        return v
    v = np.asarray(v)
    if kind not in ("tensor", "optional"):
        raise ShapeError(f"{what} is a tensor, the plan says {kind}")
    if v.dtype != spec.dtype:
        raise ShapeError(f"{what} has dtype {v.dtype}, the plan says {spec.dtype}")
    want = spec.shape
    if want != ("?",) and (len(want) != v.ndim or any(isinstance(w, int) and w != d
                                                      for w, d in zip(want, v.shape))):
        raise ShapeError(f"{what} has shape {list(v.shape)} at run time, the plan says {list(want)}")
    return v


def _scalar(call: HostCall, a, what: str):
    if not isinstance(a, np.ndarray) or a.size != 1:
        raise call.error(f"{what} must be a tensor of one element, got "
                         f"{getattr(a, 'shape', type(a).__name__)}")
    return a.reshape(()).item()


@register_host("If")
def if_(call: HostCall, args):
    branch = "then_branch" if _scalar(call, args[0], "the condition") else "else_branch"
    return call.bodies[branch]([])


@register_host("Loop")
def loop(call: HostCall, args):
    trips, cond, states = args[0], args[1], list(args[2:])
    n_states = len(states)
    m = None if trips is None else int(_scalar(call, trips, "the trip count M"))
    go = True if cond is None else bool(_scalar(call, cond, "the condition"))
    body = call.bodies["body"]
    scans: list[list] = [[] for _ in range(len(call.out_dtypes) - n_states)]
    it = 0
    while go and (m is None or it < m):
        outs = body([np.array(it, np.int64), np.array(go), *states])
        go = bool(_scalar(call, outs[0], "the body's condition output"))
        states = list(outs[1:1 + n_states])
        for k, s in enumerate(scans):
            s.append(outs[1 + n_states + k])
        it += 1
    return states + [_stack(call, s, 0, call.out_dtypes[n_states + k]) for k, s in enumerate(scans)]


def _stack(call, parts, axis: int, dtype):
    if not parts:
        return np.empty((0,), dtype)
    try:
        return np.stack(parts, axis=axis)
    except ValueError as e:
        raise call.error(f"scan outputs differ in shape between iterations ({e})") from None


@register_host("Scan", since=9)
def scan(call: HostCall, args):
    m = int(call.attrs.get("num_scan_inputs", 0))
    return _scan(call, list(args[:len(args) - m]), list(args[len(args) - m:]))


def _scan(call, states, xs, in_axes=None, in_dirs=None, out_axes=None, out_dirs=None):
    a = call.attrs
    n, m = len(states), len(xs)
    in_axes = [int(x) for x in (in_axes or a.get("scan_input_axes") or [0] * m)]
    in_dirs = in_dirs or a.get("scan_input_directions") or [0] * m
    in_axes = [ax % x.ndim if x.ndim else 0 for ax, x in zip(in_axes, xs)]
    steps = {x.shape[ax] for x, ax in zip(xs, in_axes)}
    if len(steps) != 1:
        raise call.error(f"scan inputs disagree on the number of steps: {sorted(steps)}")
    count = steps.pop()
    body = call.bodies["body"]
    k_out = len(call.out_dtypes) - n
    scans: list[list] = [[] for _ in range(k_out)]
    for t in range(count):
        slices = [np.take(x, count - 1 - t if d else t, axis=ax) for x, ax, d in zip(xs, in_axes, in_dirs)]
        outs = body(states + slices)
        states = list(outs[:n])
        for k in range(k_out):
            scans[k].append(outs[n + k])
    out_axes = out_axes or a.get("scan_output_axes") or [0] * k_out
    out_dirs = out_dirs or a.get("scan_output_directions") or [0] * k_out
    stacked = []
    for k, parts in enumerate(scans):
        parts = parts[::-1] if out_dirs[k] else parts
        rank = parts[0].ndim + 1 if parts else 1
        stacked.append(_stack(call, parts, int(out_axes[k]) % rank, call.out_dtypes[n + k]))
    return states + stacked


@register_host("Scan", since=8, until=8)
def scan8(call: HostCall, args):
    """Scan-8: a leading batch axis on every state and scan input, optional sequence_lens first."""
    m = int(call.attrs.get("num_scan_inputs", 0))
    lens, rest = args[0], list(args[1:])
    states, xs = rest[:len(rest) - m], rest[len(rest) - m:]
    batch = (states + xs)[0].shape[0]
    dirs = call.attrs.get("directions") or [0] * m
    per_batch = []
    for b in range(batch):
        steps = int(lens[b]) if lens is not None else xs[0].shape[1]
        per_batch.append(_scan(call, [s[b] for s in states], [x[b, :steps] for x in xs],
                               [0] * m, dirs, None, None))
    return [np.stack([r[k] for r in per_batch]) for k in range(len(call.out_dtypes))]


@register_host("SequenceMap")
def sequence_map(call: HostCall, args):
    """The body once per position of the sequence inputs (a tensor input goes whole to every run); each
    body output is collected into an output sequence."""
    seqs = [a for a in args if isinstance(a, list)]
    lengths = {len(a) for a in seqs}
    if len(lengths) > 1:
        raise call.error(f"the input sequences differ in length: {sorted(lengths)}")
    body, outs = call.bodies["body"], [[] for _ in call.out_dtypes]
    for k in range(lengths.pop() if lengths else 0):
        for acc, r in zip(outs, body([a[k] if isinstance(a, list) else a for a in args])):
            acc.append(np.array(r))
    return outs
