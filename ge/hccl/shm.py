"""The in-process engine: N modelled devices of one process, their transfers through shared memory.

A `SharedWorld(n)` holds one mailbox per (sender, receiver, sequence number); each device's `SharedMemory`
end puts copies of its sends there and waits (a condition variable: the GIL is free while it waits) until
its receives have arrived or the deadline passed. Every device counts its own collectives, so the k-th
collective of device a meets the k-th of device b, as MPI's message order does across processes.
"""
from __future__ import annotations

import threading
import time

import numpy as np

from .transport import Transport


class SharedWorld:
    def __init__(self, size: int, group: str = "hccl_world_group", timeout: float = 60.0):
        self.size, self.group, self.timeout = size, group, timeout
        self.cond = threading.Condition()
        self.boxes: dict[tuple[int, int, int], np.ndarray] = {}
        self.failed: set[int] = set()   # devices whose run raised: their peers stop waiting for them
        self.ends = [SharedMemory(self, r) for r in range(size)]

    def fail(self, rank: int) -> None:
        with self.cond:
            self.failed.add(rank)
            self.cond.notify_all()


class SharedMemory(Transport):
    engine = "shared memory"

    def __init__(self, world: SharedWorld, rank: int):
        super().__init__(rank, world.size, world.group, world.timeout)
        self.world, self.seq = world, 0

    def _exchange(self, sends, recvs, deadline) -> list[int]:
        w, seq, me = self.world, self.seq, self.rank
        self.seq += 1
        with w.cond:
            for p, a in sends.items():
                w.boxes[me, p, seq] = np.array(a, copy=True)
            if sends:
                w.cond.notify_all()
            while True:
                late = [p for p in recvs if (p, me, seq) not in w.boxes]
                left = deadline - time.monotonic()
                if not late or left <= 0 or w.failed.intersection(late):
                    break
                w.cond.wait(left)
            for p in recvs:
                if p not in late:
                    recvs[p][:] = w.boxes.pop((p, me, seq))
        return late
