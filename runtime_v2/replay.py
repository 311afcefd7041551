"""Replays: runtime_v2 records a shape's bound steps once, then runs them from a native table (CANN's
aclgraph capture/replay, TorchAir's reduce-overhead mode; GE's own answer for a fixed shape is the task
sink, runtime_v1/sink.py, whose thunk ABI and row encoding this reuses).

Per executor instance (one thread runs it at a time, so a recording needs no lock), keyed by the feeds'
shapes and dtypes:
  1. Record. The second run of a key (RECORD_AT: a shape seen once, as each step of a decode loop whose past
     grows, is never recorded) runs host-driven as always (record.py: the executor's loop with a tap on the
     caching allocator), and notes per launched step its launch and where each buffer it was given lives:
       FEED  the caller's input k (its address is patched per run, as runtime_v1 binds inputs: zero copy),
       OUT   an array made for the caller (a graph output): a fresh one per replay, so a result handed out is
             never written by the next run,
       TEMP  a caching-allocator block of this run: the order of its allocs and frees is replayed into a
             first-fit plan of offsets in the instance's replay arena (`plan_temps`),
       ABS   memory that lives as long as the instance: the planned arena of its static steps, its
             workspaces, the constants (the address itself; base slot ABS holds 0).
     A step of the host CPU engine (host_cpu.py: shape arithmetic, whose values follow from the shapes) is
     noted by its outputs' bytes: a SET row writes them back where the step's outputs live, nothing runs.
     A static piece (sunk.py, a PartitionedCall) is a PIECE row: the table stops there, the piece's runtime_v1
     tables run natively on the buffers the recording found (`Entry._piece`: one Python call per piece, none
     per node), and the table goes on.
     A buffer found in none of them, a host op (control flow, sequences), a launch without a thunk encoding,
     several stream threads or state pairs: the key is refused (noted, with the reason) and runs host-driven.
  2. Guards. A dynamic node that reads values (a Reshape's shape computed by Shape -> Gather -> Concat, a
     NonZero's data) was prepared for the values it saw: the table checks those bytes (GUARD rows) before
     its launch. A mismatch stops the replay; the run is done host-driven from the start (kernels write only
     their outputs, so nothing the caller sees changed) and the key is refused (its values follow the data,
     not the shapes). Value inputs over GUARD_BYTES refuse the key at once.
  3. Replay. Bind the feeds and fresh outputs into the entry's base table, then one native call runs every
     row (`run_table`: thunks with the recorded block_dim, the AI cores when the instance has a team, atomic
     outputs zeroed by a fill row before their task) with the GIL released: no Python per node.
  4. Limits. At most `Options.capture_limit` entries per instance, least recently used evicted first (an entry
     evicted before it ever replayed refuses its key: shapes that cycle through more than the limit, as a
     decode loop's growing past, would otherwise be recorded again each time round); every
     entry's temps are offsets into ONE replay arena per instance, sized for the largest live entry (the
     entries share the pool: runs on an instance never overlap), reserved on the device and given back
     when the entries that needed it are gone. capture_limit 0 or GE_V2_REPLAY=0 turns replays off.
  5. Bodies. A control-flow body's executor (control.py) replays as any other: the Loop itself stays on the
     host, each iteration's body run (the same shapes, feeds bound per run) is one table.
  6. Errors. A replayed kernel that raised (the thunk sets STATUS) makes the run go host-driven again, where
     the kernel raises in Python and the executor's ExecutionError names the node.
"""
from __future__ import annotations

import os
from collections import OrderedDict

import numpy as np
from numba import njit

from ge.errors import DeviceMemoryError
from ge.kernels.registry import Launch
from ge.kernels.tensor import fill
from ge.npu.aicore import hold, launch, unhold
from ge.npu.memory import ALIGN
from ge.npu.native import STATUS, as_pointer, call_thunk
from ge.npu.thunks import BUF, INT, ThunkError, layout, task_args, thunk_address, widths

from .record import ABS, FEED, OUT, TEMP, Notes, Refused, record

ARENA = 1                    # base slots: ABS (0) holds 0 (a row's offset is the address), ARENA the replay arena
SLOT0 = STATUS + 1           # then one slot per feed, then one per output array
GUARD = -7                   # a row that compares bytes (step 2); thunk addresses are > 0
SET = -8                     # a row that writes bytes: a host CPU step's recorded outputs (record.py)
PIECE = -9                   # a static piece (sunk.py): the table stops, the piece runs natively, the table goes on
RECORD_AT = 2                # a key is recorded on its second run (`Replays._again`)
_NO_TEAM = np.zeros(1, np.int64)
_CLEAN, _U8 = Launch(fill, (0,), inputs=()), np.dtype(np.uint8)   # an atomic output's zeroing (runtime_v1's too)


