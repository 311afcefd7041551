"""A minimal progress bar on stderr: drawn only when stderr is a terminal, silent otherwise."""
from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, total: int, label: str, stream=None, width: int = 30):
        self.total, self.label, self.width = max(total, 1), label, width
        self.stream = stream or sys.stderr
        self.enabled = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.done, self.t0 = 0, time.perf_counter()

    def advance(self, n: int = 1, what: str = "") -> None:
        self.done += n
        if self.enabled:
            filled = self.width * self.done // self.total
            self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (self.width - filled)}] "
                              f"{self.done}/{self.total} {what[:30]:30s}")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write(f"\r{self.label}: {self.done} in {time.perf_counter() - self.t0:.1f} s"
                              + " " * (self.width + 40) + "\n")
            self.stream.flush()
