"""The stream tables: a stream's rows (Tasks, host tasks and the markers of rows.py) encoded for the sink.

`Encoder.table(stream, rows, track)` gives one stream's `StreamTables`: per native row its address column
(a thunk address, or the sink's opcode of an event / label / counted-flag op: sink.py), its offsets into the
int and float tables every stream shares, its block_dim; and the stream's program, native runs
[start, stop) between fallback calls (a fallback or host task: a Python call between two native runs).
The label markers are resolved first (`resolve`): a Switch / Goto / Await names the native row of its label's
position. `Encoder.finish()` gives the shared int and float tables.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .rows import Await, Goto, LabelSet, Record, Signal, Switch, Wait
from .sink import AWAIT, GOTO, RECORD, SIGNAL, SWITCH, WAIT


class NativeRun(NamedTuple):
    """Rows [start, stop) of the table, run by the sink's loop."""
    start: int
    stop: int


class FallbackCall(NamedTuple):
    """Fallback task `index` of the table (StreamTables.fallback), called from Python."""
    index: int


@dataclass(slots=True)
class StreamTables:
    stream: int             # the thread's index: the stream it runs (the first of them when streams share it)
    addrs: np.ndarray
    ioffs: np.ndarray
    foffs: np.ndarray
    blocks: np.ndarray      # per row: the task's block_dim (1 for event ops)
    tracks: tuple           # per row: the plan stream of its step (traces: a track per stream, however many
                            # streams share the thread); an activated table's rows: the table's index
    program: tuple          # (NativeRun | FallbackCall, ...)
    fallback: tuple         # Task per fallback index
    native: tuple           # per row: its Task (for error reports), None for an event op

    def event_ops(self) -> list[tuple[int, int]]:
        """[(sink.RECORD | sink.WAIT, event id)] in row order."""
        return [(int(a), int(e)) for a, e in zip(self.addrs, self.ioffs) if a in (RECORD, WAIT)]


class Encoder:
    """The tables of one model: `addr` {thunk signature: address}; counted lines start at line `lines0` (after
    the event lines)."""

    def __init__(self, addr: dict, lines0: int):
        self.addr, self.lines0 = addr, lines0
        self._irows, self._frows, self._n_i, self._n_f = [], [], 0, 0

    def table(self, stream: int, rows: list, track: dict) -> StreamTables:
        """`track` {id(row): plan stream} for the traces (default: `stream`)."""
        addrs, ioffs, foffs, blocks, program, fallback, native_rows, tracks = [], [], [], [], [], [], [], []
        for row in resolve(rows):
            if _fallback(row):
                program.append(FallbackCall(len(fallback)))
                fallback.append(row)
                continue
            tracks.append(track.get(id(row), stream))
            if isinstance(row, tuple):
                op, ioff, foff, words = self._op(row)
                if words is not None:   # the op's operands in the int table
                    ioff = self._n_i
                    self._irows.append(words)
                    self._n_i += words.size
                addrs.append(op)
                ioffs.append(ioff)
                foffs.append(foff)
                blocks.append(1)
                native_rows.append(None)
            else:   # a native Task
                irow, frow = row.args.rows()
                addrs.append(self.addr[row.sig])
                ioffs.append(self._n_i)
                foffs.append(self._n_f)
                blocks.append(row.node.launch.block_dim)
                self._irows.append(irow)
                self._frows.append(frow)
                self._n_i, self._n_f = self._n_i + irow.size, self._n_f + frow.size
                native_rows.append(row)
            k = len(addrs)
            if program and type(program[-1]) is NativeRun:
                program[-1] = NativeRun(program[-1].start, k)
            else:
                program.append(NativeRun(k - 1, k))
        return StreamTables(stream, np.array(addrs, np.int64), np.array(ioffs, np.int64),
                            np.array(foffs, np.int64), np.array(blocks, np.int64), tuple(tracks),
                            tuple(program), tuple(fallback), tuple(native_rows))

    def finish(self) -> tuple[np.ndarray, np.ndarray]:
        """(int table, float table) of every stream (one padding word each)."""
        return (np.concatenate(self._irows + [np.zeros(1, np.int64)]),
                np.concatenate(self._frows + [np.zeros(1, np.float64)]))

    def _op(self, row) -> tuple:
        """A row that is no task, as (address column, ioffs, foffs, its int-table words or None): sink.py's
        encoding of events, label ops and counted flags (the words' order: sink.SWITCH_* / AWAIT_*)."""
        kind = type(row)
        if kind is Switch:
            return SWITCH, 0, 0, np.array([*row.at, row.to], np.int64)
        if kind is Await:
            return AWAIT, 0, 0, np.array([self.lines0 + row.line, row.leave], np.int64)
        if kind is Signal:
            return SIGNAL, self.lines0 + row.line, row.amount, None
        if kind is Goto:
            return GOTO, row.to, 0, None
        return RECORD if kind is Record else WAIT, row.event, row.use, None


def _fallback(row) -> bool:
    """A Task or host task run from Python (no native encoding)."""
    return not isinstance(row, tuple) and row.sig is None


def resolve(rows: list) -> list:
    """Label markers resolved: Switch / Goto / Await rows name the native row of their label's position (rows
    are native but fallback tasks, which control rows never hold); the LabelSet markers dropped."""
    at, n = {}, 0
    for row in rows:
        if type(row) is LabelSet:
            at[row.label] = n
        elif not _fallback(row):
            n += 1
    out = []
    for row in rows:
        kind = type(row)
        if kind is Switch or kind is Goto:
            out.append(row._replace(to=at[row.to]))
        elif kind is Await:
            out.append(row._replace(leave=-1 if row.leave is None else at[row.leave]))
        elif kind is not LabelSet:
            out.append(row)
    return out