def capture_limit(options) -> int:
    """Entries per instance; 0 when replays are off (the option, or GE_V2_REPLAY=0)."""
    if os.environ.get("GE_V2_REPLAY", "1").strip().lower() in ("0", "false", "off", "no"):
        return 0
    return options.capture_limit


@njit(nogil=True, cache=True)
def run_table(addrs, ioffs, foffs, blocks, itab, ftab, bases, guards, team, slot, start):
    """The rows from `start` in order: -1, or the row that stopped the run (a kernel raised, a guard saw other
    bytes, or a PIECE row: the caller runs the piece and goes on after it)."""
    ip, fp, bp = itab.ctypes.data, ftab.ctypes.data, bases.ctypes.data
    if slot >= 0:
        hold(team)
    failed = -1
    for t in range(start, addrs.size):
        a = addrs[t]
        if a < 0:   # one compare on a task's row (thunk addresses are > 0), as runtime_v1's sink
            if a == PIECE:
                failed = t
                break
            k = ioffs[t]   # GUARD / SET: itab[k:k + 4] = slot, offset, bytes, where the bytes start in `guards`
            at = itab[k + 3]
            mem = as_pointer(bases[itab[k]] + itab[k + 1], np.uint8)
            if a == GUARD:   # compare the bytes
                for i in range(itab[k + 2]):
                    if mem[i] != guards[at + i]:
                        failed = t
                        break
                if failed >= 0:
                    break
            else:   # SET: the recorded bytes written where the step's output lives
                for i in range(itab[k + 2]):
                    mem[i] = guards[at + i]
            continue
        if blocks[t] == 1:
            call_thunk(a, ip + 8 * ioffs[t], fp + 8 * foffs[t], bp, 0, 1)
        else:
            launch(team, slot, a, ip + 8 * ioffs[t], fp + 8 * foffs[t], bp, blocks[t])
        if bases[STATUS] != 0:
            failed = t
            break
    if slot >= 0:
        unhold(team)
    return failed


_KINDS: dict = {}   # (kernel, tiled, buffer dtypes, argument types) -> (kinds, thunk address, widths, layout)


def encode(launch_: Launch, buffers, place_array) -> tuple:
    """(thunk address, int row, float row) of a launch on `buffers` [(slot, offset, count, dtype)]: the rows
    ge.npu.thunks.task_args writes, with the kinds and the thunk looked up once per kernel and argument types
    (task_args per launch made a GPT-2 step's recording 3x its host-driven run; decided per dtype it is
    mostly numpy's dtype names)."""
    args = launch_.args
    key = (launch_.fn, launch_.tiled, tuple([b[3] for b in buffers]),
           tuple([(a.dtype, a.ndim) if isinstance(a, np.ndarray) else
                  (type(a), isinstance(a, int) and not -(1 << 63) <= a < 1 << 63) for a in args]))
    hit = _KINDS.get(key)
    if hit is None:
        ta = task_args(launch_, [(0, 0, count, dtype) for _, _, count, dtype in buffers], lambda a: (0, 0))
        hit = (ta.reason,) if ta.sig is None else (ta.kinds, thunk_address(ta.sig), widths(ta.kinds),
                                                   layout(ta.kinds))
        _KINDS[key] = hit
    if len(hit) == 1:
        raise Refused(f"a launch of {getattr(launch_.fn, '__name__', launch_.fn)} has no table encoding ({hit[0]})")
    kinds, addr, (wi, wf), lay = hit
    irow, frow = np.zeros(wi, np.int64), np.zeros(wf, np.float64)
    for k, (slot, off, count, _) in enumerate(buffers):
        i = lay[k][0]
        irow[i], irow[i + 1], irow[i + 2] = slot, off, count
    n = len(buffers)
    for j, a in enumerate(args):
        kind = kinds[n + j][0]
        i, f = lay[n + j]
        if kind == BUF:
            slot, off = place_array(a)
            irow[i], irow[i + 1], irow[i + 2] = slot, off, a.size
        elif kind == INT:
            irow[i] = int(a)
        else:
            frow[f] = float(a)
    return addr, irow, frow


def _addr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


