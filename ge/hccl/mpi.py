"""The MPI engine (mpi4py): one rank per process, under `mpiexec` or any MPI launcher.

Every transfer is a posted Isend / Irecv; the calling thread (runtime_v2's host loop or stream thread,
runtime_v1's stream thread) polls them with Testall, which mpi4py runs without the GIL, and sleeps between
polls (the GIL free too), so other streams of the process compute meanwhile (the wait keeps its core
token, though: only event waits lend it to other streams' blocks yet). At the deadline the peers whose
transfers are not done are named and the requests cancelled.
MPI_Finalize waits for every rank; after a peer died it would hang the survivor at exit, so this module
turns mpi4py's automatic finalize off and finalizes at exit only when no peer failed.
"""
from __future__ import annotations

import atexit
import time

from ..extras import require
from .transport import Transport

TAG_SPAN = 1 << 14   # tags cycle over this many collectives (MPI guarantees tags up to 32767)
_ENDS: list = []


def world_comm():
    """MPI.COMM_WORLD, imported with finalize under this module's control (MissingExtraError without
    mpi4py, naming the `dist` extra)."""
    require("dist", "HCCL across processes (MPI)")
    import sys
    if "mpi4py.MPI" not in sys.modules:
        import mpi4py
        mpi4py.rc.finalize = False
        atexit.register(_finalize)
    from mpi4py import MPI
    return MPI.COMM_WORLD


def _finalize() -> None:
    from mpi4py import MPI
    if not any(e.broken for e in _ENDS) and MPI.Is_initialized() and not MPI.Is_finalized():
        MPI.Finalize()


class MPIEngine(Transport):
    engine = "MPI"

    def __init__(self, comm, group: str, timeout: float):
        super().__init__(comm.Get_rank(), comm.Get_size(), group, timeout)
        self.comm, self.seq = comm, 0
        _ENDS.append(self)

    def _exchange(self, sends, recvs, deadline) -> list[int]:
        from mpi4py import MPI
        tag = self.seq % TAG_SPAN
        self.seq += 1
        posted = [(p, self.comm.Irecv(a, source=p, tag=tag)) for p, a in recvs.items()]
        posted += [(p, self.comm.Isend(a, dest=p, tag=tag)) for p, a in sends.items()]
        reqs = [r for _, r in posted]
        nap = 0.0
        while not MPI.Request.Testall(reqs):
            if time.monotonic() > deadline:
                late = sorted({p for p, r in posted if not r.Test()})
                for _, r in posted:
                    if r:   # an inactive request is falsy
                        r.Cancel()
                return late
            time.sleep(nap)
            nap = min(2e-4, nap * 2 or 2e-6)   # spin briefly, then back off to 0.2 ms (the latency it may add)
        return []
