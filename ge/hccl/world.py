"""Devices and ranks: which group a session joins and through which engine.

- Under an MPI launcher (`mpiexec -n N`, or a scheduler that sets the PMI/PMIx/Open MPI rank variables) the
  MPI world is the group: one device per process, device_id = the world rank, device_count = the world
  size (Options.device_id / device_count, when given, must agree).
- Otherwise the process holds Options.device_count devices itself, joined by shared memory (shm.py).
"""
from __future__ import annotations

import os

from ..errors import GEError

DEFAULT_GROUP = "hccl_world_group"   # HCCL's name for the group of every rank
_MPI_VARS = ("PMI_SIZE", "PMIX_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS")


def launched_size() -> int:
    """Ranks the MPI launcher started (1 when not under one)."""
    for var in _MPI_VARS:
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return 1


def launched_rank() -> int:
    """This process's rank as the MPI launcher set it (0 when not under one)."""
    for var in ("PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return 0


def under_mpi() -> bool:
    return launched_size() > 1


def mpi_end(options):
    """This process's end of the MPI world, checked against the options."""
    from .mpi import MPIEngine, world_comm
    comm = world_comm()
    size, rank = comm.Get_size(), comm.Get_rank()
    if options.device_count not in (1, size):
        raise GEError(f"device_count {options.device_count} does not match the MPI world of {size} ranks "
                      "(under mpiexec every rank holds one device: leave device_count out or give the world size)")
    if options.device_id not in (-1, rank):
        raise GEError(f"device_id {options.device_id} on MPI rank {rank}: under mpiexec a rank drives the device "
                      "of its own rank (leave device_id out)")
    return MPIEngine(comm, DEFAULT_GROUP, options.hccl_timeout)


def local_world(options):
    """The shared-memory world of Options.device_count devices in this process."""
    from .shm import SharedWorld
    if options.device_id >= options.device_count:
        raise GEError(f"device_id {options.device_id} is outside the {options.device_count} devices of this "
                      "process (device_count)")
    return SharedWorld(options.device_count, DEFAULT_GROUP, options.hccl_timeout)


def check_group(group: str) -> None:
    """ge runs one group, the world (a rank table with sub-groups is not read yet)."""
    if group != DEFAULT_GROUP:
        raise GEError(f"HCCL group '{group}' is not known: ge's one group is '{DEFAULT_GROUP}' (every rank)")