class Entry:
    """A recorded shape: its native table, base template, TEMP plan, guards and outputs."""

    def __init__(self, ex, notes: Notes, bufs, shapes):
        self.n_feeds = len(notes.feeds)
        self.feeds = tuple(t for t, _, _ in notes.feeds)
        self.out_arrays = tuple((count, dtype) for _, _, count, dtype in notes.outs)
        offsets, self.arena_bytes = plan_temps(notes.tap.log)
        self.keep: list = []   # static array arguments: alive while a row points at them
        self.bases = np.zeros(SLOT0 + self.n_feeds + len(self.out_arrays), np.int64)

        def where(p):
            kind, key, off = p
            if kind == ABS:
                return ABS, off
            if kind == TEMP:
                return ARENA, offsets[key] + off
            return (SLOT0 + key if kind == FEED else SLOT0 + self.n_feeds + key), off

        def place_array(a):
            a = np.ascontiguousarray(a)
            self.keep.append(a)
            return ABS, _addr(a)

        addrs, ioffs, foffs, blocks, irows, frows, gbytes, self.steps = [], [], [], [], [], [], [], []
        self.pieces: dict = {}   # row -> (SunkNode, its inputs, its outputs as (slot, offset, count, dtype, array))
        n_i = n_f = n_g = 0
        for row in notes.rows:
            if row[0] == "piece":
                _, step, node, ins, outs = row
                self.pieces[len(addrs)] = (node, *([(*where(p), count, dtype, a) for p, count, dtype, a in side]
                                                   for side in (ins, outs)))
                addrs.append(PIECE)
                ioffs.append(n_i)
                foffs.append(n_f)
                blocks.append(1)
                self.steps.append(step)
                continue
            if row[0] in ("guard", "set"):
                _, step, p, want = row
                slot, off = where(p)
                irows.append(np.array([slot, off, len(want), n_g], np.int64))
                gbytes.append(np.frombuffer(want, np.uint8))
                addrs.append(GUARD if row[0] == "guard" else SET)
                ioffs.append(n_i)
                foffs.append(0)
                blocks.append(1)
                self.steps.append(step)
                n_i, n_g = n_i + 4, n_g + len(want)
                continue
            _, step, launch_, places = row
            buffers = [(*where(p), count, dtype) for p, count, dtype in places]
            tasks = []
            n_in = len(places) - len(launch_.workspaces) - len(ex.plan.nodes[step].outputs)
            for a in launch_.atomic:   # zeroed first, as cleaning() does for the host loop
                slot, off, count, dtype = buffers[n_in + a]
                tasks.append((1, encode(_CLEAN, [(slot, off, count * np.dtype(dtype).itemsize, _U8)], place_array)))
            tasks.append((launch_.block_dim, encode(launch_, buffers, place_array)))
            for block_dim, (addr, irow, frow) in tasks:
                addrs.append(addr)
                ioffs.append(n_i)
                foffs.append(n_f)
                blocks.append(block_dim)
                irows.append(irow)
                frows.append(frow)
                self.steps.append(step)
                n_i, n_f = n_i + irow.size, n_f + frow.size
        self.addrs, self.ioffs = np.array(addrs, np.int64), np.array(ioffs, np.int64)
        self.foffs, self.blocks = np.array(foffs, np.int64), np.array(blocks, np.int64)
        self.itab = np.concatenate(irows + [np.zeros(1, np.int64)])
        self.ftab = np.concatenate(frows + [np.zeros(1, np.float64)])
        self.guards = np.concatenate(gbytes + [np.zeros(1, np.uint8)])
        self.tasks = sum(1 for a in addrs if a not in (GUARD, SET, PIECE))
        self.replays = 0
        self.outputs = tuple(self._output(notes, bufs[t], shapes[t], copy, k) for k, (t, copy) in
                             enumerate(ex._outputs))

    def _piece(self, t: int, feeds, outs, arena) -> bool:
        """Piece row t: the piece's native run (sunk.py) on its recorded buffers; False when it raised (the
        host-driven run names the node)."""
        node, ins, outs_ = self.pieces[t]
        spans = {SLOT0 + k: a for k, a in enumerate(feeds)}
        spans.update({SLOT0 + self.n_feeds + k: a for k, a in enumerate(outs)})
        spans[ARENA] = arena

        def array(slot, off, count, dtype, kept):
            if slot == ABS:
                return kept
            return spans[slot].view(np.uint8)[off:off + count * np.dtype(dtype).itemsize].view(dtype)
        try:
            node.run([array(*b) for b in ins], [array(*b) for b in outs_])
        except Exception:   # noqa: BLE001 (any failure: the run goes host-driven, which raises it named)
            return False
        return True

    @staticmethod
    def _output(notes, a, shape, copy, k):
        """(OUT, array index, offset, count, dtype, shape, copy) or (ABS, the array, ..): where output k is
        read from after a replay (a feed's or the instance's memory: copied, as the host loop copies it)."""
        if not isinstance(a, np.ndarray):
            raise Refused(f"output {k} is a host value")
        kind, key, off = notes.place(a, -1)
        if kind == OUT:
            return OUT, key, off, a.size, a.dtype, shape, copy
        if kind == FEED:
            return FEED, key, off, a.size, a.dtype, shape, True
        if kind == ABS:
            return ABS, a, 0, a.size, a.dtype, shape, True
        raise Refused(f"output {k} lives in a caching-allocator block")

    def run(self, inst, bufs, base: int, arena=None) -> list | None:
        """One replay into the instance's arena at `base` (`arena`: its bytes, for the pieces): the outputs, or
        None (a guard, a kernel or a piece stopped it: the caller runs host-driven)."""
        bases = self.bases
        feeds = [bufs[t] for t in self.feeds]
        for k, a in enumerate(feeds):
            bases[SLOT0 + k] = _addr(a)
        outs = [np.empty(count, dtype) for count, dtype in self.out_arrays]
        o0 = SLOT0 + self.n_feeds
        for k, a in enumerate(outs):
            bases[o0 + k] = _addr(a)
        bases[ARENA] = base
        bases[STATUS] = 0
        slot = int(inst.slots[0]) if inst.cores is not None else -1
        team = inst.team if inst.team is not None else _NO_TEAM
        t = 0
        while True:
            t = self.failed = run_table(self.addrs, self.ioffs, self.foffs, self.blocks, self.itab, self.ftab, bases,
                                        self.guards, team, slot, t)
            if t < 0:
                break
            if self.addrs[t] != PIECE or not self._piece(t, feeds, outs, arena):
                return None
            t += 1
        result = []
        for kind, key, off, count, dtype, shape, copy in self.outputs:
            if kind == OUT:
                a = outs[key].view(np.uint8)[off:off + count * np.dtype(dtype).itemsize].view(dtype).reshape(shape)
            elif kind == FEED:
                a = feeds[key].view(np.uint8)[off:off + count * np.dtype(dtype).itemsize].view(dtype).reshape(shape)
            else:
                a = key.reshape(shape)
            result.append(a.copy() if copy else a)
        return result


