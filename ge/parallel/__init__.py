"""Parallel plans over an HCCL group: data.py splits the batch; executor.py runs a plan on every device
of the group (the devices of this process, or this rank's under MPI)."""
