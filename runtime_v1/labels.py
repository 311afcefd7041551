"""Static control flow in the task sink: GE's label makers for If, Loop and Scan, as rows of a stream's table.

GE lowers a functional If / While of a static graph into label tasks on the parent's stream
(graph/label/if_op_label_maker.cc, while_op_label_maker.cc): the If's LabelSwitchByIndex on the predicate
jumps to the then or the else LabelSet; the then branch ends with a LabelGoto to the leave label; a While is
LabelSet(cond), the condition, LabelSwitchByIndex(exit, body), the body, LabelGoto(cond), LabelSet(exit).
ge builds the same shape from two row kinds of the sink (sink.py: SWITCH jumps when a byte is zero, GOTO);
LabelSet is a position and emits no row. `expand(model, node, where)` gives the rows of one control node,
which model.py puts where the node's task would be, on the node's stream (its events around them).

A body is a plan of its own (ge/bodies.py), run here without re-planning:
- its steps in its plan order, each a task as in the outer plan (its atomic outputs cleaned right before
  their producer, since a body runs many times per run), named `node/step`; a body's own streams run in that
  one order, or side by side as activated streams (activation.py, Options.activate_body_streams);
- its memory plan kept: its feature map, atomic and fixed segments in the model's control region (one more
  base slot, per instance, model.control_bytes; an If's branches share theirs: they never both run), its
  constants in the argument pool (ARGS), its inputs the outer values themselves (captures by reference);
- its outputs: an If's branch writes them straight into the If's outputs when one of its tasks produces
  them, else (an input or a constant passed through) a memcpy task copies. A Loop or Scan keeps its carried
  values in its outputs (initialised from its inputs), the counter, the condition and the test flag in its
  region; a Scan's input rows are copied in before the body (take_at, from the end when reversed); the body
  writes all its outputs into scratch (passed-through values copied there), so nothing of the state moves
  before every output is read: then the scan rows into row `counter` of the scan outputs, the new values
  over the carried ones, the counter stepped, a GOTO back to the test.
Bodies must run natively (a fallback task would need Python between two rows of a jump).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from ge.errors import GEError
from ge.kernels import rts
from ge.kernels.registry import Launch
from ge.kernels.tensor import fill
from ge.npu import thunks
from ge.npu.memory import align_up

from . import stream_activation as activation
from .rows import Goto, Labels, LabelSet, Switch

U8, I64 = np.dtype(np.uint8), np.dtype(np.int64)


@dataclasses.dataclass(slots=True)
class Where:
    """Where a plan's buffers live: `locate(t)` and `workspace(offset, fixed)` give (slot, byte offset);
    `base`: where in the control region this plan's control nodes may start."""
    plan: object
    locate: Callable
    workspace: Callable
    base: int = 0


def expand(model, node, where: Where, labels: Labels) -> tuple[list, int]:
    """(rows, bytes of the control region from where.base) of one If, Loop or Scan node."""
    return {"If": _if, "Loop": _loop, "Scan": _scan}[node.op_type](model, node, where, labels)


def _captures(node) -> dict:
    """{attribute: (body plan, the outer tensors it captures)}."""
    at = len(node.inputs) - sum(n for _, _, n in node.bodies)
    out = {}
    for attr, body, n in node.bodies:
        out[attr] = body, node.inputs[at:at + n]
        at += n
    return out


def _if(model, node, where, labels):
    """SWITCH(cond) -> else; then ...; GOTO leave; else: ...; leave:. The branches share their region."""
    bodies = _captures(node)
    dests = [where.locate(t) if t >= 0 else None for t in node.outputs]
    other, leave, release = labels.new(), labels.new(), []
    rows, region = [Switch(where.locate(node.inputs[0]), other)], 0
    for attr in ("then_branch", "else_branch"):
        body, caps = bodies[attr]
        inner, need = _body(model, node, body, [where.locate(t) for t in caps], dests, where.base, labels, caps,
                            release, where.plan is model.plan)
        rows += inner
        rows += [Goto(leave), LabelSet(other)] if attr == "then_branch" else [LabelSet(leave)]
        region = max(region, need)
    return rows + release, region


def _loop(model, node, where, labels):
    """ONNX Loop: (iteration, condition, carried...) -> (condition, carried..., scan rows...)."""
    (body, caps), = _captures(node).values()
    n = len(body.inputs) - len(caps) - 2
    trips, cond_in = node.inputs[0], node.inputs[1]
    return _iterate(model, node, where, labels, body, caps, n, node.inputs[2:2 + n],
                    where.locate(trips) if trips >= 0 else None, cond_in, (), (False,) * (len(node.outputs) - n))