def plan_temps(log) -> tuple[dict, int]:
    """Offsets for the TEMP blocks of a recording: its allocs and frees replayed in order, first fit over
    ALIGN-rounded holes (a block is never placed over one alive at the same point of the run); and the
    bytes the plan spans."""
    holes: list = []   # sorted, merged (offset, size) below `top`
    live: dict = {}
    offsets: dict = {}
    top = peak = 0
    for j, n in log:
        if n < 0:
            holes.append(live.pop(j))
            holes.sort()
            merged = []
            for o, s in holes:
                if merged and merged[-1][0] + merged[-1][1] == o:
                    merged[-1] = (merged[-1][0], merged[-1][1] + s)
                else:
                    merged.append((o, s))
            if merged and merged[-1][0] + merged[-1][1] == top:   # a hole at the top gives the top back
                top = merged.pop()[0]
            holes = merged
            continue
        size = -(-max(n, 1) // ALIGN) * ALIGN
        for i, (o, s) in enumerate(holes):
            if s >= size:
                holes[i:i + 1] = [(o + size, s - size)] if s > size else []
                break
        else:
            o = top
            top += size
            peak = max(peak, top)
        offsets[j] = o
        live[j] = (o, size)
    return offsets, peak


class Replays:
    """An instance's recorded shapes (LRU, at most `limit`), their shared arena, and its counters."""

    def __init__(self, device, limit: int):
        self.device, self.limit = device, limit   # no executor reference: no executor <-> instance cycle
        self.entries: OrderedDict = OrderedDict()
        self.refused: OrderedDict = OrderedDict()   # key -> why (bounded like the entries)
        self.seen: OrderedDict = OrderedDict()      # key -> runs so far (until recorded)
        self.arena = None   # (device offset, bytes); `base` its host address
        self.counters = dict.fromkeys(("replayed_runs", "recorded_shapes", "host_runs", "evicted_shapes",
                                       "replay_fallbacks"), 0)

    def run(self, ex, inst, fed: dict, fed_shapes: dict, table):
        """The outputs of one run of executor `ex` on instance `inst` (whose replays these are): replayed,
        recorded, or host-driven, as the key allows. `fed`, `fed_shapes`: {tensor: flat array / shape} of the
        feeds (all a replay reads); table(): the run's whole buffer and shape tables, for the others."""
        key = tuple([(fed_shapes[t], a.dtype.char) if isinstance(a := fed[t], np.ndarray) else None for t in fed])
        c = self.counters
        e = self.entries.get(key)
        if e is not None:
            self.entries.move_to_end(key)
            out = e.run(inst, fed, self.base, self.device.view(*self.arena) if e.pieces and self.arena else None)
            if out is not None:
                e.replays += 1
                c["replayed_runs"] += 1
                ex.last_run = "replayed"
                return out
            c["replay_fallbacks"] += 1   # a guard or a kernel stopped it: the host loop (which raises, named)
            if e.addrs[e.failed] == GUARD:
                self._drop(key)
                self._refuse(key, f"the values step {e.steps[e.failed]} reads follow the data, not the shapes")
        elif key not in self.refused and None not in key and self._again(key):
            bufs, shapes = table()
            out, got = self._roomy(lambda: record(ex, inst, bufs, shapes, list(fed)))
            if isinstance(got, Notes):
                try:
                    got = Entry(ex, got, bufs, shapes)
                except (Refused, ThunkError) as e:
                    got = str(e)
            if isinstance(got, Entry) and self._fit(got, inst.alloc):
                self.entries[key] = got
                c["recorded_shapes"] += 1
                while len(self.entries) > self.limit:
                    old, gone = self.entries.popitem(last=False)
                    c["evicted_shapes"] += 1
                    if not gone.replays:   # more shapes take turns than the limit holds: recording each costs
                        self._refuse(old, "evicted before its first replay (more shapes in turn than "
                                          "capture_limit)")
                self._shrink()
            elif not isinstance(got, Entry):
                self._refuse(key, got)
            ex.last_run = "recorded" if key in self.entries else "host"
            return out
        c["host_runs"] += 1
        ex.last_run = "host"
        bufs, shapes = table()
        return self._roomy(lambda: ex._loop(inst, bufs, shapes, None))

    def _roomy(self, run):
        """run(); out of device memory while the replay arena holds some, the arena (and every entry) goes
        back and run() is tried again (kernels write only their outputs: a run may start over)."""
        try:
            return run()
        except DeviceMemoryError:
            if self.arena is None:
                raise
            self.close()
            return run()

    def _again(self, key) -> bool:
        """The key ran before (RECORD_AT runs of it, counting this one): a shape seen once is not recorded,
        so a decode loop whose past grows every step pays nothing for shapes that never repeat."""
        n = self.seen.pop(key, 0) + 1
        self.seen[key] = n
        while len(self.seen) > 4 * max(self.limit, 1):
            self.seen.popitem(last=False)
        return n >= RECORD_AT

    @property
    def arena(self):
        return self._arena

    @arena.setter
    def arena(self, value) -> None:   # (device offset, bytes) or None; its host address kept for the replays
        self._arena = value
        self.base = self.device.address(value[0]) if value else 0

    def _refuse(self, key, why: str) -> None:
        self.refused[key] = why
        while len(self.refused) > 4 * max(self.limit, 1):
            self.refused.popitem(last=False)

    def _drop(self, key) -> None:
        self.entries.pop(key, None)
        self._shrink()

    def _fit(self, e: Entry, alloc) -> bool:
        """The arena holds e's temps (grown when not; False when the device has no room even after the
        instance's allocator gave back its idle spans: the key stays host-driven)."""
        have = self.arena[1] if self.arena else 0
        if e.arena_bytes <= have:
            return True
        off = self.device.try_reserve(e.arena_bytes)
        if off is None:
            alloc.empty_cache()
            off = self.device.try_reserve(e.arena_bytes)
        if off is None:
            return False
        self.release()
        self.arena = (off, e.arena_bytes)
        return True

    def _shrink(self) -> None:
        """Evicted entries give back what only they needed."""
        need = max((e.arena_bytes for e in self.entries.values()), default=0)
        if self.arena and need < self.arena[1]:
            self.release()
            if need:
                off = self.device.try_reserve(need)
                if off is None:   # cannot happen (we just gave back more); stay correct anyway
                    self.entries.clear()
                else:
                    self.arena = (off, need)

    def release(self) -> None:
        if self.arena is not None:
            self.device.release(*self.arena)
            self.arena = None

    def close(self) -> None:
        self.entries.clear()
        self.release()
