"""The transport interface: one engine primitive (`exchange`), the four HCCL collectives built on it.

An engine moves bytes between the ranks of one group; it implements `_exchange(sends, recvs, deadline)`:
post every send {peer: array} and receive {peer: array} at once and return the peers whose transfer is not
done by the deadline (empty: all done). The collectives below are the same for every engine:
- AllGather: every rank sends its input to every other; the output is the rank-ordered concatenation.
- AllReduce / ReduceScatter: every contribution (or the chunk a rank owns) is gathered, then reduced in rank
  order on each rank, so every rank (and every engine) computes the same bits. It moves (n-1)x the bytes a
  ring would: fine for the few ranks of one host; a ring is a change here only, not in the engines.
- Broadcast: the root sends to every other rank.
Why point to point and not MPI's own collectives: a blocking MPI_Allreduce whose peer died never returns and
names nobody; posted sends and receives can be polled against a deadline (Options.hccl_timeout) and say
which rank did not answer, so a dead rank becomes an ExecutionError naming it, not a hang.
"""
from __future__ import annotations

import time

import numpy as np

from ..errors import ExecutionError, GEError

REDUCTIONS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


class PeerError(ExecutionError):
    """A collective's peers did not answer in time (`ranks`: which)."""

    def __init__(self, msg: str, ranks):
        super().__init__(msg)
        self.ranks = tuple(ranks)


class Transport:
    """One rank's end of a group. Engines subclass it and implement `_exchange` (and `_close`)."""
    engine = "?"

    def __init__(self, rank: int, size: int, group: str, timeout: float):
        if not 0 <= rank < size:
            raise GEError(f"rank {rank} is outside group '{group}' of {size} ranks")
        self.rank, self.size, self.group, self.timeout = rank, size, group, float(timeout)
        self.broken: str | None = None   # set after a peer failed: the group cannot be trusted again

    # -- the engine's part -------------------------------------------------------------------
    def _exchange(self, sends: dict, recvs: dict, deadline: float) -> list[int]:
        raise NotImplementedError

    def _close(self) -> None:
        pass

    # -- checked entry -----------------------------------------------------------------------
    def exchange(self, sends: dict, recvs: dict, what: str) -> None:
        if self.broken:
            raise PeerError(f"HCCL {what} on group '{self.group}': {self.broken}", ())
        deadline = time.monotonic() + self.timeout
        late = self._exchange(sends, recvs, deadline)
        if late:
            who = ", ".join(map(str, sorted(late)))
            self.broken = (f"rank {who} did not answer rank {self.rank} within {self.timeout:g} s "
                           "(it failed, exited or runs another plan)" if time.monotonic() >= deadline else
                           f"rank {who} failed before answering rank {self.rank}")
            raise PeerError(f"HCCL {what} on group '{self.group}' ({self.engine}): {self.broken}", late)

    def close(self) -> None:
        self._close()

    # -- the collectives (flat contiguous arrays) -------------------------------------------
    def all_gather(self, x: np.ndarray, out: np.ndarray) -> None:
        n = x.size
        parts = [out[p * n:(p + 1) * n] for p in range(self.size)]
        self.exchange({p: x for p in self._peers()}, {p: parts[p] for p in self._peers()}, "AllGather")
        parts[self.rank][:] = x

    def all_reduce(self, x: np.ndarray, out: np.ndarray, reduction: str) -> None:
        n = x.size
        every = np.empty(self.size * n, x.dtype)
        self.all_gather(x, every)
        _reduce(every.reshape(self.size, n), out, reduction)

    def reduce_scatter(self, x: np.ndarray, out: np.ndarray, reduction: str) -> None:
        n = out.size
        mine = np.empty((self.size, n), x.dtype)
        self.exchange({p: x[p * n:(p + 1) * n] for p in self._peers()},
                      {p: mine[p] for p in self._peers()}, "ReduceScatter")
        mine[self.rank] = x[self.rank * n:(self.rank + 1) * n]
        _reduce(mine, out, reduction)

    def broadcast(self, x: np.ndarray, out: np.ndarray, root: int) -> None:
        if self.rank == root:
            self.exchange({p: x for p in self._peers()}, {}, "Broadcast")
            out[:] = x
        else:
            self.exchange({}, {root: out}, "Broadcast")

    def agree(self, digest: bytes, what: str) -> list[bytes]:
        """Every rank's `digest` (same length on all ranks), by rank."""
        mine = np.frombuffer(digest, np.uint8).copy()
        every = np.empty(self.size * mine.size, np.uint8)
        self.all_gather(mine, every)
        return [every[p * mine.size:(p + 1) * mine.size].tobytes() for p in range(self.size)]

    def _peers(self):
        return [p for p in range(self.size) if p != self.rank]


def _reduce(rows: np.ndarray, out: np.ndarray, reduction: str) -> None:
    """Reduce rank by rank in rank order (the same bits on every rank)."""
    op = REDUCTIONS[reduction]
    out[:] = rows[0]
    for r in rows[1:]:
        op(out, r, out=out)
