"""Recording a runtime_v2 run for a replay (replay.py): the host loop as executor.py runs it, plus notes.

`record(ex, inst, bufs, shapes, feeds)` runs the instance's steps exactly as the executor's loop does (the same
calls, so its outputs are the host-driven ones) with a `Tap` on the caching allocator, and notes per step:
  1. a launched step (BOUND, STATIC, or a dynamic node's prepared launch): its Launch and, per buffer it was
     given, where that buffer lives (`Notes.place`): FEED k (the caller's input), OUT k (an array made for the
     caller this run), TEMP j (caching-allocator block j of this run, the Tap's log), ABS (device memory
     outside the run's blocks: the instance's planned arena; or the constants and the arrays bound into the
     instance's steps, `stable_regions`);
  2. a dynamic node that reads values: a guard per value input (its place and bytes), before its launch;
     a step of the host CPU engine (host_cpu.py): its outputs' places and bytes, which a replay writes back
     (its values follow from the shapes, which the key and the guards fix);
  3. a static piece (sunk.py): a piece row, its inputs' and outputs' places (a replay calls the piece's
     native run on them);
  4. anything a table cannot hold (a host op, a buffer found nowhere, values over GUARD_BYTES): the reason,
     and the rest of the run goes on unnoted.
"""
from __future__ import annotations

import bisect

import numpy as np

from ge.kernels.registry import Launch
from ge.npu.aicore import hold, unhold

from .dynamic import DynamicNode
from .host_cpu import HOST_CPU, HostCpuNode
from .launcher import run_static
from .lowering import ALIAS, BOUND, HOST, STATIC
from .sunk import SunkNode

ABS, FEED, OUT, TEMP = 0, 1, 2, 3   # where a buffer lives
GUARD_BYTES = 4096           # value inputs larger than this are data, not shapes: the key is refused
_EMPTY = np.zeros(8, np.uint8)   # where an empty buffer points (never read)


def _addr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


class Refused(Exception):
    """This key cannot be replayed (the message says why)."""


class Tap:
    """The instance's allocator, with every alloc and free of one run noted in order (step 1's TEMPs)."""

    def __init__(self, alloc, device):
        self.alloc_, self.device = alloc, device
        self.log: list = []          # (id, nbytes) for an alloc, (id, -1) for a free
        self.live: dict = {}         # span -> (id, start address, end address)

    def alloc(self, nbytes: int):
        sp = self.alloc_.alloc(nbytes)
        j = len(self.log)
        start = self.device.address(sp.offset)
        self.live[sp] = (j, start, start + max(nbytes, 1))
        self.log.append((j, nbytes))
        return sp

    def free(self, sp) -> None:
        j = self.live.pop(sp, (None,))[0]
        if j is not None:
            self.log.append((j, -1))
        self.alloc_.free(sp)

    def __getattr__(self, name):   # mif etc. are never asked for: one thread only
        return getattr(self.alloc_, name)


