"""HCCL: collectives between modelled devices (ARCHITECTURE.md, "Scale-out").

transport.py: the interface (one engine primitive, the collectives on it); shm.py / mpi.py: the engines;
world.py: devices and ranks; ops.py: the Hcom ops' kernels; check.py: the plans of a group agree.
"""