def _scan(model, node, where, labels):
    """ONNX Scan (axes 0): (states..., rows of the scan inputs) -> (states..., scan rows...), its length the
    scan inputs'."""
    (body, caps), = _captures(node).values()
    m = int(node.attrs.get("num_scan_inputs", 0))
    n = len(body.inputs) - len(caps) - m
    xs = node.inputs[n:n + m]
    length = model.place_array(np.array([where.plan.tensors[xs[0]].shape[0]], np.int64))
    rev_in = node.attrs.get("scan_input_directions") or [0] * m
    rev_out = node.attrs.get("scan_output_directions") or [0] * (len(node.outputs) - n)
    return _iterate(model, node, where, labels, body, caps, n, node.inputs[:n], length, -1,
                    tuple(zip(xs, map(bool, rev_in))), tuple(map(bool, rev_out)))


def _iterate(model, node, where, labels, body, caps, n, inits, trips, cond_in, scan_ins, rev_out):
    """Initial state; head: test, SWITCH(flag) -> leave; scan input rows; body; scan rows; new state;
    counter + 1; GOTO head. A Loop's body also takes the counter and the condition (and gives the next one)."""
    loop = node.op_type == "Loop"
    finals, scans = node.outputs[:n], node.outputs[n:]
    size = lambda t: body.tensors[t].nbytes  # noqa: E731
    slot, at = model.control_slot, where.base

    def take(nbytes):
        nonlocal at
        at, got = align_up(at + nbytes), at
        return slot, got
    counter, cond, flag = take(8), take(1), take(1)
    first = 2 if loop else 0                     # the body's first carried input
    states = body.inputs[first:first + n]
    # a carried value lives in the node's output (or its own bytes when that output is unused); the body
    # writes its outputs into scratch, copied over the state after it
    carried = [where.locate(finals[k]) if finals[k] >= 0 else take(size(states[k])) for k in range(n)]
    rows_in = [take(size(t)) for t in body.inputs[first + n:len(body.inputs) - len(caps)]]
    scratch = [take(size(o)) for o in body.outputs]
    rows = [_memcpy(model, node, f"init{k}", where.locate(inits[k]), carried[k], size(states[k])) for k in range(n)]
    rows.append(_rts(model, node, "counter", fill, [(counter, 8, U8)], (0,)))
    rows.append(_memcpy(model, node, "cond", where.locate(cond_in), cond, 1) if cond_in >= 0 else
                _rts(model, node, "cond", fill, [(cond, 1, U8)], (1,)))
    head, leave = labels.new(), labels.new()
    rows += [LabelSet(head),
             _rts(model, node, "test", rts.loop_test, [(counter, 1, I64), (counter if trips is None else trips, 1, I64),
                                                          (cond, 1, U8), (flag, 1, U8)], (trips is not None, cond_in >= 0)),
             Switch(flag, leave)]
    for j, ((x, rev), dst) in enumerate(zip(scan_ins, rows_in)):
        rows.append(_rts(model, node, f"row{j}", rts.take_at, [(where.locate(x), where.plan.tensors[x].nbytes, U8),
                                                                 (dst, size(body.inputs[first + n + j]), U8),
                                                                 (counter, 1, I64)], (rev,)))
    inputs = [*([counter, cond] if loop else []), *carried, *rows_in, *[where.locate(t) for t in caps]]
    release = []
    inner, need = _body(model, node, body, inputs, scratch, align_up(at), labels, caps, release,
                        where.plan is model.plan)
    rows += inner
    outs = body.outputs[1:] if loop else body.outputs
    state_out = scratch[1:] if loop else scratch
    for j, (t, src, rev) in enumerate(zip(scans, state_out[n:], rev_out)):
        if t >= 0:
            rows.append(_rts(model, node, f"scan{j}", rts.memcpy_at, [
                (src, size(outs[n + j]), U8), (where.locate(t), where.plan.tensors[t].nbytes, U8),
                (counter, 1, I64)], (rev,)))
    if loop:
        rows.append(_memcpy(model, node, "cond_next", scratch[0], cond, 1))
    rows += [_memcpy(model, node, f"carry{k}", state_out[k], carried[k], size(outs[k])) for k in range(n)]
    rows += [_rts(model, node, "next", rts.loop_next, [(counter, 1, I64)]), Goto(head), LabelSet(leave), *release]
    if loop:
        rows += [_rts(model, node, f"rows{j}", rts.expect_count, [(counter, 1, I64)],
                      (where.plan.tensors[t].shape[0],)) for j, t in enumerate(scans) if t >= 0]
    return rows, align_up(at) - where.base + need