class Notes:
    """What a recording run saw: launches with their buffers' places, guards, output arrays."""

    def __init__(self, ex, inst, bufs, feeds, tap: Tap):
        self.ex, self.inst, self.tap = ex, inst, tap
        self.feeds = [(t, _addr(bufs[t]), _addr(bufs[t]) + bufs[t].nbytes) for t in feeds]
        self.outs: list = []       # (start, end, count, dtype) per output array
        # ("launch", step, launch, [(place, count, dtype)]) | ("guard" | "set", step, place, bytes)
        self.rows: list = []
        self.device = ex.device
        self.stable = inst.stable_regions

    def place(self, a, step: int):
        """(kind, key, byte offset) of the array a step is given; Refused when it lives nowhere known."""
        if not isinstance(a, np.ndarray):
            raise Refused(f"step {step} gets a host value ({type(a).__name__})")
        if a.nbytes == 0:
            return ABS, 0, _addr(_EMPTY)
        at = _addr(a)
        end = at + a.nbytes
        for k, (_, s, e) in enumerate(self.feeds):
            if s <= at and end <= e:
                return FEED, k, at - s
        for k, (s, e, _, _) in enumerate(self.outs):
            if s <= at and end <= e:
                return OUT, k, at - s
        for j, s, e in self.tap.live.values():
            if s <= at and end <= e:
                return TEMP, j, at - s
        if any(s <= at and end <= e for s, e in self.device.regions()):
            return ABS, 0, at
        starts, ends = self.stable
        k = bisect.bisect_right(starts, at) - 1
        if k >= 0 and end <= ends[k]:
            return ABS, 0, at
        raise Refused(f"a buffer of step {step} lives in memory a replay cannot bind")

    def output(self, a) -> None:
        """An array made for the caller this run (a HOST output): a fresh one per replay."""
        if isinstance(a, np.ndarray) and a.nbytes and not any(s <= _addr(a) < e for s, e, _, _ in self.outs):
            self.outs.append((_addr(a), _addr(a) + a.nbytes, a.size, a.dtype))

    def launch(self, step: int, launch_: Launch, buffers) -> None:
        self.rows.append(("launch", step, launch_, [(self.place(a, step), a.size, a.dtype) for a in buffers]))

    def guard(self, step: int, arrays) -> None:
        for a in arrays:
            if a.nbytes > GUARD_BYTES:
                raise Refused(f"step {step} reads {a.nbytes} bytes of values (data, not shapes)")
            self.rows.append(("guard", step, self.place(a, step), a.tobytes()))

    def set(self, step: int, arrays) -> None:
        """A host CPU step's outputs: a replay writes these bytes where they live."""
        for a in arrays:
            if a.nbytes:
                self.rows.append(("set", step, self.place(a, step), a.tobytes()))


def record(ex, inst, bufs, shapes, feeds) -> tuple[list, object]:
    """One host-driven run (the executor's loop, the same calls) that also notes what it ran: (outputs, its
    Notes or the reason the key is refused)."""
    tap = Tap(inst.alloc, ex.device)
    notes = Notes(ex, inst, bufs, feeds, tap)
    regions = sorted((s, e) for _, s, e in notes.feeds)
    # one array fed as two inputs: a table would read both from the first's slot, so other arrays later fail
    why = next(("two feeds share memory" for (_, e), (s, _) in zip(regions, regions[1:]) if s < e), None)
    spans = [None] * len(bufs)
    k = -1
    if inst.team is not None:
        hold(inst.team)
    try:
        for k, (kind, fn, ins, tail, release) in enumerate(inst.steps):
            s = ex.lowered.steps[k]
            if kind == ALIAS:
                bufs[tail] = bufs[ins]
            elif kind == BOUND:
                fn(*[bufs[i] for i in ins], *tail)
                if why is None:
                    n = len(s.outs) + len(s.node.launch.workspaces)
                    why = _note(notes.launch, k, s.node.launch, [bufs[i] for i in ins] + list(tail[:n]))
            elif kind == STATIC:
                run_static(fn, ins, tail, bufs, spans, tap)
                if why is None:
                    for o in s.outs:
                        if o.place == HOST or o.nbytes == 0:
                            notes.output(bufs[o.tensor])
                    ws = tail[1][:len(s.node.launch.workspaces)]
                    why = _note(notes.launch, k, s.node.launch,
                                [bufs[i] for i in ins] + [bufs[o.tensor] for o in s.outs] + list(ws))
            elif isinstance(fn, HostCpuNode):
                why = _host_cpu(ex, inst, notes, fn, k, bufs, shapes, spans, tap) if why is None else \
                    fn(bufs, shapes, spans, tap, inst.core(ex, k)) or why
            elif isinstance(fn, SunkNode):
                why = _piece(notes, fn, k, bufs, shapes, spans, tap, inst.core(ex, k)) if why is None else \
                    fn(bufs, shapes, spans, tap, inst.core(ex, k)) or why
            elif type(fn) is not DynamicNode:   # a host op: control flow, sequences
                fn(bufs, shapes, spans, tap, inst.core(ex, k))
                why = why or f"{s.node.op_type} node '{s.node.name}' runs on the host"
            else:
                why = _dynamic(ex, inst, notes, fn, k, bufs, shapes, spans, tap) if why is None else \
                    fn(bufs, shapes, spans, tap, inst.core(ex, k)) or why
            for t in release or ():
                sp = spans[t]
                if sp is not None:
                    tap.free(sp)
                    spans[t] = None
        out = ex._collect(bufs, shapes, None)
    except Exception as e:
        if k < 0:
            raise
        raise ex._error(k, e) from e
    finally:
        if inst.team is not None:
            unhold(inst.team)
        for sp in spans:
            if sp is not None:
                tap.free(sp)
    return out, notes if why is None else why


