"""InstancePool: the executor instances concurrent `run` calls check out (both runtimes, and the gear sets).

An instance owns the memory one run writes; at most `limit` exist, made on demand when every one is busy
(callers beyond the limit wait). A GEError while making one (the device is full) waits for a busy one to come
back when others exist, rather than failing the run. `close()` refuses further leases and disposes of the
idle instances; busy ones are disposed of when they come back.
"""
from __future__ import annotations

import threading
from typing import Callable, Generic, TypeVar

from ..errors import GEError

T = TypeVar("T")


class InstancePool(Generic[T]):
    def __init__(self, make: Callable[[], T], limit: int, dispose: Callable[[T], None], first: T | None = None,
                 on_empty: Callable[[], None] | None = None):
        # on_empty: called once, when the pool is closed and its last instance disposed of (what they shared)
        self._make, self._dispose, self.limit, self._on_empty = make, dispose, limit, on_empty
        self.all: list[T] = [] if first is None else [first]   # alive, idle or busy (for stats)
        self.idle: list[T] = list(self.all)
        self._creating = 0                                     # being made: they count against the limit
        self.cond = threading.Condition()
        self.closed = False

    def lease(self) -> "_Lease":
        """`with pool.lease() as inst:` an instance checked out for the block, checked in after it."""
        return _Lease(self)

    def checkout(self) -> T:
        with self.cond:
            while True:
                if self.closed:
                    raise GEError("the session is closed")
                if self.idle:
                    return self.idle.pop()
                if len(self.all) + self._creating < self.limit:
                    self._creating += 1
                    make = self._make
                    break
                self.cond.wait()
        try:
            inst = make()
        except BaseException as e:
            with self.cond:
                self._creating -= 1
                self.cond.notify()
                if not (isinstance(e, GEError) and self.all):
                    raise
                while not self.idle and not self.closed:  # the device is full of busy instances
                    self.cond.wait()
            return self.checkout()
        with self.cond:
            self._creating -= 1
            self.all.append(inst)
        return inst

    def checkin(self, inst: T) -> None:
        with self.cond:
            if self.closed:
                self._drop(inst)
            else:
                self.idle.append(inst)
            self.cond.notify()

    def drop_idle(self) -> None:
        """Dispose of every idle instance (memory pressure, empty_cache)."""
        with self.cond:
            idle, self.idle = self.idle, []
            for inst in idle:
                self._drop(inst)

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self._make = None   # its closure (a first instance, shared weights) may hold device memory
            self.cond.notify_all()
        self.drop_idle()

    def _drop(self, inst: T) -> None:
        self.all.remove(inst)
        self._dispose(inst)
        if self.closed and not self.all and not self._creating and self._on_empty is not None:
            on_empty, self._on_empty = self._on_empty, None
            on_empty()


class _Lease:
    """Pool.lease's context manager: a class, not @contextmanager, whose generator frame cost ~1 us of a
    run's ~9 (a one-node model, runtime_v1)."""
    __slots__ = ("pool", "inst")

    def __init__(self, pool):
        self.pool = pool

    def __enter__(self):
        self.inst = self.pool.checkout()
        return self.inst

    def __exit__(self, *exc):
        self.pool.checkin(self.inst)
        return False