def _body(model, node, body, inputs, dests, base, labels, caps, leave, top):
    """Rows running `body` once: body input k lives at inputs[k]; body output k ends in dests[k] (None: dropped).
    Its feature map, atomic and fixed segments from `base` on in the control region; then its control nodes'.
    `caps`: the outer tensors it captures (its last inputs); `leave`: gets the rows that release its activated
    streams (activation.py) once the node is done; `top`: the node is one of the outer plan's."""
    mem, seg, slot = body.memory, body.memory.segments, model.control_slot
    index = {t.name: t.index for t in body.tensors}

    def block(t):   # the tensor whose block t is a view or a slice of
        m = mem.tensors[t]
        return index[m.alias_of] if m.alias_of else index[m.part_of] if m.part_of else t
    starts = {"feature_map": base}
    starts["atomic"] = starts["feature_map"] + align_up(seg["feature_map"])
    starts["fixed"] = starts["atomic"] + align_up(seg.get("atomic", 0))
    end = starts["fixed"] + align_up(seg.get("fixed", 0))
    w_slot, w_offset = model.place_weights(body) if seg["weights"] else (None, 0)
    places = {block(t): at for t, at in zip(body.inputs, inputs)}
    copies = []   # outputs no task of the body writes in place: an input or a constant passed through, a repeat
    for o, dest in zip(body.outputs, dests):
        b = block(o)
        if dest is None:
            continue
        if mem.tensors[o].segment == "io" and b == o and b not in places:
            places[b] = dest
        else:
            copies.append((o, dest))

    def locate(t):
        m = mem.tensors[t]
        if m.segment == "weights":
            return w_slot, w_offset + m.offset
        if m.segment in starts:
            return slot, starts[m.segment] + m.offset
        if m.segment == "io":
            s, off = places[block(t)]
            return s, off + m.offset - mem.tensors[block(t)].offset
        raise GEError(f"runtime_v1 cannot place tensor '{m.name}' of a body of {node.op_type} node "
                      f"'{node.name}' (segment {m.segment})")
    where = Where(body, locate, lambda off, fixed: (slot, starts["fixed" if fixed else "feature_map"] + off), end)
    rows = []
    if top and activation.runs_activated(model, body):
        sources = [None] * (len(body.inputs) - len(caps)) + [model.producer_stream(t) for t in caps]
        rows = activation.body_rows(model, node, body, where, sources, labels, leave, body_tasks)
    for n in body.nodes if not rows else ():
        if n.bodies:
            inner, need = expand(model, n, where, labels)
            rows += inner
            where.base = align_up(where.base + need)
        elif n.launch is not None and not n.no_task:
            rows += body_tasks(model, node, n, where)
    rows += [_memcpy(model, node, f"out_{body.tensors[o].name}", locate(o), dest, body.tensors[o].nbytes)
             for o, dest in copies]
    return rows, where.base - base


def body_tasks(model, node, n, where) -> list:
    """Body node n's task, its atomic outputs cleaned first (every run of the body), named `node/n` as GE names
    a subgraph's nodes (errors and traces say which control node)."""
    n = dataclasses.replace(n, name=f"{node.name}/{n.name}")
    return [model.clean(n, k, where) for k in n.launch.atomic] + [model.task(n, where)]


def _rts(model, node, what: str, fn, buffers, args=()):
    """A task of `node` running RTS kernel `fn` over buffers [((slot, offset), count, dtype)] and scalars."""
    launch = Launch(fn, tuple(args), inputs=())
    task_node = dataclasses.replace(node, name=f"{node.name}/{what}", op_type=f"{node.op_type}/{fn.__name__}",
                                    inputs=(), outputs=(), launch=launch, bodies=())
    bufs = [(*at, count, dtype) for at, count, dtype in buffers]
    return model.rts_task(task_node, thunks.task_args(launch, bufs, model.place_array))


def _memcpy(model, node, what, src, dst, nbytes):
    return _rts(model, node, what, rts.memcpy, [(src, nbytes, U8), (dst, nbytes, U8)])