def _note(fn, *args):
    try:
        fn(*args)
    except Refused as e:
        return str(e)
    return None


def _dynamic(ex, inst, notes, node: DynamicNode, k, bufs, shapes, spans, tap):
    """A dynamic node run as the loop runs it, its launch and guards noted; None, or why the key is refused."""
    try:
        if node.values:
            notes.guard(k, [bufs[t] for t in node.values])
        _, hit = node._hit(bufs, shapes)
    except Refused as e:
        node(bufs, shapes, spans, tap, inst.core(ex, k))
        return str(e)
    mark = len(tap.log)
    node(bufs, shapes, spans, tap, inst.core(ex, k))
    if hit.alias >= 0:   # an alias: a view, nothing launched
        return None
    for o in node.outs:
        if o.place == HOST or bufs[o.tensor].nbytes == 0:
            notes.output(bufs[o.tensor])
    launch_, ins, ws = hit.launch, hit.ins, hit.ws
    allocs = [j for j, n in tap.log[mark:] if n >= 0]   # its ALLOC outputs, then its workspaces
    held = allocs[len(allocs) - len(ws):] if ws else []
    try:
        places = [(notes.place(bufs[t], k), bufs[t].size, bufs[t].dtype) for t in ins]
        places += [(notes.place(bufs[o.tensor], k), bufs[o.tensor].size, bufs[o.tensor].dtype) for o in node.outs]
    except Refused as e:
        return str(e)
    places += [((TEMP, j, 0), n, dt) for j, (n, dt, _) in zip(held, ws)]
    notes.rows.append(("launch", k, launch_, places))
    return None


def _piece(notes, node: SunkNode, k, bufs, shapes, spans, tap, core):
    """A static piece run as the loop runs it (sunk.py: its outputs in the arena, fresh graph outputs or
    caching-allocator blocks), noted as a piece row: where its inputs and outputs live, and for memory that
    lives as long as the instance (ABS) the array itself, which a replay hands the piece again; None, or why
    the key is refused."""
    node(bufs, shapes, spans, tap, core)
    for o in node.outs:
        if o[5] == HOST:
            notes.output(bufs[o[0]])
    try:
        ins, outs = ([(notes.place(bufs[t], k), bufs[t]) for t in ts] for ts in
                     (node.node.inputs, [o[0] for o in node.outs]))
    except Refused as e:
        return str(e)
    keep = [[(p, a.size, a.dtype, a if p[0] == ABS else None) for p, a in side] for side in (ins, outs)]
    notes.rows.append(("piece", k, node, *keep))
    return None


def _host_cpu(ex, inst, notes, node: HostCpuNode, k, bufs, shapes, spans, tap):
    """A host CPU step run as the loop runs it, its outputs noted (or its launch, when its sizes took the
    kernel); None, or why the key is refused."""
    if node._hit(bufs, shapes)[1].launch is not HOST_CPU:
        return _dynamic(ex, inst, notes, node, k, bufs, shapes, spans, tap)
    node(bufs, shapes, spans, tap, inst.core(ex, k))
    outs = [bufs[o.tensor] for o in node.outs]
    for o, a in zip(node.outs, outs):
        if o.place == HOST:
            notes.output(a)
    return _note(notes.set, k, outs)


def stable_regions(ex, steps) -> tuple:
    """(starts, ends), sorted, of the addresses of what lives as long as an instance outside device memory: the
    constants and the arrays bound into its steps (workspaces of static steps): a replay may keep them."""
    arrays = [a for a in ex._consts if isinstance(a, np.ndarray)]
    for kind, _, _, tail, _ in steps:
        if kind == BOUND:
            arrays += [a for a in tail if isinstance(a, np.ndarray)]
        elif kind == STATIC:
            arrays += [a for a in tail[1] if isinstance(a, np.ndarray)]
    spans = sorted((a.__array_interface__["data"][0], a.__array_interface__["data"][0] + a.nbytes) for a in arrays)
    return tuple(s for s, _ in spans), tuple(e for _, e in spans)
