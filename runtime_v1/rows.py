"""The rows of a stream's table that are no task, as Python builds them (labels.py, activation.py, model.py)
before tables.py encodes them for the sink (sink.py).

A control node's rows are Tasks and these markers; `to` / `leave` name a label id until tables.resolve turns
them into row numbers (and drops the LabelSet markers):
  LabelSet(label)          a position, no row
  Switch(at, to)           jump to `to` when the byte at `at` = (slot, offset) is zero (LabelSwitchByIndex)
  Goto(to)                 LabelGoto
  Signal(line, amount)     add amount to a counted line (StreamActive, a body's event record)
  Await(line, leave)       wait for one more count on a line; to `leave` when the line says LEAVE (None: never)
The plan's events between stream threads become Record / Wait rows (model.py), already final.
`Labels` hands out what one model's control rows need: label ids, counted lines, the activated streams'
tables (activation.py), and counts the events activation made unnecessary.
"""
from __future__ import annotations

from typing import NamedTuple


class LabelSet(NamedTuple):
    label: int


class Switch(NamedTuple):
    at: tuple[int, int]      # (slot, byte offset) of the predicate byte
    to: int                  # label id; a row number once resolved


class Goto(NamedTuple):
    to: int                  # label id; a row number once resolved


class Signal(NamedTuple):
    line: int                # counted line (from 0: tables.py places them after the event lines)
    amount: int


class Await(NamedTuple):
    line: int
    leave: int | None        # label id (a row number once resolved, -1 for None) to go to on LEAVE


class Record(NamedTuple):
    event: int               # event id
    use: int                 # the use of a multiplexed id: added to the run's value (ge.plan.event_uses)


class Wait(NamedTuple):
    event: int
    use: int


class Labels:
    def __init__(self):
        self.labels = 0        # label ids, dense from 0 (GE's label_index)
        self.lines = 0         # counted lines
        self.activated: list[tuple] = []   # (control node's step, rows) of each activated stream's table
        self.pruned = 0        # events into activated streams that activation implies

    def new(self) -> int:
        self.labels += 1
        return self.labels - 1

    def line(self) -> int:
        self.lines += 1
        return self.lines - 1
