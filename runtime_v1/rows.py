"""The symbolic rows of control flow (labels.py, activation.py), before model.py encodes them for the sink.

A control node's rows are Tasks and these markers, label ids not yet row numbers:
  (SET, label)                   LabelSet: a position, no row
  (SWITCH, (slot, offset), label)  jump to label when the byte there is zero (LabelSwitchByIndex)
  (GOTO, label)                  LabelGoto
  (SIGNAL, line, amount)         add amount to a counted line (StreamActive, a body's event record)
  (AWAIT, line, label | None)    wait for one more count on a line; to label when the line says LEAVE
`Labels` hands out what one model's control rows need: label ids, counted lines, the activated streams'
tables (activation.py), and counts the events activation made unnecessary.
"""
from __future__ import annotations

SET, SWITCH, GOTO, SIGNAL, AWAIT = "label", "switch", "goto", "signal", "await"


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
